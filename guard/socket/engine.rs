//! The socket's request pipeline: checks (peer, rate, token/HMAC/TTL/replay), then
//! Request → policy verdict → (inbox for `ask`) → decision → reply, and for `exec` the
//! sandboxed run. Every step and every rejection goes to the audit log. Fail closed: any
//! internal error answers deny with a reason.

use super::auth::{self, Peer, PeerPolicy, RateLimiter, ReplayCache};
use super::decision::{
    deny_message, deny_reason, fallback, peer_json, policy_decision, request_from_exec,
    request_from_prompt,
};
use super::oracle::Oracle;
use super::wire::{
    self, ExecError, ExecFrame, ExecRequest, Frame, FrameKind, RejectReason, Reply, RequestFrame,
};
use crate::audit::{self, AuditLog};
use crate::config::{Deadlines, SocketSettings};
use crate::inbox::{Cancel, Inbox};
use crate::policy::request::{Decision, DecisionKind, Request, Source};
use crate::policy::verdict::{Verdict, VerdictKind};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// The OpenClaw combined output cap (openclaw-protocol.md §3.4).
pub const OUTPUT_CAP: usize = 200_000;

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Everything the pipeline needs, built once by `serve`.
pub struct Engine {
    token: String,
    ttl_ms: u64,
    replay: ReplayCache,
    peers: PeerPolicy,
    rate: RateLimiter,
    deadlines: Deadlines,
    oracle: Oracle,
    inbox: Inbox,
    audit: AuditLog,
    /// False once an audit write failed: allows are refused from then on.
    audit_ok: Arc<AtomicBool>,
    /// Answers that run nothing also wait for their record's fsync.
    durable_answers: bool,
}

/// A value as audit JSON (Null if it cannot be encoded, which our types never are).
fn js<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

impl Engine {
    pub fn new(
        token: String,
        socket: &SocketSettings,
        deadlines: Deadlines,
        oracle: Oracle,
        inbox: Inbox,
        audit: AuditLog,
    ) -> Self {
        Engine {
            token,
            ttl_ms: socket.ttl_ms,
            replay: ReplayCache::new(262_144),
            peers: PeerPolicy::new(socket.allowed_uids.iter().copied()),
            rate: RateLimiter::new(socket.rate_per_sec, socket.rate_burst),
            deadlines,
            oracle,
            inbox,
            audit,
            audit_ok: Arc::new(AtomicBool::new(true)),
            durable_answers: socket.durable_answers,
        }
    }

    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub fn oracle(&self) -> &Oracle {
        &self.oracle
    }

    /// Appends to the audit log (fsynced, off the async threads) before the reply is sent,
    /// so no answer leaves without its record. Returns false when the log failed.
    async fn record(&self, kind: &'static str, fields: serde_json::Value) -> bool {
        match self.audit.record(kind, fields).await {
            Ok(_) => true,
            Err(e) => {
                self.audit_ok.store(false, Ordering::Relaxed);
                tracing::error!(error = %e, kind, "audit append failed");
                false
            }
        }
    }

    /// Queues a record and replies without waiting for it (written with the writer's next
    /// batch, fsynced within `audit::SYNC_WINDOW`). Used where the reply runs nothing: policy
    /// answers to `request` frames and rejections, so an autonomous decision costs no fsync
    /// of latency. A failed write marks the log unhealthy and every later allow becomes a
    /// deny `audit-unavailable` (fail closed). With `durable_answers`, waits like
    /// [`Self::record`]. `fields` is built on the audit writer thread, off the event loop.
    /// Returns false when the log is (known to be) failing.
    async fn record_soon(&self, kind: &'static str, fields: audit::FieldsFn) -> bool {
        if self.durable_answers {
            return self.record(kind, fields()).await;
        }
        self.audit.record_detached(kind, fields, &self.audit_ok);
        self.audit_ok.load(Ordering::Relaxed)
    }

    /// Audits a rejection that happened before a frame was decoded (read errors).
    pub async fn audit_rejection(
        &self,
        peer: &Peer,
        id: Option<&str>,
        reason: RejectReason,
        message: &str,
    ) {
        let fields = json!({"source":"socket","peer":{"uid":peer.uid,"pid":peer.pid},"id":id,
                            "reason":reason.as_str(),"message":message});
        self.record_soon("rejection", Box::new(move || fields))
            .await;
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

    /// The one reply to one line.
    pub async fn respond(
        &self,
        peer: &Peer,
        line: &[u8],
        shutdown: watch::Receiver<bool>,
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
            Frame::Request(f) => self.on_request(peer, *f, shutdown).await,
            Frame::Exec(f) => self.on_exec(peer, f, shutdown).await,
        }
    }

    async fn on_request(
        &self,
        peer: &Peer,
        f: RequestFrame,
        shutdown: watch::Receiver<bool>,
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
        let received = now_ms();
        let req = request_from_prompt(
            &f.id,
            &f.request,
            received,
            self.deadlines.request_deadline(received),
        );
        let (decision, verdict) = self.decide_and_wait(peer, &req, shutdown).await;
        if decision.kind == DecisionKind::AllowAlways {
            self.persist_allow_always(&req, &verdict).await;
        }
        Reply::Decision {
            id: Some(f.id),
            decision: decision.kind,
            reject: None,
        }
    }

