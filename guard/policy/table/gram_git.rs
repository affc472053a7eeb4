//! git's read subcommands' options (git 2.47 `git help <cmd>`), reviewed: `--output`
//! writes, `--ext-diff`/`--show-signature`/`grep -O`/`ls-remote --upload-pack` run
//! programs, `--no-index`/`blame --contents` read files outside the repository. Options
//! not listed gate the command.

use super::grammar::{o, Arg::*, Eff, Eff::*, Grammar};
use crate::policy::verdict::Category;

const OUTSIDE: Eff = Gate(Category::Unanalysable, "reads files outside the repository");

/// log, show, diff, whatchanged, rev-list, stash show/list: revision and diff options.
#[rustfmt::skip]
pub(super) static G_GIT_LOG: Grammar = Grammar { permute: true, numeric: true, opts: &[
    // Diff output.
    o('p', "patch", No, Safe), o('u', "", No, Safe), o('s', "no-patch", No, Safe), o('\0', "raw", No, Safe),
    o('\0', "patch-with-raw", No, Safe), o('\0', "patch-with-stat", No, Safe), o('\0', "numstat", No, Safe),
    o('\0', "shortstat", No, Safe), o('\0', "summary", No, Safe), o('\0', "name-only", No, Safe),
    o('\0', "name-status", No, Safe), o('\0', "compact-summary", No, Safe), o('\0', "stat", Opt, Safe),
    o('\0', "stat-width", Req, Safe), o('\0', "stat-name-width", Req, Safe), o('\0', "stat-graph-width", Req, Safe),
    o('\0', "stat-count", Req, Safe), o('X', "dirstat", Opt, Safe), o('\0', "cumulative", No, Safe),
    o('z', "", No, Safe), o('\0', "full-index", No, Safe), o('\0', "binary", No, Safe), o('\0', "abbrev", Opt, Safe),
    o('B', "break-rewrites", Opt, Safe), o('M', "find-renames", Opt, Safe), o('C', "find-copies", Opt, Safe),
    o('\0', "find-copies-harder", No, Safe), o('D', "irreversible-delete", No, Safe), o('l', "", Opt, Safe),
    o('\0', "diff-filter", Req, Safe), o('S', "", Req, Safe), o('G', "", Req, Safe), o('\0', "pickaxe-all", No, Safe),
    o('\0', "pickaxe-regex", No, Safe), o('O', "", Opt, Read), o('\0', "skip-to", Req, Safe), o('\0', "rotate-to", Req, Safe),
    o('R', "", No, Safe), o('\0', "relative", Opt, Safe), o('\0', "no-relative", No, Safe), o('a', "text", No, Safe),
    o('\0', "ignore-cr-at-eol", No, Safe), o('\0', "ignore-space-at-eol", No, Safe), o('b', "ignore-space-change", No, Safe),
    o('w', "ignore-all-space", No, Safe), o('\0', "ignore-blank-lines", No, Safe), o('I', "ignore-matching-lines", Req, Safe),
    o('\0', "inter-hunk-context", Req, Safe), o('W', "function-context", No, Safe), o('\0', "exit-code", No, Safe),
    o('\0', "quiet", No, Safe), o('\0', "ext-diff", No, Gate(Category::RunCode, "runs the configured external diff program")),
    o('\0', "no-ext-diff", No, Safe), o('\0', "textconv", No, Safe), o('\0', "no-textconv", No, Safe),
    o('\0', "ignore-submodules", Opt, Safe), o('\0', "src-prefix", Req, Safe), o('\0', "dst-prefix", Req, Safe),
    o('\0', "no-prefix", No, Safe), o('\0', "default-prefix", No, Safe), o('\0', "line-prefix", Req, Safe),
    o('\0', "color", Opt, Safe), o('\0', "no-color", No, Safe), o('\0', "color-moved", Opt, Safe),
    o('\0', "no-color-moved", No, Safe), o('\0', "color-moved-ws", Req, Safe), o('\0', "word-diff", Opt, Safe),
    o('\0', "word-diff-regex", Req, Safe), o('\0', "color-words", Opt, Safe), o('\0', "no-renames", No, Safe),
    o('\0', "rename-empty", No, Safe), o('\0', "no-rename-empty", No, Safe), o('\0', "check", No, Safe),
    o('\0', "ws-error-highlight", Req, Safe), o('U', "unified", Req, Safe), o('\0', "minimal", No, Safe),
    o('\0', "patience", No, Safe), o('\0', "histogram", No, Safe), o('\0', "anchored", Req, Safe),
    o('\0', "diff-algorithm", Req, Safe), o('\0', "indent-heuristic", No, Safe), o('\0', "no-indent-heuristic", No, Safe),
    o('\0', "output", Req, Write), o('\0', "output-indicator-new", Req, Safe), o('\0', "output-indicator-old", Req, Safe),
    o('\0', "output-indicator-context", Req, Safe), o('\0', "submodule", Opt, Safe), o('\0', "cached", No, Safe),
    o('\0', "staged", No, Safe), o('\0', "merge-base", No, Safe), o('\0', "no-index", No, OUTSIDE),
    // Revisions and commit output.
    o('n', "max-count", Req, Safe), o('\0', "skip", Req, Safe), o('\0', "since", Req, Safe), o('\0', "after", Req, Safe),
    o('\0', "until", Req, Safe), o('\0', "before", Req, Safe), o('\0', "since-as-filter", Req, Safe),
    o('\0', "author", Req, Safe), o('\0', "committer", Req, Safe), o('\0', "grep", Req, Safe),
    o('\0', "grep-reflog", Req, Safe), o('\0', "all-match", No, Safe), o('\0', "invert-grep", No, Safe),
    o('i', "regexp-ignore-case", No, Safe), o('\0', "basic-regexp", No, Safe), o('E', "extended-regexp", No, Safe),
    o('F', "fixed-strings", No, Safe), o('P', "perl-regexp", No, Safe), o('\0', "remove-empty", No, Safe),
    o('\0', "merges", No, Safe), o('\0', "no-merges", No, Safe), o('\0', "min-parents", Req, Safe),
    o('\0', "max-parents", Req, Safe), o('\0', "no-min-parents", No, Safe), o('\0', "no-max-parents", No, Safe),
    o('\0', "first-parent", No, Safe), o('\0', "exclude-first-parent-only", No, Safe), o('\0', "not", No, Safe),
    o('\0', "all", No, Safe), o('\0', "branches", Opt, Safe), o('\0', "tags", Opt, Safe), o('\0', "remotes", Opt, Safe),
    o('\0', "glob", Req, Safe), o('\0', "exclude", Req, Safe), o('\0', "reflog", No, Safe),
    o('\0', "single-worktree", No, Safe), o('\0', "ignore-missing", No, Safe), o('\0', "bisect", No, Safe),
    o('\0', "cherry-mark", No, Safe), o('\0', "cherry-pick", No, Safe), o('\0', "left-only", No, Safe),
    o('\0', "right-only", No, Safe), o('\0', "cherry", No, Safe), o('g', "walk-reflogs", No, Safe),
    o('\0', "merge", No, Safe), o('\0', "boundary", No, Safe), o('\0', "simplify-by-decoration", No, Safe),
    o('\0', "full-history", No, Safe), o('\0', "dense", No, Safe), o('\0', "sparse", No, Safe),
    o('\0', "simplify-merges", No, Safe), o('\0', "ancestry-path", Opt, Safe), o('\0', "show-pulls", No, Safe),
    o('\0', "date-order", No, Safe), o('\0', "author-date-order", No, Safe), o('\0', "topo-order", No, Safe),
    o('\0', "reverse", No, Safe), o('\0', "no-walk", Opt, Safe), o('\0', "do-walk", No, Safe),
    o('\0', "pretty", Opt, Safe), o('\0', "format", Req, Safe), o('\0', "abbrev-commit", No, Safe),
    o('\0', "no-abbrev-commit", No, Safe), o('\0', "oneline", No, Safe), o('\0', "encoding", Req, Safe),
    o('\0', "expand-tabs", Opt, Safe), o('\0', "no-expand-tabs", No, Safe), o('\0', "notes", Opt, Safe),
    o('\0', "no-notes", No, Safe), o('\0', "show-notes", Opt, Safe),
    o('\0', "show-signature", No, Gate(Category::RunCode, "runs the configured gpg program")),
    o('\0', "relative-date", No, Safe), o('\0', "date", Req, Safe), o('\0', "parents", No, Safe),
    o('\0', "children", No, Safe), o('\0', "left-right", No, Safe), o('\0', "graph", No, Safe),
    o('\0', "show-linear-break", Opt, Safe), o('c', "", No, Safe), o('\0', "cc", No, Safe), o('\0', "dd", No, Safe),
    o('m', "", No, Safe), o('\0', "diff-merges", Req, Safe), o('\0', "no-diff-merges", No, Safe),
    o('\0', "combined-all-paths", No, Safe), o('\0', "remerge-diff", No, Safe), o('t', "", No, Safe),
    o('\0', "follow", No, Safe), o('\0', "decorate", Opt, Safe), o('\0', "no-decorate", No, Safe),
    o('\0', "decorate-refs", Req, Safe), o('\0', "decorate-refs-exclude", Req, Safe),
    o('\0', "clear-decorations", No, Safe), o('\0', "source", No, Safe), o('\0', "use-mailmap", No, Safe),
    o('\0', "mailmap", No, Safe), o('\0', "no-mailmap", No, Safe), o('\0', "no-use-mailmap", No, Safe),
    o('\0', "log-size", No, Safe), o('L', "", Req, Safe), o('\0', "count", No, Safe), o('\0', "objects", No, Safe),
    o('\0', "timestamp", No, Safe), o('\0', "header", No, Safe), o('\0', "in-commit-order", No, Safe),
    o('\0', "disk-usage", Opt, Safe), o('h', "help", No, Safe),
]};

