//! `echo WORDS | xargs CMD …` and `printf FORMAT WORDS | xargs CMD …`: what the builtin prints
//! is known (`words::printed`), so the words xargs reads are known too, and the xargs stage is
//! the one command it runs. GNU xargs runs CMD once even on empty input (with `-r`, not at
//! all: judging CMD alone is then the safe reading). Words are split at blanks and newlines;
//! quotes and backslashes, which xargs undoes, keep the input unknown, as do the options that
//! change how the input is read or CMD run (`-I`, `-L`, `-d`, `-E`, `-a`, `-s`, `-p`, ...).

use super::super::walk::{child_by_field, Analyser, Env};
use super::super::wrappers::{xargs_parse, Xargs};
use super::super::{is_shell_builtin, Stdin, Word};
use super::plain_words;
use tree_sitter::Node;

/// Longest known input modelled: far below xargs' command-line limit, so one run takes all.
const MAX_INPUT: usize = 4096;

/// Builtins that are also programs xargs can run; any other builtin name is not a program
/// (`xargs cd /` fails), so it is not analysed as the builtin.
const ALSO_PROGRAMS: &[&str] = &[
    "echo", "printf", "true", "false", "test", "[", "pwd", "kill",
];

impl Analyser<'_> {
    /// Analyses `left | right` when `left` prints known text and `right` is `xargs`: `left`
    /// as it is, `right` as the command xargs runs with those words (or, when they are not
    /// modelled, as any xargs stage). False, with nothing analysed, for other pairs.
    pub(in crate::policy::shell) fn printed_to_xargs(
        &mut self,
        left: Node,
        right: Node,
        src: &str,
        env: &Env,
    ) -> bool {
        let name = child_by_field(right, "name").map(|c| &src[c.byte_range()]);
        if name != Some("xargs")
            || self.functions.contains("xargs")
            || !self.system_program("xargs")
        {
            return false;
        }
        let Some(input) = self.printed_by(left, src) else {
            return false;
        };
        self.statement(left, src, env);
        let piped = env.with_stdin(Stdin::Pipe);
        if !self.xargs_with_input(right, &input, src, &piped) {
            self.statement(right, src, &piped);
        }
        true
    }

    /// The xargs stage `node` reading `input`: false when it is not modelled.
    fn xargs_with_input(&mut self, node: Node, input: &str, src: &str, env: &Env) -> bool {
        let Some(words) = plain_words(self, node, src, env) else {
            return false;
        };
        let Some(Ok(Xargs {
            mut command,
            replace: None,
            seen,
        })) = words.get(1..).map(xargs_parse)
        else {
            return false;
        };
        let Some(items) = items(input, &seen) else {
            return false;
        };
        let Some(name) = command.first().and_then(|w| w.value.clone()) else {
            return false;
        };
        let shell_only = is_shell_builtin(&name) && !ALSO_PROGRAMS.contains(&name.as_str());
        if shell_only || self.functions.contains(&name) {
            return false;
        }
        command.extend(items.iter().map(|w| Word::literal(w)));
        let mut e = env.clone();
        e.wrappers.push("xargs".into());
        // GNU xargs gives its command /dev/null as stdin.
        e.stdin = Stdin::Inherited;
        self.simple(command, &e, &src[node.byte_range()]);
        true
    }
}

