//! File commands of the table: `find`, the greps, `sed`, `awk`, copy/archive tools and
//! `rm` (recursive deletes outside the workspace, or of directories holding sensitive
//! paths, are destructive).

use super::args::{flag, operands, operands_skipping, opt_values, v};
use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;

pub(super) fn find(k: &Checker, c: &mut Classification, args: &[Word]) {
    let mut starts: Vec<&Word> = args
        .iter()
        .take_while(|w| {
            w.value
                .as_deref()
                .is_none_or(|s| !s.starts_with('-') && s != "(" && s != "!")
        })
        .collect();
    let dot = Word::literal(".");
    if starts.is_empty() {
        starts.push(&dot);
    }
    c.add(Category::Enumerate, "enumerate", "`find` lists files");
    let has = |name: &str| args.iter().any(|w| v(w) == name);
    let exec = ["-exec", "-execdir", "-ok", "-okdir"]
        .iter()
        .any(|e| has(e));
    for s in &starts {
        k.read(c, s);
        if exec {
            k.recursive_read(c, s);
        }
    }
    if has("-delete") {
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
    for (i, w) in args.iter().enumerate() {
        if matches!(v(w), "-fprint" | "-fprint0" | "-fprintf" | "-fls") {
            c.add(Category::Write, "write", "`find` writes a file");
            if let Some(target) = args.get(i + 1) {
                k.write(c, target);
            }
        }
    }
}

pub(super) fn grep(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    c.add(Category::Read, "read", format!("`{p}` searches files"));
    let value_opts = [
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "-g",
        "-t",
        "-T",
        "--regexp",
        "--file",
        "--glob",
        "--type",
        "--max-count",
        "--include",
        "--exclude",
    ];
    let ops = operands_skipping(
        args,
        &value_opts,
        &[
            "regexp",
            "file",
            "glob",
            "type",
            "max-count",
            "include",
            "exclude",
            "exclude-dir",
            "context",
        ],
    );
    let pattern_given = !opt_values(args, &["-e", "-f"], &["regexp", "file"]).is_empty();
    for f in opt_values(args, &["-f"], &["file"]) {
        k.read(c, &f);
    }
    let files: Vec<&Word> = ops
        .into_iter()
        .skip(if pattern_given { 0 } else { 1 })
        .collect();
    let recursive = matches!(p, "rg" | "ag" | "ack")
        || flag(args, "rR", &["recursive", "dereference-recursive"]);
    let dot = Word::literal(".");
    let files = if files.is_empty() && recursive {
        vec![&dot]
    } else {
        files
    };
    for f in files {
        k.read(c, f);
        if recursive {
            k.recursive_read(c, f);
        }
    }
}

/// A sed script that only substitutes, prints, deletes or quits (no `e`, `w`, `r`, `W`, `R`).
fn sed_script_is_plain(script: &str) -> bool {
    script.split([';', '\n']).all(|cmd| {
        let cmd = cmd.trim();
        let body = cmd.trim_start_matches(|ch: char| ch.is_ascii_digit() || ",$!^ ".contains(ch));
        if body.is_empty() {
            return true;
        }
        if let Some(rest) = body.strip_prefix('s') {
            let mut chars = rest.chars();
            let Some(delim) = chars.next() else {
                return false;
            };
            if delim.is_alphanumeric() || delim == '\\' {
                return false;
            }
            let parts: Vec<&str> = rest[delim.len_utf8()..].split(delim).collect();
            return parts.len() == 3 && parts[2].chars().all(|f| "gpiI0123456789".contains(f));
        }
        matches!(
            body,
            "p" | "d" | "q" | "=" | "n" | "N" | "P" | "D" | "G" | "H" | "g" | "h" | "x" | "l"
        )
    })
}

pub(super) fn sed(k: &Checker, c: &mut Classification, args: &[Word]) {
    let in_place = flag(args, "i", &["in-place"]);
    let scripts = opt_values(args, &["-e", "-f"], &["expression", "file"]);
    let ops = operands_skipping(
        args,
        &["-e", "-f", "-l"],
        &["expression", "file", "line-length"],
    );
    let (script_words, files): (Vec<Word>, Vec<&Word>) = if scripts.is_empty() {
        (
            ops.first().map(|w| vec![(*w).clone()]).unwrap_or_default(),
            ops.into_iter().skip(1).collect(),
        )
    } else {
        (scripts, ops)
    };
    let plain = !flag(args, "f", &["file"])
        && script_words
            .iter()
            .all(|w| w.value.as_deref().is_some_and(sed_script_is_plain));
    if !plain {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            "the sed script may run commands or write files",
        );
    }
    if in_place {
        c.add(Category::Write, "write", "`sed -i` edits files in place");
        for f in files {
            k.write(c, f);
        }
    } else {
        c.add(Category::Read, "read", "`sed` reads files");
        for f in files {
            k.read(c, f);
        }
    }
}

pub(super) fn awk(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    if p == "busybox" {
        c.add(
            Category::Enumerate,
            "enumerate",
            "`busybox` lists its applets",
        );
        return;
    }
    let ops = operands_skipping(
        args,
        &["-f", "-v", "-F"],
        &["file", "assign", "field-separator"],
    );
    let progfile = !opt_values(args, &["-f"], &["file"]).is_empty();
    let (prog, files): (Option<&Word>, Vec<&Word>) = if progfile {
        (None, ops)
    } else {
        (ops.first().copied(), ops.into_iter().skip(1).collect())
    };
    let plain = prog.and_then(|w| w.value.as_deref()).is_some_and(|s| {
        !["system", "|", ">", "getline", "close", "fflush"]
            .iter()
            .any(|bad| s.contains(bad))
    });
    if plain {
        c.add(Category::Read, "read", format!("`{p}` reads files"));
    } else {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            format!("the `{p}` program may run commands or write files"),
        );
    }
    for f in files {
        k.read(c, f);
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