#[rustfmt::skip]
pub(super) static G_GIT_STATUS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('s', "short", No, Safe), o('b', "branch", No, Safe), o('\0', "show-stash", No, Safe),
    o('\0', "porcelain", Opt, Safe), o('\0', "long", No, Safe), o('v', "verbose", No, Safe),
    o('u', "untracked-files", Opt, Safe), o('\0', "ignore-submodules", Opt, Safe), o('\0', "ignored", Opt, Safe),
    o('z', "", No, Safe), o('\0', "column", Opt, Safe), o('\0', "no-column", No, Safe),
    o('\0', "ahead-behind", No, Safe), o('\0', "no-ahead-behind", No, Safe), o('\0', "renames", No, Safe),
    o('\0', "no-renames", No, Safe), o('\0', "find-renames", Opt, Safe), o('h', "help", No, Safe),
]};

#[rustfmt::skip]
pub(super) static G_GIT_GREP: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('O', "open-files-in-pager", Opt, Exec), o('\0', "no-index", No, OUTSIDE), o('\0', "untracked", No, Safe),
    o('\0', "cached", No, Safe), o('f', "", Req, Read), o('e', "", Req, Safe), o('i', "ignore-case", No, Safe),
    o('I', "", No, Safe), o('w', "word-regexp", No, Safe), o('v', "invert-match", No, Safe),
    o('n', "line-number", No, Safe), o('\0', "column", No, Safe), o('l', "files-with-matches", No, Safe),
    o('\0', "name-only", No, Safe), o('L', "files-without-match", No, Safe), o('c', "count", No, Safe),
    o('h', "", No, Safe), o('H', "", No, Safe), o('\0', "full-name", No, Safe), o('E', "extended-regexp", No, Safe),
    o('G', "basic-regexp", No, Safe), o('F', "fixed-strings", No, Safe), o('P', "perl-regexp", No, Safe),
    o('z', "null", No, Safe), o('o', "only-matching", No, Safe), o('p', "show-function", No, Safe),
    o('W', "function-context", No, Safe), o('A', "after-context", Req, Safe), o('B', "before-context", Req, Safe),
    o('C', "context", Req, Safe), o('\0', "and", No, Safe), o('\0', "or", No, Safe), o('\0', "not", No, Safe),
    o('\0', "all-match", No, Safe), o('q', "quiet", No, Safe), o('\0', "max-depth", Req, Safe),
    o('\0', "recurse-submodules", No, Safe), o('\0', "threads", Req, Safe), o('\0', "color", Opt, Safe),
    o('\0', "no-color", No, Safe), o('\0', "break", No, Safe), o('\0', "heading", No, Safe),
    o('r', "recursive", No, Safe), o('\0', "no-recursive", No, Safe), o('\0', "exclude-standard", No, Safe),
    o('\0', "no-exclude-standard", No, Safe), o('\0', "textconv", No, Safe), o('\0', "no-textconv", No, Safe),
    o('m', "max-count", Req, Safe), o('a', "text", No, Safe),
]};

