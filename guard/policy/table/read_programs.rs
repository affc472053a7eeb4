//! The programs that read or list: each parsed by its grammar (`gram_*.rs`), its options'
//! effects recorded, then its operands judged by what the program does with them (files
//! it reads, a pattern, sets, an output file). A program of the read or list lists without
//! a grammar here accepts no options at all (any option gates).

use super::gram_list::*;
use super::gram_misc::*;
use super::gram_search::*;
use super::gram_text::*;
use super::grammar::{Grammar, Parsed};
use super::judge::{judge, read_files, write_value};
use super::paths_check::Checker;
use super::tree_walk::Walk;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

/// What a program's operands are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Files it reads.
    Files,
    /// Not files (`tr` sets, `date +FMT`): never path-checked.
    NotFiles,
    /// The handler decides.
    Own,
}

/// The grammar and operand kind of a read or list program.
fn grammar_of(p: &str) -> (&'static Grammar, Operands) {
    use Operands::*;
    match p {
        "cat" => (&G_CAT, Files),
        "tac" => (&G_TAC, Files),
        "head" => (&G_HEAD, Files),
        "tail" => (&G_TAIL, Files),
        "wc" => (&G_WC, Files),
        "sort" => (&G_SORT, Files),
        "uniq" => (&G_UNIQ, Own),
        "cut" => (&G_CUT, Files),
        "tr" => (&G_TR, NotFiles),
        "nl" => (&G_NL, Files),
        "od" => (&G_OD, Files),
        "base64" => (&G_BASE64, Files),
        "base32" => (&G_BASE32, Files),
        "fold" => (&G_FOLD, Files),
        "fmt" => (&G_FMT, Files),
        "paste" => (&G_PASTE, Files),
        "join" => (&G_JOIN, Files),
        "expand" => (&G_EXPAND, Files),
        "unexpand" => (&G_UNEXPAND, Files),
        "shuf" => (&G_SHUF, Own),
        "split" => (&G_SPLIT, Own),
        "csplit" => (&G_CSPLIT, Own),
        "pr" => (&G_PR, Files),
        "numfmt" => (&G_NUMFMT, NotFiles),
        "column" => (&G_COLUMN, Files),
        "iconv" => (&G_ICONV, Files),
        "cmp" => (&G_CMP, Files),
        "comm" => (&G_COMM, Files),
        "md5sum" => (&G_MD5SUM, Own),
        "sha1sum" => (&G_SHA1SUM, Own),
        "sha224sum" => (&G_SHA224SUM, Own),
        "sha256sum" => (&G_SHA256SUM, Own),
        "sha384sum" => (&G_SHA384SUM, Own),
        "sha512sum" => (&G_SHA512SUM, Own),
        "b2sum" => (&G_B2SUM, Own),
        "cksum" => (&G_CKSUM, Own),
        "ls" | "dir" | "vdir" => (&G_LS, Files),
        "du" => (&G_DU, Files),
        "df" => (&G_DF, Files),
        "stat" => (&G_STAT, Files),
        "realpath" => (&G_REALPATH, Files),
        "readlink" => (&G_READLINK, Files),
        "file" => (&G_FILE, Files),
        "diff" => (&G_DIFF, Own),
        "diff3" => (&G_DIFF3, Files),
        "tree" => (&G_TREE, Files),
        "jq" => (&G_JQ, Own),
        "less" | "zless" => (&G_LESS, Own),
        "strings" => (&G_STRINGS, Own),
        "zcat" | "bzcat" | "xzcat" => (&G_ZCAT, Files),
        "look" => (&G_LOOK, Own),
        "pgrep" => (&G_PGREP, NotFiles),
        "whereis" => (&G_WHEREIS, NotFiles),
        "lsblk" => (&G_LSBLK, Files),
        "findmnt" => (&G_FINDMNT, Files),
        "lsof" => (&G_LSOF, Files),
        "xxd" | "yq" => (&G_NONE, Own),
        _ => (&G_NONE, Files),
    }
}

/// Judges a program of the read or enumerate lists; `category` is what its plain use is.
pub(super) fn read_program(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    args: &[Word],
    category: Category,
) {
    let (g, kind) = grammar_of(p);
    let (code, what) = if category == Category::Enumerate {
        ("enumerate", "lists files")
    } else {
        ("read", "reads files")
    };
    c.add(category, code, format!("`{p}` {what}"));
    if globs_may_be_options(k, c, p, args) {
        return;
    }
    let Some(parsed) = judge(k, c, p, g, args) else {
        return;
    };
    let ops = &parsed.operands;
    match kind {
        Operands::Files => read_files(seg, k, c, ops),
        Operands::NotFiles => {}
        Operands::Own => own_operands(seg, k, c, p, &parsed),
    }
}

