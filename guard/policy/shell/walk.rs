//! The syntax-tree walk: statements, lists, pipelines and compound commands, down to simple
//! commands handed to the wrapper unwrapper (redirections are in `redirects`).

use super::redirects::Sinks;
use super::{
    inert, parse, Analysis, Redirect, Segment, ShellContext, Stdin, Word, MAX_INPUT_BYTES,
    MAX_NODES, MAX_REPARSE_DEPTH, MAX_SEGMENTS, MAX_TREE_DEPTH,
};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::borrow::Cow;
use std::path::PathBuf;
use tree_sitter::Node;

pub(crate) use super::syntax::{
    child_by_field, children, children_with_fields, command_fields_follow_kinds, field_name,
    is_argument, is_redirect, is_statement, kind, named_children, split_word,
};

mod statements;

/// What the enclosing constructs impose on the commands below them.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub wrappers: Vec<String>,
    pub privileged: bool,
    /// Re-parse depth (`sh -c` inside `sh -c` ...).
    pub depth: usize,
    pub stdin: Stdin,
    /// Redirections of an enclosing `{ …; } > f` or `( … ) < f`.
    pub redirects: Vec<Redirect>,
    /// Environment assignments of enclosing wrappers (`env FOO=1 sh -c …`).
    pub env_assignments: Vec<String>,
    /// `command -p`: the next program is looked up on the standard PATH, not the agent's.
    pub std_path: bool,
    /// `env` gave the command the standard PATH (set or cleared): a program it runs that
    /// runs another (`xargs`) looks that one up there too.
    pub std_env_path: bool,
    /// The shell that reads the text (`dialect`): bash-only syntax gates in any other.
    pub dialect: super::Dialect,
}

impl Env {
    pub fn top(_ctx: &ShellContext) -> Self {
        Env {
            wrappers: Vec::new(),
            privileged: false,
            depth: 0,
            stdin: Stdin::Inherited,
            redirects: Vec::new(),
            env_assignments: Vec::new(),
            std_path: false,
            std_env_path: false,
            dialect: super::Dialect::Unknown,
        }
    }

    pub(super) fn with_stdin(&self, stdin: Stdin) -> Self {
        let mut e = self.clone();
        e.stdin = stdin;
        e
    }
}

pub(crate) struct Analyser<'c> {
    pub ctx: &'c ShellContext,
    /// `ctx.home` as text, converted once (every unquoted word may start with `~`).
    pub(crate) home: Cow<'c, str>,
    nodes: usize,
    tree_depth: usize,
    segments: Vec<Segment>,
    pub functions: HashSet<String>,
    /// Directories later commands may run in; empty once a `cd` went somewhere unknown.
    pub cwds: Vec<PathBuf>,
    pub(crate) cwd_unknown: bool,
    /// PATH lookups done so far: name -> (trusted, found, realpath).
    pub resolved: HashMap<String, Resolved>,
    /// Constructs not known inert (see `inert`), in the order found.
    pub gates: Vec<String>,
    /// Every static value each variable is given anywhere in the text (positional
    /// parameters by number): candidates for finding secrets, never for allowing.
    pub vars: HashMap<String, Vec<String>>,
    /// Variables of the text being walked whose value is known for certain (`known`).
    pub(crate) known: HashMap<String, super::known::Known>,
    /// Known-binding checks done (each scans a text; bounded).
    pub(crate) known_checks: usize,
    /// Names some text mentions other than as a plain use (`unset_names`): never taken as
    /// unset, however the run starts.
    pub(crate) mentioned: HashSet<String>,
    /// Nothing is taken as unset: some text mentions `IFS` (a default may be split at other
    /// characters), or runs in a shell that sets lower-case names of its own (zsh's `path`).
    pub(crate) no_unset: bool,
    /// A variable was taken as unset (`unset`).
    pub(crate) used_unset: bool,
    /// A command that sets a variable named at run time ran (`read "$v"`): see `unset`.
    pub(crate) sets_names: bool,
}