#[rustfmt::skip]
pub(super) static G_GIT_BLAME: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "contents", Req, ReadList("blames the contents of another file")), o('L', "", Req, Safe),
    o('l', "", No, Safe), o('t', "", No, Safe), o('S', "", Req, Read), o('\0', "reverse", No, Safe),
    o('\0', "first-parent", No, Safe), o('p', "porcelain", No, Safe), o('\0', "line-porcelain", No, Safe),
    o('\0', "incremental", No, Safe), o('\0', "encoding", Req, Safe), o('\0', "root", No, Safe),
    o('\0', "show-stats", No, Safe), o('\0', "score-debug", No, Safe), o('f', "show-name", No, Safe),
    o('n', "show-number", No, Safe), o('s', "", No, Safe), o('e', "show-email", No, Safe),
    o('w', "", No, Safe), o('\0', "ignore-rev", Req, Safe), o('\0', "ignore-revs-file", Req, Read),
    o('\0', "color-lines", No, Safe), o('\0', "color-by-age", No, Safe), o('\0', "progress", No, Safe),
    o('\0', "no-progress", No, Safe), o('M', "", Opt, Safe), o('C', "", Opt, Safe), o('\0', "abbrev", Opt, Safe),
    o('c', "", No, Safe), o('b', "", No, Safe), o('\0', "date", Req, Safe), o('\0', "minimal", No, Safe),
]};

