//! Developer tools: git (reads, writes, destructive forms), package managers, and
//! OpenClaw's own CLI (skills, config, approvals).

use super::paths_check::Checker;
use super::{is_approvals_key, Classification};
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

fn has(args: &[&str], any: &[&str]) -> bool {
    args.iter().any(|a| any.contains(a))
}

/// Short-flag cluster test (`-fdx` contains `f`).
fn has_short(args: &[&str], ch: char) -> bool {
    args.iter()
        .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(ch))
}

pub(super) fn git(k: &Checker, c: &mut Classification, args: &[Word]) {
    // Global options before the subcommand.
    let mut i = 0;
    while i < args.len() {
        let s = v(&args[i]);
        match s {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => {
                if let Some(dir) = args.get(i + 1) {
                    k.read(c, dir);
                }
                i += 2;
            }
            "-c" | "--config-env" => {
                c.add(
                    Category::RunCode,
                    "git-config-override",
                    "`git -c` can set hooks, pagers or aliases that run code",
                );
                i += 2;
            }
            _ if s.starts_with("--git-dir=") || s.starts_with("--work-tree=") => i += 1,
            _ if s.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub_word) = args.get(i) else {
        c.add(Category::Enumerate, "enumerate", "`git` prints help");
        return;
    };
    let sub = v(sub_word);
    let rest_words = &args[i + 1..];
    let rest: Vec<&str> = rest_words.iter().map(v).collect();
    let unknown_rest = rest_words.iter().any(|w| w.value.is_none());
    let mut read_paths = true;
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "cat-file"
        | "describe" | "blame" | "shortlog" | "show-ref" | "for-each-ref" | "rev-list"
        | "merge-base" | "name-rev" | "version" | "help" | "grep" | "whatchanged"
        | "count-objects" | "check-ignore" | "ls-remote" | "var" => {
            c.add(
                Category::Read,
                "git-read",
                format!("`git {sub}` reads the repository"),
            );
        }
        "branch"
            if !has(
                &rest,
                &[
                    "-d",
                    "-D",
                    "--delete",
                    "-m",
                    "-M",
                    "--move",
                    "-c",
                    "-C",
                    "--copy",
                    "-f",
                    "--force",
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                ],
            ) && (rest.is_empty()
                || has(
                    &rest,
                    &[
                        "-a",
                        "-r",
                        "-l",
                        "--list",
                        "-v",
                        "-vv",
                        "--all",
                        "--remotes",
                        "--show-current",
                        "--contains",
                        "--merged",
                        "--no-merged",
                    ],
                )) =>
        {
            c.add(Category::Read, "git-read", "`git branch` lists branches");
        }
        "remote" if rest.is_empty() || has(&rest, &["-v", "--verbose", "show", "get-url"]) => {
            c.add(Category::Read, "git-read", "`git remote` lists remotes");
        }
        "tag" if rest.is_empty() || has(&rest, &["-l", "--list"]) => {
            c.add(Category::Read, "git-read", "`git tag` lists tags");
        }
        "stash" if has(&rest, &["list", "show"]) => {
            c.add(
                Category::Read,
                "git-read",
                "`git stash list` reads the repository",
            );
        }
        "config"
            if has(
                &rest,
                &[
                    "--get",
                    "--get-all",
                    "--list",
                    "-l",
                    "--get-regexp",
                    "get",
                    "list",
                ],
            ) =>
        {
            c.add(Category::Read, "git-read", "`git config` reads settings");
        }
        "pull" | "reset" | "filter-branch" | "filter-repo" | "update-ref" => {
            c.add(
                Category::DestructiveGit,
                "destructive-git",
                format!("`git {sub}` can discard or rewrite work"),
            );
        }
        "clean" => {
            if has(&rest, &["-n", "--dry-run"]) && !has(&rest, &["-f", "--force"]) {
                c.add(
                    Category::Read,
                    "git-read",
                    "`git clean -n` lists what would be deleted",
                );
            } else if has_short(&rest, 'f') || has(&rest, &["--force"]) {
                c.add(
                    Category::DestructiveGit,
                    "destructive-git",
                    "`git clean -f` deletes untracked files",
                );
            } else {
                c.add(
                    Category::Delete,
                    "delete",
                    "`git clean` deletes untracked files",
                );
            }
        }
        "push" => {
            let force = has(
                &rest,
                &[
                    "--force",
                    "--force-with-lease",
                    "--mirror",
                    "--delete",
                    "--prune",
                    "--force-if-includes",
                ],
            ) || has_short(&rest, 'f')
                || has_short(&rest, 'd')
                || rest.iter().any(|r| {
                    r.starts_with('+')
                        || (r.starts_with(':') && r.len() > 1)
                        || r.starts_with("--force")
                });
            if force {
                c.add(
                    Category::DestructiveGit,
                    "destructive-git",
                    "`git push --force` (or delete) rewrites the remote",
                );
            } else {
                c.add(
                    Category::HttpWrite,
                    "git-push",
                    "`git push` sends commits to a remote",
                );
            }
        }
        "checkout" | "restore" => {
            let pos = rest.iter().position(|r| *r == "--");
            let discards = pos.is_some_and(|p| p + 1 < rest.len())
                || rest
                    .iter()
                    .any(|r| *r == "." || *r == "-f" || *r == "--force")
                || (sub == "restore" && !has(&rest, &["--staged", "-S"]) && !rest.is_empty());
            if discards {
                c.add(
                    Category::DestructiveGit,
                    "destructive-git",
                    format!("`git {sub}` discards uncommitted changes"),
                );
            } else {
                c.add(
                    Category::Write,
                    "git-write",
                    format!("`git {sub}` changes the working tree"),
                );
            }
        }
        "add" | "commit" | "stash" | "switch" | "mv" | "merge" | "rebase" | "cherry-pick"
        | "revert" | "tag" | "init" | "clone" | "fetch" | "am" | "apply" | "notes" | "worktree"
        | "submodule" | "gc" | "prune" | "branch" | "remote" | "bisect" | "sparse-checkout"
        | "maintenance" => {
            c.add(
                Category::Write,
                "git-write",
                format!("`git {sub}` changes the repository"),
            );
            if matches!(sub, "clone" | "fetch" | "submodule") {
                c.add(
                    Category::HttpRead,
                    "http-read",
                    format!("`git {sub}` fetches from a remote"),
                );
            }
            if sub == "branch" && has(&rest, &["-D", "--delete"]) {
                c.add(
                    Category::Delete,
                    "delete",
                    "`git branch -D` deletes a branch",
                );
            }
        }
        "rm" => {
            c.add(Category::Delete, "delete", "`git rm` deletes files");
        }
        "config" => {
            c.add(
                Category::RunCode,
                "git-config",
                "`git config` can set hooks, pagers or aliases that run code",
            );
            read_paths = false;
        }
        _ => {
            c.add(
                Category::RunCode,
                "unknown-program",
                format!("`git {sub}` (an alias or extension) runs code"),
            );
        }
    }
    if unknown_rest
        && c.findings
            .iter()
            .all(|f| matches!(f.category, Category::Read | Category::Enumerate))
    {
        // Reads with non-static operands (`git show "$REF"`) are fine; paths were checked.
    }
    if read_paths {
        for w in rest_words {
            if w.value.as_deref().is_some_and(|s| {
                !s.starts_with('-') && (s.contains('/') || s.starts_with('~') || s.starts_with('.'))
            }) {
                k.read(c, w);
            }
        }
    }
}

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
    match sub {
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
