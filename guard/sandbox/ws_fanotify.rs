//! A workspace's entry events by fanotify, each carrying a handle of the file it is about.
//!
//! inotify merges an event into an identical one still at the tail of its queue, and its
//! rename cookie is not part of "identical": a hard link renamed over a name from outside the
//! watched tree, then the old file renamed back over it, reads as one rename, so the link's
//! moment is lost (`ws_churn` would see a name made once and kept). fanotify reports the
//! moved file's handle with each event (`FAN_REPORT_TARGET_FID`, Linux 5.17), so two renames
//! of different files stay two events. An unprivileged process may have such a group on
//! directories it can read; a runtime's seccomp profile may refuse `fanotify_init`, and then
//! the scan keeps inotify's record alone (SECURITY.md says what that misses).

use super::ws_churn::Event;
use nix::errno::Errno;
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};
use nix::sys::inotify::AddWatchFlags as F;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The size of `fanotify_event_metadata`.
const META: usize = 24;
/// The largest file handle the kernel makes (`MAX_HANDLE_SZ`).
const MAX_HANDLE: usize = 128;

/// A fanotify group watching the entries of every directory the scan listed.
#[derive(Debug)]
pub(super) struct NameWatch {
    fan: Fanotify,
    /// Each marked directory's path, by its handle (type and bytes, as events carry it).
    dirs: HashMap<Vec<u8>, PathBuf>,
}

impl NameWatch {
    /// A group, or None where this kernel or process may not have one.
    pub fn new() -> Option<NameWatch> {
        let flags = InitFlags::FAN_CLASS_NOTIF
            | InitFlags::FAN_CLOEXEC
            | InitFlags::FAN_NONBLOCK
            | InitFlags::from_bits_retain(libc::FAN_REPORT_DFID_NAME_TARGET);
        let fan = match Fanotify::init(flags, EventFFlags::O_RDONLY) {
            Ok(fan) => fan,
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    tracing::info!(
                        error = %e,
                        "workspace names are followed by inotify alone: no fanotify group \
                         (SECURITY.md: which watches read the names)"
                    );
                });
                return None;
            }
        };
        Some(NameWatch {
            fan,
            dirs: HashMap::new(),
        })
    }

    /// Marks the directory open at `fd`, reached as `path`. False when it cannot be
    /// followed (no mark left, no handle, or a handle another marked directory has: events
    /// could not tell them apart).
    pub fn watch(&mut self, fd: BorrowedFd<'_>, path: &Path) -> bool {
        let mask = MaskFlags::FAN_CREATE
            | MaskFlags::FAN_DELETE
            | MaskFlags::FAN_MOVED_FROM
            | MaskFlags::FAN_MOVED_TO
            | MaskFlags::FAN_ONDIR;
        let marked = self.fan.mark(
            MarkFlags::FAN_MARK_ADD | MarkFlags::FAN_MARK_ONLYDIR,
            mask,
            fd,
            None::<&Path>,
        );
        let Some(key) = marked.ok().and_then(|()| dir_handle(fd)) else {
            return false;
        };
        match self.dirs.insert(key, path.to_path_buf()) {
            Some(other) => other == path,
            None => true,
        }
    }

    /// Reads every queued event, in order, into `apply`. Err: the queue could not be read
    /// or held what this does not understand.
    pub fn drain(&self, mut apply: impl FnMut(Event<'_>)) -> Result<(), String> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match nix::unistd::read(self.fan.as_fd(), &mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(Errno::EAGAIN) => return Ok(()),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(format!("reading the workspace's fanotify group: {e}")),
            };
            let events = buf.get(..n).ok_or("fanotify read past its buffer")?;
            for_each_event(events, |raw| {
                let ev = Event {
                    mask: raw.mask,
                    pair: raw.target,
                    dir: raw.dir.and_then(|d| self.dirs.get(d)).map(PathBuf::as_path),
                    name: raw.name,
                };
                apply(ev);
            })?;
        }
    }
}

/// One event as read: the mask in inotify's bits (fanotify's entry events use the same), the
/// handle of the directory and the name, and the handle of the file itself.
struct Raw<'a> {
    mask: F,
    dir: Option<&'a [u8]>,
    name: Option<&'a OsStr>,
    target: &'a [u8],
}

