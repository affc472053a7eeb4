//! The option grammar of wrapper commands (where `sudo -u x`'s options end and its command
//! starts) and the argv helpers the unwrapper shares.

use super::Word;

/// Option grammar of one wrapper, as its own parser reads it: short options taking a value,
/// long ones taking a value, and (for a `strict` grammar, the program's complete list)
/// the flags and the long options whose value is optional (only `--name=value` gives one).
/// A strict grammar resolves unique long-option abbreviations (GNU `getopt_long`: `--sp` is
/// `--split-string`) and refuses an option it does not know.
pub(super) struct Opts {
    pub short_value: &'static str,
    pub long_value: &'static [&'static str],
    pub short_flags: &'static str,
    pub long_flags: &'static [&'static str],
    pub long_optional: &'static [&'static str],
    pub strict: bool,
    /// Long options may be abbreviated (GNU `getopt_long`; bash's own parser does not).
    pub abbrev: bool,
}

impl Opts {
    const fn loose(short_value: &'static str, long_value: &'static [&'static str]) -> Opts {
        Opts {
            short_value,
            long_value,
            short_flags: "",
            long_flags: &[],
            long_optional: &[],
            strict: false,
            abbrev: true,
        }
    }

    /// The long option `name` resolves to (exact, or a unique prefix).
    fn resolve_long(&self, name: &str) -> Result<Option<&'static str>, String> {
        let all = || {
            self.long_value
                .iter()
                .chain(self.long_flags)
                .chain(self.long_optional)
                .copied()
        };
        if let Some(exact) = all().find(|n| *n == name) {
            return Ok(Some(exact));
        }
        if self.abbrev && !name.is_empty() {
            let mut hits = all().filter(|n| n.starts_with(name));
            if let Some(first) = hits.next() {
                if hits.next().is_some() {
                    return Err(format!("ambiguous option --{name}"));
                }
                return Ok(Some(first));
            }
        }
        if self.strict {
            return Err(format!("unknown option --{name}"));
        }
        Ok(None)
    }
}

/// Option grammars of the wrappers `peel` knows; a wrapper not listed takes no valued option.
pub(super) const WRAPPER_OPTS: &[(&str, Opts)] = &[
    (
        "env",
        Opts {
            short_value: "uCSa",
            long_value: &["unset", "chdir", "split-string", "argv0"],
            short_flags: "i0v",
            long_flags: &[
                "ignore-environment",
                "null",
                "list-signal-handling",
                "debug",
                "help",
                "version",
            ],
            long_optional: &["block-signal", "default-signal", "ignore-signal"],
            strict: true,
            abbrev: true,
        },
    ),
    (
        "sudo",
        Opts::loose(
            "ughpCDrtUT",
            &[
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
        ),
    ),
    ("doas", Opts::loose("uC", &[])),
    (
        "nice",
        Opts {
            short_value: "n",
            long_value: &["adjustment"],
            short_flags: "",
            long_flags: &["help", "version"],
            long_optional: &[],
            strict: true,
            abbrev: true,
        },
    ),
    (
        "stdbuf",
        Opts {
            short_value: "ioe",
            long_value: &["input", "output", "error"],
            short_flags: "",
            long_flags: &["help", "version"],
            long_optional: &[],
            strict: true,
            abbrev: true,
        },
    ),
    ("ionice", Opts::loose("cn", &["class", "classdata"])),
    ("time", Opts::loose("of", &["output", "format"])),
    ("exec", Opts::loose("a", &[])),
    (
        "timeout",
        Opts {
            short_value: "sk",
            long_value: &["signal", "kill-after"],
            short_flags: "v",
            long_flags: &[
                "preserve-status",
                "foreground",
                "verbose",
                "help",
                "version",
            ],
            long_optional: &[],
            strict: true,
            abbrev: true,
        },
    ),
    (
        "xargs",
        Opts {
            short_value: "adEILnPs",
            long_value: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "max-lines",
                "process-slot-var",
            ],
            short_flags: "0eioprtx",
            long_flags: &[
                "null",
                "open-tty",
                "interactive",
                "no-run-if-empty",
                "show-limits",
                "verbose",
                "exit",
                "help",
                "version",
            ],
            long_optional: &["eof", "replace"],
            strict: true,
            abbrev: true,
        },
    ),
];

