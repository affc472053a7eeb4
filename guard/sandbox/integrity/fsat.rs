//! Descriptor-relative file operations that never follow a symlink, so neither the scan nor
//! the restore can be steered outside the workspace by a link planted in it (even one swapped
//! in while they run): every step opens one name below an already open directory with
//! `O_NOFOLLOW`, and writes replace names by `renameat`, which never follows the target.

use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, renameat, OFlag};
use nix::sys::stat::{fchmod, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{symlinkat, unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Component, Path};

/// What is at a name, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    Other,
}

pub fn kind_of(st: &FileStat) -> Kind {
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Link,
        _ => Kind::Other,
    }
}

/// lstat of `name` below `dir`; None when absent.
pub fn stat_at(dir: impl AsFd, name: &OsStr) -> Result<Option<FileStat>, Errno> {
    match fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens the directory `name` below `dir`; fails (ELOOP/ENOTDIR) on anything else.
pub fn open_dir(dir: impl AsFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Opens the directory at the relative path `rel` below `root`, one component at a time.
pub fn open_path(root: impl AsFd, rel: &Path) -> Result<OwnedFd, Errno> {
    let mut fd = open_dir(root, OsStr::new("."))?;
    for c in rel.components() {
        match c {
            Component::Normal(name) => fd = open_dir(&fd, name)?,
            Component::CurDir => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(fd)
}

/// The names in a directory (without `.` and `..`), sorted, with their kind (from the
/// directory entry, or an lstat when the file system does not say). Listed through
/// `/proc/self/fd/N`, which names the open directory itself, not a path that could be swapped.
pub fn list(dir: impl AsFd) -> Result<Vec<(OsString, Kind)>, Errno> {
    let dir = dir.as_fd();
    let io = |e: std::io::Error| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
    let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
    let mut out = Vec::new();
    for e in std::fs::read_dir(path).map_err(io)? {
        let e = e.map_err(io)?;
        let name = e.file_name();
        let ft = match e.file_type() {
            Ok(ft) => ft,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(io(err)),
        };
        let kind = if ft.is_file() {
            Kind::File
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Link
        } else {
            Kind::Other
        };
        out.push((name, kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Up to `cap` bytes of the regular file `name` (None if larger); not following links.
pub fn read_file(dir: impl AsFd, name: &OsStr, cap: u64) -> Result<Option<Vec<u8>>, Errno> {
    let fd = openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut f = std::fs::File::from(fd);
    let mut data = Vec::new();
    Read::by_ref(&mut f)
        .take(cap + 1)
        .read_to_end(&mut data)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    Ok((data.len() as u64 <= cap).then_some(data))
}

pub fn read_link(dir: impl AsFd, name: &OsStr) -> Result<OsString, Errno> {
    readlinkat(dir, name)
}

/// A name no one else uses, for write-then-rename.
fn temp_name(name: &OsStr) -> OsString {
    let mut t = OsString::from(".sanctum-restore-");
    t.push(uuid::Uuid::new_v4().simple().to_string());
    t.push("-");
    t.push(name);
    t
}

/// Replaces whatever is at `name` (file, link, directory tree) by a file with `data`/`mode`.
pub fn put_file(dir: impl AsFd, name: &OsStr, data: &[u8], mode: u32) -> Result<(), Errno> {
    let dir = dir.as_fd();
    let tmp = temp_name(name);
    let fd = openat(
        dir,
        tmp.as_os_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?;
    let mut f = std::fs::File::from(fd);
    let written = f
        .write_all(data)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
        .and_then(|()| fchmod(&f, Mode::from_bits_truncate(mode & 0o7777)));
    drop(f);
    written
        .and_then(|()| replace(dir, &tmp, name))
        .inspect_err(|_| {
            let _ = unlinkat(dir, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        })
}

/// Replaces whatever is at `name` by a symlink to `target`.
pub fn put_link(dir: impl AsFd, name: &OsStr, target: &OsStr) -> Result<(), Errno> {
    let dir = dir.as_fd();
    let tmp = temp_name(name);
    symlinkat(target, dir, tmp.as_os_str())?;
    replace(dir, &tmp, name).inspect_err(|_| {
        let _ = unlinkat(dir, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
    })
}

/// Makes `name` a real directory with `mode` (replacing a file or link), and opens it.
pub fn ensure_dir(dir: impl AsFd, name: &OsStr, mode: u32) -> Result<OwnedFd, Errno> {
    let dir = dir.as_fd();
    match stat_at(dir, name)? {
        Some(st) if kind_of(&st) == Kind::Dir => {}
        Some(_) => {
            remove(dir, name)?;
            mkdirat(dir, name, Mode::from_bits_truncate(mode & 0o7777))?;
        }
        None => mkdirat(dir, name, Mode::from_bits_truncate(mode & 0o7777))?,
    }
    open_dir(dir, name)
}

/// renameat, clearing a directory that sits at the target first (rename cannot replace a
/// non-empty directory with a file).
fn replace(dir: impl AsFd, tmp: &OsStr, name: &OsStr) -> Result<(), Errno> {
    let dir = dir.as_fd();
    match renameat(dir, tmp, dir, name) {
        Err(Errno::EISDIR) | Err(Errno::ENOTEMPTY) | Err(Errno::EEXIST) => {
            remove(dir, name)?;
            renameat(dir, tmp, dir, name)
        }
        r => r,
    }
}

/// How deep `remove` goes into a planted directory tree before giving up (ELOOP).
const MAX_REMOVE_DEPTH: usize = 64;

/// Removes `name` below `dir`: a file or link itself (never its target), a directory with
/// everything in it.
pub fn remove(dir: impl AsFd, name: &OsStr) -> Result<(), Errno> {
    remove_depth(dir.as_fd(), name, 0)
}

fn remove_depth(dir: std::os::fd::BorrowedFd<'_>, name: &OsStr, depth: usize) -> Result<(), Errno> {
    match unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
        Err(Errno::EISDIR) | Err(Errno::EPERM) if depth < MAX_REMOVE_DEPTH => {
            let sub = open_dir(dir, name)?;
            for (child, _) in list(&sub)? {
                remove_depth(sub.as_fd(), &child, depth + 1)?;
            }
            unlinkat(dir, name, UnlinkatFlags::RemoveDir)
        }
        Err(Errno::ENOENT) => Ok(()),
        Err(Errno::EISDIR) => Err(Errno::ELOOP),
        r => r,
    }
}
