//! Who decides a node's `system.run`: the sidecar guard over the approvals socket (a
//! deployment: the node runs in the agent's container, the human's inbox is the sidecar's),
//! or the same engine in-process (laptop mode). Either way the node resolves the exec plan
//! where the command runs, asks about exactly that plan, runs it unchanged under its own
//! sandbox with the profile the verdict named, and reports the outcome back.

use super::invoke::Requester as Conn;
use crate::audit::event::{AuditEvent, Origin, Requester, RunOutcome};
use crate::engine::ask::{self, Answer, Ask, Outcome};
use crate::engine::decision::{deny_reason, now_ms};
use crate::engine::plan::ExecPlan;
use crate::engine::{Engine, Judge, RunResult};
use crate::policy::request::{DecidedBy, Decision, DecisionKind, Request};
use crate::policy::verdict::{Verdict, VerdictKind};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::watch;

/// Characters of the sidecar's deny sentence passed on to the agent.
const MAX_MESSAGE: usize = 400;

/// The sidecar's answer lines are small; anything longer is refused.
const MAX_REPLY: u64 = 64 * 1024;

/// Talks to the sidecar's approvals socket (one frame per connection, JSON Lines).
pub struct SocketDecider {
    pub path: PathBuf,
    pub token: String,
}

impl SocketDecider {
    async fn exchange(&self, line: String, wait: Duration) -> Result<serde_json::Value, String> {
        let io = async {
            let mut s = UnixStream::connect(&self.path)
                .await
                .map_err(|e| format!("connect {}: {e}", self.path.display()))?;
            s.write_all(line.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            s.write_all(b"\n").await.map_err(|e| e.to_string())?;
            let mut reply = String::new();
            let mut r = BufReader::new(s.take(MAX_REPLY));
            r.read_line(&mut reply).await.map_err(|e| e.to_string())?;
            serde_json::from_str::<serde_json::Value>(reply.trim())
                .map_err(|_| "the decider closed without an answer".to_owned())
        };
        tokio::time::timeout(wait, io)
            .await
            .map_err(|_| "the decider did not answer in time".to_owned())?
    }

    /// A deny unless the sidecar says `allow-once`/`allow-always` for this very request id.
    /// `mine` is the node's own verdict on the plan (its kind and reasons go with the
    /// request: the sidecar's verdict is never laxer).
    pub async fn ask(&self, a: &Ask, mine: &Verdict, workspace: &std::path::Path) -> Answer {
        let stamp = crate::engine::plan::WorkspaceStamp::of(workspace);
        let node_verdict = json!({"kind":mine.kind,"reasons":mine.reasons,"workspace":stamp});
        let frame = json!({"type":"request","token":self.token,"id":a.id,"request":{
            "command":a.command_text,"cwd":a.cwd,"host":"node","agentId":a.agent_id,
            "sessionKey":a.session_key,"commandArgv":a.argv,"envKeys":a.env_keys,"envShown":a.env,
            "resolvedPath":a.resolved_path,"source":"node","runId":a.run_id,"nodeId":a.node_id,
            "timeoutMs":a.wait_ms,"nodeVerdict":node_verdict}});
        // A little longer than the sidecar's own deadline, so its fallback answer arrives.
        let wait = Duration::from_millis(a.wait_ms.saturating_add(2_000));
        let v = match self.exchange(frame.to_string(), wait).await {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "decider unavailable: denying");
                return Answer::deny("decider-unavailable");
            }
        };
        let kind = v["decision"].as_str().and_then(DecisionKind::parse);
        let same = v["type"] == "decision" && v["id"].as_str() == Some(a.id.as_str());
        match kind {
            Some(DecisionKind::AllowOnce | DecisionKind::AllowAlways) if same => Answer {
                allow: true,
                reason: None,
                profile: v["profile"].as_str().map(str::to_owned),
                // Anything but an explicit person counts as the policy's (no git neutralising
                // is skipped on a guess).
                by_policy: v["by"] != "human",
                message: None,
            },
            _ => Answer {
                // The sidecar's sentence for the agent (a person's deny names them).
                message: v["message"]
                    .as_str()
                    .filter(|m| same && !m.is_empty())
                    .map(|m| m.chars().take(MAX_MESSAGE).collect()),
                ..Answer::deny(v["reason"].as_str().unwrap_or("approval-required"))
            },
        }
    }

    async fn report(&self, o: &Outcome) {
        let frame = json!({"type":"outcome","token":self.token,"id":o.request_id,"outcome":o});
        if let Err(e) = self
            .exchange(frame.to_string(), Duration::from_secs(10))
            .await
        {
            tracing::warn!(error = %e, id = %o.request_id, "outcome not delivered to the decider");
        }
    }
}

/// Deployment mode: the sidecar decides; the node's judge resolves plans and holds the
/// sandbox profiles.
pub struct Remote {
    pub socket: SocketDecider,
    pub judge: Judge,
    /// This node's state (on a laptop, the guard's too), put back after approved runs.
    pub state_modes: crate::engine::state_modes::StateModes,
}

/// The deciding guard and the runner, as the node uses them.
pub enum Decider {
    /// Laptop mode: the same engine (policy, inbox, audit) in this process.
    Local(Arc<Engine>),
    /// Deployment: the sidecar decides.
    Remote(Box<Remote>),
}

/// A decision and what the run needs from it.
pub struct Decided {
    pub answer: Answer,
    pub verdict: Verdict,
    pub decision: Decision,
}

