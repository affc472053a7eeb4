//! What the guard writes to the audit log: one typed event per record kind. Callers build an
//! [`AuditEvent`] from values they already hold; the writer thread turns it into the record's
//! `fields` (and redacts them), so the request path pays for no JSON.
//!
//! The on-disk shape is the log's contract with `audit verify`, the web history, the inbox
//! and the tests: field names (camelCase, except the inbox's snake_case records), nesting and
//! kind strings are those the guard wrote before events were typed. Several variants share a
//! kind (`decision`, `exec`, `rejection`): readers tell them apart by their fields, as before.

pub use super::tally::Counted;
use crate::policy::request::{Decision, Request};
use crate::policy::verdict::Verdict;
use crate::sandbox::IntegrityEvent;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One audit record's kind and fields.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum AuditEvent {
    /// `startup`: the guard is serving.
    Startup(Startup),
    /// `shutdown`: the guard stopped serving.
    Shutdown(Shutdown),
    /// `request`: a request waits for a person in the inbox.
    Asked(Box<Asked>),
    /// `decision`: the engine's answer with everything it was based on.
    Decided(Box<Decided>),
    /// `decision`: how a request that waited in the inbox was answered.
    Answered(Answered),
    /// `decision`: a door refused a request before the engine judged it.
    Refused(Box<Refused>),
    /// `pending`: the inbox stored a new entry.
    InboxPending(InboxPending),
    /// `decision`: the inbox resolved an entry (a person, the deadline or a cancel).
    InboxResolved(InboxResolved),
    /// `allow-always`: the grant written to OpenClaw's document (or why not).
    AllowAlways(AllowAlways),
    /// `exec`: an approved command ran.
    Ran(Box<Ran>),
    /// `exec`: an approved command did not run.
    NotRun(NotRun),
    /// `exec-outcome`: how a node host's run ended.
    RunOutcome(Box<RunOutcome>),
    /// `rejection`: a frame refused before any decision.
    Rejection(Rejection),
    /// `rejection`: the rest of a window's rejections of one reason, counted.
    Rejections(Rejections),
    /// `guard-limit`: the guard hit an operating-system limit.
    GuardLimit(GuardLimit),
    /// `torn-tail`: a half-written last line cut off on open.
    TornTail(TornTail),
    /// `bad-tail`: a complete last line that is not a record, kept as evidence.
    BadTail(BadTail),
    /// `rotation`: the first record of a new file, chained to the archived one.
    Rotation(Rotation),
    /// `front-refusal`: the front door refused a client's frame or connection.
    FrontRefusal(FrontRefusal),
    /// `front-refusal`: the rest of a window's refused upgrades of one peer and reason.
    FrontRefusals(Counted),
    /// A person's Agent-page action (new task, stop), or its refusal.
    AgentAction(AgentAction),
    /// `egress`: the egress proxy's decision on a connection, or a tunnel it closed.
    Egress(Box<EgressRecord>),
    /// `egress`: the rest of a window's denied connections of one client and reason.
    EgressRefusals(EgressCounted),
    /// `read-proxy`: a request of an autonomous run through the guard's read proxy.
    ReadProxy(Box<ReadProxyRecord>),
    /// `tamper`: an approved run had changed the guard's own files; what was put back.
    StateTamper(StateTamper),
    /// `grant`: a bounded grant made or revoked (each use is the `decision` naming it).
    Grant(GrantRecord),
    /// `passkey`: a credential registered or removed, or a decision it signed.
    Passkey(Box<super::assertion::PasskeyEvent>),
}

impl AuditEvent {
    /// The record's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            AuditEvent::Startup(_) => "startup",
            AuditEvent::Shutdown(_) => "shutdown",
            AuditEvent::Asked(_) => "request",
            AuditEvent::Decided(_)
            | AuditEvent::Answered(_)
            | AuditEvent::Refused(_)
            | AuditEvent::InboxResolved(_) => "decision",
            AuditEvent::InboxPending(_) => "pending",
            AuditEvent::AllowAlways(_) => "allow-always",
            AuditEvent::Ran(_) | AuditEvent::NotRun(_) => "exec",
            AuditEvent::RunOutcome(_) => "exec-outcome",
            AuditEvent::Rejection(_) | AuditEvent::Rejections(_) => "rejection",
            AuditEvent::GuardLimit(_) => "guard-limit",
            AuditEvent::TornTail(_) => "torn-tail",
            AuditEvent::BadTail(_) => "bad-tail",
            AuditEvent::Rotation(_) => "rotation",
            AuditEvent::FrontRefusal(_) | AuditEvent::FrontRefusals(_) => "front-refusal",
            AuditEvent::AgentAction(_) => "agent-action",
            AuditEvent::Egress(_) | AuditEvent::EgressRefusals(_) => "egress",
            AuditEvent::ReadProxy(_) => "read-proxy",
            AuditEvent::StateTamper(_) => "tamper",
            AuditEvent::Grant(_) => "grant",
            AuditEvent::Passkey(_) => super::assertion::KIND,
        }
    }

    /// The record's `fields`, not yet redacted.
    pub fn fields(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

/// The guard's files an approved run had changed, found when it ended.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateTamper {
    /// The run after which they were found.
    pub request_id: String,
    pub entries: Vec<StateRepair>,
}

