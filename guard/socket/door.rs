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
    exec_forms_agree, peer_json, prompt_forms_agree, request_from_exec, request_from_prompt,
};
use super::listener::ListenError;
use super::peer::PeerLink;
use super::rejections::Rejections;
use super::wire::{
    self, ExecError, ExecFrame, ExecPayload, ExecRequest, Frame, FrameKind, RejectReason, Reply,
    RequestFrame,
};
use crate::app::config::SocketSettings;
use crate::engine::decision::{deny_message, now_ms};
use crate::engine::{Engine, PlanInput, RunResult};
use crate::policy::request::{Action, DecidedBy, DecisionKind};
use serde_json::json;
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
        Ok(Self::with_replay(token, socket, engine, replay))
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
        let fields = json!({"source":"socket","peer":{"uid":peer.uid,"pid":peer.pid},"id":id,
                            "reason":reason.as_str(),"message":message});
        self.engine
            .record_soon("rejection", Box::new(move || fields))
            .await;
    }

    /// Writes the aggregate records of the windows that ended (all of them with `all`, at
    /// shutdown).
    pub async fn flush_rejections(&self, all: bool) {
        for fields in self.rejections.take_due(all, now_ms()) {
            self.engine
                .record_soon("rejection", Box::new(move || fields))
                .await;
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
                let fields = json!({"requester":peer_json(peer),"request":req,
                    "decision":{"kind":"deny","reason":"cwd-relative","by":"policy"},
                    "message":format!("cwd {cwd:?} is relative")});
                self.engine.record("decision", fields).await;
                return Reply::Decision {
                    id: Some(f.id),
                    decision: DecisionKind::Deny,
                    reject: None,
                };
            }
        }
        let (decision, verdict) = self
            .engine
            .decide(&peer_json(peer), &req, None, shutdown, link.gone())
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

    async fn on_exec(
        &self,
        peer: &Peer,
        f: ExecFrame,
        shutdown: watch::Receiver<bool>,
        link: PeerLink<'_>,
    ) -> Reply {
        let now = now_ms();
        if let Err(r) = auth::verify_exec(&self.token, &f, now as i64, self.ttl_ms, &self.replay) {
            let msg = match r {
                RejectReason::Ttl => "timestamp outside the 10 s window",
                RejectReason::Hmac => "hmac does not verify",
                RejectReason::Replay => {
                    "nonce already used, or the frame was signed before the guard started"
                }
                RejectReason::StateUnavailable => "replay journal unavailable",
                _ => "replay cache full",
            };
            return self.reject(peer, Some(f.id), FrameKind::Exec, r, msg).await;
        }
        let er = match ExecRequest::parse(&f.request_json) {
            Ok(r) => r,
            Err(r) => {
                return self
                    .reject(
                        peer,
                        Some(f.id),
                        FrameKind::Exec,
                        r,
                        "requestJson is not a valid exec request",
                    )
                    .await
            }
        };
        if let Err(why) = exec_forms_agree(&er) {
            return self
                .reject(
                    peer,
                    Some(f.id),
                    FrameKind::Exec,
                    RejectReason::CommandMismatch,
                    &why,
                )
                .await;
        }
        let deadline = self.engine.deadlines().exec_deadline(now, er.timeout_ms);
        let mut req = request_from_exec(&f.id, &er, now, deadline);
        // Resolved once: what is judged below is exactly what runs.
        let input = PlanInput {
            argv: er.command.clone(),
            cwd: er.cwd.clone(),
            env: er.env.clone().unwrap_or_default(),
            timeout_ms: er.timeout_ms,
        };
        let plan = match self.engine.judge().plan(&input) {
            Ok(p) => p,
            Err(e) => {
                let reason = e.reason();
                let message = e.to_string();
                let fields = json!({"requester":peer_json(peer),"request":req,
                    "decision":{"kind":"deny","reason":reason,"by":"policy"},"message":message});
                self.engine.record("decision", fields).await;
                return Reply::ExecErr {
                    id: Some(f.id),
                    error: ExecError::denied(reason, &format!("{reason}: {message}")),
                };
            }
        };
        req.action = Action::Exec(plan.action(None));
        let (decision, verdict) = self
            .engine
            .decide(
                &peer_json(peer),
                &req,
                Some(&plan),
                shutdown.clone(),
                link.gone(),
            )
            .await;
        if decision.kind == DecisionKind::Deny {
            let reason = decision
                .reason
                .clone()
                .unwrap_or_else(|| "approval-required".into());
            return Reply::ExecErr {
                id: Some(f.id),
                error: ExecError::denied(&reason, &deny_message(&reason)),
            };
        }
        // Only a request that waited for a person can have lost its client meanwhile (an
        // autonomous answer costs no extra syscall).
        if matches!(decision.by, DecidedBy::Human(_)) && link.is_gone() {
            // Approved, but nobody is left to receive the output: run nothing.
            self.engine
                .record(
                    "exec",
                    json!({"id":req.id,"argv":er.command,"reason":"requester-gone",
                           "message":"the client closed its connection before the run; not run"}),
                )
                .await;
            return Reply::ExecErr {
                id: Some(f.id),
                error: ExecError::denied("requester-gone", &deny_message("requester-gone")),
            };
        }
        if decision.kind == DecisionKind::AllowAlways {
            self.engine.persist_allow_always(&req, &verdict).await;
        }
        // The run must end before the client gives up waiting.
        let left = deadline.saturating_sub(now_ms()).max(1);
        let budget = match er.timeout_ms {
            Some(t) if t > 0 => t.min(left),
            _ => left,
        };
        let result = self
            .engine
            .run_exec(
                &req,
                &verdict,
                &decision,
                plan,
                Duration::from_millis(budget),
                shutdown,
            )
            .await;
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
                    id: Some(f.id),
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
            RunResult::Shutdown => Reply::ExecErr {
                id: Some(f.id),
                error: ExecError::denied("guard-shutdown", &deny_message("guard-shutdown")),
            },
            RunResult::Failed(e) => Reply::ExecErr {
                id: Some(f.id),
                error: ExecError::denied(
                    "sandbox-unavailable",
                    &format!("sandbox could not run the command: {e}"),
                ),
            },
        }
    }
}
