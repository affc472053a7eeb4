//! Simple commands: peel wrappers (`env`, `sudo`, `sh -c`, `xargs`, `timeout`, ...) until the
//! command that really runs is in argv[0], resolve it (`path_lookup`), track `cd`, and split
//! `find -exec` into its own segment. Option grammars are in `wrapper_args`.

use super::path_lookup::trusted_location;
use super::walk::{Analyser, Env};
use super::wrapper_args::{find_execs, has, is_identifier, options, quote, value_of, Opts};
use super::Segment;
use super::{basename, Redirect, RedirectKind, Stdin, Word};

/// Most wrappers peeled off one command (`nice nice nice …` cannot loop forever).
const MAX_WRAPPERS: usize = 32;

/// Shells whose `-c TEXT` is analysed as shell text.
pub const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash"];

/// What to do after looking at argv[0].
enum Step {
    /// argv[0] is the command: stop peeling.
    Done,
    /// A wrapper was peeled: continue with this argv.
    Next(Vec<Word>),
    /// Handled entirely (re-parsed text, or a problem was recorded).
    Handled,
}

impl Analyser<'_> {
    /// A simple command: peel wrappers, then record the segment(s).
    pub(crate) fn simple(&mut self, argv: Vec<Word>, env: &Env, text: &str) {
        let mut env = env.clone();
        let mut argv = argv;
        for _ in 0..MAX_WRAPPERS {
            if argv.is_empty() {
                let seg = self.segment_base(text, argv, &env);
                self.push(seg);
                return;
            }
            let Some(name) = argv[0].value.clone() else {
                self.problem(text, "the command name is not static", &env);
                return;
            };
            let (trusted, _, _) = self.resolve(&name);
            if !trusted || (self.functions.contains(&name) && !name.contains('/')) {
                break;
            }
            match self.peel(basename(&name), &argv, &mut env, text) {
                Step::Done => break,
                Step::Handled => return,
                Step::Next(next) => argv = next,
            }
        }
        self.finish_segment(argv, &env, text);
    }

    /// Peels one wrapper off `argv` (whose argv[0] is `base`).
    fn peel(&mut self, base: &str, argv: &[Word], env: &mut Env, text: &str) -> Step {
        let rest = &argv[1..];
        let parsed = |opts: Opts| options(rest, &opts);
        let wrap = |env: &mut Env, name: &str| env.wrappers.push(name.to_string());
        match base {
            "env" => {
                let (idx, seen) = match parsed(Opts {
                    short_value: "uCS",
                    long_value: &["unset", "chdir", "split-string"],
                }) {
                    Ok(v) => v,
                    Err(e) => return self.fail(text, &e, env),
                };
                wrap(env, "env");
                if has(&seen, &["-i", "--ignore-environment", "-u", "--unset"])
                    || rest.get(idx).and_then(|w| w.value.as_deref()) == Some("-")
                {
                    self.gate(Some(
                        "`env` clears or unsets variables of the command's environment".into(),
                    ));
                }
                if let Some(dir) = value_of(&seen, &["-C", "--chdir"]) {
                    self.change_dir(Some(dir));
                }
                let mut i = idx;
                // `env -` is `env -i`.
                if rest.get(i).and_then(|w| w.value.as_deref()) == Some("-") {
                    i += 1;
                }
                i = skip_assignments(rest, i, env, &mut self.gates);
                if let Some(split) = value_of(&seen, &["-S", "--split-string"]) {
                    let mut joined = split.to_string();
                    for w in &rest[i..] {
                        match &w.value {
                            Some(v) => {
                                joined.push(' ');
                                joined.push_str(&quote(v));
                            }
                            None => return self.fail(text, "env -S with non-static words", env),
                        }
                    }
                    return self.reparse(&joined, env, "env -S");
                }
                if i >= rest.len() {
                    return Step::Done;
                }
                Step::Next(rest[i..].to_vec())
            }
            "sudo" | "doas" => {
                let opts = if base == "sudo" {
                    Opts {
                        short_value: "ughpCDrtUT",
                        long_value: &[
                            "user",
                            "group",
                            "host",
                            "prompt",
                            "close-from",
                            "chdir",
                            "role",
                            "type",
                            "other-user",
                            "command-timeout",
                        ],
                    }
                } else {
                    Opts {
                        short_value: "uC",
                        long_value: &[],
                    }
                };
                env.privileged = true;
                let (idx, _) = match parsed(opts) {
                    Ok(v) => v,
                    Err(e) => return self.fail(text, &e, env),
                };
                wrap(env, base);
                let mut i = idx;
                i = skip_assignments(rest, i, env, &mut self.gates);
                if i >= rest.len() {
                    return Step::Done;
                }
                Step::Next(rest[i..].to_vec())
            }
            "nice" | "nohup" | "stdbuf" | "setsid" | "ionice" | "time" | "command" | "exec" => {
                let opts = match base {
                    "nice" => Opts {
                        short_value: "n",
                        long_value: &["adjustment"],
                    },
                    "stdbuf" => Opts {
                        short_value: "ioe",
                        long_value: &["input", "output", "error"],
                    },
                    "ionice" => Opts {
                        short_value: "cn",
                        long_value: &["class", "classdata"],
                    },
                    "time" => Opts {
                        short_value: "of",
                        long_value: &["output", "format"],
                    },
                    "exec" => Opts {
                        short_value: "a",
                        long_value: &[],
                    },
                    _ => Opts {
                        short_value: "",
                        long_value: &[],
                    },
                };
                let (idx, seen) = match parsed(opts) {
                    Ok(v) => v,
                    Err(e) => return self.fail(text, &e, env),
                };
                if base == "command" && has(&seen, &["-v", "-V"]) {
                    return Step::Done;
                }
                if base == "command" && has(&seen, &["-p"]) {
                    self.gate(Some(
                        "`command -p` looks the program up on a default PATH, not the agent's"
                            .into(),
                    ));
                }
                if base == "ionice" && has(&seen, &["-p", "-P", "-u"]) {
                    return Step::Done;
                }
                if base == "time" {
                    if let Some(out) = value_of(&seen, &["-o", "--output"]) {
                        env.redirects.push(Redirect {
                            kind: RedirectKind::Write,
                            target: Word::literal(out),
                        });
                    }
                }
                if idx >= rest.len() {
                    return Step::Done;
                }
                wrap(env, base);
                Step::Next(rest[idx..].to_vec())
            }
            "timeout" => {
                let (idx, _) = match parsed(Opts {
                    short_value: "sk",
                    long_value: &["signal", "kill-after"],
                }) {
                    Ok(v) => v,
                    Err(e) => return self.fail(text, &e, env),
                };
                // The duration, then the command.
                if idx + 1 >= rest.len() {
                    return Step::Done;
                }
                wrap(env, base);
                Step::Next(rest[idx + 1..].to_vec())
            }
            "busybox" => match rest.first().and_then(|w| w.value.as_deref()) {
                Some(applet) if !applet.starts_with('-') => {
                    wrap(env, base);
                    Step::Next(rest.to_vec())
                }
                Some(_) | None if rest.is_empty() => Step::Done,
                Some(_) => Step::Done,
                None => self.fail(text, "busybox applet is not static", env),
            },
            "xargs" => self.peel_xargs(rest, env, text),
            "eval" => {
                let mut joined = String::new();
                for w in rest {
                    match &w.value {
                        Some(v) => {
                            if !joined.is_empty() {
                                joined.push(' ');
                            }
                            joined.push_str(v);
                        }
                        None => return Step::Done,
                    }
                }
                self.reparse(&joined, env, "eval")
            }
            shell if SHELLS.contains(&shell) => {
                let (idx, seen) = match parsed(Opts {
                    short_value: "oO",
                    long_value: &["rcfile", "init-file"],
                }) {
                    Ok(v) => v,
                    Err(e) => return self.fail(text, &e, env),
                };
                if !has(&seen, &["-c"]) {
                    let reads_stdin = idx >= rest.len() || has(&seen, &["-s"]);
                    return match (&env.stdin, reads_stdin) {
                        (Stdin::Here(Some(body)), true) => {
                            let body = body.clone();
                            env.stdin = Stdin::Inherited;
                            self.reparse(&body, env, &format!("{shell} <<here"))
                        }
                        (Stdin::Here(None), true) => {
                            self.fail(text, "here-document fed to a shell is not static", env)
                        }
                        _ => Step::Done,
                    };
                }
                let Some(script) = rest.get(idx) else {
                    return self.fail(text, "shell -c without a command", env);
                };
                let Some(script) = script.value.clone() else {
                    return self.fail(text, "shell -c text is not static", env);
                };
                // `sh -c SCRIPT ARG0 ARG1…`: the script's $0, $1… are those words.
                for (n, w) in rest.iter().skip(idx + 1).enumerate() {
                    self.bind_word(&n.to_string(), w);
                }
                self.reparse(&script, env, &format!("{shell} -c"))
            }
            _ => Step::Done,
        }
    }

    fn peel_xargs(&mut self, rest: &[Word], env: &mut Env, text: &str) -> Step {
        // `-e`, `-i`, `-l` take a value only when attached (`-l1`, `-ea`): that value ends the
        // cluster, which the option parser does not model, so such a cluster is not analysed.
        let mut words = rest.iter();
        while let Some(w) = words.next() {
            let Some(s) = w.value.as_deref() else { break };
            if s == "--" || !s.starts_with('-') || s == "-" {
                break;
            }
            if let Some(long) = s.strip_prefix("--") {
                if !long.contains('=')
                    && [
                        "arg-file",
                        "delimiter",
                        "max-args",
                        "max-procs",
                        "max-chars",
                        "process-slot-var",
                    ]
                    .contains(&long)
                {
                    words.next();
                }
                continue;
            }
            let body = &s[1..];
            let value_at = body.find(|c| "adEILnPs".contains(c));
            let optional_at = body.find(['e', 'i', 'l']);
            match (value_at, optional_at) {
                (_, Some(o)) if value_at.is_none_or(|v| o < v) && o + 1 < body.len() => {
                    return self.fail(text, "xargs option with an attached optional value", env);
                }
                (Some(v), _) if v + 1 == body.len() => {
                    words.next();
                }
                _ => {}
            }
        }
        let (idx, seen) = match options(
            rest,
            &Opts {
                short_value: "adEILnPs",
                long_value: &[
                    "arg-file",
                    "delimiter",
                    "max-args",
                    "max-procs",
                    "max-chars",
                    "process-slot-var",
                ],
            },
        ) {
            Ok(v) => v,
            Err(e) => return self.fail(text, &e, env),
        };
        let replace = value_of(&seen, &["-I", "--replace"])
            .map(str::to_string)
            .or_else(|| has(&seen, &["-i", "--replace"]).then(|| "{}".to_string()));
        if let Some(file) = value_of(&seen, &["-a", "--arg-file"]) {
            env.redirects.push(Redirect {
                kind: RedirectKind::Read,
                target: Word::literal(file),
            });
        }
        env.wrappers.push("xargs".into());
        // GNU xargs gives its commands /dev/null as stdin.
        env.stdin = Stdin::Inherited;
        let input = Word::unknown("<xargs input>");
        let mut next: Vec<Word> = if idx >= rest.len() {
            vec![Word::literal("echo")]
        } else {
            rest[idx..].to_vec()
        };
        match replace {
            Some(r) => {
                for w in next.iter_mut().skip(1) {
                    if w.value.as_deref().is_none_or(|v| v.contains(&r)) {
                        *w = Word::unknown(&w.source);
                    }
                }
                if next[0].value.as_deref().is_none_or(|v| v.contains(&r)) {
                    next[0] = Word::unknown(&next[0].source);
                }
            }
            None => next.push(input),
        }
        Step::Next(next)
    }

    fn fail(&mut self, text: &str, why: &str, env: &Env) -> Step {
        self.problem(text, why.to_string(), env);
        Step::Handled
    }

    /// `git -C DIR` runs in DIR: the segment's relative paths are relative to it (each
    /// `-C` relative to the previous). A non-static DIR makes the directory unknown.
    fn git_rebase(&mut self, seg: &mut Segment) {
        let mut i = 1;
        while let Some(w) = seg.argv.get(i) {
            let Some(v) = w.value.as_deref() else { break };
            if v == "-C" {
                match seg.argv.get(i + 1).and_then(|d| d.value.clone()) {
                    Some(dir) => {
                        let mut next = Vec::new();
                        for cwd in &seg.cwds {
                            let p = super::normalize_path(&dir, &self.ctx.home, cwd);
                            let phys = crate::policy::paths::resolve_lenient(&p);
                            for c in std::iter::once(p).chain(phys) {
                                if !next.contains(&c) {
                                    next.push(c);
                                }
                            }
                        }
                        seg.cwds = next;
                    }
                    None => seg.cwds.clear(),
                }
                i += 2;
            } else if v == "-c" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" {
                i += 2;
            } else if v.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
    }

    fn reparse(&mut self, inner: &str, env: &Env, wrapper: &str) -> Step {
        let mut e = env.clone();
        e.wrappers.push(wrapper.to_string());
        e.depth += 1;
        self.text(inner, &e);
        Step::Handled
    }

    /// Records the command, tracks `cd`, and splits out `find -exec` commands.
    fn finish_segment(&mut self, argv: Vec<Word>, env: &Env, text: &str) {
        let name = argv
            .first()
            .and_then(|w| w.value.clone())
            .unwrap_or_default();
        let (trusted, resolved, resolved_real) = self.resolve(&name);
        let base = basename(&name).to_string();
        let mut seg = self.segment_base(text, argv, env);
        seg.function_call = !name.contains('/') && self.functions.contains(&name);
        seg.program = Some(base.clone());
        seg.trusted_name = trusted;
        seg.trusted_location = trusted_location(&name, resolved.as_deref());
        seg.resolved = resolved;
        seg.resolved_real = resolved_real;
        if base == "git" {
            self.git_rebase(&mut seg);
        }
        let execs = if trusted && base == "find" {
            find_execs(&seg.argv)
        } else {
            Vec::new()
        };
        let cd_target = if trusted && matches!(base.as_str(), "cd" | "pushd" | "popd") {
            let operands: Vec<&Word> = seg
                .argv
                .iter()
                .skip(1)
                .filter(|w| {
                    !w.value
                        .as_deref()
                        .is_some_and(|v| v.starts_with('-') && v != "-")
                })
                .collect();
            Some(match (base.as_str(), operands.first()) {
                ("popd", _) => None,
                (_, None) => Some(self.ctx.home.to_string_lossy().into_owned()),
                (_, Some(w)) => w.value.clone().filter(|_| !w.glob),
            })
        } else {
            None
        };
        self.push(seg);
        if let Some(target) = cd_target {
            self.change_dir(target.as_deref());
        }
        let mut inner_env = env.clone();
        inner_env.wrappers.push("find -exec".into());
        inner_env.redirects.clear();
        inner_env.stdin = Stdin::Inherited;
        for inner in execs {
            self.simple(inner, &inner_env, text);
        }
    }
}

/// Skips the `NAME=value` words from `rest[i]` on (recording the names, as `env` and `sudo`
/// set them for the command, and a gate for each that is not inert); returns the index of
/// the first other word.
fn skip_assignments(rest: &[Word], mut i: usize, env: &mut Env, gates: &mut Vec<String>) -> usize {
    while let Some((k, v)) = rest
        .get(i)
        .and_then(|w| w.value.as_deref())
        .and_then(|v| v.split_once('='))
    {
        if !is_identifier(k) {
            break;
        }
        if let Some(why) = super::inert::env_gate(k, Some(v)) {
            if !gates.contains(&why) {
                gates.push(why);
            }
        }
        env.env_assignments.push(k.to_string());
        i += 1;
    }
    i
}
