//! Which shell reads the text, and the constructs whose meaning depends on it. The parser
//! is tree-sitter-bash; Debian's `/bin/sh` (what OpenClaw's node runs, `sh -lc TEXT`) is
//! dash, and the gateway host runs `$SHELL -c`, which the guard does not know. Where bash
//! and a POSIX shell read a construct differently the tree is bash's reading only: `ls
//! $'\' ; rm -rf x ; #\''` is one `ls` to bash and an `rm` to dash. So a text that any
//! shell but bash runs is analysed only when it holds none of these constructs; one that
//! does is a problem (gated, never autonomous). Each construct here is checked against the
//! real `bash -c` and `dash -c` in `tests/shell_dialect.rs`.

use std::path::Path;
use tree_sitter::Node;

/// The shell language a text is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// GNU bash (`bash -c`, or an `sh` that is bash): the parser's own language.
    Bash,
    /// dash or busybox ash: POSIX sh, where bash-only syntax means something else.
    Posix,
    /// Not known (the gateway's `$SHELL`, or a shell found nowhere): only what bash and
    /// POSIX sh read alike is analysed.
    Unknown,
    /// zsh, ksh, mksh, yash: languages of their own, not analysed at all.
    Other,
}

impl Dialect {
    /// The dialect of the shell program at `real` (the resolved, symlink-free path).
    pub fn of_program(real: Option<&Path>) -> Dialect {
        let Some(name) = real.and_then(Path::file_name).and_then(|n| n.to_str()) else {
            return Dialect::Unknown;
        };
        match name {
            "bash" => Dialect::Bash,
            "dash" | "ash" | "busybox" => Dialect::Posix,
            "zsh" | "ksh" | "ksh93" | "mksh" | "yash" | "pdksh" | "lksh" => Dialect::Other,
            _ => Dialect::Unknown,
        }
    }

    /// Its name as the audit record and the agent see it.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Bash => "bash",
            Dialect::Posix => "POSIX sh (dash)",
            Dialect::Unknown => "an unknown shell (bash or POSIX sh)",
            Dialect::Other => "a shell the guard does not parse",
        }
    }
}

/// bash builtins and keywords that a POSIX shell looks up as programs instead.
const BASH_ONLY_COMMANDS: &[&str] = &[
    "source",
    "declare",
    "typeset",
    "let",
    "shopt",
    "mapfile",
    "readarray",
    "enable",
    "builtin",
    "caller",
    "compgen",
    "complete",
    "compopt",
    "disown",
    "dirs",
    "pushd",
    "popd",
    "suspend",
    "help",
    "history",
    "logout",
    "bind",
    "coproc",
    "time",
    "[[",
];

/// Anonymous tokens of bash-only syntax.
const BASH_ONLY_TOKENS: &[&str] = &[
    "[[", "]]", "&>", "&>>", "|&", "function", "((", "$[", "select", ";&", ";;&", "<<<", "=~",
];

/// Named nodes of bash-only syntax.
const BASH_ONLY_NODES: &[&str] = &[
    "ansi_c_string",
    "translated_string",
    "herestring_redirect",
    "array",
    "subscript",
    "process_substitution",
    "brace_expression",
];

/// Most nodes looked at (the walk's own bound is larger; this one only reads).
const MAX_NODES: usize = 50_000;

/// How a bash-only construct changes what a POSIX shell does with the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hazard {
    /// Other words, commands, redirections or control flow: what runs is not what the
    /// tree says (`$'…'`, `&>`, `[[`, `<(…)`, `((…))`, …). Gates whenever the shell may
    /// be other than bash.
    Structure(String),
    /// `{a,b}`: a POSIX shell keeps the word literal (the path check reads both).
    Braces(String),
    /// A bash-only `${…}` form: a POSIX shell stops the script there ("Bad substitution"),
    /// so it runs a prefix of what bash runs.
    Expansion(String),
    /// A bash builtin a POSIX shell looks up as a program of that name.
    Builtin(String),
}

impl Hazard {
    /// The construct, as the reason names it.
    pub fn what(&self) -> &str {
        match self {
            Hazard::Structure(w) | Hazard::Braces(w) | Hazard::Expansion(w) => w,
            Hazard::Builtin(w) => w.as_str(),
        }
    }
}

