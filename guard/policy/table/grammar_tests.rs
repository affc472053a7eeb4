//! The option grammar engine against real programs' tables: clusters with the value
//! letter not first, GNU abbreviations (unique, exact-wins, ambiguous), optional attached
//! values, `--`, non-static words in option position.

use super::*;
use crate::policy::table::gram_misc::{G_JQ, G_TAR_READ};
use crate::policy::table::gram_net::{G_CURL, G_WGET};
use crate::policy::table::gram_search::G_GREP;
use crate::policy::table::gram_text::{G_HEAD, G_SORT};

fn words(s: &str) -> Vec<Word> {
    s.split_whitespace().map(Word::literal).collect()
}

/// (option long-or-short name, value) pairs.
type Opts = Vec<(String, Option<String>)>;

/// The options and operands of a parse.
fn run(g: &'static Grammar, s: &str) -> Result<(Opts, Vec<String>), NotUnderstood> {
    let w = words(s);
    let p = parse(g, &w)?;
    let opts = p
        .opts
        .iter()
        .map(|m| {
            let name = if m.opt.long.is_empty() {
                format!("-{}", m.opt.short)
            } else {
                m.opt.long.to_string()
            };
            (name, m.value.as_ref().and_then(|v| v.value.clone()))
        })
        .collect();
    let ops = p.operands.iter().filter_map(|w| w.value.clone()).collect();
    Ok((opts, ops))
}

fn opt(name: &str, v: Option<&str>) -> (String, Option<String>) {
    (name.to_string(), v.map(str::to_string))
}

#[test]
fn clusters_take_the_value_letter_wherever_it_is() {
    let (o, ops) = run(&G_CURL, "-so /tmp/x https://h").expect("parse");
    assert_eq!(o, vec![opt("silent", None), opt("output", Some("/tmp/x"))]);
    assert_eq!(ops, vec!["https://h"]);
    let (o, _) = run(&G_CURL, "-sd@/etc/passwd https://h").expect("parse");
    assert_eq!(o[1], opt("data", Some("@/etc/passwd")));
    let (o, ops) = run(&G_CURL, "-sT f https://h").expect("parse");
    assert_eq!(o[1], opt("upload-file", Some("f")));
    assert_eq!(ops, vec!["https://h"]);
    let (o, _) = run(&G_WGET, "-qO- https://h").expect("parse");
    assert_eq!(o[1], opt("output-document", Some("-")));
}

#[test]
fn long_abbreviations_resolve_like_getopt_long() {
    let (o, _) = run(&G_WGET, "--output-d=/tmp/x u").expect("parse");
    assert_eq!(o, vec![opt("output-document", Some("/tmp/x"))]);
    let (o, _) = run(&G_SORT, "--compress-p=sh a").expect("parse");
    assert_eq!(o, vec![opt("compress-program", Some("sh"))]);
    let (o, _) = run(&G_GREP, "--recur x .").expect("parse");
    assert_eq!(o, vec![opt("recursive", None)]);
    // `--out` prefixes --output, --output-dir: ambiguous, as curl itself says.
    assert_eq!(
        run(&G_CURL, "--out /tmp/x u"),
        Err(NotUnderstood::Ambiguous("--out".into()))
    );
    // An exact name wins over longer ones it prefixes.
    let (o, _) = run(&G_CURL, "--output /tmp/x u").expect("parse");
    assert_eq!(o, vec![opt("output", Some("/tmp/x"))]);
    assert!(matches!(
        run(&G_CURL, "--no-such-thing u"),
        Err(NotUnderstood::Unknown(_))
    ));
    // A flag given a value is not understood.
    assert!(run(&G_GREP, "--recursive=yes x").is_err());
}

#[test]
fn optional_values_attach_only() {
    let (o, ops) = run(&G_TAR_READ, "--occurrence 2 -tf a.tar").expect("parse");
    assert_eq!(o[0], opt("occurrence", None));
    assert_eq!(ops, vec!["2"]);
    let (o, _) = run(&G_TAR_READ, "--occurrence=2 -tf a.tar").expect("parse");
    assert_eq!(o[0], opt("occurrence", Some("2")));
}

#[test]
fn double_dash_ends_options_and_numbers_are_counts() {
    let (o, ops) = run(&G_SORT, "-- -o x").expect("parse");
    assert!(o.is_empty());
    assert_eq!(ops, vec!["-o", "x"]);
    let (o, ops) = run(&G_HEAD, "-5 a.txt").expect("parse");
    assert!(o.is_empty());
    assert_eq!(ops, vec!["a.txt"]);
    // Without the numeric form `-5` is an unknown option.
    assert!(run(&G_SORT, "-5 a").is_err());
}

