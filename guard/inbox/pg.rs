//! The fleet's inbox store: one PostgreSQL table that every guard of a fleet shares. Each row
//! carries the guard that filed it (the one whose agent asked, which answers the agent) and
//! the agent's id. A state change is one conditional `UPDATE … WHERE state = 'pending'` in a
//! transaction that also writes the deciding guard's audit record and a `NOTIFY`, so exactly
//! one guard wins a decision and the owner hears of it when it commits.
//!
//! The client is the synchronous `postgres` crate, driven from a thread of its own: the
//! inbox calls its store from async code and from blocking tasks alike, and the crate's own
//! runtime must never run inside the guard's. A lost connection is reopened on the next call;
//! until then every call fails with [`InboxError::StoreUnavailable`] (fail closed). How a
//! connection is opened (TLS, the server verified) is [`super::pg_conn`]'s.

use super::backend::InboxStore;
use super::pg_conn::Database;
use super::store::{settle, RawRow, Resolution};
use super::{now_ms, AuditRef, Entry, InboxError, Resolved, State, StateFilter};
use crate::audit::event::{AuditEvent, InboxPending, InboxResolved};
use crate::audit::AuditLog;
use postgres::Client;
use std::sync::mpsc;

/// The channel every guard's changes are announced on: payload `<guard> <id>`.
pub const CHANNEL: &str = "sanctum_inbox";

