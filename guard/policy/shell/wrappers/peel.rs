//! Peeling one wrapper off a command: one step per wrapper family, each reading the
//! wrapper's option grammar (`wrapper_args`) to find where the command it runs starts.

use super::super::walk::{Analyser, Env};
use super::super::wrapper_args::{
    env_split_string, has, is_identifier, options, quote, value_of, wrapper_opts, Seen, SHELL_OPTS,
};
use super::super::{Redirect, RedirectKind, Stdin, Word};
use super::SHELLS;

/// What to do after looking at argv[0].
pub(super) enum Step {
    /// argv[0] is the command: stop peeling.
    Done,
    /// A wrapper was peeled: continue with this argv.
    Next(Vec<Word>),
    /// Handled entirely (re-parsed text, or a problem was recorded).
    Handled,
}

/// A peeling step, or why the wrapper cannot be analysed (recorded as a problem).
type Peeled = Result<Step, String>;

/// Wrappers that run their operands as the command once their options are skipped.
const PASSTHROUGH: &[&str] = &[
    "nice", "nohup", "stdbuf", "setsid", "ionice", "time", "command", "exec",
];

impl Analyser<'_> {
    /// Peels one wrapper off `argv` (whose argv[0] is `base`).
    pub(super) fn peel(&mut self, base: &str, argv: &[Word], env: &mut Env, text: &str) -> Step {
        let rest = &argv[1..];
        let peeled = match base {
            "env" => self.peel_env(rest, env),
            "sudo" | "doas" => self.peel_sudo(base, rest, env),
            "timeout" => peel_timeout(rest, env),
            "busybox" => peel_busybox(rest, env),
            "xargs" => peel_xargs(rest, env),
            "eval" => Ok(self.peel_eval(rest, env)),
            _ if PASSTHROUGH.contains(&base) => self.peel_passthrough(base, rest, env),
            _ if SHELLS.contains(&base) => {
                let name = argv[0].value.as_deref().unwrap_or(base);
                let dialect = super::super::Dialect::of_program(self.resolve(name).2.as_deref());
                self.peel_shell(base, rest, env, dialect)
            }
            _ => Ok(Step::Done),
        };
        peeled.unwrap_or_else(|why| {
            self.problem(text, why, env);
            Step::Handled
        })
    }

    /// `env [-i] [-u NAME] [-C DIR] [-S TEXT] [NAME=value…] [COMMAND…]`.
    fn peel_env(&mut self, rest: &[Word], env: &mut Env) -> Peeled {
        let (idx, seen) = options(rest, wrapper_opts("env"))?;
        env.wrappers.push("env".into());
        // `env -` is `env -i`.
        let dash = rest.get(idx).and_then(|w| w.value.as_deref()) == Some("-");
        let cleared = has(&seen, &["-i", "--ignore-environment"]) || dash;
        let unset = has(&seen, &["-u", "--unset"]);
        let unset_path = seen
            .iter()
            .any(|(n, v)| matches!(n.as_str(), "-u" | "--unset") && v.as_deref() == Some("PATH"));
        if let Some(dir) = value_of(&seen, &["-C", "--chdir"]) {
            self.change_dir(Some(dir));
        }
        let start = idx + usize::from(dash);
        let std_path = std_path_assignment(rest, start);
        let i = skip_assignments(rest, start, env, &mut self.gates, std_path);
        // A cleared or thinned environment drops the guard's protective variables (git's
        // settings, the pager): inert only for a program that reads none of them.
        let env_free = rest.get(i..).is_some_and(env_free);
        let split = value_of(&seen, &["-S", "--split-string"]).is_some();
        if (cleared || unset) && (!env_free || split) {
            self.gate(Some(
                "`env` clears or unsets variables of the command's environment".into(),
            ));
        }
        // PATH set to the system directories, or cleared (execvp then searches the
        // standard PATH): the next program is looked up there.
        if std_path || ((cleared || unset_path) && !split) {
            env.std_path = true;
            env.std_env_path = true;
        }
        let splits = seen
            .iter()
            .filter(|(n, _)| n == "-S" || n == "--split-string")
            .count();
        if splits > 1 {
            return Err("env with more than one -S".into());
        }
        if let Some(split) = value_of(&seen, &["-S", "--split-string"]) {
            return self.env_split(split, &rest[i..], env);
        }
        Ok(command_from(rest, i))
    }

    /// `env -S TEXT ARGS…`: TEXT is split into words that env itself parses next, as it does
    /// (options and `NAME=value` first, then the command), then ARGS follow.
    fn env_split(&mut self, split: &str, args: &[Word], env: &Env) -> Peeled {
        let mut joined = String::from("env ");
        for w in env_split_string(split)? {
            joined.push_str(&quote(&w));
            joined.push(' ');
        }
        for w in args {
            let v = w.value.as_deref().ok_or("env -S with non-static words")?;
            joined.push(' ');
            joined.push_str(&quote(v));
        }
        Ok(self.reparse(&joined, env, "env -S"))
    }

    /// `sudo`/`doas [OPTIONS] [NAME=value…] COMMAND…`: the command runs privileged.
    fn peel_sudo(&mut self, base: &str, rest: &[Word], env: &mut Env) -> Peeled {
        env.privileged = true;
        let (idx, _) = options(rest, wrapper_opts(base))?;
        env.wrappers.push(base.to_string());
        let i = skip_assignments(rest, idx, env, &mut self.gates, false);
        Ok(command_from(rest, i))
    }

    /// `nice`, `nohup`, `time`, `command`, `exec`, ... `[OPTIONS] COMMAND…`.
    fn peel_passthrough(&mut self, base: &str, rest: &[Word], env: &mut Env) -> Peeled {
        let (idx, seen) = options(rest, wrapper_opts(base))?;
        match base {
            // These forms print, or act on other processes: they run no command.
            "command" if has(&seen, &["-v", "-V"]) => return Ok(Step::Done),
            "ionice" if has(&seen, &["-p", "-P", "-u"]) => return Ok(Step::Done),
            // Bash looks the program up on the standard PATH (`getconf PATH`) instead; the
            // program's own environment keeps the agent's PATH.
            "command" if has(&seen, &["-p"]) => env.std_path = true,
            "time" => {
                if let Some(out) = value_of(&seen, &["-o", "--output"]) {
                    env.redirects.push(Redirect {
                        kind: RedirectKind::Write,
                        target: Word::literal(out),
                    });
                }
            }
            _ => {}
        }
        if idx >= rest.len() {
            return Ok(Step::Done);
        }
        env.wrappers.push(base.to_string());
        Ok(Step::Next(rest[idx..].to_vec()))
    }

    /// `eval WORDS…`: the words, joined, are shell text (not static: `eval` itself).
    fn peel_eval(&mut self, rest: &[Word], env: &Env) -> Step {
        let mut joined = String::new();
        for w in rest {
            let Some(v) = &w.value else {
                return Step::Done;
            };
            if !joined.is_empty() {
                joined.push(' ');
            }
            joined.push_str(v);
        }
        self.reparse(&joined, env, "eval")
    }

    /// `sh -c SCRIPT [ARG0 ARG1…]`, or a shell reading a here-document as its script.
    fn peel_shell(
        &mut self,
        shell: &str,
        rest: &[Word],
        env: &mut Env,
        dialect: super::super::Dialect,
    ) -> Peeled {
        let (idx, seen) = options(rest, &SHELL_OPTS)?;
        // The script is read by this shell, whatever read the text around it.
        env.dialect = dialect;
        if !has(&seen, &["-c"]) {
            let reads_stdin = idx >= rest.len() || has(&seen, &["-s"]);
            return match (&env.stdin, reads_stdin) {
                (Stdin::Here(Some(body)), true) => {
                    let body = body.clone();
                    env.stdin = Stdin::Inherited;
                    Ok(self.reparse(&body, env, &format!("{shell} <<here")))
                }
                (Stdin::Here(None), true) => {
                    Err("here-document fed to a shell is not static".into())
                }
                _ => Ok(Step::Done),
            };
        }
        if has(&seen, &["-i", "--rcfile", "--init-file", "--debugger"]) {
            // (A login shell, `sh -lc`, is how OpenClaw runs every command: its profile is
            // the user's, outside the workspace, so writing it is already gated.)
            self.gate(Some(format!(
                "`{shell}` started interactive or with a start-up file runs that file first"
            )));
        }
        let script = rest.get(idx).ok_or("shell -c without a command")?;
        let script = script.value.clone().ok_or("shell -c text is not static")?;
        // `sh -c SCRIPT ARG0 ARG1…`: the script's $0, $1… are those words.
        for (n, w) in rest.iter().skip(idx + 1).enumerate() {
            self.bind_word(&n.to_string(), w);
        }
        Ok(self.reparse(&script, env, &format!("{shell} -c")))
    }

    /// Analyses `inner` as shell text run by `wrapper`.
    fn reparse(&mut self, inner: &str, env: &Env, wrapper: &str) -> Step {
        let mut e = env.clone();
        e.wrappers.push(wrapper.to_string());
        e.depth += 1;
        self.text(inner, &e);
        Step::Handled
    }
}

