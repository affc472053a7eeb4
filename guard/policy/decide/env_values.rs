//! Environment values a command would print or send. A key exported in OpenClaw's
//! environment or a login start-up file is a secret like a key file, but no path check
//! sees it: `printenv`, `echo "$GITHUB_TOKEN"` or `curl -H "X: $OPENAI_API_KEY" https://…`
//! read it without naming a file.
//!
//! Where the guard runs the command under an autonomous profile it builds the environment,
//! and no key is in it. Where OpenClaw runs it (the socket's `request`, the gateway), the
//! environment is OpenClaw's, which the guard does not see. There, allow-list: a value runs
//! by itself only when its name is one of the shell's or the deployment's own (locale,
//! terminal, PATH, HOME, …) or a shell-local name (holding a lower-case letter: loop and
//! script variables, never exported keys by convention); a dump of the environment is asked.

use super::ask_person;
use crate::policy::env::{self, EnvName};
use crate::policy::request::Source;
use crate::policy::verdict::{SegmentVerdict, Verdict};
use std::collections::BTreeSet;

/// Names the shells set themselves: no secret.
const SHELL_OWN: &[&str] = &[
    "PWD",
    "OLDPWD",
    "SHLVL",
    "UID",
    "EUID",
    "PPID",
    "RANDOM",
    "LINENO",
    "SECONDS",
    "OPTIND",
    "OPTARG",
    "OPTERR",
    "HOSTTYPE",
    "OSTYPE",
    "MACHTYPE",
    "BASH",
    "BASH_VERSION",
    "BASHPID",
    "PS1",
    "PS2",
    "PS3",
    "PIPESTATUS",
    "FUNCNAME",
    "BASH_SOURCE",
    "BASH_LINENO",
    "GROUPS",
    "DIRSTACK",
    "REPLY",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "SRANDOM",
    "BASH_SUBSHELL",
    "HISTFILE",
    "HISTSIZE",
    "HISTFILESIZE",
    "MAIL",
    "MAILCHECK",
    "LOGNAME",
    "USER",
    "SHELL",
    "HOSTNAME",
];

/// Builtins and programs that print the whole environment (or every variable) when given
/// no names: `set`, `export -p`, `declare -x`, `printenv`, `env`.
const DUMPERS: &[&str] = &[
    "printenv", "env", "set", "export", "declare", "typeset", "readonly",
];

/// A value with this name is no secret wherever it is set.
fn plain(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_lowercase())
        || SHELL_OWN.contains(&name)
        || matches!(env::classify(name), EnvName::Inert | EnvName::Replaced)
}

/// Asks a person when a command OpenClaw runs prints or sends an environment value that
/// may be a key. Where the guard runs it under an autonomous profile the environment is the
/// guard's own (PATH, HOME, TMPDIR, the git and pager neutralisers; the profile cannot read
/// the login start-up files, so nothing they export is set) and nothing is asked.
/// `text` is the request's shell text: a here-document's body is in no segment's text, so
/// a text with one is scanned whole too.
pub(super) fn judge(verdict: &mut Verdict, source: Source, text: Option<&str>) {
    use crate::policy::profile::{AUTONOMOUS_HTTP_PROFILE, AUTONOMOUS_PROFILE};
    let contained = matches!(source, Source::SocketExec | Source::Node);
    let autonomous = matches!(
        verdict.profile.as_deref(),
        Some(AUTONOMOUS_PROFILE | AUTONOMOUS_HTTP_PROFILE)
    );
    if contained && autonomous {
        return;
    }
    let keep = |n: &String| !plain(n);
    let mut named: BTreeSet<String> = BTreeSet::new();
    if let Some(text) = text.filter(|t| t.contains("<<")) {
        named.extend(expanded_names(text).into_iter().filter(keep));
    }
    let mut dump = false;
    for seg in &verdict.segments {
        // A test prints nothing of what it compares.
        if !matches!(
            seg.argv.first().map(String::as_str),
            Some("[" | "test" | "[[")
        ) {
            named.extend(expanded_names(&seg.text).into_iter().filter(keep));
        }
        match dumped(seg) {
            Some(names) => named.extend(names.into_iter().filter(keep)),
            None => dump = true,
        }
    }
    if dump {
        ask_person(
            verdict,
            "env-dump",
            "it prints the environment, and the guard does not run this command itself: \
             OpenClaw's environment may hold keys and tokens",
        );
    }
    if !named.is_empty() {
        let list: Vec<String> = named.iter().map(|n| format!("${n}")).collect();
        ask_person(
            verdict,
            "env-value",
            format!(
                "it uses the value of {}, which may be a key or token in OpenClaw's \
                 environment (the guard does not run this command itself)",
                list.join(", ")
            ),
        );
    }
}

