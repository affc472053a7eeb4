//! One `node.invoke.request`, answered: `system.run` is decided by the guard (never by the
//! caller's `approved` flag) and run confined; `system.run.prepare` binds the plan;
//! `system.which` and `system.execApprovals.get` answer truthfully. Anything else is refused.

use super::decider::Decider;
use super::protocol::{self as p, InvokeAnswer, InvokeRequest, RunContext, RunParams, RunPayload};
use crate::engine::ask::{Ask, Outcome};
use crate::engine::decision::deny_message;
use crate::engine::plan::{ExecPlan, PlanInput};
use crate::engine::RunResult;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// When the gateway does not say how long it waits (it always does today).
const DEFAULT_INVOKE_MS: u64 = 30_000;
/// Answer this long before the gateway's invoke deadline.
const MARGIN_MS: u64 = 1_500;

/// A frame to send to the gateway: `(method, params)`.
pub type Send = Box<dyn Fn(&str, Value) + std::marker::Send + Sync>;

/// The node's invoke handler: its id, the decider, the deadlines.
pub struct Handler {
    pub node_id: String,
    pub decider: Arc<Decider>,
    /// The longest a gated command waits for a human (within the invoke deadline).
    pub ask_timeout: Duration,
    pub shutdown: watch::Receiver<bool>,
    /// Told how long each confined run took (the latency benchmark subtracts it).
    pub run_timer: Option<RunTimer>,
}

/// See [`Handler::run_timer`].
pub type RunTimer = Arc<dyn Fn(Duration) + std::marker::Send + Sync>;

/// The requester's connection: `true`, or the sender dropped, once the gateway connection
/// the invoke came on is gone (an answer then has nobody to go to, so nothing runs).
#[derive(Clone)]
pub struct Requester(Option<watch::Receiver<bool>>);

impl Requester {
    /// A requester tied to the returned sender: set it to `true`, or drop it, when gone.
    pub fn new() -> (watch::Sender<bool>, Requester) {
        let (tx, rx) = watch::channel(false);
        (tx, Requester(Some(rx)))
    }

    /// A requester that never leaves (in-process callers that wait for the answer).
    pub fn always() -> Requester {
        Requester(None)
    }

    /// Whether the requester is gone now.
    pub fn is_gone(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|rx| rx.has_changed().is_err() || *rx.borrow())
    }

    /// Resolves once the requester is gone (never, for [`Self::always`]).
    pub async fn gone(self) {
        match self.0 {
            Some(mut rx) => {
                let _ = rx.wait_for(|g| *g).await;
            }
            None => std::future::pending().await,
        }
    }
}

impl Handler {
    /// Handles one invoke whose requester never leaves (see [`Self::handle_for`]).
    pub async fn handle(&self, inv: InvokeRequest, send: &Send) {
        self.handle_for(inv, send, Requester::always()).await
    }

    /// Handles one invoke, sending its events and its result through `send`; once
    /// `requester` is gone a pending decision is cancelled and nothing runs.
    pub async fn handle_for(&self, inv: InvokeRequest, send: &Send, requester: Requester) {
        let params = inv.params_json.as_deref().unwrap_or("{}");
        let mut outcome = None;
        let answer = match inv.command.as_str() {
            "system.run" => self.run(&inv, params, send, &requester, &mut outcome).await,
            "system.run.prepare" => prepare(params),
            "system.which" => which(params, &self.decider.judge().deployment().agent_path),
            "system.execApprovals.get" => InvokeAnswer::Ok(json!({"path":"","exists":false,
                "hash":"","file":{"version":1,"defaults":{},"agents":{}}})),
            other => InvokeAnswer::Err {
                code: "UNAVAILABLE".into(),
                message: format!("command not supported by sanctum-guard node: {other}"),
            },
        };
        send(
            "node.invoke.result",
            p::invoke_result(&inv.id, &self.node_id, &answer),
        );
        // After the result: the agent does not wait for the audit of what it already has.
        if let Some(o) = outcome {
            self.decider.report(&o).await;
        }
    }

