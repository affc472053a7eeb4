//! Creating the socket file safely. The socket's directory is checked, never changed: every
//! existing component of its path must be owned by us or root, be no symlink, and be writable by nobody else unless sticky (as `/tmp`); anything else is
//! refused with the path and the reason (a guard started on `/tmp/x.sock`
//! used to chmod `/tmp`). Missing directories are created 0700. The socket is 0600 from the
//! moment it appears under its name (bound under a temporary name, chmod-ed, then renamed
//! into place); a stale socket of ours is removed, a live one or another user's left alone.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
use std::path::{Component, Path, PathBuf};

/// Why the socket could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("socket path {0} has no parent directory")]
    NoParent(PathBuf),
    #[error("socket path {0} is not absolute")]
    Relative(PathBuf),
    #[error("unsafe location {path}: {why}; refusing to use it (the guard never changes a directory it did not create)")]
    Unsafe { path: PathBuf, why: String },
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotSocket(PathBuf),
    #[error("{path} is a socket owned by uid {owner}; refusing to replace it")]
    ForeignSocket { path: PathBuf, owner: u32 },
    #[error("another server is already listening on {0}")]
    InUse(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> ListenError + 'a {
    move |source| ListenError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

fn unsafe_at(path: &Path, why: String) -> ListenError {
    ListenError::Unsafe {
        path: path.to_owned(),
        why,
    }
}

/// Why an existing path component cannot be trusted to stay ours, if it cannot.
fn component_problem(m: &fs::Metadata, me: u32) -> Option<String> {
    let owner = m.uid();
    if owner != me && owner != 0 {
        return Some(format!(
            "owned by uid {owner} (only uid {me} or root are trusted)"
        ));
    }
    if m.file_type().is_symlink() {
        return Some("is a symlink (give the real path)".into());
    }
    if !m.is_dir() {
        return Some("is not a directory".into());
    }
    let mode = m.mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Some(format!(
            "is writable by group or others (mode {:o}) without the sticky bit",
            mode & 0o7777
        ));
    }
    None
}

/// Checks every existing component of `dir` (see the module doc) and creates the missing
/// tail 0700. Never chmods or chowns a directory that already existed.
pub fn secure_dir(dir: &Path) -> Result<(), ListenError> {
    if !dir.is_absolute() {
        return Err(ListenError::Relative(dir.into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    let mut cur = PathBuf::from("/");
    let mut missing_from: Option<PathBuf> = None;
    for comp in dir.components() {
        match comp {
            Component::RootDir => continue,
            Component::Normal(c) => cur.push(c),
            _ => return Err(unsafe_at(dir, "has a `.` or `..` component".into())),
        }
        match fs::symlink_metadata(&cur) {
            Ok(m) => {
                if let Some(why) = component_problem(&m, me) {
                    return Err(unsafe_at(&cur, why));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing_from = Some(cur.clone());
                break;
            }
            Err(e) => return Err(io_err("stat", &cur)(e)),
        }
    }
    if missing_from.is_none() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err("create directory", dir))?;
    // We created it: narrowing its mode (an umask may have widened nothing, but a racing
    // creator could have) is ours to do, and it must be 0700 now.
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(io_err("chmod 0700", dir))?;
    let m = fs::symlink_metadata(dir).map_err(io_err("stat", dir))?;
    if let Some(why) = component_problem(&m, me) {
        return Err(unsafe_at(dir, why));
    }
    Ok(())
}

/// Binds `path` in a checked directory, mode 0600 (or 0660 with `group_connect`: the
/// directory's group may connect), and returns the non-blocking std listener.
pub fn bind_secure(path: &Path, group_connect: bool) -> Result<StdListener, ListenError> {
    let mode = if group_connect { 0o660 } else { 0o600 };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| ListenError::NoParent(path.into()))?;
    secure_dir(dir)?;
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            let me = nix::unistd::geteuid().as_raw();
            if m.uid() != me {
                return Err(ListenError::ForeignSocket {
                    path: path.into(),
                    owner: m.uid(),
                });
            }
            if StdStream::connect(path).is_ok() {
                return Err(ListenError::InUse(path.into()));
            }
            fs::remove_file(path).map_err(io_err("remove stale socket", path))?;
        }
        Ok(_) => return Err(ListenError::NotSocket(path.into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("stat", path)(e)),
    }
    // Short: a socket path is limited to 107 bytes, and the temporary name must fit where
    // the final one does.
    let tmp = dir.join(format!(
        ".sg{}.tmp",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    ));
    let listener = StdListener::bind(&tmp).map_err(io_err("bind", &tmp))?;
    let placed = fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
        .map_err(io_err("chmod", &tmp))
        .and_then(|()| fs::rename(&tmp, path).map_err(io_err("rename socket into place", path)));
    if let Err(e) = placed {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    listener
        .set_nonblocking(true)
        .map_err(io_err("set_nonblocking", path))?;
    Ok(listener)
}

/// Removes the socket file at exit if it is still the one we bound (same inode).
pub struct SocketFile {
    path: PathBuf,
    ino: Option<u64>,
}

impl SocketFile {
    pub fn new(path: &Path) -> Self {
        SocketFile {
            path: path.into(),
            ino: fs::symlink_metadata(path).ok().map(|m| m.ino()),
        }
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let (Some(ino), Ok(m)) = (self.ino, fs::symlink_metadata(&self.path)) {
            if m.ino() == ino {
                let _ = fs::remove_file(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_stale_socket_and_refusals() {
        let t = tempfile::tempdir().expect("tempdir");
        let dir = t.path().join("state");
        let sock = dir.join("exec-approvals.sock");
        let l = bind_secure(&sock, false).expect("bind");
        let mode = |p: &Path| fs::metadata(p).expect("stat").mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&sock), 0o600);
        assert!(matches!(
            bind_secure(&sock, false),
            Err(ListenError::InUse(_))
        ));
        drop(l);
        // Stale: the file is still there but nobody listens.
        assert!(fs::symlink_metadata(&sock).is_ok());
        let _l2 = bind_secure(&sock, false).expect("rebinding over a stale socket");

        let real = t.path().join("real");
        fs::create_dir(&real).expect("mkdir");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert!(matches!(
            bind_secure(&link.join("s.sock"), false),
            Err(ListenError::Unsafe { .. })
        ));
        let file = real.join("plain");
        fs::write(&file, b"x").expect("write");
        assert!(matches!(
            bind_secure(&file, false),
            Err(ListenError::NotSocket(_))
        ));
    }

    #[test]
    fn group_connect_makes_the_socket_group_connectable_only() {
        let t = tempfile::tempdir().expect("tempdir");
        let sock = t.path().join("state/exec-approvals.sock");
        let _l = bind_secure(&sock, true).expect("bind");
        assert_eq!(fs::metadata(&sock).expect("stat").mode() & 0o777, 0o660);
        assert_eq!(
            fs::metadata(t.path().join("state")).expect("stat").mode() & 0o777,
            0o700
        );
    }
}