/// Programs that read files or print facts and consult none of the variables the guard
/// adds to every unapproved run (`engine::git::protective_env`: git's settings, PAGER,
/// askpass): `env -i` in front of them drops nothing they use. They run no other program.
const ENV_FREE_READERS: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "od",
    "base64",
    "base32",
    "fold",
    "fmt",
    "paste",
    "join",
    "expand",
    "unexpand",
    "column",
    "date",
    "hexdump",
    "xxd",
    "grep",
    "egrep",
    "fgrep",
    "ls",
    "stat",
    "file",
    "du",
    "df",
    "echo",
    "printf",
    "true",
    "false",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "cksum",
    "comm",
    "cmp",
    "diff",
    "seq",
    "id",
    "whoami",
    "uname",
    "pwd",
];

/// Does the command `argv` read none of the guard's protective variables? `xargs` runs its
/// command with the environment it was given: it is env-free when that command is.
fn env_free(argv: &[Word]) -> bool {
    let reader = |w: &Word| {
        w.value
            .as_deref()
            .is_some_and(|n| ENV_FREE_READERS.contains(&n))
    };
    match argv.split_first() {
        Some((name, args)) if name.value.as_deref() == Some("xargs") => xargs_parse(args)
            .is_ok_and(|x| {
                xargs_command(x.command, x.replace.as_deref())
                    .first()
                    .is_some_and(reader)
            }),
        Some((name, _)) => reader(name),
        None => false,
    }
}

