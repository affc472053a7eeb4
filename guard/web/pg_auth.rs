//! A fleet's sign-in state in the PostgreSQL database its guards share: sessions (see
//! `pg_sessions`), one-time login links and passkeys. With them there, a reviewer signs in
//! on any guard with a link any guard's command line made, a passkey registered through one
//! guard signs in on every guard of the same RP id, and a session survives its guard's
//! restart. Only hashes of tokens are stored (a session id's and a link token's SHA-256);
//! the database's clock (`now()`) is the fleet's one clock for every expiry, so guards
//! whose clocks drift still agree on what is live.
//!
//! Every "once" is one conditional statement: a link is consumed by a `DELETE … RETURNING`
//! (of two guards redeeming it at once, exactly one gets the row), and a passkey's sign
//! count only moves forwards under a row lock (two guards accepting the same counter is a
//! cloned authenticator: the second is refused).

use super::passkey_store::Stored;
use crate::inbox::pg_conn::Database;
use crate::inbox::pg_side::{refused_by_db, PgWorker, Unavailable};
use webauthn_rs::prelude::{AuthenticationResult, Passkey};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sanctum_web_sessions (
    hash        TEXT PRIMARY KEY,
    identity    TEXT NOT NULL,
    account     TEXT NOT NULL,
    account_id  TEXT NOT NULL,
    csrf        TEXT NOT NULL,
    created     TIMESTAMPTZ NOT NULL,
    last_seen   TIMESTAMPTZ NOT NULL,
    expires     TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS sanctum_web_sessions_account ON sanctum_web_sessions (account);
CREATE TABLE IF NOT EXISTS sanctum_login_links (
    hash        TEXT PRIMARY KEY,
    account     TEXT NOT NULL,
    expires     TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS sanctum_passkeys (
    id          TEXT PRIMARY KEY,
    account     TEXT NOT NULL,
    created_ms  BIGINT NOT NULL,
    rp_id       TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    sign_count  BIGINT NOT NULL DEFAULT 0,
    passkey     TEXT NOT NULL
);
";

/// The lock the tables are created under (several guards start at once).
const SCHEMA_LOCK: i64 = 0x0053_5745_4241_5554;

/// Where sessions that end are announced: every guard's live event streams re-check theirs.
pub const CHANNEL: &str = "sanctum_web_sessions";

/// Why the fleet's sign-in state could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum AuthDbError {
    /// The database is away: nobody signs in, no session is confirmed (fail closed).
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("fleet sign-in store: {0}")]
    Storage(String),
    #[error("fleet sign-in store: a stored passkey is unreadable: {0}")]
    Json(#[from] serde_json::Error),
}

pub(super) fn db(e: postgres::Error) -> AuthDbError {
    if refused_by_db(&e) {
        AuthDbError::Storage(e.to_string())
    } else {
        AuthDbError::Unavailable(Unavailable(e.to_string()))
    }
}

/// The fleet's sign-in tables, as one guard (or the command line) uses them.
pub struct PgAuth {
    pub(super) worker: PgWorker,
    pub(super) database: Database,
}

impl std::fmt::Debug for PgAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgAuth").finish_non_exhaustive()
    }
}

impl PgAuth {
    /// Opens the tables on `database` (created on first connect; the database need not be
    /// up yet: every call until it is fails with [`AuthDbError::Unavailable`]).
    pub fn open(database: Database) -> Result<PgAuth, AuthDbError> {
        let worker = PgWorker::start(database.clone(), "web-auth-pg", SCHEMA, SCHEMA_LOCK)
            .map_err(|e| AuthDbError::Storage(e.to_string()))?;
        Ok(PgAuth { worker, database })
    }

    /// Records a login link's hash for `account`, live for `ttl_ms`; drops expired ones.
    pub fn add_link(&self, hash: &str, account: &str, ttl_ms: u64) -> Result<(), AuthDbError> {
        let (hash, account) = (hash.to_owned(), account.to_owned());
        let secs = ttl_ms as f64 / 1000.0;
        self.worker.call(move |c| {
            c.execute(
                "DELETE FROM sanctum_login_links WHERE expires <= now()",
                &[],
            )
            .map_err(db)?;
            c.execute(
                "INSERT INTO sanctum_login_links (hash, account, expires) \
                 VALUES ($1, $2, now() + make_interval(secs => $3::float8))",
                &[&hash, &account, &secs],
            )
            .map(drop)
            .map_err(db)
        })
    }

    /// The account a live link names, without using it up.
    pub fn link_account(&self, hash: &str) -> Result<Option<String>, AuthDbError> {
        let hash = hash.to_owned();
        self.worker.call(move |c| {
            c.query_opt(
                "SELECT account FROM sanctum_login_links WHERE hash = $1 AND expires > now()",
                &[&hash],
            )
            .map_err(db)?
            .map(|r| r.try_get(0).map_err(db))
            .transpose()
        })
    }

