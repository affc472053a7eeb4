//! The engine: one pipeline for every door. A door (the approvals socket today) turns its frame
//! into a [`Request`]; the engine judges it (policy + OpenClaw's document, in [`judge`]), sends
//! `ask` verdicts to the inbox and waits for a person or the deadline, persists `allow-always`,
//! runs approved execs under the sandbox, and writes every step to the audit log. It knows no
//! frames. Fail closed: any internal error is a deny with a reason.

pub mod agent;
pub mod ask;
mod bounded;
pub mod deadlines;
pub mod decision;
pub mod env_shown;
pub mod git;
pub mod grants;
pub mod judge;
pub mod metrics;
pub mod plan;
pub mod posture;
pub mod state_modes;

use crate::audit::event::{
    AllowAlways, Answered, Asked, AuditEvent, Decided, NotRun, OutputSummary, Ran, Requester,
    StateRepair, StateTamper,
};
use crate::audit::AuditLog;
use crate::inbox::{Cancel, Inbox};
use crate::policy::request::{DecidedBy, Decision, DecisionKind, Request, Source};
use crate::policy::verdict::{Verdict, VerdictKind};
use crate::sandbox::RunOutcome;
pub use deadlines::Deadlines;
use decision::{deny_reason, fallback, now_ms, policy_decision};
pub use judge::{Judge, JudgeConfig, JudgeError};
pub use metrics::MetricsSink;
pub use plan::{ExecPlan, PlanError, PlanInput};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The OpenClaw combined output cap (docs/openclaw-protocol.md §3.4).
pub const OUTPUT_CAP: usize = 200_000;

/// Everything the pipeline needs, built once by the app wiring (`serve`).
pub struct Engine {
    deadlines: Deadlines,
    judge: Judge,
    inbox: Inbox,
    audit: AuditLog,
    /// False once an audit write failed: allows are refused from then on.
    audit_ok: Arc<AtomicBool>,
    /// Answers that run nothing also wait for their record's fsync.
    durable_answers: bool,
    /// Where decisions and run outcomes are counted.
    metrics: &'static dyn MetricsSink,
    /// Shut while the gateway's posture is unchecked or unsafe: every decision is a deny.
    posture: Arc<posture::PostureGate>,
    /// The guard's own state, put back after each approved run (none: not checked).
    state_modes: Option<state_modes::StateModes>,
    /// Bounded grants checked before a person is asked (none: every gated request asks).
    grants: Option<Arc<dyn crate::grants::GrantBackend>>,
}

/// How an approved run ended, as the engine reports it to a door.
#[derive(Debug)]
pub enum RunResult {
    /// The command ran (whatever its exit status).
    Ran(Box<RunOutcome>),
    /// The guard is stopping: the run was abandoned (its process group killed).
    Shutdown,
    /// The sandbox could not run it; the error says why. Nothing ran.
    Failed(JudgeError),
}

impl Engine {
    pub fn new(
        deadlines: Deadlines,
        judge: Judge,
        inbox: Inbox,
        audit: AuditLog,
        durable_answers: bool,
    ) -> Self {
        Engine {
            deadlines,
            judge,
            inbox,
            audit,
            audit_ok: Arc::new(AtomicBool::new(true)),
            durable_answers,
            metrics: &metrics::NoMetrics,
            posture: Arc::new(posture::PostureGate::open()),
            state_modes: None,
            grants: None,
        }
    }

    /// Checks `modes` after every approved run (serve's and the node's state dirs).
    pub fn with_state_modes(mut self, modes: state_modes::StateModes) -> Self {
        self.state_modes = Some(modes);
        self
    }

    /// Decides through `gate` (serve's, when a gateway is configured).
    pub fn with_posture(mut self, gate: Arc<posture::PostureGate>) -> Self {
        self.posture = gate;
        self
    }

    pub fn posture(&self) -> &Arc<posture::PostureGate> {
        &self.posture
    }

    /// Reports decisions and run outcomes to `sink` (the web door's exposition in `serve`).
    pub fn with_metrics(mut self, sink: &'static dyn MetricsSink) -> Self {
        self.metrics = sink;
        self
    }

    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub fn judge(&self) -> &Judge {
        &self.judge
    }

    /// The audit log, for a sink that records beside the engine (the read proxy).
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    pub fn deadlines(&self) -> &Deadlines {
        &self.deadlines
    }

