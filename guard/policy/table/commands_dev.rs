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

/// A node package manager's subcommand: its finding, with `{p}` the program and `{sub}`
/// the subcommand. A subcommand in no row runs project scripts.
type SubRow = (
    &'static [&'static str],
    Category,
    &'static str,
    &'static str,
);

#[rustfmt::skip]
static NODE_SUBS: &[SubRow] = &[
    (&["install", "i", "add", "ci", "install-test", "it", "update", "up", "upgrade", "remove",
       "rm", "uninstall", "un", "link", "rebuild"],
        Category::PackageInstall, "package-install", "`{p} {sub}` installs packages (and runs their scripts)"),
    (&["ls", "list", "view", "info", "outdated", "why", "explain", "help", "root", "prefix",
       "search", "audit", "doctor", "whoami", "ping", "pm", "licenses"],
        Category::Enumerate, "enumerate", "`{p} {sub}` lists package data"),
    (&["publish", "unpublish", "deprecate", "dist-tag", "owner", "login", "adduser"],
        Category::HttpWrite, "http-write", "`{p} {sub}` sends data to the registry"),
];

pub(super) fn node_pm(k: &Checker, c: &mut Classification, p: &str, args: &[Word], seg: &Segment) {
    let ops: Vec<&str> = args.iter().map(v).filter(|s| !s.starts_with('-')).collect();
    let sub = ops.first().copied().unwrap_or("");
    // npm's own aliases of `ls --long` / `ls --all` (yarn and pnpm would run a script).
    let sub = if p == "npm" && matches!(sub, "ll" | "la") {
        "ls"
    } else {
        sub
    };
    let rest = ops.get(1..).unwrap_or(&[]);
    let _ = seg;
    if runs_package(c, p, sub, rest) {
        return;
    }

    // `npm audit fix` (or `--fix`) installs; plain `audit` only reports.
    let audit_fixes = sub == "audit"
        && (rest.iter().any(|r| *r != "signatures")
            || args
                .iter()
                .any(|w| v(w).starts_with("--fix") || v(w) == "--force"));
    if audit_fixes {
        c.add(
            Category::PackageInstall,
            "package-install",
            format!("`{p} audit fix` changes the installed packages"),
        );
    } else if sub.is_empty() {
        node_pm_bare(c, p, args);
    } else if matches!(sub, "config" | "set") {
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
    } else if let Some(&(_, category, code, why)) =
        NODE_SUBS.iter().find(|(subs, ..)| subs.contains(&sub))
    {
        c.add(category, code, why.replace("{p}", p).replace("{sub}", sub));
        if category == Category::Enumerate {
            listing_flags(c, p, sub, args);
            loads_user_config(c, p);
        }
    } else {
        c.add(
            Category::RunCode,
            "run-code",
            format!("`{p} {sub}` runs project scripts"),
        );
    }
    read_path_words(k, c, args);
}

/// `npx TOOL`, `pnpm dlx TOOL`, ...: downloads and runs a package (or, through clawhub,
/// installs a skill). True when that is what the command does.
fn runs_package(c: &mut Classification, p: &str, sub: &str, rest: &[&str]) -> bool {
    let runner = matches!(p, "npx" | "bunx");
    let dlx = matches!(p, "pnpm" | "yarn" | "bun") && matches!(sub, "dlx" | "x");
    if !runner && !dlx {
        return false;
    }
    let (tool, tool_args) = if runner {
        (sub, rest)
    } else {
        (
            rest.first().copied().unwrap_or(""),
            rest.get(1..).unwrap_or(&[]),
        )
    };
    if tool.starts_with("clawhub") && has(tool_args, &["install", "add", "update"]) {
        c.add(
            Category::SkillInstall,
            "skill-install",
            "installs an OpenClaw skill through clawhub",
        );
        return true;
    }
    c.add(
        Category::PackageInstall,
        "package-install",
        format!("`{p}` downloads {tool}"),
    );
    c.add(Category::RunCode, "run-code", format!("`{p}` runs {tool}"));
    true
}

/// A node package manager with no subcommand: `yarn` and bare `bun` install; `--version`
/// and `--help` print; anything else runs project scripts.
fn node_pm_bare(c: &mut Classification, p: &str, args: &[Word]) {
    if p == "yarn" || p == "bun" && args.is_empty() {
        c.add(
            Category::PackageInstall,
            "package-install",
            format!("`{p}` installs packages"),
        );
    } else if args
        .iter()
        .any(|w| matches!(v(w), "-v" | "--version" | "-h" | "--help"))
    {
        c.add(
            Category::Enumerate,
            "enumerate",
            format!("`{p}` prints its version or help"),
        );
        loads_user_config(c, p);
    } else {
        c.add(
            Category::RunCode,
            "run-code",
            format!("`{p} ` runs project scripts"),
        );
    }
}

