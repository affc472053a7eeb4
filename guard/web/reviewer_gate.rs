//! The web prompt's side of reviewer accounts: every signed-in request is checked against
//! the account its session names (removed, or replaced by a new account of the same name:
//! the session ends there and then), a decision is cast as that account's vote
//! ([`crate::reviewers::vote`]), and partial approvals reach open pages live.

use super::api::Shared;
use super::auth::SessionView;
use super::http::{error, Resp};
use super::metrics::global as metrics;
use crate::inbox::Entry;
use crate::reviewers::quorum::Refusal;
use crate::reviewers::vote::{self, Ballot, Cast};
use crate::reviewers::{PgReviewers, ReviewerError, ReviewerStore, Role, SqliteReviewers};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Where the reviewer tables are: the inbox database in the state dir, or a fleet's
/// PostgreSQL database.
pub enum Location {
    Sqlite(PathBuf),
    Fleet(Box<crate::inbox::pg_conn::Database>),
}

/// The reviewer tables, opened on first use.
pub struct ReviewerDb {
    at: Location,
    audit: Option<crate::audit::AuditLog>,
    conn: Mutex<Option<Box<dyn ReviewerStore>>>,
    /// The role each account (by id) last had, for reads while a fleet's database is away:
    /// the page can still show that it is away. Never used for a change.
    seen: Mutex<std::collections::HashMap<String, Role>>,
}

impl ReviewerDb {
    pub fn new(path: PathBuf, audit: Option<crate::audit::AuditLog>) -> Self {
        Self::at(Location::Sqlite(path), audit)
    }

    pub fn at(at: Location, audit: Option<crate::audit::AuditLog>) -> Self {
        ReviewerDb {
            at,
            audit,
            conn: Mutex::new(None),
            seen: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Runs `f` on the store (blocking: call it off the async threads).
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn ReviewerStore) -> Result<T, ReviewerError>,
    ) -> Result<T, ReviewerError> {
        let mut g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            let audit = self.audit.clone();
            *g = Some(match &self.at {
                Location::Sqlite(p) => Box::new(SqliteReviewers::open(p, audit)?),
                Location::Fleet(c) => Box::new(PgReviewers::open((**c).clone(), audit)?),
            });
        }
        match g.as_mut() {
            Some(s) => f(s.as_mut()),
            None => Err(ReviewerError::Storage("reviewer store not open".into())),
        }
    }
}

/// Runs `f` on the store off the async threads; a store error is a 500 (fail closed).
pub async fn blocking<T: Send + 'static>(
    sh: &Shared,
    f: impl FnOnce(&mut dyn ReviewerStore) -> Result<T, ReviewerError> + Send + 'static,
) -> Result<T, Resp> {
    let db = sh.reviewers.clone();
    match tokio::task::spawn_blocking(move || db.with(f)).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(ReviewerError::Unavailable(_))) => Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unavailable",
            "Not applied: the fleet database cannot be reached (reviewer accounts live there). \
             Nothing was decided.",
        )),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "web: reviewer store");
            Err(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "reviewers",
                &e.to_string(),
            ))
        }
        Err(_) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "reviewers",
            "internal",
        )),
    }
}

/// The role of the session's account as the store has it now. An account that is gone (or
/// is another account of the same name) ends every session of that name: 401.
pub async fn role_of(sh: &Shared, session: &SessionView) -> Result<Role, Resp> {
    role_for(sh, session, false).await
}

/// [`role_of`]; for a `read` while the fleet's database is away, the role this account
/// last had (nothing can change it meanwhile: account changes need the database too).
pub async fn role_for(sh: &Shared, session: &SessionView, read: bool) -> Result<Role, Resp> {
    let name = session.account.clone();
    let acct = match blocking(sh, move |s| s.get(&name)).await {
        Ok(a) => a,
        Err(resp) => {
            let seen = sh.reviewers.seen.lock().unwrap_or_else(|p| p.into_inner());
            return match seen.get(&session.account_id) {
                Some(role) if read && resp.status() == StatusCode::SERVICE_UNAVAILABLE => Ok(*role),
                _ => Err(resp),
            };
        }
    };
    match acct {
        Some(r) if r.id == session.account_id => {
            let mut seen = sh.reviewers.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.insert(r.id.clone(), r.role);
            Ok(r.role)
        }
        _ => {
            // The account is gone whatever this answers: its refusal below stands either way.
            let n = sh.sessions.end_account(&session.account).unwrap_or(0);
            tracing::warn!(account = %session.account, sessions = n,
                           "web: reviewer account gone; its sessions ended");
            metrics().web_refusal("no-account");
            Err(error(
                StatusCode::UNAUTHORIZED,
                "no-account",
                "Your reviewer account was removed (or replaced); this session has ended. \
                 Ask an admin for a new login link.",
            ))
        }
    }
}

