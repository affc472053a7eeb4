//! File commands of the table: `find` (by its primaries), copy/archive tools and
//! `rm` (recursive deletes outside the workspace, or of directories holding sensitive
//! paths, are destructive).

use super::args::{flag, operands, operands_skipping, opt_values, v};
use super::judge::write_value;
use super::paths_check::Checker;
use super::tree_walk::Walk;
use super::Classification;
use crate::policy::shell::Word;
use crate::policy::shell::XARGS_FROM_FIND;
use crate::policy::verdict::Category;

/// What a find primary does beyond selecting or printing.
#[derive(Clone, Copy)]
enum Does {
    Select,
    /// `-name`/`-iname` (case-insensitive): filters the names `-exec` gets.
    Name(bool),
    MaxDepth,
    /// `-or`, `!`, parentheses: `-name` tests no longer simply filter.
    Compound,
    Follow,
    Delete,
    /// Writes its value (`-fprint FILE`).
    WriteTo,
    /// Reads its value (`-newer FILE`).
    ReadFile,
}

use Does::{Compound, Delete, Follow, MaxDepth, Name, ReadFile, Select, WriteTo};

/// find's primaries (a word not here gates the command): name, how many words follow
/// it, and what it does. `-exec` and friends are handled apart (their command is a segment).
#[rustfmt::skip]
const FIND_PRIMARIES: &[(&str, usize, Does)] = &[
    ("-name", 1, Name(false)), ("-iname", 1, Name(true)), ("-path", 1, Select),
    ("-ipath", 1, Select), ("-wholename", 1, Select), ("-iwholename", 1, Select),
    ("-regex", 1, Select), ("-iregex", 1, Select), ("-regextype", 1, Select),
    ("-type", 1, Select), ("-xtype", 1, Select), ("-size", 1, Select), ("-empty", 0, Select),
    ("-mtime", 1, Select), ("-mmin", 1, Select), ("-atime", 1, Select), ("-amin", 1, Select),
    ("-ctime", 1, Select), ("-cmin", 1, Select), ("-newer", 1, ReadFile),
    ("-anewer", 1, ReadFile), ("-cnewer", 1, ReadFile), ("-newermt", 1, Select),
    ("-newerat", 1, Select), ("-newerct", 1, Select), ("-newermm", 1, Select),
    ("-used", 1, Select), ("-user", 1, Select), ("-group", 1, Select), ("-uid", 1, Select),
    ("-gid", 1, Select), ("-nouser", 0, Select), ("-nogroup", 0, Select), ("-perm", 1, Select),
    ("-readable", 0, Select), ("-writable", 0, Select), ("-executable", 0, Select),
    ("-links", 1, Select), ("-inum", 1, Select), ("-samefile", 1, ReadFile),
    ("-lname", 1, Select), ("-ilname", 1, Select), ("-fstype", 1, Select),
    ("-maxdepth", 1, MaxDepth), ("-mindepth", 1, Select), ("-depth", 0, Select),
    ("-d", 0, Select), ("-mount", 0, Select), ("-xdev", 0, Select), ("-noleaf", 0, Select),
    ("-ignore_readdir_race", 0, Select), ("-noignore_readdir_race", 0, Select),
    ("-daystart", 0, Select), ("-follow", 0, Follow), ("-true", 0, Select), ("-false", 0, Select),
    ("-print", 0, Select), ("-print0", 0, Select), ("-printf", 1, Select), ("-ls", 0, Select),
    ("-prune", 0, Select), ("-quit", 0, Select), ("-not", 0, Compound), ("-and", 0, Select),
    ("-a", 0, Select), ("-or", 0, Compound), ("-o", 0, Compound), ("!", 0, Compound),
    ("(", 0, Compound), (")", 0, Compound), (",", 0, Compound), ("-help", 0, Select),
    ("--help", 0, Select), ("-version", 0, Select), ("--version", 0, Select),
    ("-delete", 0, Delete), ("-fprint", 1, WriteTo), ("-fprint0", 1, WriteTo),
    ("-fprintf", 2, WriteTo), ("-fls", 1, WriteTo),
];

/// What find's expression asks for.
struct Expr {
    exec: bool,
    delete: bool,
    follow: bool,
    /// `-name` tests before `-exec` (pattern, case-insensitive).
    names: Vec<(String, bool)>,
    /// Only and-ed tests: the `-name` tests filter what `-exec` gets.
    plain_and: bool,
    max_depth: usize,
}

