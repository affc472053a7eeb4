//! Bounded walks below a directory operand, for programs that read a whole tree: what a
//! walk looks for is chosen by the program (`find -exec` and `grep -R` follow symlinks
//! into secrets, `grep -r`/`tar c` read dotenv files by name wherever they are, `xargs`
//! splits names at blanks and quotes). A tree over the bound gates. The walk asks the
//! decision's facts (`fs_memo`), never the filesystem.

use super::paths_check::{sensitive, short, Checker};
use super::Classification;
use crate::policy::fs_memo;
use crate::policy::paths;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;
use std::path::{Path, PathBuf};

/// Most entries one decision's walks look at.
const MAX_ENTRIES: usize = 20_000;

/// What one walk looks for.
pub(super) struct Walk<'f> {
    /// Every symlink counts (`find -L`, `grep -R`), not only those `keep` passes.
    pub follow: bool,
    pub max_depth: usize,
    /// The names the program acts on (find's `-name` tests).
    pub keep: &'f dyn Fn(&str) -> bool,
    /// Symlinks that lead to a sensitive path.
    pub links: bool,
    /// Dotenv files (secrets by name wherever they are).
    pub dotenv: bool,
    /// Names `xargs` would split or unquote (blanks, quotes, backslashes): the command
    /// would get words that are not the paths `find` printed.
    pub split_names: bool,
    /// Hidden entries (a name starting with `.`) are walked too; `rg` skips them by default.
    pub hidden: bool,
}

fn all(_: &str) -> bool {
    true
}

impl Walk<'_> {
    /// A recursive read that includes hidden files (`grep -r`, `tar c`, `cp -r`).
    pub const DOTENV: Walk<'static> = Walk {
        follow: false,
        max_depth: usize::MAX,
        keep: &all,
        links: false,
        dotenv: true,
        split_names: false,
        hidden: true,
    };
    /// A read that follows every symlink below (`grep -R`, `diff -r`), hidden files too.
    pub const FOLLOW: Walk<'static> = Walk {
        follow: true,
        max_depth: usize::MAX,
        keep: &all,
        links: true,
        dotenv: true,
        split_names: false,
        hidden: true,
    };
}

/// Can `xargs` (without `-0`) hand this name on as one word, unchanged?
fn splits(name: &str) -> bool {
    name.contains(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '\\'))
}

