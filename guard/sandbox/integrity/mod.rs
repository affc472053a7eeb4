//! The integrity check around a run that may write the workspace. Landlock cannot keep
//! `.git/hooks` read-only without making the workspace root uncreatable (rights cover whole
//! subtrees), so instead: before the run, snapshot what decides which code git runs in every
//! repository under the workspace (and the agent's `.openclaw`/`.sanctum`); after it, put back
//! what changed and report every change as an [`IntegrityEvent`] (in `RunOutcome.integrity`,
//! for the audit record and the request's outcome).
//!
//! What is restored and what is flagged:
//! - A repository that existed before: any change to `hooks/` (added, changed, removed,
//!   replaced by a link), `config.worktree` or `commondir` is undone. A change to `config`
//!   is kept only if every entry it adds or removes is inert (`gitconfig::Entry::inert`:
//!   `git remote add`, `git config user.name`, `git push -u` work); otherwise the whole file
//!   is restored.
//! - A repository created by the run (`git init`, a planted bare repository): hooks other
//!   than git's `*.sample` files are removed, and a `config`/`config.worktree` with any
//!   non-inert entry is rewritten with its inert entries only (or git's defaults when it
//!   cannot be parsed). A `commondir` is removed, except `git worktree add`'s own
//!   (`<gitdir>/worktrees/<name>/commondir`), which is flagged.
//! - `.openclaw`/`.sanctum` at the workspace root: any change is undone.
//! - Flagged only: a repository that disappeared or whose git dir was replaced (nothing is
//!   recreated), a new or changed `.git` file or link (it points git at another directory),
//!   a scan bound hit (repositories beyond it are not protected), a restore that failed.
//!
//! Every read and write is descriptor-relative and never follows a symlink (`fsat`), so a
//! link planted in the workspace cannot make the restore write outside it.

mod fsat;
pub mod gitconfig;
mod snapshot;

use super::SandboxError;
use nix::errno::Errno;
use serde::{Deserialize, Serialize};
use snapshot::{Key, Node, Snapshot};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// Bounds of one scan (before and after the run each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanLimits {
    pub max_depth: usize,
    pub max_entries: usize,
    /// Larger watched files are compared by size and ctime and removed if changed.
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
}

impl Default for ScanLimits {
    fn default() -> Self {
        ScanLimits {
            max_depth: 24,
            max_entries: 100_000,
            max_file_bytes: 1 << 20,
            max_total_bytes: 32 << 20,
        }
    }
}

/// What the run changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Added,
    Modified,
    Removed,
    /// A config entry that can run code or load other config (the detail names them).
    CodeRunningConfig,
    RepositoryRemoved,
    /// A `.git` file or link, which points git at another directory.
    GitLink,
    /// The scan stopped at a bound: repositories beyond it were not checked.
    ScanLimit,
    /// The workspace could not be scanned.
    ScanFailed,
}

/// What the guard did about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Put back as it was before the run.
    Restored,
    /// Deleted (it did not exist before, or could not be restored).
    Removed,
    /// Rewritten without its code-running entries.
    Sanitized,
    /// Left as the run made it (inert config entries only).
    Kept,
    /// Reported only.
    Flagged,
    /// The restore failed (the detail says why): treat the repository as tampered.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegrityEvent {
    pub path: PathBuf,
    pub change: Change,
    pub action: Action,
    pub detail: String,
}

/// A snapshot taken before a run, to compare with after it.
#[derive(Debug)]
pub struct Integrity {
    root: PathBuf,
    fd: Option<OwnedFd>,
    before: Snapshot,
    limits: ScanLimits,
    events: Vec<IntegrityEvent>,
    /// The git dirs found after the run.
    seen: std::collections::BTreeSet<PathBuf>,
}

/// The default config `git init` writes, used when a new repository's config is unparsable.
const DEFAULT_CONFIG: &[u8] = b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";

