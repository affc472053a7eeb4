//! Shell builtins in their inert forms. A builtin runs inside the shell, so it can change
//! what every later command is (`alias`, `hash -p`, `enable -f`), plant code (`trap`,
//! `complete -C`, `PROMPT_COMMAND` through `declare`), rebind any variable (`printf -v`,
//! `read`, `declare -n`) or evaluate arithmetic; only the forms listed here are inert.

use super::inert::{env_gate, is_integer, test_args_gate, variable_gate};
use super::{Segment, Word};

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
    if name.contains('/') || !super::SHELL_BUILTINS.contains(&name) && !EXTRA.contains(&name) {
        return None;
    }
    if !runs_as_builtin(seg) || INERT_BUILTINS.contains(&name) || ELSEWHERE.contains(&name) {
        if matches!(name, "exit" | "return") {
            return numeric_args(name, &seg.argv[1..]);
        }
        return None;
    }
    let args = &seg.argv[1..];
    if matches!(name, "test" | "[" | "[[") {
        // String and file tests of unknown words are inert; arithmetic is not.
        return test_args_gate(args);
    }
    let values: Option<Vec<&str>> = args.iter().map(|w| w.value.as_deref()).collect();
    let gate = |why: &str| Some(format!("`{name}` {why}"));
    let Some(values) = values else {
        return gate("with words not known before it runs");
    };
    let flags = || {
        values
            .iter()
            .take_while(|v| v.starts_with('-') || v.starts_with('+'))
    };
    let operands = || {
        values
            .iter()
            .skip_while(|v| v.starts_with('-') || v.starts_with('+'))
    };
    match name {
        "printf" => values
            .iter()
            .take_while(|v| v.starts_with('-') && **v != "--")
            .any(|v| v.starts_with("-v"))
            .then(|| "`printf -v` assigns a variable (any name, `PATH` included)".to_string()),
        "set" => {
            let mut i = 0;
            while i < values.len() {
                let v = values[i];
                match v {
                    "-e" | "+e" | "-u" | "+u" | "-x" | "+x" | "-f" | "+f" | "-C" | "+C" | "-eu"
                    | "-ue" | "-ex" | "-xe" | "-eux" | "-euo" | "-eo" => {}
                    "-o" | "+o" => {
                        i += 1;
                        if !values.get(i).is_some_and(|o| {
                            matches!(
                                *o,
                                "pipefail"
                                    | "errexit"
                                    | "nounset"
                                    | "xtrace"
                                    | "noclobber"
                                    | "noglob"
                            )
                        }) {
                            return gate("with an option not known inert");
                        }
                    }
                    _ => return gate("with positional parameters or options not known inert"),
                }
                if v.ends_with('o') && v.len() > 2 {
                    i += 1;
                    if values.get(i) != Some(&"pipefail") {
                        return gate("with an option not known inert");
                    }
                }
                i += 1;
            }
            None
        }
        "shopt" => flags()
            .any(|f| f.contains('s') || f.contains('u'))
            .then(|| "`shopt` changes how the shell parses or expands".to_string()),
        "declare" | "typeset" | "local" | "readonly" | "export" => {
            for f in flags() {
                let ok = match name {
                    "export" => *f == "-p",
                    _ => {
                        f.len() > 1
                            && f[1..].chars().all(|c| "rpfFg".contains(c))
                            && f.starts_with('-')
                    }
                };
                if !ok {
                    return gate(&format!(
                        "with {f} (arithmetic, references, arrays or export)"
                    ));
                }
            }
            // Names without a value (`export FOO`, `declare x`); `-p` only prints them.
            if flags().any(|f| f.contains('p')) {
                return None;
            }
            for n in operands() {
                let why = if name == "export" {
                    env_gate(n, None).filter(|_| !crate::policy::env::is_inert_name(n))
                } else {
                    variable_gate(n)
                };
                if why.is_some() {
                    return why;
                }
            }
            None
        }
        "unset" => {
            for f in flags() {
                if !matches!(*f, "-v" | "-f") {
                    return gate(&format!("with {f}"));
                }
            }
            operands().find_map(|n| variable_gate(n))
        }
        "read" => {
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
                if !f[1..].chars().all(|c| "rs".contains(c)) {
                    return gate(&format!("with {f}"));
                }
                i += 1;
            }
            values[i.min(values.len())..]
                .iter()
                .find_map(|n| variable_gate(n))
        }
        "mapfile" | "readarray" => {
            if flags().any(|f| f.contains('C')) {
                return gate("with a callback (-C runs code)");
            }
            values
                .last()
                .filter(|n| !n.starts_with('-'))
                .and_then(|n| variable_gate(n))
        }
        "shift" => numeric_args(name, args),
        "umask" | "alias" | "enable" | "trap" | "hash" | "history" | "ulimit" => {
            // Listing forms only: any other changes what later commands run or see.
            let listing: &[&str] = match name {
                "umask" => &["-S", "-p"],
                "alias" => &["-p"],
                "enable" => &["-a", "-p"],
                "trap" => &["-l", "-p"],
                "hash" => &["-r", "-l"],
                "ulimit" => &["-a"],
                _ => &[],
            };
            if values.iter().all(|v| listing.contains(v)) {
                None
            } else {
                gate("changes what later commands run or see")
            }
        }
        _ => gate("is a shell builtin not known inert"),
    }
}

/// Builtins tree-sitter gives their own node (`[[`, `let`, `coproc`, ...), beyond
/// [`super::SHELL_BUILTINS`].
const EXTRA: &[&str] = &[
    "[[",
    "unset",
    "unalias",
    "wait",
    "compopt",
    "let",
    "coproc",
    "mapfile",
    "readarray",
    "fc",
    "history",
    "bind",
    "complete",
    "compgen",
    "compopt",
    "enable",
    "getopts",
    "suspend",
    "disown",
    "pushd",
    "popd",
    "shopt",
    "hash",
    "trap",
    "ulimit",
    "umask",
    "alias",
    "typeset",
    "readonly",
    "local",
];

fn numeric_args(name: &str, args: &[Word]) -> Option<String> {
    let ok = args.len() <= 1
        && args
            .iter()
            .all(|w| w.value.as_deref().is_some_and(is_integer));
    (!ok).then(|| format!("`{name}` with an argument that is not a literal number"))
}