/// What a vote on `entry` comes to for `session`'s account (which has `role`), or the
/// answer refusing it (403 with the reason).
pub async fn cast(
    sh: &Shared,
    entry: Entry,
    session: &SessionView,
    via: String,
    kind: crate::policy::request::DecisionKind,
    reason: Option<String>,
) -> Result<Cast, Resp> {
    let need = required(sh, &entry).await?;
    let name = session.account.clone();
    let id = session.account_id.clone();
    let out = blocking(sh, move |s| {
        let mut voter = vote::voter_of(s, &name)?;
        if voter.account_id != id {
            voter.role = None;
        }
        let ballot = Ballot {
            voter,
            via,
            kind,
            reason,
        };
        vote::cast(s, &entry, need, ballot)
    })
    .await?;
    out.map_err(refused)
}

fn refused(r: Refusal) -> Resp {
    metrics().web_refusal("reviewer");
    let code = match r {
        Refusal::NoAccount => "no-account",
        Refusal::Viewer(_) => "viewer",
        Refusal::Twice(_) => "already-approved",
        Refusal::OwnRequest(_) => "own-request",
    };
    error(StatusCode::FORBIDDEN, code, &r.to_string())
}

/// How many approvals `entry` needs: the running policy's rule for its category, and in a
/// fleet at least the rule of the guard whose agent asked (as it published it): a page on a
/// guard whose policy asks fewer never releases another guard's request with fewer.
pub async fn required(sh: &Shared, entry: &Entry) -> Result<u8, Resp> {
    let own = sh
        .engine
        .as_ref()
        .map(|e| e.judge().approvals_required(entry.verdict.category));
    if let (Some(n), None) = (own, &entry.guard) {
        return Ok(n);
    }
    let cat = crate::policy::file::category_name(entry.verdict.category);
    let owner = entry.guard.clone();
    let owners = blocking(sh, move |s| s.required(owner.as_deref(), &cat)).await?;
    Ok(own.unwrap_or(1).max(owners))
}

/// The `approval` event and answer body of a partial approval.
pub fn partial_json(id: &str, approvers: &[String], need: u8) -> Value {
    json!({"id": id, "state": "pending", "approvals": approvers, "approvalsRequired": need,
           "message": format!("approved by {} ({} of {need}); waiting for another reviewer",
                              approvers.join(", "), approvers.len())})
}

/// Raises the `approvalsRequired` of pending fleet entries (`guard` set) to the rule their
/// guard published, as [`required`] does for a vote: a lenient guard's page shows a strict
/// guard's request as needing two from the first look, not after the first approval.
pub async fn owners_rules(sh: &Shared, items: &mut [Value]) -> Result<(), Resp> {
    let key = |v: &Value| -> Option<(String, String)> {
        (v["state"] == "pending").then_some(())?;
        Some((
            v["guard"].as_str()?.to_owned(),
            v["category"].as_str()?.to_owned(),
        ))
    };
    let mut rules = std::collections::HashMap::new();
    let mut asks = std::collections::BTreeSet::new();
    for k in items.iter().filter_map(key) {
        match shown_rules().get(&k) {
            Some(n) => {
                rules.insert(k, n);
            }
            None => {
                asks.insert(k);
            }
        }
    }
    if !asks.is_empty() {
        let fetched = blocking(sh, move |s| {
            asks.into_iter()
                .map(|(g, c)| Ok(((g.clone(), c.clone()), s.required(Some(&g), &c)?)))
                .collect::<Result<Vec<_>, ReviewerError>>()
        })
        .await?;
        for (k, n) in fetched {
            shown_rules().put(k.clone(), n);
            rules.insert(k, n);
        }
    }
    for v in items.iter_mut() {
        if let Some(n) = key(v).and_then(|k| rules.get(&k)) {
            let own = v["approvalsRequired"].as_u64().unwrap_or(1);
            v["approvalsRequired"] = json!(own.max(u64::from(*n)));
        }
    }
    Ok(())
}