impl Checker<'_> {
    /// Walks below the directory operand `w` for what `o` asks. Records a sensitive
    /// finding for a hit, an unanalysable one when the tree is too large to walk (or a
    /// name `xargs` would split).
    pub fn walk_below(&self, c: &mut Classification, w: &Word, o: &Walk) {
        let Some(v) = w.value.as_deref() else {
            return;
        };
        let mut budget = MAX_ENTRIES;
        let mut noted = false;
        // Directories reached through a followed link, walked once (a link to an ancestor
        // would loop).
        let mut seen = std::collections::HashSet::new();
        for ctx in self.ctxs() {
            let root = paths::absolute(v, ctx);
            if o.split_names && splits(v) {
                split_finding(c, v);
                return;
            }
            // Each directory with whether its path below the operand already holds a name
            // `xargs` would split: a kept entry anywhere below it is printed with that path.
            let mut stack: Vec<(PathBuf, usize, bool)> = vec![(root, 1, false)];
            while let Some((dir, depth, split_above)) = stack.pop() {
                let Some(names) = fs_memo::list_dir(&dir) else {
                    continue;
                };
                for name in names {
                    if budget == 0 {
                        c.add(
                            Category::Unanalysable,
                            "tree-too-large",
                            format!("`{}` holds too many files to check", short(v)),
                        );
                        return;
                    }
                    budget -= 1;
                    if !o.hidden && name.starts_with('.') {
                        continue;
                    }
                    let path = dir.join(&name);
                    let Some(meta) = fs_memo::symlink_metadata(&path) else {
                        continue;
                    };
                    let kept = (o.keep)(&name);
                    let split_here = o.split_names && (split_above || splits(&name));
                    if split_here && kept {
                        split_finding(c, &path.to_string_lossy());
                        return;
                    }
                    if o.dotenv && kept && crate::policy::paths::is_secret_file_name(&name) {
                        // A secret kept unreadable does not end the walk: one further on
                        // might not be.
                        if !self.past_secret(c, &path, &path, ".env", &mut noted) {
                            return;
                        }
                        continue;
                    }
                    if meta.is_dir() {
                        if depth < o.max_depth {
                            stack.push((path, depth + 1, split_here));
                        }
                    } else if meta.is_symlink() && o.links && (o.follow || kept) {
                        let target = fs_memo::canonicalize(&path).unwrap_or_else(|| path.clone());
                        let sens = self.t.policy.sensitive();
                        if let Some(hit) = sens
                            .matches(&target)
                            .or_else(|| sens.contains_sensitive(&target))
                        {
                            if !self.past_secret(c, &path, &target, &hit, &mut noted) {
                                return;
                            }
                        } else if o.follow {
                            // Followed, the link's target is read (a directory: walked) as
                            // if it were here; outside the workspace and the system
                            // directories that is a person's call.
                            if !self.readable_alone(&target) {
                                c.add(
                                    Category::Unanalysable,
                                    "read-outside-workspace",
                                    format!(
                                        "follows {} to {}, outside the workspace and the \
                                         system directories",
                                        short(&path.to_string_lossy()),
                                        short(&target.to_string_lossy())
                                    ),
                                );
                                return;
                            }
                            let is_dir =
                                fs_memo::symlink_metadata(&target).is_some_and(|m| m.is_dir());
                            if is_dir && depth < o.max_depth && seen.insert(target.clone()) {
                                stack.push((target, depth + 1, split_here));
                            }
                        }
                    }
                }
            }
        }
    }
}

impl Checker<'_> {
    /// A secret the walk passes (`path`, reaching `real`) but the command does not name.
    /// A person's call (`secret-in-tree`) when the autonomous profile keeps `real`
    /// unreadable: a secret-named file in the workspace (its scan denies each one), or a
    /// file under HOME outside the workspace (never granted). Anywhere else (a `.env` under
    /// `/usr` or `/etc`, which that profile reads) it is the sensitive read it would be.
    /// Returns whether it was kept (a finding is recorded for the first only: `noted`).
    fn past_secret(
        &self,
        c: &mut Classification,
        path: &Path,
        real: &Path,
        hit: &str,
        noted: &mut bool,
    ) -> bool {
        let real = fs_memo::canonicalize(real).unwrap_or_else(|| real.to_path_buf());
        let ws = fs_memo::canonicalize(self.t.workspace)
            .unwrap_or_else(|| self.t.workspace.to_path_buf());
        let home = fs_memo::canonicalize(self.t.home).unwrap_or_else(|| self.t.home.to_path_buf());
        let named = real
            .file_name()
            .is_some_and(|n| crate::policy::paths::is_secret_file_name(&n.to_string_lossy()));
        let kept = if real.starts_with(&ws) {
            named
        } else {
            real.starts_with(&home) && !ws.starts_with(&real)
        };
        let what = path.to_string_lossy();
        if !kept {
            sensitive(c, &what, hit);
            return false;
        }
        if std::mem::replace(noted, true) {
            return true;
        }
        c.add(
            Category::SecretInTree,
            "secret-in-tree",
            format!(
                "reads a tree that holds {} (sensitive: {hit}); run in the guard's sandbox, \
                 that file stays unreadable",
                short(&what)
            ),
        );
        true
    }
}

fn split_finding(c: &mut Classification, what: &str) {
    c.add(
        Category::Unanalysable,
        "xargs-split",
        format!(
            "`xargs` would split or unquote the name {}: the command would get other words",
            short(what)
        ),
    );
}