fn u16_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?).into())
}

fn u32_at(b: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?)).ok()
}

/// Walks a buffer of events (fanotify(7): metadata, then info records of a header, the
/// filesystem id and a file handle, then for a directory record the entry's name).
fn for_each_event(buf: &[u8], mut f: impl FnMut(Raw<'_>)) -> Result<(), String> {
    let bad = |what: &str| format!("a fanotify event with {what}");
    let mut at = 0;
    while at < buf.len() {
        let ev_len = u32_at(buf, at).ok_or_else(|| bad("a cut header"))?;
        // Another layout than this reads is not guessed at.
        if buf.get(at + 4) != Some(&libc::FANOTIFY_METADATA_VERSION) {
            return Err(bad("an unknown metadata version"));
        }
        let meta_len = u16_at(buf, at + 6).ok_or_else(|| bad("a cut header"))?;
        let mask = buf
            .get(at + 8..at + 16)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_ne_bytes)
            .ok_or_else(|| bad("a cut header"))?;
        let ev = buf
            .get(at..at + ev_len)
            .filter(|_| ev_len >= META && meta_len >= META && meta_len <= ev_len)
            .ok_or_else(|| bad("a wrong length"))?;
        let mut raw = Raw {
            mask: F::from_bits_truncate(u32::try_from(mask & 0xffff_ffff).unwrap_or(0)),
            dir: None,
            name: None,
            target: &[],
        };
        let mut rec = meta_len;
        while rec < ev.len() {
            let kind = *ev.get(rec).ok_or_else(|| bad("a cut record"))?;
            let len = u16_at(ev, rec + 2).ok_or_else(|| bad("a cut record"))?;
            let body = ev
                .get(rec..rec + len)
                .filter(|_| len >= 4)
                .ok_or_else(|| bad("a wrong record length"))?;
            // Header (4), fsid (8), then struct file_handle: bytes, type, the handle.
            let hb = u32_at(body, 12).ok_or_else(|| bad("a cut handle"))?;
            // The key: the handle's type and bytes, as `dir_handle` makes it.
            let key = body.get(16..20 + hb).ok_or_else(|| bad("a cut handle"))?;
            match kind {
                // FAN_EVENT_INFO_TYPE_FID: the file itself.
                1 => raw.target = key,
                // FAN_EVENT_INFO_TYPE_DFID_NAME: the directory, then the name.
                2 => {
                    raw.dir = Some(key);
                    let rest = body.get(20 + hb..).unwrap_or_default();
                    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
                    raw.name = rest.get(..end).map(OsStr::from_bytes);
                }
                _ => {}
            }
            rec += len;
        }
        f(raw);
        at += ev_len;
    }
    Ok(())
}

/// The handle of the directory open at `fd` as fanotify reports it: type, then bytes.
fn dir_handle(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    handle_and_mount(fd).map(|(key, _)| key)
}

/// Whether the directory open at `fd` is the root of a mount (its parent, `..` from it, lies
/// on another): then no rename brings a file into its tree from outside it (EXDEV). False
/// when it cannot be told.
pub(super) fn is_mount_root(fd: BorrowedFd<'_>) -> bool {
    let flags =
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC;
    let Ok(parent) = nix::fcntl::openat(fd, "..", flags, nix::sys::stat::Mode::empty()) else {
        return false;
    };
    match (handle_and_mount(fd), handle_and_mount(parent.as_fd())) {
        (Some((_, here)), Some((_, above))) => here != above,
        _ => false,
    }
}

