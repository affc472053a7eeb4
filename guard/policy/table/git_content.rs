//! What git reads print: objects by id (`cat-file`), a repository whose tree holds a
//! secret, the paths and `REV:PATH` objects they name, and file content from history, the
//! index or the object store (patches, pickaxe searches, blobs, trees of old revisions).
//! The path model sees only the working tree: a `.env` tracked once, or a blob id read off
//! `git ls-tree`, is invisible to it. So such a read is autonomous only when explicit
//! pathspecs bound it and every one of them is path-checked (decide by
//! allow-list); otherwise it is gated.

use super::args::v;
use super::grammar::Parsed;
use super::paths_check::Checker;
use super::Classification;
use crate::policy::fs_memo;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;
use std::path::{Path, PathBuf};

/// Options (long name, or `-x` for a short-only one) that make a log-like read print
/// patches, or search file content (`-S`/`-G`: a content oracle, one question per run).
const PATCH: &[&str] = &[
    "patch",
    "-u",
    "patch-with-raw",
    "patch-with-stat",
    "unified",
    "word-diff",
    "word-diff-regex",
    "color-words",
    "-c",
    "cc",
    "dd",
    "-m",
    "diff-merges",
    "remerge-diff",
    "binary",
    "check",
    "-S",
    "-G",
    "pickaxe-regex",
    "pickaxe-all",
];

/// Options that replace `show`'s and `diff`'s default patch with names and numbers only.
const NO_CONTENT: &[&str] = &[
    "no-patch",
    "stat",
    "numstat",
    "shortstat",
    "name-only",
    "name-status",
    "raw",
    "summary",
    "dirstat",
    "compact-summary",
    "quiet",
];

/// The operands of a git read, as git tells them apart.
#[derive(Default)]
struct Operands<'a> {
    /// Revisions (commits, ranges, blob or tree ids).
    revs: Vec<&'a Word>,
    /// `REV:PATH` objects of `show` (their path is checked by the caller).
    objects: usize,
    /// Pathspecs: after `--`, or a word that names an existing file where git runs (git
    /// refuses a word that is both).
    specs: Vec<&'a Word>,
}

/// Path-checks and gates what the read `git sub` (judged as `parsed`) prints.
pub(super) fn what_it_prints(k: &Checker, c: &mut Classification, sub: &str, parsed: &Parsed) {
    if sub == "cat-file" {
        cat_file(c, parsed);
    }
    if CONTENT_READS.contains(&sub) {
        repository_with_secrets(k, c);
    }
    if HISTORY_READS.contains(&sub) {
        bound_content(k, c, sub, parsed);
    }
    // `check-ignore` prints which names are ignored, never what the files hold.
    if sub != "check-ignore" {
        git_operands(k, c, &parsed.operands);
    }
}

/// Gates a content-printing read of `sub` (judged as `parsed`) that nothing bounds, and
/// path-checks the pathspecs and `-L` files that do bound it.
fn bound_content(k: &Checker, c: &mut Classification, sub: &str, parsed: &Parsed) {
    for range in parsed.values("-L") {
        line_range_file(k, c, range);
    }
    let ops = operands(k, sub, parsed);
    let patch = PATCH.iter().any(|o| parsed.has(o));
    let names_only = NO_CONTENT.iter().any(|o| parsed.has(o));
    let content = match sub {
        // `show` prints a blob whatever its options; `diff` of two blobs ignores pathspecs.
        "show" | "diff" => {
            if (sub == "show" || patch || !names_only) && ops.revs.iter().any(|r| may_be_blob(r)) {
                gate(c, sub, "names an object that may be any file's content");
                return;
            }
            patch || !names_only
        }
        // A revision's tree or the index is searched, or a working tree where a secret
        // file (tracked or not: not known here) lies below.
        "grep" => !ops.revs.is_empty() || parsed.has("cached") || holds_secret_file(k),
        _ => patch,
    };
    if !content {
        return;
    }
    // Only `REV:PATH` objects: their paths are all there is (checked by the caller).
    if ops.objects > 0 && ops.revs.is_empty() {
        return;
    }
    if !bounded(k, c, &ops.specs) {
        gate(
            c,
            sub,
            "prints file content (history, the index, or a tree holding a secret file) that no pathspec bounds",
        );
    }
}

/// Does the tree below where git runs hold a dotenv file or a sensitive path? (A walk into
/// scratch findings: here a hit gates, it does not block.)
fn holds_secret_file(k: &Checker) -> bool {
    let mut scratch = Classification::default();
    k.recursive_read(&mut scratch, &Word::literal("."));
    !scratch.findings.is_empty()
}

fn gate(c: &mut Classification, sub: &str, why: &str) {
    c.add(
        Category::Unanalysable,
        "git-content",
        format!("`git {sub}` {why}"),
    );
}

