//! The sensitive files inside a workspace that a run may read but not write (the policy
//! core's one list of secret names, `policy::paths::is_secret_file_name`), with device nodes
//! and every name of a file hard-linked outside the workspace or to a secret. Landlock cannot
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
use std::os::unix::fs::{FileTypeExt, MetadataExt};
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

/// What one walk found: the paths to deny and every directory listed with its stamp.
type Found = (Vec<PathBuf>, Vec<(PathBuf, Stamp)>);

/// The names of one file (device, inode) seen by a walk that counts links.
#[derive(Default)]
struct Links {
    nlink: u64,
    /// Its names outside secret directories.
    paths: Vec<PathBuf>,
    /// Its names inside secret directories (denied with their directory).
    hidden: u64,
    /// One of its names is a secret's: every other name is that secret too.
    secret: bool,
}

/// A directory waiting to be listed.
struct Pending {
    path: PathBuf,
    /// Its parent is on a mount whose root is inside the workspace.
    parent_own_mount: bool,
    parent_dev: Option<u64>,
    /// It is, or lies inside, a directory with a secret's name: denied whole, listed only
    /// for the other names of its files.
    in_secret: bool,
}

/// The secrets under `root`: files with a secret's name, device nodes, and every name of a
/// file that is also a secret or also lives outside the workspace. A hard link is the file
/// itself, and Landlock grants by inode, so `ws/a.txt` linked to `~/.ssh/id_rsa` or to
/// `ws/.env` would be read (or would open the secret) through a granted name.
///
/// Counting links needs an lstat of every file; a directory on a mount whose root is inside
/// the workspace skips it, because link(2) never crosses mounts (EXDEV): its files can only
/// be linked to each other. Only if a secret there has other names is the walk redone with
/// every file counted.
fn scan(root: &Path) -> Result<Found, SandboxError> {
    // The workspace is on its own mount when its device differs from its parent's.
    let parent_dev = match root.parent() {
        Some(p) => Some(
            std::fs::symlink_metadata(p)
                .map_err(|e| scan_err(p, e))?
                .dev(),
        ),
        None => None,
    };
    scan_below(root, parent_dev)
}

fn scan_err(p: &Path, e: std::io::Error) -> SandboxError {
    SandboxError::Profile(format!("scanning {} for secrets: {e}", p.display()))
}

/// `scan` with the device of the workspace's parent given (a test can place the workspace
/// on a mount of its own that way).
fn scan_below(root: &Path, parent_dev: Option<u64>) -> Result<Found, SandboxError> {
    let (found, linked_secret) = walk(root, parent_dev, false)?;
    if linked_secret {
        return Ok(walk(root, parent_dev, true)?.0);
    }
    Ok(found)
}

