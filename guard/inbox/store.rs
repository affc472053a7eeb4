//! The inbox's durable store: one SQLite table of requests and their state, shared by the
//! serving guard and the `inbox` command line in another process. Every state change is one
//! `BEGIN IMMEDIATE` transaction that re-checks the state, so the first decision wins and a
//! request is resolved exactly once.

use super::{Entry, InboxError, Resolved, State, StateFilter};
use crate::audit::event::{AuditEvent, InboxPending, InboxResolved};
use crate::audit::AuditLog;
use crate::policy::request::{DecidedBy, Decision, DecisionKind, Request};
use crate::policy::verdict::Verdict;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::fs::OpenOptions;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS requests (
    id            TEXT PRIMARY KEY,
    request_json  TEXT NOT NULL,
    verdict_json  TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    deadline_ms   INTEGER NOT NULL,
    state         TEXT NOT NULL CHECK (state IN
                    ('pending','approved','denied','expired','resolved-elsewhere','cancelled')),
    decision_json TEXT,
    resolved_ms   INTEGER
);
CREATE INDEX IF NOT EXISTS requests_state ON requests(state, created_ms);
CREATE INDEX IF NOT EXISTS requests_resolved
    ON requests(COALESCE(resolved_ms, created_ms) DESC, id) WHERE state <> 'pending';
";

/// Databases created before the `cancelled` state have a CHECK that refuses it: the table
/// is rebuilt under the new schema, rows kept, in one transaction.
const MIGRATE_CANCELLED: &str = "
BEGIN IMMEDIATE;
ALTER TABLE requests RENAME TO requests_old;
DROP INDEX IF EXISTS requests_state;
";

/// What a resolution is, which fixes the checks it passes and the state it leaves.
pub(crate) enum Resolution {
    /// A person decided: offered/hash/deadline are checked.
    Human {
        decision: Decision,
        expect_hash: Option<String>,
    },
    /// The deadline passed (or the guard restarted): deny, state expired.
    Expire { reason: String },
    /// The client went away or another channel resolved it.
    Cancel { state: State, reason: String },
}

/// Epoch milliseconds now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The fallback's answer: an explicit deny with a reason, never silence.
pub fn fallback_deny(reason: &str) -> Decision {
    Decision {
        kind: DecisionKind::Deny,
        reason: Some(reason.to_owned()),
        by: DecidedBy::Fallback,
        at_ms: now_ms(),
    }
}

