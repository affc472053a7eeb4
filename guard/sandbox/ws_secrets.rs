//! The sensitive files inside a workspace that a run may read but not write: files with a
//! secret's name (the policy core's list, `policy::paths::is_secret_file_name`, and the names
//! only a workspace makes secret, `ws_content::is_secret_name`), files whose content is a
//! secret by the rules of `ws_content`, device nodes, and every name of a file hard-linked
//! outside the workspace or to a secret. Landlock cannot subtract a file from a granted
//! directory, so the profile denies each one and the limits layer grants its siblings along
//! the path instead of the parent (`landlock_rules`).
//!
//! The scan and the grants agree on one listing: the walk (`ws_walk`) opens each directory
//! from its parent's fd and looks at each entry through it, and the grants grant an inode
//! of the workspace only if this scan judged that very inode readable, unchanged since
//! (`Judged::grants`: device, inode, mtime, ctime, size). A hard link or a name made between
//! the scan and the grants is not granted, whatever the grants' own listing finds.
//!
//! The scan is cached per workspace and re-validated on every use: an lstat of every
//! directory it listed (device, inode, mtime, ctime: creating, removing or renaming an entry
//! changes its directory's mtime, and a replaced directory has another inode), and for the
//! files, whose content can change with no directory changing, an inotify watch on every
//! listed directory (set before the directory is listed): any write, attribute change or
//! entry change in one voids the scan. Where no watch can be set (no inotify instance or
//! watch left), an fstatat of every file instead (a rewritten file has another mtime), ~1 µs
//! a file. inotify misses writes through mmap(2) and writes on network filesystems by other
//! hosts; those are seen when the entry expires (`TTL`). No file is read again: content
//! verdicts are remembered per file by (device, inode, mtime, ctime, size), so a rescan reads
//! only changed files.
//! File times come from a coarse clock, so a scan that saw a directory or file changed less
//! than `RACY` before it began is used once and not cached (as the Landlock cache does).
//! A directory with no secret in it is granted whole, so a file created in it after the
//! scan, while the run is starting or running, is readable to the run (runs that use this
//! scan cannot write the workspace, so only a concurrent approved run or a process outside
//! the guard could create one). So the run's profile keeps the scan it was granted from
//! (`ResolvedProfile::scan`), and `sandbox::run` scans again after a run during which the
//! workspace changed (`Judged::unchanged`): a secret that appeared meanwhile withholds the
//! output. So does a name that may have named an unjudged file and names another by then
//! (a link made and removed again within the run: `Judged::hidden_change`, `ws_churn`).
//! A workspace with more than `MAX_ENTRIES` entries fails closed (the run does not start).

use super::landlock_cache::{epoch, Stamp, RACY, TTL};
use super::ws_churn::{Churn, Event, Merged};
use super::ws_fanotify::NameWatch;
use super::SandboxError;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::inotify::AddWatchFlags;
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// More entries than this and the scan gives up (the run does not start).
pub const MAX_ENTRIES: usize = 1_000_000;
/// Workspaces remembered.
const MAX_CACHED: usize = 16;

/// What a file was when judged: identity, change times and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKey {
    pub dev: u64,
    pub ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: i64,
}

impl FileKey {
    pub fn from_stat(st: &FileStat) -> FileKey {
        FileKey {
            dev: st.st_dev,
            ino: st.st_ino,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
            size: st.st_size,
        }
    }

    /// Whether both timestamps lie before `limit` (seconds, nanoseconds since the epoch).
    pub(super) fn older_than(&self, limit: (i64, i64)) -> bool {
        self.mtime < limit && self.ctime < limit
    }
}

/// A file the scan looked at: the end of its name in `Judged::names`, and its key.
pub(super) struct FileRec {
    pub name_end: usize,
    pub key: FileKey,
}

