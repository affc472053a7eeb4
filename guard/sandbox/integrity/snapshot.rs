//! The scan: every git directory under the workspace (a `.git`, a bare repository, a
//! submodule's or worktree's git dir: git's own test, HEAD plus objects/refs or commondir),
//! the files of each that decide what git runs (`config`, `config.worktree`, `commondir`,
//! `hooks/`), `.git` files and links that redirect git elsewhere, and the agent's own trees
//! at the workspace root. Bounded in depth, entries and bytes; a bound hit is recorded.

use super::fsat::{self, Kind};
use super::ScanLimits;
use nix::errno::Errno;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Files of a git dir that decide what git runs or which config it reads.
pub const GIT_FILES: [&str; 3] = ["config", "config.worktree", "commondir"];
/// Trees at the workspace root that only the agent's own tools may change.
pub const AGENT_TREES: [&str; 2] = [".openclaw", ".sanctum"];
/// How deep a watched tree (hooks/, .openclaw/) is recorded.
const TREE_DEPTH: usize = 8;

/// What was at a watched path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File {
        data: Vec<u8>,
        mode: u32,
    },
    /// A file over the per-file cap: compared by size and change time, never restored.
    Big {
        len: u64,
        ctime: (i64, i64),
    },
    Link(OsString),
    Dir {
        mode: u32,
    },
    Other,
}

/// A watched path: the git dir (or "" for the workspace root) it belongs to, and the path
/// below it. Restores open the base strictly and may repair what is below it.
pub type Key = (PathBuf, PathBuf);

#[derive(Debug, Default)]
pub struct Snapshot {
    pub nodes: BTreeMap<Key, Node>,
    pub git_dirs: BTreeSet<PathBuf>,
    /// `.git` entries that are files (`gitdir: …`) or links, by path.
    pub git_links: BTreeMap<PathBuf, Node>,
    /// Why the scan stopped early, if it did.
    pub limit: Option<String>,
}

struct Scan<'a> {
    limits: &'a ScanLimits,
    entries: usize,
    bytes: u64,
    snap: Snapshot,
}

/// Scans the workspace open at `root`.
pub fn take(root: &OwnedFd, limits: &ScanLimits) -> Result<Snapshot, Errno> {
    let mut s = Scan {
        limits,
        entries: 0,
        bytes: 0,
        snap: Snapshot::default(),
    };
    s.dir(root, Path::new(""), 0)?;
    Ok(s.snap)
}

/// git's own test (setup.c `is_git_directory`), which follows links: HEAD (a file, or a
/// link as old git wrote it), and objects + refs or a commondir.
fn is_git_dir(names: &[(OsString, Kind)]) -> bool {
    let has = |n: &str, kinds: &[Kind]| {
        names
            .iter()
            .any(|(name, kind)| name == n && kinds.contains(kind))
    };
    let (file, dir) = (&[Kind::File, Kind::Link], &[Kind::Dir, Kind::Link]);
    has("HEAD", file) && ((has("objects", dir) && has("refs", dir)) || has("commondir", file))
}

/// Git's bulk data inside a git dir, not walked (big, and nothing in it runs code).
const GIT_DATA: [&str; 5] = ["objects", "refs", "logs", "lfs", "hooks"];

