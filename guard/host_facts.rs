//! The host's answers to the policy core's questions ([`Facts`]): real `stat`, `lstat`,
//! `readlink`, `realpath`, and PATH look-ups with a process-wide cache. Without the cache
//! every segment costs one `stat` per PATH entry up to the hit, on every request. An entry
//! is trusted only while each directory it searched is unchanged (same inode, mtime and
//! ctime: creating, removing or renaming a name in a directory changes its mtime) and for at
//! most [`TTL`] (a `chmod` of the file itself changes no directory). An entry checked less
//! than [`RECHECK`] ago is not checked again: at thousands of requests a second the stamps
//! would otherwise cost as many `stat`s as the look-up they replace. That window is far
//! shorter than the gap between a decision and the exec it allows (OpenClaw runs the command
//! later, after any human approval), which PATH resolution at decision time already cannot
//! close. The core memoises every answer for one decision (`policy::fs_memo`).

mod login_names;

use crate::policy::decide::DecideContext;
use crate::policy::facts::{Facts, Found, Kind, LinkStatus, Meta};
use crate::policy::fs_memo;
use foldhash::{HashMap, HashMapExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Longest an answer is reused.
const TTL: Duration = Duration::from_secs(2);
/// An entry whose directories were checked this recently is reused without a check.
const RECHECK: Duration = Duration::from_millis(50);
/// A directory changed this recently may change again within the same timestamp tick
/// (coarse kernel clocks), so a look-up through it is not cached.
const RACY: Duration = Duration::from_millis(100);
/// Entries kept before the cache is emptied.
const MAX_ENTRIES: usize = 4096;

/// What identifies a directory's list of names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(dir: &Path) -> Option<Stamp> {
        std::fs::metadata(dir).ok().map(|m| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Changed less than [`RACY`] ago (or in the future).
    fn racy(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        [self.mtime, self.ctime].iter().any(|&(s, ns)| {
            let t = i128::from(s) * 1_000_000_000 + i128::from(ns);
            (now as i128) - t < RACY.as_nanos() as i128
        })
    }
}

#[derive(Debug)]
struct Entry {
    found: Option<PathBuf>,
    /// `found`'s realpath (what allowlist path globs match), resolved with it: reused as
    /// long as the look-up is (a name replaced by a symlink changes its directory's stamp).
    real: Option<PathBuf>,
    /// The directories searched, in order, and their stamps then (`None`: missing).
    searched: Vec<(PathBuf, Option<Stamp>)>,
    at: Instant,
    /// When `searched` was last found unchanged.
    checked: Instant,
}

/// What a look-up was for: the name, the PATH and the cwd relative entries are taken from.
type Key = (String, String, PathBuf);

/// Entries are found by a seeded hash of the key's parts, so a hit allocates nothing; the
/// entry keeps the whole key and a hash collision counts as a miss.
fn cache() -> &'static Mutex<HashMap<u64, (Key, Entry)>> {
    static CACHE: OnceLock<Mutex<HashMap<u64, (Key, Entry)>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The cache's hash of a key given by its parts.
fn key_hash(name: &str, path_var: &str, cwd: &Path) -> u64 {
    use std::hash::BuildHasher;
    static SEED: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    SEED.get_or_init(Default::default)
        .hash_one((name, path_var, cwd.as_os_str()))
}

/// By bytes, as hashed (`Path`'s own `==` and hash walk components): another spelling of
/// the same cwd is at worst one more look-up, never another directory's answer.
fn same_key(k: &Key, name: &str, path_var: &str, cwd: &Path) -> bool {
    k.0 == name && k.1 == path_var && k.2.as_os_str() == cwd.as_os_str()
}

/// Looks a bare command name up on `path_var`. Relative PATH entries (and the empty entry)
/// are taken relative to `cwd`, as a shell would.
#[cfg(test)]
fn resolve_on_path(name: &str, path_var: &str, cwd: &Path) -> Option<PathBuf> {
    resolve_with_real(name, path_var, cwd).0
}

/// [`resolve_on_path`] and the realpath of what it found.
fn resolve_with_real(name: &str, path_var: &str, cwd: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
    if name.is_empty() || name.contains('/') {
        return (None, None);
    }
    let hash = key_hash(name, path_var, cwd);
    let hit = cache().lock().ok().and_then(|map| {
        // One clock read answers both ages.
        let now = Instant::now();
        map.get(&hash)
            .filter(|(k, _)| same_key(k, name, path_var, cwd))
            .map(|(_, e)| e)
            .filter(|e| now.duration_since(e.at) < TTL)
            .map(|e| {
                let fresh = now.duration_since(e.checked) < RECHECK;
                // The directory list is only needed to re-check a stale entry.
                let searched = if fresh {
                    Vec::new()
                } else {
                    e.searched.clone()
                };
                ((e.found.clone(), e.real.clone()), fresh, searched)
            })
    });
    if let Some((found, fresh, searched)) = hit {
        if fresh {
            return found;
        }
        // Checked outside the lock: the `stat`s must not serialise other threads.
        if searched.iter().all(|(d, s)| Stamp::of(d) == *s) {
            if let Ok(mut map) = cache().lock() {
                if let Some((_, e)) = map.get_mut(&hash) {
                    e.checked = Instant::now();
                }
            }
            return found;
        }
    }
    let (entry, cacheable) = search(name, path_var, cwd);
    let found = (entry.found.clone(), entry.real.clone());
    if cacheable {
        if let Ok(mut map) = cache().lock() {
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            let key: Key = (name.to_string(), path_var.to_string(), cwd.to_path_buf());
            map.insert(hash, (key, entry));
        }
    }
    found
}

/// The uncached look-up (stat only), and whether its answer may be reused.
fn search(name: &str, path_var: &str, cwd: &Path) -> (Entry, bool) {
    let mut searched = Vec::new();
    let mut cacheable = true;
    let mut found = None;
    for dir in path_var.split(':') {
        let dir = if dir.is_empty() {
            cwd.to_path_buf()
        } else if dir.starts_with('/') {
            PathBuf::from(dir)
        } else {
            cwd.join(dir)
        };
        let stamp = Stamp::of(&dir);
        cacheable &= !stamp.as_ref().is_some_and(Stamp::racy);
        let candidate = dir.join(name);
        searched.push((dir, stamp));
        if let Ok(meta) = std::fs::metadata(&candidate) {
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                found = Some(candidate);
                break;
            }
            // A name present but not runnable can become runnable by a `chmod`, which
            // changes no directory.
            cacheable = false;
        }
    }
    let real = found.as_deref().and_then(|p| std::fs::canonicalize(p).ok());
    let now = Instant::now();
    let entry = Entry {
        found,
        real,
        searched,
        at: now,
        checked: now,
    };
    (entry, cacheable)
}