/// One walk without following symlinks. `count_all` counts the links of every file, as if
/// no directory were on its own mount. Also says whether a secret on such a mount has other
/// names (it then needs the counting walk).
fn walk(
    root: &Path,
    parent_dev: Option<u64>,
    count_all: bool,
) -> Result<(Found, bool), SandboxError> {
    let err = scan_err;
    let (mut secrets, mut dirs) = (Vec::new(), Vec::new());
    let mut links: HashMap<(u64, u64), Links> = HashMap::new();
    let mut linked_secret = false;
    let mut todo = vec![Pending {
        path: root.to_path_buf(),
        parent_own_mount: false,
        parent_dev,
        in_secret: false,
    }];
    let mut seen = 0usize;
    while let Some(dir) = todo.pop() {
        let meta = std::fs::symlink_metadata(&dir.path).map_err(|e| err(&dir.path, e))?;
        dirs.push((dir.path.clone(), Stamp::from_meta(&meta)));
        let own_mount = !count_all && (dir.parent_own_mount || dir.parent_dev != Some(meta.dev()));
        let entries = match std::fs::read_dir(&dir.path) {
            Ok(e) => e,
            // A directory nobody may list cannot be read by the run either.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => continue,
            Err(e) => return Err(err(&dir.path, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| err(&dir.path, e))?;
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(SandboxError::Profile(format!(
                    "workspace {} has more than {MAX_ENTRIES} entries: too many to scan for secrets",
                    root.display()
                )));
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| err(&path, e))?;
            let named =
                crate::policy::paths::is_secret_file_name(&entry.file_name().to_string_lossy());
            // Denied by name (or as a device), whatever the lstat below finds.
            let denied =
                !dir.in_secret && (named || kind.is_block_device() || kind.is_char_device());
            if denied {
                secrets.push(path.clone());
            }
            if kind.is_dir() {
                todo.push(Pending {
                    path,
                    parent_own_mount: own_mount,
                    parent_dev: Some(meta.dev()),
                    in_secret: dir.in_secret || named,
                });
                continue;
            }
            let secret = dir.in_secret || named;
            // Only a regular file has other names worth counting; on its own mount, only a
            // secret's (a link elsewhere cannot leave the mount).
            if !kind.is_file() || (own_mount && !secret) {
                continue;
            }
            let m = match entry.metadata() {
                Ok(m) => m,
                // Removed since the listing (a concurrent approved run): no name to grant,
                // and its directory's changed mtime voids this scan for the next run.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(err(&path, e)),
            };
            if m.nlink() <= 1 {
                continue;
            }
            if own_mount {
                // A secret with other names: they are on this mount, found by counting.
                linked_secret = true;
                continue;
            }
            let l = links.entry((m.dev(), m.ino())).or_default();
            l.nlink = m.nlink();
            l.secret |= secret;
            if dir.in_secret {
                l.hidden += 1;
            } else {
                l.paths.push(path);
            }
        }
    }
    for l in links.into_values() {
        if l.secret || (l.paths.len() as u64 + l.hidden) < l.nlink {
            secrets.extend(l.paths);
        }
    }
    secrets.sort();
    secrets.dedup();
    Ok(((secrets, dirs), linked_secret))
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

    /// A workspace beside an outside directory, on the same filesystem.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let (ws, out) = (root.join("ws"), root.join("out"));
        for d in [ws.join("a"), ws.join("b"), out.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        (t, ws, out)
    }

    #[test]
    fn every_name_of_a_file_linked_outside_or_to_a_secret_is_denied() {
        let (_t, ws, out) = tree();
        std::fs::write(out.join("key"), "k").unwrap();
        std::fs::hard_link(out.join("key"), ws.join("a/innocent.txt")).unwrap();
        std::fs::write(ws.join(".env"), "K=v").unwrap();
        std::fs::hard_link(ws.join(".env"), ws.join("b/copy.txt")).unwrap();
        std::fs::write(ws.join("a/pkg.js"), "x").unwrap();
        std::fs::hard_link(ws.join("a/pkg.js"), ws.join("b/pkg.js")).unwrap();
        std::fs::write(ws.join("b/plain.rs"), "x").unwrap();
        // A directory with a secret's name is denied whole; a file in it is a secret too.
        std::fs::create_dir_all(ws.join("b/.env/deep")).unwrap();
        std::fs::write(ws.join("b/.env/deep/key"), "k").unwrap();
        std::fs::hard_link(ws.join("b/.env/deep/key"), ws.join("a/key-copy")).unwrap();
        let (found, _) = scan(&ws).unwrap();
        assert_eq!(
            found,
            vec![
                ws.join(".env"),
                ws.join("a/innocent.txt"),
                ws.join("a/key-copy"),
                ws.join("b/.env"),
                ws.join("b/copy.txt")
            ],
            "links within the workspace stay readable"
        );
    }

    #[test]
    fn on_its_own_mount_only_links_to_secrets_are_looked_for() {
        let (_t, ws, out) = tree();
        std::fs::write(ws.join("a/pkg.js"), "x").unwrap();
        std::fs::hard_link(ws.join("a/pkg.js"), ws.join("b/pkg.js")).unwrap();
        let own = Some(u64::MAX);
        // link(2) cannot cross a mount: a file here has no name outside, so none is looked for.
        assert_eq!(scan_below(&ws, own).unwrap().0, Vec::<PathBuf>::new());
        std::fs::create_dir_all(ws.join("b/id_rsa")).unwrap();
        std::fs::write(ws.join("b/id_rsa/key"), "k").unwrap();
        std::fs::hard_link(ws.join("b/id_rsa/key"), ws.join("a/key-copy")).unwrap();
        assert_eq!(
            scan_below(&ws, own).unwrap().0,
            vec![ws.join("a/key-copy"), ws.join("b/id_rsa")]
        );
        std::fs::write(ws.join("b/.env"), "K=v").unwrap();
        std::fs::hard_link(ws.join("b/.env"), ws.join("a/copy.txt")).unwrap();
        assert_eq!(
            scan_below(&ws, own).unwrap().0,
            vec![
                ws.join("a/copy.txt"),
                ws.join("a/key-copy"),
                ws.join("b/.env"),
                ws.join("b/id_rsa")
            ]
        );
        drop(out);
    }

    #[test]
    fn a_device_node_is_denied() {
        let (_t, ws, _out) = tree();
        let node = ws.join("a/disk");
        let made = std::process::Command::new("mknod")
            .args([node.to_str().unwrap(), "b", "7", "0"])
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            eprintln!("mknod needs CAP_MKNOD: skipped");
            return;
        }
        assert_eq!(scan(&ws).unwrap().0, vec![node]);
    }
}