/// Created once per database (under an advisory lock: several guards start at once).
const SCHEMA: &str = "
CREATE SEQUENCE IF NOT EXISTS sanctum_inbox_version;
CREATE TABLE IF NOT EXISTS sanctum_inbox (
    id            TEXT PRIMARY KEY,
    guard_id      TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    request_json  TEXT NOT NULL,
    verdict_json  TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    created_ms    BIGINT NOT NULL,
    deadline_ms   BIGINT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN
                    ('pending','approved','denied','expired','resolved-elsewhere','cancelled')),
    decision_json TEXT,
    resolved_ms   BIGINT,
    version       BIGINT NOT NULL DEFAULT nextval('sanctum_inbox_version')
);
CREATE INDEX IF NOT EXISTS sanctum_inbox_pending
    ON sanctum_inbox(deadline_ms, created_ms, id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS sanctum_inbox_owner ON sanctum_inbox(guard_id, state);
CREATE INDEX IF NOT EXISTS sanctum_inbox_version_idx ON sanctum_inbox(version);
ALTER TABLE sanctum_inbox ADD COLUMN IF NOT EXISTS decided_guard TEXT;
ALTER TABLE sanctum_inbox ADD COLUMN IF NOT EXISTS decided_seq BIGINT;
ALTER TABLE sanctum_inbox ADD COLUMN IF NOT EXISTS decided_hash TEXT;
CREATE TABLE IF NOT EXISTS sanctum_guards (
    name        TEXT PRIMARY KEY,
    public_url  TEXT,
    updated_ms  BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS sanctum_inbox_resolved
    ON sanctum_inbox((COALESCE(resolved_ms, created_ms)) DESC, id) WHERE state <> 'pending';
";

/// Any fixed number: the advisory lock the schema is created under.
const SCHEMA_LOCK: i64 = 0x0053_414e_4354_554d;

/// The deciding guard's published URL comes from the guards table, never from the row.
const COLUMNS: &str = "id, request_json, verdict_json, request_hash, created_ms, deadline_ms, \
                       state, decision_json, resolved_ms, guard_id, decided_guard, decided_seq, \
                       decided_hash, \
                       (SELECT public_url FROM sanctum_guards WHERE name = decided_guard)";

/// A connection to the shared database, reopened when lost.
struct Conn {
    db: Database,
    client: Option<Client>,
}

impl Conn {
    fn client(&mut self) -> Result<&mut Client, InboxError> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        let client = match self.client.take() {
            Some(c) => c,
            None => connect(&self.db)?,
        };
        Ok(self.client.insert(client))
    }

    /// Runs `f` on a live client; a connection that broke under it is dropped (the next call
    /// reconnects).
    fn run<R>(
        &mut self,
        f: impl FnOnce(&mut Client) -> Result<R, InboxError>,
    ) -> Result<R, InboxError> {
        let res = f(self.client()?);
        if res.is_err() && self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        res
    }
}

/// Opens a connection and makes sure the table exists.
fn connect(db: &Database) -> Result<Client, InboxError> {
    let mut client = db.connect()?;
    let mut tx = client.transaction().map_err(pg_err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(pg_err)?;
    tx.batch_execute(SCHEMA).map_err(pg_err)?;
    tx.commit().map_err(pg_err)?;
    Ok(client)
}

/// A new connection to the fleet database, made as the inbox makes its own: the other
/// fleet tables ([`super::pg_side`]) connect through here.
pub(crate) fn open_client(db: &Database) -> Result<Client, InboxError> {
    connect(db)
}

/// A database's own refusal is a storage error; anything else (no server, a dropped
/// connection, a timeout) means the store is away.
fn pg_err(e: postgres::Error) -> InboxError {
    match e.as_db_error() {
        Some(db) => InboxError::Storage(format!("{}: {}", db.code().code(), db.message())),
        None => InboxError::StoreUnavailable(e.to_string()),
    }
}

type Job = Box<dyn FnOnce(&mut Conn) + Send>;

/// The fleet store of one guard: its identity and the connection thread.
pub struct PgStore {
    jobs: mpsc::Sender<Job>,
    db: Database,
    guard_id: String,
    audit: Option<AuditLog>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("PgStore")
            .field("guard_id", &self.guard_id)
            .finish()
    }
}

/// Reads the `[store] url` (its TLS options included: [`Database::parse`]).
pub fn parse_url(url: &str) -> Result<Database, InboxError> {
    Database::parse(url)
}

impl PgStore {
    /// The store for guard `guard_id` on the database `db`. The database need not be
    /// up: until it is, every operation fails with `StoreUnavailable`.
    pub fn open(
        db: Database,
        guard_id: &str,
        audit: Option<AuditLog>,
    ) -> Result<PgStore, InboxError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let mut conn = Conn {
            db: db.clone(),
            client: None,
        };
        std::thread::Builder::new()
            .name("inbox-pg".into())
            .spawn(move || {
                for job in rx {
                    job(&mut conn);
                }
            })
            .map_err(|e| InboxError::Internal(format!("inbox-pg thread: {e}")))?;
        Ok(PgStore {
            jobs,
            db,
            guard_id: guard_id.to_owned(),
            audit,
        })
    }

    pub fn guard_id(&self) -> &str {
        &self.guard_id
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Runs `f` on the connection thread and waits for its answer.
    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, InboxError> + Send + 'static,
    ) -> Result<R, InboxError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |conn: &mut Conn| {
            let _ = tx.send(conn.run(f));
        });
        self.jobs
            .send(job)
            .map_err(|_| InboxError::Internal("inbox-pg thread gone".into()))?;
        rx.recv()
            .map_err(|_| InboxError::Internal("inbox-pg thread gone".into()))?
    }

    fn query_entries(
        &self,
        sql: String,
        args: Vec<String>,
        extra: Option<(i64, i64)>,
    ) -> Result<Vec<Entry>, InboxError> {
        self.call(move |c| {
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                args.iter().map(|a| a as _).collect();
            if let Some((lim, off)) = &extra {
                params.push(lim);
                params.push(off);
            }
            let rows = c.query(sql.as_str(), &params).map_err(pg_err)?;
            rows.iter().map(entry).collect()
        })
    }
}

/// A row as an entry, with the guard that filed it.
fn entry(r: &postgres::Row) -> Result<Entry, InboxError> {
    let mut e = raw(r)?.into_entry()?;
    e.guard = Some(r.try_get(9).map_err(pg_err)?);
    let decided: (Option<String>, Option<i64>) = (
        r.try_get(10).map_err(pg_err)?,
        r.try_get(11).map_err(pg_err)?,
    );
    if let (Some(guard), Some(seq)) = decided {
        let url: Option<String> = r.try_get(13).map_err(pg_err)?;
        e.decided_at = Some(AuditRef {
            guard,
            seq: seq.max(0) as u64,
            hash: r.try_get(12).map_err(pg_err)?,
            // Checked again on the way out: a link is an https or loopback origin or nothing.
            url: url.and_then(|u| super::pg_guards::public_url(&u).ok()),
        });
    }
    Ok(e)
}

