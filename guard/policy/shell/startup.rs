//! What a shell start-up file (`/etc/profile`, `~/.profile`, what they source) can leave
//! set. OpenClaw runs every command as `/bin/sh -lc TEXT`, so those files run before the
//! text; the analysis may take a variable to be unset at the start of the text only when
//! no start-up file can set it.
//!
//! The answer is a superset, read from the file's syntax tree: every identifier-like token
//! outside comments that holds a lower-case letter (the only names the analysis ever takes
//! as unset, see `words`). A file that names what it sets at run time (`eval`, `trap`,
//! `read "$v"`, `export "$n=…"`, arithmetic on `$v`, `. "$f"` with `f` not a loop over
//! literal globs) is `dynamic`: then nothing is known. Sourced files are listed for the
//! caller (the host) to scan in turn.

use super::parse;
use super::walk::{child_by_field, kind, named_children};
use std::collections::BTreeSet;
use tree_sitter::Node;

/// One start-up file, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartupScan {
    /// Identifier tokens outside comments with a lower-case letter: a superset of the names
    /// the file sets itself.
    pub names: BTreeSet<String>,
    /// The files it sources (`. FILE`, `source FILE`), as written: literal paths or globs,
    /// with `~/` and `$HOME/` for the caller to expand.
    pub sources: Vec<String>,
    /// It sets or sources something named only at run time: no name is known unset.
    pub dynamic: bool,
}

/// Builtins that set a variable named by an argument: dynamic when an argument expands
/// (`printf`: its `-v` operand).
const SETTERS: &[&str] = &["read", "mapfile", "readarray", "getopts", "let"];

/// Reads one start-up file's text.
pub fn scan_startup(text: &str) -> StartupScan {
    let mut scan = StartupScan::default();
    let Some(tree) = parse(text) else {
        scan.dynamic = true;
        return scan;
    };
    let root = tree.root_node();
    if root.has_error() {
        scan.dynamic = true;
        return scan;
    }
    let mut comments = Vec::new();
    visit(root, text, &mut scan, &mut comments);
    // Tokens of the text with the comments blanked out.
    let mut code = text.as_bytes().to_vec();
    for (start, end) in comments {
        code[start..end].fill(b' ');
    }
    let code = String::from_utf8_lossy(&code);
    let mut at = 0;
    for token in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let start = at;
        at += token.len() + 1;
        // An option (`[ -x f ]`, `set -e`) names no variable.
        let option = code[..start].ends_with('-')
            && code[..start.saturating_sub(1)].ends_with([' ', '\t', '\n', '[', '(', ';']);
        if token.bytes().any(|b| b.is_ascii_lowercase())
            && !token.starts_with(|c: char| c.is_ascii_digit())
            && !option
        {
            scan.names.insert(token.to_string());
        }
    }
    if scan.names.contains("eval") || scan.names.contains("trap") {
        scan.dynamic = true;
    }
    scan
}

fn visit(node: Node, src: &str, scan: &mut StartupScan, comments: &mut Vec<(usize, usize)>) {
    match kind(node) {
        "comment" => {
            comments.push((node.start_byte(), node.end_byte()));
            return;
        }
        "command" => command(node, src, scan),
        "declaration_command" if !static_names(node, src) => scan.dynamic = true,
        "arithmetic_expansion" if src[node.byte_range()].contains('$') => scan.dynamic = true,
        "compound_statement"
            if src[node.byte_range()].starts_with("((") && src[node.byte_range()].contains('$') =>
        {
            scan.dynamic = true
        }
        _ => {}
    }
    for child in named_children(node) {
        visit(child, src, scan, comments);
    }
}

/// A command: `.`/`source` (listed), a setter with an expanding argument or a command
/// name that expands (dynamic).
fn command(node: Node, src: &str, scan: &mut StartupScan) {
    let mut words: Vec<Node> = named_children(node)
        .into_iter()
        .filter(|c| kind(*c) != "variable_assignment" && !kind(*c).ends_with("redirect"))
        .collect();
    let text = |n: &Node| src[n.byte_range()].to_string();
    // `command .`, `builtin source`: the same builtin.
    while words
        .first()
        .is_some_and(|w| matches!(text(w).as_str(), "command" | "builtin"))
    {
        words.remove(0);
    }
    let Some(name) = words.first() else { return };
    let name = text(name);
    if name.contains(['$', '`', '\\', '"', '\'']) {
        scan.dynamic = true;
        return;
    }
    if name == "." || name == "source" {
        match words.get(1).map(|w| sourced(*w, src)) {
            Some(Some(paths)) => scan.sources.extend(paths),
            _ => scan.dynamic = true,
        }
        return;
    }
    let expands = |w: &Node| text(w).contains(['$', '`', '\\']);
    let dynamic = if name == "printf" {
        words
            .windows(2)
            .any(|p| text(&p[0]) == "-v" && expands(&p[1]))
    } else {
        SETTERS.contains(&name.as_str()) && words[1..].iter().any(expands)
    };
    scan.dynamic |= dynamic;
}

/// `export`/`declare`/`local`/`readonly`/`typeset`: does every name it sets stand written
/// (`export PATH="$HOME/bin:$PATH"` does; `export "$n=1"` does not)?
fn static_names(node: Node, src: &str) -> bool {
    named_children(node).into_iter().all(|c| match kind(c) {
        "variable_name" => true,
        "variable_assignment" => {
            child_by_field(c, "name").is_some_and(|n| kind(n) == "variable_name")
        }
        "word" => {
            let t = &src[c.byte_range()];
            t.starts_with('-') && !t.contains(['$', '`', '\\'])
                || t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        }
        _ => false,
    })
}

