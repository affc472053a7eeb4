//! The option grammar of wrapper commands (where `sudo -u x`'s options end and its command
//! starts) and the argv helpers the unwrapper shares.

use super::Word;

/// Option grammar of one wrapper: short options taking a value, long ones taking a value.
pub(super) struct Opts {
    pub short_value: &'static str,
    pub long_value: &'static [&'static str],
}

/// Option grammars of the wrappers `peel` knows; a wrapper not listed takes no valued option.
pub(super) const WRAPPER_OPTS: &[(&str, Opts)] = &[
    (
        "env",
        Opts {
            short_value: "uCS",
            long_value: &["unset", "chdir", "split-string"],
        },
    ),
    (
        "sudo",
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
        },
    ),
    (
        "doas",
        Opts {
            short_value: "uC",
            long_value: &[],
        },
    ),
    (
        "nice",
        Opts {
            short_value: "n",
            long_value: &["adjustment"],
        },
    ),
    (
        "stdbuf",
        Opts {
            short_value: "ioe",
            long_value: &["input", "output", "error"],
        },
    ),
    (
        "ionice",
        Opts {
            short_value: "cn",
            long_value: &["class", "classdata"],
        },
    ),
    (
        "time",
        Opts {
            short_value: "of",
            long_value: &["output", "format"],
        },
    ),
    (
        "exec",
        Opts {
            short_value: "a",
            long_value: &[],
        },
    ),
    (
        "timeout",
        Opts {
            short_value: "sk",
            long_value: &["signal", "kill-after"],
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
                "process-slot-var",
            ],
        },
    ),
];

/// Option grammar of the shells (`sh`, `bash`, ...): `-c` takes the script as an operand.
pub(super) const SHELL_OPTS: Opts = Opts {
    short_value: "oO",
    long_value: &["rcfile", "init-file"],
};

/// The option grammar of wrapper `base` (none valued when it is not listed).
pub(super) fn wrapper_opts(base: &str) -> &'static Opts {
    const NONE: Opts = Opts {
        short_value: "",
        long_value: &[],
    };
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
            if let Some((name, value)) = long.split_once('=') {
                seen.push((format!("--{name}"), Some(value.to_string())));
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
            seen.push((format!("-{c}"), None));
            j += 1;
        }
        i += 1;
    }
    Ok((i, seen))
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
