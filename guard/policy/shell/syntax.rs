//! Node-kind helpers over tree-sitter-bash's syntax tree, shared by the walk.

use tree_sitter::Node;

/// A node's children (named and anonymous) with their grammar field names, in order.
pub(crate) fn children_with_fields(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
    let mut cursor = node.walk();
    let mut items = Vec::new();
    if cursor.goto_first_child() {
        loop {
            items.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
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
pub(crate) fn split_word<'a, 'b: 'a>(
    args: impl Iterator<Item = &'a (Option<&'static str>, Node<'b>)>,
) -> bool {
    let mut prev_end = None;
    for (_, n) in args {
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
