//! git: reads, writes, and the destructive forms (history rewrites, forced pushes,
//! cleans), with the paths each form touches.

use super::args::{has, has_short, v};
use super::gram_git::*;
use super::grammar::{Grammar, Parsed};
use super::judge::{judge, read_files};
use super::paths_check::Checker;
use super::read_programs::globs_may_be_options;
use super::Classification;
use crate::policy::fs_memo;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;
use std::path::{Path, PathBuf};

/// git's global options, before the subcommand (git matches them exactly).
enum Global {
    Flag,
    /// Takes the next word (or `=value`).
    Value,
    /// Changes which repository, config or programs git uses: gated.
    Gate(&'static str),
}

fn global(name: &str) -> Option<Global> {
    Some(match name {
        "-p"
        | "--paginate"
        | "-P"
        | "--no-pager"
        | "--bare"
        | "--no-replace-objects"
        | "--literal-pathspecs"
        | "--glob-pathspecs"
        | "--noglob-pathspecs"
        | "--icase-pathspecs"
        | "--no-optional-locks"
        | "--no-lazy-fetch"
        | "--no-advice"
        | "--html-path"
        | "--man-path"
        | "--info-path"
        | "--version"
        | "--help" => Global::Flag,
        "-C" | "--namespace" | "--list-cmds" | "--attr-source" => Global::Value,
        "-c" | "--config-env" => Global::Gate("sets configuration that can run programs"),
        "--git-dir" => Global::Gate("uses another repository, whose config can run programs"),
        "--work-tree" => Global::Gate("reads and writes files outside the repository"),
        "--exec-path" => Global::Gate("runs git's programs from another directory"),
        "--super-prefix" => Global::Gate("is an internal option"),
        _ => return None,
    })
}

pub(super) fn git(seg: &Segment, k: &Checker, c: &mut Classification, args: &[Word]) {
    let mut i = 0;
    let mut rebased = false;
    while let Some(w) = args.get(i) {
        let Some(s) = w.value.as_deref() else {
            c.add(
                Category::Unanalysable,
                "unknown-option",
                format!("`git` word `{}` is not static", w.source),
            );
            return;
        };
        if !s.starts_with('-') {
            break;
        }
        let (name, attached) = match s.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (s, None),
        };
        match global(name) {
            None => {
                c.add(
                    Category::Unanalysable,
                    "unknown-option",
                    format!("`git` option `{s}` is not in the command table"),
                );
                return;
            }
            Some(Global::Gate(why)) => {
                c.add(
                    Category::RunCode,
                    "git-config-override",
                    format!("`git {name}` {why}"),
                );
                if attached.is_none() && name != "--exec-path" {
                    i += 1;
                }
                // Another repository or work tree: blocked where it holds a secret.
                if matches!(name, "--git-dir" | "--work-tree") {
                    let dir = match attached {
                        Some(v) => Word::literal(v),
                        None => args.get(i).cloned().unwrap_or_else(|| Word::unknown("")),
                    };
                    k.read(c, &dir);
                    k.recursive_names(c, &dir);
                }
            }
            Some(Global::Value) => {
                if attached.is_none() {
                    i += 1;
                }
                rebased |= name == "-C";
            }
            Some(Global::Flag) => {}
        }
        i += 1;
    }
    let Some(sub_word) = args.get(i) else {
        c.add(Category::Enumerate, "enumerate", "`git` prints help");
        return;
    };
    let sub = v(sub_word);
    let rest_words = &args[i + 1..];
    if rebased {
        // `git -C DIR` runs in DIR (the segment's directories are already DIR): a tree
        // that holds a secret (`git -C ~`, `git -C ..`) is blocked, whatever git reads.
        k.recursive_names(c, &Word::literal("."));
    }
    let rest: Vec<&str> = rest_words.iter().map(v).collect();
    let mut read_paths = true;
    if let Some(g) = read_grammar(sub, &rest) {
        c.add(
            Category::Read,
            "git-read",
            format!("`git {sub}` reads the repository"),
        );
        if sub == "ls-remote" {
            c.add(
                Category::HttpRead,
                "http-read",
                "`git ls-remote` asks a remote for its refs",
            );
        }
        let words = if matches!(sub, "stash" | "remote" | "worktree" | "submodule")
            || (sub == "reflog" && rest.first() == Some(&"show"))
        {
            &rest_words[1..]
        } else {
            rest_words
        };
        if globs_may_be_options(k, c, "git", words) {
            return;
        }
        let Some(parsed) = judge(k, c, &format!("git {sub}"), g, words) else {
            return;
        };
        if sub == "remote" && rest.first() == Some(&"show") && !parsed.has("-n") {
            c.add(
                Category::HttpRead,
                "http-read",
                "`git remote show` asks the remote",
            );
        }
        if parsed.has("no-index") && sub != "check-ignore" {
            read_files(seg, k, c, &parsed.operands);
        }
        if sub == "grep" && (parsed.has("untracked") || parsed.has("no-exclude-standard")) {
            // Untracked files too: a dotenv file below is read.
            k.recursive_read(c, &Word::literal("."));
        }
        if sub == "cat-file" {
            cat_file(c, &parsed);
        }
        if CONTENT_READS.contains(&sub) {
            repository_with_secrets(k, c);
        }
        git_operands(k, c, &parsed.operands);
        return;
    }
    match sub {
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

/// The grammar of a read-only use of `sub` (with its first words `rest`), if it is one.
fn read_grammar(sub: &str, rest: &[&str]) -> Option<&'static Grammar> {
    let first = rest.first().copied().unwrap_or("");
    let listing = |rest: &[&str]| {
        rest.iter().all(|r| r.starts_with('-'))
            || rest.iter().any(|r| {
                matches!(*r, "-l" | "--list")
                    || [
                        "--contains",
                        "--no-contains",
                        "--merged",
                        "--no-merged",
                        "--points-at",
                    ]
                    .iter()
                    .any(|f| r.starts_with(f))
            })
    };
    Some(match sub {
        "log" | "show" | "diff" | "whatchanged" | "rev-list" => &G_GIT_LOG,
        "reflog" if rest.is_empty() || first == "show" || first.starts_with('-') => &G_GIT_LOG,
        "cherry" | "show-branch" => &G_GIT_MISC,
        "worktree" if first == "list" => &G_GIT_MISC,
        "submodule" if first == "status" => &G_GIT_MISC,
        "stash" if matches!(first, "list" | "show") => &G_GIT_LOG,
        "status" => &G_GIT_STATUS,
        "grep" => &G_GIT_GREP,
        "blame" | "annotate" => &G_GIT_BLAME,
        "ls-remote" => &G_GIT_LS_REMOTE,
        "ls-files" => &G_GIT_LS_FILES,
        "rev-parse" => &G_GIT_REV_PARSE,
        "ls-tree" | "cat-file" | "describe" | "shortlog" | "show-ref" | "for-each-ref"
        | "merge-base" | "name-rev" | "count-objects" | "check-ignore" | "version" | "var" => {
            &G_GIT_MISC
        }
        "branch" | "tag" if listing(rest) => &G_GIT_LIST_REFS,
        "remote" if rest.is_empty() || matches!(first, "-v" | "--verbose") => &G_GIT_LIST_REFS,
        "remote" if matches!(first, "show" | "get-url") => &G_GIT_LIST_REFS,
        // `git config KEY` prints one setting.
        "config" if rest.len() == 1 && !first.starts_with('-') && first.contains('.') => {
            &G_GIT_CONFIG_READ
        }
        "config"
            if rest.iter().any(|r| {
                matches!(
                    *r,
                    "--get" | "--get-all" | "--get-regexp" | "--list" | "-l" | "get" | "list"
                )
            }) && rest
                .iter()
                .all(|r| !r.starts_with("--add") && !r.starts_with("--unset")) =>
        {
            &G_GIT_CONFIG_READ
        }
        "help"
            if rest
                .iter()
                .all(|r| matches!(*r, "-a" | "--all" | "-g" | "--guides")) =>
        {
            &G_GIT_MISC
        }
        _ => return None,
    })
}

/// `git cat-file`: an object named by its id (or read from stdin with `--batch`) may be
/// any file's content; which file cannot be known here. Type, size and existence queries
/// print no content.
fn cat_file(c: &mut Classification, parsed: &Parsed) {
    if ["batch", "batch-check", "batch-command", "batch-all-objects"]
        .iter()
        .any(|b| parsed.has(b))
    {
        c.add(
            Category::Unanalysable,
            "git-object",
            "`git cat-file --batch` prints objects named on its input",
        );
        return;
    }
    if parsed.has("-t") || parsed.has("-s") || parsed.has("-e") {
        return;
    }
    for w in &parsed.operands {
        let s = v(w);
        if s.len() >= 4 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            c.add(
                Category::Unanalysable,
                "git-object",
                format!("`git cat-file` prints object {s}: which file it holds is not known"),
            );
        }
    }
}

