//! The cache of Landlock "limits" layers (see `landlock_rules::Layers`): building one walks
//! every sibling of each secret's ancestors (~1.4 ms with the default deny_read list), while a
//! ruleset fd may be given to `landlock_restrict_self` any number of times.
//!
//! Why a cached layer is never looser than a fresh one. A layer grants rights to inodes (the
//! kernel pins them), not to names. It differs from a fresh build only where a name in a
//! listed directory now points at another inode than at build time:
//! - an entry created later (a new sibling, a secret created after the build) is no granted
//!   inode: it gets only what its listed parent holds (ReadDir), i.e. stricter;
//! - an entry deleted or replaced: its old inode stays granted but is no longer reachable by
//!   that name; the new inode is not granted (stricter);
//! - an entry renamed inside or into a listed directory (`mv ~/keys.bak ~/.ssh`) would carry
//!   its grant to a denied name: looser. Every such change updates the listed directory's
//!   mtime and ctime, so each use re-stats every listed directory (a few lstat calls) and
//!   rebuilds when identity (dev, inode) or a timestamp differs. A listed directory replaced
//!   as a whole changes its inode, and its parent is listed too (walks start at `/`).
//!
//! Base layers (one rule per root, network ports, scopes) are cached too; a private tmp is
//! a root like any other, reused from a pool (`tmpdir`) with its inode. A base layer grants each root's rights to the inode
//! the root's path named when it was opened (last component not followed), so a cached one
//! equals a fresh build exactly when every root path still names the same inode (dev, inode),
//! or still names nothing; each use checks that (`landlock_base_check`: one lstat per
//! parent directory holding several roots, one per other root, and the mount table). The
//! ruleset pins those inodes, so their numbers cannot be reused by other files while cached.
//!
//! Timestamps come from a coarse clock: a change in the same tick as the listing could keep
//! the old mtime. As in git's "racy index" rule, a layer whose listed directories changed
//! less than `RACY` before the build began is used once and not cached. Entries also expire
//! after `TTL` (bounding the effect of a wall-clock step backwards), and the cache holds at
//! most `MAX_ENTRIES` layers.

use super::landlock_base_check::{BaseCheck, Before};
use super::SandboxError;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Changes closer than this to the start of a build make the result uncacheable (well above
/// one kernel tick, 10 ms at HZ=100).
pub(super) const RACY: Duration = Duration::from_millis(100);
pub(super) const TTL: Duration = Duration::from_secs(30);
const MAX_ENTRIES: usize = 32;

/// What a limits layer depends on: the limit paths with their masks and the ABI/compat mode.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub abi: u8,
    pub degraded: bool,
    pub limits: Vec<(PathBuf, u64)>,
    /// Every capped path (a superset of `limits`): other names of these files are capped.
    pub capped: Vec<(PathBuf, u64)>,
    /// Built from a workspace scan (`ws_secrets`): inside the workspace only the inodes it
    /// judged are granted.
    pub scanned: bool,
}

/// Identity and change times of a listed directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub fn from_stat(st: &libc::stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }

    pub fn from_meta(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// Whether both timestamps lie before `limit` (seconds, nanoseconds since the epoch).
    pub(super) fn older_than(&self, limit: (i64, i64)) -> bool {
        self.mtime < limit && self.ctime < limit
    }
}

/// Whether every listed directory is still the same, unchanged directory (lstat: a
/// directory replaced by a symlink counts as changed).
fn still_valid(walked: &[(PathBuf, Stamp)]) -> bool {
    walked.iter().all(|(path, stamp)| {
        std::fs::symlink_metadata(path).is_ok_and(|m| Stamp::from_meta(&m) == *stamp)
    })
}

struct Entry<K, W> {
    key: K,
    fd: Arc<OwnedFd>,
    /// What a use re-checks before trusting `fd`.
    check: W,
    built: Instant,
}

/// Entries by the [`fingerprint`] of their key; a hit also compares the whole key, so a
/// collision is only a miss.
type Cache<K, W> = Mutex<HashMap<u64, Entry<K, W>>>;

fn limits_cache() -> &'static Cache<Key, Vec<(PathBuf, Stamp)>> {
    static CACHE: OnceLock<Cache<Key, Vec<(PathBuf, Stamp)>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A key's hash, computed once where the key is made (`landlock_roots::derived`): hashing
/// a key's hundred paths component by component on every prepare cost more than the lookup.
pub fn fingerprint<K: std::hash::Hash>(key: &K) -> u64 {
    use std::hash::BuildHasher;
    static SEED: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    SEED.get_or_init(Default::default).hash_one(key)
}

