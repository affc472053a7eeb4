//! Node-kind helpers over tree-sitter-bash's syntax tree, shared by the walk.

use std::sync::OnceLock;
use tree_sitter::{Language, Node, TreeCursor};

/// The grammar's kind and field names by id, read once. `Node::kind` and
/// `TreeCursor::field_name` look the name up in the grammar and validate it as UTF-8 on
/// every call, and `child_by_field_name` compares field names as C strings: together a
/// tenth of an analysis. Ids index these tables instead.
struct Names {
    kinds: Vec<&'static str>,
    fields: Vec<Option<&'static str>>,
}

fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let language: Language = tree_sitter_bash::LANGUAGE.into();
        let kinds = (0..language.node_kind_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| language.node_kind_for_id(id))
                    .unwrap_or("")
            })
            .collect();
        let fields = (0..=language.field_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| language.field_name_for_id(id))
            })
            .collect();
        Names { kinds, fields }
    })
}

/// `node.kind()`, from the table (the same name: a kind id names one grammar symbol).
/// Ids outside it (the parser's `ERROR`) ask tree-sitter.
pub(crate) fn kind(node: Node<'_>) -> &'static str {
    match names().kinds.get(usize::from(node.kind_id())) {
        Some(name) if !name.is_empty() => name,
        _ => node.kind(),
    }
}

/// `cursor.field_name()`, from the table.
pub(crate) fn field_name(cursor: &TreeCursor<'_>) -> Option<&'static str> {
    let id = usize::from(cursor.field_id()?.get());
    names().fields.get(id).copied().flatten()
}

/// `node.child_by_field_name(field)` through the field's id (found in the table).
pub(crate) fn child_by_field<'t>(node: Node<'t>, field: &str) -> Option<Node<'t>> {
    let id = names().fields.iter().position(|f| *f == Some(field))?;
    node.child_by_field_id(u16::try_from(id).ok()?)
}

/// A node's children (named and anonymous) with their grammar field names, in order.
pub(crate) fn children_with_fields(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
    collect(
        node,
        node.child_count(),
        |_| true,
        |c| (field_name(c), c.node()),
    )
}

/// Redirection node kinds a command may have.
pub(crate) fn is_redirect(kind: &str) -> bool {
    matches!(
        kind,
        "file_redirect" | "heredoc_redirect" | "herestring_redirect"
    )
}

/// What the command walk assumes instead of reading its children's fields (dear): in
/// tree-sitter-bash a command's `name` field is its one `command_name` child (no other
/// child has that kind), and its `redirect` field holds only redirection kinds
/// (node-types.json). Checked in debug builds, so on every test.
pub(crate) fn command_fields_follow_kinds(node: Node<'_>) -> bool {
    children_with_fields(node).into_iter().all(|(f, c)| {
        (f == Some("name")) == (kind(c) == "command_name")
            && (f != Some("redirect") || is_redirect(kind(c)))
    })
}

/// Lists up to this long are read child by child (`Node::child(i)`), longer ones with a
/// cursor. Indexing skips the grammar's hidden nodes by their counts, which for a short
/// list is several times cheaper than a cursor's steps; but each index starts again from
/// the first child, so a long list (hostile text) would cost its square.
const INDEXED: usize = 16;

/// A node's children (named and anonymous), in order.
pub(crate) fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let count = node.child_count();
    if count <= INDEXED {
        return (0..count).filter_map(|i| node.child(i)).collect();
    }
    collect(node, count, |_| true, TreeCursor::node)
}

/// A node's named children, in order.
pub(crate) fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let count = node.named_child_count();
    if count <= INDEXED {
        return (0..count).filter_map(|i| node.named_child(i)).collect();
    }
    collect(node, count, Node::is_named, TreeCursor::node)
}

/// The first `count` children that pass `keep`, mapped by `item`. Unlike `Node::children`
/// it stops at the last one: a cursor's failing step past the end of a list is its
/// dearest (it climbs through the grammar's hidden nodes), and every list ended with one.
fn collect<'t, T>(
    node: Node<'t>,
    count: usize,
    keep: impl Fn(&Node<'t>) -> bool,
    item: impl Fn(&TreeCursor<'t>) -> T,
) -> Vec<T> {
    let mut items = Vec::with_capacity(count);
    if count == 0 {
        return items;
    }
    let mut cursor = node.walk();
    if !cursor.goto_first_child() {
        return items;
    }
    loop {
        if keep(&cursor.node()) {
            items.push(item(&cursor));
            if items.len() == count {
                break;
            }
        }
        if !cursor.goto_next_sibling() {
            break;
        }
    }
    items
}

/// Word-like node kinds: what a command's arguments and a `for` loop's values are made of.
pub(crate) fn is_argument(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "number"
            | "command_name"
    )
}