/// Read subcommands that print file contents from the repository (history included).
const CONTENT_READS: &[&str] = &[
    "log",
    "show",
    "diff",
    "whatchanged",
    "grep",
    "blame",
    "annotate",
    "cat-file",
    "stash",
];

/// A repository whose working tree holds a secret (a dotfiles repository in the home, `git
/// -C ~/sub` under it): what git prints from it may be that secret. Blocked.
fn repository_with_secrets(k: &Checker, c: &mut Classification) {
    let cwds: Vec<PathBuf> = k.cwds().collect();
    for cwd in cwds {
        let root = repo_root(&cwd);
        k.recursive_names(c, &Word::literal(&root.to_string_lossy()));
    }
}

/// The working tree root of the repository git finds from `cwd` (the first directory up
/// that holds `.git`), or `cwd` when there is none.
fn repo_root(cwd: &Path) -> PathBuf {
    let mut dir = cwd;
    for _ in 0..64 {
        if fs_memo::symlink_metadata(&dir.join(".git")).is_some() {
            return dir.to_path_buf();
        }
        match dir.parent() {
            Some(p) => dir = p,
            None => break,
        }
    }
    cwd.to_path_buf()
}

/// Revisions and paths of a git read, path-checked: a path-like word relative to where git
/// runs (after `-C`, that directory), and the PATH of `REV:PATH` relative to the
/// repository's root (`./` and `../` relative to where git runs), as git reads them.
fn git_operands(k: &Checker, c: &mut Classification, ops: &[&Word]) {
    for w in ops {
        let Some(s) = w.value.as_deref() else {
            continue;
        };
        if matches!(s, "get" | "list" | "show" | "get-url") {
            continue;
        }
        let object = s.split_once(':').filter(|_| !s.contains("://"));
        let path = match object {
            // `:N:path` is a path at stage N of the index.
            Some((_, p)) => p
                .strip_prefix(['0', '1', '2', '3'])
                .and_then(|r| r.strip_prefix(':'))
                .unwrap_or(p),
            None => s,
        };
        let path = path
            .trim_start_matches(['/', '!'])
            .trim_start_matches("(top)");
        if path.is_empty() {
            continue;
        }
        if object.is_some() && !path.starts_with("./") && !path.starts_with("../") {
            let cwds: Vec<PathBuf> = k.cwds().collect();
            if cwds.is_empty() {
                c.add(
                    Category::Unanalysable,
                    "unknown-cwd",
                    format!("`{s}` names a file of a repository not known here"),
                );
            }
            for cwd in cwds {
                let abs = repo_root(&cwd).join(path);
                k.read(c, &Word::literal(&abs.to_string_lossy()));
            }
            continue;
        }
        let path_like = path.contains('/') || path.starts_with(['.', '~']) || object.is_some();
        if path_like {
            k.read(c, &Word::literal(path));
        }
    }
}
