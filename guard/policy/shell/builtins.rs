//! Shell builtins in their inert forms. A builtin runs inside the shell, so it can change
//! what every later command is (`alias`, `hash -p`, `enable -f`), plant code (`trap`,
//! `complete -C`, `PROMPT_COMMAND` through `declare`), rebind any variable (`printf -v`,
//! `read`, `declare -n`) or evaluate arithmetic; only the forms listed here are inert.

use super::inert::{env_gate, is_integer, test_args_gate, variable_gate};
use super::{Segment, Word};
use foldhash::HashSet;
use std::sync::OnceLock;

/// Does the command run as a shell builtin? Only when nothing but the shell (or `command`,
/// `builtin`, `eval`) stands between it and the text: `env printf` is `/usr/bin/printf`.
fn runs_as_builtin(seg: &Segment) -> bool {
    seg.wrappers.last().is_none_or(|w| {
        matches!(w.as_str(), "command" | "builtin" | "eval")
            || w.ends_with(" -c")
            || w.ends_with(" <<here")
    })
}

/// Builtins whose every form is inert.
const INERT_BUILTINS: &[&str] = &[
    "echo", ":", "true", "false", "pwd", "times", "jobs", "dirs", "help", "type", "caller",
    "break", "continue", "wait", "unalias", "logout", "exit", "return",
];

/// Builtins handled elsewhere: wrappers that run another command (analysed as that
/// command), `cd` (tracked), code loaders the command table gates (`source`, `eval`).
const ELSEWHERE: &[&str] = &["command", "exec", "cd", "source", ".", "eval", "kill"];

/// For a segment whose program is a shell builtin: why it is not known inert, if it is not.
pub(crate) fn builtin_gate(seg: &Segment) -> Option<String> {
    let name = seg.argv.first()?.value.as_deref()?;
    if name.contains('/') || !is_builtin_name(name) {
        return None;
    }
    let args = &seg.argv[1..];
    if !runs_as_builtin(seg) || INERT_BUILTINS.contains(&name) || ELSEWHERE.contains(&name) {
        if matches!(name, "exit" | "return") {
            return numeric_args(name, args);
        }
        return None;
    }
    if matches!(name, "test" | "[" | "[[") {
        // String and file tests of unknown words are inert; arithmetic is not.
        return test_args_gate(args);
    }
    let values: Option<Vec<&str>> = args.iter().map(|w| w.value.as_deref()).collect();
    let Some(values) = values else {
        return Some(format!("`{name}` with words not known before it runs"));
    };
    let call = Call {
        name,
        args,
        values: &values,
    };
    match RULES.iter().find(|(n, _)| *n == name) {
        Some((_, rule)) => rule(&call),
        None => call.gate("is a shell builtin not known inert"),
    }
}

/// One builtin command whose arguments are all static.
struct Call<'a> {
    name: &'a str,
    args: &'a [Word],
    values: &'a [&'a str],
}

impl Call<'_> {
    fn gate(&self, why: &str) -> Option<String> {
        Some(format!("`{}` {why}", self.name))
    }

    /// The leading `-x` / `+x` words.
    fn flags(&self) -> impl Iterator<Item = &&str> {
        self.values.iter().take_while(|v| is_flag(v))
    }

    /// The words after the leading flags.
    fn operands(&self) -> impl Iterator<Item = &&str> {
        self.values.iter().skip_while(|v| is_flag(v))
    }
}

fn is_flag(v: &str) -> bool {
    v.starts_with('-') || v.starts_with('+')
}

/// Why a builtin call is not inert, if it is not.
type Rule = fn(&Call) -> Option<String>;

/// The builtins that have inert forms, and the rule that tells them apart. Any other
/// builtin (not in [`INERT_BUILTINS`] or [`ELSEWHERE`]) is gated.
const RULES: &[(&str, Rule)] = &[
    ("printf", printf),
    ("set", set),
    ("shopt", shopt),
    ("declare", declare),
    ("typeset", declare),
    ("local", declare),
    ("readonly", declare),
    ("export", declare),
    ("unset", unset),
    ("read", read),
    ("mapfile", mapfile),
    ("readarray", mapfile),
    ("shift", |c| numeric_args(c.name, c.args)),
    // Listing forms only: any other changes what later commands run or see.
    ("umask", |c| listing_only(c, &["-S", "-p"])),
    ("alias", |c| listing_only(c, &["-p"])),
    ("enable", |c| listing_only(c, &["-a", "-p"])),
    ("trap", |c| listing_only(c, &["-l", "-p"])),
    ("hash", |c| listing_only(c, &["-r", "-l"])),
    ("history", |c| listing_only(c, &[])),
    ("ulimit", |c| listing_only(c, &["-a"])),
];

fn listing_only(c: &Call, listing: &[&str]) -> Option<String> {
    if c.values.iter().all(|v| listing.contains(v)) {
        None
    } else {
        c.gate("changes what later commands run or see")
    }
}

fn printf(c: &Call) -> Option<String> {
    c.values
        .iter()
        .take_while(|v| v.starts_with('-') && **v != "--")
        .any(|v| v.starts_with("-v"))
        .then(|| "`printf -v` assigns a variable (any name, `PATH` included)".to_string())
}

/// `set` flags that only change error handling and tracing.
const SET_FLAGS: &[&str] = &[
    "-e", "+e", "-u", "+u", "-x", "+x", "-f", "+f", "-C", "+C", "-eu", "-ue", "-ex", "-xe", "-eux",
    "-euo", "-eo",
];

/// `set -o NAME` options that are inert.
const SET_OPTIONS: &[&str] = &[
    "pipefail",
    "errexit",
    "nounset",
    "xtrace",
    "noclobber",
    "noglob",
];

