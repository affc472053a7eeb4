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

/// find's tests and actions that only select or print: name, what (`-name`), and how
/// many words follow it.
const FIND_PRIMARIES: &[(&str, usize)] = &[
    ("-name", 1),
    ("-iname", 1),
    ("-path", 1),
    ("-ipath", 1),
    ("-wholename", 1),
    ("-iwholename", 1),
    ("-regex", 1),
    ("-iregex", 1),
    ("-regextype", 1),
    ("-type", 1),
    ("-xtype", 1),
    ("-size", 1),
    ("-empty", 0),
    ("-mtime", 1),
    ("-mmin", 1),
    ("-atime", 1),
    ("-amin", 1),
    ("-ctime", 1),
    ("-cmin", 1),
    ("-newer", 1),
    ("-anewer", 1),
    ("-cnewer", 1),
    ("-newermt", 1),
    ("-newerat", 1),
    ("-newerct", 1),
    ("-newermm", 1),
    ("-used", 1),
    ("-user", 1),
    ("-group", 1),
    ("-uid", 1),
    ("-gid", 1),
    ("-nouser", 0),
    ("-nogroup", 0),
    ("-perm", 1),
    ("-readable", 0),
    ("-writable", 0),
    ("-executable", 0),
    ("-links", 1),
    ("-inum", 1),
    ("-samefile", 1),
    ("-lname", 1),
    ("-ilname", 1),
    ("-fstype", 1),
    ("-maxdepth", 1),
    ("-mindepth", 1),
    ("-depth", 0),
    ("-d", 0),
    ("-mount", 0),
    ("-xdev", 0),
    ("-noleaf", 0),
    ("-ignore_readdir_race", 0),
    ("-noignore_readdir_race", 0),
    ("-daystart", 0),
    ("-follow", 0),
    ("-true", 0),
    ("-false", 0),
    ("-print", 0),
    ("-print0", 0),
    ("-printf", 1),
    ("-ls", 0),
    ("-prune", 0),
    ("-quit", 0),
    ("-not", 0),
    ("-and", 0),
    ("-a", 0),
    ("-or", 0),
    ("-o", 0),
    ("!", 0),
    ("(", 0),
    (")", 0),
    (",", 0),
    ("-help", 0),
    ("--help", 0),
    ("-version", 0),
    ("--version", 0),
    ("-delete", 0),
    ("-fprint", 1),
    ("-fprint0", 1),
    ("-fprintf", 2),
    ("-fls", 1),
];

/// find: start points, then an expression of known primaries. `-exec` commands are
/// their own segments (their `{}` is a path under a start point: the start points are
/// checked recursively, and for symlinks to secrets among the names the command may get).
pub(super) fn find(k: &Checker, c: &mut Classification, args: &[Word]) {
    c.add(Category::Enumerate, "enumerate", "`find` lists files");
    let mut i = 0;
    let mut follow = false;
    // Leading options: -H -L -P, -D debugopts, -Olevel.
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
    let mut starts: Vec<&Word> = Vec::new();
    while let Some(w) = args.get(i) {
        match w.value.as_deref() {
            Some(s) if s.starts_with('-') || s == "(" || s == "!" => break,
            None if !w.source.starts_with(['"', '\'', '.', '/', '~']) => {
                c.add(
                    Category::Unanalysable,
                    "unknown-option",
                    format!("`find` start `{}` is not static", w.source),
                );
                return;
            }
            _ => starts.push(w),
        }
        i += 1;
    }
    let dot = Word::literal(".");
    if starts.is_empty() {
        starts.push(&dot);
    }
    let mut exec = false;
    let mut delete = false;
    let mut names: Vec<(String, bool)> = Vec::new();
    let mut plain_and = true;
    let mut max_depth = usize::MAX;
    let expr = &args[i..];
    let mut j = 0;
    while j < expr.len() {
        let Some(s) = expr[j].value.as_deref() else {
            c.add(
                Category::Unanalysable,
                "unknown-option",
                format!("`find` word `{}` is not static", expr[j].source),
            );
            return;
        };
        if matches!(s, "-exec" | "-execdir" | "-ok" | "-okdir") {
            exec = true;
            j += 1;
            while j < expr.len() && !matches!(expr[j].value.as_deref(), Some(";" | "+")) {
                j += 1;
            }
            j += 1;
            continue;
        }
        let Some((_, n)) = FIND_PRIMARIES.iter().find(|(name, _)| *name == s) else {
            let why = if s == "-files0-from" {
                "reads its start points from a file".to_string()
            } else {
                format!("`find` primary `{s}` is not in the command table")
            };
            if s == "-files0-from" {
                if let Some(f) = expr.get(j + 1) {
                    k.read(c, f);
                }
            }
            c.add(Category::Unanalysable, "unknown-option", why);
            return;
        };
        match s {
            // A test filters what `-exec` gets only when it is evaluated before it.
            "-name" | "-iname" if !exec => {
                if let Some(v) = expr.get(j + 1).and_then(|w| w.value.clone()) {
                    names.push((v, s == "-iname"));
                }
            }
            "-maxdepth" => {
                if let Some(d) = expr
                    .get(j + 1)
                    .and_then(|w| w.value.as_deref()?.parse().ok())
                {
                    max_depth = d;
                }
            }
            "-or" | "-o" | "!" | "-not" | "(" | ")" | "," => plain_and = false,
            "-follow" => follow = true,
            "-delete" => delete = true,
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                if let Some(target) = expr.get(j + 1) {
                    write_value(k, c, "find", s, target);
                }
            }
            "-newer" | "-anewer" | "-cnewer" | "-samefile" => {
                if let Some(f) = expr.get(j + 1) {
                    k.read(c, f);
                }
            }
            _ => {}
        }
        j += 1 + n;
    }
    // Fed to `xargs` without `-0` (see `shell::pipes`): names must reach it unsplit.
    let split_names = k.seg.wrappers.iter().any(|w| w == XARGS_FROM_FIND);
    for s in &starts {
        k.read(c, s);
        if exec || follow {
            k.recursive_names(c, s);
        }
        if exec {
            // The names `-exec` gets: with only `-name` tests and-ed, a link passes only if
            // its name matches them all.
            let matchers: Vec<globset::GlobMatcher> = if plain_and {
                names
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
            k.walk_below(
                c,
                s,
                &Walk {
                    follow,
                    max_depth,
                    keep: &keep,
                    links: true,
                    dotenv: true,
                    split_names,
                },
            );
        }
    }
    if delete {
        for s in &starts {
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