#[test]
fn two_word_options_and_missing_values() {
    let (o, ops) = run(&G_JQ, "--slurpfile k /etc/x . f.json").expect("parse");
    assert_eq!(o, vec![opt("slurpfile", Some("/etc/x"))]);
    assert_eq!(ops, vec![".", "f.json"]);
    assert!(matches!(
        run(&G_SORT, "a -o"),
        Err(NotUnderstood::MissingValue(_))
    ));
}

#[test]
fn unknown_words_in_option_position_are_not_understood() {
    let mut w = words("a.txt");
    w.push(Word::unknown("\"$X\""));
    assert!(matches!(
        parse(&G_SORT, &w),
        Err(NotUnderstood::NotStatic(_))
    ));
    // Text that starts with a literal character cannot be an option.
    let mut w = words("a.txt");
    w.push(Word::unknown("\"src/$X\""));
    assert!(parse(&G_SORT, &w).is_ok());
    // find -exec's `{}` is a path under find's start.
    let w = vec![Word::unknown("{}")];
    assert!(parse(&G_SORT, &w).is_ok());
    // xargs input can be anything, options included.
    let w = vec![Word::unknown("<xargs input>")];
    assert!(parse(&G_SORT, &w).is_err());
}

/// Every grammar table, for the structural checks.
fn all_grammars() -> Vec<(&'static str, &'static Grammar)> {
    use crate::policy::table::{gram_git, gram_list, gram_misc, gram_net, gram_search, gram_text};
    vec![
        ("G_GIT_LOG", &gram_git::G_GIT_LOG),
        ("G_GIT_STATUS", &gram_git::G_GIT_STATUS),
        ("G_GIT_GREP", &gram_git::G_GIT_GREP),
        ("G_GIT_BLAME", &gram_git::G_GIT_BLAME),
        ("G_GIT_LS_REMOTE", &gram_git::G_GIT_LS_REMOTE),
        ("G_GIT_LS_FILES", &gram_git::G_GIT_LS_FILES),
        ("G_GIT_MISC", &gram_git::G_GIT_MISC),
        ("G_GIT_REV_PARSE", &gram_git::G_GIT_REV_PARSE),
        ("G_GIT_LIST_REFS", &gram_git::G_GIT_LIST_REFS),
        ("G_GIT_CONFIG_READ", &gram_git::G_GIT_CONFIG_READ),
        ("G_MD5SUM", &gram_list::G_MD5SUM),
        ("G_SHA1SUM", &gram_list::G_SHA1SUM),
        ("G_SHA224SUM", &gram_list::G_SHA224SUM),
        ("G_SHA256SUM", &gram_list::G_SHA256SUM),
        ("G_SHA384SUM", &gram_list::G_SHA384SUM),
        ("G_SHA512SUM", &gram_list::G_SHA512SUM),
        ("G_B2SUM", &gram_list::G_B2SUM),
        ("G_CKSUM", &gram_list::G_CKSUM),
        ("G_LS", &gram_list::G_LS),
        ("G_DU", &gram_list::G_DU),
        ("G_DF", &gram_list::G_DF),
        ("G_STAT", &gram_list::G_STAT),
        ("G_REALPATH", &gram_list::G_REALPATH),
        ("G_READLINK", &gram_list::G_READLINK),
        ("G_DATE", &gram_list::G_DATE),
        ("G_FILE", &gram_list::G_FILE),
        ("G_NONE", &gram_misc::G_NONE),
        ("G_TREE", &gram_misc::G_TREE),
        ("G_JQ", &gram_misc::G_JQ),
        ("G_LESS", &gram_misc::G_LESS),
        ("G_STRINGS", &gram_misc::G_STRINGS),
        ("G_HOSTNAME", &gram_misc::G_HOSTNAME),
        ("G_TOP", &gram_misc::G_TOP),
        ("G_PS", &gram_misc::G_PS),
        ("G_AWK", &gram_misc::G_AWK),
        ("G_TAR_READ", &gram_misc::G_TAR_READ),
        ("G_UNZIP_READ", &gram_misc::G_UNZIP_READ),
        ("G_ZCAT", &gram_misc::G_ZCAT),
        ("G_LOOK", &gram_misc::G_LOOK),
        ("G_PGREP", &gram_misc::G_PGREP),
        ("G_WHEREIS", &gram_misc::G_WHEREIS),
        ("G_LSBLK", &gram_misc::G_LSBLK),
        ("G_FINDMNT", &gram_misc::G_FINDMNT),
        ("G_LSOF", &gram_misc::G_LSOF),
        ("G_CURL", &gram_net::G_CURL),
        ("G_WGET", &gram_net::G_WGET),
        ("G_DIFF", &gram_search::G_DIFF),
        ("G_DIFF3", &gram_search::G_DIFF3),
        ("G_GREP", &gram_search::G_GREP),
        ("G_SED", &gram_search::G_SED),
        ("G_RG", &gram_search::G_RG),
        ("G_CAT", &gram_text::G_CAT),
        ("G_TAC", &gram_text::G_TAC),
        ("G_HEAD", &gram_text::G_HEAD),
        ("G_TAIL", &gram_text::G_TAIL),
        ("G_WC", &gram_text::G_WC),
        ("G_SORT", &gram_text::G_SORT),
        ("G_UNIQ", &gram_text::G_UNIQ),
        ("G_CUT", &gram_text::G_CUT),
        ("G_TR", &gram_text::G_TR),
        ("G_NL", &gram_text::G_NL),
        ("G_OD", &gram_text::G_OD),
        ("G_BASE64", &gram_text::G_BASE64),
        ("G_BASE32", &gram_text::G_BASE32),
        ("G_FOLD", &gram_text::G_FOLD),
        ("G_FMT", &gram_text::G_FMT),
        ("G_PASTE", &gram_text::G_PASTE),
        ("G_JOIN", &gram_text::G_JOIN),
        ("G_EXPAND", &gram_text::G_EXPAND),
        ("G_UNEXPAND", &gram_text::G_UNEXPAND),
        ("G_SHUF", &gram_text::G_SHUF),
        ("G_SPLIT", &gram_text::G_SPLIT),
        ("G_CSPLIT", &gram_text::G_CSPLIT),
        ("G_PR", &gram_text::G_PR),
        ("G_NUMFMT", &gram_text::G_NUMFMT),
        ("G_COLUMN", &gram_text::G_COLUMN),
        ("G_ICONV", &gram_text::G_ICONV),
        ("G_CMP", &gram_text::G_CMP),
        ("G_COMM", &gram_text::G_COMM),
    ]
}

