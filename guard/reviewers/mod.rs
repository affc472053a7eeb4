//! Reviewer accounts and two-person approval. This module owns who may act on the inbox:
//! named accounts with a role (viewer, approver, admin), the identities each account is
//! linked to (so a requester cannot approve its own request where the request says who
//! asked), the approvals given so far on requests that need several, and the counting rule
//! ([`quorum`]) that turns them into one decision.
//!
//! Storage is behind [`ReviewerStore`]: the embedded SQLite backend ([`sqlite`]) keeps its
//! own tables in the inbox database; a fleet's backend ([`pg`]) keeps them in the
//! PostgreSQL database its guards share, so accounts and votes are the fleet's.

pub mod pg;
pub mod quorum;
pub mod sqlite;
pub mod vote;

pub use pg::PgReviewers;
pub use sqlite::SqliteReviewers;

use serde::{Deserialize, Serialize};

/// The account `serve` creates when a state dir has none: the one reviewer a guard had
/// before accounts existed (the start link and `web login-link`'s default name).
pub const DEFAULT_ADMIN: &str = "admin";

/// Longest account name.
pub const MAX_NAME: usize = 32;

/// Most linked identities one account may list.
pub const MAX_IDENTITIES: usize = 16;

/// What an account may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Sees the cards; decides nothing.
    Viewer,
    /// Decides requests.
    Approver,
    /// Decides requests and manages reviewers.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Result<Role, ReviewerError> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "approver" => Ok(Role::Approver),
            "admin" => Ok(Role::Admin),
            other => Err(ReviewerError::BadRole(other.chars().take(40).collect())),
        }
    }

    /// Whether this role may approve or deny a request.
    pub fn can_decide(self) -> bool {
        self != Role::Viewer
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reviewer account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reviewer {
    pub name: String,
    /// Random, new for every `add`: a session or vote of a removed account never counts for
    /// a later account of the same name.
    pub id: String,
    pub role: Role,
    pub created_ms: u64,
    /// Other names this person acts under (`cli:<unix user>`, a chat sender, an agent's
    /// session key): a request asked under one of them is this person's own request.
    pub identities: Vec<String>,
    /// Whether the account has its own TOTP seed (the seed itself never leaves the store).
    pub totp: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReviewerError {
    #[error(
        "reviewer name {0:?} is not allowed: 1-32 characters, a lowercase letter first, then \
         lowercase letters, digits, '.', '_' or '-'"
    )]
    BadName(String),
    #[error("unknown role {0:?}: viewer, approver or admin")]
    BadRole(String),
    #[error(
        "linked identity {0:?} is not allowed: 1-128 printable characters without spaces, \
         e.g. cli:alice or agent:main:telegram:dm:42"
    )]
    BadIdentity(String),
    #[error("an account may list at most {MAX_IDENTITIES} linked identities")]
    TooManyIdentities,
    #[error("reviewer {0} already exists")]
    Exists(String),
    #[error("no reviewer account named {0}")]
    Unknown(String),
    #[error(
        "{0} is the last admin: add another admin first, so someone can still manage reviewers"
    )]
    LastAdmin(String),
    #[error("reviewer store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("reviewer store: {0}")]
    Storage(String),
    /// The fleet database cannot be reached: nobody's vote counts until it can.
    #[error("reviewer store: {0}")]
    Unavailable(#[from] crate::inbox::pg_side::Unavailable),
    #[error("reviewer audit: {0}")]
    Audit(#[from] crate::audit::AuditError),
    #[error("reviewer record encoding: {0}")]
    Json(#[from] serde_json::Error),
}

/// Account names: an allow-list grammar, `[a-z][a-z0-9._-]{0,31}`. The name appears in
/// audit records, URLs and the page, so nothing outside it is accepted (no case folding,
/// no look-alikes).
pub fn check_name(name: &str) -> Result<(), ReviewerError> {
    let mut bytes = name.bytes();
    let ok = (1..=MAX_NAME).contains(&name.len())
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ReviewerError::BadName(name.chars().take(40).collect()))
    }
}

