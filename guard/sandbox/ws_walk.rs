//! The walk of the workspace secrets scan (`ws_secrets`): each directory opened from its
//! parent's fd (`openat`, no symlink followed), listed once, each entry looked at through that
//! fd (`fstatat`), so every verdict is about one inode. The grants then grant only those
//! inodes (`Judged::grants`): a name made or replaced after the listing is not granted.

use super::landlock_cache::{epoch, Stamp, RACY};
use super::ws_content;
use super::ws_secrets::{FileKey, FileRec, Judged, MAX_ENTRIES};
use super::SandboxError;
use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Content verdicts remembered, by (device, inode), with the key they were made for.
const MAX_VERDICTS: usize = 2_000_000;

type Verdicts = Mutex<HashMap<(u64, u64), (FileKey, bool)>>;

fn verdicts() -> &'static Verdicts {
    static V: OnceLock<Verdicts> = OnceLock::new();
    V.get_or_init(Default::default)
}

fn err(p: &Path, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Profile(format!("scanning {} for secrets: {e}", p.display()))
}

/// The names of one file (device, inode) seen by the walk.
struct Links {
    nlink: u64,
    key: FileKey,
    /// Its names outside secret directories.
    paths: Vec<PathBuf>,
    /// Its names inside secret directories (denied with their directory).
    hidden: u64,
    /// One of its names, or its content, is a secret: every other name is that secret too.
    secret: bool,
}

/// A listed directory whose subdirectories are still to be walked (its fd held for them).
struct Frame {
    dir: Dir,
    path: PathBuf,
    in_secret: bool,
    subdirs: Vec<(OsString, bool)>,
}

struct Walk<'r> {
    root: PathBuf,
    rules: &'r ws_content::Rules,
    /// Verdicts older than this are remembered (coarse timestamps: see `RACY`).
    limit: (i64, i64),
    j: Judged,
    links: HashMap<(u64, u64), Links>,
    seen: usize,
    buf: Vec<u8>,
}

fn is_secret_name(parent: &Path, name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    let parent = parent.file_name().map(|p| p.to_string_lossy());
    crate::policy::paths::is_secret_file_name(&name)
        || ws_content::is_secret_name(parent.as_deref(), &name)
}

/// The scan of `root` (canonical): see `ws_secrets::secrets_in`.
pub(super) fn scan(root: &Path) -> Result<Judged, SandboxError> {
    let rules = ws_content::rules().map_err(SandboxError::Profile)?;
    let started = SystemTime::now();
    let mut w = Walk {
        root: root.to_path_buf(),
        rules,
        limit: epoch(started.checked_sub(RACY).unwrap_or(UNIX_EPOCH)),
        j: Judged::empty(),
        links: HashMap::new(),
        seen: 0,
        buf: Vec::new(),
    };
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let dir = Dir::open(root, flags, Mode::empty()).map_err(|e| err(root, e))?;
    w.j.mount_root = super::ws_fanotify::is_mount_root(dir.as_fd());
    let mut stack = Vec::new();
    if let Some(f) = w.list(dir, root.to_path_buf(), false)? {
        stack.push(f);
    }
    while let Some(top) = stack.last_mut() {
        let Some((name, named)) = top.subdirs.pop() else {
            stack.pop();
            continue;
        };
        let path = top.path.join(&name);
        let in_secret = top.in_secret || named;
        let child = match Dir::openat(top.dir.as_fd(), name.as_os_str(), flags, Mode::empty()) {
            Ok(d) => d,
            // Gone or replaced (by a file or symlink) since the listing: its parent's
            // changed mtime voids this scan next time, and nothing unjudged is granted.
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => continue,
            // A directory nobody may list cannot be read by the run either.
            Err(Errno::EACCES) => continue,
            Err(e) => return Err(err(&path, e)),
        };
        if let Some(f) = w.list(child, path, in_secret)? {
            stack.push(f);
        }
    }
    w.finish();
    Ok(w.j)
}