/// Every construct in `root` that bash reads differently from POSIX sh (the first
/// structural one ends the list).
pub fn bash_only(root: Node, src: &str) -> Vec<Hazard> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    let mut seen = 0usize;
    while let Some(n) = stack.pop() {
        seen += 1;
        if seen > MAX_NODES {
            out.push(Hazard::Structure(
                "more syntax than the dialect check reads".into(),
            ));
            return out;
        }
        if let Some(h) = node_hazard(n, src) {
            let structural = matches!(h, Hazard::Structure(_));
            out.push(h);
            if structural {
                return out;
            }
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    out
}

fn text<'s>(n: Node, src: &'s str) -> &'s str {
    src.get(n.byte_range()).unwrap_or_default()
}

fn node_hazard(n: Node, src: &str) -> Option<Hazard> {
    let kind = n.kind();
    let t = text(n, src);
    let structure = |w: String| Some(Hazard::Structure(w));
    if !n.is_named() {
        if BASH_ONLY_TOKENS.contains(&kind) {
            return structure(format!("`{kind}`"));
        }
        // `$"…"` is bash's translated string; to dash a `$` and a quoted word.
        if kind == "$" && n.next_sibling().is_some_and(|s| s.kind() == "string") {
            return structure("`$\"…\"`".into());
        }
        return None;
    }
    if BASH_ONLY_NODES.contains(&kind) {
        return structure(format!("`{}`", short(t)));
    }
    match kind {
        "expansion" if !posix_expansion(t) => Some(Hazard::Expansion(format!("`{}`", short(t)))),
        // dash reads one digit as a descriptor: `10>f` is the word `10` and `>f`.
        "file_descriptor" if t.len() > 1 => structure(format!("the descriptor `{t}`")),
        "declaration_command" => {
            let first = n.child(0).map(|c| text(c, src)).unwrap_or_default();
            matches!(first, "declare" | "typeset").then(|| Hazard::Builtin(first.to_string()))
        }
        "command_name" if t == "time" || t == "coproc" => structure(format!("`{t}`")),
        "command_name" if BASH_ONLY_COMMANDS.contains(&t) => Some(Hazard::Builtin(t.to_string())),
        "word" | "concatenation" if !inside_quotes(n) && brace_expands(t) => {
            Some(Hazard::Braces(format!("brace expansion `{}`", short(t))))
        }
        // `>&FILE` is `&>FILE` to bash, a bad descriptor to dash; `>&2` and `>&-` agree.
        "file_redirect" if dup_to_file(n, src) => structure(format!("`{}`", short(t))),
        // `{fd}>file` names a descriptor in bash; to dash `{fd}` is an argument.
        "file_redirect" | "heredoc_redirect"
            if n.prev_sibling()
                .is_some_and(|p| p.end_byte() == n.start_byte() && text(p, src).ends_with('}')) =>
        {
            structure("a `{NAME}` descriptor".into())
        }
        _ => None,
    }
}

/// Is `n` a `>&WORD` redirect whose WORD is not a descriptor number or `-`?
fn dup_to_file(n: Node, src: &str) -> bool {
    let mut c = n.walk();
    let dup = n
        .children(&mut c)
        .any(|ch| !ch.is_named() && ch.kind() == ">&");
    let dest = n
        .child_by_field_name("destination")
        .map(|d| text(d, src))
        .unwrap_or_default();
    dup && !(dest == "-" || (!dest.is_empty() && dest.bytes().all(|b| b.is_ascii_digit())))
}

fn short(t: &str) -> &str {
    match t.char_indices().nth(40) {
        Some((i, _)) => &t[..i],
        None => t,
    }
}

/// Is `n` inside a quoted string (where braces are literal to both shells)?
fn inside_quotes(n: Node) -> bool {
    let mut p = n.parent();
    while let Some(x) = p {
        if matches!(x.kind(), "string" | "raw_string" | "ansi_c_string") {
            return true;
        }
        p = x.parent();
    }
    false
}

