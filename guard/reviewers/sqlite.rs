//! The embedded backend of [`ReviewerStore`]: three tables of its own in the inbox database
//! (accounts, votes, per-category approval counts), on a connection of its own, so the
//! inbox's store is untouched and `serve` and the command line share them. Every change is
//! one `BEGIN IMMEDIATE` transaction; account changes and votes are written to the audit
//! log before their commit (a vote that cannot be audited does not count).

use super::quorum::Refusal;
use super::{
    check_identity, check_name, Reviewer, ReviewerError, ReviewerStore, Role, Vote, MAX_IDENTITIES,
};
use crate::audit::AuditLog;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS reviewers (
    name        TEXT PRIMARY KEY,
    id          TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('viewer','approver','admin')),
    created_ms  INTEGER NOT NULL,
    identities  TEXT NOT NULL DEFAULT '[]',
    totp        TEXT
);
CREATE TABLE IF NOT EXISTS reviewer_votes (
    inbox_id    TEXT NOT NULL,
    account     TEXT NOT NULL,
    vote_json   TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    PRIMARY KEY (inbox_id, account)
);
CREATE TABLE IF NOT EXISTS approvals_required (
    category    TEXT PRIMARY KEY,
    required    INTEGER NOT NULL CHECK (required BETWEEN 1 AND 5)
);
";

/// The audit record kinds this module writes.
pub const AUDIT_ACCOUNT: &str = "reviewer";
pub const AUDIT_VOTE: &str = "approval";

/// The reviewer tables of one inbox database.
pub struct SqliteReviewers {
    conn: Connection,
    audit: Option<AuditLog>,
}

impl std::fmt::Debug for SqliteReviewers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteReviewers").finish_non_exhaustive()
    }
}

fn storage(e: impl std::fmt::Display) -> ReviewerError {
    ReviewerError::Storage(e.to_string())
}

impl SqliteReviewers {
    /// Opens the tables in the database at `path` (created 0600 when missing); account
    /// changes and votes go to `audit` when given.
    pub fn open(path: &Path, audit: Option<AuditLog>) -> Result<Self, ReviewerError> {
        // Only a missing file is made here: closing any descriptor of a database drops
        // every POSIX lock this process holds on it, so an open inbox connection (serve's)
        // would lose its locks, and another process could checkpoint and delete the WAL
        // under it.
        if !path.exists() {
            create_private(path)?;
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let _: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(SCHEMA)?;
        Ok(SqliteReviewers { conn, audit })
    }

    fn append(&self, kind: &'static str, fields: serde_json::Value) -> Result<(), ReviewerError> {
        if let Some(a) = &self.audit {
            a.append_raw(kind, fields)?;
        }
        Ok(())
    }

    fn admins_after(
        tx: &rusqlite::Transaction<'_>,
        name: &str,
        role: Option<Role>,
    ) -> Result<i64, ReviewerError> {
        let others: i64 = tx.query_row(
            "SELECT COUNT(*) FROM reviewers WHERE role = 'admin' AND name <> ?1",
            [name],
            |r| r.get(0),
        )?;
        Ok(others + i64::from(role == Some(Role::Admin)))
    }
}

/// A new, empty database file, 0600 from its first byte (SQLite gives its -wal and -shm
/// files the same mode).
fn create_private(path: &Path) -> Result<(), ReviewerError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| storage(format!("{}: {e}", dir.display())))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .or_else(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(storage(format!("{}: {e}", path.display()))),
        })
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, String, i64, String, bool)> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get::<_, Option<String>>(5)?.is_some(),
    ))
}

fn reviewer(
    (name, id, role, created, ids, totp): (String, String, String, i64, String, bool),
) -> Result<Reviewer, ReviewerError> {
    Ok(Reviewer {
        role: Role::parse(&role)?,
        identities: serde_json::from_str(&ids)?,
        name,
        id,
        created_ms: created.max(0) as u64,
        totp,
    })
}

const COLS: &str = "name, id, role, created_ms, identities, totp";

fn get_in(conn: &Connection, name: &str) -> Result<Option<Reviewer>, ReviewerError> {
    conn.query_row(
        &format!("SELECT {COLS} FROM reviewers WHERE name = ?1"),
        [name],
        row,
    )
    .optional()?
    .map(reviewer)
    .transpose()
}

fn account_record(action: &str, r: &Reviewer) -> serde_json::Value {
    json!({"action": action, "account": r.name, "role": r.role.as_str(),
           "identities": r.identities})
}