impl Decider {
    /// The judge that resolves plans where the command runs.
    pub fn judge(&self) -> &Judge {
        match self {
            Decider::Local(e) => e.judge(),
            Decider::Remote(r) => &r.judge,
        }
    }

    /// Decides `a`, whose facts come from `plan`.
    pub async fn decide(
        &self,
        a: &Ask,
        plan: &ExecPlan,
        shutdown: watch::Receiver<bool>,
        conn: Conn,
    ) -> Decided {
        let mut req = ask::request(a, now_ms());
        req.action = crate::policy::request::Action::Exec(plan.action_with_env(&a.env));
        match self {
            Decider::Local(engine) => decide_local(engine, a, &req, plan, shutdown, conn).await,
            Decider::Remote(r) => decide_remote(r, a, &req, plan, conn).await,
        }
    }

    /// Runs an approved plan confined, unchanged, within `budget`.
    pub async fn run(
        &self,
        a: &Ask,
        d: &Decided,
        plan: ExecPlan,
        budget: Duration,
        shutdown: watch::Receiver<bool>,
    ) -> RunResult {
        match self {
            Decider::Local(engine) => {
                let mut req = ask::request(a, now_ms());
                req.action = crate::policy::request::Action::Exec(plan.action_with_env(&a.env));
                engine
                    .run_exec(&req, &d.verdict, &d.decision, plan, budget, shutdown)
                    .await
            }
            Decider::Remote(r) => {
                let mut shutdown = shutdown;
                let autonomous = d.decision.by == DecidedBy::Policy;
                let who = crate::engine::judge::RunFor {
                    request_id: &a.id,
                    agent_id: a
                        .agent_id
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .unwrap_or("main"),
                    session_key: a.session_key.as_deref(),
                };
                let result = tokio::select! {
                    o = r.judge.run(&d.verdict, plan, autonomous, budget, who) => match o {
                        Ok(o) => RunResult::Ran(Box::new(o)),
                        Err(e) => RunResult::Failed(e),
                    },
                    _ = async { let _ = shutdown.wait_for(|s| *s).await; } => RunResult::Shutdown,
                };
                if !autonomous {
                    // No audit log here (the deciding guard's is over the socket): the log says it.
                    for rep in r.state_modes.restore() {
                        tracing::warn!(id = %a.id, path = %rep.drift.path.display(),
                            mode_was = format!("{:04o}", rep.drift.mode),
                            owner_was = rep.drift.uid, error = ?rep.error,
                            "an approved run changed the node's state; restored");
                    }
                }
                result
            }
        }
    }

    /// Sends the outcome to the deciding guard's audit log.
    pub async fn report(&self, o: &Outcome) {
        match self {
            Decider::Local(engine) => {
                let event = AuditEvent::RunOutcome(Box::new(RunOutcome {
                    source: Origin::Node,
                    peer: None,
                    outcome: o.clone(),
                }));
                engine.record(event).await;
            }
            Decider::Remote(r) => r.socket.report(o).await,
        }
    }
}

/// Laptop mode: the in-process engine decides (and persists an `allow-always`).
async fn decide_local(
    engine: &Engine,
    a: &Ask,
    req: &Request,
    plan: &ExecPlan,
    shutdown: watch::Receiver<bool>,
    conn: Conn,
) -> Decided {
    let requester = Requester::LocalNode {
        node: a.node_id.clone(),
        run_id: a.run_id.clone(),
    };
    let (d, verdict) = engine
        .decide(&requester, req, Some(plan), shutdown, conn.gone())
        .await;
    if d.kind == DecisionKind::AllowAlways {
        engine.persist_allow_always(req, &verdict).await;
    }
    let answer = match d.kind {
        DecisionKind::Deny => Answer::denied(&d),
        _ => Answer {
            allow: true,
            reason: None,
            profile: verdict.profile.clone(),
            by_policy: d.by == DecidedBy::Policy,
            message: None,
        },
    };
    Decided {
        answer,
        verdict,
        decision: d,
    }
}

/// Deployment: the sidecar decides; what only this filesystem shows (the plan's reasons)
/// takes autonomy away here, and the sidecar's profile is the one the run uses.
async fn decide_remote(r: &Remote, a: &Ask, req: &Request, plan: &ExecPlan, conn: Conn) -> Decided {
    // The node's own verdict, judged on the filesystem the command runs on (the sidecar may
    // see another one): sent with the request, so the sidecar's verdict is at least as
    // strict, and applied here too, so the stricter of the two counts whatever answers.
    // When the requester leaves first, the sidecar connection is dropped: the sidecar
    // cancels the request as gone.
    let mut verdict = r.judge.decide_plan(req, plan);
    let mut answer = tokio::select! {
        answer = r.socket.ask(a, &verdict, &r.judge.deployment().workspace) => answer,
        _ = conn.gone() => Answer::deny("requester-gone"),
    };
    let stricter_here = match verdict.kind {
        VerdictKind::Deny => answer.allow,
        VerdictKind::Ask => answer.allow && answer.by_policy,
        VerdictKind::Allow => false,
    };
    if stricter_here {
        answer = Answer::deny(&deny_reason(&verdict));
    }
    if answer.profile.is_some() {
        verdict.profile = answer.profile.clone();
    }
    let decision = Decision {
        kind: if answer.allow {
            DecisionKind::AllowOnce
        } else {
            DecisionKind::Deny
        },
        reason: answer.reason.clone(),
        by: if answer.by_policy {
            DecidedBy::Policy
        } else {
            DecidedBy::Human("sidecar".into())
        },
        at_ms: now_ms(),
    };
    Decided {
        answer,
        verdict,
        decision,
    }
}