/// Would bash brace-expand this unquoted word (`{a,b}`, `{1..3}`)? To dash it is literal.
/// Conservative: an unescaped `{` later followed by `,` or `..` and then `}`.
fn brace_expands(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\'' | b'"' => return false,
            b'{' => {
                let rest = &t[i + 1..];
                if let Some(close) = rest.find('}') {
                    let inner = &rest[..close];
                    if inner.contains(',') || inner.contains("..") {
                        return true;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    false
}

/// Is `${…}` one of POSIX's forms: `${N}`, `${#N}`, or `${N` OP WORD `}` with OP one of
/// `:-` `-` `:=` `=` `:?` `?` `:+` `+` `%` `%%` `#` `##`? (Substrings, replacement, case
/// changes, indirection, `@` transforms and subscripts are bash's.)
fn posix_expansion(t: &str) -> bool {
    let Some(inner) = t.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
        // `$x` and `$1` are POSIX; anything else the parser calls an expansion is not.
        return t.starts_with('$') && !t.starts_with("${");
    };
    let (inner, length) = match inner.strip_prefix('#') {
        Some(rest) if !rest.is_empty() => (rest, true),
        _ => (inner, false),
    };
    let name_len = if inner.starts_with(|c: char| c.is_ascii_digit()) {
        inner.bytes().take_while(u8::is_ascii_digit).count()
    } else if inner.starts_with(|c: char| "@*#?-$!".contains(c)) {
        1
    } else {
        inner
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
            .count()
    };
    if name_len == 0 {
        return false;
    }
    let op = &inner[name_len..];
    if op.is_empty() {
        return true;
    }
    if length {
        return false;
    }
    [
        ":-", ":=", ":?", ":+", "%%", "##", "-", "=", "?", "+", "%", "#",
    ]
    .iter()
    .any(|o| op.starts_with(o))
}

impl super::walk::Analyser<'_> {
    /// Records a problem for each construct of `root` the shell that runs the text may
    /// read otherwise than the tree does. The walk goes on after it (a secret the bash
    /// reading names still blocks); the problem keeps the text from being autonomous.
    /// Known POSIX sh: every bash-only construct. Unknown shell: what changes which
    /// commands run or which files are opened ([`Hazard::Structure`]), and a bash builtin
    /// name a POSIX shell would find as a program; a brace word's literal name is
    /// path-checked with its expansions, and a bash-only `${…}` stops a POSIX shell.
    pub(super) fn dialect_check(&mut self, root: Node, text: &str, env: &super::walk::Env) {
        for h in bash_only(root, text) {
            let gate = match (&h, env.dialect) {
                (_, Dialect::Posix) | (Hazard::Structure(_), _) => true,
                (Hazard::Builtin(name), _) => {
                    crate::policy::fs_memo::which(name, &self.ctx.path, &self.ctx.cwd)
                        .path
                        .is_some()
                }
                _ => false,
            };
            if gate {
                let why = format!(
                    "{} is bash syntax, and the text is run by {}, which reads it otherwise",
                    h.what(),
                    env.dialect.name()
                );
                self.problem(text, why, env);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_expansions_are_told_from_bash_ones() {
        for ok in [
            "${x}", "${10}", "${#x}", "${x:-d}", "${x-d}", "${x:=d}", "${x:?e}", "${x+a}",
            "${x%.c}", "${x%%.c}", "${x#a}", "${x##*/}", "${#}", "${@}", "${?}", "$x", "$1",
        ] {
            assert!(posix_expansion(ok), "{ok}");
        }
        for bad in [
            "${x:0:1}", "${x/a/b}", "${!x}", "${x^^}", "${x,,}", "${x@Q}", "${a[0]}", "${#a[@]}",
            "${x:1}", "${#x:-d}", "${!x*}",
        ] {
            assert!(!posix_expansion(bad), "{bad}");
        }
    }

    #[test]
    fn brace_expansion_is_seen_unless_escaped() {
        assert!(brace_expands("{a,b}"));
        assert!(brace_expands("x{1..3}y"));
        assert!(!brace_expands("{}"));
        assert!(!brace_expands("\\{a,b}"));
        assert!(!brace_expands("{a}"));
    }

    #[test]
    fn dialect_of_the_resolved_program() {
        use std::path::PathBuf;
        let d = |p: &str| Dialect::of_program(Some(&PathBuf::from(p)));
        assert_eq!(d("/usr/bin/dash"), Dialect::Posix);
        assert_eq!(d("/usr/bin/bash"), Dialect::Bash);
        assert_eq!(d("/bin/busybox"), Dialect::Posix);
        assert_eq!(d("/usr/bin/zsh"), Dialect::Other);
        assert_eq!(d("/opt/x/mysh"), Dialect::Unknown);
        assert_eq!(Dialect::of_program(None), Dialect::Unknown);
    }
}