    /// Appends to the audit log (fsynced, off the async threads) before the reply is sent,
    /// so no answer leaves without its record. Returns false when the log failed.
    pub async fn record(&self, event: AuditEvent) -> bool {
        let kind = event.kind();
        match self.audit.record(event).await {
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
    /// [`Self::record`]. The event is turned into JSON on the audit writer thread, off the
    /// event loop. Returns false when the log is (known to be) failing.
    pub async fn record_soon(&self, event: AuditEvent) -> bool {
        if self.durable_answers {
            return self.record(event).await;
        }
        self.audit.record_detached(event, &self.audit_ok);
        self.audit_ok.load(Ordering::Relaxed)
    }

    /// Verdict, then the decision: at once for allow/deny, via the inbox for ask. Audited.
    /// `requester` is the door's description of who asked (audit only). `requester_gone`
    /// resolves when the door's client went away (pass `std::future::pending()` if it
    /// cannot): a request waiting in the inbox is then cancelled `requester-gone` and denied.
    pub async fn decide(
        &self,
        requester: &Requester,
        req: &Request,
        plan: Option<&ExecPlan>,
        shutdown: watch::Receiver<bool>,
        requester_gone: impl std::future::Future<Output = ()>,
    ) -> (Decision, Verdict) {
        let gone = async move {
            requester_gone.await;
            Cancel::RequesterGone
        };
        self.decide_until(requester, req, plan, shutdown, gone)
            .await
    }

    /// [`Self::decide`] where the door says why a waiting request ends early: `cancel`
    /// resolves with the reason (the requester left, another approver answered), and the
    /// inbox entry is closed with it.
    pub async fn decide_until(
        &self,
        requester: &Requester,
        req: &Request,
        plan: Option<&ExecPlan>,
        shutdown: watch::Receiver<bool>,
        cancel: impl std::future::Future<Output = Cancel>,
    ) -> (Decision, Verdict) {
        let verdict = match plan {
            Some(p) => self.judge.decide_plan(req, p),
            None => self.judge.decide(req),
        };
        self.decide_verdict(requester, req, verdict, shutdown, cancel)
            .await
    }

    /// [`Self::decide_until`] for a verdict the door already holds (e.g. the stricter of the
    /// node's and this guard's).
    pub async fn decide_verdict(
        &self,
        requester: &Requester,
        req: &Request,
        verdict: Verdict,
        shutdown: watch::Receiver<bool>,
        cancel: impl std::future::Future<Output = Cancel>,
    ) -> (Decision, Verdict) {
        if let Some(why) = self.posture.blocking() {
            let decision = policy_decision(DecisionKind::Deny, Some(why));
            let decision = self
                .record_policy_decision(requester, req, &verdict, decision)
                .await;
            return (decision, verdict);
        }
        let decision = match verdict.kind {
            VerdictKind::Allow => policy_decision(DecisionKind::AllowOnce, None),
            VerdictKind::Deny => policy_decision(DecisionKind::Deny, Some(deny_reason(&verdict))),
            VerdictKind::Ask => {
                if let Some(d) = self.grant_decision(requester, req, &verdict).await {
                    return (d, verdict);
                }
                let d = self
                    .ask_person(requester, req, &verdict, shutdown, cancel)
                    .await;
                return (d, verdict);
            }
        };
        let decision = self
            .record_policy_decision(requester, req, &verdict, decision)
            .await;
        (decision, verdict)
    }

    /// An `ask` verdict: an inbox entry, then a wait for a person, the deadline, the guard's
    /// shutdown or the door's `cancel` (each but a person's answer is a fallback deny).
    async fn ask_person(
        &self,
        requester: &Requester,
        req: &Request,
        verdict: &Verdict,
        mut shutdown: watch::Receiver<bool>,
        cancel: impl std::future::Future<Output = Cancel>,
    ) -> Decision {
        let deadline = req
            .deadline_ms
            .unwrap_or_else(|| self.deadlines.request_deadline(now_ms()));
        let ticket = match self.inbox.submit(req, verdict, deadline).await {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "inbox submit failed; denying");
                // The reason the agent sees names the cause, not the database's words.
                let d = match e {
                    crate::inbox::InboxError::StoreUnavailable(_) => fallback("store-unavailable"),
                    e => fallback(&format!("inbox-unavailable: {e}")),
                };
                self.record(decided(requester, req, verdict, &d)).await;
                return d;
            }
        };
        self.record(AuditEvent::Asked(Box::new(Asked {
            requester: requester.clone(),
            inbox_id: ticket.id.clone(),
            request_hash: ticket.request_hash.clone(),
            deadline_ms: deadline,
            request: req.clone(),
            verdict: verdict.clone(),
        })))
        .await;
        let id = ticket.id.clone();
        let d = if *shutdown.borrow() {
            Err(Cancel::GuardShutdown)
        } else {
            tokio::select! {
                d = ticket.wait() => Ok(d),
                _ = shutdown.changed() => Err(Cancel::GuardShutdown),
                why = cancel => Err(why),
            }
        };
        let d = match d {
            Ok(d) => d,
            Err(why) => {
                let reason = why.reason();
                if let Err(e) = self.inbox.cancel(&id, why) {
                    tracing::warn!(error = %e, reason, "inbox cancel failed");
                }
                fallback(&reason)
            }
        };
        self.record(AuditEvent::Answered(Answered {
            inbox_id: id,
            request_id: req.id.clone(),
            decision: d.clone(),
        }))
        .await;
        d
    }