/// A memoised command-name lookup: (trusted, found, realpath).
pub(crate) type Resolved = (bool, Option<PathBuf>, Option<PathBuf>);

/// Most candidate working directories tracked before giving up on them.
pub(crate) const MAX_CWDS: usize = 8;

/// Most candidate values kept per word and per variable.
pub(crate) const MAX_CANDIDATES: usize = 16;

/// Most gate reasons kept (one is enough to gate; a few help the human).
const MAX_GATES: usize = 16;

impl<'c> Analyser<'c> {
    pub fn new(ctx: &'c ShellContext) -> Self {
        Analyser {
            ctx,
            home: ctx.home.to_string_lossy(),
            nodes: 0,
            tree_depth: 0,
            // Sized for a typical pipeline up front: regrowing a Vec of large segments
            // makes glibc consolidate its free lists on every decision.
            segments: Vec::with_capacity(8),
            functions: HashSet::new(),
            cwds: vec![ctx.cwd.clone()],
            cwd_unknown: false,
            // One entry per command name: sized so a pipeline's names need no regrowth.
            resolved: HashMap::with_capacity(8),
            gates: Vec::new(),
            vars: HashMap::new(),
            known: HashMap::new(),
            known_checks: 0,
            mentioned: HashSet::new(),
            no_unset: false,
            used_unset: false,
            sets_names: false,
        }
    }

    /// Did the analysis take a variable as unset in a text that also runs a command able
    /// to set a variable named at run time? Then it must be done again without (`unset`).
    pub fn unset_unproven(&self) -> bool {
        self.used_unset && self.sets_names
    }

    pub fn finish(self) -> Analysis {
        Analysis {
            segments: self.segments,
            gates: self.gates,
        }
    }

    /// Records a construct that is not known inert (once per reason).
    pub fn gate(&mut self, why: Option<String>) {
        if let Some(why) = why {
            if !self.gates.contains(&why) && self.gates.len() < MAX_GATES {
                self.gates.push(why);
            }
        }
    }

    /// Records a segment the analyser could not understand.
    pub fn problem(&mut self, text: &str, why: impl Into<String>, env: &Env) {
        let seg = self.segment_base(text, Vec::new(), env);
        self.push(Segment {
            problem: Some(why.into()),
            ..seg
        });
    }

    /// A segment with the common fields filled from `env` and the analyser state.
    pub fn segment_base(&self, text: &str, argv: Vec<Word>, env: &Env) -> Segment {
        Segment {
            text: text.to_string(),
            argv,
            program: None,
            trusted_name: false,
            trusted_location: false,
            resolved: None,
            resolved_real: None,
            redirects: env.redirects.clone(),
            stdin: env.stdin.clone(),
            wrappers: env.wrappers.clone(),
            privileged: env.privileged,
            env_assignments: env.env_assignments.clone(),
            cwds: if self.cwd_unknown {
                Vec::new()
            } else {
                self.cwds.clone()
            },
            function_call: false,
            problem: None,
        }
    }

    pub fn push(&mut self, seg: Segment) {
        self.gate(inert::builtin_gate(&seg));
        self.note_setter(&seg);
        // `set -- a b` binds $1, $2.
        if seg.argv.first().and_then(|w| w.value.as_deref()) == Some("set")
            && seg.argv.get(1).and_then(|w| w.value.as_deref()) == Some("--")
        {
            for (i, w) in seg.argv[2..].iter().enumerate() {
                self.bind_word(&(i + 1).to_string(), w);
            }
        }
        if self.segments.len() < MAX_SEGMENTS {
            self.segments.push(seg);
        } else if self.segments.len() == MAX_SEGMENTS {
            let mut last = seg;
            last.problem = Some("too many commands".into());
            self.segments.push(last);
        }
    }

