//! The sensitive files inside a workspace that a run may read but not write (the policy
//! core's one list of secret names, `policy::paths::is_secret_file_name`). Landlock cannot
//! subtract a file from a granted directory, so the profile denies each one and the limits
//! layer grants its siblings along the path instead of the parent (`landlock_rules`).
//!
//! The scan is cached per workspace and re-validated on every use by an lstat of every
//! directory it listed (device, inode, mtime, ctime): creating, removing or renaming an entry
//! changes its directory's mtime, and a replaced directory has another inode. File times
//! come from a coarse clock, so a scan that saw a directory changed less than `RACY` before
//! it began is used once and not cached (as the Landlock cache does). What remains: a file
//! created after the check, while the run is starting or running, is not denied; runs that
//! use this scan cannot write the workspace, so only a concurrent approved run could create
//! one. A workspace with more than `MAX_ENTRIES` entries fails closed (the run does not start).

use super::landlock_cache::{epoch, Stamp, RACY, TTL};
use super::SandboxError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// More entries than this and the scan gives up (the run does not start).
pub const MAX_ENTRIES: usize = 1_000_000;
/// Workspaces remembered.
const MAX_CACHED: usize = 16;

struct Scan {
    secrets: Arc<Vec<PathBuf>>,
    dirs: Vec<(PathBuf, Stamp)>,
    built: Instant,
}

type Cache = Mutex<HashMap<PathBuf, Scan>>;

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The sensitive files and directories under `workspace` (canonical), sorted.
pub fn secrets_in(workspace: &Path) -> Result<Arc<Vec<PathBuf>>, SandboxError> {
    if let Ok(c) = cache().lock() {
        if let Some(s) = c.get(workspace) {
            if s.built.elapsed() < TTL && still_valid(&s.dirs) {
                return Ok(Arc::clone(&s.secrets));
            }
        }
    }
    let started = SystemTime::now();
    let (secrets, dirs) = scan(workspace)?;
    let secrets = Arc::new(secrets);
    let limit = epoch(started.checked_sub(RACY).unwrap_or(UNIX_EPOCH));
    if let Ok(mut c) = cache().lock() {
        if dirs.iter().all(|(_, s)| s.older_than(limit)) {
            if c.len() >= MAX_CACHED {
                c.clear();
            }
            c.insert(
                workspace.to_path_buf(),
                Scan {
                    secrets: Arc::clone(&secrets),
                    dirs,
                    built: Instant::now(),
                },
            );
        } else {
            c.remove(workspace);
        }
    }
    Ok(secrets)
}

fn still_valid(dirs: &[(PathBuf, Stamp)]) -> bool {
    dirs.iter()
        .all(|(p, s)| std::fs::symlink_metadata(p).is_ok_and(|m| Stamp::from_meta(&m) == *s))
}

/// Walks `root` without following symlinks; returns the secret paths and every directory
/// listed with its stamp (taken before listing, so a change during the walk shows).
#[allow(clippy::type_complexity)]
fn scan(root: &Path) -> Result<(Vec<PathBuf>, Vec<(PathBuf, Stamp)>), SandboxError> {
    let err = |p: &Path, e: std::io::Error| {
        SandboxError::Profile(format!("scanning {} for secrets: {e}", p.display()))
    };
    let (mut secrets, mut dirs) = (Vec::new(), Vec::new());
    let mut todo = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = todo.pop() {
        let meta = std::fs::symlink_metadata(&dir).map_err(|e| err(&dir, e))?;
        dirs.push((dir.clone(), Stamp::from_meta(&meta)));
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            // A directory nobody may list cannot be read by the run either.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => continue,
            Err(e) => return Err(err(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| err(&dir, e))?;
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(SandboxError::Profile(format!(
                    "workspace {} has more than {MAX_ENTRIES} entries: too many to scan for secrets",
                    root.display()
                )));
            }
            let path = entry.path();
            let name = entry.file_name();
            if crate::policy::paths::is_secret_file_name(&name.to_string_lossy()) {
                secrets.push(path);
                continue;
            }
            if entry.file_type().map_err(|e| err(&path, e))?.is_dir() {
                todo.push(path);
            }
        }
    }
    secrets.sort();
    Ok((secrets, dirs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_secrets_and_sees_new_ones() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join(".env"), "x").unwrap();
        std::fs::write(ws.join("a/b/.env.local"), "x").unwrap();
        std::fs::write(ws.join("a/.env.example"), "x").unwrap();
        std::fs::write(ws.join("a/b/ok.txt"), "x").unwrap();
        let s = secrets_in(&ws).unwrap();
        assert_eq!(*s, vec![ws.join(".env"), ws.join("a/b/.env.local")]);
        std::fs::write(ws.join("a/.env.prod"), "x").unwrap();
        let s = secrets_in(&ws).unwrap();
        assert!(s.contains(&ws.join("a/.env.prod")), "{s:?}");
    }
}
