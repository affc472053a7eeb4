//! Each case runs under the real `bash -c` and `dash -c`: the text as written and the text
//! as the walk reads it must print the same, and the expected output is checked too.
#![cfg(test)]

use super::{realign_with, HeredocError};
use std::process::Command;

/// What the walk makes of a text.
#[derive(Debug, PartialEq)]
enum Read {
    /// The parser already ends every body where the shells do.
    AsParsed,
    /// Rewritten so the parser does.
    Rewritten,
    /// Not analysable (gated).
    Gated(HeredocError),
}

fn read(text: &str, force: bool) -> (Read, Option<String>) {
    let tree = super::super::parse(text).expect("parse");
    assert!(!tree.root_node().has_error(), "{text:?} does not parse");
    match realign_with(text, tree.root_node(), force) {
        Ok(None) => (Read::AsParsed, None),
        Ok(Some(t)) => (Read::Rewritten, Some(t)),
        Err(e) => (Read::Gated(e), None),
    }
}

fn run(shell: &str, text: &str) -> String {
    let dir = std::env::temp_dir();
    let out = Command::new(shell)
        .arg("-c")
        .arg(text)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run the shell");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (text, what the walk makes of it, what bash and dash print).
const CASES: &[(&str, Read, &str)] = &[
    // The fresh set's rows: `EOF; cmd` is body text, to the end of the input.
    (
        "cat <<'EOF'\nhello\nEOF; echo RAN",
        Read::Rewritten,
        "hello\nEOF; echo RAN\n",
    ),
    (
        "sh -c 'cat <<EOF\nhello\nEOF; echo RAN'",
        Read::AsParsed,
        "hello\nEOF; echo RAN",
    ),
    (
        "cat <<EOF\nhello\nEOF | cat -n\n",
        Read::Rewritten,
        "hello\nEOF | cat -n\n",
    ),
    // Exact lines end the body; what follows runs.
    ("cat <<EOF\nx\nEOF\necho RAN", Read::AsParsed, "x\nRAN\n"),
    ("cat <<'EOF'\nx\nEOF\necho RAN", Read::AsParsed, "x\nRAN\n"),
    (
        "cat <<\"E F\"\nx\nE F\necho RAN",
        Read::AsParsed,
        "x\nRAN\n",
    ),
    (
        "cat <<\\EOF\n$(echo no)\nEOF",
        Read::AsParsed,
        "$(echo no)\n",
    ),
    ("cat <<EOF\n$(echo yes)\nEOF", Read::AsParsed, "yes\n"),
    ("cat <<EOF\nEOF\necho RAN", Read::AsParsed, "RAN\n"),
    // `<<-`: leading tabs go, from the body and the delimiter line.
    (
        "cat <<-EOF\n\tx\n\t\tEOF\necho RAN",
        Read::AsParsed,
        "x\nRAN\n",
    ),
    (
        "cat <<-EOF\n\tx\n\tEOF; echo RAN",
        Read::Rewritten,
        "x\nEOF; echo RAN\n",
    ),
    // Not exact: trailing or leading blanks, a tab without `-`, a longer line.
    (
        "cat <<EOF\nx\nEOF \necho RAN",
        Read::Rewritten,
        "x\nEOF \necho RAN\n",
    ),
    (
        "cat <<EOF\nx\n EOF\necho RAN",
        Read::Rewritten,
        "x\n EOF\necho RAN\n",
    ),
    (
        "cat <<EOF\nx\n\tEOF\necho RAN",
        Read::Rewritten,
        "x\n\tEOF\necho RAN\n",
    ),
    (
        "cat <<EOF\nx\nEOF \nEOF\necho RAN",
        Read::Rewritten,
        "x\nEOF \nRAN\n",
    ),
    (
        "cat <<EOF\nx\nEOF && echo RAN\nEOF\necho after",
        Read::Rewritten,
        "x\nEOF && echo RAN\nafter\n",
    ),
    // The delimiter as a prefix of a line, and a line as a prefix of the delimiter.
    ("cat <<E\nx\nE\nEOF; echo RAN", Read::AsParsed, "x\nRAN\n"),
    (
        "cat <<EOF\nx\nEO\nEOF\necho RAN",
        Read::AsParsed,
        "x\nEO\nRAN\n",
    ),
    // Unquoted, the rest of the input is expanded as body text.
    (
        "cat <<EOF\nx\nEOF; $(echo RAN)",
        Read::Rewritten,
        "x\nEOF; RAN\n",
    ),
    // In a substitution, and two here-documents on separate lines.
    (
        "echo \"$(cat <<EOF\nx\nEOF\n)\"; echo RAN",
        Read::AsParsed,
        "x\nRAN\n",
    ),
    (
        "cat <<A\na\nA;\ncat <<B\nb\nB\necho RAN",
        Read::Rewritten,
        "a\nA;\ncat <<B\nb\nB\necho RAN\n",
    ),
    (
        "cat <<A\na\nA\ncat <<B\nb\nB \necho RAN",
        Read::Rewritten,
        "a\nb\nB \necho RAN\n",
    ),
    // Where bash joins `E\` and `OF` into the delimiter and dash does not.
    (
        "cat <<EOF\nx\nE\\\nOF\necho RAN\nEOF",
        Read::Gated(HeredocError::Continuation),
        "",
    ),
    (
        "cat <<'EOF'\nx\\\nEOF\necho RAN",
        Read::AsParsed,
        "x\\\nRAN\n",
    ),
];

#[test]
fn bodies_end_where_bash_and_dash_end_them() {
    for (text, want, printed) in CASES {
        let (got, rewritten) = read(text, false);
        assert_eq!(&got, want, "{text:?}");
        if let Read::Gated(_) = got {
            continue;
        }
        // The shells' reading, forced onto every here-document, and the walk's text.
        let (_, forced) = read(text, true);
        let forced = forced.unwrap_or_else(|| text.to_string());
        for shell in ["bash", "dash"] {
            // A body that runs to the end of an input without a final newline: bash adds
            // one, dash does not (the walk reads bash's; a final newline changes nothing).
            let same = |got: String| {
                if shell == "dash" && !text.ends_with('\n') {
                    got.trim_end_matches('\n') == printed.trim_end_matches('\n')
                } else {
                    got == *printed
                }
            };
            for t in [Some(*text), Some(forced.as_str()), rewritten.as_deref()]
                .into_iter()
                .flatten()
            {
                let got = run(shell, t);
                assert!(same(got.clone()), "{shell} -c {t:?} printed {got:?}");
            }
        }
    }
}

#[test]
fn delimiters_that_are_not_plain_words_are_gated() {
    for text in ["cat <<$X\nx\n$X", "cat <<'E$'\nx\nE$", "cat <<E*\nx\nE*"] {
        let (got, _) = read(text, false);
        assert!(
            matches!(got, Read::Gated(HeredocError::Delimiter(_))),
            "{text:?}: {got:?}"
        );
    }
}
