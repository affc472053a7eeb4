//! Where OpenClaw keeps the approvals document and how to read and write it byte-compatibly:
//! the SQLite row `exec_approvals_config.current` (OpenClaw ≥ 2026.8.1) or the legacy
//! `exec-approvals.json` (≤ 2026.7.x). The legacy file is never created in the SQLite era:
//! OpenClaw refuses exec approvals while it exists.

use super::document::{AgentPolicy, ApprovalsDocument, DocumentError};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Legacy JSON file name inside the state dir.
pub const JSON_FILE: &str = "exec-approvals.json";
/// SQLite database, relative to the state dir.
pub const SQLITE_FILE: &str = "state/openclaw.sqlite";
/// Row key OpenClaw uses.
pub const CONFIG_KEY: &str = "current";

/// OpenClaw 2026.9.6's table, verbatim (`.schema exec_approvals_config` of a store written by
/// `openclaw approvals set`). OpenClaw migrates a database that holds only this table.
const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS exec_approvals_config (
  config_key TEXT NOT NULL PRIMARY KEY,
  raw_json TEXT NOT NULL,
  socket_path TEXT,
  has_socket_token INTEGER NOT NULL,
  default_security TEXT,
  default_ask TEXT,
  default_ask_fallback TEXT,
  auto_allow_skills INTEGER,
  agent_count INTEGER NOT NULL,
  allowlist_count INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
) STRICT";

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

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Expands a leading `~` (OpenClaw's `expandHomePrefix`) with `$HOME`.
pub fn expand_home(path: &str) -> PathBuf {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => PathBuf::from(home),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    }
}

/// OpenClaw's state dir: an explicit override, else `$OPENCLAW_STATE_DIR` (trimmed, `~`
/// expanded), else `~/.openclaw`.
pub fn state_dir(explicit: Option<&Path>) -> Result<PathBuf, StoreError> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    if let Some(env) = std::env::var("OPENCLAW_STATE_DIR")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    {
        return Ok(expand_home(&env));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".openclaw")),
        None => Err(StoreError::NoStateDir),
    }
}

/// The approvals store of one OpenClaw state dir.
#[derive(Debug, Clone)]
pub struct Store {
    state_dir: PathBuf,
    era: Era,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
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
        Ok(Self { state_dir, era })
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
            Era::Json => write_json_file(&self.path(), &raw),
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
                    write_json_file(&path, &doc.to_json_pretty()?)?;
                }
                Ok(doc)
            }
            Era::Sqlite => self.update_sqlite(change),
        }
    }

    /// Opens (creating 0600 in a 0700 dir if needed) the database for a write.
    fn open_for_write(&self) -> Result<(Connection, PathBuf), StoreError> {
        let path = self.path();
        let dir = path.parent().unwrap_or(&self.state_dir).to_path_buf();
        ensure_private_dir(&self.state_dir)?;
        ensure_private_dir(&dir)?;
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

/// OpenClaw's `normalizeAgentId`: the canonical id its agent tables use.
pub fn normalize_agent_id(value: &str) -> String {
    let trimmed = value.trim();
    let lower = trimmed.to_lowercase();
    let valid = trimmed.len() <= 64
        && trimmed
            .bytes()
            .enumerate()
            .all(|(i, b)| b.is_ascii_alphanumeric() || (i > 0 && (b == b'_' || b == b'-')))
        && !trimmed.is_empty();
    if valid {
        return lower;
    }
    let mut out = String::new();
    let mut in_invalid = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            out.push(c);
            in_invalid = false;
        } else if !in_invalid {
            out.push('-');
            in_invalid = true;
        }
    }
    let id: String = out.trim_matches('-').chars().take(64).collect();
    if id.is_empty() {
        super::document::DEFAULT_AGENT_ID.to_string()
    } else {
        id
    }
}

/// `assertExecApprovalsMutationAllowed`: an agent listed in `agent_deletion_journal` is being
/// deleted; its policy may not change until the deletion settles.
fn assert_not_fenced(
    conn: &Connection,
    before: &BTreeMap<String, AgentPolicy>,
    after: &BTreeMap<String, AgentPolicy>,
) -> Result<(), StoreError> {
    let journal = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_deletion_journal'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if !journal {
        return Ok(());
    }
    for key in before.keys().chain(after.keys()) {
        if before.get(key) == after.get(key) {
            continue;
        }
        let fenced = conn
            .query_row(
                "SELECT 1 FROM agent_deletion_journal WHERE agent_id = ?1",
                [normalize_agent_id(key)],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if fenced {
            return Err(StoreError::AgentDeletionInProgress(key.clone()));
        }
    }
    Ok(())
}

