//! The approvals socket as a door of the engine: checks every frame (peer uid, rate,
//! token/HMAC/TTL/replay), turns it into a [`Request`](crate::policy::request::Request), asks
//! the engine, and shapes the engine's answer into the one reply OpenClaw expects. Every
//! rejection goes to the audit log (aggregated under a flood, see `rejections`). A gated
//! request whose client goes away while it waits is withdrawn and never run (`peer`).
//!
//! Adding a frame type: a variant in `wire::Frame`, its `FrameKind`, and one arm in
//! [`SocketDoor::respond`]; the peer, rate and audit handling around it are shared.

use super::auth::{self, Peer, PeerPolicy, RateLimiter, ReplayCache, REPLAY_FILE};
use super::decision::{
    exec_forms_agree, peer_id, prompt_forms_agree, request_from_exec, request_from_prompt,
};
use super::listener::ListenError;
use super::peer::PeerLink;
use super::rejections::Rejections;
use super::wire::{
    self, ExecError, ExecFrame, ExecPayload, ExecRequest, Frame, FrameKind, RejectReason, Reply,
    RequestFrame,
};
use super::SocketSettings;
use crate::audit::event::{AuditEvent, NotRun, Origin, PolicyDeny, Refused, Rejection, Requester};
use crate::engine::decision::{deny_message, deny_text, now_ms};
use crate::engine::{Engine, ExecPlan, PlanInput, RunResult};
use crate::policy::request::{Action, DecidedBy, Decision, DecisionKind, Request};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Nonces the replay cache holds at once (beyond: `rate-limit`, fail closed).
const REPLAY_CAPACITY: usize = 262_144;

/// The socket door: its own checks in front of the shared engine.
pub struct SocketDoor {
    token: String,
    ttl_ms: u64,
    replay: ReplayCache,
    peers: PeerPolicy,
    rate: RateLimiter,
    rejections: Rejections,
    engine: Arc<Engine>,
    /// Egress grants and the overlay of stored egress rules.
    egress: super::egress_ask::EgressDesk,
}

impl SocketDoor {
    /// The door of a serving guard: its replay journal lives in `state_dir`, and frames
    /// signed before now are refused (see `auth`).
    pub fn new(
        token: String,
        socket: &SocketSettings,
        engine: Arc<Engine>,
        state_dir: &Path,
    ) -> Result<Self, ListenError> {
        let journal = state_dir.join(REPLAY_FILE);
        let replay =
            ReplayCache::durable(REPLAY_CAPACITY, &journal, now_ms() as i64).map_err(|source| {
                ListenError::Io {
                    what: "replay journal",
                    path: journal,
                    source,
                }
            })?;
        let mut door = Self::with_replay(token, socket, engine, replay);
        door.egress = super::egress_ask::EgressDesk::new(Some(
            state_dir.join(super::egress_ask::OVERLAY_FILE),
        ));
        Ok(door)
    }

