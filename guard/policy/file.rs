//! The policy file (TOML): its format, the embedded default (`default-policy.toml`, which is
//! also its documentation), validation, and errors that point at a line and column. A user
//! file is laid over the embedded default: every key it leaves out keeps the default value.
//! This module owns the validated [`Policy`] that `decide()` reads.

mod build;
mod error;
mod raw;

pub use error::PolicyError;

use build::build;

use super::paths::{lexical_clean, SensitivePaths};
use super::profile::ProfileSpec;
use super::request::Status;
use super::verdict::Category;
use raw::RawPolicy;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The embedded default policy text.
pub const DEFAULT_POLICY: &str = include_str!("default-policy.toml");

/// Origin name of the embedded default in error messages.
pub const DEFAULT_ORIGIN: &str = "<embedded default-policy.toml>";

/// Every category, in table order.
pub const ALL_CATEGORIES: [Category; 20] = [
    Category::Read,
    Category::Enumerate,
    Category::Browse,
    Category::HttpRead,
    Category::Write,
    Category::Delete,
    Category::RunCode,
    Category::HttpWrite,
    Category::PackageInstall,
    Category::ProcessExit,
    Category::Privilege,
    Category::PipeToShell,
    Category::DestructiveGit,
    Category::DestructiveDelete,
    Category::SkillInstall,
    Category::SensitivePath,
    Category::SecretInTree,
    Category::ApprovalsOff,
    Category::ConfigChange,
    Category::Unanalysable,
];

/// Compile-time reminder: a new [`Category`] variant must be added to [`ALL_CATEGORIES`]
/// and to `default-policy.toml`.
#[allow(dead_code)]
const fn _all_categories_listed(c: Category) {
    match c {
        Category::Read
        | Category::Enumerate
        | Category::Browse
        | Category::HttpRead
        | Category::Write
        | Category::Delete
        | Category::RunCode
        | Category::HttpWrite
        | Category::PackageInstall
        | Category::ProcessExit
        | Category::Privilege
        | Category::PipeToShell
        | Category::DestructiveGit
        | Category::DestructiveDelete
        | Category::SkillInstall
        | Category::SensitivePath
        | Category::SecretInTree
        | Category::ApprovalsOff
        | Category::ConfigChange
        | Category::Unanalysable => {}
    }
}

/// Programs whose built-in category is blocked (privilege, shells that pipe-to-shell feeds,
/// OpenClaw's own CLI for approvals-off and skill-install): a `[[commands]]` entry may not
/// move them to a category that is not blocked.
const PROTECTED_PROGRAMS: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "runuser", "setpriv", "capsh", "chroot", "nsenter", "unshare",
    "setcap", "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "openclaw", "clawhub",
];

/// Directories a protected program is looked for in when checking a path glob.
const PROTECTED_DIRS: &[&str] = &["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"];

/// What the policy says about one category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryRule {
    pub status: Status,
    /// Sandbox profile an approved run gets.
    pub profile: Option<String>,
    /// May an allow-always grant lift it (exact argv+cwd only)?
    pub persist: bool,
}

/// One `[[commands]]` override.
#[derive(Debug, Clone)]
pub struct CommandOverride {
    /// A basename, or an absolute path glob.
    pub program: String,
    /// argv[1..] prefix.
    pub args: Vec<String>,
    pub category: Category,
    glob: Option<globset::GlobMatcher>,
}

impl CommandOverride {
    fn matches(&self, program: &str, args: &[String]) -> bool {
        let program_ok = match &self.glob {
            Some(glob) => program.starts_with('/') && glob.is_match(program),
            None => program.rsplit('/').next() == Some(self.program.as_str()),
        };
        program_ok && args.starts_with(&self.args)
    }
}

/// A validated policy, ready for `decide()`.
#[derive(Debug, Clone)]
pub struct Policy {
    origin: String,
    workspace: Option<PathBuf>,
    ask_every_command: bool,
    /// `agent.home`, when the file (or `with_agent_home`) sets it; the host defaults it.
    agent_home: Option<PathBuf>,
    /// `agent.path`, when the file sets it; the host defaults it.
    agent_path: Option<String>,
    categories: BTreeMap<Category, CategoryRule>,
    commands: Vec<CommandOverride>,
    sensitive_extra: Vec<String>,
    sensitive: SensitivePaths,
    profiles: BTreeMap<String, ProfileSpec>,
    /// The front door's method filter tables (`[gateway]`).
    gateway: crate::policy::gateway_filter::GatewayTables,
    /// The egress proxy's rules (`[[egress.rules]]`), in the order written.
    egress: Vec<crate::policy::egress::EgressRule>,
    /// The egress proxy's provider routes (`[[egress.routes]]`).
    routes: Vec<crate::policy::egress_routes::ProviderRoute>,
    /// `[approvals] passkey_categories`: an allow in these needs a fresh passkey assertion
    /// bound to the request (default none).
    passkey_categories: Vec<Category>,
    /// `[approvals] approvals_required`: categories whose allow needs that many different
    /// reviewer accounts (absent: one).
    approvals_required: BTreeMap<Category, u8>,
}

