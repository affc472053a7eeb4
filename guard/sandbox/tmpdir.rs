//! The private temp directory of a `workspace-write` run, removed when dropped.

use super::SandboxError;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// A 0700 directory under the system temp dir, unique per resolve.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    pub fn create() -> Result<Self, SandboxError> {
        let path = std::env::temp_dir().join(format!("sanctum-{}", uuid::Uuid::new_v4()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| SandboxError::Profile(format!("private tmp {}: {e}", path.display())))?;
        Ok(PrivateTmp { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // Best effort: a confined process may have left read-only entries; ignore errors.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
