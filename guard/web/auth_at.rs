//! Where a guard's sign-in state lives: login links and passkeys in files of its state dir,
//! or, in a fleet, in the database its guards share (`pg_auth`). The state dir stays the
//! home of what is only this guard's: its base URL and the newest link for its owner.

use super::pg_auth::PgAuth;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct AuthAt {
    pub dir: PathBuf,
    /// The fleet's sign-in tables (None: this guard's files).
    pub fleet: Option<Arc<PgAuth>>,
}

impl AuthAt {
    /// One guard's files in `dir`.
    pub fn local(dir: &Path) -> AuthAt {
        AuthAt {
            dir: dir.to_owned(),
            fleet: None,
        }
    }

    /// A fleet's tables, with `dir` for this guard's own files.
    pub fn fleet(dir: &Path, db: Arc<PgAuth>) -> AuthAt {
        AuthAt {
            dir: dir.to_owned(),
            fleet: Some(db),
        }
    }
}