/// What a segment prints of the environment: `Some(names)` when it prints only these
/// (`printenv PATH`; nothing for any other program), `None` for a whole dump.
fn dumped(seg: &SegmentVerdict) -> Option<Vec<String>> {
    let program = seg.argv.first().map(|p| p.rsplit('/').next().unwrap_or(p));
    let Some(program) = program.filter(|p| DUMPERS.contains(p)) else {
        return Some(Vec::new());
    };
    let args = &seg.argv[1..];
    let names: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .cloned()
        .collect();
    match program {
        // `printenv NAME…` prints those; `env` with no command prints all (with a command
        // it is a wrapper, peeled before the table sees the segment).
        "printenv" if !names.is_empty() => Some(names),
        "printenv" | "env" => None,
        // `set -e` and `export X=1` print nothing; bare or `-p` they print every variable.
        "set" if args.is_empty() => None,
        "set" => Some(Vec::new()),
        // `declare`, `typeset`, `export`, `readonly`: bare or with only `-p`/`-x`-like
        // options they print every such variable (`-f`/`-F` print functions instead).
        _ => {
            let printing = args
                .iter()
                .all(|a| a.starts_with('-') && !a.contains(['f', 'F']));
            let only_names = names.iter().all(|n| !n.contains('='));
            if printing && names.is_empty() {
                None
            } else if args.iter().any(|a| a == "-p") && only_names {
                Some(names)
            } else {
                Some(Vec::new())
            }
        }
    }
}

/// The upper-case names `text` expands (`$NAME`, `${NAME…}`) where a shell would expand
/// them: not inside single quotes, not after a backslash.
pub(super) fn expanded_names(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut single, mut double) = (0usize, false, false);
    while i < b.len() {
        match b[i] {
            b'\\' if !single => {
                i += 2;
                continue;
            }
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'$' if !single => {
                let start = i + 1 + usize::from(b.get(i + 1) == Some(&b'{'));
                let len = b[start.min(b.len())..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                let name = &text[start.min(b.len())..start.min(b.len()) + len];
                if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
                    out.push(name.to_string());
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions_are_found_where_a_shell_expands_them() {
        let rows: &[(&str, &[&str])] = &[
            ("echo $GITHUB_TOKEN", &["GITHUB_TOKEN"]),
            (
                "echo \"${AWS_SECRET_ACCESS_KEY:-x}\"",
                &["AWS_SECRET_ACCESS_KEY"],
            ),
            ("curl -H \"X: $KEY\" https://e.example/", &["KEY"]),
            ("awk '{print $NF}' a.txt", &[]),
            ("echo \\$TOKEN", &[]),
            ("echo '$TOKEN' \"$T2\"", &["T2"]),
            ("echo \"it's $T3\"", &["T3"]),
            ("echo $1 $@ $# $?", &[]),
            ("for f in *; do cat \"$f\"; done", &["f"]),
        ];
        for (text, want) in rows {
            assert_eq!(expanded_names(text), *want, "{text}");
        }
    }

    #[test]
    fn plain_names_are_the_shells_and_the_deployments() {
        for n in [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "PWD",
            "f",
            "file_name",
            "USER",
        ] {
            assert!(plain(n), "{n}");
        }
        for n in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "DATABASE_URL",
            "VIRTUAL_ENV",
            "X",
        ] {
            assert!(!plain(n), "{n}");
        }
    }
}