#[rustfmt::skip]
pub(super) static G_GIT_LS_REMOTE: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "upload-pack", Req, Exec), o('\0', "exec", Req, Exec), o('h', "heads", No, Safe),
    o('t', "tags", No, Safe), o('b', "branches", No, Safe), o('\0', "refs", No, Safe), o('q', "quiet", No, Safe),
    o('\0', "exit-code", No, Safe), o('\0', "get-url", No, Safe), o('\0', "sort", Req, Safe),
    o('o', "server-option", Req, Safe), o('\0', "symref", No, Safe),
]};

#[rustfmt::skip]
pub(super) static G_GIT_LS_FILES: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('c', "cached", No, Safe), o('d', "deleted", No, Safe), o('m', "modified", No, Safe), o('o', "others", No, Safe),
    o('i', "ignored", No, Safe), o('s', "stage", No, Safe), o('u', "unmerged", No, Safe), o('k', "killed", No, Safe),
    o('\0', "directory", No, Safe), o('\0', "no-empty-directory", No, Safe), o('\0', "eol", No, Safe),
    o('z', "", No, Safe), o('t', "", No, Safe), o('v', "", No, Safe), o('f', "", No, Safe),
    o('x', "exclude", Req, Safe), o('X', "exclude-from", Req, Read), o('\0', "exclude-per-directory", Req, Safe),
    o('\0', "exclude-standard", No, Safe), o('\0', "error-unmatch", No, Safe), o('\0', "with-tree", Req, Safe),
    o('\0', "full-name", No, Safe), o('\0', "recurse-submodules", No, Safe), o('\0', "abbrev", Opt, Safe),
    o('\0', "debug", No, Safe), o('\0', "deduplicate", No, Safe), o('\0', "format", Req, Safe),
    o('\0', "sparse", No, Safe), o('\0', "resolve-undo", No, Safe),
]};