/// One scan of a workspace: what to deny, what the grants may grant, what to re-check.
pub struct Judged {
    /// The paths to deny, sorted.
    pub(super) secrets: Vec<PathBuf>,
    secrets_arc: Arc<Vec<PathBuf>>,
    /// Every listed directory, its stamp, and the end of its files in `files`.
    pub(super) dirs: Vec<(PathBuf, Stamp, usize)>,
    pub(super) files: Vec<FileRec>,
    pub(super) names: Vec<u8>,
    /// Files judged readable, by (device, inode), with the key they were judged at.
    pub(super) ok_files: HashMap<(u64, u64), FileKey>,
    /// Listed directories outside secret directories, by (device, inode).
    pub(super) ok_dirs: HashMap<(u64, u64), Stamp>,
    pub(super) built: Instant,
    cacheable: bool,
    /// Watches on every listed directory (None: none could be set; files are re-stat'ed).
    pub(super) watch: Option<nix::sys::inotify::Inotify>,
    /// The directory each watch is on.
    wd_dirs: HashMap<nix::sys::inotify::WatchDescriptor, PathBuf>,
    /// The same directories' entry events by fanotify, which keeps apart what inotify may
    /// merge (`ws_fanotify`); None: the names are read from inotify's events.
    name_watch: Option<NameWatch>,
    /// The workspace is the root of a mount (`ws_fanotify::is_mount_root`): how inotify's
    /// merged renames are read when it alone follows the names.
    pub(super) mount_root: bool,
    /// What the watches saw. Reading the events drains them, and several runs check one
    /// scan, so each read is recorded here (under this lock, with the read).
    churn: Mutex<Churn>,
}

impl std::fmt::Debug for Judged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judged")
            .field("secrets", &self.secrets_arc.len())
            .field("dirs", &self.dirs.len())
            .field("files", &self.files.len())
            .field("watched", &self.watch.is_some())
            .finish_non_exhaustive()
    }
}

impl Judged {
    pub(super) fn empty() -> Judged {
        Judged {
            secrets: Vec::new(),
            secrets_arc: Arc::default(),
            dirs: Vec::new(),
            files: Vec::new(),
            names: Vec::new(),
            ok_files: HashMap::new(),
            ok_dirs: HashMap::new(),
            built: Instant::now(),
            cacheable: false,
            watch: nix::sys::inotify::Inotify::init(
                nix::sys::inotify::InitFlags::IN_NONBLOCK
                    | nix::sys::inotify::InitFlags::IN_CLOEXEC,
            )
            .ok(),
            wd_dirs: HashMap::new(),
            name_watch: NameWatch::new(),
            mount_root: false,
            churn: Mutex::default(),
        }
    }

    /// The paths this scan denies (the workspace's secrets), sorted.
    pub fn secrets(&self) -> &Arc<Vec<PathBuf>> {
        &self.secrets_arc
    }

    /// Whether the workspace is still as this scan saw it: nothing created, removed,
    /// renamed, written or changed in mode in any directory it listed, by the watches (a
    /// queue overflow is a change) and every listed directory's stamp (a rename's event is
    /// queued after the new name is visible, and its directory's mtime changed before), or
    /// without watches by an fstatat of every file. A run granted from this scan is checked
    /// after it ends (`sandbox::run`).
    pub fn unchanged(&self) -> bool {
        self.still_valid()
    }

    pub(super) fn push_file(&mut self, name: &std::ffi::OsStr, key: FileKey) {
        use std::os::unix::ffi::OsStrExt;
        self.names.extend_from_slice(name.as_bytes());
        self.files.push(FileRec {
            name_end: self.names.len(),
            key,
        });
    }

    /// Whether the grants may grant the inode `st` that `path` (inside the workspace) named
    /// when they opened it: a directory this scan listed, or a file it judged readable and
    /// unchanged since, under a name that is no secret's. Anything else (a name made or
    /// replaced after the scan, a device, a symlink) is not granted.
    pub fn grants(&self, path: &Path, st: &FileStat) -> bool {
        let secret_name = path.file_name().is_some_and(|n| {
            let parent = path.parent().and_then(Path::file_name);
            let (n, parent) = (n.to_string_lossy(), parent.map(|p| p.to_string_lossy()));
            crate::policy::paths::is_secret_file_name(&n)
                || super::ws_content::is_secret_name(parent.as_deref(), &n)
        });
        if secret_name {
            return false;
        }
        let fmt = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        let id = (st.st_dev, st.st_ino);
        if fmt == SFlag::S_IFDIR {
            return self.ok_dirs.contains_key(&id);
        }
        self.ok_files
            .get(&id)
            .is_some_and(|k| *k == FileKey::from_stat(st))
    }

    /// The stamp this scan listed directory `st` with (the grants record it, so a change
    /// since the scan voids a cached layer).
    pub fn dir_stamp(&self, st: &FileStat) -> Option<Stamp> {
        self.ok_dirs.get(&(st.st_dev, st.st_ino)).copied()
    }

