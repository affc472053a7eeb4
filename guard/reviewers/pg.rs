//! The fleet's backend of [`ReviewerStore`]: accounts (with their linked identities and TOTP
//! seed), votes and the per-category approval counts in the PostgreSQL database a fleet of
//! guards shares, so one account signs in on any guard's page and two approvers on two
//! guards' pages complete one request. Votes are keyed by the inbox id (one id across the
//! fleet). Each vote is one transaction under a per-request advisory lock: two votes at
//! once are counted one after the other, so the second of two approvers always sees the
//! first (neither may wait for the other forever), and the deciding guard's audit record of
//! the vote is written before it commits. The decision itself stays the inbox's conditional
//! `UPDATE`: two completing votes at once make exactly one decision.

use super::quorum::Refusal;
use super::{
    check_identity, check_name, Reviewer, ReviewerError, ReviewerStore, Role, Vote, MAX_IDENTITIES,
};
use crate::audit::AuditLog;
use crate::inbox::pg_side::{refused_by_db, PgWorker, Unavailable};
use postgres::GenericClient;
use serde_json::json;
use std::collections::BTreeMap;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sanctum_reviewers (
    name        TEXT PRIMARY KEY,
    id          TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('viewer','approver','admin')),
    created_ms  BIGINT NOT NULL,
    identities  TEXT NOT NULL DEFAULT '[]',
    totp        TEXT
);
CREATE TABLE IF NOT EXISTS sanctum_reviewer_votes (
    inbox_id    TEXT NOT NULL,
    account     TEXT NOT NULL,
    vote_json   TEXT NOT NULL,
    at_ms       BIGINT NOT NULL,
    seq         BIGSERIAL,
    PRIMARY KEY (inbox_id, account)
);
CREATE TABLE IF NOT EXISTS sanctum_guard_approvals (
    guard       TEXT NOT NULL,
    category    TEXT NOT NULL,
    required    INTEGER NOT NULL CHECK (required BETWEEN 1 AND 5),
    PRIMARY KEY (guard, category)
);
";

/// Fixed numbers, not the inbox's or the grants': the lock the tables are created under,
/// and the first key of the locks account changes and votes take.
const SCHEMA_LOCK: i64 = 0x0053_5245_5649_4557;
const LOCK_SPACE: i32 = 0x5352_5657;

fn db(e: postgres::Error) -> ReviewerError {
    if refused_by_db(&e) {
        ReviewerError::Storage(e.to_string())
    } else {
        ReviewerError::Unavailable(Unavailable(e.to_string()))
    }
}

/// The fleet's reviewer tables, as one guard (or the command line) uses them.
pub struct PgReviewers {
    worker: PgWorker,
    audit: Option<AuditLog>,
}

impl std::fmt::Debug for PgReviewers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgReviewers").finish_non_exhaustive()
    }
}

const COLS: &str = "name, id, role, created_ms, identities, totp IS NOT NULL";

fn reviewer(r: &postgres::Row) -> Result<Reviewer, ReviewerError> {
    let role: String = r.try_get(2).map_err(db)?;
    let ids: String = r.try_get(4).map_err(db)?;
    Ok(Reviewer {
        name: r.try_get(0).map_err(db)?,
        id: r.try_get(1).map_err(db)?,
        role: Role::parse(&role)?,
        created_ms: r.try_get::<_, i64>(3).map_err(db)?.max(0) as u64,
        identities: serde_json::from_str(&ids)?,
        totp: r.try_get(5).map_err(db)?,
    })
}

fn get_in(c: &mut impl GenericClient, name: &str) -> Result<Option<Reviewer>, ReviewerError> {
    c.query_opt(
        &format!("SELECT {COLS} FROM sanctum_reviewers WHERE name = $1"),
        &[&name],
    )
    .map_err(db)?
    .as_ref()
    .map(reviewer)
    .transpose()
}

