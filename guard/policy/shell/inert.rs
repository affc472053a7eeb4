//! Which shell constructs are known inert. Bash evaluates code in places that look like
//! data: arithmetic (`$(( ))`, `(( ))`, `let`, `declare -i`, `[[ x -eq y ]]`, array
//! subscripts) evaluates a variable's *value* as an expression, and `a[$(cmd)]` inside it
//! runs `cmd`; `${x@P}` expands a prompt; `printf -v`, `read`, `for`, namerefs rebind any
//! variable, `PATH` included; `alias`, `hash -p`, `trap`, `enable -f`, `history`, `complete
//! -C` plant code for later. So a construct is autonomous only when it is on the lists
//! below in an inert form; anything else records a gate (a human sees it). Builtins are
//! not inert by default.

use super::syntax::{child_by_field, kind, named_children};
use super::Word;
use crate::policy::env::{classify, is_inert_assignment, EnvName};

pub(crate) use super::builtins::builtin_gate;
use tree_sitter::Node;

/// Is `s` a shell identifier (`[A-Za-z_][A-Za-z0-9_]*`)?
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

pub(super) fn is_integer(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit())
}

/// May the text assign the shell variable `name` (not exported)? Names the shell or a
/// program reads (`PATH`, `IFS`, `PS4`, `CDPATH`, `HISTFILE`, an exported `PAGER`, ...)
/// are upper case by convention; lower-case names are the script's own.
pub(crate) fn variable_gate(name: &str) -> Option<String> {
    if let Some((base, index)) = name.split_once('[') {
        let index = index.trim_end_matches(']');
        if !is_integer(index) {
            return Some(format!(
                "assigns the array element {name}: its subscript is evaluated as code"
            ));
        }
        return variable_gate(base);
    }
    if !is_identifier(name) {
        return Some(format!(
            "assigns {name:?}, which is not a plain variable name"
        ));
    }
    let own = name.bytes().any(|b| b.is_ascii_lowercase());
    match classify(name) {
        EnvName::Inert => None,
        EnvName::Other if own => None,
        _ => Some(format!(
            "sets {name}, a variable the shell or programs read (only lower-case names and \
             the formatting variables are known inert)"
        )),
    }
}

/// May `name=value` be in a command's environment (a prefix, `export`, `env`)?
pub(crate) fn env_gate(name: &str, value: Option<&str>) -> Option<String> {
    match value {
        Some(v) if is_inert_assignment(name, v) => None,
        None if crate::policy::env::is_inert_name(name) => Some(format!(
            "sets {name} to a value not known before the command runs"
        )),
        _ => Some(format!(
            "puts {name} in the environment of a program ({}): only formatting variables \
             are known inert",
            match classify(name) {
                EnvName::Loads => "it loads code or configuration",
                EnvName::Replaced => "the deployment sets it",
                _ => "a name the policy does not know",
            }
        )),
    }
}

/// An arithmetic expression is inert when it names no variable: bash evaluates a
/// variable's value as an expression again (`x='a[$(cmd)]'; $((x))` runs `cmd`). The
/// always-numeric specials `$#`, `$?`, `$$`, `$!` are fine.
pub(crate) fn arithmetic_gate(node: Node, src: &str) -> Option<String> {
    fn walk(node: Node, src: &str) -> bool {
        match kind(node) {
            "number" => true,
            "simple_expansion" => matches!(&src[node.byte_range()], "$#" | "$?" | "$$" | "$!"),
            "variable_name"
            | "word"
            | "expansion"
            | "subscript"
            | "command_substitution"
            | "string"
            | "raw_string"
            | "concatenation"
            | "ansi_c_string" => false,
            _ => {
                let children = named_children(node);
                children.into_iter().all(|c| walk(c, src))
            }
        }
    }
    (!walk(node, src)).then(|| {
        format!(
            "arithmetic on variables ({}): bash evaluates their values as code",
            truncate(&src[node.byte_range()])
        )
    })
}