/// What `. WORD` sources: a literal path (`~/`, `$HOME/` kept for the caller), or the
/// values of the `for` loop whose variable it is (`for i in /etc/profile.d/*.sh; do . $i`).
fn sourced(word: Node, src: &str) -> Option<Vec<String>> {
    let text = src[word.byte_range()].trim_matches('"');
    let home_rel = text
        .strip_prefix("$HOME/")
        .or_else(|| text.strip_prefix("${HOME}/"))
        .or_else(|| text.strip_prefix("~/"));
    let plain = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+*?".contains(&b))
    };
    if let Some(rest) = home_rel {
        return plain(rest).then(|| vec![format!("~/{rest}")]);
    }
    if plain(text) && text.starts_with('/') {
        return Some(vec![text.to_string()]);
    }
    let var = text
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .or_else(|| text.strip_prefix('$'))?;
    // A loop variable the file also assigns may hold anything when sourced.
    if src.contains(&format!("{var}=")) {
        return None;
    }
    loop_values(word, src, var)
}

/// The literal absolute values of the enclosing `for VAR in …` loop.
fn loop_values(node: Node, src: &str, var: &str) -> Option<Vec<String>> {
    let mut n = node.parent();
    while let Some(p) = n {
        if kind(p) == "for_statement"
            && child_by_field(p, "variable").is_some_and(|v| &src[v.byte_range()] == var)
        {
            let mut cursor = p.walk();
            let values: Vec<String> = p
                .children_by_field_name("value", &mut cursor)
                .map(|v| src[v.byte_range()].to_string())
                .collect();
            let literal = |v: &String| {
                v.starts_with('/')
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"/._-+*?".contains(&b))
            };
            return (!values.is_empty() && values.iter().all(literal)).then_some(values);
        }
        n = p.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &StartupScan) -> Vec<&str> {
        s.names.iter().map(String::as_str).collect()
    }

    /// Debian 12's `/etc/profile`: its loop over `/etc/profile.d/*.sh` and the bash rc file
    /// are sources; `i` (the loop variable) is a name it sets.
    #[test]
    fn debian_profile_lists_its_sources_and_names() {
        let text = r#"# written by nobody
if [ "$(id -u)" -eq 0 ]; then
  PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
fi
export PATH
if [ "${PS1-}" ]; then
  if [ "${BASH-}" ] && [ "$BASH" != "/bin/sh" ]; then
    if [ -f /etc/bash.bashrc ]; then
      . /etc/bash.bashrc
    fi
  fi
fi
if [ -d /etc/profile.d ]; then
  for i in /etc/profile.d/*.sh; do
    if [ -r $i ]; then
      . $i
    fi
  done
  unset i
fi
"#;
        let s = scan_startup(text);
        assert!(!s.dynamic);
        assert_eq!(s.sources, ["/etc/bash.bashrc", "/etc/profile.d/*.sh"]);
        assert!(s.names.contains("i"), "{:?}", names(&s));
        assert!(!s.names.contains("nobody"), "comments are not code");
    }

    #[test]
    fn home_relative_sources_are_kept_for_the_caller() {
        let s = scan_startup(". \"$HOME/.cargo/env\"\nif [ \"$BASH\" ]; then . ~/.bashrc; fi\n");
        assert!(!s.dynamic);
        assert_eq!(s.sources, ["~/.cargo/env", "~/.bashrc"]);
    }

    /// Each of these sets a name chosen at run time, or runs text: nothing is known.
    #[test]
    fn run_time_names_are_dynamic() {
        for text in [
            "eval \"$(dircolors)\"",
            "trap 'x=1' EXIT",
            "read \"$v\" < f",
            "export \"$n=1\"",
            "declare \"$a\"=b",
            "printf -v \"$v\" %s x",
            "local -n r=x; r=\"$(cmd)\"; export \"${r}\"=1",
            "readonly $v",
            ": $(( $n = 1 ))",
            "(( $n = 1 ))",
            ". \"$f\"",
            "source $(pick)",
            "$cmd x=1",
            "command . \"$f\"",
            "for i in $(ls /etc/p); do . $i; done",
            "for i in a*.sh; do . $i; done",
            "for i in /etc/p/*.sh; do i=/tmp/x; . $i; done",
            "if then fi (",
        ] {
            assert!(scan_startup(text).dynamic, "{text}");
        }
    }

    #[test]
    fn options_are_not_names() {
        let s = scan_startup("[ -x /usr/bin/a ] && set -e\nb=-y\n");
        assert!(!s.names.contains("x") && !s.names.contains("e"));
        assert!(s.names.contains("b"));
    }

    #[test]
    fn static_setters_are_names_not_dynamic() {
        let s = scan_startup(
            "read line < /etc/x\nexport foo=1 PATH=\"$HOME/bin:$PATH\"\nbar=2\n: ${baz:=3}\nprintf '%s' \"$x\"\n",
        );
        assert!(!s.dynamic);
        for n in ["line", "foo", "bar", "baz"] {
            assert!(s.names.contains(n), "{n}");
        }
    }
}
