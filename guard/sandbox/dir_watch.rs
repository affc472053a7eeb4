//! One change marker for the directories the per-request caches depend on (`profile_paths`,
//! both Landlock layers): an inotify watch on each, set once, instead of an lstat of each on
//! every use. The three caches re-stat'ed 20–40 paths per autonomous spawn, mostly the same
//! ones (`/`, `/usr`, `/etc`, the workspace's parents); now a use is a poll of the mount table
//! and a read of the inotify queue, and only directories that saw an event are looked at.
//!
//! Why a quiet marker is as good as the lstat it replaces. A [`Marker`] watches each
//! directory a cache entry stamped and every ancestor of it (and the parents of the entry's
//! other paths, with their ancestors). A path's meaning changes only when an entry of one of
//! its ancestors is created, removed, renamed, linked or replaced (each reported on the
//! watched directory as IN_CREATE, IN_DELETE, IN_MOVED_*), when a directory's own attributes
//! change (IN_ATTRIB, what ctime in a stamp stood for), or when a mount changes what a name
//! means (watched through `/proc/self/mountinfo`, see `landlock_base_check`). The watch is
//! put on the inode the stamp names (through an `O_PATH` fd checked against the stamp), and
//! the stamps are checked once more after every watch is set, so nothing between the build
//! and the watch is missed. A queue overflow, a new inotify instance or a mount change voids
//! every marker at once (the caller falls back to its full check and arms a new one).
//!
//! Only where inotify sees every change: on local filesystems (ext4, xfs, btrfs, tmpfs,
//! f2fs), whose changes all go through this kernel. Elsewhere (NFS, FUSE, overlayfs, sysfs)
//! the directory is checked by lstat on every use, as before, and so is everything at or below
//! a directory that saw an event.

use super::landlock_base_check::mount_generation;
use super::landlock_cache::Stamp;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Watches the guard keeps at most (the user's inotify watches are shared with every other
/// program of the user); past it the instance is replaced and every marker re-armed.
const MAX_WATCHES: usize = 1024;

/// Filesystem magic numbers (statfs f_type) whose every change goes through this kernel's
/// VFS: ext2/3/4, xfs, btrfs, tmpfs, f2fs, ramfs.
const LOCAL_FS: [i64; 6] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0xF2F5_2010,
    0x8584_58F6,
];

/// Everything that can change a name below a directory, or the directory's own stamp.
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
}

/// The guard's one inotify instance and what it has seen.
struct Watcher {
    inotify: Option<Inotify>,
    /// Events seen per watch (IN_IGNORED included: a removed watch counts as a change).
    seen: BTreeMap<WatchDescriptor, u64>,
    /// Bumped on a queue overflow, a failed read, and a new instance: every marker armed
    /// before is void.
    epoch: u64,
}

static WATCHER: Mutex<Watcher> = Mutex::new(Watcher {
    inotify: None,
    seen: BTreeMap::new(),
    epoch: 0,
});

impl Watcher {
    /// Counts every queued event against its watch.
    fn drain(&mut self) {
        let Some(ino) = &self.inotify else { return };
        loop {
            match ino.read_events() {
                Ok(events) if events.is_empty() => return,
                Ok(events) => {
                    for e in events {
                        if e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                            self.epoch += 1;
                        } else {
                            *self.seen.entry(e.wd).or_default() += 1;
                        }
                    }
                }
                Err(Errno::EAGAIN) => return,
                Err(Errno::EINTR) => {}
                Err(_) => {
                    self.epoch += 1;
                    return;
                }
            }
        }
    }

    /// The instance, made (or replaced, when `room` more watches would pass the cap).
    fn instance(&mut self, room: usize) -> Option<&Inotify> {
        if self.inotify.is_none() || self.seen.len() + room > MAX_WATCHES {
            self.inotify = None;
            self.seen.clear();
            self.epoch += 1;
            self.inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok();
        }
        self.inotify.as_ref()
    }
}

/// A watched (or polled) directory of a marker.
#[derive(Debug)]
struct Dir {
    path: PathBuf,
    /// (device, inode) the watch is on.
    id: (u64, u64),
    /// The cache entry's stamp of it, when it has one (else only its identity is checked).
    stamp: Option<Stamp>,
    /// None: not on a local filesystem, checked by lstat on every use.
    wd: Option<WatchDescriptor>,
    /// The watch's event count when this directory was last known to match.
    base: AtomicU64,
}

