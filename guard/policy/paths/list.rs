//! The sensitive list itself: the built-in entries, the file names that are secrets
//! wherever they are, and the list as data for the sandbox (one list, so the policy and
//! the sandbox never disagree).

use super::{compile_rule, lexical_clean};
use std::path::Path;

/// The built-in sensitive paths. A trailing `/` makes a directory rule (the directory and
/// everything under it); anything else matches that one path exactly.
pub const BUILTIN: &[&str] = &[
    "~/.ssh/",
    "~/.gnupg/",
    "~/.aws/",
    "~/.config/gcloud/",
    "~/.azure/",
    "~/.kube/config",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.npmrc",
    "~/.env",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.config/gh/",
    "~/.config/hub",
    "~/.pgpass",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.vault-token",
    // Shell and REPL histories: commands typed with tokens in them.
    "~/.bash_history",
    "~/.zsh_history",
    "~/.zhistory",
    "~/.history",
    "~/.sh_history",
    "~/.local/share/fish/",
    "~/.config/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.irb_history",
    "~/.rediscli_history",
    "~/.lesshst",
    "~/.viminfo",
    "~/.local/share/nvim/shada/",
    // Registry, cloud and tool tokens.
    "~/.config/containers/auth.json",
    "/run/user/*/containers/auth.json",
    "~/.m2/settings.xml",
    "~/.m2/settings-security.xml",
    "~/.gradle/gradle.properties",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.terraformrc",
    "~/.s3cfg",
    "~/.yarnrc",
    "~/.yarnrc.yml",
    "~/.config/pip/pip.conf",
    "~/.pip/pip.conf",
    "~/.my.cnf",
    "~/.config/doctl/",
    "~/.oci/",
    "~/.gem/credentials",
    "~/.config/composer/auth.json",
    "~/.composer/auth.json",
    "~/.nuget/NuGet/NuGet.Config",
    "~/.config/helm/",
    "~/.fly/",
    "~/.config/heroku/",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d/",
    "/proc/*/environ",
    "/proc/*/mem",
    // `/proc/thread-self` and `/proc/<pid>/task/<tid>` expose the same files per thread.
    "/proc/*/task/*/environ",
    "/proc/*/task/*/mem",
    // Another process's view of the filesystem or its open files: what they reach cannot
    // be known from here (`/proc/self/cwd/.env`, `/proc/1/fd/3`).
    "/proc/*/cwd/",
    "/proc/*/fd/",
    "/proc/*/map_files/",
    "/proc/*/task/*/cwd/",
    "/proc/*/task/*/fd/",
    "/proc/*/task/*/root/",
    // OpenClaw's approvals document and SQLite state, the guard's own state, at their
    // default places (a deployment adds its real ones: `Policy::with_sensitive_extra`).
    "~/.openclaw/exec-approvals.json",
    "~/.openclaw/state/",
    "~/.openclaw/openclaw.json*",
    "~/.openclaw/credentials/",
    "~/.openclaw/agents/",
    "~/.openclaw/identity/",
    "~/.openclaw/devices/",
    "~/.openclaw/sessions/",
    "~/.clawdbot/",
    "~/.local/state/sanctum-guard/",
    "~/.config/sanctum-guard/",
];

/// File names that are secrets wherever they are (the workspace's `.env`, `.env.local`,
/// a sub-project's `.env.production`): dotenv files hold API keys by convention.
/// Also direnv and wrangler files, registry configs with tokens, Terraform state, private
/// keys and Google service-account / OAuth client files, by their conventional names.
pub const SECRET_FILE_NAMES: &[&str] = &[
    ".env",
    ".env.*",
    ".envrc",
    ".dev.vars",
    ".dev.vars.*",
    ".npmrc",
    ".pypirc",
    ".yarnrc",
    ".yarnrc.yml",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    "*.tfstate",
    "*.tfstate.backup",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials.json",
    "client_secret*.json",
    "*service-account*.json",
    "*service_account*.json",
];

/// Exact names of [`SECRET_FILE_NAMES`].
const EXACT: &[&str] = &[
    ".env",
    ".envrc",
    ".dev.vars",
    ".npmrc",
    ".pypirc",
    ".yarnrc",
    ".yarnrc.yml",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials.json",
];

/// `.env.*` files that are templates by convention, not secrets.
const DOTENV_TEMPLATES: &[&str] = &["example", "sample", "template", "dist", "defaults"];

/// Is `name` a dotenv secret ([`SECRET_FILE_NAMES`])?
pub fn is_secret_file_name(name: &str) -> bool {
    if EXACT.contains(&name) {
        return true;
    }
    if let Some(s) = name
        .strip_prefix(".env.")
        .or_else(|| name.strip_prefix(".dev.vars."))
    {
        return !s.is_empty() && !DOTENV_TEMPLATES.contains(&s);
    }
    if name.ends_with(".tfstate") || name.ends_with(".tfstate.backup") {
        return true;
    }
    name.strip_suffix(".json").is_some_and(|stem| {
        stem.starts_with("client_secret")
            || stem.contains("service-account")
            || stem.contains("service_account")
    })
}

/// One entry of the sensitive list, expanded for one home: what the sandbox denies reading
/// and the policy blocks, from one list so the two can never disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensitiveEntry {
    /// Absolute path, possibly with glob characters (`/proc/*/environ`).
    pub path: String,
    /// A directory rule: everything under it too.
    pub dir: bool,
}

/// The built-in sensitive list plus `extra`, with `~` expanded to `home` (the sandbox's
/// deny-read input). Dotenv files are by name ([`SECRET_FILE_NAMES`]); the sandbox applies
/// those under the workspace. Entries that fail to expand are skipped (`extra` is validated
/// when the policy loads).
pub fn sensitive_paths(home: &Path, extra: &[String]) -> Vec<SensitiveEntry> {
    let escaped = lexical_clean(home).to_string_lossy().into_owned();
    BUILTIN
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .filter_map(|label| {
            let rule = compile_rule(&label, &escaped).ok()?;
            Some(SensitiveEntry {
                path: format!("/{}", rule.components.join("/")),
                dir: rule.dir,
            })
        })
        .collect()
}
