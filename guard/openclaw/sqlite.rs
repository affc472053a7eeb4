//! OpenClaw's SQLite approvals row: the table, the row and its projection columns, and the
//! agent-deletion fence, exactly as OpenClaw 2026.9.6 writes them
//! (src/infra/exec-approvals-sqlite.ts).

use super::document::{AgentPolicy, ApprovalsDocument};
use super::store::{exists, io_err, StoreError, CONFIG_KEY};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// OpenClaw 2026.9.6's table, verbatim (`.schema exec_approvals_config` of a store written by
/// `openclaw approvals set`). OpenClaw migrates a database that holds only this table.
pub(super) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS exec_approvals_config (
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

pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
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
pub(super) fn assert_not_fenced(
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

/// True when the database exists and holds the `current` row; opened read-only so detection
/// never creates anything.
pub(super) fn sqlite_row_exists(path: &Path) -> Result<bool, StoreError> {
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

pub(super) fn open_db(path: &Path) -> Result<Connection, StoreError> {
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

pub(super) fn table_exists(conn: &Connection) -> Result<bool, StoreError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'exec_approvals_config'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub(super) fn read_row(conn: &Connection) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT raw_json FROM exec_approvals_config WHERE config_key = ?1",
            [CONFIG_KEY],
            |row| row.get::<_, String>(0),
        )
        .optional()?)
}

/// Upserts the row with the projection columns computed as OpenClaw's `projectionValues`.
pub(super) fn write_row(
    conn: &Connection,
    doc: &ApprovalsDocument,
    raw: &str,
) -> Result<(), StoreError> {
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
pub(super) fn restrict_db_files(path: &Path) -> Result<(), StoreError> {
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