    /// Records the policy's own answer: queued for a `request` frame (nothing runs on it),
    /// on disk first for an exec. An allow whose record cannot be written is a deny.
    async fn record_policy_decision(
        &self,
        requester: &Requester,
        req: &Request,
        verdict: &Verdict,
        decision: Decision,
    ) -> Decision {
        self.metrics.decision(&decision, Some(req.received_at_ms));
        let event = decided(requester, req, verdict, &decision);
        let audited = if req.who.source == Source::SocketRequest {
            self.record_soon(event).await
        } else {
            // An exec runs next: its decision is on disk first.
            self.record(event).await
        };
        if !audited && decision.kind != DecisionKind::Deny {
            return fallback("audit-unavailable");
        }
        decision
    }

    pub async fn persist_allow_always(&self, req: &Request, verdict: &Verdict) {
        match self.judge.persist_allow_always(req, verdict).await {
            Ok(n) => {
                self.record(AuditEvent::AllowAlways(AllowAlways {
                    request_id: req.id.clone(),
                    entries: Some(n),
                    error: None,
                }))
                .await;
            }
            Err(e) => {
                tracing::error!(error = %e, "writing the allow-always entry failed");
                self.record(AuditEvent::AllowAlways(AllowAlways {
                    request_id: req.id.clone(),
                    entries: None,
                    error: Some(e.to_string()),
                }))
                .await;
            }
        }
    }

    /// Runs an approved exec under the sandbox profile its verdict names, within `budget`,
    /// abandoning it when the guard stops. The outcome (or why nothing ran) is on disk before
    /// this returns.
    pub async fn run_exec(
        &self,
        req: &Request,
        verdict: &Verdict,
        decision: &Decision,
        plan: ExecPlan,
        budget: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) -> RunResult {
        let argv = plan.argv.clone();
        let cwd = plan.cwd.clone();
        let program = plan.program.clone();
        let dropped = plan.dropped_env.clone();
        // Only what the policy let run by itself gets git's own programs switched off.
        let autonomous = decision.by == DecidedBy::Policy;
        let started = std::time::Instant::now();
        let who = judge::RunFor {
            request_id: &req.id,
            agent_id: &req.who.agent_id,
            session_key: req.who.session_key.as_deref(),
        };
        let run = self.judge.run(verdict, plan, autonomous, budget, who);
        let result = self
            .run_and_record(
                req,
                run,
                (argv, cwd, program, dropped),
                started,
                &mut shutdown,
            )
            .await;
        // Only an approved run may chmod: an autonomous one's seccomp filter refuses it.
        if !autonomous {
            self.restore_state_modes(&req.id).await;
        }
        result
    }

    /// Puts back the guard's state files an approved run widened; a `tamper` record names them.
    async fn restore_state_modes(&self, request_id: &str) {
        let Some(modes) = &self.state_modes else {
            return;
        };
        let repairs = modes.restore();
        if repairs.is_empty() {
            return;
        }
        let entries: Vec<StateRepair> = repairs
            .into_iter()
            .map(|r| StateRepair {
                path: r.drift.path,
                mode_was: format!("{:04o}", r.drift.mode),
                mode_now: format!("{:04o}", r.drift.wanted_mode),
                owner_was: r.drift.uid,
                owner_now: r.owner,
                restored: r.error.is_none(),
                error: r.error,
            })
            .collect();
        tracing::warn!(id = %request_id, entries = entries.len(),
            "an approved run changed the guard's own files; restored");
        self.record(AuditEvent::StateTamper(StateTamper {
            request_id: request_id.to_owned(),
            entries,
        }))
        .await;
    }

