//! Shell analysis: turns shell text (what OpenClaw's `command` would run) into the flat list
//! of simple commands ("segments") it may execute, with their static argv, redirections,
//! stdin source and the wrappers that were peeled off. Parsing is tree-sitter-bash; nothing
//! here matches regular expressions over raw text. Anything the analyser cannot pin down is
//! kept as a segment carrying a `problem`, so the policy can gate it (never allow it).

mod builtins;
mod dialect;
mod heredoc;
mod inert;
mod known;
mod path_lookup;
mod pipes;
mod redirects;
mod startup;
mod syntax;
mod tracking;
mod walk;
mod words;
mod wrapper_args;
mod wrappers;

pub use dialect::Dialect;
pub use path_lookup::resolve_on_path;
pub use pipes::{XARGS0_FROM_FIND, XARGS_FROM_FIND};
pub use startup::{scan_startup, StartupScan};
pub use wrappers::SHELLS;

use foldhash::{HashMap, HashMapExt, HashSet};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment the text would run in.
#[derive(Debug, Clone)]
pub struct ShellContext {
    /// The agent's home (`~` and `$HOME` expand to it).
    pub home: PathBuf,
    /// The agent's PATH (colon-separated), used to resolve bare command names.
    pub path: String,
    /// Working directory the text runs in.
    pub cwd: PathBuf,
    /// The names that may be set when the text starts: the run's environment and what its
    /// start-up files can set (`startup`). `None` when not known (OpenClaw runs the text
    /// with its own environment): then no variable is known unset.
    pub set_at_start: Option<Arc<BTreeSet<String>>>,
}

impl ShellContext {
    /// The same context with nothing known of the starting environment.
    fn without_start(&self) -> ShellContext {
        ShellContext {
            set_at_start: None,
            ..self.clone()
        }
    }
}

/// Work bounds, so hostile input cannot hang or exhaust the analyser.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;
/// Syntax nodes visited across one analysis (including nested `sh -c` texts).
pub const MAX_NODES: usize = 50_000;
/// Nesting of re-parsed texts (`sh -c`, `eval`, `env -S`).
pub const MAX_REPARSE_DEPTH: usize = 6;
/// Nesting of syntax nodes (subshells inside substitutions inside ...).
pub const MAX_TREE_DEPTH: usize = 200;
/// Segments produced by one analysis.
pub const MAX_SEGMENTS: usize = 512;

/// One shell word after static expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The value, when it is known without running anything (`~`/`$HOME` expanded).
    pub value: Option<String>,
    /// The word as written.
    pub source: String,
    /// Contains unquoted glob characters (`*`, `?`, `[`, `{a,b}`).
    pub glob: bool,
    /// Contains a command or process substitution (its output is data from a program).
    pub substitution: bool,
    /// Is (or contains) a process substitution `<(…)`/`>(…)`: a `/dev/fd` path to a program.
    pub process_substitution: bool,
    /// When `value` is unknown: values it may take, built from variables the same text
    /// assigns static values (`f=~/.ssh/id_rsa; cat $f`), `$PWD` and `${HOME…}`. Used only
    /// to find secrets (a hit denies); never to allow.
    pub candidates: Vec<String>,
}

impl Word {
    /// A static word (used when an argv comes without shell text).
    pub fn literal(s: &str) -> Self {
        Word {
            value: Some(s.to_string()),
            source: s.to_string(),
            glob: false,
            substitution: false,
            process_substitution: false,
            candidates: Vec::new(),
        }
    }

    /// A word whose value is not known statically.
    pub fn unknown(source: &str) -> Self {
        Word {
            value: None,
            source: source.to_string(),
            glob: false,
            substitution: false,
            process_substitution: false,
            candidates: Vec::new(),
        }
    }

    /// Expands to nothing with no quotes: the shell drops it from the command's words
    /// (`ls ${x:+-la}` with `x` unset is `ls`).
    pub fn vanishes(&self) -> bool {
        self.value.as_deref() == Some("")
            && self.source.contains('$')
            && !self.source.contains(['\'', '"', '\\'])
    }

    /// The value, or the source text for display.
    pub fn display(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.source)
    }
}

/// What a redirection does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    Read,
    Write,
    ReadWrite,
}

/// A redirection to or from a file (fd duplications and `/dev/null`-like targets are dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// Where a segment's stdin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stdin {
    /// Inherited (the terminal, or nothing).
    Inherited,
    /// The previous stage of a pipeline.
    Pipe,
    /// A here-document or here-string; the text when it is static.
    Here(Option<String>),
    /// A `<` redirection.
    File,
}

/// System directories whose programs the command table may classify by name. Real locations
/// only: `/bin` and `/sbin` are listed for systems without the merged `/usr`.
pub const TRUSTED_DIRS: [&str; 6] = [
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Names bash runs as builtins, before any PATH lookup.
pub const SHELL_BUILTINS: [&str; 56] = [
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
];

/// Is `name` one of [`SHELL_BUILTINS`]? A hash set built once: every command asks, and a
/// scan of the list compared most of its names.
pub(crate) fn is_shell_builtin(name: &str) -> bool {
    static SET: std::sync::OnceLock<HashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| SHELL_BUILTINS.into_iter().collect())
        .contains(name)
}

