//! Redirections and here-documents: what a `redirected_statement` reads from and writes
//! to, and the stdin it gives the statement inside.

use super::walk::{
    children_with_fields, field_name, is_statement, kind, named_children, Analyser, Env,
};
use super::{Redirect, RedirectKind, Stdin, Word};
use tree_sitter::Node;

impl Analyser<'_> {
    pub(super) fn redirected(&mut self, node: Node, src: &str, env: &Env) {
        let mut redirects = Vec::new();
        let mut stdin = None;
        let mut extra_args = Vec::new();
        let mut deferred = Vec::new();
        let mut body = None;
        let mut sinks = Sinks {
            out: &mut redirects,
            stdin: &mut stdin,
            extra_args: &mut extra_args,
            deferred: &mut deferred,
        };
        for (field, child) in children_with_fields(node) {
            if field == Some("body") {
                body = Some(child);
            } else if child.is_named() {
                self.redirect(child, src, env, &mut sinks);
            }
        }
        let mut e = env.clone();
        e.redirects.extend(redirects);
        if let Some(s) = stdin {
            e.stdin = s;
        }
        match body {
            Some(b) if kind(b) == "command" => self.command(b, src, &e, extra_args),
            Some(b) => self.statement(b, src, &e),
            None => {
                let text = &src[node.byte_range()];
                let seg = self.segment_base(text, extra_args, &e);
                self.push(seg);
            }
        }
        self.deferred(deferred, src, env);
    }

    /// One redirection node, into the statement's `sinks`. Here-document continuations
    /// (`cat <<EOF | sh`, `<<EOF && x`) that tree-sitter-bash nests inside the redirect come
    /// back in `deferred` (with "stdin is a pipe").
    pub(super) fn redirect<'t>(
        &mut self,
        node: Node<'t>,
        src: &str,
        env: &Env,
        r: &mut Sinks<'_, 't>,
    ) {
        match kind(node) {
            "file_redirect" => self.file_redirect(node, src, env, r),
            "heredoc_redirect" => self.heredoc_redirect(node, src, env, r),
            "herestring_redirect" => {
                let children = named_children(node);
                let mut value = None;
                for child in children {
                    if kind(child) != "file_descriptor" {
                        value = self.word(child, src, env).value;
                    }
                }
                *r.stdin = Some(Stdin::Here(value));
            }
            _ => self.scan(node, src, env),
        }
    }

    /// `< f`, `> f`, `>> f`, `&> f`, `2>&1`, ...: each destination, by its operator.
    fn file_redirect(&mut self, node: Node, src: &str, env: &Env, r: &mut Sinks) {
        let mut op = "";
        let mut dests = Vec::new();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let n = cursor.node();
                if field_name(&cursor) == Some("destination") {
                    dests.push(n);
                } else if !n.is_named() {
                    op = kind(n);
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        for dest in dests {
            let target = self.word(dest, src, env);
            if let Some(redirect) = classify_redirect(op, target) {
                if redirect.kind != RedirectKind::Write {
                    *r.stdin = Some(Stdin::File);
                }
                r.out.push(redirect);
            }
        }
    }

    /// `<<EOF … EOF`: the body is the stdin; what tree-sitter nests in the redirect (more
    /// arguments and redirections of the command, the commands after it) goes to `r`.
    fn heredoc_redirect<'t>(
        &mut self,
        node: Node<'t>,
        src: &str,
        env: &Env,
        r: &mut Sinks<'_, 't>,
    ) {
        let mut body_text: Option<String> = Some(String::new());
        for (field, n) in children_with_fields(node) {
            match (field, kind(n)) {
                (_, "heredoc_body") => body_text = self.word(n, src, env).value,
                (Some("argument"), _) => {
                    let w = self.word(n, src, env);
                    r.extra_args.push(w);
                }
                (Some("redirect"), _) => self.redirect(n, src, env, r),
                (Some("right"), _) => r.deferred.push((n, false)),
                (_, "pipeline") => {
                    for stage in named_children(n) {
                        r.deferred.push((stage, true));
                    }
                }
                (_, k) if is_statement(k) => r.deferred.push((n, true)),
                _ => {}
            }
        }
        *r.stdin = Some(Stdin::Here(body_text));
    }
}

/// Where one statement's redirections go (the caller's collections, see `redirect`).
pub(super) struct Sinks<'a, 't> {
    pub(super) out: &'a mut Vec<Redirect>,
    pub(super) stdin: &'a mut Option<Stdin>,
    pub(super) extra_args: &'a mut Vec<Word>,
    pub(super) deferred: &'a mut Vec<(Node<'t>, bool)>,
}

/// Targets a redirection may name without touching a file.
const HARMLESS_TARGETS: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/stdin",
    "/dev/tty",
    "/dev/fd/0",
    "/dev/fd/1",
    "/dev/fd/2",
];

/// Classifies a `file_redirect` by its operator; fd duplications and harmless targets
/// give `None`.
fn classify_redirect(op: &str, target: Word) -> Option<Redirect> {
    if let Some(v) = &target.value {
        if HARMLESS_TARGETS.contains(&v.as_str()) {
            return None;
        }
        let is_fd = v == "-" || (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
        if is_fd && matches!(op, ">&" | "<&" | ">&-" | "<&-") {
            return None;
        }
    }
    let kind = match op {
        "<" => RedirectKind::Read,
        "<>" => RedirectKind::ReadWrite,
        "<&" | "<&-" => RedirectKind::Read,
        _ => RedirectKind::Write,
    };
    Some(Redirect { kind, target })
}