    /// `system.run`: plan, decide, run confined, answer; the outcome goes to `report`.
    async fn run(
        &self,
        inv: &InvokeRequest,
        params: &str,
        send: &Send,
        requester: &Requester,
        report: &mut Option<Outcome>,
    ) -> InvokeAnswer {
        let received = Instant::now();
        let rp = match parse_run(params) {
            Ok(rp) => rp,
            Err(answer) => return answer,
        };
        let command_text = rp
            .raw_command
            .clone()
            .unwrap_or_else(|| rp.command.join(" "));
        let run_id = rp
            .run_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let ctx = RunContext {
            session_key: rp.session_key.as_deref(),
            run_id: &run_id,
            command: &command_text,
            suppress_notify_on_exit: rp.suppress_notify_on_exit.unwrap_or(false),
        };
        let plan = match self.plan(&rp) {
            Ok(p) => p,
            Err(reason) => return denied(send, &ctx, reason),
        };
        let invoke_ms = inv.timeout_ms.unwrap_or(DEFAULT_INVOKE_MS);
        let window = invoke_ms.saturating_sub(MARGIN_MS);
        let a = self.ask(inv, &rp, &plan, &ctx, window);
        let decided = self
            .decider
            .decide(&a, &plan, self.shutdown.clone(), requester.clone())
            .await;
        // An approval that arrives as the gateway connection drops has nobody to answer.
        if decided.answer.allow && requester.is_gone() {
            return denied(send, &ctx, "requester-gone");
        }
        if !decided.answer.allow {
            let reason = decided
                .answer
                .reason
                .as_deref()
                .unwrap_or("approval-required");
            send(
                "node.event",
                p::node_event("exec.denied", &p::exec_denied(&ctx, reason)),
            );
            return InvokeAnswer::denied(
                &decided
                    .answer
                    .message
                    .clone()
                    .unwrap_or_else(|| deny_message(reason)),
            );
        }
        let left = window.saturating_sub(received.elapsed().as_millis() as u64);
        let budget = run_budget(left, rp.timeout_ms);
        let started = Instant::now();
        let result = self
            .decider
            .run(&a, &decided, plan, budget, self.shutdown.clone())
            .await;
        let ran_for = started.elapsed();
        if let Some(t) = &self.run_timer {
            t(ran_for);
        }
        let mut outcome = Outcome {
            request_id: inv.id.clone(),
            node_id: Some(self.node_id.clone()),
            run_id: Some(run_id.clone()),
            duration_ms: ran_for.as_millis() as u64,
            ..Default::default()
        };
        let answer = answer_run(result, &mut outcome, send, &ctx);
        *report = Some(outcome);
        answer
    }

    /// The exec plan, resolved once where the command runs: what is judged is exactly what
    /// runs (program file, argv, cwd, the deployment's workspace, environment). Err: the
    /// deny reason.
    fn plan(&self, rp: &RunParams) -> Result<ExecPlan, &'static str> {
        // A plan that does not match what would run is someone else's plan.
        if let Some(plan) = &rp.system_run_plan {
            if plan.argv != rp.command {
                return Err("plan-mismatch");
            }
        }
        let input = PlanInput {
            argv: rp.command.clone(),
            cwd: rp.cwd.clone(),
            env: rp.env.clone().unwrap_or_default(),
            timeout_ms: rp.timeout_ms,
        };
        self.decider.judge().plan(&input).map_err(|e| e.reason())
    }

    /// What the decider is asked: the plan's facts, the caller's ids, the wait it can afford.
    fn ask(
        &self,
        inv: &InvokeRequest,
        rp: &RunParams,
        plan: &ExecPlan,
        ctx: &RunContext<'_>,
        window: u64,
    ) -> Ask {
        Ask {
            id: inv.id.clone(),
            argv: plan.argv.clone(),
            command_text: ctx.command.to_owned(),
            cwd: Some(plan.cwd.display().to_string()),
            env_keys: plan.env_keys.clone(),
            env: plan.env_shown(rp.env.as_ref()),
            resolved_path: Some(plan.program.display().to_string()),
            agent_id: rp.agent_id.clone(),
            session_key: rp.session_key.clone(),
            run_id: Some(ctx.run_id.to_owned()),
            node_id: Some(self.node_id.clone()),
            wait_ms: window.min(self.ask_timeout.as_millis() as u64),
        }
    }
}

/// `system.run` params with a command to run.
fn parse_run(params: &str) -> Result<RunParams, InvokeAnswer> {
    let Ok(rp) = serde_json::from_str::<RunParams>(params) else {
        return Err(InvokeAnswer::invalid("system.run params"));
    };
    if rp.command.is_empty() || rp.command[0].is_empty() {
        return Err(InvokeAnswer::invalid("command required"));
    }
    Ok(rp)
}

/// A denied run: the `exec.denied` event, then the answer.
fn denied(send: &Send, ctx: &RunContext<'_>, reason: &str) -> InvokeAnswer {
    send(
        "node.event",
        p::node_event("exec.denied", &p::exec_denied(ctx, reason)),
    );
    InvokeAnswer::denied(&deny_message(reason))
}

/// The run's time: what is `left` of the gateway's window, within the caller's timeout.
fn run_budget(left: u64, timeout_ms: Option<u64>) -> Duration {
    let budget = match timeout_ms {
        Some(t) if t > 0 => t.min(left),
        _ => left,
    };
    Duration::from_millis(budget.max(1))
}

