//! Developer tools: package managers and OpenClaw's own CLI (skills, config, approvals).
//! git is in `commands_git`.

use super::args::{has, v};
use super::paths_check::Checker;
use super::{is_approvals_key, Classification};
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

/// Flags of the node package managers' listing commands that change only what is printed.
const PM_READ_FLAGS: &[&str] = &[
    "--json",
    "--long",
    "-l",
    "--all",
    "-a",
    "--depth",
    "--parseable",
    "-p",
    "--global",
    "-g",
    "--omit",
    "--include",
    "--production",
    "--prod",
    "--dev",
    "--workspace",
    "-w",
    "--workspaces",
    "--silent",
    "-s",
    "--quiet",
    "-q",
    "--audit-level",
    "--link",
    "--package-lock-only",
    "--recursive",
    "-r",
    "--version",
    "-v",
    "--help",
    "-h",
];

pub(super) fn node_pm(k: &Checker, c: &mut Classification, p: &str, args: &[Word], seg: &Segment) {
    let ops: Vec<&str> = args.iter().map(v).filter(|s| !s.starts_with('-')).collect();
    let sub = ops.first().copied().unwrap_or("");
    let rest = ops.get(1..).unwrap_or(&[]);
    let _ = seg;
    if matches!(p, "npx" | "bunx")
        || (matches!(p, "pnpm" | "yarn" | "bun") && matches!(sub, "dlx" | "x"))
    {
        let tool = if matches!(p, "npx" | "bunx") {
            sub
        } else {
            rest.first().copied().unwrap_or("")
        };
        let tool_args: Vec<&str> = if matches!(p, "npx" | "bunx") {
            rest.to_vec()
        } else {
            rest.get(1..).unwrap_or(&[]).to_vec()
        };
        if tool.starts_with("clawhub") && has(&tool_args, &["install", "add", "update"]) {
            c.add(
                Category::SkillInstall,
                "skill-install",
                "installs an OpenClaw skill through clawhub",
            );
            return;
        }
        c.add(
            Category::PackageInstall,
            "package-install",
            format!("`{p}` downloads {tool}"),
        );
        c.add(Category::RunCode, "run-code", format!("`{p}` runs {tool}"));
        return;
    }
    // `npm audit fix` (or `--fix`) installs; plain `audit` only reports.
    let audit_fixes = sub == "audit"
        && (rest.iter().any(|r| *r != "signatures")
            || args
                .iter()
                .any(|w| v(w).starts_with("--fix") || v(w) == "--force"));
    match sub {
        "audit" if audit_fixes => {
            c.add(
                Category::PackageInstall,
                "package-install",
                format!("`{p} audit fix` changes the installed packages"),
            );
        }
        "install" | "i" | "add" | "ci" | "install-test" | "it" | "update" | "up" | "upgrade"
        | "remove" | "rm" | "uninstall" | "un" | "link" | "rebuild" => {
            c.add(
                Category::PackageInstall,
                "package-install",
                format!("`{p} {sub}` installs packages (and runs their scripts)"),
            );
        }
        "" if p == "yarn" || p == "bun" && args.is_empty() => {
            c.add(
                Category::PackageInstall,
                "package-install",
                format!("`{p}` installs packages"),
            );
        }
        "ls" | "list" | "view" | "info" | "outdated" | "why" | "explain" | "help" | "root"
        | "prefix" | "search" | "audit" | "doctor" | "whoami" | "ping" | "pm" | "licenses" => {
            c.add(
                Category::Enumerate,
                "enumerate",
                format!("`{p} {sub}` lists package data"),
            );
            // npm reads any `--name=value` as a setting (`--viewer=browser`, `--userconfig`,
            // a registry that receives the token): only listing flags are understood.
            if let Some(bad) = args.iter().map(v).find(|a| {
                a.starts_with('-') && !PM_READ_FLAGS.contains(&a.split('=').next().unwrap_or(a))
            }) {
                c.add(
                    Category::Unanalysable,
                    "unknown-option",
                    format!("`{p} {sub}` option `{bad}` is not in the command table"),
                );
            }
        }
        "" if args
            .iter()
            .any(|w| matches!(v(w), "-v" | "--version" | "-h" | "--help")) =>
        {
            c.add(
                Category::Enumerate,
                "enumerate",
                format!("`{p}` prints its version or help"),
            );
        }
        "config" | "set" => {
            if has(rest, &["get", "list", "ls"]) {
                c.add(
                    Category::Enumerate,
                    "enumerate",
                    format!("`{p} config` reads settings"),
                );
            } else {
                c.add(
                    Category::ConfigChange,
                    "config-change",
                    format!("`{p} config` changes settings"),
                );
            }
        }
        "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "login" | "adduser" => {
            c.add(
                Category::HttpWrite,
                "http-write",
                format!("`{p} {sub}` sends data to the registry"),
            );
        }
        _ => {
            c.add(
                Category::RunCode,
                "run-code",
                format!("`{p} {sub}` runs project scripts"),
            );
        }
    }
    for w in args {
        if w.value
            .as_deref()
            .is_some_and(|s| s.contains('/') || s.starts_with('~'))
        {
            k.read(c, w);
        }
    }
}

