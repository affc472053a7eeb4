//! The statements `statement` dispatches to that need more than a line: pipelines,
//! function definitions, loops and conditionals, assignments and declarations.

use super::super::{inert, Stdin, Word};
use super::{child_by_field, is_statement, kind, named_children, Analyser, Env};
use tree_sitter::Node;

impl Analyser<'_> {
    /// Each stage reads a pipe, except the first.
    pub(super) fn pipeline(&mut self, node: Node, src: &str, env: &Env) {
        let children = named_children(node);
        let piped = env.with_stdin(Stdin::Pipe);
        let mut i = 0;
        while let Some(&child) = children.get(i) {
            let e = if i == 0 { env } else { &piped };
            i += 1;
            if kind(child) == "comment" {
                continue;
            }
            // `find … | xargs CMD`: analysed as `find … -exec CMD {} +`; `echo … | xargs CMD`:
            // as the command xargs runs (`pipes`).
            if let Some(&next) = children.get(i) {
                if self.find_xargs(child, next, src, e)
                    || self.printed_to_xargs(child, next, src, e)
                {
                    i += 1;
                    continue;
                }
            }
            self.statement(child, src, e);
        }
    }

    /// The name is remembered (a later call of it is not the program of that name); the
    /// body is analysed where it is defined.
    pub(super) fn function_definition(&mut self, node: Node, src: &str, env: &Env) {
        if let Some(name) = child_by_field(node, "name") {
            self.functions.insert(src[name.byte_range()].to_string());
        }
        if let Some(body) = child_by_field(node, "body") {
            self.statement(body, src, env);
        }
    }

    pub(super) fn for_statement(&mut self, node: Node, src: &str, env: &Env) {
        self.for_loop(node, src, env);
        // The loop variable takes the loop's values: `for PATH in …` rebinds.
        if let Some(v) = child_by_field(node, "variable") {
            self.gate(inert::variable_gate(&src[v.byte_range()]));
        }
    }

    /// `if`, `while`, `case`, C-style `for`: bodies are statements; conditions, loop values
    /// and patterns are words or expressions, scanned for substitutions.
    pub(super) fn control_flow(&mut self, node: Node, src: &str, env: &Env) {
        let children = named_children(node);
        for child in children {
            if is_statement(kind(child)) {
                self.statement(child, src, env);
            } else {
                self.scan(child, src, env);
            }
        }
        if kind(node) == "c_style_for_statement" {
            self.gate(inert::arithmetic_gate(node, src).map(|_| {
                "a C-style `for` loop: its expressions are arithmetic on variables".to_string()
            }));
        }
    }

    /// `a=1 b=$x`: a segment with no command that sets those names.
    pub(super) fn assignment_statement(&mut self, node: Node, src: &str, env: &Env) {
        let assigned = self.assignments(node, src, env);
        for (name, _) in &assigned {
            self.gate(inert::variable_gate(name));
        }
        if let [(_, value)] = assigned.as_slice() {
            if kind(node) == "variable_assignment" {
                self.record_known(node, src, value.as_ref());
            }
        }
        let names: Vec<String> = assigned.into_iter().map(|(n, _)| n).collect();
        if !names.is_empty() {
            let mut e = env.clone();
            e.env_assignments.extend(names);
            let seg = self.segment_base(&src[node.byte_range()], Vec::new(), &e);
            self.push(seg);
        }
    }

    /// `export A=b`, `local x`, `unset x`, `[[ … ]]`: words only, the builtin as program.
    pub(super) fn declaration(&mut self, node: Node, src: &str, env: &Env) {
        let text = &src[node.byte_range()];
        let mut names = Vec::new();
        let children = named_children(node);
        let mut argv = Vec::new();
        if let Some(first) = node.child(0) {
            argv.push(Word::literal(&src[first.byte_range()]));
        }
        if kind(node) == "test_command" {
            self.gate(inert::test_expression_gate(node, src));
        }
        let exported = text.starts_with("export")
            || children.iter().any(|c| {
                kind(*c) == "word" && {
                    let w = &src[c.byte_range()];
                    w.starts_with('-') && w.contains('x')
                }
            });
        for child in children {
            if kind(child) == "variable_assignment" {
                for (name, value) in self.assignments(child, src, env) {
                    let value = value.and_then(|w| w.value);
                    self.gate(if exported {
                        inert::env_gate(&name, value.as_deref())
                    } else {
                        inert::variable_gate(&name)
                    });
                    names.push(name);
                }
            } else {
                let w = self.word(child, src, env);
                argv.push(w);
            }
        }
        let mut e = env.clone();
        e.env_assignments.extend(names);
        let mut seg = self.segment_base(text, argv, &e);
        seg.program = seg.argv.first().and_then(|w| w.value.clone());
        seg.trusted_name = true;
        seg.trusted_location = true;
        self.push(seg);
    }
}