/// Does `env`'s assignment list (from `rest[i]`) set PATH to the standard system
/// directories only (`/bin`, `/usr/bin`, in either order), and PATH once? The program is
/// then looked up as `command -p` does (on Debian's merged /usr both are one directory).
fn std_path_assignment(rest: &[Word], i: usize) -> bool {
    let mut paths = assignments(rest, i).filter(|(k, _)| *k == "PATH");
    match (paths.next(), paths.next()) {
        (Some((_, v)), None) => {
            !v.is_empty() && v.split(':').all(|d| d == "/bin" || d == "/usr/bin")
        }
        _ => false,
    }
}

/// The leading `NAME=value` words of `rest[i..]`.
fn assignments(rest: &[Word], i: usize) -> impl Iterator<Item = (&str, &str)> {
    rest.get(i..).unwrap_or_default().iter().map_while(|w| {
        w.value
            .as_deref()?
            .split_once('=')
            .filter(|(k, _)| is_identifier(k))
    })
}

/// The command a wrapper runs from `rest[i]` on; none (`Done`) when nothing follows.
fn command_from(rest: &[Word], i: usize) -> Step {
    match rest.get(i..) {
        Some(cmd) if !cmd.is_empty() => Step::Next(cmd.to_vec()),
        _ => Step::Done,
    }
}

/// `timeout [OPTIONS] DURATION COMMAND…`.
fn peel_timeout(rest: &[Word], env: &mut Env) -> Peeled {
    let (idx, _) = options(rest, wrapper_opts("timeout"))?;
    // The duration, then the command.
    if idx + 1 >= rest.len() {
        return Ok(Step::Done);
    }
    env.wrappers.push("timeout".into());
    Ok(Step::Next(rest[idx + 1..].to_vec()))
}

/// `busybox APPLET ARGS…` runs APPLET.
fn peel_busybox(rest: &[Word], env: &mut Env) -> Peeled {
    let Some(first) = rest.first() else {
        return Ok(Step::Done);
    };
    match first.value.as_deref() {
        Some(applet) if !applet.starts_with('-') => {
            env.wrappers.push("busybox".into());
            Ok(Step::Next(rest.to_vec()))
        }
        Some(_) => Ok(Step::Done),
        None => Err("busybox applet is not static".into()),
    }
}

/// Most commands `xargs -P` may run at once in a command that runs by itself.
pub(in crate::policy::shell) const XARGS_MAX_PROCS: u32 = 4;