/// Even a listing or `--version` is not a plain read (the oracle saw both): the manager loads
/// the user's config, which holds registry tokens and may point anywhere, and writes its cache
/// and logs under HOME.
fn loads_user_config(c: &mut Classification, p: &str) {
    c.add(
        Category::RunCode,
        "loads-user-config",
        format!("`{p}` loads ~/.npmrc (registry tokens), may ask the registry and writes its cache and logs under HOME"),
    );
}

/// npm reads any `--name=value` as a setting (`--viewer=browser`, `--userconfig`, a
/// registry that receives the token): only listing flags are understood.
fn listing_flags(c: &mut Classification, p: &str, sub: &str, args: &[Word]) {
    if let Some(bad) = args
        .iter()
        .map(v)
        .find(|a| a.starts_with('-') && !PM_READ_FLAGS.contains(&a.split('=').next().unwrap_or(a)))
    {
        c.add(
            Category::Unanalysable,
            "unknown-option",
            format!("`{p} {sub}` option `{bad}` is not in the command table"),
        );
    }
}

/// Arguments that look like paths are read (a package from a directory, a lock file).
fn read_path_words(k: &Checker, c: &mut Classification, args: &[Word]) {
    for w in args {
        if w.value
            .as_deref()
            .is_some_and(|s| s.contains('/') || s.starts_with('~'))
        {
            k.read(c, w);
        }
    }
}

/// One package manager's subcommands.
struct Manager {
    names: &'static [&'static str],
    /// Subcommands that install, update or remove packages.
    installs: &'static [&'static str],
    /// `SUB SECOND` forms that install (`uv pip install`, `go mod tidy`).
    install_pairs: &'static [(&'static str, &'static [&'static str])],
    /// Subcommands that only print package data.
    reads: &'static [&'static str],
    /// Options without a subcommand (`pip --version`) only print.
    bare_reads: bool,
}

/// Options of package managers that run or load code, or write, even in a listing: pip's
/// interpreter and log file, cargo's config and manifest, go's tool wrappers and `go env -w`.
const RISKY_OPTIONS: &[&str] = &[
    "--python",
    "--log",
    "--log-file",
    "--cache-dir",
    "--config",
    "--config-settings",
    "--manifest-path",
    "--target",
    "--prefix",
    "--root",
    "--src",
    "-toolexec",
    "--toolexec",
    "-exec",
    "--exec",
    "-overlay",
    "--overlay",
    "-modfile",
    "--modfile",
    "-w",
    "-u",
];

/// Is there a cargo config (`.cargo/config.toml` or `.cargo/config`) in a directory cargo
/// would read from the cwd up, or in `~/.cargo`? Even `cargo tree` and `cargo metadata` run
/// `rustc -vV` through the `build.rustc-wrapper` such a file may name.
fn cargo_config_present(k: &Checker) -> bool {
    let home_cargo = k.t.home.join(".cargo");
    k.ctxs().iter().any(|ctx| {
        ctx.cwd
            .ancestors()
            .map(|d| d.join(".cargo"))
            .chain(std::iter::once(home_cargo.clone()))
            .any(|d| {
                ["config.toml", "config"]
                    .iter()
                    .any(|f| crate::policy::fs_memo::metadata(&d.join(f)).is_some())
            })
    })
}

/// The listing subcommands most managers share.
const LISTS: &[&str] = &["list", "info", "search", "show", "version", "outdated"];

#[rustfmt::skip]
static MANAGERS: &[Manager] = &[
    Manager { names: &["pip", "pip3", "conda"],
        installs: &["install", "uninstall", "download", "wheel", "create", "update"], install_pairs: &[],
        reads: &["list", "show", "freeze", "check", "search", "info"], bare_reads: true },
    Manager { names: &["pipx"],
        installs: &["install", "inject", "upgrade", "upgrade-all", "reinstall", "run"], install_pairs: &[],
        reads: LISTS, bare_reads: true },
    Manager { names: &["uv"],
        installs: &["add", "sync", "remove", "lock"],
        install_pairs: &[("pip", &["install", "sync", "uninstall"]), ("tool", &["install", "run", "upgrade"])],
        reads: LISTS, bare_reads: true },
    Manager { names: &["poetry"],
        installs: &["add", "install", "update", "remove", "lock"], install_pairs: &[],
        reads: LISTS, bare_reads: true },
    Manager { names: &["cargo"],
        installs: &["install", "add", "uninstall", "update", "fetch"], install_pairs: &[],
        reads: &["tree", "metadata", "search", "version", "locate-project"], bare_reads: true },
    Manager { names: &["gem"],
        installs: &["install", "update", "uninstall"], install_pairs: &[],
        reads: LISTS, bare_reads: true },
    Manager { names: &["go"],
        installs: &["install", "get"], install_pairs: &[("mod", &["download", "tidy"])],
        reads: &["version", "env", "list", "doc"], bare_reads: false },
    Manager { names: &["brew"],
        installs: &["install", "upgrade", "reinstall", "tap", "uninstall"], install_pairs: &[],
        reads: LISTS, bare_reads: true },
    Manager { names: &["composer"],
        installs: &["install", "require", "update", "remove"], install_pairs: &[],
        reads: LISTS, bare_reads: true },
];