/// find: start points, then an expression of known primaries. `-exec` commands are
/// their own segments (their `{}` is a path under a start point: the start points are
/// checked recursively, and for symlinks to secrets among the names the command may get).
pub(super) fn find(k: &Checker, c: &mut Classification, args: &[Word]) {
    c.add(Category::Enumerate, "enumerate", "`find` lists files");
    let (i, follow) = leading_options(c, args);
    let Some(mut starts) = start_points(c, &args[i..]) else {
        return;
    };
    let Some(expr) = expression(k, c, &args[i + starts.len()..], follow) else {
        return;
    };
    let dot = Word::literal(".");
    if starts.is_empty() {
        starts.push(&dot);
    }
    // Fed to `xargs` without `-0` (see `shell::pipes`): names must reach it unsplit.
    let split_names = k.seg.wrappers.iter().any(|w| w == XARGS_FROM_FIND);
    for s in &starts {
        k.read(c, s);
        if expr.exec || expr.follow {
            k.recursive_names(c, s);
        }
        if expr.exec {
            exec_names(k, c, s, &expr, split_names);
        }
    }
    if expr.delete {
        for s in &starts {
            find_delete(k, c, s);
        }
    }
}

/// Leading options `-H -L -P`, `-D debugopts`, `-Olevel`: where the start points begin,
/// and whether `-L` follows symlinks.
fn leading_options(c: &mut Classification, args: &[Word]) -> (usize, bool) {
    let mut i = 0;
    let mut follow = false;
    while let Some(s) = args.get(i).and_then(|w| w.value.as_deref()) {
        match s {
            "-H" | "-P" => {}
            "-L" => follow = true,
            "-D" => {
                c.add(
                    Category::Unanalysable,
                    "gated-option",
                    "`find -D` debug output is not a plain listing",
                );
                i += 1;
            }
            _ if s.starts_with("-O") && s[2..].bytes().all(|b| b.is_ascii_digit()) => {}
            _ => break,
        }
        i += 1;
    }
    (i, follow)
}

/// The start points (up to the first option-like word), or `None` after gating one that
/// is not static.
fn start_points<'a>(c: &mut Classification, args: &'a [Word]) -> Option<Vec<&'a Word>> {
    let mut starts = Vec::new();
    for w in args {
        match w.value.as_deref() {
            Some(s) if s.starts_with('-') || s == "(" || s == "!" => break,
            None if !w.source.starts_with(['"', '\'', '.', '/', '~']) => {
                c.add(
                    Category::Unanalysable,
                    "unknown-option",
                    format!("`find` start `{}` is not static", w.source),
                );
                return None;
            }
            _ => starts.push(w),
        }
    }
    Some(starts)
}

/// Reads the expression by [`FIND_PRIMARIES`], or `None` after gating a word it does not
/// know.
fn expression(k: &Checker, c: &mut Classification, expr: &[Word], follow: bool) -> Option<Expr> {
    let mut e = Expr {
        exec: false,
        delete: false,
        follow,
        names: Vec::new(),
        plain_and: true,
        max_depth: usize::MAX,
    };
    let mut j = 0;
    while j < expr.len() {
        let Some(s) = expr[j].value.as_deref() else {
            c.add(
                Category::Unanalysable,
                "unknown-option",
                format!("`find` word `{}` is not static", expr[j].source),
            );
            return None;
        };
        if matches!(s, "-exec" | "-execdir" | "-ok" | "-okdir") {
            e.exec = true;
            j += 1;
            while j < expr.len() && !matches!(expr[j].value.as_deref(), Some(";" | "+")) {
                j += 1;
            }
            j += 1;
            continue;
        }
        let Some(&(_, n, does)) = FIND_PRIMARIES.iter().find(|(name, _, _)| *name == s) else {
            unknown_primary(k, c, s, expr.get(j + 1));
            return None;
        };
        let value = expr.get(j + 1);
        match does {
            Does::Select => {}
            // A test filters what `-exec` gets only when it is evaluated before it.
            Does::Name(ci) if !e.exec => {
                if let Some(v) = value.and_then(|w| w.value.clone()) {
                    e.names.push((v, ci));
                }
            }
            Does::Name(_) => {}
            Does::MaxDepth => {
                if let Some(d) = value.and_then(|w| w.value.as_deref()?.parse().ok()) {
                    e.max_depth = d;
                }
            }
            Does::Compound => e.plain_and = false,
            Does::Follow => e.follow = true,
            Does::Delete => e.delete = true,
            Does::WriteTo => {
                if let Some(target) = value {
                    write_value(k, c, "find", s, target);
                }
            }
            Does::ReadFile => {
                if let Some(f) = value {
                    k.read(c, f);
                }
            }
        }
        j += 1 + n;
    }
    Some(e)
}

fn unknown_primary(k: &Checker, c: &mut Classification, s: &str, value: Option<&Word>) {
    let why = if s == "-files0-from" {
        if let Some(f) = value {
            k.read(c, f);
        }
        "reads its start points from a file".to_string()
    } else {
        format!("`find` primary `{s}` is not in the command table")
    };
    c.add(Category::Unanalysable, "unknown-option", why);
}

