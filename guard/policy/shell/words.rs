//! Static word expansion: quotes, escapes, `~`/`$HOME`, glob detection. A word that needs
//! run-time information (other variables, substitutions, arithmetic) has no value; the
//! commands inside its substitutions are analysed as segments of their own.

use super::inert;
use super::walk::{children, is_statement, kind, named_children, Analyser, Env};
use super::{Stdin, Word};
use tree_sitter::Node;

mod printed;
mod quoting;
mod unset;
use quoting::{ansi_c, double_quoted, unquoted};

/// Accumulates one word's value while walking its parts.
struct Builder {
    value: String,
    known: bool,
    glob: bool,
    substitution: bool,
    process_substitution: bool,
    /// Inside double quotes (a known variable is then not split or globbed again).
    quoted: bool,
}

impl Builder {
    fn new() -> Self {
        Builder {
            value: String::new(),
            known: true,
            glob: false,
            substitution: false,
            process_substitution: false,
            quoted: false,
        }
    }
}

impl Analyser<'_> {
    /// Evaluates a word node statically, analysing any commands it substitutes.
    pub(crate) fn word(&mut self, node: Node, src: &str, env: &Env) -> Word {
        let mut b = Builder::new();
        self.part(node, src, env, &mut b, 0);
        let candidates = if b.known || b.process_substitution {
            Vec::new()
        } else {
            self.candidates(node, src, 0).unwrap_or_default()
        };
        Word {
            value: b.known.then_some(b.value),
            source: src[node.byte_range()].to_string(),
            glob: b.glob,
            substitution: b.substitution,
            process_substitution: b.process_substitution,
            candidates,
        }
    }

    /// The values a word may take given the static values variables were assigned in this
    /// text (see [`Word::candidates`]); `None` when a part is unknown.
    fn candidates(&self, node: Node, src: &str, depth: usize) -> Option<Vec<String>> {
        if depth > 16 {
            return None;
        }
        let text = &src[node.byte_range()];
        let literal = |f: &dyn Fn(&mut Builder)| {
            let mut b = Builder::new();
            f(&mut b);
            b.known.then(|| vec![b.value])
        };
        let home = &self.home;
        match kind(node) {
            "word" => literal(&|b| unquoted(text, b, home, None)),
            "number" => Some(vec![text.to_string()]),
            "raw_string" => Some(vec![text.trim_matches('\'').to_string()]),
            "string_content" => literal(&|b| double_quoted(text, b)),
            "simple_expansion" | "expansion" => self.variable_values(text),
            "ansi_c_string" => ansi_c(text).map(|v| vec![v]),
            "command_substitution" => self.echo_output(node, src, depth),
            "string" | "concatenation" => {
                let mut out = vec![String::new()];
                let children = children(node);
                for child in children {
                    let parts = if child.is_named() {
                        self.candidates(child, src, depth + 1)?
                    } else if kind(node) == "string" && kind(child) == "\"" {
                        continue;
                    } else {
                        vec![src[child.byte_range()].to_string()]
                    };
                    let mut next = Vec::new();
                    for o in &out {
                        for p in &parts {
                            next.push(format!("{o}{p}"));
                        }
                    }
                    if next.len() > super::walk::MAX_CANDIDATES {
                        return None;
                    }
                    out = next;
                }
                Some(out)
            }
            _ => None,
        }
    }

    /// `$(echo WORDS)` / `$(printf FMT ARGS)` with static words: what they print (`%s`
    /// and escapes only; anything else is unknown).
    fn echo_output(&self, node: Node, src: &str, depth: usize) -> Option<Vec<String>> {
        let cmd = node.named_child(0).filter(|c| kind(*c) == "command")?;
        if node.named_child_count() != 1 {
            return None;
        }
        let mut cursor = cmd.walk();
        let mut words = Vec::new();
        for child in cmd.named_children(&mut cursor) {
            let inner = if kind(child) == "command_name" {
                child.named_child(0)?
            } else {
                child
            };
            let vals = self.candidates(inner, src, depth + 1)?;
            words.push(vals.into_iter().next().filter(|_| true)?);
        }
        match words.split_first()? {
            (name, args) if name == "echo" && args.first().is_none_or(|a| !a.starts_with('-')) => {
                Some(vec![args.join(" ")])
            }
            (name, [fmt, args @ ..]) if name == "printf" => {
                let fmt = ansi_c(&format!("$'{}'", fmt.replace('\'', "\\'")))?;
                let mut out = String::new();
                let mut parts = fmt.split("%s");
                out.push_str(parts.next().unwrap_or(""));
                let mut args = args.iter();
                for p in parts {
                    out.push_str(args.next().map(String::as_str).unwrap_or(""));
                    out.push_str(p);
                }
                (!out.contains('%')).then(|| vec![out])
            }
            _ => None,
        }
    }

    /// `$x`, `${x}`, `$PWD`, `${HOME%/}`-like forms: the values the text gave them.
    fn variable_values(&self, text: &str) -> Option<Vec<String>> {
        let inner = text
            .strip_prefix("${")
            .and_then(|t| t.strip_suffix('}'))
            .or_else(|| text.strip_prefix('$'))?;
        let name_len = inner
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let (name, op) = inner.split_at(name_len);
        if name.is_empty() {
            return None;
        }
        // Suffix/prefix trims, defaults and substitutions of HOME or PWD still name
        // (about) that directory: good enough to find a secret under it.
        let approx = op.is_empty() || op.starts_with(['%', '#', '/', ':']) || op.starts_with('-');
        if !approx {
            return None;
        }
        match name {
            "HOME" => Some(vec![self.ctx.home.to_string_lossy().into_owned()]),
            "PWD" if !self.cwd_unknown => Some(
                self.cwds
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect(),
            ),
            _ if op.is_empty() => self.vars.get(name).cloned(),
            _ => None,
        }
    }

    /// Adds one part of a word to `b`; a part whose value needs run time makes it unknown.
    fn part(&mut self, node: Node, src: &str, env: &Env, b: &mut Builder, depth: usize) {
        let text = &src[node.byte_range()];
        if depth > super::MAX_TREE_DEPTH {
            b.known = false;
            return;
        }
        match kind(node) {
            "word" => {
                // `~+` is $PWD: known when only one directory is possible here.
                // (Only `unquoted` of a `~+` word reads it.)
                let cwd = (text.starts_with("~+") && self.cwds.len() == 1 && !self.cwd_unknown)
                    .then(|| self.cwds[0].to_string_lossy());
                unquoted(text, b, &self.home, cwd.as_deref())
            }
            "number" if node.named_child_count() == 0 => b.value.push_str(text),
            // A bare name operand (`unset x`, `export X`, `declare -p Y`): its spelling.
            "variable_name" => b.value.push_str(text),
            "raw_string" => {
                b.value
                    .push_str(text.trim_start_matches('\'').trim_end_matches('\''));
            }
            // `$'…'`: the shell decodes the escapes itself, so can we.
            "ansi_c_string" => match ansi_c(text) {
                Some(v) => b.value.push_str(&v),
                None => b.known = false,
            },
            "string" | "translated_string" => self.string_part(node, src, env, b, depth),
            "heredoc_body" => self.heredoc_part(node, src, env, b, depth),
            "concatenation" => {
                let children = children(node);
                for child in children {
                    if child.is_named() {
                        self.part(child, src, env, b, depth + 1);
                    } else {
                        b.value.push_str(&src[child.byte_range()]);
                    }
                }
            }
            "simple_expansion" | "expansion" => self.expansion_part(node, src, env, b, depth),
            "command_substitution" | "process_substitution" => {
                self.substitution_part(node, src, env, b, depth)
            }
            "arithmetic_expansion" => {
                self.gate(inert::arithmetic_gate(node, src));
                b.known = false;
                self.substitutions(node, src, env, b, depth);
            }
            _ => {
                // Arithmetic, brace expansions, arrays, ...: unknown value.
                b.known = false;
                // A leaf the parser kept as text (a pattern, a regex) that spells a
                // substitution: the shell would run it, the walk cannot see it.
                if node.named_child_count() == 0
                    && ["$(", "`", "<(", ">("].iter().any(|s| text.contains(s))
                {
                    self.gate(Some(format!(
                        "`{}` holds a substitution the parser kept as text",
                        inert::truncate(text)
                    )));
                }
                self.substitutions(node, src, env, b, depth);
            }
        }
    }

    /// `"…"`: its parts, quoted (a known variable is then not split or globbed).
    fn string_part(&mut self, node: Node, src: &str, env: &Env, b: &mut Builder, depth: usize) {
        let children = children(node);
        let last = children.len().saturating_sub(1);
        let outer = std::mem::replace(&mut b.quoted, true);
        for (i, child) in children.into_iter().enumerate() {
            match kind(child) {
                "\"" | "$\"" if i == 0 || i == last => {}
                "string_content" => double_quoted(&src[child.byte_range()], b),
                _ if child.is_named() => self.part(child, src, env, b, depth + 1),
                _ => b.value.push_str(&src[child.byte_range()]),
            }
        }
        b.quoted = outer;
    }

    /// A here-document's body: literal text with the expansions in it.
    fn heredoc_part(&mut self, node: Node, src: &str, env: &Env, b: &mut Builder, depth: usize) {
        if let Some(why) = super::heredoc::unparsed_substitution(node, src) {
            self.gate(Some(why));
            b.known = false;
        }
        let children = children(node);
        let mut pos = node.start_byte();
        for child in children {
            // Literal text between parts belongs to the body.
            b.value.push_str(&src[pos..child.start_byte()]);
            match kind(child) {
                "heredoc_content" => b.value.push_str(&src[child.byte_range()]),
                _ => self.part(child, src, env, b, depth + 1),
            }
            pos = child.end_byte();
        }
        b.value.push_str(&src[pos..node.end_byte()]);
    }

    /// `$x`, `${x…}`: `$HOME` and variables given one static value in the text are known.
    fn expansion_part(&mut self, node: Node, src: &str, env: &Env, b: &mut Builder, depth: usize) {
        let text = &src[node.byte_range()];
        if kind(node) == "expansion" {
            self.gate(inert::expansion_gate(text));
        }
        if matches!(text, "$HOME" | "${HOME}") {
            b.value.push_str(&self.home);
        } else if let Some(cwd) = self.pwd_value(text, b.quoted) {
            b.value.push_str(&cwd);
        } else if let Some(k) = self.known_use(text, b.quoted) {
            b.value.push_str(&k.value);
            b.glob |= k.glob;
        } else if let Some(v) = self.unset_value(text) {
            b.value.push_str(&v);
            // A pattern's substitutions still run (`${x#$(cmd)}`): analysed, value unused.
            self.substitutions(node, src, env, &mut Builder::new(), depth);
            if kind(node) == "expansion" {
                self.unparsed_operand(node, text, env);
            }
        } else {
            b.known = false;
            self.substitutions(node, src, env, b, depth);
            if kind(node) == "expansion" {
                self.unparsed_operand(node, text, env);
            }
        }
    }

    /// The parser leaves some operands as text (`${x#$(cmd)}`, `${x^^…}`, `${x,,…}`):
    /// where the expansion spells a substitution its parsed children do not hold, the
    /// operand is parsed again as a word so the commands in it are analysed; what cannot
    /// be parsed is a problem, never a pass.
    fn unparsed_operand(&mut self, node: Node, text: &str, env: &Env) {
        if !text.contains("$(")
            && !text.contains('`')
            && !text.contains("<(")
            && !text.contains(">(")
        {
            return;
        }
        if has_substitution_node(node) {
            return;
        }
        let inner = text
            .strip_prefix("${")
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text);
        let inner = inner.trim_start_matches(['!', '#']);
        let name_len = inner
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
            .count();
        let operand = inner[name_len..]
            .trim_start_matches(['#', '%', '/', '^', ',', ':', '-', '=', '?', '+', '@', '[']);
        let mut e = env.clone();
        e.depth += 1;
        self.text(&format!(": {operand}"), &e);
    }

    /// `$(…)`, `` `…` ``, `<(…)`, `>(…)`: the value is unknown; the commands inside are
    /// analysed as segments of their own.
    fn substitution_part(
        &mut self,
        node: Node,
        src: &str,
        env: &Env,
        b: &mut Builder,
        depth: usize,
    ) {
        let text = &src[node.byte_range()];
        // `$(echo WORD)`: its commands are still analysed below; the word's value is known.
        let folded = self.folded(node, src, b.quoted);
        match &folded {
            Some(v) => b.value.push_str(v),
            None => {
                b.known = false;
                b.substitution = true;
            }
        }
        self.gate(listing_substitution_gate(text, b.quoted));
        if kind(node) == "process_substitution" {
            b.process_substitution = true;
        }
        let mut inner = env.clone();
        // `>(cmd)` reads what the outer command writes: a pipe.
        inner.stdin = if text.starts_with(">(") {
            Stdin::Pipe
        } else {
            Stdin::Inherited
        };
        inner.redirects.clear();
        // Inside backquotes the shell un-escapes `\``, `\$` and `\\` before it parses the
        // body: parse that text, so nested backquotes are commands too.
        if let Some(body) = text
            .strip_prefix('`')
            .and_then(|t| t.strip_suffix('`'))
            .filter(|t| t.contains('\\'))
        {
            let mut e = inner;
            e.depth += 1;
            self.text(&unescape_backquoted(body), &e);
            return;
        }
        let children = named_children(node);
        for child in children {
            if is_statement(kind(child)) {
                self.statement(child, src, &inner);
            } else if kind(child) == "file_redirect" {
                // `$(< file)`: the shell reads the file itself (like `cat file`).
                self.substitution_redirect(child, src, &inner);
            } else {
                self.part(child, src, env, b, depth + 1);
            }
        }
    }

    /// A redirection directly inside `$( )` (`$(< file)`, `$(> file)`): a segment with
    /// that redirection and no command, so its target is checked like any other.
    fn substitution_redirect(&mut self, node: Node, src: &str, env: &Env) {
        let mut redirects = Vec::new();
        let mut stdin = None;
        let mut extra = Vec::new();
        let mut deferred = Vec::new();
        let mut sinks = super::redirects::Sinks {
            out: &mut redirects,
            stdin: &mut stdin,
            extra_args: &mut extra,
            deferred: &mut deferred,
        };
        self.redirect(node, src, env, &mut sinks);
        let mut e = env.clone();
        e.redirects.extend(redirects);
        let seg = self.segment_base(&src[node.byte_range()], Vec::new(), &e);
        self.push(seg);
        self.deferred(deferred, src, env);
    }

    /// Visits the children of an unknown construct for nested substitutions.
    fn substitutions(&mut self, node: Node, src: &str, env: &Env, b: &mut Builder, depth: usize) {
        let children = named_children(node);
        for child in children {
            if is_statement(kind(child)) {
                self.statement(child, src, env);
            } else {
                let before = b.value.len();
                self.part(child, src, env, b, depth + 1);
                b.value.truncate(before);
            }
        }
    }
}

