//! The fleet's sessions table (see `pg_auth`): one row per signed-in browser, keyed by the
//! SHA-256 of its session id, with its account, CSRF token and times on the database's
//! clock. `expires` is the earlier of the idle and the absolute end, so "live" is one
//! comparison. Last-seen is written at most once a minute per session ([`TOUCH_EVERY`]):
//! reading a session costs one round trip, not a write per request; the idle end moves in
//! those steps. Ending sessions `NOTIFY`s [`super::pg_auth::CHANNEL`], so every guard's
//! open event streams re-check theirs at once.

use super::auth::{ABSOLUTE_TTL, IDLE_TTL, MAX_SESSIONS};
use super::pg_auth::{db, AuthDbError, PgAuth, CHANNEL};
use std::time::Duration;

/// How stale a stored last-seen may get before a read writes it again.
pub const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// A session row as the guard needs it.
#[derive(Debug, Clone)]
pub struct Row {
    pub identity: String,
    pub account: String,
    pub account_id: String,
    pub csrf: String,
    pub expires_in: Duration,
}

const LIVE: &str = "expires > now()";

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl PgAuth {
    /// Stores a new session; drops expired ones, and the least recently used ones beyond
    /// the fleet's cap.
    pub fn create_session(&self, hash: &str, row: &Row) -> Result<(), AuthDbError> {
        let (hash, r) = (hash.to_owned(), row.clone());
        let (idle, abs) = (secs(IDLE_TTL), secs(ABSOLUTE_TTL));
        let keep = MAX_SESSIONS as i64 - 1;
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            tx.execute(
                &format!("DELETE FROM sanctum_web_sessions WHERE NOT ({LIVE})"),
                &[],
            )
            .map_err(db)?;
            tx.execute(
                "DELETE FROM sanctum_web_sessions WHERE hash IN (SELECT hash FROM \
                 sanctum_web_sessions ORDER BY last_seen DESC OFFSET $1)",
                &[&keep],
            )
            .map_err(db)?;
            tx.execute(
                "INSERT INTO sanctum_web_sessions (hash, identity, account, account_id, csrf, \
                 created, last_seen, expires) VALUES ($1, $2, $3, $4, $5, now(), now(), \
                 now() + make_interval(secs => LEAST($6::float8, $7::float8)))",
                &[
                    &hash,
                    &r.identity,
                    &r.account,
                    &r.account_id,
                    &r.csrf,
                    &idle,
                    &abs,
                ],
            )
            .map_err(db)?;
            tx.commit().map_err(db)
        })
    }

    /// The live session `hash`, its last-seen moved when it is older than [`TOUCH_EVERY`]
    /// (`touch`); an expired row is deleted and reads as none.
    pub fn session(&self, hash: &str, touch: bool) -> Result<Option<Row>, AuthDbError> {
        let hash = hash.to_owned();
        let (idle, abs, every) = (secs(IDLE_TTL), secs(ABSOLUTE_TTL), secs(TOUCH_EVERY));
        self.worker.call(move |c| {
            let Some(r) = c
                .query_opt(
                    &format!(
                        "SELECT identity, account, account_id, csrf, {LIVE}, \
                         EXTRACT(EPOCH FROM expires - now())::float8, \
                         last_seen < now() - make_interval(secs => $2::float8) \
                         FROM sanctum_web_sessions WHERE hash = $1"
                    ),
                    &[&hash, &every],
                )
                .map_err(db)?
            else {
                return Ok(None);
            };
            if !r.try_get::<_, bool>(4).map_err(db)? {
                c.execute(
                    &format!("DELETE FROM sanctum_web_sessions WHERE hash = $1 AND NOT ({LIVE})"),
                    &[&hash],
                )
                .map_err(db)?;
                return Ok(None);
            }
            let mut left: f64 = r.try_get(5).map_err(db)?;
            if touch && r.try_get::<_, bool>(6).map_err(db)? {
                left = c
                    .query_one(
                        "UPDATE sanctum_web_sessions SET last_seen = now(), expires = LEAST(\
                         now() + make_interval(secs => $2::float8), created + make_interval(secs => $3::float8)) \
                         WHERE hash = $1 RETURNING EXTRACT(EPOCH FROM expires - now())::float8",
                        &[&hash, &idle, &abs],
                    )
                    .map_err(db)?
                    .try_get(0)
                    .map_err(db)?;
            }
            Ok(Some(Row {
                identity: r.try_get(0).map_err(db)?,
                account: r.try_get(1).map_err(db)?,
                account_id: r.try_get(2).map_err(db)?,
                csrf: r.try_get(3).map_err(db)?,
                expires_in: Duration::from_secs_f64(left.max(0.0)),
            }))
        })
    }

    /// Ends the sessions `hash` names (Some), or `account`'s (Some), or all (both None);
    /// announces it to the fleet; returns how many ended.
    pub fn end_sessions(
        &self,
        hash: Option<&str>,
        account: Option<&str>,
    ) -> Result<usize, AuthDbError> {
        let (hash, account) = (hash.map(str::to_owned), account.map(str::to_owned));
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            let n = tx
                .execute(
                    "DELETE FROM sanctum_web_sessions WHERE ($1::text IS NULL OR hash = $1) \
                     AND ($2::text IS NULL OR account = $2)",
                    &[&hash, &account],
                )
                .map_err(db)?;
            tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL])
                .map_err(db)?;
            tx.commit().map_err(db)?;
            Ok(n as usize)
        })
    }

    /// How many sessions are live across the fleet.
    pub fn live_sessions(&self) -> Result<usize, AuthDbError> {
        self.worker.call(|c| {
            c.query_one(
                &format!("SELECT COUNT(*) FROM sanctum_web_sessions WHERE {LIVE}"),
                &[],
            )
            .map_err(db)?
            .try_get::<_, i64>(0)
            .map(|n| n.max(0) as usize)
            .map_err(db)
        })
    }

    /// Listens for ended sessions on its own connection (reconnecting by itself); calls
    /// `heard` for each, and once on every (re)connect (endings may have gone unheard).
    /// Stops when `heard` returns false.
    pub fn listen(&self, mut heard: impl FnMut() -> bool + Send + 'static) -> std::io::Result<()> {
        use postgres::fallible_iterator::FallibleIterator;
        let database = self.database.clone();
        std::thread::Builder::new()
            .name("web-sessions-listen".into())
            .spawn(move || loop {
                let once = (|| -> Result<bool, String> {
                    let mut c = database.connect().map_err(|e| e.to_string())?;
                    c.batch_execute(&format!("LISTEN {CHANNEL}"))
                        .map_err(|e| e.to_string())?;
                    if !heard() {
                        return Ok(false);
                    }
                    loop {
                        let mut n = c.notifications();
                        let mut it = n.timeout_iter(Duration::from_secs(2));
                        while it.next().map_err(|e| e.to_string())?.is_some() {
                            if !heard() {
                                return Ok(false);
                            }
                        }
                        drop(it);
                        drop(n);
                        c.simple_query("SELECT 1").map_err(|e| e.to_string())?;
                    }
                })();
                match once {
                    Ok(_) => return,
                    Err(e) => {
                        tracing::debug!(error = %e, "web: session listener reconnecting");
                        std::thread::sleep(Duration::from_millis(500));
                    }
                }
            })
            .map(drop)
    }
}