impl Dir {
    /// Whether the path still names the watched directory (with its stamp, when stamped).
    fn matches(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| match &self.stamp {
            Some(s) => Stamp::from_meta(&m) == *s,
            None => (m.dev(), m.ino()) == self.id,
        })
    }
}

/// The directories one cache entry depends on, watched (see the module doc).
#[derive(Debug)]
pub(super) struct Marker {
    epoch: u64,
    mounts: u64,
    /// Sorted by path: a directory's descendants follow it.
    dirs: Vec<Dir>,
}

/// `p` and its ancestors, each once, into `want` (stamps kept where given).
fn with_ancestors(want: &mut BTreeMap<PathBuf, Option<Stamp>>, p: &Path, stamp: Option<Stamp>) {
    if let Some(s) = stamp {
        want.insert(p.to_path_buf(), Some(s));
    } else {
        want.entry(p.to_path_buf()).or_insert(None);
    }
    for a in p.ancestors().skip(1) {
        want.entry(a.to_path_buf()).or_insert(None);
    }
}

impl Marker {
    /// Watches the `stamped` directories, the parents of `others`, and all their ancestors.
    /// None when a directory cannot be opened or watched, or no longer matches its stamp:
    /// the caller keeps its full check.
    pub(super) fn arm<'a>(
        stamped: &[(PathBuf, Stamp)],
        others: impl Iterator<Item = &'a Path>,
    ) -> Option<Marker> {
        let mut want = BTreeMap::new();
        for (p, s) in stamped {
            with_ancestors(&mut want, p, Some(*s));
        }
        for o in others {
            if let Some(parent) = o.parent() {
                with_ancestors(&mut want, parent, None);
            }
        }
        if want.is_empty() || want.keys().any(|p| !p.is_absolute()) {
            return None;
        }
        // Before any watch is set: a mount change from here on voids the marker.
        let mounts = mount_generation()?;
        let mut dirs = Vec::with_capacity(want.len());
        let epoch = {
            let mut w = WATCHER.lock().ok()?;
            w.drain();
            w.instance(want.len())?;
            for (path, stamp) in want {
                dirs.push(watch(&mut w, path, stamp)?);
            }
            w.epoch
        };
        // Every watch is set: a change from here on is an event; one before shows here.
        dirs.iter().all(Dir::matches).then_some(Marker {
            epoch,
            mounts,
            dirs,
        })
    }

    /// Whether nothing the entry depends on changed since it was armed (or last re-checked).
    /// Directories that saw an event (or cannot be watched) are re-checked by lstat with
    /// everything below them, and `others_ok` re-checks the entry's other paths below them.
    pub(super) fn holds(&self, others_ok: impl FnOnce(&[&Path]) -> bool) -> bool {
        if mount_generation() != Some(self.mounts) {
            return false;
        }
        let mut suspects: Vec<&Path> = Vec::new();
        let mut seen_now: Vec<(usize, u64)> = Vec::new();
        {
            let Ok(mut w) = WATCHER.lock() else {
                return false;
            };
            w.drain();
            if w.epoch != self.epoch {
                return false;
            }
            for (i, d) in self.dirs.iter().enumerate() {
                let Some(wd) = d.wd else {
                    suspects.push(&d.path);
                    continue;
                };
                let now = w.seen.get(&wd).copied().unwrap_or(0);
                if now != d.base.load(Ordering::Acquire) {
                    suspects.push(&d.path);
                    seen_now.push((i, now));
                }
            }
        }
        if suspects.is_empty() {
            return true;
        }
        let below = |p: &Path| suspects.iter().any(|s| p.starts_with(s));
        let ok = self
            .dirs
            .iter()
            .filter(|d| below(&d.path))
            .all(Dir::matches)
            && others_ok(&suspects);
        if ok {
            // Counts read before the re-check: an event after it still shows next time.
            for (i, now) in seen_now {
                self.dirs[i].base.store(now, Ordering::Release);
            }
        }
        ok
    }
}

/// A cache entry's marker and its fallback. The first use that passes the entry's full check
/// arms a marker; later uses ask the marker, and fall back to the full check (arming anew)
/// only when it cannot vouch (a mount change, an overflow, a re-checked path that changed).
#[derive(Debug, Default)]
pub(super) struct Guard {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    Unarmed,
    Armed(Marker),
    /// No marker could be armed: the full check on every use, as before.
    Unwatchable,
}

