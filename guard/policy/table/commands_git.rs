//! git: reads, writes, and the destructive forms (history rewrites, forced pushes,
//! cleans), with the paths each form touches.

use super::args::{has, has_short, v};
use super::git_content::what_it_prints;
use super::gram_git::*;
use super::grammar::Grammar;
use super::judge::{judge, read_files};
use super::paths_check::Checker;
use super::read_programs::globs_may_be_options;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

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
    let Some((i, rebased)) = globals(k, c, args) else {
        return;
    };
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
    } else {
        // Git works on the repository of its working directory, which `cd` or `env -C`
        // may have moved out of the workspace.
        k.read(c, &Word::literal("."));
    }
    let rest: Vec<&str> = rest_words.iter().map(v).collect();
    if let Some(g) = read_grammar(sub, &rest) {
        git_read(seg, k, c, sub, rest_words, g);
        return;
    }
    let Some(&(_, effect)) = CHANGES.iter().find(|(subs, _)| subs.contains(&sub)) else {
        c.add(
            Category::RunCode,
            "unknown-program",
            format!("`git {sub}` (an alias or extension) runs code"),
        );
        return;
    };
    let (category, code, why) = effect(sub, &rest);
    c.add(category, code, format!("`git {sub}` {why}"));
    if FETCHES.contains(&sub) {
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
    // `git config` values are settings, not paths.
    if sub != "config" {
        for w in rest_words {
            if w.value.as_deref().is_some_and(|s| {
                !s.starts_with('-') && (s.contains('/') || s.starts_with('~') || s.starts_with('.'))
            }) {
                k.read(c, w);
            }
        }
    }
}