/// The answer to a finished (or abandoned) run; fills in `outcome` for the audit log.
fn answer_run(
    result: RunResult,
    outcome: &mut Outcome,
    send: &Send,
    ctx: &RunContext<'_>,
) -> InvokeAnswer {
    match result {
        RunResult::Ran(o) => {
            let payload = RunPayload {
                exit_code: o.exit_code,
                timed_out: o.timed_out,
                success: o.success,
                stdout: o.stdout,
                stderr: o.stderr,
                error: o.error,
            };
            let mut h = Sha256::new();
            h.update(payload.stdout.as_bytes());
            h.update(payload.stderr.as_bytes());
            outcome.output_sha256 = hex::encode(h.finalize());
            outcome.exit_code = payload.exit_code;
            outcome.timed_out = payload.timed_out;
            outcome.success = payload.success;
            outcome.error = payload.error.clone();
            send(
                "node.event",
                p::node_event("exec.finished", &p::exec_finished(ctx, &payload)),
            );
            InvokeAnswer::Ok(serde_json::to_value(&payload).unwrap_or(Value::Null))
        }
        RunResult::Shutdown => {
            outcome.error = Some("guard-shutdown".into());
            denied(send, ctx, "guard-shutdown")
        }
        RunResult::Failed(e) => {
            outcome.error = Some(format!("sandbox-unavailable: {e}"));
            send(
                "node.event",
                p::node_event("exec.denied", &p::exec_denied(ctx, "sandbox-unavailable")),
            );
            InvokeAnswer::denied(&format!("sandbox could not run the command: {e}"))
        }
    }
}

/// `system.run.prepare`: the plan binds argv, cwd, agent and session; `execPolicy`
/// `full`/`off` tells the gateway to send every run straight to us: the guard is the approver
/// (SECURITY.md "Node host"), so a second, gateway-side prompt would only duplicate it.
fn prepare(params: &str) -> InvokeAnswer {
    let Ok(rp) = serde_json::from_str::<RunParams>(params) else {
        return InvokeAnswer::invalid("system.run.prepare params");
    };
    if rp.command.is_empty() {
        return InvokeAnswer::invalid("command required");
    }
    let text = rp
        .raw_command
        .clone()
        .unwrap_or_else(|| rp.command.join(" "));
    InvokeAnswer::Ok(
        json!({"plan":{"argv":rp.command,"cwd":rp.cwd,"commandText":text,
        "commandPreview":null,"agentId":rp.agent_id,"sessionKey":rp.session_key},
        "execPolicy":{"security":"full","ask":"off"}}),
    )
}

/// `system.which {bins}` → `{bins:{name:path}}`: the names found on the PATH this node's runs
/// get (the deployment's), so the answer is what a run would find.
fn which(params: &str, path: &str) -> InvokeAnswer {
    let Ok(v) = serde_json::from_str::<Value>(params) else {
        return InvokeAnswer::invalid("system.which params");
    };
    let Some(bins) = v["bins"].as_array() else {
        return InvokeAnswer::invalid("bins required");
    };
    let path = std::ffi::OsStr::new(path);
    let mut found = serde_json::Map::new();
    for name in bins.iter().filter_map(Value::as_str) {
        if let Some(p) = resolve(name, path) {
            found.insert(name.to_owned(), json!(p.display().to_string()));
        }
    }
    InvokeAnswer::Ok(json!({ "bins": found }))
}

fn resolve(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let p = PathBuf::from(name);
        return exec(&p).then_some(p);
    }
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| exec(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_binds_the_plan_and_sends_every_run_to_the_node() {
        let a = prepare(
            r#"{"command":["/bin/sh","-lc","ls"],"rawCommand":"ls","agentId":"main","sessionKey":"s","security":"allowlist","ask":"always"}"#,
        );
        let InvokeAnswer::Ok(v) = a else { panic!("ok") };
        assert_eq!(v["plan"]["argv"], json!(["/bin/sh", "-lc", "ls"]));
        assert_eq!(v["plan"]["commandText"], "ls");
        assert_eq!(v["plan"]["sessionKey"], "s");
        assert_eq!(v["execPolicy"], json!({"security":"full","ask":"off"}));
        assert!(matches!(prepare("{}"), InvokeAnswer::Err { .. }));
    }

    #[test]
    fn which_finds_only_executables_on_path() {
        let InvokeAnswer::Ok(v) = which(
            r#"{"bins":["sh","no-such-binary-xyz",""]}"#,
            "/usr/bin:/bin",
        ) else {
            panic!("ok")
        };
        let sh = v["bins"]["sh"].as_str().expect("sh found");
        assert!(sh.ends_with("/sh"));
        assert!(v["bins"].get("no-such-binary-xyz").is_none());
        assert!(matches!(which("{}", "/bin"), InvokeAnswer::Err { .. }));
    }
}