impl Guard {
    /// Whether the entry still holds. `stamped` and `others` are what [`Marker::arm`] takes,
    /// `others_ok` what [`Marker::holds`] takes; `full` is the entry's own complete check.
    pub(super) fn holds<'a>(
        &self,
        stamped: &[(PathBuf, Stamp)],
        others: impl Iterator<Item = &'a Path>,
        others_ok: impl FnOnce(&[&Path]) -> bool,
        full: impl FnOnce() -> bool,
    ) -> bool {
        let Ok(mut st) = self.state.lock() else {
            return false;
        };
        if let State::Armed(m) = &*st {
            if m.holds(others_ok) {
                return true;
            }
        }
        if !full() {
            return false;
        }
        if !matches!(*st, State::Unwatchable) {
            *st = Marker::arm(stamped, others).map_or(State::Unwatchable, State::Armed);
        }
        true
    }
}

/// Opens `path` (not following a last symlink), checks it against `stamp`, and watches it
/// where its filesystem reports every change.
fn watch(w: &mut Watcher, path: PathBuf, stamp: Option<Stamp>) -> Option<Dir> {
    let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::open(path.as_path(), flags, nix::sys::stat::Mode::empty()).ok()?;
    let st = nix::sys::stat::fstat(&fd).ok()?;
    let id = (st.st_dev, st.st_ino);
    if stamp.is_some_and(|s| s.ident() != id) {
        return None;
    }
    let local =
        nix::sys::statfs::fstatfs(&fd).is_ok_and(|s| LOCAL_FS.contains(&s.filesystem_type().0));
    let wd = if local {
        // The magic link names the inode the fd holds, whatever the path names by now.
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let wd = w.inotify.as_ref()?.add_watch(link.as_str(), mask()).ok()?;
        Some(wd)
    } else {
        None
    };
    let base = wd.map_or(0, |wd| *w.seen.entry(wd).or_default());
    Some(Dir {
        path,
        id,
        stamp,
        wd,
        base: AtomicU64::new(base),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(p: &Path) -> Stamp {
        Stamp::from_meta(&std::fs::symlink_metadata(p).unwrap())
    }

    /// Quiet until something changes below a watched directory; a change that leaves the
    /// stamps as they were (a file's mode) is re-checked and then quiet again; a renamed
    /// entry, a replaced ancestor or a new entry is a change.
    #[test]
    fn quiet_until_a_watched_directory_changes() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/unit-tmp");
        std::fs::create_dir_all(&base).unwrap();
        let t = tempfile::tempdir_in(base).unwrap();
        let root = t.path().canonicalize().unwrap();
        let (a, b) = (root.join("a"), root.join("a/b"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("f"), "x").unwrap();
        let stamped = vec![(a.clone(), stamp(&a)), (b.clone(), stamp(&b))];
        let m = Marker::arm(&stamped, std::iter::empty()).unwrap();
        assert!(m.holds(|_| true));
        assert!(
            m.dirs.iter().any(|d| d.path == root),
            "ancestors are watched"
        );
        // A child's attributes: an event, but the stamps hold: re-checked, then quiet.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(b.join("f"), std::fs::Permissions::from_mode(0o600)).unwrap();
        // (Other tests make directories beside `root`: its ancestors may be re-checked too.)
        let mut rechecked = Vec::new();
        assert!(m.holds(|s| {
            rechecked = s.iter().map(|p| p.to_path_buf()).collect();
            true
        }));
        assert!(rechecked.contains(&b), "{rechecked:?}");
        let mut again = Vec::new();
        assert!(m.holds(|s| {
            again = s.iter().map(|p| p.to_path_buf()).collect();
            true
        }));
        assert!(
            !again.iter().any(|p| p.starts_with(&root)),
            "quiet again: {again:?}"
        );
        // A new entry in a stamped directory: its stamp no longer holds.
        std::fs::write(b.join("g"), "y").unwrap();
        assert!(!m.holds(|_| true));

        // The caller's own paths below an event are handed to it.
        let m = Marker::arm(&[], std::iter::once(b.join("f").as_path())).unwrap();
        assert!(m.holds(|_| true));
        std::fs::rename(&a, root.join("a2")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        assert!(!m.holds(|_| true), "the parent of a path replaced");
    }
}