    /// Awaits `run` (or the guard's stop) and writes its outcome record.
    async fn run_and_record(
        &self,
        req: &Request,
        run: impl std::future::Future<Output = Result<RunOutcome, JudgeError>>,
        (argv, cwd, program, dropped): (Vec<String>, PathBuf, PathBuf, Vec<String>),
        started: std::time::Instant,
        shutdown: &mut watch::Receiver<bool>,
    ) -> RunResult {
        let outcome = tokio::select! {
            o = run => o,
            _ = async { let _ = shutdown.wait_for(|s| *s).await; } => {
                self.metrics.run("shutdown");
                self.record(AuditEvent::NotRun(NotRun {
                    id: req.id.clone(), argv, error: None, reason: "guard-shutdown", message: None,
                })).await;
                return RunResult::Shutdown;
            }
        };
        match outcome {
            Ok(o) => {
                self.metrics.run(metrics::run_class(&o));
                self.record(AuditEvent::Ran(Box::new(Ran {
                    id: req.id.clone(),
                    program,
                    argv,
                    cwd,
                    dropped_env: dropped,
                    integrity: o.integrity.clone(),
                    duration_ms: started.elapsed().as_millis() as u64,
                    output: output_summary(&o.stdout, &o.stderr),
                    exit_code: o.exit_code,
                    timed_out: o.timed_out,
                    success: o.success,
                    stdout_bytes: o.stdout.len(),
                    stderr_bytes: o.stderr.len(),
                    error: o.error.clone(),
                    queued_ms: o.queued_ms,
                })))
                .await;
                if !o.integrity.is_empty() {
                    tracing::warn!(id = %req.id, events = o.integrity.len(),
                        "an approved run changed repository hooks or config; restored or flagged");
                }
                RunResult::Ran(Box::new(o))
            }
            // Nothing ran: the record says so, and the agent hears it as a run that did
            // not start (no exit code, the reason as its error).
            Err(e @ JudgeError::QueueTimeout { .. }) => {
                self.metrics.run("queue-timeout");
                let message = e.to_string();
                self.record(AuditEvent::NotRun(NotRun {
                    id: req.id.clone(),
                    argv,
                    error: Some(message.clone()),
                    reason: "queue-timeout",
                    message: None,
                }))
                .await;
                RunResult::Ran(Box::new(RunOutcome {
                    exit_code: None,
                    timed_out: true,
                    success: false,
                    stdout: String::new(),
                    stderr: String::new(),
                    error: Some(message),
                    enforcement: crate::sandbox::EnforcementStatus::not_started(),
                    signal: None,
                    integrity: vec![],
                    queued_ms: started.elapsed().as_millis() as u64,
                }))
            }
            Err(e) => {
                self.metrics.run("sandbox-unavailable");
                self.record(AuditEvent::NotRun(NotRun {
                    id: req.id.clone(),
                    argv,
                    error: Some(e.to_string()),
                    reason: "sandbox-unavailable",
                    message: None,
                }))
                .await;
                RunResult::Failed(e)
            }
        }
    }
}

/// Bytes of output kept at each end in the audit record (the whole output stays with the
/// agent; the record keeps enough for a person to see what happened).
const OUTPUT_EDGE: usize = 400;

/// Head and tail of a run's output for its audit record, with the full size and digest.
fn output_summary(stdout: &str, stderr: &str) -> OutputSummary {
    use sha2::{Digest, Sha256};
    let both = if stderr.is_empty() {
        stdout.to_owned()
    } else {
        format!("{stdout}{stderr}")
    };
    let head: String = both.chars().take(OUTPUT_EDGE).collect();
    let total = both.chars().count();
    let tail: String = if total > 2 * OUTPUT_EDGE {
        both.chars().skip(total - OUTPUT_EDGE).collect()
    } else {
        both.chars().skip(head.chars().count()).collect()
    };
    OutputSummary {
        bytes: both.len(),
        sha256: hex::encode(Sha256::digest(both.as_bytes())),
        head,
        tail,
        truncated: total > 2 * OUTPUT_EDGE,
    }
}

/// The `decision` record of an answer the engine gave with its verdict.
fn decided(requester: &Requester, req: &Request, verdict: &Verdict, d: &Decision) -> AuditEvent {
    AuditEvent::Decided(Box::new(Decided {
        requester: requester.clone(),
        request: req.clone(),
        verdict: verdict.clone(),
        decision: d.clone(),
        grants: vec![],
    }))
}