    /// Watches the directory open at `fd` (before it is listed), which the walk reached as
    /// `path`; without a watch, files are re-stat'ed on every use instead.
    pub(super) fn watch_dir(&mut self, fd: std::os::fd::BorrowedFd<'_>, path: &Path) {
        use nix::sys::inotify::AddWatchFlags as F;
        use std::os::fd::AsRawFd;
        if let Some(n) = &mut self.name_watch {
            if !n.watch(fd, path) {
                self.name_watch = None;
            }
        }
        let Some(w) = &self.watch else {
            return;
        };
        let mask = F::IN_MODIFY
            | F::IN_ATTRIB
            | F::IN_CLOSE_WRITE
            | F::IN_CREATE
            | F::IN_DELETE
            | F::IN_MOVED_FROM
            | F::IN_MOVED_TO
            | F::IN_DELETE_SELF
            | F::IN_MOVE_SELF
            | F::IN_ONLYDIR;
        // The directory's inode itself, through its fd's magic link (followed: that is the
        // directory the fd holds, whatever its path names now).
        let at = format!("/proc/self/fd/{}", fd.as_raw_fd());
        match w.add_watch(at.as_str(), mask) {
            Ok(wd) => {
                self.wd_dirs.insert(wd, path.to_path_buf());
            }
            Err(_) => self.watch = None,
        }
    }

