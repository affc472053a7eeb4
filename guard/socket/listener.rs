//! Creating the socket file safely: the directory 0700 (a symlinked directory is refused),
//! the socket 0600 from the moment it appears under its name (bound under a temporary name,
//! chmod-ed, then renamed into place), a stale socket removed, a live one left alone.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
use std::path::{Path, PathBuf};

/// Why the socket could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("socket path {0} has no parent directory")]
    NoParent(PathBuf),
    #[error("socket directory {0} is a symlink; refusing to use it")]
    SymlinkDir(PathBuf),
    #[error("socket directory {0} is not a directory")]
    NotDir(PathBuf),
    #[error("socket directory {path} is owned by uid {owner}, not by us ({me})")]
    ForeignDir { path: PathBuf, owner: u32, me: u32 },
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotSocket(PathBuf),
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

/// Makes `dir` a 0700 directory we own, creating it (and missing parents) if needed.
pub fn secure_dir(dir: &Path) -> Result<(), ListenError> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => return Err(ListenError::SymlinkDir(dir.into())),
        Ok(m) if !m.is_dir() => return Err(ListenError::NotDir(dir.into())),
        Ok(m) => {
            let me = nix::unistd::geteuid().as_raw();
            if m.uid() != me {
                return Err(ListenError::ForeignDir {
                    path: dir.into(),
                    owner: m.uid(),
                    me,
                });
            }
            if m.mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                    .map_err(io_err("chmod 0700", dir))?;
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io_err("create directory", dir))?;
            // `recursive` applies the mode to each new dir, but an umask may have narrowed it.
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(io_err("chmod 0700", dir))?;
        }
        Err(e) => return Err(io_err("stat", dir)(e)),
    }
    Ok(())
}

/// Binds `path` (0600, dir 0700) and returns the non-blocking std listener.
pub fn bind_secure(path: &Path) -> Result<StdListener, ListenError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| ListenError::NoParent(path.into()))?;
    secure_dir(dir)?;
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if StdStream::connect(path).is_ok() {
                return Err(ListenError::InUse(path.into()));
            }
            fs::remove_file(path).map_err(io_err("remove stale socket", path))?;
        }
        Ok(_) => return Err(ListenError::NotSocket(path.into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("stat", path)(e)),
    }
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("sock"),
        uuid::Uuid::new_v4().simple()
    ));
    let listener = StdListener::bind(&tmp).map_err(io_err("bind", &tmp))?;
    let placed = fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))
        .map_err(io_err("chmod 0600", &tmp))
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
        let l = bind_secure(&sock).expect("bind");
        let mode = |p: &Path| fs::metadata(p).expect("stat").mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&sock), 0o600);
        assert!(matches!(bind_secure(&sock), Err(ListenError::InUse(_))));
        drop(l);
        // Stale: the file is still there but nobody listens.
        assert!(fs::symlink_metadata(&sock).is_ok());
        let _l2 = bind_secure(&sock).expect("rebinding over a stale socket");

        let real = t.path().join("real");
        fs::create_dir(&real).expect("mkdir");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert!(matches!(
            bind_secure(&link.join("s.sock")),
            Err(ListenError::SymlinkDir(_))
        ));
        let file = real.join("plain");
        fs::write(&file, b"x").expect("write");
        assert!(matches!(bind_secure(&file), Err(ListenError::NotSocket(_))));
    }
}
