//! Where OpenClaw keeps the approvals document and how to read and write it byte-compatibly:
//! the SQLite row `exec_approvals_config.current` (OpenClaw ≥ 2026.8.1) or the legacy
//! `exec-approvals.json` (≤ 2026.7.x). The legacy file is never created in the SQLite era:
//! OpenClaw refuses exec approvals while it exists.

use super::document::{ApprovalsDocument, DocumentError};
use super::json_file::{ensure_private_dir, read_json_file, write_json_file, DirAccess};
pub use super::sqlite::normalize_agent_id;
use super::sqlite::{
    assert_not_fenced, open_db, read_row, restrict_db_files, sqlite_row_exists, table_exists,
    write_row, CREATE_TABLE,
};
use rusqlite::{Connection, TransactionBehavior};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Legacy JSON file name inside the state dir.
pub const JSON_FILE: &str = "exec-approvals.json";
/// SQLite database, relative to the state dir.
pub const SQLITE_FILE: &str = "state/openclaw.sqlite";
/// Row key OpenClaw uses.
pub const CONFIG_KEY: &str = "current";

/// Which on-disk format holds the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    /// `exec-approvals.json` (OpenClaw ≤ 2026.7.x).
    Json,
    /// `state/openclaw.sqlite` (OpenClaw ≥ 2026.8.1).
    #[default]
    Sqlite,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("approvals SQLite store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Document(#[from] DocumentError),
    #[error("refusing to use symlinked approvals path {0}")]
    Symlink(PathBuf),
    #[error("refusing to write hard-linked approvals file {0}")]
    HardLink(PathBuf),
    #[error("approvals directory {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error(
        "agent {0:?} is being deleted; OpenClaw forbids changing its approvals until that settles"
    )]
    AgentDeletionInProgress(String),
    #[error("no OpenClaw state dir: OPENCLAW_STATE_DIR and HOME are unset")]
    NoStateDir,
    #[error("legacy {0} exists next to the SQLite store; OpenClaw refuses approvals until `openclaw doctor --fix` migrates it")]
    MigrationRequired(PathBuf),
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Expands a leading `~` (OpenClaw's `expandHomePrefix`) with `home` (the deployment's HOME,
/// from the config); without one the path stays as written.
pub fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    }
}

/// The approvals store of one OpenClaw state dir.
#[derive(Debug, Clone)]
pub struct Store {
    state_dir: PathBuf,
    era: Era,
    /// How the state dir itself is kept (its `state/` subdir is always private).
    access: DirAccess,
}

impl Store {
    /// Opens the store in `state_dir`, detecting the era from what exists there: a stored
    /// SQLite row means SQLite (OpenClaw 2026.7.x also creates the database and an empty
    /// table, so the database alone proves nothing), else an existing JSON file means JSON,
    /// else `if_missing`. A row next to a legacy JSON file (or doctor's import claim) means
    /// OpenClaw refuses approvals until `openclaw doctor --fix`: an error, callers fail closed.
    pub fn open(state_dir: impl Into<PathBuf>, if_missing: Era) -> Result<Self, StoreError> {
        let state_dir = state_dir.into();
        let json = state_dir.join(JSON_FILE);
        let claim = state_dir.join(format!("{JSON_FILE}.doctor-importing"));
        let json_exists = exists(&json)?;
        let era = if sqlite_row_exists(&state_dir.join(SQLITE_FILE))? {
            if json_exists || exists(&claim)? {
                return Err(StoreError::MigrationRequired(json));
            }
            Era::Sqlite
        } else if json_exists {
            Era::Json
        } else {
            if_missing
        };
        Ok(Self {
            state_dir,
            era,
            access: DirAccess::Private,
        })
    }