    async fn on_exec(&self, peer: &Peer, f: ExecFrame, shutdown: watch::Receiver<bool>) -> Reply {
        let now = now_ms();
        if let Err(r) = auth::verify_exec(&self.token, &f, now as i64, self.ttl_ms, &self.replay) {
            let msg = match r {
                RejectReason::Ttl => "timestamp outside the 10 s window",
                RejectReason::Hmac => "hmac does not verify",
                RejectReason::Replay => "nonce already used",
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
        let deadline = self.deadlines.exec_deadline(now, er.timeout_ms);
        let req = request_from_exec(&f.id, &er, now, deadline);
        let (decision, verdict) = self.decide_and_wait(peer, &req, shutdown.clone()).await;
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
        if decision.kind == DecisionKind::AllowAlways {
            self.persist_allow_always(&req, &verdict).await;
        }
        // The run must end before the client gives up waiting.
        let left = deadline.saturating_sub(now_ms()).max(1);
        let budget = match er.timeout_ms {
            Some(t) if t > 0 => t.min(left),
            _ => left,
        };
        let run = self
            .oracle
            .run(&verdict, &er, Duration::from_millis(budget));
        let mut stop = shutdown;
        let outcome = tokio::select! {
            o = run => o,
            _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                self.record("exec", json!({"id":req.id,"argv":er.command,"reason":"guard-shutdown"})).await;
                return Reply::ExecErr {
                    id: Some(f.id),
                    error: ExecError::denied("guard-shutdown", &deny_message("guard-shutdown")),
                };
            }
        };
        match outcome {
            Ok(payload) => {
                self.record(
                    "exec",
                    json!({"id":req.id,"argv":er.command,"cwd":er.cwd,"exitCode":payload.exit_code,
                           "timedOut":payload.timed_out,"success":payload.success,
                           "stdoutBytes":payload.stdout.len(),"stderrBytes":payload.stderr.len(),
                           "error":payload.error}),
                )
                .await;
                Reply::ExecOk {
                    id: Some(f.id),
                    payload,
                }
            }
            Err(e) => {
                let reason = "sandbox-unavailable";
                self.record(
                    "exec",
                    json!({"id":req.id,"argv":er.command,"error":e.to_string(),"reason":reason}),
                )
                .await;
                Reply::ExecErr {
                    id: Some(f.id),
                    error: ExecError::denied(
                        reason,
                        &format!("sandbox could not run the command: {e}"),
                    ),
                }
            }
        }
    }

    /// Verdict, then the decision: at once for allow/deny, via the inbox for ask. Audited.
    async fn decide_and_wait(
        &self,
        peer: &Peer,
        req: &Request,
        mut shutdown: watch::Receiver<bool>,
    ) -> (Decision, Verdict) {
        let verdict = self.oracle.decide(req);
        let decision = match verdict.kind {
            VerdictKind::Allow => policy_decision(DecisionKind::AllowOnce, None),
            VerdictKind::Deny => policy_decision(DecisionKind::Deny, Some(deny_reason(&verdict))),
            VerdictKind::Ask => {
                let deadline = req
                    .deadline_ms
                    .unwrap_or_else(|| self.deadlines.request_deadline(now_ms()));
                let ticket = match self.inbox.submit(req, &verdict, deadline).await {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::error!(error = %e, "inbox submit failed; denying");
                        let d = fallback(&format!("inbox-unavailable: {e}"));
                        self.record("decision", json!({"peer":peer_json(peer),"request":js(req),"verdict":js(&verdict),"decision":d})).await;
                        return (d, verdict);
                    }
                };
                self.record(
                    "request",
                    json!({"peer":peer_json(peer),"inboxId":ticket.id,"requestHash":ticket.request_hash,
                           "deadlineMs":deadline,"request":js(req),"verdict":js(&verdict)}),
                )
                .await;
                let id = ticket.id.clone();
                let d = if *shutdown.borrow() {
                    None
                } else {
                    tokio::select! {
                        d = ticket.wait() => Some(d),
                        _ = shutdown.changed() => None,
                    }
                };
                let d = match d {
                    Some(d) => d,
                    None => {
                        if let Err(e) = self.inbox.cancel(&id, Cancel::ClientGone) {
                            tracing::warn!(error = %e, "inbox cancel at shutdown failed");
                        }
                        fallback("guard-shutdown")
                    }
                };
                self.record(
                    "decision",
                    json!({"inboxId":id,"requestId":req.id,"decision":d}),
                )
                .await;
                return (d, verdict);
            }
        };
        let (p, r, v, d) = (
            peer_json(peer),
            req.clone(),
            verdict.clone(),
            decision.clone(),
        );
        let fields = move || json!({"peer":p,"request":js(&r),"verdict":js(&v),"decision":js(&d)});
        let audited = if req.who.source == Source::SocketRequest {
            self.record_soon("decision", Box::new(fields)).await
        } else {
            // An exec runs next: its decision is on disk first.
            self.record("decision", fields()).await
        };
        if !audited && decision.kind != DecisionKind::Deny {
            return (fallback("audit-unavailable"), verdict);
        }
        (decision, verdict)
    }

    async fn persist_allow_always(&self, req: &Request, verdict: &Verdict) {
        match self.oracle.persist_allow_always(req, verdict).await {
            Ok(n) => {
                self.record("allow-always", json!({"requestId":req.id,"entries":n}))
                    .await;
            }
            Err(e) => {
                tracing::error!(error = %e, "writing the allow-always entry failed");
                self.record(
                    "allow-always",
                    json!({"requestId":req.id,"error":e.to_string()}),
                )
                .await;
            }
        }
    }
}