    /// A door with the given replay cache (tests and benchmarks use an in-memory one).
    pub fn with_replay(
        token: String,
        socket: &SocketSettings,
        engine: Arc<Engine>,
        replay: ReplayCache,
    ) -> Self {
        SocketDoor {
            token,
            ttl_ms: socket.ttl_ms,
            replay,
            peers: PeerPolicy::new(socket.allowed_uids.iter().copied()),
            rate: RateLimiter::new(socket.rate_per_sec, socket.rate_burst),
            rejections: Rejections::default(),
            engine,
            egress: super::egress_ask::EgressDesk::new(None),
        }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Audits a rejection: in full when it is the first of its reason in the window, else
    /// counted into the window's aggregate record (see `rejections`).
    pub async fn audit_rejection(
        &self,
        peer: &Peer,
        id: Option<&str>,
        reason: RejectReason,
        message: &str,
    ) {
        if !self.rejections.note(reason, peer, message, now_ms()) {
            return;
        }
        let event = AuditEvent::Rejection(Rejection {
            source: Origin::Socket,
            peer: peer_id(peer),
            id: id.map(str::to_owned),
            reason: reason.as_str(),
            message: message.to_owned(),
        });
        self.engine.record_soon(event).await;
    }

    /// Writes the aggregate records of the windows that ended (all of them with `all`, at
    /// shutdown).
    pub async fn flush_rejections(&self, all: bool) {
        for event in self.rejections.take_due(all, now_ms()) {
            self.engine.record_soon(AuditEvent::Rejections(event)).await;
        }
    }

    async fn reject(
        &self,
        peer: &Peer,
        id: Option<String>,
        kind: FrameKind,
        reason: RejectReason,
        message: &str,
    ) -> Reply {
        self.audit_rejection(peer, id.as_deref(), reason, message)
            .await;
        Reply::reject(id, kind, reason, message)
    }

    /// The one reply to one line. `link` tells whether the client is still there.
    pub async fn respond(
        &self,
        peer: &Peer,
        line: &[u8],
        shutdown: watch::Receiver<bool>,
        link: PeerLink<'_>,
    ) -> Reply {
        let frame = match wire::parse_frame(line) {
            Ok(f) => f,
            Err(bad) => {
                let msg = match bad.reason {
                    RejectReason::UnknownType => "unknown frame type",
                    _ => "malformed frame",
                };
                return self.reject(peer, bad.id, bad.kind, bad.reason, msg).await;
            }
        };
        let (id, kind) = match &frame {
            Frame::Request(r) => (r.id.clone(), FrameKind::Request),
            Frame::Exec(e) => (e.id.clone(), FrameKind::Exec),
            Frame::Outcome(o) => (o.id.clone(), FrameKind::Request),
            Frame::EgressAsk(a) => (a.0.id.clone(), FrameKind::Request),
        };
        if let Err(r) = self.peers.check(peer) {
            return self
                .reject(peer, Some(id), kind, r, "peer uid not allowed")
                .await;
        }
        if let Err(r) = self.rate.check(peer) {
            return self
                .reject(peer, Some(id), kind, r, "too many requests from this peer")
                .await;
        }
        match frame {
            Frame::Request(f) => self.on_request(peer, *f, shutdown, link).await,
            Frame::Exec(f) => self.on_exec(peer, f, shutdown, link).await,
            Frame::Outcome(f) => {
                if !auth::token_matches(&self.token, &f.token) {
                    let id = Some(f.id.clone());
                    let (k, r) = (FrameKind::Request, RejectReason::Token);
                    return self.reject(peer, id, k, r, "token mismatch").await;
                }
                super::outcome::on_outcome(&self.engine, peer, *f).await
            }
            Frame::EgressAsk(b) => {
                let (f, host) = *b;
                if !auth::token_matches(&self.token, &f.token) {
                    let id = Some(f.id.clone());
                    let (k, r) = (FrameKind::Request, RejectReason::Token);
                    return self.reject(peer, id, k, r, "token mismatch").await;
                }
                let desk = &self.egress;
                super::egress_ask::on_egress_ask(&self.engine, desk, peer, f, host, shutdown, link)
                    .await
            }
        }
    }

    async fn on_request(
        &self,
        peer: &Peer,
        f: RequestFrame,
        shutdown: watch::Receiver<bool>,
        link: PeerLink<'_>,
    ) -> Reply {
        if !auth::token_matches(&self.token, &f.token) {
            return self
                .reject(
                    peer,
                    Some(f.id),
                    FrameKind::Request,
                    RejectReason::Token,
                    "token mismatch",
                )
                .await;
        }
        if f.request.source.as_deref() == Some("node") {
            return super::outcome::on_node_request(&self.engine, peer, f, shutdown, link).await;
        }
        if f.request.source.as_deref() == Some("plugin") {
            return super::tool::on_tool_request(&self.engine, peer, f, shutdown, link).await;
        }
        if let Err(why) = prompt_forms_agree(&f.request) {
            return self
                .reject(
                    peer,
                    Some(f.id),
                    FrameKind::Request,
                    RejectReason::CommandMismatch,
                    &why,
                )
                .await;
        }
        let received = now_ms();
        let req = request_from_prompt(
            &f.id,
            &f.request,
            received,
            self.engine.deadlines().request_deadline(received),
        );
        // A relative cwd names no directory: judging it against any guess could be wrong.
        if let Some(cwd) = f.request.cwd.as_deref().filter(|c| !c.is_empty()) {
            if !std::path::Path::new(cwd).is_absolute() {
                let message = format!("cwd {cwd:?} is relative");
                self.record_refusal(peer, req, "cwd-relative", message)
                    .await;
                return Reply::Decision {
                    id: Some(f.id),
                    decision: DecisionKind::Deny,
                    reject: None,
                };
            }
        }
        let (decision, verdict) = self
            .engine
            .decide(&requester(peer), &req, None, shutdown, link.gone())
            .await;
        if decision.kind == DecisionKind::AllowAlways {
            self.engine.persist_allow_always(&req, &verdict).await;
        }
        Reply::Decision {
            id: Some(f.id),
            decision: decision.kind,
            reject: None,
        }
    }

    /// An `exec` frame: checked, resolved into its plan once, decided on that plan, run
    /// within the client's deadline, answered with the run's output or why nothing ran.
    async fn on_exec(
        &self,
        peer: &Peer,
        f: ExecFrame,
        shutdown: watch::Receiver<bool>,
        link: PeerLink<'_>,
    ) -> Reply {
        let now = now_ms();
        if let Err(r) = auth::verify_exec(&self.token, &f, now as i64, self.ttl_ms, &self.replay) {
            let msg = exec_auth_message(r);
            return self.reject(peer, Some(f.id), FrameKind::Exec, r, msg).await;
        }
        let er = match self.exec_request(peer, &f).await {
            Ok(er) => er,
            Err(reply) => return reply,
        };
        let deadline = self.engine.deadlines().exec_deadline(now, er.timeout_ms);
        let mut req = request_from_exec(&f.id, &er, now, deadline);
        // Resolved once: what is judged below is exactly what runs.
        let plan = match self.exec_plan(peer, &er, &req).await {
            Ok(p) => p,
            Err(error) => return exec_err(f.id, error),
        };
        req.action = Action::Exec(plan.action_with_env(&plan.env_shown(er.env.as_ref())));
        let (decision, verdict) = self
            .engine
            .decide(
                &requester(peer),
                &req,
                Some(&plan),
                shutdown.clone(),
                link.gone(),
            )
            .await;
        if let Some(error) = self.refuse_run(&req, &er, &decision, &link).await {
            return exec_err(f.id, error);
        }
        if decision.kind == DecisionKind::AllowAlways {
            self.engine.persist_allow_always(&req, &verdict).await;
        }
        let budget = run_budget(deadline, er.timeout_ms);
        let result = self
            .engine
            .run_exec(&req, &verdict, &decision, plan, budget, shutdown)
            .await;
        exec_reply(f.id, result)
    }

    /// The frame's `requestJson`, parsed, whose display text is the argv it runs.
    async fn exec_request(&self, peer: &Peer, f: &ExecFrame) -> Result<ExecRequest, Reply> {
        // The id is copied only for a rejection: the accepted path allocates nothing here.
        let id = || Some(f.id.clone());
        let er = match ExecRequest::parse(&f.request_json) {
            Ok(r) => r,
            Err(r) => {
                let msg = "requestJson is not a valid exec request";
                return Err(self.reject(peer, id(), FrameKind::Exec, r, msg).await);
            }
        };
        if let Err(why) = exec_forms_agree(&er) {
            let r = RejectReason::CommandMismatch;
            return Err(self.reject(peer, id(), FrameKind::Exec, r, &why).await);
        }
        Ok(er)
    }

    /// The exec plan, or the deny (on disk) of a command that names nothing runnable.
    async fn exec_plan(
        &self,
        peer: &Peer,
        er: &ExecRequest,
        req: &Request,
    ) -> Result<ExecPlan, ExecError> {
        let input = PlanInput {
            argv: er.command.clone(),
            cwd: er.cwd.clone(),
            env: er.env.clone().unwrap_or_default(),
            timeout_ms: er.timeout_ms,
        };
        match self.engine.judge().plan(&input) {
            Ok(p) => Ok(p),
            Err(e) => {
                let (reason, message) = (e.reason(), e.to_string());
                let text = format!("{reason}: {message}");
                self.record_refusal(peer, req.clone(), reason, message)
                    .await;
                Err(ExecError::denied(reason, &text))
            }
        }
    }

    /// Why an approved-or-denied exec must not run: the deny itself, or (after a person's
    /// approval) a client that went away meanwhile, recorded as not run.
    async fn refuse_run(
        &self,
        req: &Request,
        er: &ExecRequest,
        decision: &Decision,
        link: &PeerLink<'_>,
    ) -> Option<ExecError> {
        if decision.kind == DecisionKind::Deny {
            let reason = decision.reason.as_deref().unwrap_or("approval-required");
            return Some(ExecError::denied(reason, &deny_text(decision)));
        }
        // Only a request that waited for a person can have lost its client meanwhile (an
        // autonomous answer costs no extra syscall).
        if matches!(decision.by, DecidedBy::Human(_)) && link.is_gone() {
            // Approved, but nobody is left to receive the output: run nothing.
            self.engine
                .record(AuditEvent::NotRun(NotRun {
                    id: req.id.clone(),
                    argv: er.command.clone(),
                    error: None,
                    reason: "requester-gone",
                    message: Some("the client closed its connection before the run; not run"),
                }))
                .await;
            let reason = "requester-gone";
            return Some(ExecError::denied(reason, &deny_message(reason)));
        }
        None
    }

    /// A `decision` record for a request the door denies before the engine judges it.
    async fn record_refusal(
        &self,
        peer: &Peer,
        request: Request,
        reason: &'static str,
        message: String,
    ) {
        let event = AuditEvent::Refused(Box::new(Refused {
            requester: requester(peer),
            request,
            decision: PolicyDeny::new(reason),
            message,
        }));
        self.engine.record(event).await;
    }
}

/// The socket's requester in the audit log: its peer credentials.
fn requester(peer: &Peer) -> Requester {
    Requester::Peer(peer_id(peer))
}

/// What the client is told when an exec frame's signature, time or nonce fails.
fn exec_auth_message(r: RejectReason) -> &'static str {
    match r {
        RejectReason::Ttl => "timestamp outside the 10 s window",
        RejectReason::Hmac => "hmac does not verify",
        RejectReason::Replay => {
            "nonce already used, or the frame was signed before the guard started"
        }
        RejectReason::StateUnavailable => "replay journal unavailable",
        _ => "replay cache full",
    }
}