/// Serializes account changes across the fleet (the last-admin rule reads, then writes).
fn lock_accounts(tx: &mut postgres::Transaction<'_>) -> Result<(), ReviewerError> {
    tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_SPACE])
        .map(drop)
        .map_err(db)
}

fn admins_after(
    tx: &mut postgres::Transaction<'_>,
    name: &str,
    role: Option<Role>,
) -> Result<i64, ReviewerError> {
    let others: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM sanctum_reviewers WHERE role = 'admin' AND name <> $1",
            &[&name],
        )
        .map_err(db)?
        .try_get(0)
        .map_err(db)?;
    Ok(others + i64::from(role == Some(Role::Admin)))
}

fn account_record(action: &str, r: &Reviewer) -> serde_json::Value {
    json!({"action": action, "account": r.name, "role": r.role.as_str(),
           "identities": r.identities})
}

fn votes_in(c: &mut impl GenericClient, inbox_id: &str) -> Result<Vec<Vote>, ReviewerError> {
    let rows = c
        .query(
            "SELECT vote_json FROM sanctum_reviewer_votes WHERE inbox_id = $1
             ORDER BY at_ms, seq",
            &[&inbox_id],
        )
        .map_err(db)?;
    rows.iter()
        .map(|r| {
            Ok(serde_json::from_str(
                &r.try_get::<_, String>(0).map_err(db)?,
            )?)
        })
        .collect()
}

impl PgReviewers {
    /// The reviewer tables of the fleet database at `config`; account changes and votes go
    /// to `audit` (this guard's own log) when given. The database need not be up.
    pub fn open(
        config: crate::inbox::pg_conn::Database,
        audit: Option<AuditLog>,
    ) -> Result<Self, ReviewerError> {
        let worker = PgWorker::start(config, "reviewers-pg", SCHEMA, SCHEMA_LOCK)
            .map_err(|e| ReviewerError::Storage(format!("reviewers-pg thread: {e}")))?;
        Ok(PgReviewers { worker, audit })
    }

    /// Runs `f` in one transaction holding the account lock; `f`'s audit record (if any) is
    /// written before the commit.
    fn account_change<T: Send + 'static>(
        &self,
        f: impl FnOnce(
                &mut postgres::Transaction<'_>,
            ) -> Result<(T, Option<serde_json::Value>), ReviewerError>
            + Send
            + 'static,
    ) -> Result<T, ReviewerError> {
        let audit = self.audit.clone();
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            lock_accounts(&mut tx)?;
            let (out, record) = f(&mut tx)?;
            if let (Some(a), Some(rec)) = (&audit, record) {
                a.append_raw(super::sqlite::AUDIT_ACCOUNT, rec)?;
            }
            tx.commit().map_err(db)?;
            Ok(out)
        })
    }
}