/// A connection to the inbox database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    audit: Option<AuditLog>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> InboxError + '_ {
    move |source| InboxError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Store {
    /// Opens (creating: dir 0700, file 0600) the database at `path` in WAL mode with
    /// `synchronous=FULL`. Decisions are recorded in `audit` when given.
    pub fn open(path: &Path, audit: Option<AuditLog>) -> Result<Store, InboxError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(io_err(dir))?;
            }
        }
        // Create the file 0600 ourselves: SQLite gives the -wal/-shm files the same mode.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(io_err(path))?;
        let meta = file.metadata().map_err(io_err(path))?;
        if meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(io_err(path))?;
        }
        drop(file);
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(InboxError::Storage(format!(
                "journal_mode WAL refused (got {mode})"
            )));
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(SCHEMA)?;
        // The bounded grants live beside the requests they were made on; an older database
        // gains the table and keeps its rows.
        conn.execute_batch(crate::grants::store::SCHEMA)?;
        let sql: String = conn.query_row(
            "SELECT sql FROM sqlite_master WHERE type='table' AND name='requests'",
            [],
            |r| r.get(0),
        )?;
        if !sql.contains("'cancelled'") {
            let batch = format!(
                "{MIGRATE_CANCELLED}{SCHEMA}
                 INSERT INTO requests SELECT * FROM requests_old;
                 DROP TABLE requests_old;
                 COMMIT;"
            );
            if let Err(e) = conn.execute_batch(&batch) {
                let _ = conn.execute_batch("ROLLBACK;");
                return Err(e.into());
            }
        }
        Ok(Store {
            conn,
            path: path.to_owned(),
            audit,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Changes when another connection commits (SQLite's `PRAGMA data_version`): the cheap
    /// test the serving inbox polls before looking at the rows it waits on.
    pub fn data_version(&self) -> Result<i64, InboxError> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// Inserts a new pending entry (and its `pending` audit record).
    pub(crate) fn insert(&mut self, e: &Entry) -> Result<(), InboxError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO requests (id, request_json, verdict_json, request_hash, created_ms,
                                   deadline_ms, state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending')",
            params![
                e.id,
                serde_json::to_string(&e.request)?,
                serde_json::to_string(&e.verdict)?,
                e.request_hash,
                e.created_ms as i64,
                e.deadline_ms as i64,
            ],
        )?;
        if let Some(audit) = &self.audit {
            audit.append(AuditEvent::InboxPending(InboxPending {
                id: e.id.clone(),
                request_id: e.request.id.clone(),
                request_hash: e.request_hash.clone(),
                created_ms: e.created_ms,
                deadline_ms: e.deadline_ms,
            }))?;
        }
        tx.commit()?;
        Ok(())
    }

    /// One entry by id.
    pub fn get(&self, id: &str) -> Result<Option<Entry>, InboxError> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM requests WHERE id = ?1"),
                [id],
                raw_row,
            )
            .optional()?;
        row.map(RawRow::into_entry).transpose()
    }

    /// Entries matching `filter`, oldest first.
    pub fn list(&self, filter: StateFilter) -> Result<Vec<Entry>, InboxError> {
        let (clause, arg, _) = page_parts(filter);
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM requests WHERE {clause} ORDER BY created_ms, id"
        ))?;
        let rows = stmt.query_map([arg], raw_row)?;
        rows.map(|r| r.map_err(InboxError::from).and_then(RawRow::into_entry))
            .collect()
    }

    /// One page of `filter` in the order a reviewer reads it (pending: oldest deadline first;
    /// otherwise newest first), and how many match in all: only the page is decoded, so a
    /// page of 500 costs the same at 10,000 pending as at 500.
    pub fn page(
        &self,
        filter: StateFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Entry>, usize), InboxError> {
        let (clause, arg, order) = page_parts(filter);
        let total: i64 = self.conn.query_row(
            &format!("SELECT COUNT(*) FROM requests WHERE {clause}"),
            [&arg],
            |r| r.get(0),
        )?;
        let mut stmt = self.conn.prepare(&page_sql(clause, order))?;
        let lim = i64::try_from(limit).unwrap_or(i64::MAX);
        let off = i64::try_from(offset).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![arg, lim, off], raw_row)?;
        let entries = rows
            .map(|r| r.map_err(InboxError::from).and_then(RawRow::into_entry))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((entries, usize::try_from(total).unwrap_or(0)))
    }

    /// Ids of every pending entry.
    pub fn pending_ids(&self) -> Result<Vec<String>, InboxError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM requests WHERE state = 'pending'")?;
        let ids = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    }

    /// A person's decision on `id`. Refused when the id is unknown, already resolved, past
    /// its deadline (the entry is then expired with the fallback, in the same transaction),
    /// bound to another hash, or not among the decisions offered. A deny is always allowed.
    pub fn decide(
        &mut self,
        id: &str,
        decision: Decision,
        expect_hash: Option<&str>,
    ) -> Result<Resolved, InboxError> {
        self.resolve(
            id,
            Resolution::Human {
                decision,
                expect_hash: expect_hash.map(str::to_owned),
            },
        )
    }

    /// Resolves `id` once: the state check and the update are one transaction, and the
    /// decision's audit record is written before the commit (an approval that cannot be
    /// audited does not happen).
    pub(crate) fn resolve(&mut self, id: &str, how: Resolution) -> Result<Resolved, InboxError> {
        let now = now_ms();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let entry = pending_entry(&tx, id)?;
        let (state, decision, late) = settle(&entry, how, now)?;
        let changed = tx.execute(
            "UPDATE requests SET state = ?2, decision_json = ?3, resolved_ms = ?4
             WHERE id = ?1 AND state = 'pending'",
            params![
                id,
                state.as_str(),
                serde_json::to_string(&decision)?,
                now as i64
            ],
        )?;
        if changed != 1 {
            return Err(InboxError::Storage(format!("{id}: pending row vanished")));
        }
        if let Some(audit) = &self.audit {
            audit.append(AuditEvent::InboxResolved(InboxResolved {
                id: id.to_owned(),
                request_id: entry.request.id,
                request_hash: entry.request_hash,
                state: state.as_str(),
                decision: decision.clone(),
            }))?;
        }
        tx.commit()?;
        if late {
            return Err(InboxError::Expired(id.to_owned()));
        }
        Ok(Resolved {
            id: id.to_owned(),
            state,
            decision,
        })
    }
}

/// The entry `id`, which must exist and still be pending.
fn pending_entry(tx: &rusqlite::Transaction<'_>, id: &str) -> Result<Entry, InboxError> {
    let row = tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM requests WHERE id = ?1"),
            [id],
            raw_row,
        )
        .optional()?
        .ok_or_else(|| InboxError::UnknownId(id.to_owned()))?;
    let entry = row.into_entry()?;
    if entry.state != State::Pending {
        return Err(InboxError::AlreadyResolved {
            id: id.to_owned(),
            state: entry.state,
        });
    }
    Ok(entry)
}