/// The run must end before the client gives up waiting (and within its own timeout).
fn run_budget(deadline: u64, timeout_ms: Option<u64>) -> Duration {
    let left = deadline.saturating_sub(now_ms()).max(1);
    let budget = match timeout_ms {
        Some(t) if t > 0 => t.min(left),
        _ => left,
    };
    Duration::from_millis(budget)
}

fn exec_err(id: String, error: ExecError) -> Reply {
    Reply::ExecErr {
        id: Some(id),
        error,
    }
}

/// The reply to a run: its output (with what the guard undid after it), or why it ended
/// without one.
fn exec_reply(id: String, result: RunResult) -> Reply {
    match result {
        RunResult::Ran(o) => {
            // The agent learns what the guard undid after its run (hooks, git config).
            let mut stderr = o.stderr;
            for e in &o.integrity {
                stderr.push_str(&format!(
                    "\nsanctum-guard: {} {:?} ({:?}): {}",
                    e.path.display(),
                    e.change,
                    e.action,
                    e.detail
                ));
            }
            Reply::ExecOk {
                id: Some(id),
                payload: ExecPayload {
                    exit_code: o.exit_code,
                    timed_out: o.timed_out,
                    success: o.success,
                    stdout: o.stdout,
                    stderr,
                    error: o.error,
                },
            }
        }
        RunResult::Shutdown => exec_err(
            id,
            ExecError::denied("guard-shutdown", &deny_message("guard-shutdown")),
        ),
        RunResult::Failed(e) => exec_err(
            id,
            ExecError::denied(
                "sandbox-unavailable",
                &format!("sandbox could not run the command: {e}"),
            ),
        ),
    }
}