pub(super) fn other_pm(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let ops: Vec<&str> = args.iter().map(v).filter(|s| !s.starts_with('-')).collect();
    let sub = ops.first().copied().unwrap_or("");
    let second = ops.get(1).copied().unwrap_or("");
    let m = MANAGERS.iter().find(|m| m.names.contains(&p));
    let install = m.is_some_and(|m| {
        m.installs.contains(&sub)
            || m.install_pairs
                .iter()
                .any(|(s, seconds)| *s == sub && seconds.contains(&second))
    });
    // Options that load code or config, or write, make no listing a read; so does any
    // global option before the subcommand (its value could be the word taken as the verb).
    let leading_option = args.first().is_some_and(|a| v(a).starts_with('-')) && !sub.is_empty();
    let risky = args.iter().any(|a| {
        let a = v(a);
        RISKY_OPTIONS
            .iter()
            .any(|o| a == *o || a.strip_prefix(o).is_some_and(|r| r.starts_with('=')))
            || a.starts_with("-Z")
    });
    let loads_config = p == "cargo" && cargo_config_present(k);
    let read = !(risky || leading_option || loads_config)
        && m.is_some_and(|m| {
            m.reads.contains(&sub) || (m.bare_reads && sub.is_empty() && !args.is_empty())
        });
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
    read_path_words(k, c, args);
}

/// An `openclaw SUB SECOND` form: subcommands, second words (empty: any), and its finding
/// (`{sub}`, `{second}` filled in). The first matching row wins; no row runs code.
type OpenClawRow = (
    &'static [&'static str],
    &'static [&'static str],
    Category,
    &'static str,
    &'static str,
);

const ANY: &[&str] = &[];

#[rustfmt::skip]
static OPENCLAW: &[OpenClawRow] = &[
    (&["skills", "skill", "plugins", "plugin", "hooks"], &["install", "add", "update", "enable"],
        Category::SkillInstall, "skill-install", "`openclaw {sub} {second}` installs code into the agent"),
    (&["approvals"], &["get", "show", ""],
        Category::Enumerate, "enumerate", "`openclaw approvals get` reads the approvals document"),
    (&["approvals", "devices", "pairing"], ANY,
        Category::ApprovalsOff, "approvals-off", "`openclaw {sub} {second}` changes who or what is approved"),
    (&["gateway", "daemon", "node"], &["stop", "restart", "uninstall", "kill"],
        Category::ProcessExit, "process-exit", "`openclaw {sub} {second}` stops the agent's gateway"),
    (&["status", "health", "help", "doctor", "logs", "sessions", ""], ANY,
        Category::Enumerate, "enumerate", "`openclaw {sub}` reads status"),
    (&["config"], &["get", ""], Category::Enumerate, "enumerate", "`openclaw {sub}` reads status"),
    (&["skills", "plugins"], &["list", "info", ""],
        Category::Enumerate, "enumerate", "`openclaw {sub}` reads status"),
];

pub(super) fn openclaw(c: &mut Classification, p: &str, args: &[Word]) {
    let ops: Vec<&str> = args.iter().map(v).filter(|s| !s.starts_with('-')).collect();
    let sub = ops.first().copied().unwrap_or("");
    let second = ops.get(1).copied().unwrap_or("");
    if p == "clawhub" {
        clawhub(c, sub);
        return;
    }
    if sub == "config" && matches!(second, "set" | "unset") {
        let key = ops.get(2).copied().unwrap_or("");
        if is_approvals_key(key, ops.get(3).copied()) {
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
        return;
    }
    let row = OPENCLAW.iter().find(|(subs, seconds, ..)| {
        subs.contains(&sub) && (seconds.is_empty() || seconds.contains(&second))
    });
    match row {
        Some(&(_, _, category, code, why)) => c.add(
            category,
            code,
            why.replace("{sub}", sub).replace("{second}", second),
        ),
        None => c.add(
            Category::RunCode,
            "run-code",
            format!("`openclaw {sub} {second}`"),
        ),
    }
}

fn clawhub(c: &mut Classification, sub: &str) {
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
}