/// ls-tree, cat-file, describe, shortlog, show-ref, for-each-ref, merge-base, name-rev,
/// count-objects, check-ignore, version, var: their options, merged (no letter differs in
/// meaning between them in a way that reads, writes or runs).
#[rustfmt::skip]
pub(super) static G_GIT_MISC: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('d', "", No, Safe), o('r', "", No, Safe), o('t', "tags", No, Safe), o('l', "long", No, Safe),
    o('z', "", No, Safe), o('\0', "name-only", No, Safe), o('\0', "name-status", No, Safe),
    o('\0', "object-only", No, Safe), o('\0', "full-name", No, Safe), o('\0', "full-tree", No, Safe),
    o('\0', "abbrev", Opt, Safe), o('\0', "format", Req, Safe), o('s', "summary", No, Safe), o('e', "email", No, Safe),
    o('p', "", No, Safe), o('\0', "batch", Opt, Safe), o('\0', "batch-check", Opt, Safe),
    o('\0', "batch-command", Opt, Safe), o('\0', "batch-all-objects", No, Safe), o('\0', "textconv", No, Safe),
    o('\0', "filters", No, Gate(Category::RunCode, "runs the repository's filter programs")),
    o('\0', "path", Req, Safe), o('\0', "follow-symlinks", No, Safe), o('\0', "unordered", No, Safe),
    o('\0', "buffer", No, Safe), o('Z', "", No, Safe), o('\0', "allow-unknown-type", No, Safe),
    o('\0', "use-mailmap", No, Safe), o('\0', "all", No, Safe), o('\0', "always", No, Safe),
    o('\0', "dirty", Opt, Safe), o('\0', "broken", Opt, Safe), o('\0', "match", Req, Safe),
    o('\0', "exclude", Req, Safe), o('\0', "contains", Opt, Safe), o('\0', "no-contains", Opt, Safe),
    o('\0', "first-parent", No, Safe), o('\0', "candidates", Req, Safe), o('\0', "exact-match", No, Safe),
    o('\0', "debug", No, Safe), o('n', "numbered", No, Safe), o('c', "committer", No, Safe),
    o('\0', "group", Req, Safe), o('w', "", Opt, Safe), o('\0', "head", No, Safe), o('\0', "heads", No, Safe),
    o('\0', "branches", No, Safe), o('\0', "dereference", No, Safe), o('\0', "hash", Opt, Safe),
    o('\0', "verify", No, Safe), o('q', "quiet", No, Safe), o('\0', "exists", No, Safe),
    o('\0', "count", Req, Safe), o('\0', "sort", Req, Safe), o('\0', "shell", No, Safe), o('\0', "perl", No, Safe),
    o('\0', "python", No, Safe), o('\0', "tcl", No, Safe), o('\0', "points-at", Req, Safe),
    o('\0', "merged", Opt, Safe), o('\0', "no-merged", Opt, Safe), o('\0', "ignore-case", No, Safe),
    o('\0', "omit-empty", No, Safe), o('\0', "include-root-refs", No, Safe), o('a', "", No, Safe),
    o('\0', "octopus", No, Safe), o('\0', "is-ancestor", No, Safe), o('\0', "independent", No, Safe),
    o('\0', "fork-point", No, Safe), o('\0', "refs", Req, Safe),
    o('\0', "no-undefined", No, Safe), o('v', "verbose", No, Safe), o('H', "human-readable", No, Safe),
    o('\0', "non-matching", No, Safe), o('\0', "no-index", No, Safe), o('\0', "build-options", No, Safe),
    o('\0', "since", Req, Safe), o('\0', "until", Req, Safe), o('\0', "author", Req, Safe),
    o('\0', "no-merges", No, Safe), o('\0', "color", Opt, Safe), o('h', "help", No, Safe),
    o('\0', "porcelain", No, Safe), o('\0', "cached", No, Safe), o('\0', "recursive", No, Safe),
    o('\0', "more", Opt, Safe), o('\0', "list", No, Safe), o('\0', "current", No, Safe),
    o('\0', "topo-order", No, Safe), o('\0', "date-order", No, Safe),
]};

