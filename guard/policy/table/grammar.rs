//! The option grammar engine: parses a program's argv by the program's real option
//! grammar (a static [`Grammar`] table per program, in `gram_*.rs`) so every word is
//! either understood or reported. Short clusters (`-so FILE`, `-sd@x`), attached and
//! separate values, optional values that exist only attached (`xargs -l5`, `--color=auto`),
//! GNU long-option abbreviations resolved as `getopt_long` does (exact match first, else
//! the unique option the word prefixes; ambiguous is not understood) and `--`.
//! A word the table does not know is an error: the caller gates the command.

use crate::policy::shell::Word;
use crate::policy::verdict::Category;

/// Does the option take a value?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// A flag.
    No,
    /// A value: attached (`-oX`, `--out=X`) or the next word.
    Req,
    /// A value only when attached (`-l5`, `--color=auto`); otherwise a flag.
    Opt,
    /// Two separate words, a name and a value (`jq --arg NAME VALUE`); the value is judged.
    Two,
}

/// What the option does with its value (or, for a flag, what the flag does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Eff {
    /// Changes only how the program reads or prints (the value is not a file).
    Safe,
    /// The value is a file the program reads.
    Read,
    /// The value is a file the program writes (or creates).
    Write,
    /// The value is a command the program runs.
    Exec,
    /// Neither a plain read nor understood as one: gated with this reason.
    Gate(Category, &'static str),
    /// The value is a file naming other files the program reads (`--files0-from`): the
    /// file is path-checked and the command gated (the files it names are unknown).
    ReadList(&'static str),
    /// The program's handler judges it (by its long name).
    Check,
}

/// One option: its short letter (`'\0'` if none), its long name (`""` if none).
#[derive(Debug)]
pub(super) struct Opt {
    pub short: char,
    pub long: &'static str,
    pub arg: Arg,
    pub eff: Eff,
}

/// One table row: `o('o', "output", Req, Write)` (`'\0'` / `""` when there is no short or
/// long spelling).
pub(super) const fn o(short: char, long: &'static str, arg: Arg, eff: Eff) -> Opt {
    Opt {
        short,
        long,
        arg,
        eff,
    }
}

/// A program's options.
#[derive(Debug)]
pub(super) struct Grammar {
    pub opts: &'static [Opt],
    /// Options are recognised after operands too (GNU permutation). When false, the first
    /// operand ends the options (POSIX, and tools like `xargs` or `git` subcommands' heads).
    pub permute: bool,
    /// `-5` style numbers are operands-like options (`head -5`, `tail -20`).
    pub numeric: bool,
}

/// An option the parser met: the table entry and its value (literal or unknown word).
#[derive(Debug)]
pub(super) struct Met {
    pub opt: &'static Opt,
    pub value: Option<Word>,
}

/// The parse of one argv.
#[derive(Debug, Default)]
pub(super) struct Parsed<'a> {
    pub opts: Vec<Met>,
    pub operands: Vec<&'a Word>,
    /// How many operands came before `--`, when it was given (git tells revisions from
    /// pathspecs by it).
    pub dashdash: Option<usize>,
}

impl Parsed<'_> {
    /// Was the option with this long name (or short letter, as `"-x"`) given?
    pub fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|m| is(m.opt, name))
    }

    /// The values given to one option.
    pub fn values<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Word> + 's {
        self.opts
            .iter()
            .filter(move |m| is(m.opt, name))
            .filter_map(|m| m.value.as_ref())
    }
}

fn is(o: &Opt, name: &str) -> bool {
    match name.strip_prefix('-') {
        Some(s) if s.chars().count() == 1 => s.starts_with(o.short),
        _ => o.long == name,
    }
}

/// Why a word was not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NotUnderstood {
    Unknown(String),
    Ambiguous(String),
    /// A word in option position whose value is not static (it may expand to any option).
    NotStatic(String),
    MissingValue(String),
}

impl NotUnderstood {
    pub fn message(&self, program: &str) -> String {
        match self {
            NotUnderstood::Unknown(w) => {
                format!("`{program}` option `{w}` is not in the command table")
            }
            NotUnderstood::Ambiguous(w) => {
                format!("`{program}` option `{w}` abbreviates more than one option")
            }
            NotUnderstood::NotStatic(w) => {
                format!("`{program}` word `{w}` is not static and may be an option")
            }
            NotUnderstood::MissingValue(w) => format!("`{program}` option `{w}` lacks its value"),
        }
    }
}

/// Resolves a long name (no dashes, no `=`) as `getopt_long` does.
pub(super) fn long_opt(g: &Grammar, name: &str) -> Result<&'static Opt, NotUnderstood> {
    if name.is_empty() {
        return Err(NotUnderstood::Unknown("--".into()));
    }
    let mut found: Option<&'static Opt> = None;
    for o in g.opts.iter() {
        if o.long.is_empty() {
            continue;
        }
        if o.long == name {
            return Ok(o);
        }
        if o.long.starts_with(name) {
            if found.is_some_and(|f| f.long != o.long) {
                return Err(NotUnderstood::Ambiguous(format!("--{name}")));
            }
            found = Some(o);
        }
    }
    found.ok_or_else(|| NotUnderstood::Unknown(format!("--{name}")))
}