    /// Uses a link up: its account if it was live, for exactly one caller in the fleet.
    pub fn consume_link(&self, hash: &str) -> Result<Option<String>, AuthDbError> {
        let hash = hash.to_owned();
        self.worker.call(move |c| {
            let row = c
                .query_opt(
                    "DELETE FROM sanctum_login_links WHERE hash = $1 \
                     RETURNING account, expires > now()",
                    &[&hash],
                )
                .map_err(db)?;
            match row {
                Some(r) if r.try_get::<_, bool>(1).map_err(db)? => {
                    r.try_get(0).map(Some).map_err(db)
                }
                _ => Ok(None),
            }
        })
    }

    /// Drops every link of `account`; how many.
    pub fn remove_links(&self, account: &str) -> Result<usize, AuthDbError> {
        let account = account.to_owned();
        self.worker.call(move |c| {
            c.execute(
                "DELETE FROM sanctum_login_links WHERE account = $1 AND expires > now()",
                &[&account],
            )
            .map(|n| n as usize)
            .map_err(db)
        })
    }

    /// Every registered passkey, oldest first.
    pub fn passkeys(&self) -> Result<Vec<Stored>, AuthDbError> {
        self.worker.call(|c| {
            c.query(
                "SELECT id, account, created_ms, rp_id, public_key, passkey \
                 FROM sanctum_passkeys ORDER BY created_ms, id",
                &[],
            )
            .map_err(db)?
            .iter()
            .map(stored)
            .collect()
        })
    }

    /// Adds a credential; false when its id is already registered.
    pub fn add_passkey(&self, s: &Stored) -> Result<bool, AuthDbError> {
        let json = serde_json::to_string(&s.passkey)?;
        let s = s.clone();
        self.worker.call(move |c| {
            c.execute(
                "INSERT INTO sanctum_passkeys (id, account, created_ms, rp_id, public_key, passkey) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
                &[&s.id, &s.name, &(s.created_ms as i64), &s.rp_id, &s.public_key, &json],
            )
            .map(|n| n == 1)
            .map_err(db)
        })
    }

    /// Removes the credential `id` (or the one credential a prefix of 8+ hex digits names).
    pub fn remove_passkey(&self, id: &str) -> Result<Option<Stored>, AuthDbError> {
        let id = id.to_ascii_lowercase();
        self.worker.call(move |c| {
            let like = if id.len() >= 8 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                format!("{id}%")
            } else {
                id.clone()
            };
            let mut tx = c.transaction().map_err(db)?;
            let hits = tx
                .query(
                    "SELECT id FROM sanctum_passkeys WHERE id = $1 OR id LIKE $2 FOR UPDATE",
                    &[&id, &like],
                )
                .map_err(db)?;
            let [one] = hits.as_slice() else {
                return Ok(None);
            };
            let full: String = one.try_get(0).map_err(db)?;
            let row = tx
                .query_one(
                    "DELETE FROM sanctum_passkeys WHERE id = $1 RETURNING \
                     id, account, created_ms, rp_id, public_key, passkey",
                    &[&full],
                )
                .map_err(db)?;
            let s = stored(&row)?;
            tx.commit().map_err(db)?;
            Ok(Some(s))
        })
    }

    /// Removes every credential of `account`; returns them.
    pub fn remove_passkeys_of(&self, account: &str) -> Result<Vec<Stored>, AuthDbError> {
        let account = account.to_owned();
        self.worker.call(move |c| {
            c.query(
                "DELETE FROM sanctum_passkeys WHERE account = $1 RETURNING \
                 id, account, created_ms, rp_id, public_key, passkey",
                &[&account],
            )
            .map_err(db)?
            .iter()
            .map(stored)
            .collect()
        })
    }

    /// Applies an assertion's counter: false when another guard already accepted this
    /// counter or a later one (a cloned authenticator, or one assertion replayed on two
    /// guards at once). An authenticator without a counter (always 0) is not held to it.
    pub fn touch_passkey(&self, id: &str, res: &AuthenticationResult) -> Result<bool, AuthDbError> {
        let (id, res) = (id.to_owned(), res.clone());
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            let Some(row) = tx
                .query_opt(
                    "SELECT sign_count, passkey FROM sanctum_passkeys WHERE id = $1 FOR UPDATE",
                    &[&id],
                )
                .map_err(db)?
            else {
                return Ok(false);
            };
            let count: i64 = row.try_get(0).map_err(db)?;
            let now = i64::from(res.counter());
            if now != 0 && now <= count {
                return Ok(false);
            }
            let mut pk: Passkey = serde_json::from_str(&row.try_get::<_, String>(1).map_err(db)?)?;
            pk.update_credential(&res);
            let json = serde_json::to_string(&pk)?;
            tx.execute(
                "UPDATE sanctum_passkeys SET sign_count = $2, passkey = $3 WHERE id = $1",
                &[&id, &now, &json],
            )
            .map_err(db)?;
            tx.commit().map_err(db)?;
            Ok(true)
        })
    }
}

fn stored(r: &postgres::Row) -> Result<Stored, AuthDbError> {
    let json: String = r.try_get(5).map_err(db)?;
    Ok(Stored {
        id: r.try_get(0).map_err(db)?,
        name: r.try_get(1).map_err(db)?,
        created_ms: r.try_get::<_, i64>(2).map_err(db)?.max(0) as u64,
        rp_id: r.try_get(3).map_err(db)?,
        public_key: r.try_get(4).map_err(db)?,
        passkey: serde_json::from_str(&json)?,
    })
}
