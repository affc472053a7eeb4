//! `find … | xargs CMD …`: the command gets paths `find` printed, which is what `find …
//! -exec CMD … {} +` gives it. The pair is analysed as that one `find -exec` (so the table
//! checks the start points, walks below them for symlinks into secrets and dotenv files,
//! and sees the command's words as `{}` paths under a start point), when it is provably
//! the same: plain static words, `find` printing with `-print` (or `-print0` to `xargs
//! -0`) and nothing else, `xargs` with only options that do not change which words the
//! command gets. Without `-0`, xargs splits at blanks and undoes quotes, so the segment is
//! marked [`XARGS_FROM_FIND`] and the table checks that no name below would be split.
//! Any other producer (`cat list | xargs rm`) keeps `xargs` input unknown (gated).

use super::walk::{child_by_field, kind, named_children, Analyser, Env};
use super::Word;
use tree_sitter::Node;

mod known_input;

/// Wrapper recorded on a `find | xargs` analysed as `find -exec` whose names xargs splits.
pub const XARGS_FROM_FIND: &str = "find | xargs";
/// The same with `-print0 | xargs -0` (names reach the command unchanged).
pub const XARGS0_FROM_FIND: &str = "find -print0 | xargs -0";

/// find primaries that act (print, run, write, delete, stop).
const FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-print", "-print0", "-printf", "-fprint",
    "-fprint0", "-fprintf", "-fls", "-ls", "-quit",
];

/// A command node whose words are all static text (no expansion, substitution,
/// redirection or assignment): its words, else `None`.
fn plain_words(a: &mut Analyser, node: Node, src: &str, env: &Env) -> Option<Vec<Word>> {
    if kind(node) != "command" || src[node.byte_range()].contains(['$', '`', '<', '>', '\n', '\\'])
    {
        return None;
    }
    let children = named_children(node);
    let mut words = Vec::new();
    for child in children {
        let inner = match kind(child) {
            "command_name" => child.named_child(0)?,
            "word" | "string" | "raw_string" | "concatenation" | "number" => child,
            _ => return None,
        };
        let w = a.word(inner, src, env);
        w.value.as_ref()?;
        words.push(w);
    }
    Some(words)
}