/// The entry for `key` younger than [`TTL`], if any: its layer and what to re-check.
fn lookup<K: Eq, W: Clone>(cache: &Cache<K, W>, key: &K, fp: u64) -> Option<(Arc<OwnedFd>, W)> {
    cache.lock().ok().and_then(|c| {
        c.get(&fp)
            .filter(|e| e.key == *key && e.built.elapsed() < TTL)
            .map(|e| (Arc::clone(&e.fd), e.check.clone()))
    })
}

/// Stores a layer (at most [`MAX_ENTRIES`]: expired entries go first, then all).
fn store<K, W>(cache: &Cache<K, W>, key: K, fp: u64, fd: &Arc<OwnedFd>, check: W) {
    if let Ok(mut c) = cache.lock() {
        if c.len() >= MAX_ENTRIES {
            c.retain(|_, e| e.built.elapsed() < TTL);
            if c.len() >= MAX_ENTRIES {
                c.clear();
            }
        }
        c.insert(
            fp,
            Entry {
                key,
                fd: Arc::clone(fd),
                check,
                built: Instant::now(),
            },
        );
    }
}

/// Drops the entry of `key` (and only it: another key of the same fingerprint stays).
fn forget<K: Eq, W>(cache: &Cache<K, W>, key: &K, fp: u64) {
    if let Ok(mut c) = cache.lock() {
        if c.get(&fp).is_some_and(|e| e.key == *key) {
            c.remove(&fp);
        }
    }
}

pub(super) fn epoch(t: SystemTime) -> (i64, i64) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            i64::from(d.subsec_nanos()),
        ),
        // Before 1970: nothing can be older, so nothing is cached.
        Err(_) => (i64::MIN, 0),
    }
}

/// The cached layer for `key` (whose [`fingerprint`] is `fp`) if still valid, else
/// `build()`'s (cached when not racy). `build` returns the ruleset and the directories it
/// listed.
pub fn get_or_build<F>(key: &Key, fp: u64, build: F) -> Result<Arc<OwnedFd>, SandboxError>
where
    F: FnOnce() -> Result<(OwnedFd, Vec<(PathBuf, Stamp)>), SandboxError>,
{
    let cache = limits_cache();
    if let Some((fd, walked)) = lookup(cache, key, fp) {
        if still_valid(&walked) {
            return Ok(fd);
        }
    }
    let started = SystemTime::now();
    let (fd, walked) = build()?;
    let fd = Arc::new(fd);
    let limit = epoch(started.checked_sub(RACY).unwrap_or(UNIX_EPOCH));
    if walked.iter().any(|(_, s)| !s.older_than(limit)) {
        forget(cache, key, fp);
    } else {
        store(cache, key.clone(), fp, &fd, walked);
    }
    Ok(fd)
}

/// What a base layer depends on: its roots with their rights, the TCP ports, ABI and mode.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BaseKey {
    pub abi: u8,
    pub degraded: bool,
    pub roots: Vec<(PathBuf, u64)>,
    pub ports: Vec<u16>,
    /// The capped paths: a file root that is another name of one keeps only its cap.
    pub capped: Vec<(PathBuf, u64)>,
}

/// The inode a root path named when its rule was made (dev, inode); None: no rule was made
/// (the path was missing, or a symlink, which is never granted).
pub type Ident = Option<(u64, u64)>;

