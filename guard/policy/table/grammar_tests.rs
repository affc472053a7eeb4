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