impl Integrity {
    /// Snapshots `workspace` (a canonical directory). Fails (and the run must not start)
    /// when the workspace cannot be opened or listed: its changes could not be checked.
    pub fn before(workspace: &Path, limits: ScanLimits) -> Result<Integrity, SandboxError> {
        let fail = |e: Errno| {
            SandboxError::Profile(format!(
                "integrity check of {}: {e}; not running what could not be checked",
                workspace.display()
            ))
        };
        let fd = std::fs::File::open(workspace)
            .map(OwnedFd::from)
            .map_err(|e| fail(Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))))?;
        let before = snapshot::take(&fd, &limits).map_err(fail)?;
        Ok(Integrity {
            root: workspace.to_path_buf(),
            fd: Some(fd),
            before,
            limits,
            events: Vec::new(),
            seen: Default::default(),
        })
    }

    fn flag(&mut self, rel: &Path, change: Change, detail: String) {
        self.event(rel, change, Action::Flagged, detail);
    }

    fn event(&mut self, rel: &Path, change: Change, action: Action, detail: String) {
        let path = if rel.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        };
        self.events.push(IntegrityEvent {
            path,
            change,
            action,
            detail,
        });
    }

    /// Compares with the workspace after the run, restores, and returns every event.
    pub fn after(mut self) -> Vec<IntegrityEvent> {
        let Some(fd) = self.fd.take() else {
            return self.events;
        };
        let after = match snapshot::take(&fd, &self.limits) {
            Ok(s) => s,
            Err(e) => {
                self.flag(
                    Path::new(""),
                    Change::ScanFailed,
                    format!("after the run: {e}"),
                );
                return self.events;
            }
        };
        let limits = [
            ("before", self.before.limit.clone()),
            ("after", after.limit.clone()),
        ];
        for (when, why) in limits {
            if let Some(why) = why {
                self.flag(
                    Path::new(""),
                    Change::ScanLimit,
                    format!("{when} the run: {why}"),
                );
            }
        }
        self.seen = after.git_dirs.clone();
        let before_dirs = self.before.git_dirs.clone();
        for dir in &before_dirs {
            if !after.git_dirs.contains(dir) {
                let d = "git dir removed or replaced; nothing recreated".to_string();
                self.flag(dir, Change::RepositoryRemoved, d);
            }
        }
        for (path, node) in &after.git_links {
            if self.before.git_links.get(path) != Some(node) {
                let d = match node {
                    Node::Link(t) => format!("link to {}", t.to_string_lossy()),
                    Node::File { data, .. } => String::from_utf8_lossy(data).trim().to_string(),
                    _ => String::new(),
                };
                self.flag(path, Change::GitLink, d);
            }
        }
        let mut keys: Vec<Key> = self
            .before
            .nodes
            .keys()
            .chain(after.nodes.keys())
            .cloned()
            .collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let b = self.before.nodes.get(&key).cloned();
            let a = after.nodes.get(&key);
            if b.as_ref() == a {
                continue;
            }
            let base = &key.0;
            let old_repo = before_dirs.contains(base) && after.git_dirs.contains(base);
            if base.as_os_str().is_empty() || old_repo {
                self.undo(&fd, &key, b.as_ref(), a);
            } else if after.git_dirs.contains(base) {
                self.new_repo(&fd, &key, a);
            }
            // Otherwise the repository vanished: flagged above.
        }
        self.events
    }

    /// An existing repository or agent tree: put `key` back to `b`.
    fn undo(&mut self, root: &OwnedFd, key: &Key, b: Option<&Node>, a: Option<&Node>) {
        let rel = key.0.join(&key.1);
        let change = match (b, a) {
            (None, _) => Change::Added,
            (_, None) => Change::Removed,
            _ => Change::Modified,
        };
        if key.1 == Path::new("config") {
            if let (Some(Node::File { data: old, .. }), Some(Node::File { data: new, .. })) = (b, a)
            {
                match config_delta(old, new) {
                    Ok(()) => {
                        let d = "only inert entries changed".to_string();
                        return self.event(&rel, change, Action::Kept, d);
                    }
                    Err(names) => {
                        let r = self.restore(root, key, b);
                        return self.done(
                            &rel,
                            Change::CodeRunningConfig,
                            Action::Restored,
                            names,
                            r,
                        );
                    }
                }
            }
        }
        // Parents first (sorted keys), so a directory is repaired before its files.
        let action = if b.is_some() {
            Action::Restored
        } else {
            Action::Removed
        };
        let r = self.restore(root, key, b);
        self.done(&rel, change, action, describe(b, a), r);
    }

    /// A repository the run created: strip what could run code.
    fn new_repo(&mut self, root: &OwnedFd, key: &Key, a: Option<&Node>) {
        let rel = key.0.join(&key.1);
        let inner = key.1.as_path();
        let Some(a) = a else { return };
        let first = inner.components().next().map(|c| c.as_os_str());
        if first == Some(OsStr::new("hooks")) {
            let sample = inner.components().count() == 2
                && inner.extension() == Some(OsStr::new("sample"))
                && matches!(a, Node::File { .. });
            let hooks_dir = inner == Path::new("hooks") && matches!(a, Node::Dir { .. });
            if !hooks_dir && !sample {
                let r = self.restore(root, key, None);
                self.done(
                    &rel,
                    Change::Added,
                    Action::Removed,
                    describe(None, Some(a)),
                    r,
                );
            }
            return;
        }
        if inner == Path::new("config") || inner == Path::new("config.worktree") {
            let Node::File { data, mode } = a else {
                let r = self.restore(root, key, None);
                return self.done(
                    &rel,
                    Change::Added,
                    Action::Removed,
                    describe(None, Some(a)),
                    r,
                );
            };
            let (clean, names) = match gitconfig::parse(data) {
                Some(entries) => {
                    let bad: Vec<String> = entries
                        .iter()
                        .filter(|e| !e.inert())
                        .map(|e| e.name())
                        .collect();
                    let keep: Vec<_> = entries.into_iter().filter(|e| e.inert()).collect();
                    (gitconfig::render(&keep), bad.join(", "))
                }
                None => (DEFAULT_CONFIG.to_vec(), "unparsable config".to_string()),
            };
            if names.is_empty() {
                return;
            }
            let node = Node::File {
                data: clean,
                mode: *mode,
            };
            let r = self.restore(root, key, Some(&node));
            return self.done(&rel, Change::CodeRunningConfig, Action::Sanitized, names, r);
        }
        // commondir makes git read another directory's config: only `git worktree add`'s
        // own (<gitdir>/worktrees/<name>/commondir) is left, and reported.
        let base = key.0.as_path();
        let worktree = base.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees"))
            && base
                .parent()
                .and_then(Path::parent)
                .is_some_and(|g| self.before.git_dirs.contains(g) || self.seen.contains(g));
        if inner == Path::new("commondir") && !worktree {
            let r = self.restore(root, key, None);
            return self.done(
                &rel,
                Change::Added,
                Action::Removed,
                describe(None, Some(a)),
                r,
            );
        }
        self.flag(&rel, Change::Added, describe(None, Some(a)));
    }

    fn done(&mut self, rel: &Path, c: Change, a: Action, detail: String, r: Result<(), Errno>) {
        match r {
            Ok(()) => self.event(rel, c, a, detail),
            Err(e) => self.event(
                rel,
                c,
                Action::Failed,
                format!("{detail}; restore failed: {e}"),
            ),
        }
    }

    /// Makes `key` what `want` says (None: absent). The base is opened strictly (a git dir
    /// replaced by a link fails); directories below it are repaired as needed.
    fn restore(&self, root: &OwnedFd, key: &Key, want: Option<&Node>) -> Result<(), Errno> {
        let base = fsat::open_path(root, &key.0)?;
        let mut dir = base;
        let parts: Vec<&OsStr> = key
            .1
            .components()
            .map(|c| match c {
                Component::Normal(n) => Ok(n),
                _ => Err(Errno::EINVAL),
            })
            .collect::<Result<_, _>>()?;
        let (name, parents) = parts.split_last().ok_or(Errno::EINVAL)?;
        let mut sofar = PathBuf::new();
        for p in parents {
            sofar.push(p);
            dir = match want {
                Some(_) => {
                    let mode = match self.before.nodes.get(&(key.0.clone(), sofar.clone())) {
                        Some(Node::Dir { mode }) => *mode,
                        _ => 0o755,
                    };
                    fsat::ensure_dir(&dir, p, mode)?
                }
                None => match fsat::open_dir(&dir, p) {
                    Ok(d) => d,
                    // The parent is gone or is not a directory: nothing below to remove.
                    Err(Errno::ENOENT) | Err(Errno::ENOTDIR) | Err(Errno::ELOOP) => return Ok(()),
                    Err(e) => return Err(e),
                },
            };
        }
        match want {
            None => fsat::remove(&dir, name),
            Some(Node::File { data, mode }) => fsat::put_file(&dir, name, data, *mode),
            Some(Node::Link(target)) => fsat::put_link(&dir, name, target),
            Some(Node::Dir { mode }) => fsat::ensure_dir(&dir, name, *mode).map(drop),
            // Not restorable: remove what is there now.
            Some(Node::Big { .. }) | Some(Node::Other) => fsat::remove(&dir, name),
        }
    }
}