fn short_opt(g: &Grammar, ch: char) -> Option<&'static Opt> {
    g.opts.iter().find(|o| o.short == ch && ch != '\0')
}

/// Parses `args` (argv without the program name) by `g`.
pub(super) fn parse<'a>(
    g: &'static Grammar,
    args: &'a [Word],
) -> Result<Parsed<'a>, NotUnderstood> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let w = &args[i];
        i += 1;
        if options_done {
            out.operands.push(w);
            continue;
        }
        let Some(s) = w.value.as_deref() else {
            // Unknown text: an operand when it cannot start with `-` (quoted text that
            // begins with a literal character, `{}` of find -exec, `<xargs input>`).
            if !may_be_option(w) {
                out.operands.push(w);
                continue;
            }
            return Err(NotUnderstood::NotStatic(w.source.clone()));
        };
        if s == "--" {
            options_done = true;
            out.dashdash = Some(out.operands.len());
            continue;
        }
        if s == "-" || !s.starts_with('-') {
            out.operands.push(w);
            if !g.permute {
                options_done = true;
            }
            continue;
        }
        if let Some(long) = s.strip_prefix("--") {
            let met = long_option(g, s, long, args, &mut i)?;
            out.opts.push(met);
            continue;
        }
        let cluster = &s[1..];
        if g.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        short_cluster(g, cluster, args, &mut i, &mut out)?;
    }
    Ok(out)
}

/// `--name`, `--name=value` or `--name value` (the word `s`, `long` without its dashes);
/// `i` moves past a value taken from the next words.
fn long_option(
    g: &Grammar,
    s: &str,
    long: &str,
    args: &[Word],
    i: &mut usize,
) -> Result<Met, NotUnderstood> {
    let (name, attached) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    let opt = long_opt(g, name)?;
    let missing = || NotUnderstood::MissingValue(s.to_string());
    let value = match (opt.arg, attached) {
        (Arg::No | Arg::Two, Some(_)) => return Err(NotUnderstood::Unknown(s.to_string())),
        (Arg::Two, None) => {
            let value = args.get(*i + 1).ok_or_else(missing)?;
            *i += 2;
            Some(value.clone())
        }
        (Arg::No, None) | (Arg::Opt, None) => None,
        (_, Some(v)) => Some(Word::literal(v)),
        (Arg::Req, None) => {
            let next = args.get(*i).ok_or_else(missing)?;
            *i += 1;
            Some(next.clone())
        }
    };
    Ok(Met { opt, value })
}

/// A cluster of short options (`-so FILE`, `-sd@x`): flags up to the first that takes a
/// value, which is the rest of the cluster or the next word.
fn short_cluster(
    g: &Grammar,
    cluster: &str,
    args: &[Word],
    i: &mut usize,
    out: &mut Parsed,
) -> Result<(), NotUnderstood> {
    for (pos, ch) in cluster.char_indices() {
        let opt = short_opt(g, ch).ok_or_else(|| NotUnderstood::Unknown(format!("-{ch}")))?;
        let rest = &cluster[pos + ch.len_utf8()..];
        match opt.arg {
            Arg::No => out.opts.push(Met { opt, value: None }),
            Arg::Opt => {
                let value = (!rest.is_empty()).then(|| Word::literal(rest));
                out.opts.push(Met { opt, value });
                return Ok(());
            }
            Arg::Two => return Err(NotUnderstood::Unknown(format!("-{ch}"))),
            Arg::Req => {
                let value = if rest.is_empty() {
                    let next = args
                        .get(*i)
                        .ok_or_else(|| NotUnderstood::MissingValue(format!("-{ch}")))?;
                    *i += 1;
                    next.clone()
                } else {
                    Word::literal(rest)
                };
                out.opts.push(Met {
                    opt,
                    value: Some(value),
                });
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Can a non-static word expand to text that starts with `-`? Its source is what the
/// shell sees: `"x$y"` or `x*` cannot, `"$y"` or `$(cmd)` can. `{}` of `find -exec`
/// expands to a path under find's start (which does not start with `-`; checked there).
fn may_be_option(w: &Word) -> bool {
    if w.process_substitution && w.source.starts_with(['<', '>']) {
        // `<(cmd)` is a `/dev/fd/N` path.
        return false;
    }
    let src = w.source.trim_start_matches(['"', '\'']);
    if src.starts_with("{}") {
        return false;
    }
    !src.starts_with(|c: char| c.is_ascii_alphanumeric() || "./_~".contains(c))
}

#[cfg(test)]
#[path = "grammar_tests.rs"]
mod tests;