fn set(c: &Call) -> Option<String> {
    let values = c.values;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        if v == "-o" || v == "+o" {
            i += 1;
            if !values.get(i).is_some_and(|o| SET_OPTIONS.contains(o)) {
                return c.gate("with an option not known inert");
            }
        } else if !SET_FLAGS.contains(&v) {
            return c.gate("with positional parameters or options not known inert");
        }
        // `-euo pipefail`: the cluster's `o` takes the next word.
        if v.ends_with('o') && v.len() > 2 {
            i += 1;
            if values.get(i) != Some(&"pipefail") {
                return c.gate("with an option not known inert");
            }
        }
        i += 1;
    }
    None
}

fn shopt(c: &Call) -> Option<String> {
    c.flags()
        .any(|f| f.contains('s') || f.contains('u'))
        .then(|| "`shopt` changes how the shell parses or expands".to_string())
}

/// `declare`, `typeset`, `local`, `readonly`, `export`.
fn declare(c: &Call) -> Option<String> {
    for f in c.flags() {
        let ok = match c.name {
            "export" => *f == "-p",
            _ => f.len() > 1 && f[1..].chars().all(|ch| "rpfFg".contains(ch)) && f.starts_with('-'),
        };
        if !ok {
            return c.gate(&format!(
                "with {f} (arithmetic, references, arrays or export)"
            ));
        }
    }
    // Names without a value (`export FOO`, `declare x`); `-p` only prints them.
    if c.flags().any(|f| f.contains('p')) {
        return None;
    }
    c.operands().find_map(|n| {
        if c.name == "export" {
            env_gate(n, None).filter(|_| !crate::policy::env::is_inert_name(n))
        } else {
            variable_gate(n)
        }
    })
}

fn unset(c: &Call) -> Option<String> {
    if let Some(f) = c.flags().find(|f| !matches!(**f, "-v" | "-f")) {
        return c.gate(&format!("with {f}"));
    }
    c.operands().find_map(|n| variable_gate(n))
}

fn read(c: &Call) -> Option<String> {
    let values = c.values;
    let mut i = 0;
    while i < values.len() && values[i].starts_with('-') {
        let f = values[i];
        if matches!(f, "-d" | "-n" | "-N" | "-p" | "-t" | "-u" | "-a") {
            if f == "-a" {
                if let Some(why) = values.get(i + 1).and_then(|n| variable_gate(n)) {
                    return Some(why);
                }
            }
            i += 2;
            continue;
        }
        if !f[1..].chars().all(|ch| "rs".contains(ch)) {
            return c.gate(&format!("with {f}"));
        }
        i += 1;
    }
    values[i.min(values.len())..]
        .iter()
        .find_map(|n| variable_gate(n))
}

/// `mapfile`, `readarray`.
fn mapfile(c: &Call) -> Option<String> {
    if c.flags().any(|f| f.contains('C')) {
        return c.gate("with a callback (-C runs code)");
    }
    c.values
        .last()
        .filter(|n| !n.starts_with('-'))
        .and_then(|n| variable_gate(n))
}

/// Builtins tree-sitter gives their own node (`[[`, `let`, `coproc`, ...), beyond
/// [`super::SHELL_BUILTINS`].
const EXTRA: &[&str] = &[
    "[[",
    "alias",
    "bind",
    "compgen",
    "complete",
    "compopt",
    "coproc",
    "disown",
    "enable",
    "fc",
    "getopts",
    "hash",
    "history",
    "let",
    "local",
    "mapfile",
    "popd",
    "pushd",
    "readarray",
    "readonly",
    "shopt",
    "suspend",
    "trap",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// Is `name` in [`super::SHELL_BUILTINS`] or [`EXTRA`]? A hash set built once: every
/// segment asks, and most names (`cat`, `grep`) are in neither list.
fn is_builtin_name(name: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| super::SHELL_BUILTINS.iter().chain(EXTRA).copied().collect())
        .contains(name)
}

fn numeric_args(name: &str, args: &[Word]) -> Option<String> {
    let ok = args.len() <= 1
        && args
            .iter()
            .all(|w| w.value.as_deref().is_some_and(is_integer));
    (!ok).then(|| format!("`{name}` with an argument that is not a literal number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sets answer as the lists do.
    #[test]
    fn builtin_sets_match_the_lists() {
        use crate::policy::shell::{is_shell_builtin, SHELL_BUILTINS};
        for name in SHELL_BUILTINS.iter().chain(EXTRA) {
            assert!(is_builtin_name(name), "{name}");
            assert_eq!(
                is_shell_builtin(name),
                SHELL_BUILTINS.contains(name),
                "{name}"
            );
        }
        for name in ["cat", "[[[", "", "Echo", "echo ", "unset"] {
            assert_eq!(is_builtin_name(name), EXTRA.contains(&name), "{name}");
            assert!(!is_shell_builtin(name), "{name}");
        }
    }

    /// A rule reaches its builtin only if the name is a builtin, is not already inert or
    /// handled elsewhere, and is listed once (a second row would be dead).
    #[test]
    fn every_rule_is_reachable() {
        for (i, (name, _)) in RULES.iter().enumerate() {
            assert!(
                crate::policy::shell::SHELL_BUILTINS.contains(name) || EXTRA.contains(name),
                "{name} is not a builtin"
            );
            assert!(
                !INERT_BUILTINS.contains(name) && !ELSEWHERE.contains(name),
                "{name} never reaches its rule"
            );
            assert!(
                !RULES[..i].iter().any(|(n, _)| n == name),
                "{name} is listed twice"
            );
        }
    }
}