impl Walk<'_> {
    /// Lists one directory and judges its entries; returns it as a frame if it has
    /// subdirectories to walk.
    fn list(
        &mut self,
        mut dir: Dir,
        path: PathBuf,
        in_secret: bool,
    ) -> Result<Option<Frame>, SandboxError> {
        self.j.watch_dir(dir.as_fd(), &path);
        let st = fstat(dir.as_fd()).map_err(|e| err(&path, e))?;
        let stamp = Stamp::from_stat(&st);
        if !in_secret {
            self.j.ok_dirs.insert((st.st_dev, st.st_ino), stamp);
        }
        let mut entries = Vec::new();
        for e in dir.iter() {
            let e = e.map_err(|e| err(&path, e))?;
            let name = OsStr::from_bytes(e.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            self.seen += 1;
            if self.seen > MAX_ENTRIES {
                return Err(SandboxError::Profile(format!(
                    "workspace {} has more than {MAX_ENTRIES} entries: too many to scan for secrets",
                    self.root.display()
                )));
            }
            entries.push((name.to_os_string(), e.file_type()));
        }
        let mut subdirs = Vec::new();
        for (name, kind) in entries {
            let named = is_secret_name(&path, &name);
            let denied_here = !in_secret && named;
            if kind == Some(Type::Directory) {
                if denied_here {
                    self.j.secrets.push(path.join(&name));
                }
                subdirs.push((name, named));
                continue;
            }
            if kind == Some(Type::Symlink) {
                continue;
            }
            let st = match fstatat(dir.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(err(&path.join(&name), e)),
            };
            let fmt = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
            if fmt == SFlag::S_IFDIR {
                // d_type unknown (or changed): walked like any directory.
                if denied_here {
                    self.j.secrets.push(path.join(&name));
                }
                subdirs.push((name, named));
                continue;
            }
            if fmt == SFlag::S_IFLNK {
                continue;
            }
            if fmt == SFlag::S_IFBLK || fmt == SFlag::S_IFCHR {
                // A device node is the device: denied whatever its name.
                if !in_secret {
                    self.j.secrets.push(path.join(&name));
                }
                continue;
            }
            let key = FileKey::from_stat(&st);
            let mut secret = in_secret || named;
            // An empty file holds nothing (not opened).
            if !secret && fmt == SFlag::S_IFREG && st.st_size > 0 {
                secret = self.content(&dir, &path, &name, key)?;
            }
            self.j.push_file(&name, key);
            let file_path = path.join(&name);
            if st.st_nlink > 1 {
                let l = self.links.entry((key.dev, key.ino)).or_insert(Links {
                    nlink: st.st_nlink,
                    key,
                    paths: Vec::new(),
                    hidden: 0,
                    secret: false,
                });
                l.secret |= secret;
                if in_secret {
                    l.hidden += 1;
                } else {
                    l.paths.push(file_path);
                }
                continue;
            }
            if secret {
                if !in_secret {
                    self.j.secrets.push(file_path);
                }
            } else {
                self.j.ok_files.insert((key.dev, key.ino), key);
            }
        }
        self.j.dirs.push((path.clone(), stamp, self.j.files.len()));
        if subdirs.is_empty() {
            return Ok(None);
        }
        Ok(Some(Frame {
            dir,
            path,
            in_secret,
            subdirs,
        }))
    }

    /// The content verdict of a regular file (`true`: a secret) whose fstatat gave `key`:
    /// the remembered one when the key is unchanged, else the rules on its head. A file the
    /// guard may not read is taken for a secret (fail closed).
    fn content(
        &mut self,
        dir: &Dir,
        path: &Path,
        name: &OsStr,
        key: FileKey,
    ) -> Result<bool, SandboxError> {
        if let Ok(v) = verdicts().lock() {
            if let Some((k, secret)) = v.get(&(key.dev, key.ino)) {
                if *k == key {
                    return Ok(*secret);
                }
            }
        }
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let fd = match nix::fcntl::openat(dir.as_fd(), name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::EACCES | Errno::EPERM) => return Ok(true),
            // Gone or replaced by a symlink since the fstatat: denied, as a name that is
            // changing.
            Err(Errno::ENOENT | Errno::ELOOP) => return Ok(true),
            Err(e) => return Err(err(&path.join(name), e)),
        };
        // Replaced or changed since the fstatat (whose link count the caller judges):
        // denied, as a name that is changing; the next use rescans.
        let st: FileStat = fstat(&fd).map_err(|e| err(&path.join(name), e))?;
        if FileKey::from_stat(&st) != key {
            return Ok(true);
        }
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return Ok(true);
        }
        self.buf.clear();
        let mut f = std::fs::File::from(fd);
        let head = u64::try_from(ws_content::HEAD).unwrap_or(u64::MAX);
        (&mut f)
            .take(head)
            .read_to_end(&mut self.buf)
            .map_err(|e| err(&path.join(name), e))?;
        let rel = path.join(name);
        let rel = rel
            .strip_prefix(&self.root)
            .unwrap_or(&rel)
            .to_string_lossy();
        let secret = self
            .rules
            .is_secret(&rel, &name.to_string_lossy(), &self.buf);
        if key.older_than(self.limit) {
            if let Ok(mut v) = verdicts().lock() {
                if v.len() >= MAX_VERDICTS {
                    v.clear();
                }
                v.insert((key.dev, key.ino), (key, secret));
            }
        }
        Ok(secret)
    }

    /// Names of files with other names: all of a file's names are denied when one is a
    /// secret's or when some of its names lie outside the workspace (a hard link is the file
    /// itself, and Landlock grants by inode).
    fn finish(&mut self) {
        for l in std::mem::take(&mut self.links).into_values() {
            if l.secret || (l.paths.len() as u64 + l.hidden) < l.nlink {
                self.j.secrets.extend(l.paths);
            } else {
                self.j.ok_files.insert((l.key.dev, l.key.ino), l.key);
            }
        }
        self.j.secrets.sort();
        self.j.secrets.dedup();
        self.j.built = Instant::now();
    }
}

impl FileRec {
    pub(super) fn name<'a>(&self, names: &'a [u8], start: usize) -> &'a OsStr {
        OsStr::from_bytes(names.get(start..self.name_end).unwrap_or_default())
    }
}