/// The names `-exec` gets below `start`: with only `-name` tests and-ed, a link passes
/// only if its name matches them all.
fn exec_names(k: &Checker, c: &mut Classification, start: &Word, e: &Expr, split_names: bool) {
    let matchers: Vec<globset::GlobMatcher> = if e.plain_and {
        e.names
            .iter()
            .filter_map(|(n, ci)| {
                globset::GlobBuilder::new(n)
                    .case_insensitive(*ci)
                    .literal_separator(true)
                    .build()
                    .ok()
                    .map(|g| g.compile_matcher())
            })
            .collect()
    } else {
        Vec::new()
    };
    let keep = |name: &str| matchers.iter().all(|m| m.is_match(name));
    let walk = Walk {
        follow: e.follow,
        max_depth: e.max_depth,
        keep: &keep,
        links: true,
        dotenv: true,
        split_names,
        hidden: true,
    };
    k.walk_below(c, start, &walk);
}

/// `find START -delete`: destructive under a secret or outside the workspace.
fn find_delete(k: &Checker, c: &mut Classification, s: &Word) {
    if let Some(hit) = k.contains(s) {
        c.add(
            Category::DestructiveDelete,
            "destructive-delete",
            format!("`find -delete` under {} (holds {hit})", s.display()),
        );
    } else if k.inside_workspace(s) != Some(true) && v(s) != "." {
        c.add(
            Category::DestructiveDelete,
            "destructive-delete",
            format!("`find -delete` outside the workspace ({})", s.display()),
        );
    } else {
        c.add(Category::Delete, "delete", "`find -delete` deletes files");
    }
}

pub(super) fn copy_like(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    c.add(Category::Write, "write", format!("`{p}` writes files"));
    let recursive =
        matches!(p, "rsync" | "tar" | "zip" | "7z") || flag(args, "rRa", &["recursive", "archive"]);
    if p == "dd" {
        for w in args {
            let s = v(w);
            if let Some(f) = s.strip_prefix("if=") {
                k.read(c, &Word::literal(f));
            } else if let Some(f) = s.strip_prefix("of=") {
                k.write(c, &Word::literal(f));
            } else if w.value.is_none() {
                k.read(c, w);
            }
        }
        return;
    }
    if p == "rsync"
        && args
            .iter()
            .any(|w| v(w).split('/').next().is_some_and(|h| h.contains(':')))
    {
        c.add(
            Category::HttpWrite,
            "network",
            "`rsync` to or from a remote host",
        );
    }
    let value_opts: &[&str] = match p {
        "tar" => &["-f", "-C", "-T", "-X", "--file", "--directory"],
        "zip" => &["-x", "-i", "-b"],
        "unzip" => &["-d", "-x"],
        "install" => &["-m", "-o", "-g", "-t", "-S"],
        _ => &["-t", "-S", "--suffix", "--target-directory"],
    };
    for w in opt_values(
        args,
        &["-f", "-C", "-t", "-d"],
        &["file", "directory", "target-directory"],
    ) {
        k.write(c, &w);
    }
    let ops = operands_skipping(
        args,
        value_opts,
        &["file", "directory", "target-directory", "suffix"],
    );
    let target_dir = !opt_values(args, &["-t"], &["target-directory"]).is_empty();
    let last = ops.len().saturating_sub(1);
    for (i, w) in ops.iter().enumerate() {
        let is_target = match p {
            "tar" | "unzip" | "gzip" | "gunzip" | "bzip2" | "xz" | "patch" => true,
            "zip" | "7z" => i == 0,
            _ => !target_dir && i == last && ops.len() > 1,
        };
        if is_target {
            k.write(c, w);
        } else {
            k.read(c, w);
        }
        if recursive && !is_target || (p == "tar" || p == "zip") {
            k.recursive_read(c, w);
        }
    }
}

pub(super) fn rm(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let recursive = p == "rm" && flag(args, "rR", &["recursive"]);
    let ops = operands(args);
    if ops.is_empty() {
        c.add(Category::Delete, "delete", format!("`{p}` deletes files"));
    }
    for w in ops {
        if recursive {
            if let Some(hit) = k.contains(w) {
                c.add(
                    Category::DestructiveDelete,
                    "destructive-delete",
                    format!("`rm -r {}` deletes a directory holding {hit}", w.display()),
                );
            } else {
                match k.inside_workspace(w) {
                    Some(true) => c.add(
                        Category::Delete,
                        "delete",
                        format!("`rm -r` deletes {} in the workspace", w.display()),
                    ),
                    Some(false) => c.add(
                        Category::DestructiveDelete,
                        "destructive-delete",
                        format!("`rm -r {}` reaches outside the workspace", w.display()),
                    ),
                    None => c.add(
                        Category::Delete,
                        "delete",
                        format!("`rm -r` deletes {}", w.display()),
                    ),
                }
            }
        } else {
            c.add(
                Category::Delete,
                "delete",
                format!("`{p}` deletes {}", w.display()),
            );
        }
        k.write(c, w);
    }
}