/// `name_to_handle_at(fd, "", AT_EMPTY_PATH)`: the handle's type and bytes, and the id of
/// the mount it lies on.
fn handle_and_mount(fd: BorrowedFd<'_>) -> Option<(Vec<u8>, libc::c_int)> {
    #[repr(C)]
    struct Handle {
        bytes: libc::c_uint,
        kind: libc::c_int,
        data: [u8; MAX_HANDLE],
    }
    let mut h = Handle {
        bytes: MAX_HANDLE as libc::c_uint,
        kind: 0,
        data: [0; MAX_HANDLE],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: `h` is a `struct file_handle` followed by the MAX_HANDLE_SZ bytes its
    // `handle_bytes` announces, and outlives the call; the path is a NUL-terminated empty
    // string, which with AT_EMPTY_PATH names `fd` itself; `mount_id` is a valid int.
    let rc = unsafe {
        libc::name_to_handle_at(
            fd.as_raw_fd(),
            c"".as_ptr(),
            std::ptr::addr_of_mut!(h).cast::<libc::file_handle>(),
            &mut mount_id,
            libc::AT_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return None;
    }
    let n = usize::try_from(h.bytes).ok().filter(|n| *n <= MAX_HANDLE)?;
    let mut key = h.kind.to_ne_bytes().to_vec();
    key.extend_from_slice(h.data.get(..n)?);
    Some((key, mount_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's own events, for a rename over a name from outside the marked directory
    /// and back: inotify reports one event for the two; this group reports both, each with
    /// the file it moved.
    #[test]
    fn two_renames_over_one_name_are_two_events() {
        let t = tempfile::tempdir().unwrap();
        let (ws, out) = (t.path().join("ws"), t.path().join("out"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(ws.join("plain.txt"), "plain").unwrap();
        std::fs::write(t.path().join("key"), "key").unwrap();
        let Some(mut w) = NameWatch::new() else {
            eprintln!("no fanotify group for this process: skipped");
            return;
        };
        let dir = std::fs::File::open(&ws).unwrap();
        assert!(w.watch(dir.as_fd(), &ws));
        std::fs::hard_link(ws.join("plain.txt"), out.join("orig")).unwrap();
        std::fs::hard_link(t.path().join("key"), out.join("link")).unwrap();
        std::fs::rename(out.join("link"), ws.join("plain.txt")).unwrap();
        std::fs::rename(out.join("orig"), ws.join("plain.txt")).unwrap();
        let mut seen = Vec::new();
        w.drain(|e| {
            seen.push((
                e.mask,
                e.dir.map(Path::to_path_buf),
                e.name.map(OsStr::to_os_string),
                e.pair.to_vec(),
            ))
        })
        .unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        for (mask, dir, name, _) in &seen {
            assert_eq!(*mask, F::IN_MOVED_TO);
            assert_eq!(dir.as_deref(), Some(ws.as_path()));
            assert_eq!(name.as_deref(), Some(OsStr::new("plain.txt")));
        }
        assert_ne!(seen[0].3, seen[1].3, "the two files' handles");
        assert!(!seen[0].3.is_empty());
    }

    #[test]
    fn a_mount_root_is_told_from_a_directory() {
        // A tmpfs of its own on every Linux this runs on (procfs has no file handles).
        let shm = std::fs::File::open("/dev/shm").unwrap();
        assert!(is_mount_root(shm.as_fd()), "/dev/shm is a mount of its own");
        let t = tempfile::tempdir().unwrap();
        let d = std::fs::File::open(t.path()).unwrap();
        assert!(!is_mount_root(d.as_fd()), "a temporary directory is not");
    }

    #[test]
    fn a_cut_or_lying_buffer_is_an_error() {
        let mut ev = vec![0u8; META];
        ev[..4].copy_from_slice(&(META as u32).to_ne_bytes());
        ev[6..8].copy_from_slice(&(META as u16).to_ne_bytes());
        assert!(for_each_event(&ev, |_| {}).is_err(), "an unknown version");
        ev[4] = libc::FANOTIFY_METADATA_VERSION;
        ev[..4].copy_from_slice(&(META as u32 + 8).to_ne_bytes());
        ev[6..8].copy_from_slice(&(META as u16).to_ne_bytes());
        assert!(
            for_each_event(&ev, |_| {}).is_err(),
            "longer than the buffer"
        );
        ev[..4].copy_from_slice(&4u32.to_ne_bytes());
        assert!(
            for_each_event(&ev, |_| {}).is_err(),
            "shorter than its metadata"
        );
        ev[..4].copy_from_slice(&(META as u32).to_ne_bytes());
        let mut n = 0;
        for_each_event(&ev, |_| n += 1).unwrap();
        assert_eq!(n, 1);
    }
}