/// Does the subtree hold a command or process substitution node?
fn has_substitution_node(node: Node) -> bool {
    if matches!(kind(node), "command_substitution" | "process_substitution") {
        return true;
    }
    named_children(node).into_iter().any(has_substitution_node)
}

/// A backquoted body as the shell reads it: `\`` → `` ` ``, `\$` → `$`, `\\` → `\`;
/// any other backslash stays.
fn unescape_backquoted(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&n) = chars.peek() {
                if matches!(n, '`' | '$' | '\\') {
                    out.push(n);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// `$(git ls-files)` and the like as arguments: gated with the reason, as the listed names
/// are not words the table can check. git prints paths relative to the repository, so a
/// tracked `-rf` or `--output=x` becomes an option of the command; unquoted, the shell
/// splits names at blanks and expands their glob characters; a tracked symlink or dotenv
/// file is read like any other name. (`find START | xargs` is analysable: `pipes`.) Only
/// the bare listing: piped on (`$(git ls-files | wc -l)`) it is a count.
fn listing_substitution_gate(text: &str, quoted: bool) -> Option<String> {
    let inner = text
        .strip_prefix("$(")
        .or_else(|| text.strip_prefix('`'))?
        .trim_start();
    if inner.contains(['|', ';', '&']) {
        return None;
    }
    let lister = ["git ls-files", "git ls-tree", "git diff --name-only"]
        .iter()
        .find(|l| {
            inner
                .strip_prefix(**l)
                .is_some_and(|r| r.starts_with([' ', ')', '`', '\n']))
        })?;
    Some(format!(
        "`$({lister} …)` as arguments: the names it prints may start with `-` (options){}, \
         and which files they are is not known before it runs",
        if quoted {
            ""
        } else {
            ", split at blanks or expand as globs"
        }
    ))
}
