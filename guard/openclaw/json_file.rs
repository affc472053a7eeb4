//! The legacy `exec-approvals.json` file (OpenClaw ≤ 2026.7.x) on disk: read without
//! following symlinks, written atomically 0600 in a 0700 dir like `writeExecApprovalsRaw`.

use super::store::{io_err, StoreError};
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// How far [`ensure_private_dir`] tightens a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DirAccess {
    /// 0700, as OpenClaw keeps its state dir.
    Private,
    /// The deployment shares the dir with a group (the approvals socket's, `group_connect`):
    /// group read and search, and a setgid bit it already has, are kept; nothing else is.
    Group,
}

/// Creates `dir` 0700 if missing; refuses a symlink or a non-directory; tightens it to 0700
/// (with [`DirAccess::Group`], to at most 2750, never wider than it was).
pub(super) fn ensure_private_dir(dir: &Path, access: DirAccess) -> Result<(), StoreError> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io_err(dir))?;
        }
        Err(e) => return Err(io_err(dir)(e)),
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(StoreError::Symlink(dir.to_path_buf()))
        }
        Ok(meta) if !meta.is_dir() => return Err(StoreError::NotADirectory(dir.to_path_buf())),
        Ok(meta) if access == DirAccess::Group => {
            let want = (meta.mode() & 0o2750) | 0o700;
            if meta.mode() & 0o7777 != want {
                fs::set_permissions(dir, fs::Permissions::from_mode(want)).map_err(io_err(dir))?;
            }
            return Ok(());
        }
        Ok(_) => {}
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io_err(dir))
}

/// Reads the JSON file without following a symlink.
pub(super) fn read_json_file(path: &Path) -> Result<Option<String>, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(StoreError::Symlink(path.to_path_buf()))
        }
        Err(e) => return Err(io_err(path)(e)),
    };
    let mut raw = String::new();
    file.read_to_string(&mut raw).map_err(io_err(path))?;
    Ok(Some(raw))
}

/// Atomic write as OpenClaw's `writeExecApprovalsRaw`: dir 0700, a 0600 temp file created
/// exclusively, fsync, rename over the target, which must not be a symlink or hard link.
pub(super) fn write_json_file(path: &Path, raw: &str, access: DirAccess) -> Result<(), StoreError> {
    let dir = path.parent().ok_or(StoreError::NoStateDir)?;
    ensure_private_dir(dir, access)?;
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(StoreError::Symlink(path.to_path_buf()))
        }
        Ok(meta) if meta.nlink() > 1 => return Err(StoreError::HardLink(path.to_path_buf())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path)(e)),
    }
    let temp = dir.join(format!(
        ".exec-approvals.{}.{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)
            .map_err(io_err(&temp))?;
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(io_err(&temp))?;
        file.write_all(raw.as_bytes()).map_err(io_err(&temp))?;
        file.sync_all().map_err(io_err(&temp))?;
        fs::rename(&temp, path).map_err(io_err(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
