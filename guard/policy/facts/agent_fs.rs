//! The facts of a filesystem the guard does not run on: the agent's container, where the node
//! host runs what the guard decides. Its system directories come from a [`Snapshot`] the
//! deployment took of the agent's image (its root is read-only at run time, so the snapshot
//! stays true); the workspace, which both containers mount at the same path, is asked live of
//! the host; everything else (the agent's home, `/tmp`, `/run`, a directory the snapshot did
//! not list) is unknown, which the core never proves safe. Judging the agent's commands with
//! the guard's own filesystem would be wrong both ways: the guard's container has none of the
//! agent's programs, and its `/tmp` is not the agent's.

use super::{resolve_with, Facts, Kind, LinkStatus, Meta, Step, Stop};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The snapshot format this guard reads.
pub const SNAPSHOT_VERSION: u32 = 1;
/// Entries one snapshot may hold (the agent image's PATH directories hold a few thousand).
pub const MAX_ENTRIES: usize = 1_000_000;

/// One object of the snapshot, as `lstat` (and `readlink`) saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Object {
    File { mode: u32 },
    Dir { mode: u32 },
    Link { target: PathBuf },
    Other { mode: u32 },
}

/// One path of the snapshot. (An unknown field is refused by [`Object`]: serde cannot deny
/// them on a struct that flattens.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub path: PathBuf,
    #[serde(flatten)]
    pub object: Object,
}

/// What `sanctum-guard fs-snapshot` records: the listed directories (every name in them) and
/// every object on the way to them and to their links' targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub version: u32,
    /// Directories whose every entry is in `entries`: a name missing from one does not exist.
    pub complete: Vec<PathBuf>,
    pub entries: Vec<Entry>,
}

/// Why a snapshot is refused (the guard then does not start: it would judge blind).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("snapshot version {0}, this guard reads version {SNAPSHOT_VERSION}")]
    Version(u32),
    #[error("more than {MAX_ENTRIES} entries")]
    TooLarge,
    #[error("{0:?} is not an absolute path without `.`, `..` or a trailing slash")]
    NotCanonical(PathBuf),
    #[error("{0:?} is listed twice")]
    Duplicate(PathBuf),
    #[error("complete directory {0:?} is not a directory of the snapshot")]
    NotADir(PathBuf),
}

/// An absolute path made only of normal components (the form every look-up builds).
fn canonical(p: &Path) -> bool {
    if p == Path::new("/") {
        return true;
    }
    // `components()` drops `.` and repeated slashes: the spelling must be the rebuilt one.
    let rebuilt: PathBuf = p.components().collect();
    let mut c = p.components();
    rebuilt.as_os_str() == p.as_os_str()
        && c.next() == Some(Component::RootDir)
        && c.all(|c| matches!(c, Component::Normal(_)))
}

/// What one path is, to a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Look {
    Is(Meta, Option<PathBuf>),
    Missing,
    Unknown,
}

/// The agent's filesystem as the guard can know it (see the module doc).
#[derive(Debug)]
pub struct AgentFs {
    objects: HashMap<PathBuf, Object>,
    complete: HashSet<PathBuf>,
    /// Each complete directory's names, for glob expansion.
    children: HashMap<PathBuf, Vec<String>>,
    workspace: PathBuf,
    host: Arc<dyn Facts>,
}

impl AgentFs {
    /// The snapshot, checked, with the shared `workspace` asked of `host`.
    pub fn new(
        snap: Snapshot,
        workspace: &Path,
        host: Arc<dyn Facts>,
    ) -> Result<AgentFs, SnapshotError> {
        if snap.version != SNAPSHOT_VERSION {
            return Err(SnapshotError::Version(snap.version));
        }
        if snap.entries.len() > MAX_ENTRIES || snap.complete.len() > MAX_ENTRIES {
            return Err(SnapshotError::TooLarge);
        }
        let mut objects = HashMap::with_capacity(snap.entries.len());
        for e in snap.entries {
            if !canonical(&e.path) || e.path == Path::new("/") {
                return Err(SnapshotError::NotCanonical(e.path));
            }
            if objects.insert(e.path.clone(), e.object).is_some() {
                return Err(SnapshotError::Duplicate(e.path));
            }
        }
        let mut complete = HashSet::with_capacity(snap.complete.len());
        let mut children: HashMap<PathBuf, Vec<String>> = HashMap::new();
        for d in snap.complete {
            let is_dir = d == Path::new("/") || matches!(objects.get(&d), Some(Object::Dir { .. }));
            if !canonical(&d) || !is_dir {
                return Err(SnapshotError::NotADir(d));
            }
            children.insert(d.clone(), Vec::new());
            complete.insert(d);
        }
        for p in objects.keys() {
            if let (Some(parent), Some(name)) = (p.parent(), p.file_name()) {
                if let Some(names) = children.get_mut(parent) {
                    names.push(name.to_string_lossy().into_owned());
                }
            }
        }
        Ok(AgentFs {
            objects,
            complete,
            children,
            workspace: workspace.to_path_buf(),
            host,
        })
    }