    /// Parses and walks one text (the top level, or a re-parsed `sh -c` argument).
    pub fn text(&mut self, text: &str, env: &Env) {
        if text.len() > MAX_INPUT_BYTES {
            self.problem(text, "command text is too long to analyse", env);
            return;
        }
        if env.depth > MAX_REPARSE_DEPTH {
            self.problem(text, "shell nesting is too deep to analyse", env);
            return;
        }
        // (ASCII controls are single bytes; no byte of a multi-byte character is one.)
        if text
            .bytes()
            .any(|c| c.is_ascii_control() && c != b'\n' && c != b'\t')
        {
            // A shell reads `\r` and other controls as word characters; the parser does
            // not, so the two could disagree on what runs.
            self.problem(text, "command text contains control characters", env);
            return;
        }
        let Some(tree) = parse(text) else {
            self.problem(text, "the shell parser gave up", env);
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.problem(text, "shell syntax error", env);
            return;
        }
        // Here-documents end where the shells end them, not where the parser guessed.
        match super::heredoc::realign(text, root) {
            Ok(None) => {}
            Ok(Some(as_read)) => return self.text(&as_read, env),
            Err(why) => {
                self.problem(text, why.to_string(), env);
                return;
            }
        }
        if env.dialect == super::Dialect::Other {
            let why = "the text is run by a shell whose language the guard does not parse";
            self.problem(text, why, env);
            return;
        }
        if env.dialect != super::Dialect::Bash {
            self.dialect_check(root, text, env);
        }
        self.note_mentions(text, env);
        // A re-parsed text is another shell (or code): it sees no known binding.
        let outer = std::mem::take(&mut self.known);
        self.statement(root, text, env);
        // Back in the outer text: `eval` ran in the same shell and may have rebound
        // anything, so no binding stays known after a re-parsed text.
        self.known = if env.depth == 0 {
            outer
        } else {
            HashMap::new()
        };
    }

    /// Counts a visited node; false once the budget is spent (a problem is recorded once).
    fn budget(&mut self, node: Node, src: &str, env: &Env) -> bool {
        self.nodes += 1;
        if self.nodes == MAX_NODES + 1 {
            self.problem(
                &src[node.byte_range()],
                "command is too complex to analyse",
                env,
            );
        }
        self.nodes <= MAX_NODES
    }

    /// Analyses statements found nested in another construct, after it: those that read
    /// the construct's output (`piped`) with stdin from a pipe.
    pub(super) fn deferred(&mut self, deferred: Vec<(Node, bool)>, src: &str, env: &Env) {
        for (n, piped) in deferred {
            let e2 = if piped {
                env.with_stdin(Stdin::Pipe)
            } else {
                env.clone()
            };
            self.statement(n, src, &e2);
        }
    }

    pub fn statement(&mut self, node: Node, src: &str, env: &Env) {
        if !self.budget(node, src, env) {
            return;
        }
        if self.tree_depth >= MAX_TREE_DEPTH {
            self.problem(
                &src[node.byte_range()],
                "command nesting is too deep to analyse",
                env,
            );
            return;
        }
        self.tree_depth += 1;
        self.statement_inner(node, src, env);
        self.tree_depth -= 1;
    }

    /// One statement, by its kind: the kinds the analyser knows, each to its step; any
    /// other kind is a problem (not analysable, so never autonomous).
    fn statement_inner(&mut self, node: Node, src: &str, env: &Env) {
        let text = &src[node.byte_range()];
        match kind(node) {
            "compound_statement" if text.starts_with("((") => {
                self.gate(inert::arithmetic_gate(node, src));
                self.named_children(node, src, env);
            }
            "program" | "list" | "compound_statement" | "subshell" | "do_group" | "else_clause"
            | "elif_clause" | "negated_command" => self.named_children(node, src, env),
            "pipeline" => self.pipeline(node, src, env),
            "redirected_statement" => self.redirected(node, src, env),
            "command" => self.command(node, src, env, Vec::new()),
            "function_definition" => self.function_definition(node, src, env),
            "for_statement" => self.for_statement(node, src, env),
            "if_statement"
            | "while_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "case_item" => self.control_flow(node, src, env),
            "variable_assignment" | "variable_assignments" => {
                self.assignment_statement(node, src, env)
            }
            "declaration_command" | "unset_command" | "test_command" => {
                self.declaration(node, src, env)
            }
            "comment" => {}
            kind => self.problem(text, format!("unsupported shell construct `{kind}`"), env),
        }
    }

