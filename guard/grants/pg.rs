//! The fleet's grants: one PostgreSQL table every guard of a fleet shares, beside the
//! inbox's. A grant made on any guard's page is stored with the guard whose agent asked
//! (the inbox row's owner), and only that guard's requests spend it: agents of different
//! guards may share an agent id. Spending is one transaction of conditional `UPDATE`s (row
//! locks order concurrent spenders; the second re-checks the row the first left), so the
//! last use goes to exactly one request across the fleet. A revoke on any guard commits
//! once and every guard's next check sees it. Database away: every call fails, and the
//! engine then asks a person (no grant covers anything).

use super::backend::GrantBackend;
use super::shape::GrantSpec;
use super::store::{Grant, GrantError};
use crate::inbox::pg_side::{refused_by_db, PgWorker, Unavailable};
use postgres::Row;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sanctum_grants (
    id          TEXT PRIMARY KEY,
    guard_id    TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    spec_json   TEXT NOT NULL,
    made_by     TEXT NOT NULL,
    inbox_id    TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    created_ms  BIGINT NOT NULL,
    expires_ms  BIGINT,
    uses_left   BIGINT,
    revoked_ms  BIGINT,
    revoked_by  TEXT
);
CREATE INDEX IF NOT EXISTS sanctum_grants_live
    ON sanctum_grants(guard_id, created_ms) WHERE revoked_ms IS NULL;
";

/// Any fixed number, not the inbox's: the advisory lock the table is created under.
const SCHEMA_LOCK: i64 = 0x0053_4752_414e_5453;

const COLUMNS: &str = "id, spec_json, made_by, inbox_id, request_id, created_ms, expires_ms, \
                       uses_left, revoked_ms, revoked_by, guard_id";

const LIVE: &str = "revoked_ms IS NULL AND (expires_ms IS NULL OR expires_ms > $1)
                    AND (uses_left IS NULL OR uses_left > 0)";

fn db(e: postgres::Error) -> GrantError {
    if refused_by_db(&e) {
        GrantError::Db(e.to_string())
    } else {
        GrantError::Unavailable(Unavailable(e.to_string()))
    }
}

fn grant(r: &Row) -> Result<Grant, GrantError> {
    let opt_u64 = |v: Option<i64>| v.map(|x| x.max(0) as u64);
    let spec: String = r.try_get(1).map_err(db)?;
    Ok(Grant {
        id: r.try_get(0).map_err(db)?,
        spec: serde_json::from_str(&spec)?,
        made_by: r.try_get(2).map_err(db)?,
        inbox_id: r.try_get(3).map_err(db)?,
        request_id: r.try_get(4).map_err(db)?,
        created_ms: opt_u64(r.try_get(5).map_err(db)?).unwrap_or(0),
        expires_ms: opt_u64(r.try_get(6).map_err(db)?),
        uses_left: r
            .try_get::<_, Option<i64>>(7)
            .map_err(db)?
            .map(|u| u.clamp(0, i64::from(u32::MAX)) as u32),
        revoked_ms: opt_u64(r.try_get(8).map_err(db)?),
        revoked_by: r.try_get(9).map_err(db)?,
        guard: Some(r.try_get(10).map_err(db)?),
    })
}

/// Guard `guard_id`'s handle on the fleet's grants.
#[derive(Debug)]
pub struct PgGrants {
    worker: PgWorker,
    guard_id: String,
}

impl PgGrants {
    /// The grants of the fleet database at `config`, as guard `guard_id` spends them. The
    /// database need not be up.
    pub fn open(
        config: crate::inbox::pg_conn::Database,
        guard_id: &str,
    ) -> Result<PgGrants, GrantError> {
        let worker = PgWorker::start(config, "grants-pg", SCHEMA, SCHEMA_LOCK)
            .map_err(|e| GrantError::Unavailable(Unavailable(format!("grants-pg thread: {e}"))))?;
        Ok(PgGrants {
            worker,
            guard_id: guard_id.to_owned(),
        })
    }

