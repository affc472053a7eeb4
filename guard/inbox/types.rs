//! The inbox's data: entry states, entries, resolutions, events, and its errors.

use crate::audit::AuditError;
use crate::policy::request::{Decision, DecisionKind, Request};
use crate::policy::verdict::{Reason, Verdict};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error("no inbox entry with id {0}")]
    UnknownId(String),
    #[error("inbox entry {id} is already {state}")]
    AlreadyResolved { id: String, state: State },
    #[error("inbox entry {id}: request hash mismatch (decided on {expected}, entry is {actual})")]
    HashMismatch {
        id: String,
        expected: String,
        actual: String,
    },
    #[error("inbox entry {0} expired before the decision (answered approval-timeout)")]
    Expired(String),
    #[error("inbox entry {id}: {} was not offered (offered: {})", kind.as_str(),
            offered.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", "))]
    NotOffered {
        id: String,
        kind: DecisionKind,
        offered: Vec<DecisionKind>,
    },
    #[error("inbox {0} is already served by another process")]
    Busy(PathBuf),
    #[error("inbox {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("inbox database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("inbox storage: {0}")]
    Storage(String),
    /// The shared database cannot be reached: nothing is filed or decided until it returns.
    #[error("store-unavailable: {0}")]
    StoreUnavailable(String),
    #[error("inbox record encoding: {0}")]
    Json(#[from] serde_json::Error),
    #[error("inbox audit: {0}")]
    Audit(#[from] AuditError),
    #[error("inbox internal: {0}")]
    Internal(String),
}

/// The lifecycle state of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Pending,
    Approved,
    Denied,
    Expired,
    ResolvedElsewhere,
    /// Withdrawn without a decision (the requester went away): nothing runs.
    Cancelled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Approved => "approved",
            State::Denied => "denied",
            State::Expired => "expired",
            State::ResolvedElsewhere => "resolved-elsewhere",
            State::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        [
            State::Pending,
            State::Approved,
            State::Denied,
            State::Expired,
            State::ResolvedElsewhere,
            State::Cancelled,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which entries [`Inbox::list`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    All,
    Pending,
    /// Everything no longer pending.
    Resolved,
    Only(State),
}

/// One inbox entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The inbox's own id (a UUID v4), the one people approve by.
    pub id: String,
    pub request: Request,
    /// The verdict that sent it here: its reasons and the decisions offered.
    pub verdict: Verdict,
    /// [`request_hash`] of the request: what a decision is bound to.
    pub request_hash: String,
    pub created_ms: u64,
    pub deadline_ms: u64,
    pub state: State,
    pub decision: Option<Decision>,
    pub resolved_ms: Option<u64>,
    /// The guard that filed it, in a fleet's shared store (None: this guard's own store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// In a fleet: the guard that decided it and the `seq` of the decision's record in that
    /// guard's audit log (each guard keeps its own log: this is where to look).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<AuditRef>,
}

/// A record in one guard's audit log: `sanctum-guard audit show` on that guard finds it by
/// `seq`, and `hash` (its line's SHA-256, written by the deciding guard) tells whether the
/// line there is still the one it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRef {
    pub guard: String,
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The deciding guard's web prompt as it published it in the fleet's guards table
    /// (checked: an https or loopback origin), never taken from the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Entry {
    pub fn reasons(&self) -> &[Reason] {
        &self.verdict.reasons
    }

    /// The decisions a person may give: the verdict's offer, narrowed by what the source
    /// (OpenClaw's `allowedDecisions`) allows.
    pub fn offered(&self) -> Vec<DecisionKind> {
        let mut out: Vec<DecisionKind> = self.verdict.offered.clone();
        if let Some(allowed) = &self.request.openclaw.allowed_decisions {
            out.retain(|k| allowed.contains(k));
        }
        out
    }

    /// One line saying what is asked, for lists and logs.
    pub fn summary(&self) -> String {
        action_summary(&self.request.action)
    }

    /// The `inbox list` line. A pending entry shows the seconds left to its deadline; a
    /// resolved one shows no countdown (its deadline no longer means anything) but its
    /// state and the decision's reason, e.g. `cancelled: requester-gone`.
    pub fn list_line(&self, now_ms: u64) -> String {
        let reasons: Vec<&str> = self.reasons().iter().map(|r| r.code.as_ref()).collect();
        let offered: Vec<&str> = self.offered().iter().map(|k| k.as_str()).collect();
        let status = match (&self.state, &self.decision) {
            (State::Pending, _) => format!(
                "pending {:>5}s",
                self.deadline_ms.saturating_sub(now_ms) / 1000
            ),
            (s, Some(d)) => match &d.reason {
                Some(r) => format!("{}: {r}", s.as_str()),
                None => format!("{}: {}", s.as_str(), d.kind.as_str()),
            },
            (s, None) => s.as_str().to_owned(),
        };
        format!(
            "{}  {:<24} {}  [{}]  offers {}  hash {}",
            self.id,
            status,
            self.summary(),
            reasons.join(","),
            offered.join("|"),
            self.request_hash
        )
    }

    /// Deny is always possible: refusing is never taken away from a person.
    pub fn offers(&self, kind: DecisionKind) -> bool {
        kind == DecisionKind::Deny || self.offered().contains(&kind)
    }
}