    /// Whether the watches saw nothing since the scan (None: there are none). Once they saw
    /// something, never again.
    fn quiet(&self) -> Option<bool> {
        let w = self.watch.as_ref()?;
        let mut churn = self.churn.lock().unwrap_or_else(|p| p.into_inner());
        if self.name_watch.is_none() {
            churn.merged_renames = Some(match self.mount_root {
                true => Merged::OwnMount,
                false => Merged::SharedFilesystem,
            });
        }
        loop {
            match w.read_events() {
                Ok(events) if !events.is_empty() => {
                    churn.changed = true;
                    for ev in &events {
                        let overflow = ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW);
                        if self.name_watch.is_some() && !overflow {
                            continue;
                        }
                        let cookie = ev.cookie.to_ne_bytes();
                        let e = Event {
                            mask: ev.mask,
                            pair: if ev.cookie == 0 { &[] } else { &cookie },
                            dir: self.wd_dirs.get(&ev.wd).map(PathBuf::as_path),
                            name: ev.name.as_deref(),
                        };
                        churn.apply(e, |p| self.denies(p));
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => break,
                Ok(_) | Err(_) => {
                    churn.changed = true;
                    churn
                        .hidden
                        .get_or_insert_with(|| "the workspace's watches could not be read".into());
                    break;
                }
            }
        }
        if let Some(n) = &self.name_watch {
            let read = n.drain(|e| churn.apply(e, |p| self.denies(p)));
            if let Err(why) = read {
                churn.changed = true;
                churn.hidden.get_or_insert(why);
            }
        }
        churn.settle();
        Some(!churn.changed)
    }

    /// Whether the scan denied `path` (a secret, or inside a denied directory).
    fn denies(&self, path: &Path) -> bool {
        self.secrets_arc.iter().any(|s| path.starts_with(s))
    }

    /// Why a name a run granted from this scan could read may have named, at some moment
    /// since the scan, a file no scan judged and names something else by now (`ws_churn`):
    /// then the run's output cannot be judged by a rescan. Without watches, any entry
    /// made, removed or renamed in a listed directory (its stamp changed) counts.
    pub fn hidden_change(&self) -> Option<String> {
        if self.quiet().is_some() {
            let churn = self.churn.lock().unwrap_or_else(|p| p.into_inner());
            return churn.hidden.clone();
        }
        self.dirs.iter().find_map(|(path, stamp, _)| {
            let same = nix::sys::stat::lstat(path.as_path())
                .is_ok_and(|st| Stamp::from_stat(&st) == *stamp);
            (!same).then(|| format!("{} changed, and no watch followed it", path.display()))
        })
    }

    /// Whether every listed directory and every file looked at is unchanged.
    fn still_valid(&self) -> bool {
        let quiet = self.quiet();
        if quiet == Some(false) {
            return false;
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut start = 0;
        for (path, stamp, end) in &self.dirs {
            if quiet == Some(true) {
                // Watched: the directory's own stamp is all (one lstat).
                let same = nix::sys::stat::lstat(path.as_path())
                    .is_ok_and(|st| Stamp::from_stat(&st) == *stamp);
                if !same {
                    return false;
                }
                continue;
            }
            let Ok(fd) = nix::fcntl::open(path.as_path(), flags, Mode::empty()) else {
                return false;
            };
            if !fstat(&fd).is_ok_and(|st| Stamp::from_stat(&st) == *stamp) {
                return false;
            }
            let mut from = match start {
                0 => 0,
                n => self.files.get(n - 1).map_or(0, |f| f.name_end),
            };
            for f in self.files.get(start..*end).unwrap_or_default() {
                let name = f.name(&self.names, from);
                from = f.name_end;
                let same = fstatat(&fd, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileKey::from_stat(&st) == f.key);
                if !same {
                    return false;
                }
            }
            start = *end;
        }
        true
    }
}

/// The workspace whose secrets the scan found, with that scan: inside it, the walk grants
/// only inodes the scan judged (`Judged::grants`), so a name made between the scan and this
/// walk (a hard link to a secret) is not granted.
pub type Scanned<'a> = Option<(&'a Path, &'a Judged)>;

/// Whether `fd`, opened at `path`, may be granted by the scan of the workspace it lies in,
/// and the stamp the scan listed it with (directories).
pub(super) fn judged_ok(
    path: &Path,
    fd: &std::os::fd::OwnedFd,
    ws: Scanned<'_>,
) -> Result<(bool, Option<Stamp>), SandboxError> {
    let Some((_, judged)) = ws.filter(|(root, _)| path.starts_with(root)) else {
        return Ok((true, None));
    };
    let st = nix::sys::stat::fstat(fd).map_err(|e| SandboxError::Landlock(e.to_string()))?;
    Ok((judged.grants(path, &st), judged.dir_stamp(&st)))
}

type Cache = Mutex<HashMap<PathBuf, Arc<Judged>>>;

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// Whether a profile that reads `read` and writes `write` keeps its runs from the secrets
/// of `workspace` by this scan (as `ProfileSpec::resolve_with` decides): it cannot write the
/// workspace and reads no parent of it.
pub fn applies(workspace: &Path, read: &[PathBuf], write: &[PathBuf]) -> bool {
    let writes_ws = write.iter().any(|w| workspace.starts_with(w));
    let reads_parent = read
        .iter()
        .any(|r| r != workspace && workspace.starts_with(r));
    !writes_ws && !reads_parent
}

/// The sensitive files and directories under `workspace` (canonical), sorted.
pub fn secrets_in(workspace: &Path) -> Result<Arc<Vec<PathBuf>>, SandboxError> {
    Ok(Arc::clone(&judge(workspace)?.secrets_arc))
}

/// A scan of `workspace` valid now (the cached one if nothing changed since): what a
/// resolved profile denies and grants from, and checks after its run (`Judged::unchanged`).
pub fn scan(workspace: &Path) -> Result<Arc<Judged>, SandboxError> {
    judge(workspace)
}

fn judge(workspace: &Path) -> Result<Arc<Judged>, SandboxError> {
    let cached = cache().lock().ok().and_then(|c| c.get(workspace).cloned());
    if let Some(j) = cached {
        if j.cacheable && j.built.elapsed() < TTL && j.still_valid() {
            return Ok(j);
        }
    }
    let started = SystemTime::now();
    let mut j = super::ws_walk::scan(workspace)?;
    let limit = epoch(started.checked_sub(RACY).unwrap_or(UNIX_EPOCH));
    j.cacheable = j.dirs.iter().all(|(_, s, _)| s.older_than(limit))
        && j.files.iter().all(|f| f.key.older_than(limit));
    j.secrets_arc = Arc::new(std::mem::take(&mut j.secrets));
    let j = Arc::new(j);
    if let Ok(mut c) = cache().lock() {
        if c.len() >= MAX_CACHED && !c.contains_key(workspace) {
            c.clear();
        }
        // Kept even when not cacheable: the grants of this very run use it.
        c.insert(workspace.to_path_buf(), Arc::clone(&j));
    }
    Ok(j)
}

#[cfg(test)]
#[path = "ws_secrets_tests.rs"]
mod tests;
