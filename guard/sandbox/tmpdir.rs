//! The private temp directory of a run: empty and 0700 when a run gets it, emptied when the
//! run's profile is dropped.
//!
//! Directories are pooled: once emptied, one goes back to a small pool and a later run takes
//! it, at the same path and inode. The Landlock base layer that grants it is cached by its
//! root paths and checked by their inodes (`landlock_cache`), so a reused directory reuses
//! the layer; a fresh directory per run made every base layer new (one ruleset build per
//! spawn, ~0.15 ms). Reuse is safe because nothing of a run outlives it (`reaper`): by the
//! time the profile is dropped, no process of the run can write there, and what it left is
//! removed before the next run sees the directory. A directory that cannot be emptied, or
//! that is no longer the directory we made (type, device, inode), is removed instead of
//! pooled. Its path is canonical when made (the temp dir canonicalized), so a profile uses it
//! as it is; the identity check on every reuse is what keeps it naming the same directory.

use super::SandboxError;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most idle directories kept (about the runs in flight at once).
const POOL_MAX: usize = 8;

/// An idle directory: its path, device and inode, and the owner it was created with.
#[derive(Debug)]
struct Idle {
    path: PathBuf,
    dev: u64,
    ino: u64,
    uid: u32,
    gid: u32,
}

/// Idle directories, most recently used last.
#[derive(Debug)]
struct Pool(Mutex<Vec<Idle>>);

/// The process's pool.
static POOL: Pool = Pool(Mutex::new(Vec::new()));

/// A 0700 directory under the system temp dir, private to one run at a time.
#[derive(Debug)]
pub struct PrivateTmp {
    /// Canonical.
    path: PathBuf,
    dev: u64,
    ino: u64,
    uid: u32,
    gid: u32,
    pool: &'static Pool,
}

impl PrivateTmp {
    /// An idle pooled directory, or a new one.
    pub fn create() -> Result<Self, SandboxError> {
        Self::create_in(&POOL)
    }

    fn create_in(pool: &'static Pool) -> Result<Self, SandboxError> {
        if let Some(t) = pool.take() {
            return Ok(t);
        }
        let parent = std::env::temp_dir();
        let parent = parent.canonicalize().map_err(|e| {
            SandboxError::Profile(format!("private tmp in {}: {e}", parent.display()))
        })?;
        let path = parent.join(format!("sanctum-{}", uuid::Uuid::new_v4()));
        let err = |e: std::io::Error| {
            SandboxError::Profile(format!("private tmp {}: {e}", path.display()))
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(err)?;
        let m = std::fs::symlink_metadata(&path).map_err(err)?;
        Ok(PrivateTmp {
            dev: m.dev(),
            ino: m.ino(),
            uid: m.uid(),
            gid: m.gid(),
            path,
            pool,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Pool {
    /// Takes an idle directory that is still ours: a directory (not a link), the same device,
    /// inode and owner, mode 0700. Else it is removed (a link itself, never followed).
    fn take(&'static self) -> Option<PrivateTmp> {
        loop {
            let idle = self.0.lock().ok()?.pop()?;
            let same = std::fs::symlink_metadata(&idle.path).is_ok_and(|m| {
                m.is_dir()
                    && m.dev() == idle.dev
                    && m.ino() == idle.ino
                    && m.uid() == idle.uid
                    && m.mode() & 0o7777 == 0o700
            });
            if same {
                return Some(PrivateTmp {
                    path: idle.path,
                    dev: idle.dev,
                    ino: idle.ino,
                    uid: idle.uid,
                    gid: idle.gid,
                    pool: self,
                });
            }
            let _ = std::fs::remove_dir_all(&idle.path);
        }
    }
}

/// Empties `dir` (links are removed, never followed) and gives it back its owner and 0700
/// (a chmod only when the mode differs: no process of the run is left to change it after).
fn reset(t: &PrivateTmp) -> std::io::Result<()> {
    let m = std::fs::symlink_metadata(&t.path)?;
    if !m.is_dir() || m.dev() != t.dev || m.ino() != t.ino {
        return Err(std::io::Error::other(
            "no longer the directory made for the run",
        ));
    }
    // The run may have closed its own tmp (`chmod 000 $TMPDIR`): its owner opens it again.
    if m.mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(&t.path, std::fs::Permissions::from_mode(0o700))?;
    }
    empty_dir(&t.path)?;
    // A run as another identity had the directory chowned to it (`with_run_as`).
    let chowned = m.uid() != t.uid || m.gid() != t.gid;
    if chowned {
        std::os::unix::fs::chown(&t.path, Some(t.uid), Some(t.gid))?;
    }
    if chowned || m.mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(&t.path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Removes everything in `dir`, whatever modes the run left: a directory it made
/// unreadable or unwritable (`mkdir -m 300`, `chmod 000`) is given back 0700 first, which
/// its owner may always do. Links are removed, never followed (`file_type` does not follow).
fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
            empty_dir(&path)?;
            std::fs::remove_dir(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        if reset(self).is_ok() {
            if let Ok(mut pool) = self.pool.0.lock() {
                if pool.len() < POOL_MAX {
                    pool.push(Idle {
                        path: std::mem::take(&mut self.path),
                        dev: self.dev,
                        ino: self.ino,
                        uid: self.uid,
                        gid: self.gid,
                    });
                    return;
                }
            }
        }
        // A full pool, or a tmp that could not be emptied: removed. Only when it is still the
        // directory we made is it opened up and emptied (never through a link).
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.is_dir() && m.dev() == self.dev && m.ino() == self.ino);
        if ours {
            let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o700));
            let _ = empty_dir(&self.path);
        }
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %self.path.display(), error = %e,
                    "a run's private tmp could not be removed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// One test, as the pool is process-wide.
    #[test]
    fn reused_empty_and_private_and_never_through_a_link() {
        static TEST_POOL: Pool = Pool(Mutex::new(Vec::new()));
        let create = || PrivateTmp::create_in(&TEST_POOL).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let t = create();
        let p = t.path().to_path_buf();
        std::fs::write(p.join("f"), "x").unwrap();
        std::fs::create_dir_all(p.join("d/e")).unwrap();
        symlink(outside.path(), p.join("link")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        drop(t);
        // The link was removed, not followed.
        assert!(outside.path().join("keep").exists());
        let again: Vec<PrivateTmp> = (0..3).map(|_| create()).collect();
        let reused = again.iter().find(|t| t.path() == p).expect("reused");
        assert_eq!(std::fs::read_dir(reused.path()).unwrap().count(), 0);
        let m = std::fs::metadata(reused.path()).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o700);
        // Concurrent runs never share one.
        let mut paths: Vec<&Path> = again.iter().map(|t| t.path()).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), 3);
        drop(again);
        // A directory replaced while idle, or opened up, is not handed out. (Replaced by a
        // link here: a directory removed and made again may get the same inode number, which
        // only the guard's own identity could do in the sticky temp dir anyway.)
        let idle_now: Vec<PathBuf> = TEST_POOL
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|i| i.path.clone())
            .collect();
        assert_eq!(idle_now.len(), 3);
        std::fs::remove_dir(&idle_now[0]).unwrap();
        symlink(outside.path(), &idle_now[0]).unwrap();
        for q in &idle_now[1..] {
            std::fs::set_permissions(q, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let fresh = create();
        assert!(!idle_now.contains(&fresh.path().to_path_buf()));
        assert!(
            outside.path().join("keep").exists(),
            "the link was not followed"
        );
        for q in &idle_now {
            assert!(
                std::fs::symlink_metadata(q).is_err(),
                "a replaced or opened directory is removed: {q:?}"
            );
        }
    }
}
