//! The programs that read or list: each parsed by its grammar (`gram_*.rs`), its options'
//! effects recorded, then its operands judged by what the program does with them (files
//! it reads, a pattern, sets, an output file). A program of the read or list lists without
//! a grammar here accepts no options at all (any option gates).

use super::gram_list::*;
use super::gram_misc::*;
use super::gram_search::*;
use super::gram_text::*;
use super::grammar::{Grammar, Parsed};
use super::judge::{judge, program_says, read_files, write_value};
use super::paths_check::Checker;
use super::tree_walk::Walk;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

/// What a program's operands are.
#[derive(Clone, Copy)]
enum Operands {
    /// Files it reads.
    Files,
    /// Not files (`tr` sets, `date +FMT`): never path-checked.
    NotFiles,
    /// The program's own rule judges them (an output file, a filter, a start-up command).
    Own(OwnRule),
}

/// Judges a program's operands (and options it reads them by).
type OwnRule = fn(&Segment, &Checker, &mut Classification, &str, &Parsed);

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
        "uniq" => (&G_UNIQ, Own(uniq)),
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
        "shuf" => (&G_SHUF, Own(shuf)),
        "split" => (&G_SPLIT, Own(split)),
        "csplit" => (&G_CSPLIT, Own(split)),
        "pr" => (&G_PR, Files),
        "numfmt" => (&G_NUMFMT, NotFiles),
        "column" => (&G_COLUMN, Files),
        "iconv" => (&G_ICONV, Files),
        "cmp" => (&G_CMP, Files),
        "comm" => (&G_COMM, Files),
        "md5sum" => (&G_MD5SUM, Own(checksum)),
        "sha1sum" => (&G_SHA1SUM, Own(checksum)),
        "sha224sum" => (&G_SHA224SUM, Own(checksum)),
        "sha256sum" => (&G_SHA256SUM, Own(checksum)),
        "sha384sum" => (&G_SHA384SUM, Own(checksum)),
        "sha512sum" => (&G_SHA512SUM, Own(checksum)),
        "b2sum" => (&G_B2SUM, Own(checksum)),
        "cksum" => (&G_CKSUM, Own(checksum)),
        "ls" | "dir" | "vdir" => (&G_LS, Files),
        "du" => (&G_DU, Files),
        "df" => (&G_DF, Files),
        "stat" => (&G_STAT, Files),
        "realpath" => (&G_REALPATH, Files),
        "readlink" => (&G_READLINK, Files),
        "file" => (&G_FILE, Files),
        "diff" => (&G_DIFF, Own(diff)),
        "diff3" => (&G_DIFF3, Files),
        "tree" => (&G_TREE, Files),
        "jq" => (&G_JQ, Own(jq)),
        "less" | "zless" => (&G_LESS, Own(less)),
        "strings" => (&G_STRINGS, Own(strings)),
        "zcat" | "bzcat" | "xzcat" => (&G_ZCAT, Files),
        "look" => (&G_LOOK, Own(look)),
        "pgrep" => (&G_PGREP, NotFiles),
        "whereis" => (&G_WHEREIS, NotFiles),
        "lsblk" => (&G_LSBLK, Files),
        "findmnt" => (&G_FINDMNT, Files),
        "lsof" => (&G_LSOF, Files),
        "xxd" => (&G_NONE, Own(xxd)),
        "yq" => (&G_NONE, Own(yq)),
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
        ("enumerate", " lists files")
    } else {
        ("read", " reads files")
    };
    c.add(category, code, program_says(p, what));
    if globs_may_be_options(k, c, p, args) {
        return;
    }
    let Some(parsed) = judge(k, c, p, g, args) else {
        return;
    };
    let ops = &parsed.operands;
    // With no operand these list the working directory, which `cd` or `env -C` may have
    // moved out of the workspace.
    let dot = Word::literal(".");
    let cwd = [&dot];
    let ops = if ops.is_empty() && matches!(p, "ls" | "dir" | "vdir" | "du" | "tree") {
        &cwd[..]
    } else {
        &ops[..]
    };
    match kind {
        Operands::Files => read_files(seg, k, c, ops),
        Operands::NotFiles => {}
        Operands::Own(rule) => rule(seg, k, c, p, &parsed),
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

/// `uniq IN OUT`: reads the first operand, writes the second.
fn uniq(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    input_output(seg, k, c, p, &parsed.operands, "OUTPUT");
}

/// `xxd IN OUT`: reads the first operand, writes the second.
fn xxd(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    input_output(seg, k, c, p, &parsed.operands, "OUTFILE");
}

fn input_output(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    ops: &[&Word],
    out: &str,
) {
    read_files(seg, k, c, &ops[..ops.len().min(1)]);
    if let Some(w) = ops.get(1) {
        write_value(k, c, p, out, w);
    }
}

/// `shuf -e`/`-i` shuffles its operands or a range, not files.
fn shuf(seg: &Segment, k: &Checker, c: &mut Classification, _: &str, parsed: &Parsed) {
    if !parsed.has("echo") && !parsed.has("input-range") {
        read_files(seg, k, c, &parsed.operands);
    }
}

/// `split IN PREFIX`, `csplit --prefix=P IN`: writes its pieces.
fn split(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    let ops = &parsed.operands;
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

/// `sha256sum --check LIST` reads the files the list names.
fn checksum(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    read_files(seg, k, c, &parsed.operands);
    if parsed.has("check") {
        c.add(
            Category::Unanalysable,
            "reads-other-files",
            format!("`{p} --check` reads the files a checksum list names"),
        );
    }
}

/// `diff -r` reads both trees, following symlinks.
fn diff(seg: &Segment, k: &Checker, c: &mut Classification, _: &str, parsed: &Parsed) {
    let ops = &parsed.operands;
    read_files(seg, k, c, ops);
    if parsed.has("recursive") {
        for w in ops {
            k.recursive_names(c, w);
            k.walk_below(c, w, &Walk::FOLLOW);
        }
    }
}

/// `less +CMD` runs a start-up command.
fn less(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    let ops = &parsed.operands;
    for w in ops.iter().filter(|w| starts_with(w, '+')) {
        c.add(
            Category::Unanalysable,
            "gated-option",
            format!("`{p}` runs the start-up command {}", w.display()),
        );
    }
    read_files(seg, k, c, ops);
}

/// `strings @FILE` reads options from FILE.
fn strings(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, parsed: &Parsed) {
    let ops = &parsed.operands;
    for w in ops.iter().filter(|w| starts_with(w, '@')) {
        c.add(
            Category::Unanalysable,
            "reads-other-files",
            format!("`{p}` reads options from the file {}", w.display()),
        );
    }
    read_files(seg, k, c, ops);
}

fn starts_with(w: &Word, ch: char) -> bool {
    w.value.as_deref().is_some_and(|s| s.starts_with(ch))
}

/// `look PREFIX FILE`.
fn look(seg: &Segment, k: &Checker, c: &mut Classification, _: &str, parsed: &Parsed) {
    read_files(seg, k, c, parsed.operands.get(1..).unwrap_or(&[]));
}

/// `yq [eval] EXPR FILE…`; `load`/`strload` and `env` read other files and data.
fn yq(seg: &Segment, k: &Checker, c: &mut Classification, _: &str, parsed: &Parsed) {
    let ops = &parsed.operands;
    let skip = usize::from(
        ops.first()
            .is_some_and(|w| matches!(w.value.as_deref(), Some("eval" | "e" | "eval-all" | "ea"))),
    );
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

/// jq: the first operand is the filter (unless `-f`); `import`/`include` read modules.
fn jq(seg: &Segment, k: &Checker, c: &mut Classification, _: &str, parsed: &Parsed) {
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