    fn in_workspace(&self, p: &Path) -> bool {
        p.starts_with(&self.workspace)
    }

    /// `lstat` + `readlink` of one canonical path, from wherever it is known.
    fn look(&self, p: &Path) -> Look {
        if p == Path::new("/") {
            return Look::Is(
                Meta {
                    kind: Kind::Dir,
                    mode: 0o755,
                },
                None,
            );
        }
        if self.in_workspace(p) {
            return match self.host.lstat(p) {
                None => Look::Missing,
                Some(m) if m.is_symlink() => match self.host.read_link(p) {
                    Some(t) => Look::Is(m, Some(t)),
                    None => Look::Unknown,
                },
                Some(m) => Look::Is(m, None),
            };
        }
        match self.objects.get(p) {
            Some(o) => {
                let (kind, mode, target) = match o {
                    Object::File { mode } => (Kind::File, *mode, None),
                    Object::Dir { mode } => (Kind::Dir, *mode, None),
                    Object::Link { target } => (Kind::Symlink, 0o777, Some(target.clone())),
                    Object::Other { mode } => (Kind::Other, *mode, None),
                };
                Look::Is(
                    Meta {
                        kind,
                        mode: mode & 0o7777,
                    },
                    target,
                )
            }
            None if p.parent().is_some_and(|d| self.complete.contains(d)) => Look::Missing,
            None => Look::Unknown,
        }
    }

    /// What `p` names with every symlink on the way resolved (the last one too when
    /// `follow`): its resolved path, `lstat` there and the link's target if it is one.
    fn walk(&self, p: &Path, follow: bool) -> Result<(PathBuf, Meta, Option<PathBuf>), Look> {
        let cur = resolve_with(p, follow, |next| match self.look(next) {
            Look::Is(_, Some(t)) => Step::Link(t),
            Look::Is(m, None) if m.is_dir() => Step::Dir,
            Look::Is(..) => Step::Leaf,
            Look::Missing => Step::Missing,
            Look::Unknown => Step::Unknown,
        })
        .map_err(|e| match e {
            Stop::Missing => Look::Missing,
            Stop::Unknown => Look::Unknown,
        })?;
        match self.look(&cur) {
            Look::Is(m, t) => Ok((cur, m, t)),
            other => Err(other),
        }
    }
}

impl Facts for AgentFs {
    fn stat(&self, p: &Path) -> Option<Meta> {
        self.walk(p, true).ok().map(|(_, m, _)| m)
    }
    fn lstat(&self, p: &Path) -> Option<Meta> {
        self.walk(p, false).ok().map(|(_, m, _)| m)
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        self.walk(p, false).ok().and_then(|(_, _, t)| t)
    }
    fn link_status(&self, p: &Path) -> Option<LinkStatus> {
        match self.walk(p, false) {
            Ok((_, _, Some(t))) => Some(LinkStatus::Target(t)),
            Ok((_, m, None)) if m.is_symlink() => None,
            Ok(_) => Some(LinkStatus::NotLink),
            Err(Look::Missing) => Some(LinkStatus::Missing),
            Err(_) => None,
        }
    }
    fn realpath(&self, p: &Path) -> Option<PathBuf> {
        self.walk(p, true).ok().map(|(p, _, _)| p)
    }
    fn list_dir(&self, p: &Path) -> Option<Vec<String>> {
        let (dir, m, _) = self.walk(p, true).ok()?;
        if !m.is_dir() {
            return None;
        }
        if self.in_workspace(&dir) {
            return self.host.list_dir(&dir);
        }
        self.children.get(&dir).cloned()
    }
}

#[cfg(test)]
mod tests;
