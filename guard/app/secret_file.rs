//! Reading a deployment secret (a token) from a file the deployment gives: the trimmed text,
//! refused when empty or when others (not the owner or the group) may read or write it, since
//! a token others can read authenticates anyone who reads it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a secret file was refused.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is empty")]
    Empty(PathBuf),
    #[error("{path} is readable or writable by others (mode {mode:o}); chmod o-rwx it")]
    Exposed { path: PathBuf, mode: u32 },
}

/// The secret in `path`, trimmed.
pub fn read_secret(path: &Path) -> Result<String, SecretFileError> {
    let read = |source| SecretFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read)?;
    if meta.mode() & 0o007 != 0 {
        return Err(SecretFileError::Exposed {
            path: path.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(SecretFileError::Empty(path.to_path_buf()));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn reads_trimmed_and_refuses_exposed_or_empty_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, " tok\n").unwrap();
        for (mode, ok) in [
            (0o600, true),
            (0o440, true),
            (0o640, true),
            (0o644, false),
            (0o602, false),
        ] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            match read_secret(&f) {
                Ok(t) => assert!(ok && t == "tok", "mode {mode:o}"),
                Err(e) => assert!(
                    !ok && matches!(e, SecretFileError::Exposed { .. }),
                    "mode {mode:o}: {e}"
                ),
            }
        }
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&f, "\n").unwrap();
        assert!(matches!(read_secret(&f), Err(SecretFileError::Empty(_))));
        assert!(matches!(
            read_secret(&dir.path().join("none")),
            Err(SecretFileError::Read { .. })
        ));
    }
}