/// A letter or long name listed twice would make the first entry win silently (a flag
/// shadowing an option that takes a value would hide that value's word from the checks).
#[test]
fn no_option_is_listed_twice() {
    for (name, g) in all_grammars() {
        let mut shorts = std::collections::HashSet::new();
        let mut longs = std::collections::HashSet::new();
        for o in g.opts {
            assert!(
                o.short != '\0' || !o.long.is_empty(),
                "{name}: an empty row"
            );
            if o.short != '\0' {
                assert!(shorts.insert(o.short), "{name}: -{} listed twice", o.short);
            }
            if !o.long.is_empty() {
                assert!(longs.insert(o.long), "{name}: --{} listed twice", o.long);
                assert!(!o.long.contains('='), "{name}: --{} holds `=`", o.long);
            }
        }
    }
}

/// Each row's arity against the program's own `--help` on this machine (GNU style lines
/// `-n, --lines=NUM`, `--color[=WHEN]`, `-o FILE`): a value-taking option modelled as a
/// flag would let its value pass as an operand (or the reverse). Programs not installed,
/// or whose help is not GNU style, are skipped; the test fails if none was checked.
#[cfg(test)]
mod help_arity {
    use super::*;
    use std::collections::HashMap;

    fn program_of(grammar: &str) -> Option<&'static str> {
        Some(match grammar {
            "G_LS" => "ls",
            "G_DU" => "du",
            "G_DF" => "df",
            "G_STAT" => "stat",
            "G_REALPATH" => "realpath",
            "G_READLINK" => "readlink",
            "G_DATE" => "date",
            "G_CAT" => "cat",
            "G_TAC" => "tac",
            "G_HEAD" => "head",
            "G_TAIL" => "tail",
            "G_WC" => "wc",
            "G_SORT" => "sort",
            "G_UNIQ" => "uniq",
            "G_CUT" => "cut",
            "G_TR" => "tr",
            "G_NL" => "nl",
            "G_OD" => "od",
            "G_BASE64" => "base64",
            "G_BASE32" => "base32",
            "G_FOLD" => "fold",
            "G_FMT" => "fmt",
            "G_PASTE" => "paste",
            "G_JOIN" => "join",
            "G_EXPAND" => "expand",
            "G_UNEXPAND" => "unexpand",
            "G_SHUF" => "shuf",
            "G_SPLIT" => "split",
            "G_CSPLIT" => "csplit",
            "G_PR" => "pr",
            "G_NUMFMT" => "numfmt",
            "G_CMP" => "cmp",
            "G_COMM" => "comm",
            "G_MD5SUM" => "md5sum",
            "G_SHA256SUM" => "sha256sum",
            "G_CKSUM" => "cksum",
            "G_DIFF" => "diff",
            "G_GREP" => "grep",
            "G_SED" => "sed",
            "G_CURL" => "curl",
            "G_WGET" => "wget",
            "G_LSBLK" => "lsblk",
            "G_FINDMNT" => "findmnt",
            "G_ZCAT" => "zcat",
            "G_FILE" => "file",
            "G_STRINGS" => "strings",
            _ => return None,
        })
    }

    /// `(name, arity)` of every option spelled in one `--help` line's head.
    fn help_options(text: &str) -> HashMap<String, Arg> {
        let mut out = HashMap::new();
        for line in text.lines() {
            let t = line.trim_start();
            // Option lines are indented a little; wrapped descriptions a lot.
            let indent = line.len() - t.len();
            if !t.starts_with('-') || indent == 0 || indent > 8 {
                continue;
            }
            let head = t.split("  ").next().unwrap_or(t);
            // A required `=VALUE` (upper case: a placeholder) of the long spelling is the
            // short's too (`-n, --lines=NUM`); an optional one (`[=WHEN]`) or a literal
            // (`--indicator-style=slash`) is not.
            let mut long_req = false;
            let mut shorts = Vec::new();
            for piece in head.split(", ") {
                let piece = piece.trim();
                if let Some(long) = piece.strip_prefix("--") {
                    let end = long.find(['=', '[', ' ']).unwrap_or(long.len());
                    let rest = &long[end..];
                    let placeholder =
                        |r: &str| r.starts_with(|c: char| c.is_ascii_uppercase() || c == '<');
                    let a = if rest.starts_with("[=") {
                        Some(Arg::Opt)
                    } else if rest.strip_prefix('=').is_some_and(placeholder)
                        || rest.strip_prefix(' ').is_some_and(placeholder)
                    {
                        long_req = true;
                        Some(Arg::Req)
                    } else if rest.is_empty() {
                        Some(Arg::No)
                    } else {
                        None
                    };
                    let name = format!("--{}", &long[..end]);
                    match (a, out.get(&name).copied()) {
                        (Some(a), None) => {
                            out.insert(name, a);
                        }
                        // Spelled bare and with a value: the value is optional.
                        (Some(Arg::No), Some(Arg::Req)) | (Some(Arg::Req), Some(Arg::No)) => {
                            out.insert(name, Arg::Opt);
                        }
                        _ => {}
                    }
                } else if let Some(short) = piece.strip_prefix('-') {
                    let mut cs = short.chars();
                    let Some(letter) = cs.next() else { continue };
                    let rest: String = cs.collect();
                    // `-nv` (wget's two-letter shorts) is not `-n`.
                    if !rest.is_empty() && !rest.starts_with([' ', '[']) {
                        continue;
                    }
                    let own = rest
                        .strip_prefix(' ')
                        .is_some_and(|r| !r.is_empty() && !r.starts_with('-'));
                    shorts.push((format!("-{letter}"), own));
                }
            }
            for (n, own) in shorts {
                let a = if own || long_req { Arg::Req } else { Arg::No };
                out.entry(n).or_insert(a);
            }
        }
        out
    }

    fn help(program: &str) -> Option<String> {
        let out = std::process::Command::new(program)
            .arg("--help")
            .env("LC_ALL", "C")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("--").then_some(text)
    }

    #[test]
    fn rows_take_a_value_where_the_program_does() {
        let mut checked = 0;
        let mut wrong = Vec::new();
        for (name, g) in all_grammars() {
            let Some(program) = program_of(name) else {
                continue;
            };
            let Some(text) = help(program) else { continue };
            let table = help_options(&text);
            for o in g.opts {
                let spelled = if o.long.is_empty() {
                    format!("-{}", o.short)
                } else {
                    format!("--{}", o.long)
                };
                // Help lines that do not show the value the option takes.
                const HELP_OMITS_VALUE: &[&str] = &[
                    "file --parameter",
                    "wget --max-redirect",
                    "wget --hsts-file",
                ];
                if HELP_OMITS_VALUE.contains(&format!("{program} --{}", o.long).as_str()) {
                    continue;
                }
                if matches!(o.long, "help" | "version") {
                    continue;
                }
                let Some(&want) = table.get(&spelled) else {
                    continue;
                };
                checked += 1;
                let ours = match o.arg {
                    Arg::Two => Arg::Req,
                    a => a,
                };
                // Optional values attach only, so a flag row for an optional value (or the
                // reverse) refuses the attached form: strict, never loose. A row that takes
                // the next word where the program does not (or the reverse) misreads an
                // operand as a value, or a value as an operand.
                let ok = ours == want
                    || matches!((ours, want), (Arg::No, Arg::Opt) | (Arg::Opt, Arg::No));
                if !ok {
                    wrong.push(format!(
                        "{program} {spelled}: row {ours:?}, --help {want:?}"
                    ));
                }
            }
        }
        assert!(
            checked > 50,
            "only {checked} options could be checked against --help"
        );
        assert!(
            wrong.is_empty(),
            "rows whose arity differs from the program:\n{}",
            wrong.join("\n")
        );
    }
}