/// A linked identity: printable ASCII without spaces, at most 128 bytes.
pub fn check_identity(id: &str) -> Result<(), ReviewerError> {
    if (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(ReviewerError::BadIdentity(id.chars().take(40).collect()))
    }
}

/// One approval (or the deny) a reviewer gave on an inbox entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vote {
    /// The account (or, for a channel with no account, its own identity, e.g. `cli:bob`).
    pub account: String,
    /// The account's id at the time (empty for an identity without an account).
    pub account_id: String,
    pub role: Role,
    pub kind: crate::policy::request::DecisionKind,
    /// How it came: `web:alice/1a2b3c4d@127.0.0.1:5000`, `cli:alice`.
    pub via: String,
    pub at_ms: u64,
}

/// The narrow storage interface a backend implements (SQLite for one guard, PostgreSQL for
/// a fleet). Every method is one transaction.
pub trait ReviewerStore: Send {
    /// Creates an account (refused when the name is taken).
    fn add(&mut self, name: &str, role: Role) -> Result<Reviewer, ReviewerError>;
    /// Every account, by name.
    fn list(&self) -> Result<Vec<Reviewer>, ReviewerError>;
    fn get(&self, name: &str) -> Result<Option<Reviewer>, ReviewerError>;
    /// Deletes an account and its seed; returns it. Refused for the last admin.
    fn remove(&mut self, name: &str) -> Result<Reviewer, ReviewerError>;
    /// Changes a role; returns the account as it is now. Refused when it demotes the last
    /// admin.
    fn set_role(&mut self, name: &str, role: Role) -> Result<Reviewer, ReviewerError>;
    /// Replaces an account's linked identities.
    fn set_identities(&mut self, name: &str, ids: &[String]) -> Result<Reviewer, ReviewerError>;
    /// Stores (Some) or clears (None) an account's TOTP seed (base32).
    fn set_totp(&mut self, name: &str, seed: Option<&str>) -> Result<(), ReviewerError>;
    /// The account's TOTP seed (base32), if enrolled.
    fn totp_seed(&self, name: &str) -> Result<Option<String>, ReviewerError>;
    /// Records `vote` on `inbox_id` unless that account already voted there; returns every
    /// vote on it afterwards (oldest first), or [`quorum::Refusal::Twice`] as `Ok(Err)`.
    fn add_vote(
        &mut self,
        inbox_id: &str,
        vote: &Vote,
        record: &serde_json::Value,
    ) -> Result<Result<Vec<Vote>, quorum::Refusal>, ReviewerError>;
    /// The votes on `inbox_id`, oldest first.
    fn votes(&self, inbox_id: &str) -> Result<Vec<Vote>, ReviewerError>;
    /// Replaces guard `guard`'s per-category approval counts (`serve` publishes its policy's
    /// here, so `inbox approve` in another process, or another guard of a fleet, counts its
    /// requests by its rule). A lone guard's store holds one guard's: `guard` is not kept.
    fn set_required(
        &mut self,
        guard: &str,
        rules: &std::collections::BTreeMap<String, u8>,
    ) -> Result<(), ReviewerError>;
    /// How many approvals a request of `category` filed by guard `owner` needs (None: the
    /// store's one guard). 1 when that guard's rule names none.
    fn required(&self, owner: Option<&str>, category: &str) -> Result<u8, ReviewerError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_names_follow_the_allow_list() {
        for good in ["a", "alice", "bob.smith", "ops-2", "x_y", &"a".repeat(32)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Alice",
            "1abc",
            "-a",
            ".a",
            "a b",
            "a/b",
            "a:b",
            "al\u{0456}ce",
            "<script>",
            &"a".repeat(33),
            "a\n",
        ] {
            assert!(
                matches!(check_name(bad), Err(ReviewerError::BadName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn roles_parse_and_only_viewers_cannot_decide() {
        for r in [Role::Viewer, Role::Approver, Role::Admin] {
            assert_eq!(Role::parse(r.as_str()).expect("role"), r);
        }
        assert!(!Role::Viewer.can_decide());
        assert!(Role::Approver.can_decide() && Role::Admin.can_decide());
        assert!(matches!(
            Role::parse("root"),
            Err(ReviewerError::BadRole(_))
        ));
    }
}