/// `git rev-parse` (exact long names; `--glob=`-style values attach).
#[rustfmt::skip]
pub(super) static G_GIT_REV_PARSE: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "show-toplevel", No, Safe), o('\0', "abbrev-ref", Opt, Safe), o('\0', "short", Opt, Safe),
    o('\0', "verify", No, Safe), o('q', "quiet", No, Safe), o('\0', "git-dir", No, Safe),
    o('\0', "git-common-dir", No, Safe), o('\0', "absolute-git-dir", No, Safe),
    o('\0', "is-inside-work-tree", No, Safe), o('\0', "is-inside-git-dir", No, Safe),
    o('\0', "is-bare-repository", No, Safe), o('\0', "is-shallow-repository", No, Safe),
    o('\0', "show-prefix", No, Safe), o('\0', "show-cdup", No, Safe), o('\0', "symbolic", No, Safe),
    o('\0', "symbolic-full-name", No, Safe), o('\0', "all", No, Safe), o('\0', "branches", Opt, Safe),
    o('\0', "tags", Opt, Safe), o('\0', "remotes", Opt, Safe), o('\0', "glob", Opt, Safe),
    o('\0', "local-env-vars", No, Safe), o('\0', "path-format", Opt, Safe), o('\0', "sq-quote", No, Safe),
    o('\0', "sq", No, Safe), o('\0', "not", No, Safe), o('\0', "revs-only", No, Safe), o('\0', "no-revs", No, Safe),
    o('\0', "flags", No, Safe), o('\0', "no-flags", No, Safe), o('\0', "since", Opt, Safe),
    o('\0', "until", Opt, Safe), o('\0', "git-path", Req, Safe), o('\0', "resolve-git-dir", Req, Read),
    o('\0', "show-superproject-working-tree", No, Safe), o('\0', "shared-index-path", No, Safe),
    o('\0', "show-object-format", Opt, Safe), o('\0', "show-ref-format", No, Safe),
    o('\0', "disambiguate", Opt, Safe), o('\0', "exclude", Opt, Safe), o('\0', "default", Req, Safe),
]};

/// `git branch`/`git tag` in list mode.
#[rustfmt::skip]
pub(super) static G_GIT_LIST_REFS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "all", No, Safe), o('r', "remotes", No, Safe), o('l', "list", No, Safe), o('v', "verbose", No, Safe),
    o('\0', "show-current", No, Safe), o('\0', "contains", Req, Safe), o('\0', "no-contains", Req, Safe),
    o('\0', "merged", Req, Safe), o('\0', "no-merged", Req, Safe), o('\0', "points-at", Req, Safe),
    o('\0', "sort", Req, Safe), o('\0', "format", Req, Safe), o('\0', "color", Opt, Safe),
    o('\0', "no-color", No, Safe), o('\0', "column", Opt, Safe), o('\0', "no-column", No, Safe),
    o('i', "ignore-case", No, Safe), o('\0', "abbrev", Opt, Safe), o('\0', "no-abbrev", No, Safe),
    o('\0', "omit-empty", No, Safe), o('q', "quiet", No, Safe), o('n', "", Opt, Safe),
]};

/// `git config` reads (`--get`, `--list`, `get`, `list`); a `--file` is a read.
#[rustfmt::skip]
pub(super) static G_GIT_CONFIG_READ: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "get", No, Safe), o('\0', "get-all", No, Safe), o('\0', "get-regexp", No, Safe),
    o('\0', "get-urlmatch", No, Safe), o('l', "list", No, Safe), o('\0', "global", No, Safe),
    o('\0', "system", No, Safe), o('\0', "local", No, Safe), o('\0', "worktree", No, Safe),
    o('f', "file", Req, Read), o('\0', "blob", Req, Gate(Category::Unanalysable, "reads config from a blob, which may be any tracked file")), o('\0', "show-origin", No, Safe),
    o('\0', "show-scope", No, Safe), o('\0', "name-only", No, Safe), o('\0', "type", Req, Safe),
    o('z', "null", No, Safe), o('\0', "includes", No, Safe), o('\0', "no-includes", No, Safe),
    o('\0', "default", Req, Safe), o('\0', "bool", No, Safe), o('\0', "int", No, Safe),
    o('\0', "path", No, Safe), o('\0', "all", No, Safe), o('\0', "regexp", No, Safe),
]};
