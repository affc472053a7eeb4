//! Variables whose value is known for certain, so `"$f"` reaches the command table as the
//! word it holds: `f=a.txt; cat "$f"` and `for f in src/*.rs; do wc -l "$f"; done`.
//!
//! A binding is known only when nothing else in the same text can change it: the name is
//! bound exactly once (a plain `NAME=WORD` statement at the top of the text, not in a
//! subshell, pipeline, background job, condition or function; or one `for NAME in WORDS`)
//! and every other mention of the name is a plain `$NAME`/`${NAME}` use. Any other
//! mention (`read f`, `f=b` in a subshell, `unset f`, `${f:=x}`, `export f`, `for f`
//! twice, arithmetic) keeps it unknown, so the command stays gated. Builtins that rebind
//! a name given at run time (`read "$v"`, `printf -v`, `declare -n`, `eval`, `source`) are
//! themselves gated, so they cannot make a known binding wrong and still come out allow.
//! A re-parsed text (`sh -c`, `eval`) is another shell or code: it sees no known binding.

use super::walk::{child_by_field, kind, split_word, Analyser, Env};
use super::Word;
use tree_sitter::Node;

/// The value a known variable holds for the commands that can see it.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub value: String,
    /// A `for` value that is a glob: each iteration holds one name it matches (or the
    /// pattern itself when nothing matches), so a quoted use is that glob as one word.
    pub glob: bool,
}

/// Most values of a `for` loop whose body is analysed once per value.
const MAX_LOOP_VALUES: usize = 8;

/// Most known-binding checks per analysis (each scans the text once).
const MAX_CHECKS: usize = 16;

/// Is every mention of `name` under `root` either `binder` or a plain `$name`/`${name}`?
fn only_uses(root: Node, src: &str, name: &str, binder: Node) -> bool {
    let mut cursor = root.walk();
    let plain = [format!("${name}"), format!("${{{name}}}")];
    loop {
        let node = cursor.node();
        let descend = if &src[node.byte_range()] == name && node.id() != binder.id() {
            let is_use = kind(node) == "variable_name"
                && node.parent().is_some_and(|p| {
                    matches!(kind(p), "simple_expansion" | "expansion")
                        && plain.iter().any(|t| t == &src[p.byte_range()])
                });
            if !is_use {
                return false;
            }
            false
        } else {
            // A node shorter than the name cannot contain a mention of it.
            node.byte_range().len() >= name.len()
        };
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return true;
            }
        }
    }
}

/// The root of the tree `node` is in.
fn root_of(node: Node) -> Node {
    let mut n = node;
    while let Some(p) = n.parent() {
        n = p;
    }
    n
}

impl Analyser<'_> {
    fn may_check(&mut self) -> bool {
        self.known_checks += 1;
        self.known_checks <= MAX_CHECKS
    }

    /// After a top-level `NAME=WORD` statement (`node`, a `variable_assignment`) whose
    /// value was evaluated to `value`: records the binding when it is known for certain.
    pub(super) fn record_known(&mut self, node: Node, src: &str, value: Option<&Word>) {
        let Some(value) = value else { return };
        let (Some(name), Some(v)) = (child_by_field(node, "name"), value.value.as_ref()) else {
            return;
        };
        let top = node.parent().is_some_and(|p| kind(p) == "program");
        // `f=x &` runs in a background subshell.
        let background = node.next_sibling().is_some_and(|s| kind(s) == "&");
        let plain = kind(name) == "variable_name"
            && child_by_field(node, "value")
                .is_some_and(|val| &src[name.end_byte()..val.start_byte()] == "=");
        if !top || background || !plain || value.substitution || !self.may_check() {
            return;
        }
        let n = &src[name.byte_range()];
        // Only the script's own (lower-case) names: bash sets some of its own as it runs
        // (`_`, `COLUMNS`, ...), and upper-case names the shell or programs read gate.
        if !n.bytes().any(|b| b.is_ascii_lowercase()) {
            return;
        }
        if only_uses(root_of(node), src, n, name) {
            self.known.insert(
                n.to_string(),
                Known {
                    value: v.clone(),
                    glob: false,
                },
            );
        }
    }

    /// The value a `$NAME`/`${NAME}` expansion (`text`) takes, when known. Unquoted, the
    /// shell splits and globs it again: known only when that changes nothing.
    pub(super) fn known_use(&self, text: &str, quoted: bool) -> Option<&Known> {
        if self.known.is_empty() {
            return None;
        }
        let name = text
            .strip_prefix("${")
            .and_then(|t| t.strip_suffix('}'))
            .or_else(|| text.strip_prefix('$'))?;
        let k = self.known.get(name)?;
        let inert = !k.glob
            && !k.value.is_empty()
            && !k
                .value
                .contains([' ', '\t', '\n', '*', '?', '[', ']', '{', '}', '\\']);
        (quoted || inert).then_some(k)
    }

    /// `$PWD` / `${PWD}` is the directory the command is in, known as `~+` is: when only one
    /// directory is possible here (a `cd` the walk follows keeps it known). A text that sets
    /// PWD itself is gated elsewhere (it is not inert). Unquoted, the value must not split or
    /// glob.
    pub(super) fn pwd_value(&self, text: &str, quoted: bool) -> Option<String> {
        if !matches!(text, "$PWD" | "${PWD}") || self.cwd_unknown || self.cwds.len() != 1 {
            return None;
        }
        let cwd = self.cwds[0].to_string_lossy().into_owned();
        let inert = !cwd.contains([' ', '\t', '\n', '*', '?', '[', ']', '{', '}', '\\']);
        (quoted || inert).then_some(cwd)
    }

    /// A `for` statement: the values are evaluated once; when the loop variable is known for
    /// certain (see the module doc), the body is analysed once per value with the variable
    /// bound to it, else once with the variable unknown (candidates only).
    pub(super) fn for_loop(&mut self, node: Node, src: &str, env: &Env) {
        let var = child_by_field(node, "variable");
        let name = var.map(|v| src[v.byte_range()].to_string());
        let mut cursor = node.walk();
        let value_nodes: Vec<Node> = node.children_by_field_name("value", &mut cursor).collect();
        if split_word(value_nodes.iter().copied()) {
            self.problem(
                &src[node.byte_range()],
                "the shell parser split one word in two",
                env,
            );
            return;
        }
        let values: Vec<Word> = value_nodes
            .into_iter()
            .map(|v| self.word(v, src, env))
            .collect();
        if let Some(name) = &name {
            for w in &values {
                self.bind_word(name, w);
            }
        }
        let Some(body) = child_by_field(node, "body") else {
            return;
        };
        let simple = match (var, &name) {
            (Some(var), Some(name)) => {
                name.bytes().any(|b| b.is_ascii_lowercase())
                    && kind(var) == "variable_name"
                    && !values.is_empty()
                    && values.len() <= MAX_LOOP_VALUES
                    && values.iter().all(|w| w.value.is_some() && !w.substitution)
                    && self.may_check()
                    && only_uses(root_of(node), src, name, var)
            }
            _ => false,
        };
        match name.filter(|_| simple) {
            Some(name) => {
                for w in &values {
                    let k = Known {
                        value: w.value.clone().unwrap_or_default(),
                        glob: w.glob,
                    };
                    self.known.insert(name.clone(), k);
                    self.statement(body, src, env);
                }
                // After the loop the variable holds the last value, or nothing.
                self.known.remove(&name);
            }
            None => self.statement(body, src, env),
        }
    }
}