fn raw(r: &postgres::Row) -> Result<RawRow, InboxError> {
    let get = |e: postgres::Error| InboxError::Storage(format!("row: {e}"));
    Ok(RawRow {
        id: r.try_get(0).map_err(get)?,
        request: r.try_get(1).map_err(get)?,
        verdict: r.try_get(2).map_err(get)?,
        hash: r.try_get(3).map_err(get)?,
        created: r.try_get(4).map_err(get)?,
        deadline: r.try_get(5).map_err(get)?,
        state: r.try_get(6).map_err(get)?,
        decision: r.try_get(7).map_err(get)?,
        resolved: r.try_get(8).map_err(get)?,
    })
}

/// A filter's clause (with `$1` its one argument, or none), and its reading order.
fn page_parts(filter: StateFilter) -> (&'static str, Option<String>, &'static str) {
    let newest = "COALESCE(resolved_ms, created_ms) DESC, id";
    match filter {
        StateFilter::All => ("TRUE", None, newest),
        StateFilter::Pending => ("state = 'pending'", None, "deadline_ms, created_ms, id"),
        StateFilter::Resolved => ("state <> 'pending'", None, newest),
        StateFilter::Only(s) => ("state = $1", Some(s.as_str().to_owned()), newest),
    }
}

impl InboxStore for PgStore {
    fn insert(&mut self, e: &Entry) -> Result<(), InboxError> {
        let e = e.clone();
        let guard = self.guard_id.clone();
        let audit = self.audit.clone();
        let request_json = serde_json::to_string(&e.request)?;
        let verdict_json = serde_json::to_string(&e.verdict)?;
        self.call(move |c| {
            let mut tx = c.transaction().map_err(pg_err)?;
            tx.execute(
                "INSERT INTO sanctum_inbox (id, guard_id, agent_id, request_json, verdict_json,
                     request_hash, created_ms, deadline_ms, state)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending')",
                &[
                    &e.id,
                    &guard,
                    &e.request.who.agent_id,
                    &request_json,
                    &verdict_json,
                    &e.request_hash,
                    &(e.created_ms as i64),
                    &(e.deadline_ms as i64),
                ],
            )
            .map_err(pg_err)?;
            tx.execute(
                "SELECT pg_notify($1, $2)",
                &[&CHANNEL, &format!("{guard} {}", e.id)],
            )
            .map_err(pg_err)?;
            if let Some(audit) = &audit {
                audit.append(AuditEvent::InboxPending(InboxPending {
                    id: e.id.clone(),
                    request_id: e.request.id.clone(),
                    request_hash: e.request_hash.clone(),
                    created_ms: e.created_ms,
                    deadline_ms: e.deadline_ms,
                }))?;
            }
            tx.commit().map_err(pg_err)
        })
    }

    fn get(&self, id: &str) -> Result<Option<Entry>, InboxError> {
        let sql = format!("SELECT {COLUMNS} FROM sanctum_inbox WHERE id = $1");
        Ok(self
            .query_entries(sql, vec![id.to_owned()], None)?
            .into_iter()
            .next())
    }

    fn list(&self, filter: StateFilter) -> Result<Vec<Entry>, InboxError> {
        let (clause, arg, _) = page_parts(filter);
        let sql =
            format!("SELECT {COLUMNS} FROM sanctum_inbox WHERE {clause} ORDER BY created_ms, id");
        self.query_entries(sql, arg.into_iter().collect(), None)
    }

    fn page(
        &self,
        filter: StateFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Entry>, usize), InboxError> {
        let (clause, arg, order) = page_parts(filter);
        let args: Vec<String> = arg.into_iter().collect();
        let n = args.len();
        let count_sql = format!("SELECT COUNT(*) FROM sanctum_inbox WHERE {clause}");
        let count_args = args.clone();
        let total: i64 = self.call(move |c| {
            let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                count_args.iter().map(|a| a as _).collect();
            c.query_one(count_sql.as_str(), &params)
                .map_err(pg_err)?
                .try_get(0)
                .map_err(pg_err)
        })?;
        let sql = format!(
            "SELECT {COLUMNS} FROM sanctum_inbox WHERE {clause} ORDER BY {order} LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let lim = i64::try_from(limit).unwrap_or(i64::MAX);
        let off = i64::try_from(offset).unwrap_or(i64::MAX);
        let entries = self.query_entries(sql, args, Some((lim, off)))?;
        Ok((entries, usize::try_from(total).unwrap_or(0)))
    }

    fn pending_ids(&self) -> Result<Vec<String>, InboxError> {
        let guard = self.guard_id.clone();
        self.call(move |c| {
            let rows = c
                .query(
                    "SELECT id FROM sanctum_inbox WHERE guard_id = $1 AND state = 'pending'",
                    &[&guard],
                )
                .map_err(pg_err)?;
            rows.iter()
                .map(|r| r.try_get::<_, String>(0).map_err(pg_err))
                .collect()
        })
    }

    fn resolve(&mut self, id: &str, how: Resolution) -> Result<Resolved, InboxError> {
        let id = id.to_owned();
        let audit = self.audit.clone();
        let me = self.guard_id.clone();
        self.call(move |c| resolve_on(c, &id, how, (&me, audit.as_ref())))
    }

    fn data_version(&self) -> Result<i64, InboxError> {
        self.call(|c| {
            c.query_one("SELECT COALESCE(MAX(version), 0) FROM sanctum_inbox", &[])
                .map_err(pg_err)?
                .try_get(0)
                .map_err(pg_err)
        })
    }

    fn resumes_pending(&self) -> bool {
        true
    }

    fn fleet_db(&self) -> Option<Database> {
        Some(self.db.clone())
    }

    fn fleet_guard(&self) -> Option<String> {
        Some(self.guard_id.clone())
    }
}