/// The cached base layer for `key` if every root still names the same inode (checked as
/// `landlock_base_check` says), else `build()`'s. `build` returns the ruleset and each
/// root's [`Ident`].
pub fn base_get_or_build<F>(key: &BaseKey, fp: u64, build: F) -> Result<Arc<OwnedFd>, SandboxError>
where
    F: FnOnce() -> Result<(OwnedFd, Vec<(PathBuf, Ident)>), SandboxError>,
{
    static CACHE: OnceLock<Cache<BaseKey, BaseCheck>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((fd, check)) = lookup(cache, key, fp) {
        if check.holds() {
            return Ok(fd);
        }
    }
    let before = Before::stamp(key.roots.iter().map(|(p, _)| p.as_path()));
    let (fd, roots) = build()?;
    let fd = Arc::new(fd);
    store(cache, key.clone(), fp, &fd, before.check(roots));
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: &std::path::Path) -> Key {
        Key {
            abi: 0,
            degraded: false,
            limits: vec![(p.join("secret"), 0)],
            capped: vec![(p.join("secret"), 0)],
            scanned: false,
        }
    }

    fn stamp_of(p: &std::path::Path) -> Stamp {
        Stamp::from_meta(&std::fs::symlink_metadata(p).unwrap())
    }

    fn dummy_fd() -> OwnedFd {
        OwnedFd::from(std::fs::File::open("/dev/null").unwrap())
    }

    #[test]
    fn reused_until_a_listed_directory_changes_and_never_when_racy() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let builds = std::cell::Cell::new(0);
        let build = || {
            builds.set(builds.get() + 1);
            Ok((dummy_fd(), vec![(d.clone(), stamp_of(&d))]))
        };
        // Just created: racy, so built again on the next use.
        get_or_build(&key(&d), fingerprint(&key(&d)), build).unwrap();
        get_or_build(&key(&d), fingerprint(&key(&d)), build).unwrap();
        assert_eq!(builds.get(), 2);
        std::thread::sleep(RACY + Duration::from_millis(50));
        let a = get_or_build(&key(&d), fingerprint(&key(&d)), build).unwrap();
        let b = get_or_build(&key(&d), fingerprint(&key(&d)), build).unwrap();
        assert_eq!(builds.get(), 3);
        assert!(Arc::ptr_eq(&a, &b), "second use served from the cache");
        // A rename inside the listed directory invalidates.
        std::fs::write(d.join("keys.bak"), "k").unwrap();
        std::fs::rename(d.join("keys.bak"), d.join("secret")).unwrap();
        let c = get_or_build(&key(&d), fingerprint(&key(&d)), build).unwrap();
        assert_eq!(builds.get(), 4);
        assert!(!Arc::ptr_eq(&a, &c));
    }

    #[test]
    fn replaced_directory_invalidates() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("home");
        std::fs::create_dir(&d).unwrap();
        let old = stamp_of(&d);
        std::fs::rename(&d, dir.path().join("old")).unwrap();
        std::fs::create_dir(&d).unwrap();
        assert!(!still_valid(&[(d.clone(), old)]));
        std::fs::remove_dir(&d).unwrap();
        std::os::unix::fs::symlink(dir.path().join("old"), &d).unwrap();
        assert!(
            !still_valid(&[(d, old)]),
            "symlink to the old inode is a change"
        );
    }

    #[test]
    fn base_layer_reused_while_roots_name_the_same_inodes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let missing = dir.path().join("missing");
        let key = BaseKey {
            abi: 0,
            degraded: false,
            roots: vec![(root.clone(), 1), (missing.clone(), 1)],
            ports: vec![],
            capped: vec![],
        };
        let builds = std::cell::Cell::new(0);
        let build = || {
            builds.set(builds.get() + 1);
            // What a real build records: each root's inode as it is now, or nothing.
            let ident = |p: &std::path::Path| {
                std::fs::symlink_metadata(p)
                    .ok()
                    .map(|m| (m.dev(), m.ino()))
            };
            let idents = vec![
                (root.clone(), ident(&root)),
                (missing.clone(), ident(&missing)),
            ];
            Ok((dummy_fd(), idents))
        };
        let a = base_get_or_build(&key, fingerprint(&key), build).unwrap();
        // Contents changing do not matter (no timestamps): still the same inode.
        std::fs::write(root.join("f"), "x").unwrap();
        let b = base_get_or_build(&key, fingerprint(&key), build).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(builds.get(), 1);
        // A root that was missing now exists: rebuilt.
        std::fs::create_dir(&missing).unwrap();
        base_get_or_build(&key, fingerprint(&key), build).unwrap();
        assert_eq!(builds.get(), 2);
        std::fs::remove_dir(&missing).unwrap();
        base_get_or_build(&key, fingerprint(&key), build).unwrap();
        base_get_or_build(&key, fingerprint(&key), build).unwrap();
        assert_eq!(builds.get(), 3, "cached again once the build matches");
        // The root replaced by another directory: rebuilt.
        std::fs::rename(&root, dir.path().join("aside")).unwrap();
        std::fs::create_dir(&root).unwrap();
        base_get_or_build(&key, fingerprint(&key), build).unwrap();
        assert_eq!(builds.get(), 4);
    }

    /// A hit needs the whole key: two keys under one fingerprint never share a layer.
    #[test]
    fn a_fingerprint_collision_is_a_miss_not_another_keys_layer() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::thread::sleep(RACY + Duration::from_millis(50));
        let builds = std::cell::Cell::new(0);
        let build = |d: &std::path::Path| {
            builds.set(builds.get() + 1);
            Ok((dummy_fd(), vec![(d.to_path_buf(), stamp_of(d))]))
        };
        let fp = 0x5eed;
        let la = get_or_build(&key(&a), fp, || build(&a)).unwrap();
        let lb = get_or_build(&key(&b), fp, || build(&b)).unwrap();
        assert_eq!(builds.get(), 2);
        assert!(!Arc::ptr_eq(&la, &lb));
        // `b` took the slot; `a` is built again rather than given `b`'s layer.
        let la2 = get_or_build(&key(&a), fp, || build(&a)).unwrap();
        assert_eq!(builds.get(), 3);
        assert!(!Arc::ptr_eq(&la2, &lb));
    }
}