pub(super) fn other_pm(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let ops: Vec<&str> = args.iter().map(v).filter(|s| !s.starts_with('-')).collect();
    let sub = ops.first().copied().unwrap_or("");
    let second = ops.get(1).copied().unwrap_or("");
    let install = match p {
        "pip" | "pip3" | "conda" => matches!(
            sub,
            "install" | "uninstall" | "download" | "wheel" | "create" | "update"
        ),
        "pipx" => matches!(
            sub,
            "install" | "inject" | "upgrade" | "upgrade-all" | "reinstall" | "run"
        ),
        "uv" => {
            matches!(sub, "add" | "sync" | "remove" | "lock")
                || (sub == "pip" && matches!(second, "install" | "sync" | "uninstall"))
                || (sub == "tool" && matches!(second, "install" | "run" | "upgrade"))
        }
        "poetry" => matches!(sub, "add" | "install" | "update" | "remove" | "lock"),
        "cargo" => matches!(sub, "install" | "add" | "uninstall" | "update" | "fetch"),
        "gem" => matches!(sub, "install" | "update" | "uninstall"),
        "go" => {
            matches!(sub, "install" | "get")
                || (sub == "mod" && matches!(second, "download" | "tidy"))
        }
        "brew" => matches!(
            sub,
            "install" | "upgrade" | "reinstall" | "tap" | "uninstall"
        ),
        "composer" => matches!(sub, "install" | "require" | "update" | "remove"),
        _ => false,
    };
    let read = match p {
        "pip" | "pip3" | "conda" => {
            matches!(
                sub,
                "list" | "show" | "freeze" | "check" | "search" | "info"
            ) || (sub.is_empty() && !args.is_empty())
        }
        "cargo" => {
            matches!(
                sub,
                "tree" | "metadata" | "search" | "version" | "locate-project"
            ) || (sub.is_empty() && !args.is_empty())
        }
        "go" => matches!(sub, "version" | "env" | "list" | "doc"),
        "gem" | "brew" | "uv" | "pipx" | "poetry" | "composer" => {
            matches!(
                sub,
                "list" | "info" | "search" | "show" | "version" | "outdated"
            ) || (sub.is_empty() && !args.is_empty())
        }
        _ => false,
    };
    if install {
        c.add(
            Category::PackageInstall,
            "package-install",
            format!("`{p} {sub}` installs packages"),
        );
    } else if read {
        c.add(
            Category::Enumerate,
            "enumerate",
            format!("`{p} {sub}` lists package data"),
        );
    } else {
        c.add(
            Category::RunCode,
            "run-code",
            format!("`{p} {sub}` builds or runs code"),
        );
    }
    for w in args {
        if w.value
            .as_deref()
            .is_some_and(|s| s.contains('/') || s.starts_with('~'))
        {
            k.read(c, w);
        }
    }
}

pub(super) fn openclaw(c: &mut Classification, p: &str, args: &[Word]) {
    let ops: Vec<&str> = args.iter().map(v).filter(|s| !s.starts_with('-')).collect();
    let sub = ops.first().copied().unwrap_or("");
    let second = ops.get(1).copied().unwrap_or("");
    if p == "clawhub" {
        if matches!(sub, "install" | "add" | "update" | "sync") {
            c.add(
                Category::SkillInstall,
                "skill-install",
                format!("`clawhub {sub}` installs skills"),
            );
        } else if matches!(sub, "search" | "list" | "info" | "inspect" | "explore" | "") {
            c.add(Category::Enumerate, "enumerate", "`clawhub` lists skills");
        } else {
            c.add(Category::RunCode, "run-code", format!("`clawhub {sub}`"));
        }
        return;
    }
    match (sub, second) {
        (
            "skills" | "skill" | "plugins" | "plugin" | "hooks",
            "install" | "add" | "update" | "enable",
        ) => {
            c.add(
                Category::SkillInstall,
                "skill-install",
                format!("`openclaw {sub} {second}` installs code into the agent"),
            );
        }
        ("config", "set" | "unset") => {
            let key = ops.get(2).copied().unwrap_or("");
            let value = ops.get(3).copied();
            if is_approvals_key(key, value) {
                c.add(
                    Category::ApprovalsOff,
                    "approvals-off",
                    format!("`openclaw config set {key}` loosens approvals"),
                );
            } else {
                c.add(
                    Category::ConfigChange,
                    "config-change",
                    format!("`openclaw config set {key}`"),
                );
            }
        }
        ("approvals", "get" | "show" | "") => {
            c.add(
                Category::Enumerate,
                "enumerate",
                "`openclaw approvals get` reads the approvals document",
            );
        }
        ("approvals" | "devices" | "pairing", _) => {
            c.add(
                Category::ApprovalsOff,
                "approvals-off",
                format!("`openclaw {sub} {second}` changes who or what is approved"),
            );
        }
        ("gateway" | "daemon" | "node", "stop" | "restart" | "uninstall" | "kill") => {
            c.add(
                Category::ProcessExit,
                "process-exit",
                format!("`openclaw {sub} {second}` stops the agent's gateway"),
            );
        }
        ("status" | "health" | "help" | "doctor" | "logs" | "sessions" | "", _)
        | ("config", "get" | "")
        | ("skills" | "plugins", "list" | "info" | "") => {
            c.add(
                Category::Enumerate,
                "enumerate",
                format!("`openclaw {sub}` reads status"),
            );
        }
        _ => c.add(
            Category::RunCode,
            "run-code",
            format!("`openclaw {sub} {second}`"),
        ),
    }
}