fn exists(path: &Path) -> Result<bool, StoreError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// True when the database exists and holds the `current` row; opened read-only so detection
/// never creates anything.
fn sqlite_row_exists(path: &Path) -> Result<bool, StoreError> {
    if !exists(path)? {
        return Ok(false);
    }
    if fs::symlink_metadata(path)
        .map_err(io_err(path))?
        .file_type()
        .is_symlink()
    {
        return Err(StoreError::Symlink(path.to_path_buf()));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(table_exists(&conn)? && read_row(&conn)?.is_some())
}

fn open_db(path: &Path) -> Result<Connection, StoreError> {
    if fs::symlink_metadata(path)
        .map_err(io_err(path))?
        .file_type()
        .is_symlink()
    {
        return Err(StoreError::Symlink(path.to_path_buf()));
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

fn table_exists(conn: &Connection) -> Result<bool, StoreError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'exec_approvals_config'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

fn read_row(conn: &Connection) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT raw_json FROM exec_approvals_config WHERE config_key = ?1",
            [CONFIG_KEY],
            |row| row.get::<_, String>(0),
        )
        .optional()?)
}

/// Upserts the row with the projection columns computed as OpenClaw's `projectionValues`.
fn write_row(conn: &Connection, doc: &ApprovalsDocument, raw: &str) -> Result<(), StoreError> {
    let defaults = &doc.defaults;
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    conn.execute(
        "INSERT INTO exec_approvals_config (config_key, raw_json, socket_path, has_socket_token,
           default_security, default_ask, default_ask_fallback, auto_allow_skills, agent_count,
           allowlist_count, updated_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (config_key) DO UPDATE SET raw_json = excluded.raw_json,
           socket_path = excluded.socket_path, has_socket_token = excluded.has_socket_token,
           default_security = excluded.default_security, default_ask = excluded.default_ask,
           default_ask_fallback = excluded.default_ask_fallback,
           auto_allow_skills = excluded.auto_allow_skills, agent_count = excluded.agent_count,
           allowlist_count = excluded.allowlist_count, updated_at_ms = excluded.updated_at_ms",
        params![
            CONFIG_KEY,
            raw,
            doc.socket.path,
            i64::from(doc.socket_token().is_some()),
            defaults.security.map(|s| s.as_str()),
            defaults.ask.map(|a| a.as_str()),
            defaults.ask_fallback.map(|s| s.as_str()),
            defaults.auto_allow_skills.map(i64::from),
            count(doc.agents.len()),
            count(doc.allowlist_count()),
            now_ms(),
        ],
    )?;
    Ok(())
}

/// Keeps the database and its side files 0600.
fn restrict_db_files(path: &Path) -> Result<(), StoreError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match fs::symlink_metadata(&file) {
            Ok(meta) if meta.file_type().is_file() && meta.mode() & 0o777 != 0o600 => {
                fs::set_permissions(&file, fs::Permissions::from_mode(0o600))
                    .map_err(io_err(&file))?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&file)(e)),
        }
    }
    Ok(())
}

/// Creates `dir` 0700 if missing; refuses a symlink or a non-directory; tightens it to 0700.
fn ensure_private_dir(dir: &Path) -> Result<(), StoreError> {
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
        Ok(_) => {}
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io_err(dir))
}

/// Reads the JSON file without following a symlink.
fn read_json_file(path: &Path) -> Result<Option<String>, StoreError> {
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
fn write_json_file(path: &Path, raw: &str) -> Result<(), StoreError> {
    let dir = path.parent().ok_or(StoreError::NoStateDir)?;
    ensure_private_dir(dir)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids_normalise_like_openclaw() {
        for (input, want) in [
            ("main", "main"),
            (" Ops ", "ops"),
            ("a_b-c", "a_b-c"),
            ("*", "main"),
            ("", "main"),
            ("My Agent!", "my-agent"),
            ("-x-", "x"),
            ("ünï", "n"),
        ] {
            assert_eq!(normalize_agent_id(input), want, "{input:?}");
        }
        assert_eq!(normalize_agent_id(&"a".repeat(70)).len(), 64);
    }
}