    fn select(&self, which: Which) -> Result<Vec<Grant>, GrantError> {
        self.worker.call(move |c| {
            let sql = |clause: &str| {
                format!(
                    "SELECT {COLUMNS} FROM sanctum_grants WHERE {clause} ORDER BY created_ms, id"
                )
            };
            let rows = match &which {
                Which::Id(id) => c.query(sql("id = $1").as_str(), &[id]),
                Which::Live(now) => c.query(sql(LIVE).as_str(), &[&(*now as i64)]),
                Which::Guard(now, g) => c.query(
                    sql(&format!("{LIVE} AND guard_id = $2")).as_str(),
                    &[&(*now as i64), g],
                ),
            }
            .map_err(db)?;
            rows.iter().map(grant).collect()
        })
    }
}

/// Which rows a read wants.
enum Which {
    Id(String),
    /// Live at a time, any guard's.
    Live(u64),
    /// Live at a time, bound to one guard.
    Guard(u64, String),
}

impl GrantBackend for PgGrants {
    fn insert(
        &self,
        spec: &GrantSpec,
        made_by: &str,
        inbox_id: &str,
        request_id: &str,
        guard: Option<&str>,
        now: u64,
    ) -> Result<Grant, GrantError> {
        // The row's owner: the guard whose agent asked, whichever page approved it.
        let owner = guard.unwrap_or(&self.guard_id).to_owned();
        let g = Grant::new(spec, (made_by, inbox_id, request_id), now, Some(owner));
        let spec_json = serde_json::to_string(&g.spec)?;
        let row = g.clone();
        self.worker.call(move |c| {
            c.execute(
                "INSERT INTO sanctum_grants (id, guard_id, agent_id, spec_json, made_by, inbox_id,
                     request_id, created_ms, expires_ms, uses_left)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &row.id,
                    &row.guard,
                    &row.spec.agent_id,
                    &spec_json,
                    &row.made_by,
                    &row.inbox_id,
                    &row.request_id,
                    &(now as i64),
                    &row.expires_ms.map(|e| e as i64),
                    &row.uses_left.map(i64::from),
                ],
            )
            .map_err(db)
        })?;
        Ok(g)
    }

    fn get(&self, id: &str) -> Result<Option<Grant>, GrantError> {
        Ok(self.select(Which::Id(id.to_owned()))?.into_iter().next())
    }

    fn live(&self, now: u64) -> Result<Vec<Grant>, GrantError> {
        self.select(Which::Live(now))
    }

    fn spendable(&self, now: u64) -> Result<Vec<Grant>, GrantError> {
        self.select(Which::Guard(now, self.guard_id.clone()))
    }

    fn revoke(&self, id: &str, by: &str, now: u64) -> Result<Grant, GrantError> {
        let (id2, by) = (id.to_owned(), by.to_owned());
        let n = self.worker.call(move |c| {
            let row = c
                .query_opt(
                    "SELECT revoked_ms FROM sanctum_grants WHERE id = $1",
                    &[&id2],
                )
                .map_err(db)?;
            let Some(row) = row else {
                return Err(GrantError::UnknownId(id2));
            };
            if row.try_get::<_, Option<i64>>(0).map_err(db)?.is_some() {
                return Err(GrantError::AlreadyRevoked(id2));
            }
            // Conditional: of two revokes at once, one changes the row.
            c.execute(
                "UPDATE sanctum_grants SET revoked_ms = $2, revoked_by = $3
                 WHERE id = $1 AND revoked_ms IS NULL",
                &[&id2, &(now as i64), &by],
            )
            .map_err(db)
        })?;
        if n != 1 {
            return Err(GrantError::AlreadyRevoked(id.to_owned()));
        }
        self.get(id)?
            .ok_or_else(|| GrantError::UnknownId(id.to_owned()))
    }

    fn spend(&self, ids: &[String], now: u64) -> Result<bool, GrantError> {
        let mut ids = ids.to_vec();
        // One lock order for every spender: two requests spending the same grants never
        // wait on each other in a cycle.
        ids.sort();
        ids.dedup();
        let me = self.guard_id.clone();
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            for id in &ids {
                let n = tx
                    .execute(
                        &format!(
                            "UPDATE sanctum_grants SET uses_left = uses_left - 1
                             WHERE id = $2 AND guard_id = $3 AND {LIVE}"
                        ),
                        &[&(now as i64), id, &me],
                    )
                    .map_err(db)?;
                if n != 1 {
                    // Dropping the transaction rolls back the uses already taken.
                    return Ok(false);
                }
            }
            tx.commit().map_err(db)?;
            Ok(true)
        })
    }
}