/// A resolution, as returned by decide and carried by events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    pub id: String,
    pub state: State,
    pub decision: Decision,
}

/// What subscribers see.
#[derive(Debug, Clone, PartialEq)]
pub enum InboxEvent {
    Added(Box<Entry>),
    /// Approved, denied or resolved elsewhere (by this process or another).
    Resolved(Resolved),
    /// Answered by the fallback: deadline, restart, shutdown or requester gone.
    Expired(Resolved),
}

impl Cancel {
    /// The reason the withdrawn entry's deny carries.
    pub fn reason(&self) -> String {
        match self {
            Cancel::ClientGone => "client-gone".into(),
            Cancel::RequesterGone => "requester-gone".into(),
            Cancel::GuardShutdown => "guard-shutdown".into(),
            Cancel::ResolvedElsewhere(by) => format!("resolved-elsewhere: {by}"),
        }
    }
}

/// Why a waiting request is withdrawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancel {
    /// The client hung up: state expired, reason `client-gone`.
    ClientGone,
    /// The door saw its requester close the connection while the request waited: state
    /// cancelled, reason `requester-gone`; an approval can no longer reach anyone.
    RequesterGone,
    /// The guard is stopping: state expired, reason `guard-shutdown`.
    GuardShutdown,
    /// Another channel (OpenClaw's own UI, the gateway) answered it: state
    /// resolved-elsewhere; the text says where.
    ResolvedElsewhere(String),
}

/// One line saying what an action asks, for lists, logs and the card's recent history.
pub fn action_summary(action: &crate::policy::request::Action) -> String {
    use crate::policy::request::Action;
    match action {
        Action::Exec(e) => match &e.command {
            Some(c) => format!("exec {c}"),
            None => format!("exec {}", e.argv.join(" ")),
        },
        Action::FileRead { path } => format!("read {}", path.display()),
        Action::FileWrite { path, .. } => format!("write {}", path.display()),
        Action::FileDelete { path } => format!("delete {}", path.display()),
        Action::Http { method, url } => format!("http {method} {url}"),
        Action::Browser { action, url } => {
            format!("browser {action} {}", url.as_deref().unwrap_or(""))
        }
        Action::PackageInstall { manager, packages } => {
            format!("install ({manager}) {}", packages.join(" "))
        }
        Action::ProcessExit { code } => format!("exit {code:?}"),
        Action::SkillInstall { name } => format!("skill install {name}"),
        Action::ConfigChange { key, .. } => format!("config {key}"),
        Action::PluginApproval {
            plugin_id, title, ..
        } => format!("plugin {}: {title}", plugin_id.as_deref().unwrap_or("?")),
        Action::Tool(t) => {
            let mut s = format!("tool {}", t.name);
            for p in &t.paths {
                s.push(' ');
                s.push_str(&p.to_string_lossy());
            }
            if let Some(u) = &t.url {
                s.push(' ');
                s.push_str(u);
            }
            s
        }
    }
}