/// Option grammar of the shells (`sh`, `bash`, ...): `-c` takes the script as an operand.
/// bash matches its long options exactly.
pub(super) const SHELL_OPTS: Opts = Opts {
    short_value: "oO",
    long_value: &["rcfile", "init-file"],
    short_flags: "",
    long_flags: &[],
    long_optional: &[],
    strict: false,
    abbrev: false,
};

/// The option grammar of wrapper `base` (none valued when it is not listed).
pub(super) fn wrapper_opts(base: &str) -> &'static Opts {
    const NONE: Opts = Opts::loose("", &[]);
    WRAPPER_OPTS
        .iter()
        .find(|(name, _)| *name == base)
        .map_or(&NONE, |(_, opts)| opts)
}

/// Options seen while skipping: (name, value).
pub(super) type Seen = Vec<(String, Option<String>)>;

/// Where the options of `args` end: index of the first operand, with the options seen
/// (name, value). A non-static word in option position is an error.
pub(super) fn options(args: &[Word], opts: &Opts) -> Result<(usize, Seen), String> {
    let mut seen = Vec::new();
    let mut i = 0;
    while i < args.len() {
        // A non-static word ends the options: it is the first operand.
        let Some(a) = args[i].value.as_deref() else {
            return Ok((i, seen));
        };
        if a == "--" {
            return Ok((i + 1, seen));
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let canonical = opts.resolve_long(name)?;
            let long = canonical.unwrap_or(name);
            if let Some(value) = value {
                seen.push((format!("--{long}"), Some(value.to_string())));
            } else if opts.long_value.contains(&long) {
                let v = args.get(i + 1).and_then(|w| w.value.clone());
                if v.is_none() {
                    return Err(format!("value of --{long} is not static"));
                }
                seen.push((format!("--{long}"), v));
                i += 1;
            } else {
                seen.push((format!("--{long}"), None));
            }
            i += 1;
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            return Ok((i, seen));
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            if opts.short_value.contains(c) {
                let attached: String = chars[j + 1..].iter().collect();
                if attached.is_empty() {
                    let v = args.get(i + 1).and_then(|w| w.value.clone());
                    if v.is_none() {
                        return Err(format!("value of -{c} is not static"));
                    }
                    seen.push((format!("-{c}"), v));
                    i += 1;
                } else {
                    seen.push((format!("-{c}"), Some(attached)));
                }
                break;
            }
            if opts.strict && !opts.short_flags.contains(c) {
                return Err(format!("unknown option -{c}"));
            }
            seen.push((format!("-{c}"), None));
            j += 1;
        }
        i += 1;
    }
    Ok((i, seen))
}

/// `env -S TEXT` split as GNU env splits it: blanks separate words; `'…'` is literal but for
/// `\\` and `\'`; `"…"` and bare text take the escapes `\_` (a blank inside quotes, a
/// separator outside), `\t \n \r \f \v \\ \" \' \# \$` and `\c` (the rest is ignored); `#`
/// at the start of a word ends the text. `${NAME}` needs the environment: refused.
pub(super) fn env_split_string(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') => {
                if let Some(w) = cur.take() {
                    words.push(w);
                }
            }
            (None, '#') if cur.is_none() => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.get_or_insert_with(String::new);
            }
            (Some(q), _) if c == q => quote = None,
            (Some('\''), '\\') => {
                let w = cur.get_or_insert_with(String::new);
                match chars.peek() {
                    Some(&n) if n == '\\' || n == '\'' => {
                        w.push(n);
                        chars.next();
                    }
                    _ => w.push('\\'),
                }
            }
            (Some('\''), _) => cur.get_or_insert_with(String::new).push(c),
            (_, '$') => return Err("env -S text expands a variable".into()),
            (_, '\\') => {
                let n = chars.next().ok_or("env -S text ends in a backslash")?;
                let lit = match n {
                    '_' if quote.is_none() => {
                        if let Some(w) = cur.take() {
                            words.push(w);
                        }
                        continue;
                    }
                    '_' => ' ',
                    'c' => break,
                    't' => '\t',
                    'n' => '\n',
                    'r' => '\r',
                    'f' => '\x0c',
                    'v' => '\x0b',
                    '\\' | '"' | '\'' | '#' | '$' => n,
                    other => return Err(format!("env -S text has an unknown escape \\{other}")),
                };
                cur.get_or_insert_with(String::new).push(lit);
            }
            _ => cur.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err("env -S text has an unterminated quote".into());
    }
    if let Some(w) = cur {
        words.push(w);
    }
    Ok(words)
}

