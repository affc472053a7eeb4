//! Simple commands: peel wrappers (`env`, `sudo`, `sh -c`, `xargs`, `timeout`, ...) until the
//! command that really runs is in argv[0], resolve it (`path_lookup`), track `cd`, and split
//! `find -exec` into its own segment. Option grammars are in `wrapper_args`.

use super::path_lookup::trusted_location;
use super::walk::{Analyser, Env};
use super::wrapper_args::find_execs;
use super::Segment;
use super::{basename, Stdin, Word};

mod peel;
use peel::Step;
pub(super) use peel::{xargs_parse, Xargs, XARGS_MAX_PROCS};

/// Most wrappers peeled off one command (`nice nice nice …` cannot loop forever).
const MAX_WRAPPERS: usize = 32;

/// Shells whose `-c TEXT` is analysed as shell text.
pub const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash"];

impl Analyser<'_> {
    /// A simple command: peel wrappers, then record the segment(s).
    pub(crate) fn simple(&mut self, argv: Vec<Word>, env: &Env, text: &str) {
        self.simple_in(argv, env.clone(), text);
    }

    /// [`Self::simple`] with an environment the caller no longer needs (peeling edits it).
    pub(crate) fn simple_in(&mut self, argv: Vec<Word>, mut env: Env, text: &str) {
        let mut argv = argv;
        for _ in 0..MAX_WRAPPERS {
            if argv.is_empty() {
                let seg = self.segment_base(text, argv, &env);
                self.push(seg);
                return;
            }
            let Some(name) = argv[0].value.as_deref() else {
                self.problem(text, "the command name is not static", &env);
                return;
            };
            let trusted = if env.std_path {
                self.resolve_for(name, true).0
            } else {
                self.trusted_name(name)
            };
            // A wrapper is peeled only where the agent cannot have put it (a `nice` in an
            // agent-writable PATH directory is that file's code, not nice); one found
            // nowhere runs nothing, as before.
            let located = self.system_located(name, env.std_path);
            // `command -p NAME` skips functions and looks NAME up on the standard PATH.
            let function = self.functions.contains(name) && !name.contains('/') && !env.std_path;
            if !trusted || !located || function {
                break;
            }
            let std_path = std::mem::take(&mut env.std_path);
            match self.peel(basename(name), &argv, &mut env, text) {
                Step::Done => {
                    env.std_path = std_path;
                    break;
                }
                Step::Handled => return,
                Step::Next(next) => argv = next,
            }
        }
        self.finish_segment(argv, &env, text);
    }

    /// `git -C DIR` runs in DIR: the segment's relative paths are relative to it (each
    /// `-C` relative to the previous). A non-static DIR makes the directory unknown.
    fn git_rebase(&mut self, seg: &mut Segment) {
        let mut i = 1;
        while let Some(w) = seg.argv.get(i) {
            let Some(v) = w.value.as_deref() else { break };
            if v == "-C" {
                match seg.argv.get(i + 1).and_then(|d| d.value.clone()) {
                    Some(dir) => {
                        let mut next = Vec::new();
                        for cwd in &seg.cwds {
                            let p = super::normalize_path(&dir, &self.ctx.home, cwd);
                            let phys = crate::policy::paths::resolve_lenient(&p);
                            for c in std::iter::once(p).chain(phys) {
                                if !next.contains(&c) {
                                    next.push(c);
                                }
                            }
                        }
                        seg.cwds = next;
                    }
                    None => seg.cwds.clear(),
                }
                i += 2;
            } else if v == "-c" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" {
                i += 2;
            } else if v.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
    }

    /// Records the command, tracks `cd`, and splits out `find -exec` commands.
    fn finish_segment(&mut self, argv: Vec<Word>, env: &Env, text: &str) {
        let mut seg = self.segment_base(text, argv, env);
        let name = seg
            .argv
            .first()
            .and_then(|w| w.value.as_deref())
            .unwrap_or_default();
        let (trusted, resolved, resolved_real) = self.resolve_for(name, env.std_path);
        let base = basename(name);
        seg.function_call = !name.contains('/') && self.functions.contains(name) && !env.std_path;
        seg.trusted_location = trusted_location(name, resolved.as_deref());
        seg.program = Some(base.to_string());
        seg.trusted_name = trusted;
        seg.resolved = resolved;
        seg.resolved_real = resolved_real;
        let base = seg.program.as_deref().unwrap_or_default();
        let execs = if trusted && base == "find" {
            find_execs(&seg.argv)
        } else {
            Vec::new()
        };
        let cd_target = if trusted && matches!(base, "cd" | "pushd" | "popd") {
            let operands: Vec<&Word> = seg
                .argv
                .iter()
                .skip(1)
                .filter(|w| {
                    !w.value
                        .as_deref()
                        .is_some_and(|v| v.starts_with('-') && v != "-")
                })
                .collect();
            Some(match (base, operands.first()) {
                ("popd", _) => None,
                (_, None) => Some(self.ctx.home.to_string_lossy().into_owned()),
                (_, Some(w)) => w.value.clone().filter(|_| !w.glob),
            })
        } else {
            None
        };
        if base == "git" {
            self.git_rebase(&mut seg);
        }
        self.push(seg);
        if let Some(target) = cd_target {
            self.change_dir(target.as_deref());
        }
        if execs.is_empty() {
            return;
        }
        let mut inner_env = env.clone();
        inner_env.wrappers.push("find -exec".into());
        inner_env.redirects.clear();
        inner_env.stdin = Stdin::Inherited;
        for inner in execs {
            self.simple(inner, &inner_env, text);
        }
    }
}
