//! Judging a parsed argv: every option's effect becomes a finding (a write, a program run,
//! a file read that must pass the path checks), and a word the grammar does not know
//! gates the command. Programs' own handlers then judge their `Check` options and operands.

use super::grammar::{parse, Eff, Grammar, Met, Parsed};
use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

/// Parses `args` by `g` and records each option's effect. `None` (after recording an
/// `unknown-option` finding, which gates) when a word is not understood.
pub(super) fn judge<'a>(
    k: &Checker,
    c: &mut Classification,
    p: &str,
    g: &'static Grammar,
    args: &'a [Word],
) -> Option<Parsed<'a>> {
    match parse(g, args) {
        Err(e) => {
            c.add(Category::Unanalysable, "unknown-option", e.message(p));
            None
        }
        Ok(parsed) => {
            for m in &parsed.opts {
                effect(k, c, p, m);
            }
            Some(parsed)
        }
    }
}

/// How the option was spelled (`--output`, `-o`).
pub(super) fn spelled(m: &Met) -> String {
    if m.opt.long.is_empty() {
        format!("-{}", m.opt.short)
    } else {
        format!("--{}", m.opt.long)
    }
}

/// "`{p}`" and then `rest`, without `format!`'s machinery: the table builds such a reason
/// for nearly every segment it judges.
pub(super) fn program_says(p: &str, rest: &str) -> String {
    let mut s = String::with_capacity(p.len() + rest.len() + 2);
    s.push('`');
    s.push_str(p);
    s.push('`');
    s.push_str(rest);
    s
}

fn effect(k: &Checker, c: &mut Classification, p: &str, m: &Met) {
    // Spelled only where a finding quotes it: most options are safe and quote nothing.
    let name = || spelled(m);
    match m.opt.eff {
        Eff::Safe | Eff::Check => {}
        Eff::Read => {
            if let Some(v) = &m.value {
                k.read(c, v);
            }
        }
        Eff::Write => {
            if let Some(v) = &m.value {
                write_value(k, c, p, &name(), v);
            }
        }
        Eff::Exec => c.add(
            Category::RunCode,
            "runs-program",
            format!(
                "`{p} {}` runs {}",
                name(),
                m.value.as_ref().map_or("a program", |v| v.display())
            ),
        ),
        Eff::ReadList(why) => {
            if let Some(v) = &m.value {
                k.read(c, v);
            }
            c.add(
                Category::Unanalysable,
                "reads-other-files",
                format!("`{p} {}` {why}", name()),
            );
        }
        Eff::Gate(category, why) => {
            c.add(category, "gated-option", format!("`{p} {}` {why}", name()))
        }
    }
}

/// Output that goes nowhere on disk (`/dev/null`, the standard streams) is not a write.
pub(super) fn is_sink(v: &Word) -> bool {
    matches!(
        v.value.as_deref(),
        Some("/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2")
    )
}

/// A file the program writes: a write finding and the write path checks.
pub(super) fn write_value(k: &Checker, c: &mut Classification, p: &str, name: &str, v: &Word) {
    if is_sink(v) {
        return;
    }
    c.add(
        Category::Write,
        "write",
        format!("`{p} {name}` writes {}", v.display()),
    );
    k.write(c, v);
}

/// Is `w` the `{}` placeholder of `find -exec` (a path under find's start directories,
/// which the `find` segment itself checks, symlinks included)?
pub(super) fn find_placeholder(seg: &Segment, w: &Word) -> bool {
    w.value.is_none()
        && matches!(w.source.as_str(), "{}" | "'{}'" | "\"{}\"")
        && seg.wrappers.iter().any(|x| x == "find -exec")
}

/// Read checks for file operands.
pub(super) fn read_files(seg: &Segment, k: &Checker, c: &mut Classification, files: &[&Word]) {
    for w in files {
        if !find_placeholder(seg, w) {
            k.read(c, w);
        }
    }
}
