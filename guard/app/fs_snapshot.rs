//! Taking and reading the snapshot of the agent's filesystem
//! ([`crate::policy::facts::agent_fs`]). A deployment takes it in the agent's image (the compose
//! `init` service runs that image): every name in each PATH directory, and every object on the
//! way to them and to their links' targets. The guard reads it at start; a missing or
//! malformed snapshot stops the guard, which would otherwise judge the agent's commands with
//! its own container's programs.

use crate::policy::facts::agent_fs::{
    AgentFs, Entry, Object, Snapshot, SnapshotError, MAX_ENTRIES, SNAPSHOT_VERSION,
};
use crate::policy::facts::{resolve_with, Facts, Step};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest snapshot file read (a Debian image's PATH directories take ~100 KB).
const MAX_FILE: u64 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FsSnapshotError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: not a snapshot: {1}")]
    Json(PathBuf, serde_json::Error),
    #[error("{0}: {1}")]
    Invalid(PathBuf, SnapshotError),
    #[error("{0}: larger than {MAX_FILE} bytes")]
    FileTooLarge(PathBuf),
    #[error("{0}: not an absolute directory path")]
    NotAbsolute(PathBuf),
    #[error("{0}: does not lead to a directory")]
    NotADir(PathBuf),
    #[error("more than {MAX_ENTRIES} entries")]
    TooMany,
}

/// What was seen so far.
#[derive(Default)]
struct Taker {
    objects: BTreeMap<PathBuf, Object>,
    complete: BTreeSet<PathBuf>,
}

impl Taker {
    /// `lstat` (and `readlink`) of `p`, recorded; `None` when nothing is there.
    fn record(&mut self, p: &Path) -> Result<Option<Object>, FsSnapshotError> {
        if let Some(o) = self.objects.get(p) {
            return Ok(Some(o.clone()));
        }
        let io = |e| FsSnapshotError::Io(p.to_path_buf(), e);
        let m = match std::fs::symlink_metadata(p) {
            Ok(m) => m,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(io(e)),
        };
        let mode = m.permissions().mode() & 0o7777;
        let ft = m.file_type();
        let o = if ft.is_symlink() {
            Object::Link {
                target: std::fs::read_link(p).map_err(io)?,
            }
        } else if ft.is_dir() {
            Object::Dir { mode }
        } else if ft.is_file() {
            Object::File { mode }
        } else {
            Object::Other { mode }
        };
        if self.objects.len() >= MAX_ENTRIES {
            return Err(FsSnapshotError::TooMany);
        }
        self.objects.insert(p.to_path_buf(), o.clone());
        Ok(Some(o))
    }