/// The published counts [`owners_rules`] showed lately, kept for [`SHOWN_FOR`]: every open
/// page's stream would otherwise ask the database once per arrival of the fleet (a flooding
/// agent on one guard times the pages open on all). Display only: a vote always asks the
/// database ([`required`]), so a count a guard changed at its restart is enforced at once and
/// shown within seconds.
struct ShownRules(Mutex<std::collections::HashMap<(String, String), (u8, std::time::Instant)>>);

const SHOWN_FOR: std::time::Duration = std::time::Duration::from_secs(5);

fn shown_rules() -> &'static ShownRules {
    static RULES: std::sync::OnceLock<ShownRules> = std::sync::OnceLock::new();
    RULES.get_or_init(|| ShownRules(Mutex::new(std::collections::HashMap::new())))
}

impl ShownRules {
    fn get(&self, k: &(String, String)) -> Option<u8> {
        let m = self.0.lock().ok()?;
        m.get(k)
            .filter(|(_, at)| at.elapsed() < SHOWN_FOR)
            .map(|(n, _)| *n)
    }

    fn put(&self, k: (String, String), n: u8) {
        if let Ok(mut m) = self.0.lock() {
            // Bounded by the fleet's guards times its categories; expired rows go first.
            m.retain(|_, (_, at)| at.elapsed() < SHOWN_FOR);
            m.insert(k, (n, std::time::Instant::now()));
        }
    }
}

/// Adds `approvals` (the accounts that approved so far) to the pending entries of a list
/// that need more than one (after [`owners_rules`]).
pub async fn add_votes(sh: &Shared, items: &mut [Value]) -> Result<(), Resp> {
    owners_rules(sh, items).await?;
    let ids: Vec<String> = items
        .iter()
        .filter(|v| v["state"] == "pending" && v["approvalsRequired"].as_u64() > Some(1))
        .filter_map(|v| v["id"].as_str().map(str::to_owned))
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let votes = blocking(sh, move |s| {
        ids.into_iter()
            .map(|id| Ok((id.clone(), s.votes(&id)?)))
            .collect::<Result<std::collections::HashMap<_, _>, ReviewerError>>()
    })
    .await?;
    for v in items.iter_mut() {
        if let Some(list) = v["id"].as_str().and_then(|id| votes.get(id)) {
            let names: Vec<&str> = list
                .iter()
                .filter(|x| x.kind != crate::policy::request::DecisionKind::Deny)
                .map(|x| x.account.as_str())
                .collect();
            v["approvals"] = json!(names);
        }
    }
    Ok(())
}

/// What a role may not do: a viewer changes nothing that decides (requests, grants, the
/// agent), and only an admin ends everyone's sessions. Its own sign-out and passkeys stay
/// every reviewer's.
pub fn role_refusal(role: Role, method: &Method, segs: &[&str]) -> Option<Resp> {
    if matches!(*method, Method::GET | Method::HEAD) {
        return None;
    }
    let (need, what) = match segs {
        ["sessions", "revoke"] => (Role::Admin, "end every session"),
        ["requests", ..] | ["grants", ..] | ["agent", ..] => (Role::Approver, "decide"),
        _ => return None,
    };
    if role >= need {
        return None;
    }
    metrics().web_refusal("role");
    Some(error(
        StatusCode::FORBIDDEN,
        "role",
        &format!(
            "Not applied: your reviewer role is {role}, which may not {what} (that needs {}).",
            if need == Role::Admin {
                "admin"
            } else {
                "approver or admin"
            }
        ),
    ))
}

/// Shared handle type.
pub type Db = Arc<ReviewerDb>;