/// Ok when `old` and `new` differ only in inert entries; else the names of the others.
fn config_delta(old: &[u8], new: &[u8]) -> Result<(), String> {
    let (Some(o), Some(n)) = (gitconfig::parse(old), gitconfig::parse(new)) else {
        return Err("config not parsable".into());
    };
    let risky = |v: &[gitconfig::Entry]| -> Vec<gitconfig::Entry> {
        let mut r: Vec<_> = v.iter().filter(|e| !e.inert()).cloned().collect();
        r.sort();
        r
    };
    let (ro, rn) = (risky(&o), risky(&n));
    if ro == rn {
        return Ok(());
    }
    let mut names: Vec<String> = rn
        .iter()
        .filter(|e| !ro.contains(e))
        .chain(ro.iter().filter(|e| !rn.contains(e)))
        .map(gitconfig::Entry::name)
        .collect();
    names.dedup();
    Err(names.join(", "))
}

fn describe(b: Option<&Node>, a: Option<&Node>) -> String {
    let what = |n: Option<&Node>| match n {
        None => "nothing".to_string(),
        Some(Node::File { data, mode }) => format!("file ({} bytes, mode {mode:o})", data.len()),
        Some(Node::Big { len, .. }) => format!("file ({len} bytes, too big to keep)"),
        Some(Node::Link(t)) => format!("link to {}", t.to_string_lossy()),
        Some(Node::Dir { .. }) => "directory".to_string(),
        Some(Node::Other) => "special file".to_string(),
    };
    format!("was {}, found {}", what(b), what(a))
}

/// Whether `profile`'s write roots reach into its workspace (so the run needs the check).
pub fn needed(workspace: &Path, write: &[PathBuf]) -> bool {
    write
        .iter()
        .any(|w| workspace.starts_with(w) || w.starts_with(workspace))
}
