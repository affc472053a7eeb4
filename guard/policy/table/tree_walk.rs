//! Bounded walks below a directory operand, for programs that read a whole tree: what a
//! walk looks for is chosen by the program (`find -exec` and `grep -R` follow symlinks
//! into secrets, `grep -r`/`tar c` read dotenv files by name wherever they are, `xargs`
//! splits names at blanks and quotes). A tree over the bound gates. The walk asks the
//! decision's facts (`fs_memo`), never the filesystem.

use super::paths_check::{short, Checker};
use super::Classification;
use crate::policy::fs_memo;
use crate::policy::paths;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;
use std::path::PathBuf;

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
        for ctx in self.ctxs() {
            let root = paths::absolute(v, ctx);
            if o.split_names && splits(v) {
                split_finding(c, v);
                return;
            }
            let mut stack: Vec<(PathBuf, usize)> = vec![(root, 1)];
            while let Some((dir, depth)) = stack.pop() {
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
                    if o.split_names && splits(&name) {
                        split_finding(c, &path.to_string_lossy());
                        return;
                    }
                    let kept = (o.keep)(&name);
                    if o.dotenv && kept && crate::policy::paths::is_secret_file_name(&name) {
                        in_tree(c, &path.to_string_lossy(), ".env");
                        return;
                    }
                    if meta.is_dir() {
                        if depth < o.max_depth {
                            stack.push((path, depth + 1));
                        }
                    } else if meta.is_symlink() && o.links && (o.follow || kept) {
                        let target = fs_memo::canonicalize(&path).unwrap_or_else(|| path.clone());
                        let sens = self.t.policy.sensitive();
                        if let Some(hit) = sens
                            .matches(&target)
                            .or_else(|| sens.contains_sensitive(&target))
                        {
                            in_tree(c, &path.to_string_lossy(), &hit);
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// A secret the walk passes but the command does not name: a person's call where the guard
/// runs it with the secret unreadable (`decide` denies it anywhere else).
fn in_tree(c: &mut Classification, what: &str, hit: &str) {
    c.add(
        Category::SecretInTree,
        "secret-in-tree",
        format!(
            "reads a tree that holds {} (sensitive: {hit}); run in the guard's sandbox, that \
             file stays unreadable",
            short(what)
        ),
    );
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