pub(super) fn has(seen: &[(String, Option<String>)], names: &[&str]) -> bool {
    seen.iter().any(|(n, _)| names.contains(&n.as_str()))
}

pub(super) fn value_of<'a>(
    seen: &'a [(String, Option<String>)],
    names: &[&str],
) -> Option<&'a str> {
    seen.iter()
        .rev()
        .find(|(n, _)| names.contains(&n.as_str()))
        .and_then(|(_, v)| v.as_deref())
}

/// The commands of `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`, `+`), with
/// `{}` as an unknown word.
pub(super) fn find_execs(argv: &[Word]) -> Vec<Vec<Word>> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let v = argv[i].value.as_deref();
        if matches!(v, Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
            let mut cmd = Vec::new();
            i += 1;
            while i < argv.len() && !matches!(argv[i].value.as_deref(), Some(";" | "+")) {
                let w = &argv[i];
                if w.value.as_deref().is_some_and(|v| v.contains("{}")) {
                    cmd.push(Word::unknown(&w.source));
                } else {
                    cmd.push(w.clone());
                }
                i += 1;
            }
            if !cmd.is_empty() {
                out.push(cmd);
            }
        }
        i += 1;
    }
    out
}

pub(super) fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Single-quotes a value for re-parsing.
pub(super) fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_split_string_as_gnu_env() {
        let split = |t: &str| env_split_string(t).unwrap();
        assert_eq!(
            split("find .\\_-maxdepth\\_0\\_-exec\\_sh\\_run.sh\\_;"),
            ["find", ".", "-maxdepth", "0", "-exec", "sh", "run.sh", ";"]
        );
        assert_eq!(split("'a b' \"c\\_d\" e\\tf"), ["a b", "c d", "e\tf"]);
        assert_eq!(split("ls #x"), ["ls"]);
        assert_eq!(split("ls \\c rm"), ["ls"]);
        assert!(env_split_string("${HOME}/x").is_err());
        assert!(env_split_string("\\q").is_err());
        assert!(env_split_string("'a").is_err());
    }

    #[test]
    fn long_options_resolve_like_getopt_long() {
        let env = wrapper_opts("env");
        let w = |v: &str| Word::literal(v);
        let (i, seen) = options(&[w("--sp=sh run.sh")], env).unwrap();
        assert_eq!(
            (i, value_of(&seen, &["--split-string"])),
            (1, Some("sh run.sh"))
        );
        let (_, seen) = options(&[w("--ch"), w("/x"), w("ls")], env).unwrap();
        assert_eq!(value_of(&seen, &["--chdir"]), Some("/x"));
        assert!(options(&[w("--bogus"), w("ls")], env).is_err());
        assert!(options(&[w("-Z"), w("ls")], env).is_err());
    }

    /// `wrapper_opts` takes the first row: a second row for a name would be dead.
    #[test]
    fn each_wrapper_has_one_grammar() {
        for (i, (name, opts)) in WRAPPER_OPTS.iter().enumerate() {
            assert!(
                !WRAPPER_OPTS[..i].iter().any(|(n, _)| n == name),
                "{name} is listed twice"
            );
            let found = wrapper_opts(name);
            assert_eq!(found.short_value, opts.short_value, "{name}");
            assert_eq!(found.long_value, opts.long_value, "{name}");
        }
        assert!(wrapper_opts("nohup").short_value.is_empty());
    }
}