/// Splits a read's operands into revisions, objects and pathspecs.
fn operands<'a>(k: &Checker, sub: &str, parsed: &Parsed<'a>) -> Operands<'a> {
    let split = parsed.dashdash.unwrap_or(parsed.operands.len());
    let (before, after) = parsed.operands.split_at(split);
    // `git grep PATTERN REV...`: the first operand is the pattern unless `-e`/`-f` give it.
    let skip = usize::from(sub == "grep" && !parsed.has("-e") && !parsed.has("-f"));
    let mut out = Operands {
        specs: after.to_vec(),
        ..Operands::default()
    };
    for w in before.iter().skip(skip) {
        match w.value.as_deref() {
            // A `show`n object prints that path's blob, or a tree's names. To `diff` or
            // `grep` it may be a tree, whose files no pathspec bounded: a revision there.
            Some(s) if sub == "show" && s.contains(':') && !s.starts_with(":/") => {
                out.objects += 1;
            }
            Some(s) if exists(k, s) => out.specs.push(w),
            _ => out.revs.push(w),
        }
    }
    out
}

/// Does `s` name an existing file from every directory git may run in?
fn exists(k: &Checker, s: &str) -> bool {
    let mut any = false;
    for cwd in k.cwds() {
        if fs_memo::symlink_metadata(&cwd.join(s)).is_none() {
            return false;
        }
        any = true;
    }
    any
}

/// Can this revision name a blob? Any ref name can: a tag may point at one, and a tag
/// shadows a branch or remote of the same name (`main`, `origin/main`). A word that is not
/// static can. Provably not a blob: `HEAD` and `@` (git writes only commits there), a
/// `~N`/`^N` step or `^{commit}`/`^{tree}`/`^{/text}` peel (they end at a commit or tree),
/// and a `:/text` message search. `REV:PATH` is a blob or a tree: yes.
fn may_be_blob(w: &Word) -> bool {
    let Some(s) = w.value.as_deref() else {
        return true;
    };
    // Each end of a range `A..B` / `A...B` is a revision of its own.
    s.split("..")
        .map(|end| end.trim_start_matches('.'))
        .any(|end| !provably_not_blob(end))
}

fn provably_not_blob(rev: &str) -> bool {
    if rev.starts_with(":/") {
        return true;
    }
    if rev.contains(':') {
        return false;
    }
    // A navigation step or a peel at the end decides what the revision is.
    if rev
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .ends_with(['~', '^'])
        || rev.ends_with("^{commit}")
        || rev.ends_with("^{tree}")
        || (rev.ends_with('}') && rev.contains("^{/"))
    {
        return true;
    }
    // `HEAD`, `@`, and their reflog entries (`HEAD@{2}`, `@{-1}`, `@{u}`) are commits.
    let base = rev.split_once("@{").map_or(rev, |(b, _)| b);
    matches!(base, "" | "HEAD" | "@") && !rev.is_empty()
}

/// Do these pathspecs bound what git prints? Each must be a static, plain path (no
/// pathspec magic, no glob: git's `*` crosses `/`), path-checked with what lies below it.
fn bounded(k: &Checker, c: &mut Classification, specs: &[&Word]) -> bool {
    if specs.is_empty() {
        return false;
    }
    let mut ok = true;
    for w in specs {
        let s = v(w);
        if w.value.is_none() || s.is_empty() || s.starts_with(':') || s.contains(['*', '?', '[']) {
            ok = false;
            continue;
        }
        k.read(c, w);
        k.recursive_read(c, w);
    }
    ok
}

/// `-L START,END:FILE` / `-L :FUNC:FILE` prints FILE's lines through history: FILE is read.
fn line_range_file(k: &Checker, c: &mut Classification, range: &Word) {
    match range.value.as_deref().and_then(|s| s.rsplit_once(':')) {
        Some((_, file)) if !file.is_empty() => k.read(c, &Word::literal(file)),
        _ => gate(c, "log -L", "reads a file not known here"),
    }
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
    // `git cat-file TYPE OBJECT`: the type word is not an object.
    let skip = parsed
        .operands
        .first()
        .is_some_and(|w| matches!(v(w), "blob" | "tree" | "commit" | "tag"));
    for w in parsed.operands.iter().skip(usize::from(skip)) {
        let s = v(w);
        // `REV:PATH` prints that path's blob: the path is checked by the caller.
        let object = s.contains(':') && !s.starts_with(":/");
        if !object && may_be_blob(w) {
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

/// Read subcommands that print patches, blobs or old trees when asked (checked by
/// [`bound_content`]).
const HISTORY_READS: &[&str] = &[
    "log",
    "show",
    "diff",
    "whatchanged",
    "rev-list",
    "reflog",
    "stash",
    "grep",
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
