//! The grants table, in the inbox's SQLite database so the serving guard, the web prompt and
//! the `grants` command line (another process) see one list. Spending a use is one
//! `BEGIN IMMEDIATE` transaction that re-checks every grant it spends: two requests cannot
//! both take the last use, and a grant revoked a moment ago covers nothing.

use super::shape::GrantSpec;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The table; created beside the inbox's own, so an older database gains it on open.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS grants (
    id          TEXT PRIMARY KEY,
    spec_json   TEXT NOT NULL,
    made_by     TEXT NOT NULL,
    inbox_id    TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    expires_ms  INTEGER,
    uses_left   INTEGER,
    revoked_ms  INTEGER,
    revoked_by  TEXT
);
CREATE INDEX IF NOT EXISTS grants_live ON grants(revoked_ms, created_ms);
";

/// Errors of the grants table.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error("grants store: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("grants store: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no such grant: {0}")]
    UnknownId(String),
    #[error("grant {0} is already revoked")]
    AlreadyRevoked(String),
    #[error("grants store lock poisoned")]
    Poisoned,
    /// The fleet database refused a statement.
    #[error("grants store: {0}")]
    Db(String),
    /// The fleet database cannot be reached: no grant covers anything until it can.
    #[error("grants store: {0}")]
    Unavailable(#[from] crate::inbox::pg_side::Unavailable),
}

/// One stored grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub id: String,
    pub spec: GrantSpec,
    /// Who made it (`web:<name>/…@<address>`).
    pub made_by: String,
    /// The inbox entry it was made on, and that request's own id.
    pub inbox_id: String,
    pub request_id: String,
    pub created_ms: u64,
    pub expires_ms: Option<u64>,
    pub uses_left: Option<u32>,
    pub revoked_ms: Option<u64>,
    pub revoked_by: Option<String>,
    /// The guard whose agent it covers, in a fleet (None: the one guard of this database).
    pub guard: Option<String>,
}

impl Grant {
    /// A new grant, unspent and unrevoked, with a fresh id: made by `made_by` on inbox entry
    /// `inbox_id` (request `request_id`) at `now`, for `guard` in a fleet.
    pub fn new(
        spec: &GrantSpec,
        (made_by, inbox_id, request_id): (&str, &str, &str),
        now: u64,
        guard: Option<String>,
    ) -> Grant {
        Grant {
            id: format!("g-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            spec: spec.clone(),
            made_by: made_by.to_owned(),
            inbox_id: inbox_id.to_owned(),
            request_id: request_id.to_owned(),
            created_ms: now,
            expires_ms: spec.expires_ms,
            uses_left: spec.uses,
            revoked_ms: None,
            revoked_by: None,
            guard,
        }
    }

    /// Live at `now`: not revoked, not expired, not used up.
    pub fn live(&self, now: u64) -> bool {
        self.revoked_ms.is_none()
            && self.expires_ms.is_none_or(|e| e > now)
            && self.uses_left.is_none_or(|u| u > 0)
    }
}

/// A connection to the grants table.
#[derive(Debug)]
pub struct GrantStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

const COLUMNS: &str = "id, spec_json, made_by, inbox_id, request_id, created_ms, expires_ms, \
                       uses_left, revoked_ms, revoked_by";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Grant> {
    let opt_u64 = |v: Option<i64>| v.map(|x| x.max(0) as u64);
    let spec: String = r.get(1)?;
    let spec = serde_json::from_str(&spec).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(Grant {
        id: r.get(0)?,
        spec,
        made_by: r.get(2)?,
        inbox_id: r.get(3)?,
        request_id: r.get(4)?,
        created_ms: opt_u64(r.get(5)?).unwrap_or(0),
        expires_ms: opt_u64(r.get(6)?),
        uses_left: r
            .get::<_, Option<i64>>(7)?
            .map(|u| u.clamp(0, i64::from(u32::MAX)) as u32),
        revoked_ms: opt_u64(r.get(8)?),
        revoked_by: r.get(9)?,
        guard: None,
    })
}

impl GrantStore {
    /// Opens the table in the database at `path` (the inbox's), creating it if missing.
    pub fn open(path: &Path) -> Result<GrantStore, GrantError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        Ok(GrantStore {
            conn: Mutex::new(conn),
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, GrantError> {
        self.conn.lock().map_err(|_| GrantError::Poisoned)
    }

    /// Stores a new grant made by `made_by` on inbox entry `inbox_id` (request `request_id`).
    pub fn insert(
        &self,
        spec: &GrantSpec,
        made_by: &str,
        inbox_id: &str,
        request_id: &str,
        now: u64,
    ) -> Result<Grant, GrantError> {
        let g = Grant::new(spec, (made_by, inbox_id, request_id), now, None);
        self.conn()?.execute(
            &format!("INSERT INTO grants ({COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,NULL,NULL)"),
            params![
                g.id,
                serde_json::to_string(&g.spec)?,
                g.made_by,
                g.inbox_id,
                g.request_id,
                now as i64,
                g.expires_ms.map(|e| e as i64),
                g.uses_left.map(i64::from),
            ],
        )?;
        Ok(g)
    }

    /// One grant by id, live or not.
    pub fn get(&self, id: &str) -> Result<Option<Grant>, GrantError> {
        self.conn()?
            .query_row(
                &format!("SELECT {COLUMNS} FROM grants WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(GrantError::from)
    }

    /// Every grant live at `now`, oldest first.
    pub fn live(&self, now: u64) -> Result<Vec<Grant>, GrantError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM grants
             WHERE revoked_ms IS NULL AND (expires_ms IS NULL OR expires_ms > ?1)
               AND (uses_left IS NULL OR uses_left > 0)
             ORDER BY created_ms, id"
        ))?;
        let rows = stmt.query_map([now as i64], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Revokes `id` at once: the next request it would have covered is asked.
    pub fn revoke(&self, id: &str, by: &str, now: u64) -> Result<Grant, GrantError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let revoked: Option<Option<i64>> = tx
            .query_row("SELECT revoked_ms FROM grants WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        match revoked {
            None => return Err(GrantError::UnknownId(id.to_owned())),
            Some(Some(_)) => return Err(GrantError::AlreadyRevoked(id.to_owned())),
            Some(None) => {}
        }
        tx.execute(
            "UPDATE grants SET revoked_ms = ?2, revoked_by = ?3 WHERE id = ?1",
            params![id, now as i64, by],
        )?;
        tx.commit()?;
        drop(conn);
        self.get(id)?
            .ok_or_else(|| GrantError::UnknownId(id.to_owned()))
    }

    /// Spends one use of each of `ids`, all or none: false when any is no longer live at
    /// `now` (revoked, expired, or its last use taken by another request first).
    pub fn spend(&self, ids: &[String], now: u64) -> Result<bool, GrantError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for id in ids {
            let n = tx.execute(
                "UPDATE grants SET uses_left = CASE WHEN uses_left IS NULL THEN NULL
                                                    ELSE uses_left - 1 END
                 WHERE id = ?1 AND revoked_ms IS NULL
                   AND (expires_ms IS NULL OR expires_ms > ?2)
                   AND (uses_left IS NULL OR uses_left > 0)",
                params![id, now as i64],
            )?;
            if n != 1 {
                // Dropping the transaction rolls back the uses already taken.
                return Ok(false);
            }
        }
        tx.commit()?;
        Ok(true)
    }
}