/// A glob that may expand to an option (`*` in a directory holding `-rf`) is not understood.
pub(super) fn globs_may_be_options(
    k: &Checker,
    c: &mut Classification,
    p: &str,
    args: &[Word],
) -> bool {
    for w in args {
        if w.value.as_deref() == Some("--") {
            break;
        }
        if k.glob_may_be_option(w) {
            c.add(
                Category::Unanalysable,
                "unknown-option",
                format!(
                    "`{p}` glob `{}` may expand to a file name that is an option",
                    w.display()
                ),
            );
            return true;
        }
    }
    false
}

fn own_operands(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    let ops = &parsed.operands;
    match p {
        "uniq" => {
            read_files(seg, k, c, &ops[..ops.len().min(1)]);
            if let Some(out) = ops.get(1) {
                write_value(k, c, p, "OUTPUT", out);
            }
        }
        "shuf" => {
            if !parsed.has("echo") && !parsed.has("input-range") {
                read_files(seg, k, c, ops);
            }
        }
        "split" | "csplit" => {
            c.add(
                Category::Write,
                "write",
                format!("`{p}` writes its pieces to files"),
            );
            read_files(seg, k, c, &ops[..ops.len().min(1)]);
            let prefix = if p == "split" {
                ops.get(1).copied()
            } else {
                parsed.values("prefix").next()
            };
            if let Some(prefix) = prefix {
                k.write(c, prefix);
            }
        }
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum"
        | "cksum" => {
            read_files(seg, k, c, ops);
            if parsed.has("check") {
                c.add(
                    Category::Unanalysable,
                    "reads-other-files",
                    format!("`{p} --check` reads the files a checksum list names"),
                );
            }
        }
        "diff" => {
            read_files(seg, k, c, ops);
            if parsed.has("recursive") {
                for w in ops {
                    k.recursive_names(c, w);
                    k.walk_below(c, w, &Walk::FOLLOW);
                }
            }
        }
        "jq" => jq(seg, k, c, parsed),
        "less" | "zless" => {
            for w in ops.iter() {
                if w.value.as_deref().is_some_and(|s| s.starts_with('+')) {
                    c.add(
                        Category::Unanalysable,
                        "gated-option",
                        format!("`{p}` runs the start-up command {}", w.display()),
                    );
                }
            }
            read_files(seg, k, c, ops);
        }
        "strings" => {
            for w in ops.iter() {
                if w.value.as_deref().is_some_and(|s| s.starts_with('@')) {
                    c.add(
                        Category::Unanalysable,
                        "reads-other-files",
                        format!("`{p}` reads options from the file {}", w.display()),
                    );
                }
            }
            read_files(seg, k, c, ops);
        }
        "look" => read_files(seg, k, c, ops.get(1..).unwrap_or(&[])),
        "xxd" => {
            read_files(seg, k, c, &ops[..ops.len().min(1)]);
            if let Some(out) = ops.get(1) {
                write_value(k, c, p, "OUTFILE", out);
            }
        }
        "yq" => {
            // `yq [eval] EXPR FILE…`; `load`/`strload` and `env` read other files and data.
            let skip = usize::from(ops.first().is_some_and(|w| {
                matches!(w.value.as_deref(), Some("eval" | "e" | "eval-all" | "ea"))
            }));
            if let Some(expr) = ops.get(skip) {
                let text = expr.value.as_deref().unwrap_or("load");
                if ["load", "include", "env", "file"]
                    .iter()
                    .any(|b| text.contains(b))
                {
                    c.add(
                        Category::Unanalysable,
                        "reads-other-files",
                        "the yq expression loads files or the environment",
                    );
                }
            }
            read_files(seg, k, c, ops.get(skip + 1..).unwrap_or(&[]));
        }
        _ => read_files(seg, k, c, ops),
    }
}

/// jq: the first operand is the filter (unless `-f`); `import`/`include` read modules.
fn jq(seg: &Segment, k: &Checker, c: &mut Classification, parsed: &Parsed) {
    let ops = &parsed.operands;
    let from_file = parsed.has("from-file");
    let (filter, rest) = if from_file {
        (None, &ops[..])
    } else {
        (ops.first(), ops.get(1..).unwrap_or(&[]))
    };
    if let Some(f) = filter {
        let text = f.value.as_deref().unwrap_or("import");
        if text.contains("import") || text.contains("include") || text.contains("$__prog") {
            c.add(
                Category::Unanalysable,
                "reads-other-files",
                "the jq filter imports modules or data files",
            );
        }
    }
    // Words after `--args` are values, but a file may come before it: check them all.
    read_files(seg, k, c, rest);
}
