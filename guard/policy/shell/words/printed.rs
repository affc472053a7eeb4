//! `$(echo WORDS)` and `$(printf FORMAT WORDS)` whose output is known for certain, so the
//! word they make reaches the command table as the word it is (`git log $(printf %s
//! --decorate)`, `"$(echo git)" log`), instead of an unknown word that gates. The same
//! output piped to `xargs` gives it known words (`pipes::known_input`).
//!
//! Known only where bash and dash (Debian's `/bin/sh`, which OpenClaw's `sh -lc` runs)
//! print the same thing, and the name is the shell's builtin:
//! - every word is a literal (no expansion, glob, tilde or escape in it);
//! - no backslash anywhere in an `echo` (dash's echo reads escapes, bash's does not), and no
//!   leading `-n`/`-e`/`-E` cluster (options in bash, text in dash);
//! - a `printf` format holds only `%s` conversions and no backslash;
//! - the text defines no function, alias or shell option and does not touch `IFS` or
//!   `enable` (any of which could make `echo` something else, or split the result
//!   differently).
//!
//! Unquoted, the result is split and globbed again: known only when that changes nothing
//! (no blank, glob character or backslash, not empty).

use super::super::walk::{kind, Analyser};
use tree_sitter::Node;

/// Words that, anywhere in the text, could make `echo`/`printf` or the splitting of their
/// output other than the shell's defaults.
const UNSETTLING: &[&str] = &["()", "function", "alias", "shopt", "IFS", "enable"];

impl Analyser<'_> {
    /// The value a command substitution (`node`, in the text `src`) produces, when known for
    /// certain; `quoted`: inside double quotes.
    pub(super) fn folded(&self, node: Node, src: &str, quoted: bool) -> Option<String> {
        if kind(node) != "command_substitution" {
            return None;
        }
        let text = &src[node.byte_range()];
        // A backquoted body with a backslash is un-escaped and parsed again: not this tree.
        if text.starts_with('`') && text.contains('\\') {
            return None;
        }
        let cmd = node.named_child(0)?;
        if node.named_child_count() != 1 {
            return None;
        }
        let out = self.printed_by(cmd, src)?;
        let out = out.trim_end_matches('\n').to_string();
        let splits = out.is_empty() || out.contains([' ', '\t', '\n', '*', '?', '[', ']', '\\']);
        (quoted || !splits).then_some(out)
    }

    /// What the simple command `cmd` (in the text `src`) prints, when known for certain: the
    /// `echo`/`printf` builtin with literal words (no redirection, assignment or expansion).
    pub(crate) fn printed_by(&self, cmd: Node, src: &str) -> Option<String> {
        if kind(cmd) != "command"
            || !self.functions.is_empty()
            || UNSETTLING.iter().any(|w| src.contains(w))
        {
            return None;
        }
        let mut words = Vec::new();
        let mut cursor = cmd.walk();
        for child in cmd.named_children(&mut cursor) {
            let part = if kind(child) == "command_name" {
                child.named_child(0)?
            } else {
                child
            };
            words.push(literal(part, src)?);
        }
        let (name, args) = words.split_first()?;
        printed(name, args)
    }
}

/// The value of a word made only of literal text: a plain word of safe characters, a
/// single-quoted string, a double-quoted string without expansions or escapes, a number,
/// or a concatenation of those.
fn literal(node: Node, src: &str) -> Option<String> {
    let text = &src[node.byte_range()];
    match kind(node) {
        "word" | "number" => text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=+,@%-".contains(&b))
            .then(|| text.to_string()),
        "raw_string" => text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .map(str::to_string),
        "string" => {
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            let mut cursor = node.walk();
            let plain = node
                .named_children(&mut cursor)
                .all(|c| kind(c) == "string_content");
            (plain && !inner.contains(['$', '`', '\\'])).then(|| inner.to_string())
        }
        "concatenation" => {
            let mut out = String::new();
            let mut cursor = node.walk();
            for c in node.children(&mut cursor) {
                if !c.is_named() {
                    return None;
                }
                out.push_str(&literal(c, src)?);
            }
            Some(out)
        }
        _ => None,
    }
}

/// What the builtin `name` prints for these literal arguments, when bash and dash agree.
pub(crate) fn printed(name: &str, args: &[String]) -> Option<String> {
    match name {
        "echo" => {
            let option = args.first().is_some_and(|a| {
                a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b"neE".contains(&b))
            });
            if option || args.iter().any(|a| a.contains('\\')) {
                return None;
            }
            Some(format!("{}\n", args.join(" ")))
        }
        "printf" => {
            let (format, args) = args.split_first()?;
            if format.starts_with('-') || format.contains('\\') {
                return None;
            }
            let pieces: Vec<&str> = format.split("%s").collect();
            if pieces.iter().any(|p| p.contains('%')) {
                return None;
            }
            let per_round = pieces.len() - 1;
            let mut out = String::new();
            let mut args = args.iter();
            // The format is used once, then again while arguments remain.
            loop {
                for (i, piece) in pieces.iter().enumerate() {
                    out.push_str(piece);
                    if i < per_round {
                        out.push_str(args.next().map(String::as_str).unwrap_or(""));
                    }
                }
                if per_round == 0 || args.len() == 0 {
                    return Some(out);
                }
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::printed;

    #[test]
    fn printed_only_where_bash_and_dash_agree() {
        let p = |n: &str, a: &[&str]| {
            printed(n, &a.iter().map(|s| s.to_string()).collect::<Vec<String>>())
        };
        // Each expected value was checked against `bash -c` and `dash -c`.
        assert_eq!(p("echo", &["a", "b"]).as_deref(), Some("a b\n"));
        assert_eq!(p("echo", &["-l"]).as_deref(), Some("-l\n"));
        assert_eq!(p("echo", &["-nx"]).as_deref(), Some("-nx\n"));
        assert_eq!(p("echo", &["--", "x"]).as_deref(), Some("-- x\n"));
        assert_eq!(p("echo", &[]).as_deref(), Some("\n"));
        assert_eq!(p("printf", &["%s", "-l"]).as_deref(), Some("-l"));
        assert_eq!(
            p("printf", &["%s-%s|", "a", "b", "c"]).as_deref(),
            Some("a-b|c-|")
        );
        assert_eq!(p("printf", &["x", "a", "b"]).as_deref(), Some("x"));
        assert_eq!(p("printf", &["%s"]).as_deref(), Some(""));
        // Where the shells differ, or the builtin does more than print its words.
        for (n, a) in [
            ("echo", &["-n", "rm"][..]),
            ("echo", &["-e", "r\\x6d"]),
            ("echo", &["-E", "x"]),
            ("echo", &["-neE", "x"]),
            ("echo", &["a\\nb"]),
            ("printf", &["%b", "x"]),
            ("printf", &["%d", "1"]),
            ("printf", &["%%s", "x"]),
            ("printf", &["-v", "x", "y"]),
            ("printf", &["--", "%s", "y"]),
            ("printf", &["a\\n"]),
            ("printf", &[]),
            ("cat", &["x"]),
        ] {
            assert_eq!(p(n, a), None, "{n} {a:?}");
        }
    }
}