/// The state and decision `how` resolves a pending `entry` to at `now`, and whether a
/// person's answer came too late (the entry then expires with the fallback deny).
pub(super) fn settle(
    entry: &Entry,
    how: Resolution,
    now: u64,
) -> Result<(State, Decision, bool), InboxError> {
    Ok(match how {
        Resolution::Human {
            decision,
            expect_hash,
        } => {
            let id = &entry.id;
            if let Some(h) = expect_hash.filter(|h| *h != entry.request_hash) {
                return Err(InboxError::HashMismatch {
                    id: id.clone(),
                    expected: h,
                    actual: entry.request_hash.clone(),
                });
            }
            if !entry.offers(decision.kind) {
                return Err(InboxError::NotOffered {
                    id: id.clone(),
                    kind: decision.kind,
                    offered: entry.offered(),
                });
            }
            if now >= entry.deadline_ms {
                (State::Expired, fallback_deny("approval-timeout"), true)
            } else if decision.kind == DecisionKind::Deny {
                (State::Denied, decision, false)
            } else {
                (State::Approved, decision, false)
            }
        }
        Resolution::Expire { reason } => (State::Expired, fallback_deny(&reason), false),
        Resolution::Cancel { state, reason } => (state, fallback_deny(&reason), false),
    })
}

const COLUMNS: &str = "id, request_json, verdict_json, request_hash, created_ms, deadline_ms, \
                       state, decision_json, resolved_ms";

pub(super) struct RawRow {
    pub(super) id: String,
    pub(super) request: String,
    pub(super) verdict: String,
    pub(super) hash: String,
    pub(super) created: i64,
    pub(super) deadline: i64,
    pub(super) state: String,
    pub(super) decision: Option<String>,
    pub(super) resolved: Option<i64>,
}

fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        request: r.get(1)?,
        verdict: r.get(2)?,
        hash: r.get(3)?,
        created: r.get(4)?,
        deadline: r.get(5)?,
        state: r.get(6)?,
        decision: r.get(7)?,
        resolved: r.get(8)?,
    })
}

impl RawRow {
    pub(super) fn into_entry(self) -> Result<Entry, InboxError> {
        let request: Request = serde_json::from_str(&self.request)?;
        let verdict: Verdict = serde_json::from_str(&self.verdict)?;
        let state = State::parse(&self.state)
            .ok_or_else(|| InboxError::Storage(format!("{}: bad state {}", self.id, self.state)))?;
        let decision = self
            .decision
            .map(|d| serde_json::from_str::<Decision>(&d))
            .transpose()?;
        Ok(Entry {
            id: self.id,
            request,
            verdict,
            request_hash: self.hash,
            created_ms: self.created.max(0) as u64,
            deadline_ms: self.deadline.max(0) as u64,
            state,
            decision,
            resolved_ms: self.resolved.map(|r| r.max(0) as u64),
            guard: None,
            decided_at: None,
        })
    }
}

/// A filter's clause and its one argument (`?1`), and the order a page of it is read in.
fn page_parts(filter: StateFilter) -> (&'static str, String, &'static str) {
    match filter {
        StateFilter::All => (
            "?1 = ''",
            String::new(),
            "COALESCE(resolved_ms, created_ms) DESC, id",
        ),
        StateFilter::Pending => (
            "state = ?1",
            State::Pending.as_str().to_owned(),
            "deadline_ms, created_ms, id",
        ),
        // History's page: the literal lets SQLite use the partial index of resolved
        // entries in their order (no scan of the pending rows, no sort).
        StateFilter::Resolved => (
            "state <> 'pending' AND ?1 = ''",
            String::new(),
            "COALESCE(resolved_ms, created_ms) DESC, id",
        ),
        StateFilter::Only(s) => (
            "state = ?1",
            s.as_str().to_owned(),
            "COALESCE(resolved_ms, created_ms) DESC, id",
        ),
    }
}

/// The page query (`?1` the filter's argument, `?2` the limit, `?3` the offset).
fn page_sql(clause: &str, order: &str) -> String {
    format!("SELECT {COLUMNS} FROM requests WHERE {clause} ORDER BY {order} LIMIT ?2 OFFSET ?3")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// History's page at 10,000 pending must not read the pending rows: SQLite walks the
    /// partial index of resolved entries in page order (no table scan, no sort).
    #[test]
    fn the_resolved_page_walks_its_own_index() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::open(&dir.path().join("inbox.db"), None).expect("open");
        let (clause, arg, order) = page_parts(StateFilter::Resolved);
        let plan: Vec<String> = store
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", page_sql(clause, order)))
            .expect("plan")
            .query_map(params![arg, 10, 0], |r| r.get::<_, String>(3))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("plan rows");
        assert_eq!(
            plan,
            vec!["SCAN requests USING INDEX requests_resolved"],
            "{plan:?}"
        );
    }
}