    /// Resolves `p` as the kernel would, recording every object on the way; the resolved
    /// path, or `None` when the way ends (missing, a loop, a name under a file).
    fn follow(&mut self, p: &Path) -> Result<Option<PathBuf>, FsSnapshotError> {
        let mut failed = None;
        let resolved = resolve_with(p, true, |next| match self.record(next) {
            Ok(None) => Step::Missing,
            Ok(Some(Object::Link { target })) => Step::Link(target),
            Ok(Some(Object::Dir { .. })) => Step::Dir,
            Ok(Some(_)) => Step::Leaf,
            Err(e) => {
                failed = Some(e);
                Step::Unknown
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(resolved.ok()),
        }
    }

    /// Every name in directory `d` (already resolved), and the way to each link's target.
    fn list(&mut self, d: &Path) -> Result<(), FsSnapshotError> {
        let io = |e| FsSnapshotError::Io(d.to_path_buf(), e);
        let mut links = Vec::new();
        for entry in std::fs::read_dir(d).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if let Some(Object::Link { target }) = self.record(&path)? {
                links.push(d.join(target));
            }
        }
        for t in links {
            self.follow(&t)?;
        }
        self.complete.insert(d.to_path_buf());
        Ok(())
    }
}

/// The snapshot of `dirs` (absolute; each is resolved and listed) on this filesystem.
pub fn take(dirs: &[PathBuf]) -> Result<Snapshot, FsSnapshotError> {
    let mut t = Taker::default();
    for d in dirs {
        if !d.is_absolute() {
            return Err(FsSnapshotError::NotAbsolute(d.clone()));
        }
        let real = t
            .follow(d)?
            .filter(|r| r == Path::new("/") || matches!(t.objects.get(r), Some(Object::Dir { .. })))
            .ok_or_else(|| FsSnapshotError::NotADir(d.clone()))?;
        if !t.complete.contains(&real) {
            t.list(&real)?;
        }
    }
    Ok(Snapshot {
        version: SNAPSHOT_VERSION,
        complete: t.complete.into_iter().collect(),
        entries: t
            .objects
            .into_iter()
            .map(|(path, object)| Entry { path, object })
            .collect(),
    })
}

/// Writes `snap` to `out` whole or not at all (a temp file beside it, renamed), mode 0644:
/// it names the image's files, nothing secret.
pub fn write(out: &Path, snap: &Snapshot) -> Result<(), FsSnapshotError> {
    let io = |e| FsSnapshotError::Io(out.to_path_buf(), e);
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    serde_json::to_writer(&mut tmp, snap).map_err(|e| FsSnapshotError::Json(out.into(), e))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(out).map_err(|e| io(e.error))?;
    Ok(())
}

/// Reads the snapshot at `path` as the agent's filesystem, its `workspace` asked of `host`.
pub fn load(
    path: &Path,
    workspace: &Path,
    host: Arc<dyn Facts>,
) -> Result<AgentFs, FsSnapshotError> {
    let io = |e| FsSnapshotError::Io(path.to_path_buf(), e);
    let f = std::fs::File::open(path).map_err(io)?;
    let mut text = Vec::new();
    f.take(MAX_FILE + 1).read_to_end(&mut text).map_err(io)?;
    if text.len() as u64 > MAX_FILE {
        return Err(FsSnapshotError::FileTooLarge(path.into()));
    }
    let snap: Snapshot =
        serde_json::from_slice(&text).map_err(|e| FsSnapshotError::Json(path.into(), e))?;
    AgentFs::new(snap, workspace, host).map_err(|e| FsSnapshotError::Invalid(path.into(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::facts::LinkStatus;
    use std::os::unix::fs::symlink;

    /// A real tree: the snapshot answers what the host answers for the listed directories,
    /// and nothing for the rest.
    #[test]
    fn a_taken_snapshot_answers_like_the_tree_it_was_taken_of() {
        let root = tempfile::tempdir().expect("tmp");
        let r = root.path();
        let bin = r.join("usr/bin");
        std::fs::create_dir_all(&bin).expect("bin");
        std::fs::create_dir_all(r.join("etc/alternatives")).expect("alt");
        std::fs::create_dir_all(r.join("other")).expect("other");
        std::fs::write(bin.join("mawk"), "").expect("mawk");
        std::fs::set_permissions(bin.join("mawk"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::fs::write(r.join("other/secret"), "s").expect("secret");
        symlink(r.join("etc/alternatives/awk"), bin.join("awk")).expect("awk");
        symlink("../../usr/bin/mawk", r.join("etc/alternatives/awk")).expect("alt");
        symlink("usr/bin", r.join("bin")).expect("bin link");
        symlink("loop", bin.join("loop")).expect("loop");
        let snap = take(&[r.join("bin"), bin.clone()]).expect("take");
        assert_eq!(snap.complete, vec![bin.clone()]);
        let out = r.join("snap.json");
        write(&out, &snap).expect("write");
        let mode = std::fs::metadata(&out).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        let ws = r.join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        let fs = load(&out, &ws, crate::host_facts::HostFacts::shared()).expect("load");
        let found = fs.which("awk", &r.join("bin").to_string_lossy(), &ws);
        assert_eq!(found.real, Some(bin.join("mawk")));
        assert_eq!(fs.link_status(&bin.join("nope")), Some(LinkStatus::Missing));
        assert_eq!(fs.link_status(&r.join("other/secret")), None);
        assert_eq!(fs.stat(&bin.join("loop")), None);
        assert!(matches!(
            take(&[r.join("other/secret")]),
            Err(FsSnapshotError::NotADir(_))
        ));
        assert!(matches!(
            take(&[PathBuf::from("usr/bin")]),
            Err(FsSnapshotError::NotAbsolute(_))
        ));
    }

    #[test]
    fn a_bad_file_is_refused_with_its_name() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("snap.json");
        let host = crate::host_facts::HostFacts::shared();
        let err = load(&f, dir.path(), host.clone())
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("snap.json")));
        std::fs::write(&f, "{\"version\":1}").expect("write");
        assert!(matches!(
            load(&f, dir.path(), host.clone()),
            Err(FsSnapshotError::Json(..))
        ));
        std::fs::write(&f, r#"{"version":9,"complete":[],"entries":[]}"#).expect("write");
        assert!(matches!(
            load(&f, dir.path(), host),
            Err(FsSnapshotError::Invalid(_, SnapshotError::Version(9)))
        ));
    }
}