fn value(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// xargs options that keep "the command gets the input's words, in order": returns
/// (`-0` given, index of the command).
fn xargs_options(args: &[Word]) -> Option<(bool, usize)> {
    let mut null = false;
    let mut i = 0;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    while let Some(w) = args.get(i) {
        let s = value(w);
        match s {
            "-0" | "--null" => null = true,
            "-r" | "--no-run-if-empty" | "-t" | "--verbose" | "-x" | "--exit" => {}
            "-n" | "-P" | "-s" => {
                if !args.get(i + 1).is_some_and(|n| digits(value(n))) {
                    return None;
                }
                if s == "-P" && !args.get(i + 1).is_some_and(|n| narrow(value(n))) {
                    return None;
                }
                i += 1;
            }
            "--" => return Some((null, i + 1)),
            _ if !s.starts_with('-') => return Some((null, i)),
            _ => {
                let n = [
                    "-n",
                    "-P",
                    "-s",
                    "--max-args=",
                    "--max-procs=",
                    "--max-chars=",
                ]
                .iter()
                .find_map(|p| s.strip_prefix(p))?;
                if !digits(n) {
                    return None;
                }
                let procs = s.starts_with("-P") || s.starts_with("--max-procs=");
                if procs && !narrow(n) {
                    return None;
                }
            }
        }
        i += 1;
    }
    Some((null, i))
}

/// An `xargs -P` value the walk models: 1 to the most a command may fan out by itself
/// (wider, or `0`, is left to the wrapper's parse, which gates it).
fn narrow(n: &str) -> bool {
    n.parse::<u32>()
        .is_ok_and(|n| (1..=super::wrappers::XARGS_MAX_PROCS).contains(&n))
}

/// `find ARGS` and `xargs ARGS` as the equivalent `find … -exec CMD … {} +` argv, and
/// whether the names are split (no `-0`); `None` when they are not provably equivalent.
fn as_find_exec(find: &[Word], xargs: &[Word]) -> Option<(Vec<Word>, bool)> {
    if value(find.first()?) != "find" || value(xargs.first()?) != "xargs" {
        return None;
    }
    let (null, at) = xargs_options(&xargs[1..])?;
    let mut cmd: Vec<Word> = xargs[1 + at..].to_vec();
    if cmd.is_empty() {
        cmd.push(Word::literal("echo"));
    }
    // `{}`, `;` and `+` mean something to find -exec: such words are not the same there.
    if cmd.iter().any(|w| {
        let v = value(w);
        v.contains("{}") || v == ";" || v == "+" || w.glob
    }) {
        return None;
    }
    // find: leading options, start points (static, not options, no glob), expression.
    let mut i = 1;
    while find
        .get(i)
        .is_some_and(|w| matches!(value(w), "-H" | "-L" | "-P"))
    {
        i += 1;
    }
    while find.get(i).is_some_and(|w| {
        let v = value(w);
        !v.starts_with('-') && v != "(" && v != "!"
    }) {
        let w = &find[i];
        if w.glob || value(w).is_empty() {
            return None;
        }
        i += 1;
    }
    let expr = &find[i..];
    let actions: Vec<usize> = expr
        .iter()
        .enumerate()
        .filter(|(_, w)| FIND_ACTIONS.contains(&value(w)))
        .map(|(j, _)| j)
        .collect();
    let mut out: Vec<Word> = find[..i].to_vec();
    match actions.as_slice() {
        [] if !null => {
            // The default `-print` applies to the whole expression: `-o` needs brackets
            // (and-ed tests alone keep the name filters the table reads).
            let or = expr.iter().any(|w| matches!(value(w), "-o" | "-or" | ","));
            if or {
                out.push(Word::literal("("));
            }
            out.extend(expr.iter().cloned());
            if or {
                out.push(Word::literal(")"));
            }
        }
        [j] if *j + 1 == expr.len()
            && value(&expr[*j]) == if null { "-print0" } else { "-print" } =>
        {
            out.extend(expr[..*j].iter().cloned());
        }
        _ => return None,
    }
    out.push(Word::literal("-exec"));
    out.extend(cmd);
    out.push(Word::literal("{}"));
    out.push(Word::literal("+"));
    Some((out, !null))
}

impl Analyser<'_> {
    /// Analyses `find … | xargs …` (two pipeline stages) as one `find -exec`, when it is
    /// provably equivalent; false (nothing analysed) otherwise.
    pub(super) fn find_xargs(&mut self, find: Node, xargs: Node, src: &str, env: &Env) -> bool {
        // The name is part of the command's text: most pairs fail on the text alone.
        let has = |n: Node, name: &str| {
            src.as_bytes()[n.byte_range()]
                .windows(name.len())
                .any(|w| w == name.as_bytes())
        };
        if !has(find, "find") || !has(xargs, "xargs") {
            return false;
        }
        let quick = |n: Node| child_by_field(n, "name").map(|c| &src[c.byte_range()]);
        if quick(find) != Some("find") || quick(xargs) != Some("xargs") {
            return false;
        }
        if self.functions.contains("find") || self.functions.contains("xargs") {
            return false;
        }
        let (Some(fw), Some(xw)) = (
            plain_words(self, find, src, env),
            plain_words(self, xargs, src, env),
        ) else {
            return false;
        };
        if !self.system_program("xargs") || !self.system_program("find") {
            return false;
        }
        let Some((argv, split)) = as_find_exec(&fw, &xw) else {
            return false;
        };
        let mut e = env.clone();
        e.wrappers.push(
            if split {
                XARGS_FROM_FIND
            } else {
                XARGS0_FROM_FIND
            }
            .into(),
        );
        let text = &src[find.start_byte()..xargs.end_byte()];
        self.simple(argv, &e, text);
        true
    }
}