/// Do two arguments touch? The shell reads adjacent text as one word; tree-sitter-bash
/// sometimes splits one (`~/$a$b/x` as `~/$a$` and `b/x`), so what it gives is not what
/// runs.
pub(crate) fn split_word<'t>(args: impl Iterator<Item = Node<'t>>) -> bool {
    let mut prev_end = None;
    for n in args {
        if prev_end == Some(n.start_byte()) {
            return true;
        }
        prev_end = Some(n.end_byte());
    }
    false
}

/// Statement node kinds of tree-sitter-bash.
pub(crate) fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "redirected_statement"
            | "variable_assignment"
            | "variable_assignments"
            | "command"
            | "declaration_command"
            | "unset_command"
            | "test_command"
            | "negated_command"
            | "for_statement"
            | "c_style_for_statement"
            | "while_statement"
            | "if_statement"
            | "case_statement"
            | "pipeline"
            | "list"
            | "subshell"
            | "compound_statement"
            | "function_definition"
            | "do_group"
            | "program"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node of varied texts (aliased kinds, anonymous tokens, a parse error): the
    /// tables give what tree-sitter gives.
    #[test]
    fn tables_agree_with_tree_sitter() {
        let texts = [
            "cat a.txt | grep -i foo | sort | tee out.txt | head -n 5",
            "for f in *.txt; do echo \"$f\" >> out; done; x=1 y=$(ls) cmd 2>&1 <<< 'w'",
            "if [[ $a -eq 1 ]]; then (cd /; ls) else { f() { :; }; } fi",
            "case $x in a) echo $'\\n' ;; esac; echo $((1+2)) ${x:-y} <(ls) `pwd`",
            "while read -r l; do echo; done < f; cat <<EOF\n$HOME\nEOF\n",
            "echo ( ; fi",
        ];
        // Lists longer than `INDEXED`, read with a cursor.
        let long_pipeline = vec!["ls"; INDEXED + 4].join(" | ");
        let long_word = format!("echo {}", "a$b".repeat(INDEXED));
        let texts = texts
            .iter()
            .map(|t| t.to_string())
            .chain([long_pipeline, long_word]);
        let mut error_seen = false;
        let mut long_lists = 0;
        for text in texts {
            let text = text.as_str();
            let tree = super::super::parse(text).expect("parses");
            let mut cursor = tree.walk();
            let mut visited = 0;
            'walk: loop {
                let node = cursor.node();
                visited += 1;
                assert_eq!(kind(node), node.kind(), "in {text:?}");
                assert_eq!(field_name(&cursor), cursor.field_name(), "in {text:?}");
                error_seen |= node.is_error();
                long_lists += usize::from(node.child_count() > INDEXED);
                let mut walk = node.walk();
                assert_eq!(children(node), node.children(&mut walk).collect::<Vec<_>>());
                assert_eq!(
                    named_children(node),
                    node.named_children(&mut walk).collect::<Vec<_>>()
                );
                let fields: Vec<_> = children_with_fields(node)
                    .into_iter()
                    .map(|(f, _)| f)
                    .collect();
                let expected: Vec<_> = (0..node.child_count())
                    .map(|i| node.field_name_for_child(u32::try_from(i).expect("small")))
                    .collect();
                assert_eq!(fields, expected, "in {text:?}");
                if let Some(f) = cursor.field_name() {
                    let parent = node.parent().expect("a field has a parent");
                    assert_eq!(
                        child_by_field(parent, f),
                        parent.child_by_field_name(f),
                        "in {text:?}"
                    );
                }
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                }
            }
            assert!(visited > 5, "walked {text:?}");
        }
        assert!(error_seen, "an ERROR node was checked");
        assert!(long_lists >= 2, "long lists were checked");
        assert_eq!(
            child_by_field(
                super::super::parse("ls").expect("parses").root_node(),
                "no such field"
            ),
            None
        );
    }
}