/// One file or directory of the guard's state: what it was, what it should be, and whether
/// the guard could put it back.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateRepair {
    pub path: PathBuf,
    /// Octal, as `ls -l` users read it: `0666`.
    pub mode_was: String,
    pub mode_now: String,
    pub owner_was: u32,
    pub owner_now: u32,
    pub restored: bool,
    /// Why it could not be put back (whole or in part).
    pub error: Option<String>,
}

/// A socket peer's credentials: `{"uid","pid"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PeerId {
    pub uid: u32,
    pub pid: Option<i32>,
}

/// Who asked, as the door describes it (audit only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Requester {
    /// A client of the approvals socket: its peer credentials.
    Peer(PeerId),
    /// A node host asking over the socket.
    #[serde(rename_all = "camelCase")]
    SocketNode {
        peer: PeerId,
        node_id: Option<String>,
        run_id: Option<String>,
    },
    /// A node host with an in-process engine.
    #[serde(rename_all = "camelCase")]
    LocalNode {
        node: Option<String>,
        run_id: Option<String>,
    },
    /// An approval the gateway asked the guard's approver connection about.
    #[serde(rename_all = "camelCase")]
    GatewayApproval {
        approval_id: String,
        /// `exec` or `plugin`.
        kind: String,
        /// `host` of an exec approval (`gateway`, `node`).
        host: Option<String>,
        node_id: Option<String>,
    },
}

/// Which door a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Socket,
    Node,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Startup {
    pub pid: u32,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub openclaw_store: PathBuf,
    pub policy: String,
    pub expired_at_start: usize,
    pub version: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Shutdown {
    pub pid: u32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    pub requester: Requester,
    pub inbox_id: String,
    pub request_hash: String,
    pub deadline_ms: u64,
    pub request: Request,
    pub verdict: Verdict,
}

#[derive(Debug, Serialize)]
pub struct Decided {
    pub requester: Requester,
    pub request: Request,
    pub verdict: Verdict,
    pub decision: Decision,
    /// The bounded grants that answered instead of a person (each use is on record).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<String>,
}

/// A bounded grant made or revoked: who, on which request, and the patterns it covers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantRecord {
    /// `made` or `revoked`.
    pub action: &'static str,
    pub id: String,
    pub by: String,
    /// The inbox entry it was made on.
    pub inbox_id: String,
    pub scope: &'static str,
    pub patterns: Vec<String>,
    pub expires_ms: Option<u64>,
    pub uses: Option<u32>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    pub inbox_id: String,
    pub request_id: String,
    pub decision: Decision,
}

#[derive(Debug, Serialize)]
pub struct Refused {
    pub requester: Requester,
    pub request: Request,
    pub decision: PolicyDeny,
    pub message: String,
}

/// A deny by policy without a verdict: `{"kind":"deny","reason","by":"policy"}`.
#[derive(Debug, Serialize)]
pub struct PolicyDeny {
    kind: &'static str,
    reason: &'static str,
    by: &'static str,
}