impl Scan<'_> {
    fn stop(&mut self, why: String) {
        self.snap.limit.get_or_insert(why);
    }

    fn count(&mut self, n: usize) -> bool {
        self.entries += n;
        if self.entries > self.limits.max_entries {
            let max = self.limits.max_entries;
            self.stop(format!("scan stopped after {max} entries"));
        }
        self.snap.limit.is_none()
    }

    fn dir(&mut self, fd: &OwnedFd, rel: &Path, depth: usize) -> Result<(), Errno> {
        let names = fsat::list(fd)?;
        if !self.count(names.len()) {
            return Ok(());
        }
        if is_git_dir(&names) {
            self.snap.git_dirs.insert(rel.to_path_buf());
            for f in GIT_FILES {
                if let Some((_, kind)) = names.iter().find(|(n, _)| n == f) {
                    self.watch(fd, rel, Path::new(f), *kind, 0)?;
                }
            }
            if let Some((_, kind)) = names.iter().find(|(n, _)| n == "hooks") {
                self.watch(fd, rel, Path::new("hooks"), *kind, 0)?;
            }
            // Nested git dirs (modules/, worktrees/, or planted anywhere else) are found
            // below; git's bulk data is skipped.
            for (name, kind) in &names {
                if *kind == Kind::Dir && !GIT_DATA.iter().any(|d| name == *d) {
                    self.descend(fd, rel, name, depth)?;
                }
                if self.snap.limit.is_some() {
                    break;
                }
            }
            return Ok(());
        }
        for (name, kind) in &names {
            if depth == 0 && AGENT_TREES.iter().any(|t| name == *t) {
                self.watch(fd, Path::new(""), Path::new(name), *kind, 0)?;
            }
            match kind {
                Kind::Dir => self.descend(fd, rel, name, depth)?,
                Kind::File | Kind::Link if name == ".git" => {
                    let node = self.node(fd, name, *kind)?;
                    self.snap.git_links.insert(rel.join(name), node);
                }
                _ => {}
            }
            if self.snap.limit.is_some() {
                break;
            }
        }
        Ok(())
    }

    fn descend(
        &mut self,
        fd: &OwnedFd,
        rel: &Path,
        name: &OsStr,
        depth: usize,
    ) -> Result<(), Errno> {
        if depth + 1 > self.limits.max_depth {
            let p = rel.join(name);
            self.stop(format!(
                "scan depth limit {} at {}",
                self.limits.max_depth,
                p.display()
            ));
            return Ok(());
        }
        let p = rel.join(name);
        let r = fsat::open_dir(fd, name).and_then(|sub| self.dir(&sub, &p, depth + 1));
        match r {
            // Swapped for a link or removed since the listing: nothing to walk.
            Ok(()) | Err(Errno::ELOOP) | Err(Errno::ENOTDIR) | Err(Errno::ENOENT) => Ok(()),
            // Unreadable: the scan cannot vouch for what is below; reported as a bound.
            Err(e) => {
                self.stop(format!("cannot read {}: {e}", p.display()));
                Ok(())
            }
        }
    }

    fn node(&mut self, dir: impl AsFd, name: &OsStr, kind: Kind) -> Result<Node, Errno> {
        let dir = dir.as_fd();
        let st = fsat::stat_at(dir, name)?.ok_or(Errno::ENOENT)?;
        Ok(match kind {
            Kind::File => match fsat::read_file(dir, name, self.limits.max_file_bytes)? {
                Some(data) => {
                    self.bytes += data.len() as u64;
                    if self.bytes > self.limits.max_total_bytes {
                        let max = self.limits.max_total_bytes;
                        self.stop(format!("snapshot bigger than {max} bytes"));
                    }
                    Node::File {
                        data,
                        mode: st.st_mode & 0o7777,
                    }
                }
                None => Node::Big {
                    len: st.st_size as u64,
                    ctime: (st.st_ctime, st.st_ctime_nsec),
                },
            },
            Kind::Link => Node::Link(fsat::read_link(dir, name)?),
            Kind::Dir => Node::Dir {
                mode: st.st_mode & 0o7777,
            },
            Kind::Other => Node::Other,
        })
    }

    /// Records `inner` (below the base `base`, whose directory holding `inner`'s last
    /// component is `dir`) and, for a directory, what is in it.
    fn watch(
        &mut self,
        dir: &OwnedFd,
        base: &Path,
        inner: &Path,
        kind: Kind,
        depth: usize,
    ) -> Result<(), Errno> {
        let Some(name) = inner.file_name() else {
            return Ok(());
        };
        let node = match self.node(dir, name, kind) {
            Ok(n) => n,
            Err(Errno::ENOENT) | Err(Errno::ELOOP) => return Ok(()),
            Err(e) => return Err(e),
        };
        self.snap
            .nodes
            .insert((base.to_path_buf(), inner.to_path_buf()), node);
        if kind != Kind::Dir {
            return Ok(());
        }
        if depth >= TREE_DEPTH {
            self.stop(format!(
                "watched tree deeper than {TREE_DEPTH} at {}",
                inner.display()
            ));
            return Ok(());
        }
        let sub = match fsat::open_dir(dir, name) {
            Ok(s) => s,
            Err(Errno::ELOOP) | Err(Errno::ENOTDIR) | Err(Errno::ENOENT) => return Ok(()),
            Err(e) => return Err(e),
        };
        let names = fsat::list(&sub)?;
        if !self.count(names.len()) {
            return Ok(());
        }
        for (child, kind) in names {
            self.watch(&sub, base, &inner.join(child), kind, depth + 1)?;
            if self.snap.limit.is_some() {
                break;
            }
        }
        Ok(())
    }
}