/// Walks git's global options: the index of the subcommand and whether `-C` moved git, or
/// `None` after recording why the command is not understood.
fn globals(k: &Checker, c: &mut Classification, args: &[Word]) -> Option<(usize, bool)> {
    let mut i = 0;
    let mut rebased = false;
    while let Some(w) = args.get(i) {
        let Some(s) = w.value.as_deref() else {
            c.add(
                Category::Unanalysable,
                "unknown-option",
                format!("`git` word `{}` is not static", w.source),
            );
            return None;
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
                return None;
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
                // `-c include.path=FILE` (or any `*.path` a read follows): FILE is parsed as
                // config and printed by `git config -l`, so it is read.
                if name == "-c" {
                    if let Some((key, val)) = args
                        .get(i)
                        .and_then(|w| w.value.as_deref())
                        .and_then(|v| v.split_once('='))
                    {
                        if key.to_ascii_lowercase().ends_with(".path") {
                            k.read(c, &Word::literal(val));
                        }
                    }
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
    Some((i, rebased))
}

/// A read-only use of `git sub`: its options by `g`, the files and objects it prints.
fn git_read(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    sub: &str,
    rest_words: &[Word],
    g: &'static Grammar,
) {
    let first = rest_words.first().map_or("", v);
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
        remote_unvetted(c, "git ls-remote");
    }
    // `git stash show`, `git remote get-url`, ...: the options follow the second word.
    let words = if matches!(sub, "stash" | "remote" | "worktree" | "submodule")
        || (sub == "reflog" && first == "show")
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
    if sub == "remote" && first == "show" && !parsed.has("-n") {
        c.add(
            Category::HttpRead,
            "http-read",
            "`git remote show` asks the remote",
        );
        remote_unvetted(c, "git remote show");
    }
    if parsed.has("no-index") && sub != "check-ignore" {
        read_files(seg, k, c, &parsed.operands);
    }
    if sub == "grep" && (parsed.has("untracked") || parsed.has("no-exclude-standard")) {
        // Untracked files too: a dotenv file below is read.
        k.recursive_read(c, &Word::literal("."));
    }
    what_it_prints(k, c, sub, &parsed);
}

/// Asking a remote is never autonomous: git reads the user's credentials for it (`~/.netrc`,
/// credential helpers; the oracle saw `git ls-remote https://…` read `.netrc`) and sends them,
/// and a remote's name is an address kept in the repository's config that no rule vets.
fn remote_unvetted(c: &mut Classification, what: &str) {
    c.add(
        Category::Unanalysable,
        "git-remote",
        format!(
            "`{what}` asks a remote with the user's git credentials, at an address the guard \
             does not vet"
        ),
    );
}

/// What a subcommand that changes something does: category, finding, and why (after
/// "`git SUB` "), picked from its words.
type Effect = (Category, &'static str, &'static str);

/// The rule that gives a changing subcommand's effect from its name and words.
type Rule = fn(&str, &[&str]) -> Effect;

/// Subcommands that are not reads, each with the rule that gives its effect. A subcommand
/// in neither this table nor [`READS`] is an alias or an extension: it runs code.
#[rustfmt::skip]
static CHANGES: &[(&[&str], Rule)] = &[
    (&["pull", "reset", "filter-branch", "filter-repo", "update-ref"],
        |_, _| (Category::DestructiveGit, "destructive-git", "can discard or rewrite work")),
    (&["clean"], clean),
    (&["push"], push),
    (&["checkout", "restore"], checkout),
    (&["add", "commit", "stash", "switch", "mv", "merge", "rebase", "cherry-pick", "revert",
       "tag", "init", "clone", "fetch", "am", "apply", "notes", "worktree", "submodule", "gc",
       "prune", "branch", "remote", "bisect", "sparse-checkout", "maintenance"],
        |_, _| (Category::Write, "git-write", "changes the repository")),
    (&["rm"], |_, _| (Category::Delete, "delete", "deletes files")),
    (&["config"],
        |_, _| (Category::RunCode, "git-config", "can set hooks, pagers or aliases that run code")),
];

/// Changing subcommands that also fetch from a remote.
const FETCHES: &[&str] = &["clone", "fetch", "submodule"];

fn clean(_: &str, rest: &[&str]) -> Effect {
    if has(rest, &["-n", "--dry-run"]) && !has(rest, &["-f", "--force"]) {
        (
            Category::Read,
            "git-read",
            "with `-n` lists what would be deleted",
        )
    } else if has_short(rest, 'f') || has(rest, &["--force"]) {
        (
            Category::DestructiveGit,
            "destructive-git",
            "with `-f` deletes untracked files",
        )
    } else {
        (Category::Delete, "delete", "deletes untracked files")
    }
}

/// Options and refspecs (`+ref`, `:ref`) that overwrite or delete remote refs.
const PUSH_FORCE: &[&str] = &[
    "--force",
    "--force-with-lease",
    "--mirror",
    "--delete",
    "--prune",
    "--force-if-includes",
];

fn push(_: &str, rest: &[&str]) -> Effect {
    let force = has(rest, PUSH_FORCE)
        || has_short(rest, 'f')
        || has_short(rest, 'd')
        || rest.iter().any(|r| {
            r.starts_with('+') || (r.starts_with(':') && r.len() > 1) || r.starts_with("--force")
        });
    if force {
        let why = "with `--force` (or a delete) rewrites the remote";
        (Category::DestructiveGit, "destructive-git", why)
    } else {
        (Category::HttpWrite, "git-push", "sends commits to a remote")
    }
}

fn checkout(sub: &str, rest: &[&str]) -> Effect {
    let pos = rest.iter().position(|r| *r == "--");
    let discards = pos.is_some_and(|p| p + 1 < rest.len())
        || rest
            .iter()
            .any(|r| *r == "." || *r == "-f" || *r == "--force")
        || (sub == "restore" && !has(rest, &["--staged", "-S"]) && !rest.is_empty());
    if discards {
        (
            Category::DestructiveGit,
            "destructive-git",
            "discards uncommitted changes",
        )
    } else {
        (Category::Write, "git-write", "changes the working tree")
    }
}

/// When a subcommand's words make it a read.
type When = fn(&[&str]) -> bool;

fn always(_: &[&str]) -> bool {
    true
}

fn first_is(rest: &[&str], words: &[&str]) -> bool {
    rest.first().is_some_and(|f| words.contains(f))
}

/// `branch`/`tag` listing their refs: only options, or a listing option.
fn listing(rest: &[&str]) -> bool {
    const FILTERS: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
    ];
    rest.iter().all(|r| r.starts_with('-'))
        || rest
            .iter()
            .any(|r| matches!(*r, "-l" | "--list") || FILTERS.iter().any(|f| r.starts_with(f)))
}

/// `git config` printing settings: one `KEY`, or a get/list form that adds or unsets nothing.
fn config_read(rest: &[&str]) -> bool {
    const GETS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--list",
        "-l",
        "get",
        "list",
    ];
    let one_key = rest.len() == 1 && !rest[0].starts_with('-') && rest[0].contains('.');
    one_key
        || (rest.iter().any(|r| GETS.contains(r))
            && rest
                .iter()
                .all(|r| !r.starts_with("--add") && !r.starts_with("--unset")))
}