    fn named_children(&mut self, node: Node, src: &str, env: &Env) {
        let children = named_children(node);
        for child in children {
            if is_statement(kind(child)) || kind(child) == "comment" {
                self.statement(child, src, env);
            } else {
                self.scan(child, src, env);
            }
        }
    }

    /// The names assigned by a `variable_assignment(s)` node (`a[i]` with its subscript)
    /// and their static values; values are scanned.
    fn assignments(&mut self, node: Node, src: &str, env: &Env) -> Vec<(String, Option<Word>)> {
        let mut out = Vec::new();
        if kind(node) == "variable_assignments" {
            let children = named_children(node);
            for child in children {
                out.extend(self.assignments(child, src, env));
            }
            return out;
        }
        let value = child_by_field(node, "value").map(|v| self.word(v, src, env));
        if let Some(name) = child_by_field(node, "name") {
            let name = src[name.byte_range()].to_string();
            if let Some(w) = &value {
                self.bind_word(&name, w);
            }
            out.push((name, value));
        }
        out
    }

    /// Walks a non-statement node only to analyse the commands inside its substitutions.
    pub fn scan(&mut self, node: Node, src: &str, env: &Env) {
        let _ = self.word(node, src, env);
    }

    pub(super) fn command(&mut self, node: Node, src: &str, env: &Env, mut argv_tail: Vec<Word>) {
        let text = &src[node.byte_range()];
        let start = self.segments.len();
        let mut e = env.clone();
        let mut redirects = Vec::new();
        let mut stdin = None;
        let mut deferred = Vec::new();
        let mut extra = Vec::new();
        // Children by kind, not by field (see `command_fields_follow_kinds`).
        debug_assert!(command_fields_follow_kinds(node), "{text}");
        let items = children(node);
        let mut argv = Vec::with_capacity(items.len());
        if split_word(
            items
                .iter()
                .copied()
                .filter(|c| c.is_named() && is_argument(kind(*c))),
        ) {
            self.problem(text, "the shell parser split one word in two", env);
            return;
        }
        for child in items {
            if !child.is_named() {
                continue;
            }
            match kind(child) {
                "variable_assignment" => {
                    for (name, value) in self.assignments(child, src, env) {
                        let value = value.and_then(|w| w.value);
                        self.gate(inert::env_gate(&name, value.as_deref()));
                        // A known pager is not code the command loads (`GIT_PAGER=cat`).
                        if !value
                            .as_deref()
                            .is_some_and(|v| crate::policy::env::is_known_pager(&name, v))
                        {
                            e.env_assignments.push(name);
                        }
                    }
                }
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    argv.push(self.word(inner, src, env));
                }
                k if is_redirect(k) => {
                    let mut sinks = Sinks {
                        out: &mut redirects,
                        stdin: &mut stdin,
                        extra_args: &mut extra,
                        deferred: &mut deferred,
                    };
                    self.redirect(child, src, env, &mut sinks);
                }
                "subshell" => self.statement(child, src, env),
                "comment" => {}
                _ => argv.push(self.word(child, src, env)),
            }
        }
        let written = argv.len();
        argv.retain(|w| !w.vanishes());
        if written > 0 && argv.is_empty() {
            self.problem(text, "every word of the command expands to nothing", env);
            self.deferred(deferred, src, env);
            return;
        }
        argv.append(&mut extra);
        argv.append(&mut argv_tail);
        e.redirects.extend(redirects);
        if let Some(s) = stdin {
            e.stdin = s;
        }
        let mid = self.segments.len();
        self.simple_in(argv, e, text);
        // The command itself before the commands its words substitute.
        let end = self.segments.len();
        if mid > start && end > mid {
            self.segments[start..end].rotate_left(mid - start);
        }
        self.deferred(deferred, src, env);
    }
}