impl ReviewerStore for PgReviewers {
    fn add(&mut self, name: &str, role: Role) -> Result<Reviewer, ReviewerError> {
        check_name(name)?;
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|e| ReviewerError::Storage(e.to_string()))?;
        let r = Reviewer {
            name: name.to_owned(),
            id: hex::encode(raw),
            role,
            created_ms: crate::inbox::now_ms(),
            identities: Vec::new(),
            totp: false,
        };
        self.account_change(move |tx| {
            if get_in(tx, &r.name)?.is_some() {
                return Err(ReviewerError::Exists(r.name));
            }
            tx.execute(
                "INSERT INTO sanctum_reviewers (name, id, role, created_ms) VALUES ($1, $2, $3, $4)",
                &[&r.name, &r.id, &r.role.as_str(), &(r.created_ms as i64)],
            )
            .map_err(db)?;
            let rec = account_record("add", &r);
            Ok((r, Some(rec)))
        })
    }

    fn list(&self) -> Result<Vec<Reviewer>, ReviewerError> {
        self.worker.call(|c| {
            let rows = c
                .query(
                    &format!("SELECT {COLS} FROM sanctum_reviewers ORDER BY name"),
                    &[],
                )
                .map_err(db)?;
            rows.iter().map(reviewer).collect()
        })
    }

    fn get(&self, name: &str) -> Result<Option<Reviewer>, ReviewerError> {
        let name = name.to_owned();
        self.worker.call(move |c| get_in(c, &name))
    }

    fn remove(&mut self, name: &str) -> Result<Reviewer, ReviewerError> {
        let name = name.to_owned();
        self.account_change(move |tx| {
            let r = get_in(tx, &name)?.ok_or_else(|| ReviewerError::Unknown(name.clone()))?;
            if r.role == Role::Admin && admins_after(tx, &name, None)? == 0 {
                return Err(ReviewerError::LastAdmin(name));
            }
            tx.execute("DELETE FROM sanctum_reviewers WHERE name = $1", &[&name])
                .map_err(db)?;
            let rec = account_record("remove", &r);
            Ok((r, Some(rec)))
        })
    }

    fn set_role(&mut self, name: &str, role: Role) -> Result<Reviewer, ReviewerError> {
        let name = name.to_owned();
        self.account_change(move |tx| {
            let mut r = get_in(tx, &name)?.ok_or_else(|| ReviewerError::Unknown(name.clone()))?;
            if r.role == Role::Admin && admins_after(tx, &name, Some(role))? == 0 {
                return Err(ReviewerError::LastAdmin(name));
            }
            tx.execute(
                "UPDATE sanctum_reviewers SET role = $2 WHERE name = $1",
                &[&name, &role.as_str()],
            )
            .map_err(db)?;
            r.role = role;
            let rec = account_record("role", &r);
            Ok((r, Some(rec)))
        })
    }

    fn set_identities(&mut self, name: &str, ids: &[String]) -> Result<Reviewer, ReviewerError> {
        if ids.len() > MAX_IDENTITIES {
            return Err(ReviewerError::TooManyIdentities);
        }
        ids.iter().try_for_each(|i| check_identity(i))?;
        let (name, ids) = (name.to_owned(), ids.to_vec());
        let ids_json = serde_json::to_string(&ids)?;
        self.account_change(move |tx| {
            let mut r = get_in(tx, &name)?.ok_or_else(|| ReviewerError::Unknown(name.clone()))?;
            tx.execute(
                "UPDATE sanctum_reviewers SET identities = $2 WHERE name = $1",
                &[&name, &ids_json],
            )
            .map_err(db)?;
            r.identities = ids;
            let rec = account_record("identities", &r);
            Ok((r, Some(rec)))
        })
    }

    fn set_totp(&mut self, name: &str, seed: Option<&str>) -> Result<(), ReviewerError> {
        let (name, seed) = (name.to_owned(), seed.map(str::to_owned));
        self.account_change(move |tx| {
            let n = tx
                .execute(
                    "UPDATE sanctum_reviewers SET totp = $2 WHERE name = $1",
                    &[&name, &seed],
                )
                .map_err(db)?;
            if n == 0 {
                return Err(ReviewerError::Unknown(name));
            }
            let action = if seed.is_some() {
                "totp-enrol"
            } else {
                "totp-clear"
            };
            Ok(((), Some(json!({"action": action, "account": name}))))
        })
    }

    fn totp_seed(&self, name: &str) -> Result<Option<String>, ReviewerError> {
        let name = name.to_owned();
        self.worker.call(move |c| {
            Ok(c.query_opt(
                "SELECT totp FROM sanctum_reviewers WHERE name = $1",
                &[&name],
            )
            .map_err(db)?
            .map(|r| r.try_get::<_, Option<String>>(0))
            .transpose()
            .map_err(db)?
            .flatten())
        })
    }

    fn add_vote(
        &mut self,
        inbox_id: &str,
        vote: &Vote,
        record: &serde_json::Value,
    ) -> Result<Result<Vec<Vote>, Refusal>, ReviewerError> {
        let (inbox_id, vote, record) = (inbox_id.to_owned(), vote.clone(), record.clone());
        let vote_json = serde_json::to_string(&vote)?;
        let audit = self.audit.clone();
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            // Votes on one request, one at a time across the fleet.
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&LOCK_SPACE, &inbox_id],
            )
            .map_err(db)?;
            // A deny replaces the same reviewer's earlier approval (refusing is never taken
            // away); a second approval by the same account is refused.
            let conflict = if vote.kind == crate::policy::request::DecisionKind::Deny {
                "DO UPDATE SET vote_json = EXCLUDED.vote_json, at_ms = EXCLUDED.at_ms"
            } else {
                "DO NOTHING"
            };
            let n = tx
                .execute(
                    &format!(
                        "INSERT INTO sanctum_reviewer_votes (inbox_id, account, vote_json, at_ms)
                         VALUES ($1, $2, $3, $4) ON CONFLICT (inbox_id, account) {conflict}"
                    ),
                    &[&inbox_id, &vote.account, &vote_json, &(vote.at_ms as i64)],
                )
                .map_err(db)?;
            if n == 0 {
                return Ok(Err(Refusal::Twice(vote.account.clone())));
            }
            let votes = votes_in(&mut tx, &inbox_id)?;
            if let Some(a) = &audit {
                let mut rec = record;
                rec["votesSoFar"] = json!(votes.iter().map(|v| &v.account).collect::<Vec<_>>());
                a.append_raw(super::sqlite::AUDIT_VOTE, rec)?;
            }
            tx.commit().map_err(db)?;
            Ok(Ok(votes))
        })
    }

    fn votes(&self, inbox_id: &str) -> Result<Vec<Vote>, ReviewerError> {
        let inbox_id = inbox_id.to_owned();
        self.worker.call(move |c| votes_in(c, &inbox_id))
    }

    /// Every category gets a row, the ones the policy names none of at 1: a guard's rows are
    /// its whole table, so a missing row means a guard that never published (see
    /// [`Self::required`]).
    fn set_required(
        &mut self,
        guard: &str,
        rules: &BTreeMap<String, u8>,
    ) -> Result<(), ReviewerError> {
        let guard = guard.to_owned();
        let mut table: BTreeMap<String, u8> = crate::policy::file::ALL_CATEGORIES
            .iter()
            .map(|c| (crate::policy::file::category_name(*c), 1))
            .collect();
        table.extend(rules.iter().map(|(c, n)| (c.clone(), *n)));
        self.worker.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            lock_accounts(&mut tx)?;
            tx.execute(
                "DELETE FROM sanctum_guard_approvals WHERE guard = $1",
                &[&guard],
            )
            .map_err(db)?;
            for (cat, n) in &table {
                tx.execute(
                    "INSERT INTO sanctum_guard_approvals (guard, category, required) \
                     VALUES ($1, $2, $3)",
                    &[&guard, cat, &i32::from(*n)],
                )
                .map_err(db)?;
            }
            tx.commit().map_err(db)
        })
    }

    /// The owning guard's published count. A guard that never published (its rows gone, or
    /// a request older than its table) counts by the strictest rule any guard published for
    /// the category; none published at all is refused: counting 1 there would let one
    /// reviewer release what a guard's policy asks two for.
    fn required(&self, owner: Option<&str>, category: &str) -> Result<u8, ReviewerError> {
        let category = category.to_owned();
        let owner = owner.unwrap_or_default().to_owned();
        self.worker.call(move |c| {
            let n: Option<i32> = c
                .query_one(
                    "SELECT COALESCE( \
                       (SELECT required FROM sanctum_guard_approvals \
                         WHERE guard = $1 AND category = $2), \
                       (SELECT MAX(required) FROM sanctum_guard_approvals WHERE category = $2))",
                    &[&owner, &category],
                )
                .map_err(db)?
                .try_get(0)
                .map_err(db)?;
            match n.and_then(|n| u8::try_from(n).ok()) {
                Some(n) => Ok(n.max(1)),
                None => Err(ReviewerError::Storage(format!(
                    "no guard of the fleet has published its approval counts for {category}: \
                     start a guard (serve) with the fleet's [store] first"
                ))),
            }
        })
    }
}