/// Most directory entries listed for one glob component.
const MAX_LISTED: usize = 4096;

/// The real filesystem of this host.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostFacts;

impl HostFacts {
    /// One shared instance (the PATH cache is process-wide anyway).
    pub fn shared() -> Arc<dyn Facts> {
        static SHARED: OnceLock<Arc<dyn Facts>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(HostFacts)).clone()
    }
}

/// Installs the host's facts on this thread (for callers that use the core's path helpers
/// outside `decide()`, which installs its context's facts itself).
pub fn scope() -> fs_memo::Scope {
    fs_memo::Scope::enter(HostFacts::shared())
}

fn meta(m: std::fs::Metadata) -> Meta {
    let t = m.file_type();
    let kind = if t.is_symlink() {
        Kind::Symlink
    } else if t.is_dir() {
        Kind::Dir
    } else if t.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    Meta {
        kind,
        mode: m.permissions().mode() & 0o7777,
    }
}

impl Facts for HostFacts {
    fn stat(&self, p: &Path) -> Option<Meta> {
        std::fs::metadata(p).ok().map(meta)
    }
    fn lstat(&self, p: &Path) -> Option<Meta> {
        std::fs::symlink_metadata(p).ok().map(meta)
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        std::fs::read_link(p).ok()
    }
    /// `readlink` alone: `EINVAL` is an existing non-link, any other error counts as missing
    /// (as a failed `lstat` does). Cheaper than `lstat`, which fills a whole `stat`, and one
    /// call for a link where `lstat` + `readlink` are two.
    fn link_status(&self, p: &Path) -> Option<LinkStatus> {
        Some(match std::fs::read_link(p) {
            Ok(target) => LinkStatus::Target(target),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => LinkStatus::NotLink,
            Err(_) => LinkStatus::Missing,
        })
    }
    fn realpath(&self, p: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(p).ok()
    }
    fn list_dir(&self, p: &Path) -> Option<Vec<String>> {
        // Bounded: a glob over a huge directory is not resolved (the core then keeps
        // its conservative rule-based answer).
        let names: Vec<String> = std::fs::read_dir(p)
            .ok()?
            .take(MAX_LISTED + 1)
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        (names.len() <= MAX_LISTED).then_some(names)
    }
    fn login_names(&self, home: &Path) -> Option<Arc<std::collections::BTreeSet<String>>> {
        login_names::login_names(home)
    }
    fn which(&self, name: &str, path_var: &str, cwd: &Path) -> Found {
        let (path, real) = resolve_with_real(name, path_var, cwd);
        Found { path, real }
    }
}