impl PolicyDeny {
    pub fn new(reason: &'static str) -> Self {
        PolicyDeny {
            kind: "deny",
            reason,
            by: "policy",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct InboxPending {
    pub id: String,
    pub request_id: String,
    pub request_hash: String,
    pub created_ms: u64,
    pub deadline_ms: u64,
}

#[derive(Debug, Serialize)]
pub struct InboxResolved {
    pub id: String,
    pub request_id: String,
    pub request_hash: String,
    pub state: &'static str,
    pub decision: Decision,
}

/// `{"requestId","entries"}`, or `{"requestId","error"}` when writing the grant failed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowAlways {
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ran {
    pub id: String,
    pub program: PathBuf,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub dropped_env: Vec<String>,
    pub integrity: Vec<IntegrityEvent>,
    pub duration_ms: u64,
    pub output: OutputSummary,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub success: bool,
    pub stdout_bytes: usize,
    pub stderr_bytes: usize,
    pub error: Option<String>,
    /// Time the run waited for a slot of its profile (`limits.concurrent`); absent when it
    /// did not wait, so records of runs that never queued keep their shape.
    #[serde(skip_serializing_if = "is_zero")]
    pub queued_ms: u64,
}

/// Head and tail of a run's output, with its full size and digest.
#[derive(Debug, Serialize)]
pub struct OutputSummary {
    pub bytes: usize,
    pub sha256: String,
    pub head: String,
    pub tail: String,
    pub truncated: bool,
}

/// `{"id","argv","reason"}`, with the sandbox's `error` or a `message` when there is one.
#[derive(Debug, Serialize)]
pub struct NotRun {
    pub id: String,
    pub argv: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'static str>,
}

/// How a node's run ended, as the node reports it: the `exec-outcome` record's `outcome`
/// (here, not in the engine, so the audit log depends on no box above it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub request_id: String,
    pub node_id: Option<String>,
    pub run_id: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Lowercase hex SHA-256 of stdout then stderr as returned to the gateway.
    pub output_sha256: String,
    pub timed_out: bool,
    pub success: bool,
    /// Why nothing ran or the run failed, if so.
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct RunOutcome {
    pub source: Origin,
    /// The node's socket peer; absent for an in-process engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerId>,
    pub outcome: Outcome,
}

#[derive(Debug, Serialize)]
pub struct Rejection {
    pub source: Origin,
    pub peer: PeerId,
    pub id: Option<String>,
    pub reason: &'static str,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejections {
    pub source: Origin,
    /// Always true: tells this record from a single [`Rejection`].
    pub aggregated: bool,
    pub reason: &'static str,
    pub count: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    pub peers: Vec<PeerId>,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardLimit {
    pub what: &'static str,
    pub error: &'static str,
    pub count: u64,
    /// `{"soft","hard"}`; null when it could not be read.
    pub rlimit_nofile: Option<Rlimit>,
    pub action: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Rlimit {
    pub soft: u64,
    pub hard: u64,
}

#[derive(Debug, Serialize)]
pub struct TornTail {
    pub bytes: usize,
    pub sha256: String,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct BadTail {
    pub line: u64,
    pub error: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rotation {
    pub previous_file: String,
    pub previous_last_seq: u64,
    pub previous_last_hash: String,
    pub previous_bytes: u64,
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;

/// A front-door refusal: who (the door link's name, or `unauthenticated`), from where, which
/// method (if any) and why.
#[derive(Debug, Serialize)]
pub struct FrontRefusal {
    pub who: String,
    pub peer: String,
    pub method: Option<String>,
    pub reason: String,
    pub message: String,
}

/// An Agent-page action through the guard's gateway connection: who (the web identity),
/// `task` or `stop`, which session, the run's idempotency key, and the refusal if refused.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAction {
    pub who: String,
    pub action: String,
    pub session_key: String,
    pub run_id: Option<String>,
    pub refused: Option<String>,
}

/// One egress audit record: a decision (`phase: "decided"`) or a closed tunnel (`"closed"`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EgressRecord {
    pub phase: &'static str,
    pub client: String,
    pub method: String,
    pub target: String,
    /// `allow` or `deny`.
    pub verdict: &'static str,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_up: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_down: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// Serde's `skip_serializing_if` for counters that are absent when 0.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Counted egress denials: `{"phase":"denied",...Counted}` (the phase tells them from a
/// single decision's record).
#[derive(Debug, Serialize)]
pub struct EgressCounted {
    pub phase: &'static str,
    #[serde(flatten)]
    pub counted: Counted,
}

/// One read-proxy record: a request allowed or refused, tied to the run's request id (`None`:
/// no live run credential), or a count of refusals past the rate (`suppressedBefore`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadProxyRecord {
    pub request_id: Option<String>,
    pub client: String,
    pub method: String,
    pub target: String,
    /// `allow` or `deny`.
    pub verdict: &'static str,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Refusals only counted (not written) since the last refusal record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed_before: Option<u64>,
}