impl Policy {
    /// Where it was loaded from (a path, or the embedded default's name).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn category(&self, category: Category) -> &CategoryRule {
        // Every category is present: the embedded default lists all (tested), and layers
        // only override.
        self.categories.get(&category).unwrap_or(&CategoryRule {
            status: Status::Blocked,
            profile: None,
            persist: false,
        })
    }

    /// Every category's rule, in table order (for `policy check` and `doctor` output).
    pub fn categories(&self) -> &BTreeMap<Category, CategoryRule> {
        &self.categories
    }

    pub fn status(&self, category: Category) -> Status {
        self.category(category).status
    }

    pub fn profile(&self, category: Category) -> Option<&str> {
        self.category(category).profile.as_deref()
    }

    pub fn persist(&self, category: Category) -> bool {
        self.category(category).persist
    }

    /// The first `[[commands]]` entry matching `program` (a basename entry matches the
    /// basename of a path; a glob entry only an absolute path) and an argv[1..] prefix.
    pub fn command_override(&self, program: &str, args: &[String]) -> Option<Category> {
        self.commands
            .iter()
            .find(|c| c.matches(program, args))
            .map(|c| c.category)
    }

    pub fn commands(&self) -> &[CommandOverride] {
        &self.commands
    }

    /// Built-in sensitive paths plus `[sensitive].paths`, with `~` = the agent's home.
    pub fn sensitive(&self) -> &SensitivePaths {
        &self.sensitive
    }

    /// The extra sensitive paths, as written.
    pub fn sensitive_extra(&self) -> &[String] {
        &self.sensitive_extra
    }

    /// `workspace`, if set (default: the request's cwd).
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// `ask_every_command`: a person answers every command the table would run by itself.
    pub fn ask_every_command(&self) -> bool {
        self.ask_every_command
    }

    /// `agent.home` as the file says (the host side defaults it: `crate::config`).
    pub fn agent_home(&self) -> Option<&Path> {
        self.agent_home.as_deref()
    }

    /// `agent.path` as the file says (the host side defaults it: `crate::config`).
    pub fn agent_path(&self) -> Option<&str> {
        self.agent_path.as_deref()
    }

    /// The front door's method filter tables.
    pub fn gateway(&self) -> &crate::policy::gateway_filter::GatewayTables {
        &self.gateway
    }

    /// The egress proxy's rules from the file (its `--allow` entries come on top).
    pub fn egress(&self) -> &[crate::policy::egress::EgressRule] {
        &self.egress
    }

    /// The egress proxy's provider routes, each name once (a later layer's wins).
    pub fn egress_routes(&self) -> &[crate::policy::egress_routes::ProviderRoute] {
        &self.routes
    }

    /// Whether an allow in `category` must be signed with a passkey.
    pub fn needs_passkey(&self, category: Category) -> bool {
        self.passkey_categories.contains(&category)
    }

    /// How many different reviewer accounts must approve a request of `category` (1..=5).
    pub fn approvals_required(&self, category: Category) -> u8 {
        self.approvals_required.get(&category).copied().unwrap_or(1)
    }

    /// Every category that needs more than one approver, with its count.
    pub fn approvals_required_map(&self) -> &BTreeMap<Category, u8> {
        &self.approvals_required
    }

    pub fn profiles(&self) -> &BTreeMap<String, ProfileSpec> {
        &self.profiles
    }

    /// The same policy with the agent's PATH set (the host's default when the file names none).
    pub fn with_agent_path(&self, path: &str) -> Policy {
        let mut p = self.clone();
        p.agent_path = Some(path.to_string());
        p
    }

    /// The same policy with more sensitive paths (deployment values the file cannot know:
    /// OpenClaw's approvals document and SQLite state, the guard's state dir).
    pub fn with_sensitive_extra(&self, extra: &[String]) -> Result<Policy, PolicyError> {
        let mut p = self.clone();
        p.sensitive_extra.extend(extra.iter().cloned());
        let home = p.agent_home.clone().unwrap_or_else(|| PathBuf::from("/"));
        p.sensitive = SensitivePaths::new(&home, &p.sensitive_extra)?;
        Ok(p)
    }

    /// The same policy for another agent home (`~` in the sensitive list moves with it; the
    /// home's real path comes from the facts installed, see `fs_memo::Scope`).
    pub fn with_agent_home(&self, home: &Path) -> Result<Policy, PolicyError> {
        let mut p = self.clone();
        let home = lexical_clean(home);
        p.sensitive = SensitivePaths::new(&home, &p.sensitive_extra)?;
        p.agent_home = Some(home);
        Ok(p)
    }
}

/// Parses `text` (named `origin` in errors) laid over the embedded default.
pub fn parse(text: &str, origin: &str) -> Result<Policy, PolicyError> {
    let default = default_layer()?;
    let user = raw::parse_layer(text, origin)?;
    build(
        origin,
        &[
            (default, DEFAULT_POLICY, DEFAULT_ORIGIN),
            (&user, text, origin),
        ],
    )
}

/// The embedded default, deserialised once.
fn default_layer() -> Result<&'static RawPolicy, PolicyError> {
    static LAYER: OnceLock<Result<RawPolicy, String>> = OnceLock::new();
    LAYER
        .get_or_init(|| raw::parse_layer(DEFAULT_POLICY, DEFAULT_ORIGIN).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|message| PolicyError::Invalid {
            origin: DEFAULT_ORIGIN.to_string(),
            line: 1,
            column: 1,
            message: message.clone(),
        })
}

/// The embedded default policy.
#[allow(clippy::expect_used)] // startup: a constant, tested
pub fn embedded_default() -> Policy {
    // startup: the embedded file is tested (tests/policy_file.rs, embedded_default_is_*).
    let layer = default_layer().expect("embedded default policy");
    build(DEFAULT_ORIGIN, &[(layer, DEFAULT_POLICY, DEFAULT_ORIGIN)])
        .expect("embedded default policy") // startup
}

/// A category's kebab-case name, as the file spells it.
pub fn category_name(category: Category) -> String {
    serde_json::to_value(category)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{category:?}"))
}