    pub fn era(&self) -> Era {
        self.era
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The file that holds the document in this era.
    pub fn path(&self) -> PathBuf {
        match self.era {
            Era::Json => self.state_dir.join(JSON_FILE),
            Era::Sqlite => self.state_dir.join(SQLITE_FILE),
        }
    }

    /// OpenClaw's default socket path for this state dir.
    pub fn default_socket_path(&self) -> PathBuf {
        self.state_dir.join("exec-approvals.sock")
    }

    /// The stored document text, or `None` when there is none yet.
    pub fn read_raw(&self) -> Result<Option<String>, StoreError> {
        match self.era {
            Era::Json => read_json_file(&self.path()),
            Era::Sqlite => {
                let path = self.path();
                if !exists(&path)? {
                    return Ok(None);
                }
                let conn = open_db(&path)?;
                if !table_exists(&conn)? {
                    return Ok(None);
                }
                Ok(read_row(&conn)?)
            }
        }
    }

    /// The stored document, normalised, or `None` when there is none yet. SQLite rows must
    /// pass OpenClaw's persisted schema; JSON files are normalised leniently as OpenClaw
    /// 2026.7.x reads them (invalid values dropped). Invalid JSON or a version other than 1
    /// is an error in both eras, where 2026.7.x would silently use `full`: callers fail closed.
    pub fn read(&self) -> Result<Option<ApprovalsDocument>, StoreError> {
        match self.read_raw()? {
            Some(raw) => Ok(Some(self.parse(&raw)?)),
            None => Ok(None),
        }
    }

    fn parse(&self, raw: &str) -> Result<ApprovalsDocument, DocumentError> {
        match self.era {
            Era::Json => ApprovalsDocument::parse_lenient(raw),
            Era::Sqlite => ApprovalsDocument::parse_persisted(raw),
        }
    }

    /// Replaces the stored document (whatever was stored before, even a corrupt one).
    pub fn write(&self, doc: &ApprovalsDocument) -> Result<(), StoreError> {
        let raw = doc.to_json_pretty()?;
        match self.era {
            Era::Json => write_json_file(&self.path(), &raw, self.access),
            Era::Sqlite => self
                .sqlite_txn(|_current| Ok((doc.clone(), true)))
                .map(|_| ()),
        }
    }

    /// Read-modify-write: `change` gets the current document (an empty one when none is
    /// stored) and returns whether it changed it. SQLite: one `BEGIN IMMEDIATE` transaction,
    /// so no concurrent OpenClaw write is lost. Returns the document as stored afterwards.
    pub fn update<F>(&self, change: F) -> Result<ApprovalsDocument, StoreError>
    where
        F: FnOnce(&mut ApprovalsDocument) -> Result<bool, StoreError>,
    {
        match self.era {
            Era::Json => {
                let path = self.path();
                let mut doc = match read_json_file(&path)? {
                    Some(raw) => self.parse(&raw)?,
                    None => ApprovalsDocument::default(),
                };
                if change(&mut doc)? {
                    write_json_file(&path, &doc.to_json_pretty()?, self.access)?;
                }
                Ok(doc)
            }
            Era::Sqlite => self.update_sqlite(change),
        }
    }

    /// Keeps the state dir open to its group (read and search, at most 2750) instead of
    /// 0700: where the deployment shares it with the approvals socket's group
    /// (`[socket] group_connect`). The database and the JSON file stay 0600.
    pub fn shared_with_group(mut self, yes: bool) -> Self {
        self.access = if yes {
            DirAccess::Group
        } else {
            DirAccess::Private
        };
        self
    }

    /// Opens (creating 0600 in a 0700 dir if needed) the database for a write.
    fn open_for_write(&self) -> Result<(Connection, PathBuf), StoreError> {
        let path = self.path();
        let dir = path.parent().unwrap_or(&self.state_dir).to_path_buf();
        ensure_private_dir(&self.state_dir, self.access)?;
        if dir != self.state_dir {
            ensure_private_dir(&dir, DirAccess::Private)?;
        }
        if !exists(&path)? {
            // Create the file 0600 ourselves so SQLite (and its -wal/-shm, which copy the
            // database's mode) never exists with a wider mode.
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(io_err(&path))?;
        }
        Ok((open_db(&path)?, path))
    }

    fn update_sqlite<F>(&self, change: F) -> Result<ApprovalsDocument, StoreError>
    where
        F: FnOnce(&mut ApprovalsDocument) -> Result<bool, StoreError>,
    {
        self.sqlite_txn(|current| {
            let mut doc = current?;
            let changed = change(&mut doc)?;
            Ok((doc, changed))
        })
    }

    /// One `BEGIN IMMEDIATE` transaction: `next` gets the stored document (empty when there is
    /// no row, an error when the row is malformed) and returns the document and whether to
    /// store it. Like OpenClaw, refuses to change the policy of an agent being deleted.
    fn sqlite_txn<F>(&self, next: F) -> Result<ApprovalsDocument, StoreError>
    where
        F: FnOnce(
            Result<ApprovalsDocument, StoreError>,
        ) -> Result<(ApprovalsDocument, bool), StoreError>,
    {
        let (mut conn, path) = self.open_for_write()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(CREATE_TABLE)?;
        let current_raw = read_row(&tx)?;
        let current = match &current_raw {
            Some(raw) => ApprovalsDocument::parse_persisted(raw).map_err(StoreError::from),
            None => Ok(ApprovalsDocument::default()),
        };
        // OpenClaw compares against its fail-closed fallback (no agents) for a malformed row.
        let before = current
            .as_ref()
            .map(|d| d.agents.clone())
            .unwrap_or_default();
        let (doc, store) = next(current)?;
        if store {
            let raw = doc.to_json_pretty()?;
            if current_raw.as_deref() != Some(raw.as_str()) {
                assert_not_fenced(&tx, &before, &doc.agents)?;
                write_row(&tx, &doc, &raw)?;
            }
        }
        tx.commit()?;
        drop(conn);
        restrict_db_files(&path)?;
        Ok(doc)
    }
}

pub(super) fn exists(path: &Path) -> Result<bool, StoreError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(path)(e)),
    }
}
