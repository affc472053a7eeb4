//! Option and operand parsing for the command table's argv checks.

use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::Word;

pub(super) fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// Non-option words (after `--` every word is an operand). Unknown words count as operands.
pub(super) fn operands(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut after = false;
    for w in args {
        match w.value.as_deref() {
            Some("--") if !after => after = true,
            Some(s) if !after && s.starts_with('-') && s != "-" => {}
            _ => out.push(w),
        }
    }
    out
}

/// Option words `-abc` containing `short`, or equal to one of `longs` (or `--long=…`).
pub(super) fn flag(args: &[Word], short: &str, longs: &[&str]) -> bool {
    args.iter().any(|w| {
        let s = v(w);
        if let Some(long) = s.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or("");
            longs.contains(&name)
        } else if let Some(cluster) = s.strip_prefix('-') {
            !cluster.is_empty()
                && !cluster.starts_with(|c: char| c.is_ascii_digit())
                && cluster.chars().any(|c| short.contains(c))
        } else {
            false
        }
    })
}

/// The value of an option (`-o X`, `-oX`, `--out X`, `--out=X`).
pub(super) fn opt_values(args: &[Word], shorts: &[&str], longs: &[&str]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let s = v(&args[i]);
        if s == "--" {
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if let Some((name, val)) = long.split_once('=') {
                if longs.contains(&name) {
                    out.push(Word::literal(val));
                }
            } else if longs.contains(&long) {
                if let Some(next) = args.get(i + 1) {
                    out.push(next.clone());
                    i += 1;
                }
            }
        } else {
            for short in shorts {
                if s == *short {
                    if let Some(next) = args.get(i + 1) {
                        out.push(next.clone());
                        i += 1;
                    }
                } else if let Some(attached) = s.strip_prefix(short) {
                    if short.len() == 2 && !attached.is_empty() {
                        out.push(Word::literal(attached));
                    }
                }
            }
        }
        i += 1;
    }
    out
}

/// Operands after removing options that take a value (`-o FILE` is not an operand).
pub(super) fn operands_skipping<'a>(
    args: &'a [Word],
    shorts: &[&str],
    longs: &[&str],
) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut after = false;
    while i < args.len() {
        let w = &args[i];
        let s = v(w);
        if after || w.value.is_none() || s == "-" || !s.starts_with('-') {
            out.push(w);
        } else if s == "--" {
            after = true;
        } else if shorts.contains(&s) || s.strip_prefix("--").is_some_and(|l| longs.contains(&l)) {
            i += 1;
        }
        i += 1;
    }
    out
}

/// Read checks for every operand and `--opt=value`.
pub(super) fn read_all(k: &Checker, c: &mut Classification, args: &[Word], allow_unknown: bool) {
    for w in operands(args) {
        if w.value.is_none() && allow_unknown {
            continue;
        }
        k.read(c, w);
    }
    for w in args {
        if let Some((_, val)) = w
            .value
            .as_deref()
            .and_then(|s| s.strip_prefix("--")?.split_once('='))
        {
            if val.contains('/') || val.starts_with('~') || val.starts_with('.') {
                k.read(c, &Word::literal(val));
            }
        }
    }
}

/// Any of `args` is one of `any`.
pub(super) fn has(args: &[&str], any: &[&str]) -> bool {
    args.iter().any(|a| any.contains(a))
}

/// Short-flag cluster test (`-fdx` contains `f`).
pub(super) fn has_short(args: &[&str], ch: char) -> bool {
    args.iter()
        .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(ch))
}