/// The words xargs, given the options `seen`, hands its command from `input` in one run;
/// `None` when that is not modelled.
fn items(input: &str, seen: &[(String, Option<String>)]) -> Option<Vec<String>> {
    let count = |v: &Option<String>| -> Option<usize> {
        v.as_deref()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))?
            .parse()
            .ok()
    };
    if input.len() > MAX_INPUT
        || input
            .bytes()
            .any(|b| b.is_ascii_control() && b != b'\n' && b != b'\t')
    {
        return None;
    }
    let mut null = false;
    let mut max_args = None;
    for (name, value) in seen {
        match name.as_str() {
            "-0" | "--null" => null = true,
            "-r" | "--no-run-if-empty" | "-t" | "--verbose" | "-x" | "--exit" => {}
            "-P" | "--max-procs" => {
                count(value)?;
            }
            "-n" | "--max-args" => max_args = Some(count(value).filter(|n| *n > 0)?),
            _ => return None,
        }
    }
    let items: Vec<String> = if null {
        // One item, up to the end of the input (it holds no NUL).
        (!input.is_empty())
            .then(|| input.to_string())
            .into_iter()
            .collect()
    } else if input.contains(['\'', '"', '\\']) {
        return None;
    } else {
        input
            .split([' ', '\t', '\n'])
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    if max_args.is_some_and(|n| items.len() > n) {
        return None;
    }
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::super::super::wrappers::xargs_parse;
    use super::super::super::Word;
    use super::items;
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// The model's words for `input` under xargs options `opts`, read as the walk reads them.
    fn modelled(input: &str, opts: &[&str]) -> Option<Vec<String>> {
        let words: Vec<Word> = opts.iter().map(|o| Word::literal(o)).collect();
        let x = xargs_parse(&words).ok()?;
        x.replace.is_none().then_some(())?;
        items(input, &x.seen)
    }

    /// What the real GNU xargs runs: `printf '<%s>'` with its arguments.
    fn real(input: &str, opts: &[&str]) -> String {
        let mut child = Command::new("xargs")
            .args(opts)
            .args(["printf", "<%s>"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run xargs");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write");
        drop(stdin);
        let out = child.wait_with_output().expect("xargs output");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn items_are_what_gnu_xargs_passes() {
        let cases: &[(&str, &[&str])] = &[
            ("\n", &[]),
            ("", &[]),
            (" \t\n \n", &[]),
            ("a b\n", &[]),
            ("a\tb\n\nc  d\n", &[]),
            ("-rf /\n", &[]),
            ("_ a -- x\n", &[]),
            ("a b\n", &["-r"]),
            ("\n", &["-r"]),
            ("\n", &["--no-run"]),
            ("a\n", &["-n", "1"]),
            ("a b\n", &["-n2", "-P4", "-t", "-x"]),
            ("a b\n", &["--max-args=2", "--verbose"]),
            ("\n", &["-0"]),
            ("a b\nc", &["-0"]),
            ("", &["-0"]),
            ("", &["-r0"]),
        ];
        for (input, opts) in cases {
            let got = modelled(input, opts).expect("modelled");
            let want = real(input, opts);
            // `-r` on empty input runs nothing; the walk judges the command alone then.
            if want.is_empty() {
                let r = opts.iter().any(|o| o.starts_with("-r") || *o == "--no-run");
                assert!(got.is_empty() && r, "{input:?} {opts:?}");
                continue;
            }
            // (printf with no argument prints its format once.)
            let printed: String = if got.is_empty() {
                "<>".into()
            } else {
                got.iter().map(|i| format!("<{i}>")).collect()
            };
            assert_eq!(printed, want, "{input:?} {opts:?}");
        }
    }

    #[test]
    fn what_xargs_reads_otherwise_is_not_modelled() {
        for (input, opts) in [
            ("'a b'\n", &[][..]),
            ("\"a\"\n", &[]),
            ("a\\ b\n", &[]),
            ("a\r\n", &[]),
            ("a b\n", &["-n", "1"]),
            ("a\n", &["-n", "0"]),
            ("a\n", &["-I{}"]),
            ("a\n", &["-i"]),
            ("a\n", &["-L", "1"]),
            ("a\n", &["-d", "x"]),
            ("a\n", &["-E", "a"]),
            ("a\n", &["-a", "f"]),
            ("a\n", &["-s", "10"]),
            ("a\n", &["-p"]),
            ("a\n", &["--process-slot-var=X"]),
        ] {
            assert_eq!(modelled(input, opts), None, "{input:?} {opts:?}");
        }
    }
}