/// One resolution: read the row, judge it (offered, hash, deadline), then the conditional
/// update. A concurrent resolver's update waits for ours and then matches no row: it reports
/// the state ours left. The audit record is written before the commit, and the row names it
/// (this guard, the record's `seq` and line hash) so any guard's page can say where the
/// decision is logged, and link to it.
fn resolve_on(
    c: &mut Client,
    id: &str,
    how: Resolution,
    (me, audit): (&str, Option<&AuditLog>),
) -> Result<Resolved, InboxError> {
    let now = now_ms();
    let mut tx = c.transaction().map_err(pg_err)?;
    let sql = format!("SELECT {COLUMNS} FROM sanctum_inbox WHERE id = $1");
    let row = tx
        .query_opt(sql.as_str(), &[&id])
        .map_err(pg_err)?
        .ok_or_else(|| InboxError::UnknownId(id.to_owned()))?;
    let owner: String = row.try_get(9).map_err(pg_err)?;
    let entry = raw(&row)?.into_entry()?;
    if entry.state != State::Pending {
        return Err(InboxError::AlreadyResolved {
            id: id.to_owned(),
            state: entry.state,
        });
    }
    let (state, decision, late) = settle(&entry, how, now)?;
    let changed = tx
        .execute(
            "UPDATE sanctum_inbox SET state = $2, decision_json = $3, resolved_ms = $4,
                 version = nextval('sanctum_inbox_version')
             WHERE id = $1 AND state = 'pending'",
            &[
                &id,
                &state.as_str(),
                &serde_json::to_string(&decision)?,
                &(now as i64),
            ],
        )
        .map_err(pg_err)?;
    if changed != 1 {
        let now_state: String = tx
            .query_one("SELECT state FROM sanctum_inbox WHERE id = $1", &[&id])
            .map_err(pg_err)?
            .try_get(0)
            .map_err(pg_err)?;
        return Err(InboxError::AlreadyResolved {
            id: id.to_owned(),
            state: State::parse(&now_state).unwrap_or(State::Expired),
        });
    }
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&CHANNEL, &format!("{owner} {id}")],
    )
    .map_err(pg_err)?;
    if let Some(audit) = audit {
        let stamp = audit.append_stamped(AuditEvent::InboxResolved(InboxResolved {
            id: id.to_owned(),
            request_id: entry.request.id,
            request_hash: entry.request_hash,
            state: state.as_str(),
            decision: decision.clone(),
        }))?;
        tx.execute(
            "UPDATE sanctum_inbox SET decided_guard = $2, decided_seq = $3, decided_hash = $4
             WHERE id = $1",
            &[
                &id,
                &me,
                &i64::try_from(stamp.seq).unwrap_or(i64::MAX),
                &stamp.hash,
            ],
        )
        .map_err(pg_err)?;
    }
    tx.commit().map_err(pg_err)?;
    if late {
        return Err(InboxError::Expired(id.to_owned()));
    }
    Ok(Resolved {
        id: id.to_owned(),
        state,
        decision,
    })
}
