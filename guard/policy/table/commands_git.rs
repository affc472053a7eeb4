//! git: reads, writes, and the destructive forms (history rewrites, forced pushes,
//! cleans), with the paths each form touches.

use super::args::{has, has_short, v};
use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;

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