impl DecideContext {
    /// A context on this host's filesystem with no OpenClaw constraints (security `full`,
    /// ask `off`) and an empty allowlist: the guard's own policy alone decides. (Defined on
    /// the host side because it picks the host's facts; the core has `DecideContext::new`.)
    pub fn standalone(home: &Path, path: &str, cwd: &Path) -> Self {
        DecideContext::new(home, path, cwd, HostFacts::shared())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(p: &Path) {
        std::fs::write(p, b"#!/bin/true\n").expect("write");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// `readlink` alone gives the answer `lstat` + `readlink` give, on the real filesystem:
    /// a file, a directory, a link (dangling too), a missing name, a name under a file.
    #[test]
    fn link_status_by_readlink_agrees_with_lstat() {
        #[derive(Debug)]
        struct ByLstat;
        impl Facts for ByLstat {
            fn stat(&self, p: &Path) -> Option<Meta> {
                HostFacts.stat(p)
            }
            fn lstat(&self, p: &Path) -> Option<Meta> {
                HostFacts.lstat(p)
            }
            fn read_link(&self, p: &Path) -> Option<PathBuf> {
                HostFacts.read_link(p)
            }
            fn realpath(&self, p: &Path) -> Option<PathBuf> {
                HostFacts.realpath(p)
            }
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = tmp.path();
        std::fs::write(d.join("file"), b"x").expect("write");
        std::fs::create_dir(d.join("dir")).expect("mkdir");
        std::os::unix::fs::symlink("dir", d.join("link")).expect("symlink");
        std::os::unix::fs::symlink("/nowhere/at/all", d.join("dangling")).expect("symlink");
        let cases = [
            ("file", LinkStatus::NotLink),
            ("dir", LinkStatus::NotLink),
            ("link", LinkStatus::Target(PathBuf::from("dir"))),
            (
                "dangling",
                LinkStatus::Target(PathBuf::from("/nowhere/at/all")),
            ),
            ("missing", LinkStatus::Missing),
            ("file/below", LinkStatus::Missing),
        ];
        for (name, want) in cases {
            let p = d.join(name);
            assert_eq!(HostFacts.link_status(&p), Some(want.clone()), "{name}");
            assert_eq!(ByLstat.link_status(&p), Some(want), "{name} (lstat)");
        }
    }

    /// A cached answer is dropped as soon as a searched directory gains or loses the name.
    #[test]
    fn cache_follows_directory_changes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).expect("mkdir");
        std::fs::create_dir(&b).expect("mkdir");
        executable(&b.join("tool"));
        let path = format!("{}:{}", a.display(), b.display());
        // Let the directories age past the racy window so the answer is cached.
        std::thread::sleep(RACY + Duration::from_millis(20));
        let cwd = Path::new("/");
        assert_eq!(resolve_on_path("tool", &path, cwd), Some(b.join("tool")));
        assert_eq!(resolve_on_path("tool", &path, cwd), Some(b.join("tool")));
        executable(&a.join("tool"));
        std::thread::sleep(RECHECK);
        assert_eq!(resolve_on_path("tool", &path, cwd), Some(a.join("tool")));
        std::thread::sleep(RACY + Duration::from_millis(20));
        assert_eq!(resolve_on_path("tool", &path, cwd), Some(a.join("tool")));
        std::fs::remove_file(a.join("tool")).expect("rm");
        std::fs::remove_file(b.join("tool")).expect("rm");
        std::thread::sleep(RECHECK);
        assert_eq!(resolve_on_path("tool", &path, cwd), None);
    }

    /// A name that exists but is not executable is skipped and never cached.
    #[test]
    fn non_executable_names_are_skipped() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("tool"), b"x").expect("write");
        let path = tmp.path().display().to_string();
        std::thread::sleep(RACY + Duration::from_millis(20));
        assert_eq!(resolve_on_path("tool", &path, Path::new("/")), None);
        std::fs::set_permissions(
            tmp.path().join("tool"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        assert_eq!(
            resolve_on_path("tool", &path, Path::new("/")),
            Some(tmp.path().join("tool"))
        );
    }
}