/// One simple command the text may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The command's source text (for a re-parsed `sh -c` text, the inner command).
    pub text: String,
    /// The argv after peeling wrappers (`env`, `sudo`, `timeout`, ...). Empty for a
    /// redirect-only or assignment-only statement.
    pub argv: Vec<Word>,
    /// Basename of argv[0] when it is static.
    pub program: Option<String>,
    /// argv[0] was a bare name looked up on PATH, or a path into a PATH directory: the
    /// command table may trust its name. A program elsewhere (`./ls`) is just code.
    pub trusted_name: bool,
    /// argv[0] is a shell builtin, or an executable in a system directory
    /// ([`TRUSTED_DIRS`]). A program found anywhere else (a PATH entry the agent may write,
    /// a `node_modules/.bin`, or nowhere) may be anything, so it is at least run-code.
    pub trusted_location: bool,
    /// The executable as found: the PATH entry, or the path as given (normalised).
    pub resolved: Option<PathBuf>,
    /// `realpath` of `resolved`, when argv[0] was a path that exists. For a name found
    /// on PATH it is left to the caller ([`Segment::real_path`]), as only allowlist
    /// matching needs it.
    pub resolved_real: Option<PathBuf>,
    pub redirects: Vec<Redirect>,
    pub stdin: Stdin,
    /// Wrappers peeled off, outermost first (`sudo`, `env`, `bash -c`, ...).
    pub wrappers: Vec<String>,
    /// A `sudo`/`doas` wrapper was seen.
    pub privileged: bool,
    /// Names of environment assignments that apply to this command (`FOO=1 cmd`, `env FOO=1`).
    pub env_assignments: Vec<String>,
    /// The directories the command may run in (a `cd` earlier in the text adds one).
    /// Empty: unknown (a `cd` to a non-static directory).
    pub cwds: Vec<PathBuf>,
    /// argv[0] names a function defined in the same text (its body is analysed separately).
    pub function_call: bool,
    /// Why this segment could not be analysed, if it could not.
    pub problem: Option<String>,
}

impl Segment {
    /// The executable's realpath (allowlist path globs match this), resolving it now when
    /// the analysis did not.
    pub fn real_path(&self) -> Option<PathBuf> {
        self.resolved_real
            .clone()
            .or_else(|| crate::policy::fs_memo::canonicalize(self.resolved.as_ref()?))
    }
}

/// The result of analysing one text or argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    pub segments: Vec<Segment>,
    /// Constructs in the text that are not known inert (arithmetic on variables, builtins
    /// that plant code, environment assignments that are code): each gates the request.
    pub gates: Vec<String>,
}

impl Analysis {
    /// True when any segment could not be analysed.
    pub fn has_problem(&self) -> bool {
        self.segments.iter().any(|s| s.problem.is_some())
    }
}

/// Texts up to this size have their syntax tree cached (parsing is a function of the
/// text alone; tree-sitter-bash spends most of a short command's analysis time here).
const CACHE_TEXT_BYTES: usize = 4096;
/// Trees kept per thread before the cache is emptied.
const CACHE_ENTRIES: usize = 256;

thread_local! {
    // One parser per thread: creating it costs more than parsing a short command.
    static PARSER: RefCell<Option<tree_sitter::Parser>> = const { RefCell::new(None) };
    static TREES: RefCell<HashMap<String, tree_sitter::Tree>> = RefCell::new(HashMap::new());
}

/// Parses `text` with tree-sitter-bash, reusing this thread's parser and recent trees.
/// `None` when the grammar cannot be loaded or the parser gives up.
fn parse(text: &str) -> Option<tree_sitter::Tree> {
    let cacheable = text.len() <= CACHE_TEXT_BYTES;
    if cacheable {
        if let Some(tree) = TREES.with(|t| t.borrow().get(text).cloned()) {
            return Some(tree);
        }
    }
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        let parser = slot.as_mut()?;
        parser.reset();
        parser.parse(text, None)
    })?;
    if cacheable {
        TREES.with(|t| {
            let mut t = t.borrow_mut();
            if t.len() >= CACHE_ENTRIES {
                t.clear();
            }
            t.insert(text.to_string(), tree.clone());
        });
    }
    Some(tree)
}

/// Analyses shell text.
pub fn analyse(text: &str, ctx: &ShellContext) -> Analysis {
    let mut analyser = walk::Analyser::new(ctx);
    analyser.text(text, &walk::Env::top(ctx));
    if analyser.unset_unproven() {
        return analyse(text, &ctx.without_start());
    }
    analyser.finish()
}

/// Analyses an argv that was given without shell text (no shell will interpret it, but
/// wrappers such as `sh -c TEXT` still are).
pub fn analyse_argv(argv: &[String], ctx: &ShellContext) -> Analysis {
    let mut analyser = walk::Analyser::new(ctx);
    let words: Vec<Word> = argv.iter().map(|a| Word::literal(a)).collect();
    let text = argv.join(" ");
    analyser.simple(words, &walk::Env::top(ctx), &text);
    if analyser.unset_unproven() {
        return analyse_argv(argv, &ctx.without_start());
    }
    analyser.finish()
}

/// The last path component of a command name.
pub fn basename(name: &str) -> &str {
    // By bytes: a `str` searcher costs more than these short names.
    match name.bytes().rposition(|b| b == b'/') {
        Some(slash) => &name[slash + 1..],
        None => name,
    }
}

/// Lexical normalisation of `raw` against `cwd`: `~` expansion, `.`/`..`/`//` removal.
pub fn normalize_path(raw: &str, home: &Path, cwd: &Path) -> PathBuf {
    let joined: PathBuf = if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else if raw.starts_with('/') {
        PathBuf::from(raw)
    } else {
        cwd.join(raw)
    };
    let mut out = PathBuf::from("/");
    for comp in joined.components() {
        match comp {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(c) => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
fn wrappers_quote_for_test(v: &str) -> String {
    format!("'{}'", v.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests;