/// `xargs [OPTIONS] [COMMAND [ARGS…]]`: COMMAND with what xargs reads as unknown words.
fn peel_xargs(rest: &[Word], env: &mut Env) -> Peeled {
    let Xargs {
        command,
        replace,
        seen,
    } = xargs_parse(rest)?;
    if let Some(file) = value_of(&seen, &["-a", "--arg-file"]) {
        env.redirects.push(Redirect {
            kind: RedirectKind::Read,
            target: Word::literal(file),
        });
    }
    env.wrappers.push("xargs".into());
    // GNU xargs gives its commands /dev/null as stdin, and looks them up on its own PATH.
    env.stdin = Stdin::Inherited;
    env.std_path = env.std_env_path;
    Ok(Step::Next(xargs_command(command, replace.as_deref())))
}

/// `xargs ARGS` as read: the command it runs before any input, its replace string, the
/// options given.
pub(in crate::policy::shell) struct Xargs {
    /// The operands, or `echo` when there are none.
    pub command: Vec<Word>,
    /// `-I STR` / `-i` (`{}`).
    pub replace: Option<String>,
    pub seen: Seen,
}

/// Reads `xargs ARGS` (`rest`: the words after `xargs`) with its option grammar.
pub(in crate::policy::shell) fn xargs_parse(rest: &[Word]) -> Result<Xargs, String> {
    if xargs_attached_optional(rest) {
        return Err("xargs option with an attached optional value".into());
    }
    let (idx, seen) = options(rest, wrapper_opts("xargs"))?;
    // A fan-out wider than a few processes can take a container's whole pid budget before
    // any per-run limit bites; `-P 0` is "as many as possible".
    if let Some(p) = value_of(&seen, &["-P", "--max-procs"]) {
        if p.parse::<u32>()
            .map_or(true, |n| n == 0 || n > XARGS_MAX_PROCS)
        {
            return Err(format!(
                "xargs -P {p} runs more than {XARGS_MAX_PROCS} commands at once"
            ));
        }
    }
    let replace = value_of(&seen, &["-I", "--replace"])
        .map(str::to_string)
        .or_else(|| has(&seen, &["-i", "--replace"]).then(|| "{}".to_string()));
    let command = match rest.get(idx..) {
        Some(operands) if !operands.is_empty() => operands.to_vec(),
        _ => vec![Word::literal("echo")],
    };
    Ok(Xargs {
        command,
        replace,
        seen,
    })
}

/// Whether an option cluster of xargs ends in an attached optional value (`-l1`, `-ea`):
/// `-e`, `-i`, `-l` take a value only when attached, which ends the cluster; the option
/// parser does not model that, so such a command is not analysed.
fn xargs_attached_optional(rest: &[Word]) -> bool {
    let grammar = wrapper_opts("xargs");
    let mut words = rest.iter();
    while let Some(w) = words.next() {
        let Some(s) = w.value.as_deref() else { break };
        if s == "--" || !s.starts_with('-') || s == "-" {
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if !long.contains('=') && grammar.long_value.contains(&long) {
                words.next();
            }
            continue;
        }
        let body = &s[1..];
        let value_at = body.find(|c| grammar.short_value.contains(c));
        let optional_at = body.find(['e', 'i', 'l']);
        match (value_at, optional_at) {
            (_, Some(o)) if value_at.is_none_or(|v| o < v) && o + 1 < body.len() => return true,
            (Some(v), _) if v + 1 == body.len() => {
                words.next();
            }
            _ => {}
        }
    }
    false
}

/// The command xargs runs with unknown input: appended as an unknown word or, with a
/// replace string, every word that contains it unknown.
fn xargs_command(mut next: Vec<Word>, replace: Option<&str>) -> Vec<Word> {
    match replace {
        Some(r) => {
            for w in &mut next {
                if w.value.as_deref().is_none_or(|v| v.contains(r)) {
                    *w = Word::unknown(&w.source);
                }
            }
        }
        None => next.push(Word::unknown("<xargs input>")),
    }
    next
}

/// Skips the `NAME=value` words from `rest[i]` on (recording the names, as `env` and `sudo`
/// set them for the command, and a gate for each that is not inert); returns the index of
/// the first other word.
fn skip_assignments(
    rest: &[Word],
    mut i: usize,
    env: &mut Env,
    gates: &mut Vec<String>,
    std_path: bool,
) -> usize {
    for (k, v) in assignments(rest, i) {
        i += 1;
        // `env PATH=/usr/bin:/bin …`: the lookup is the standard one (`std_path_assignment`).
        if std_path && k == "PATH" {
            continue;
        }
        if let Some(why) = super::super::inert::env_gate(k, Some(v)) {
            if !gates.contains(&why) {
                gates.push(why);
            }
        }
        env.env_assignments.push(k.to_string());
    }
    i
}
