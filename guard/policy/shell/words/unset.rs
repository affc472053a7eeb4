//! Variables known to be unset, so `${x:-src}` is `src` and `${x:+-la}` is nothing.
//!
//! Where the guard runs the text itself (node host, socket `exec`) it builds the run's
//! environment, and the start-up files of `sh -lc` are scanned (`startup`): the context then
//! lists every name that may be set when the text starts (`ShellContext::set_at_start`).
//! A name is taken as unset only when, besides not being in that list:
//! - it holds a lower-case letter (the shells set only upper-case names of their own, and the
//!   guard adds only upper-case ones to a run: PATH, HOME, TMPDIR, GIT_*);
//! - no text analysed so far (the command, and each text it runs: `sh -c`, `env -S`)
//!   mentions it other than as a plain use (`$x`, `${x}`, `${x-…}`, `${x:-…}`, `${x+…}`,
//!   `${x:+…}`, `${x#…}`, `${x%…}`), so nothing in it assigns, reads into, exports or loops
//!   over it; and no wrapper assigns it for the text (`env x=1 sh -c …`);
//! - no text mentions `IFS` (a default is split at IFS characters when unquoted), and none
//!   runs in a shell other than sh, dash and bash (zsh sets `path`, `status`, … itself).
//!
//! A child shell cannot set its parent's variables, and the builtins that set a variable
//! named at run time in the same shell (`eval`, `source`, `read "$v"`, `printf -v`) gate
//! on their own. A default is known only when it is a plain word (no quotes, expansions,
//! blanks, globs or `~`), so splitting and globbing leave it as it is.

use super::super::walk::{Analyser, Env};
use super::super::{basename, Segment, SHELLS};

/// Is `b` a character of a shell variable name?
fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Builtins that can set a variable whose name is only known when they run (`read "$v"`,
/// `declare $'\x78=1'`, `printf -v "$n"`), or run text that may: where one runs, the
/// text is analysed again with no variable taken as unset. (A name spelled out in the text
/// is a mention; these cover the names that are not.)
const SETTERS: &[&str] = &[
    "read",
    "mapfile",
    "readarray",
    "printf",
    "getopts",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "let",
    "wait",
    "eval",
    "source",
    ".",
    "trap",
    "alias",
    "enable",
    "coproc",
    "select",
    "builtin",
    "command",
];

/// Operators after `${NAME` that only use the variable.
const USES: &[&str] = &["}", ":-", "-", ":+", "+", "#", "%"];

impl Analyser<'_> {
    /// Records the names `text` mentions other than as a plain use, and the names the
    /// wrappers around it assign.
    pub(crate) fn note_mentions(&mut self, text: &str, env: &Env) {
        if self.ctx.set_at_start.is_none() {
            return;
        }
        let own_names = |w: &String| {
            let shell = w.split(' ').next().unwrap_or_default();
            SHELLS.contains(&shell) && !["sh", "bash", "dash"].contains(&shell)
        };
        if text.contains("IFS") || env.wrappers.iter().any(own_names) {
            self.no_unset = true;
        }
        self.mentioned.extend(env.env_assignments.iter().cloned());
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if !name_byte(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && name_byte(bytes[i]) {
                i += 1;
            }
            let token = &text[start..i];
            if token.starts_with(|c: char| c.is_ascii_digit())
                || !token.bytes().any(|b| b.is_ascii_lowercase())
            {
                continue;
            }
            let before = &text[..start];
            let after = &text[i..];
            let used = if before.ends_with("${") {
                USES.iter().any(|op| after.starts_with(op))
            } else {
                before.ends_with('$')
            };
            if !used {
                self.mentioned.insert(token.to_string());
            }
        }
    }

    /// Notes a command that may set a variable named at run time (see [`SETTERS`]); one
    /// whose name is not static may be any of them.
    pub(crate) fn note_setter(&mut self, seg: &Segment) {
        let names = [
            seg.argv.first().map(|w| w.value.as_deref()),
            seg.program.as_deref().map(Some),
        ];
        for name in names.into_iter().flatten() {
            match name {
                Some(n) if !SETTERS.contains(&basename(n)) => {}
                _ => self.sets_names = true,
            }
        }
    }

    /// Is `name` known to be unset where it is used (see the module doc)?
    fn unset_at_start(&self, name: &str) -> bool {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(name_byte)
            && name.bytes().any(|b| b.is_ascii_lowercase())
            && !self.no_unset
            && !self.mentioned.contains(name)
            && self
                .ctx
                .set_at_start
                .as_ref()
                .is_some_and(|set| !set.contains(name))
    }

    /// The value of `$x`, `${x}`, `${x-W}`, `${x:-W}`, `${x+W}`, `${x:+W}`, `${x#P}`,
    /// `${x%P}` (`text`) when `x` is known unset: empty, or `W` when it is a plain word.
    pub(super) fn unset_value(&mut self, text: &str) -> Option<String> {
        let (name, rest) = match text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
            Some(inner) => inner.split_at(inner.bytes().take_while(|b| name_byte(*b)).count()),
            None => (text.strip_prefix('$')?, ""),
        };
        if !self.unset_at_start(name) {
            return None;
        }
        self.used_unset = true;
        if rest.is_empty() || rest.starts_with(['#', '%', '+']) || rest.starts_with(":+") {
            return Some(String::new());
        }
        let default = rest.strip_prefix(":-").or_else(|| rest.strip_prefix('-'))?;
        let plain = default
            .bytes()
            .all(|b| name_byte(b) || b"./:@,=+-%".contains(&b))
            && !default.starts_with('~');
        plain.then(|| default.to_string())
    }
}