impl ReviewerStore for SqliteReviewers {
    fn add(&mut self, name: &str, role: Role) -> Result<Reviewer, ReviewerError> {
        check_name(name)?;
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(storage)?;
        let id = hex::encode(raw);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if get_in(&tx, name)?.is_some() {
            return Err(ReviewerError::Exists(name.to_owned()));
        }
        let r = Reviewer {
            name: name.to_owned(),
            id,
            role,
            created_ms: crate::inbox::now_ms(),
            identities: Vec::new(),
            totp: false,
        };
        tx.execute(
            "INSERT INTO reviewers (name, id, role, created_ms) VALUES (?1, ?2, ?3, ?4)",
            params![r.name, r.id, role.as_str(), r.created_ms as i64],
        )?;
        if let Some(a) = &self.audit {
            a.append_raw(AUDIT_ACCOUNT, account_record("add", &r))?;
        }
        tx.commit()?;
        Ok(r)
    }

    fn list(&self) -> Result<Vec<Reviewer>, ReviewerError> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {COLS} FROM reviewers ORDER BY name"))?;
        let rows = stmt.query_map([], row)?;
        rows.map(|r| r.map_err(ReviewerError::from).and_then(reviewer))
            .collect()
    }

    fn get(&self, name: &str) -> Result<Option<Reviewer>, ReviewerError> {
        get_in(&self.conn, name)
    }

    fn remove(&mut self, name: &str) -> Result<Reviewer, ReviewerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let r = get_in(&tx, name)?.ok_or_else(|| ReviewerError::Unknown(name.to_owned()))?;
        if r.role == Role::Admin && Self::admins_after(&tx, name, None)? == 0 {
            return Err(ReviewerError::LastAdmin(name.to_owned()));
        }
        tx.execute("DELETE FROM reviewers WHERE name = ?1", [name])?;
        if let Some(a) = &self.audit {
            a.append_raw(AUDIT_ACCOUNT, account_record("remove", &r))?;
        }
        tx.commit()?;
        Ok(r)
    }

    fn set_role(&mut self, name: &str, role: Role) -> Result<Reviewer, ReviewerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut r = get_in(&tx, name)?.ok_or_else(|| ReviewerError::Unknown(name.to_owned()))?;
        if r.role == Role::Admin && Self::admins_after(&tx, name, Some(role))? == 0 {
            return Err(ReviewerError::LastAdmin(name.to_owned()));
        }
        tx.execute(
            "UPDATE reviewers SET role = ?2 WHERE name = ?1",
            params![name, role.as_str()],
        )?;
        r.role = role;
        if let Some(a) = &self.audit {
            a.append_raw(AUDIT_ACCOUNT, account_record("role", &r))?;
        }
        tx.commit()?;
        Ok(r)
    }

    fn set_identities(&mut self, name: &str, ids: &[String]) -> Result<Reviewer, ReviewerError> {
        if ids.len() > MAX_IDENTITIES {
            return Err(ReviewerError::TooManyIdentities);
        }
        ids.iter().try_for_each(|i| check_identity(i))?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut r = get_in(&tx, name)?.ok_or_else(|| ReviewerError::Unknown(name.to_owned()))?;
        tx.execute(
            "UPDATE reviewers SET identities = ?2 WHERE name = ?1",
            params![name, serde_json::to_string(ids)?],
        )?;
        r.identities = ids.to_vec();
        if let Some(a) = &self.audit {
            a.append_raw(AUDIT_ACCOUNT, account_record("identities", &r))?;
        }
        tx.commit()?;
        Ok(r)
    }

    fn set_totp(&mut self, name: &str, seed: Option<&str>) -> Result<(), ReviewerError> {
        let n = self.conn.execute(
            "UPDATE reviewers SET totp = ?2 WHERE name = ?1",
            params![name, seed],
        )?;
        if n == 0 {
            return Err(ReviewerError::Unknown(name.to_owned()));
        }
        self.append(
            AUDIT_ACCOUNT,
            json!({"action": if seed.is_some() {"totp-enrol"} else {"totp-clear"}, "account": name}),
        )
    }

    fn totp_seed(&self, name: &str) -> Result<Option<String>, ReviewerError> {
        Ok(self
            .conn
            .query_row("SELECT totp FROM reviewers WHERE name = ?1", [name], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()?
            .flatten())
    }

    fn add_vote(
        &mut self,
        inbox_id: &str,
        vote: &Vote,
        record: &serde_json::Value,
    ) -> Result<Result<Vec<Vote>, Refusal>, ReviewerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // A deny replaces the same reviewer's earlier approval (refusing is never taken
        // away); a second approval by the same account is refused.
        let verb = if vote.kind == crate::policy::request::DecisionKind::Deny {
            "REPLACE"
        } else {
            "IGNORE"
        };
        let n = tx.execute(
            &format!(
                "INSERT OR {verb} INTO reviewer_votes (inbox_id, account, vote_json, at_ms)
                 VALUES (?1, ?2, ?3, ?4)"
            ),
            params![
                inbox_id,
                vote.account,
                serde_json::to_string(vote)?,
                vote.at_ms as i64
            ],
        )?;
        if n == 0 {
            return Ok(Err(Refusal::Twice(vote.account.clone())));
        }
        let votes = votes_in(&tx, inbox_id)?;
        if let Some(a) = &self.audit {
            let mut rec = record.clone();
            rec["votesSoFar"] = json!(votes.iter().map(|v| &v.account).collect::<Vec<_>>());
            a.append_raw(AUDIT_VOTE, rec)?;
        }
        tx.commit()?;
        Ok(Ok(votes))
    }

    fn votes(&self, inbox_id: &str) -> Result<Vec<Vote>, ReviewerError> {
        votes_in(&self.conn, inbox_id)
    }

    fn set_required(
        &mut self,
        _guard: &str,
        rules: &BTreeMap<String, u8>,
    ) -> Result<(), ReviewerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM approvals_required", [])?;
        for (cat, n) in rules {
            tx.execute(
                "INSERT INTO approvals_required (category, required) VALUES (?1, ?2)",
                params![cat, n],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn required(&self, _owner: Option<&str>, category: &str) -> Result<u8, ReviewerError> {
        let n: Option<i64> = self
            .conn
            .query_row(
                "SELECT required FROM approvals_required WHERE category = ?1",
                [category],
                |r| r.get(0),
            )
            .optional()?;
        Ok(n.and_then(|n| u8::try_from(n).ok()).unwrap_or(1).max(1))
    }
}

fn votes_in(conn: &Connection, inbox_id: &str) -> Result<Vec<Vote>, ReviewerError> {
    let mut stmt = conn.prepare(
        "SELECT vote_json FROM reviewer_votes WHERE inbox_id = ?1 ORDER BY at_ms, rowid",
    )?;
    let rows = stmt.query_map([inbox_id], |r| r.get::<_, String>(0))?;
    rows.map(|r| Ok(serde_json::from_str(&r?)?)).collect()
}

/// Creates the [`super::DEFAULT_ADMIN`] account when a state dir has no account at all (a
/// guard from before accounts, or a new one): the person holding the start link keeps
/// deciding, as an admin. Returns whether it was created.
pub fn ensure_admin(store: &mut dyn ReviewerStore) -> Result<bool, ReviewerError> {
    if !store.list()?.is_empty() {
        return Ok(false);
    }
    match store.add(super::DEFAULT_ADMIN, Role::Admin) {
        Ok(_) => Ok(true),
        Err(ReviewerError::Exists(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_add_list_role_remove_and_the_last_admin_stays() {
        let d = tempfile::tempdir().expect("tmp");
        let mut s = SqliteReviewers::open(&d.path().join("inbox.db"), None).expect("open");
        assert!(ensure_admin(&mut s).expect("admin"));
        assert!(!ensure_admin(&mut s).expect("again"));
        let alice = s.add("alice", Role::Approver).expect("alice");
        assert!(matches!(
            s.add("alice", Role::Viewer),
            Err(ReviewerError::Exists(_))
        ));
        assert!(matches!(
            s.add("Alice", Role::Viewer),
            Err(ReviewerError::BadName(_))
        ));
        assert!(matches!(
            s.remove("admin"),
            Err(ReviewerError::LastAdmin(_))
        ));
        assert!(matches!(
            s.set_role("admin", Role::Viewer),
            Err(ReviewerError::LastAdmin(_))
        ));
        s.set_role("alice", Role::Admin).expect("promote");
        s.remove("admin").expect("remove admin now");
        let names: Vec<String> = s
            .list()
            .expect("list")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["alice"]);
        s.remove("alice").expect_err("last admin");
        // A re-added name is a new account: its id differs.
        s.add("bob", Role::Admin).expect("bob");
        s.remove("alice").expect("alice");
        let again = s.add("alice", Role::Approver).expect("alice again");
        assert_ne!(again.id, alice.id);
        assert!(matches!(s.remove("nobody"), Err(ReviewerError::Unknown(_))));
    }

    #[test]
    fn a_vote_counts_once_per_account_and_rules_round_trip() {
        let d = tempfile::tempdir().expect("tmp");
        let mut s = SqliteReviewers::open(&d.path().join("inbox.db"), None).expect("open");
        let v = Vote {
            account: "alice".into(),
            account_id: "x".into(),
            role: Role::Approver,
            kind: crate::policy::request::DecisionKind::AllowOnce,
            via: "cli:alice".into(),
            at_ms: 1,
        };
        let first = s.add_vote("e1", &v, &json!({})).expect("vote");
        assert_eq!(first, Ok(vec![v.clone()]));
        let again = s.add_vote("e1", &v, &json!({})).expect("vote");
        assert_eq!(again, Err(Refusal::Twice("alice".into())));
        assert_eq!(s.votes("e1").expect("votes").len(), 1);
        assert_eq!(s.votes("e2").expect("votes").len(), 0);
        assert_eq!(s.required(None, "run-code").expect("req"), 1);
        s.set_required("", &BTreeMap::from([("run-code".to_string(), 2)]))
            .expect("rules");
        assert_eq!(s.required(None, "run-code").expect("req"), 2);
        assert_eq!(s.required(None, "write").expect("req"), 1);
    }
}