pub(crate) fn truncate(s: &str) -> String {
    if s.len() <= 60 {
        return s.to_string();
    }
    let mut end = 60;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `${…}` forms that evaluate code: subscripts other than literals (`${a[$i]}`),
/// indirection (`${!x}`), transformations other than quoting/case (`${x@P}` expands a
/// prompt), substring offsets that are not literals (arithmetic), `${X:=v}` assigning a
/// variable the shell reads.
pub(crate) fn expansion_gate(text: &str) -> Option<String> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    let gate = |why: &str| Some(format!("{why} in {}", truncate(text)));
    if inner.starts_with('!') {
        return gate("indirect expansion (the value names what to expand)");
    }
    let inner = inner
        .strip_prefix('#')
        .filter(|r| !r.is_empty())
        .unwrap_or(inner);
    let name_len = if inner.starts_with(|c: char| c.is_ascii_digit() || "@*#?$!-".contains(c)) {
        1
    } else {
        inner
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count()
    };
    let (name, rest) = inner.split_at(name_len.min(inner.len()));
    if let Some(sub) = rest.strip_prefix('[') {
        let idx = sub.split(']').next().unwrap_or("");
        if !(idx == "@" || idx == "*" || is_integer(idx)) {
            return gate("an array subscript (evaluated as arithmetic)");
        }
        return None;
    }
    if let Some(op) = rest.strip_prefix('@') {
        if !matches!(op, "Q" | "U" | "u" | "L" | "a") {
            return gate("a parameter transformation");
        }
        return None;
    }
    if let Some(r) = rest.strip_prefix(':') {
        match r.chars().next() {
            Some('-' | '+' | '?') => {}
            Some('=') => return variable_gate(name),
            _ => {
                if !r.split(':').all(|p| p.trim().is_empty() || is_integer(p)) {
                    return gate("a substring offset (evaluated as arithmetic)");
                }
            }
        }
    }
    if rest.starts_with('=') {
        return variable_gate(name);
    }
    None
}

/// `[[ … ]]`: arithmetic comparisons between anything but literals, `-v`/`-R` on anything
/// but a plain name.
pub(crate) fn test_expression_gate(node: Node, src: &str) -> Option<String> {
    let children = named_children(node);
    let op = child_by_field(node, "operator").map(|o| &src[o.byte_range()]);
    match (kind(node), op) {
        ("binary_expression", Some(op)) if ARITH_OPS.contains(&op) => {
            for side in ["left", "right"] {
                let ok = child_by_field(node, side).is_some_and(|n| {
                    kind(n) == "number" || (kind(n) == "word" && is_integer(&src[n.byte_range()]))
                });
                if !ok {
                    return Some(format!(
                        "an arithmetic comparison ({}): bash evaluates a variable's value as code",
                        truncate(&src[node.byte_range()])
                    ));
                }
            }
        }
        ("unary_expression", Some("-v" | "-R")) => {
            let operand = children.iter().find(|c| kind(**c) != "test_operator");
            if !operand.is_some_and(|n| kind(*n) == "word" && is_identifier(&src[n.byte_range()])) {
                return Some(format!(
                    "a variable test on a subscript ({})",
                    truncate(&src[node.byte_range()])
                ));
            }
        }
        _ => {}
    }
    children
        .into_iter()
        .find_map(|c| test_expression_gate(c, src))
}

const ARITH_OPS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// `test`/`[` with a static argv: the same rules as [`test_expression_gate`].
pub(super) fn test_args_gate(args: &[Word]) -> Option<String> {
    for (i, w) in args.iter().enumerate() {
        let v = w.value.as_deref();
        if v.is_some_and(|v| ARITH_OPS.contains(&v)) {
            let lit = |j: Option<usize>| {
                j.and_then(|j| args.get(j))
                    .and_then(|w| w.value.as_deref())
                    .is_some_and(is_integer)
            };
            if !lit(i.checked_sub(1)) || !lit(Some(i + 1)) {
                return Some(
                    "an arithmetic comparison of a non-literal: bash evaluates its value as code"
                        .into(),
                );
            }
        }
        if matches!(v, Some("-v" | "-R"))
            && !args
                .get(i + 1)
                .and_then(|w| w.value.as_deref())
                .is_some_and(is_identifier)
        {
            return Some("a variable test on a subscript or unknown name".into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions() {
        for ok in [
            "${x}",
            "${x:-a}",
            "${#x}",
            "${x%/}",
            "${a[@]}",
            "${a[1]}",
            "${x@Q}",
            "${x:1:2}",
            "${lower:=1}",
        ] {
            assert_eq!(expansion_gate(ok), None, "{ok}");
        }
        for bad in [
            "${a[$i]}",
            "${a[x]}",
            "${!x}",
            "${x@P}",
            "${x:$n:1}",
            "${x:n}",
            "${PATH:=/tmp}",
            "${IFS=x}",
        ] {
            assert!(expansion_gate(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn variables() {
        assert_eq!(variable_gate("x"), None);
        assert_eq!(variable_gate("my_var2"), None);
        assert_eq!(variable_gate("LANG"), None);
        for bad in [
            "PATH",
            "IFS",
            "PS4",
            "CDPATH",
            "FOO",
            "a[$(id)]",
            "a[x]",
            "http_proxy",
            "ld_preload",
        ] {
            assert!(variable_gate(bad).is_some(), "{bad}");
        }
        assert_eq!(variable_gate("a[3]"), None);
    }
}