/// Read-only forms: subcommand, when its words make it a read, and its option grammar.
/// The first row whose subcommand and condition match wins.
#[rustfmt::skip]
static READS: &[(&str, When, &Grammar)] = &[
    ("log", always, &G_GIT_LOG),
    ("show", always, &G_GIT_LOG),
    ("diff", always, &G_GIT_LOG),
    ("whatchanged", always, &G_GIT_LOG),
    ("rev-list", always, &G_GIT_LOG),
    ("reflog", |r| r.is_empty() || r[0] == "show" || r[0].starts_with('-'), &G_GIT_LOG),
    ("stash", |r| first_is(r, &["list", "show"]), &G_GIT_LOG),
    ("cherry", always, &G_GIT_MISC),
    ("show-branch", always, &G_GIT_MISC),
    ("worktree", |r| first_is(r, &["list"]), &G_GIT_MISC),
    ("submodule", |r| first_is(r, &["status"]), &G_GIT_MISC),
    ("status", always, &G_GIT_STATUS),
    ("grep", always, &G_GIT_GREP),
    ("blame", always, &G_GIT_BLAME),
    ("annotate", always, &G_GIT_BLAME),
    ("ls-remote", always, &G_GIT_LS_REMOTE),
    ("ls-files", always, &G_GIT_LS_FILES),
    ("rev-parse", always, &G_GIT_REV_PARSE),
    ("ls-tree", always, &G_GIT_MISC),
    ("cat-file", always, &G_GIT_MISC),
    ("describe", always, &G_GIT_MISC),
    ("shortlog", always, &G_GIT_MISC),
    ("show-ref", always, &G_GIT_MISC),
    ("for-each-ref", always, &G_GIT_MISC),
    ("merge-base", always, &G_GIT_MISC),
    ("name-rev", always, &G_GIT_MISC),
    ("count-objects", always, &G_GIT_MISC),
    ("check-ignore", always, &G_GIT_MISC),
    ("version", always, &G_GIT_MISC),
    ("var", always, &G_GIT_MISC),
    ("branch", listing, &G_GIT_LIST_REFS),
    ("tag", listing, &G_GIT_LIST_REFS),
    ("remote", |r| r.is_empty() || first_is(r, &["-v", "--verbose", "show", "get-url"]), &G_GIT_LIST_REFS),
    ("config", config_read, &G_GIT_CONFIG_READ),
    ("help", |r| r.iter().all(|a| matches!(*a, "-a" | "--all" | "-g" | "--guides")), &G_GIT_MISC),
];

/// The grammar of a read-only use of `sub` (with its words `rest`), if it is one.
fn read_grammar(sub: &str, rest: &[&str]) -> Option<&'static Grammar> {
    READS
        .iter()
        .find(|(s, when, _)| *s == sub && when(rest))
        .map(|(_, _, g)| *g)
}
