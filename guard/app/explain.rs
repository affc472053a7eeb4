//! `policy explain` answered as `serve` answers: the deployment's configuration from the
//! same layers (flags, config file, environment), the same judge over the same OpenClaw
//! approvals document, and for an argv the same exec plan (program, cwd in the deployment's
//! workspace, git neutralisation) a socket `exec` frame or the node host resolves. One truth
//! about what runs: the tests run a table of requests through this, the socket and the node
//! and compare (`tests/explain_parity.rs`).

use super::config::{Config, ConfigError, Overrides};
use crate::engine::judge::{Judge, JudgeError};
use crate::engine::plan::PlanInput;
use crate::openclaw::store::{Era, Store, StoreError};
use crate::policy::request::{Action, ExecAction, OpenClawAsk, Request, Source, Who};
use crate::policy::verdict::{Category, Reason, Verdict, VerdictKind};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What is asked about.
#[derive(Debug, Clone)]
pub enum Asked {
    /// Shell text, as OpenClaw's socket `request` frame or a gateway approval carries it.
    Text(String),
    /// An argv the guard would run itself (a socket `exec` frame, the node's `system.run`).
    Argv(Vec<String>),
}

/// One explain request.
#[derive(Debug, Clone)]
pub struct ExplainInput {
    pub overrides: Overrides,
    /// The request's cwd as sent (`None`: the workspace, as for a frame without one).
    pub cwd: Option<String>,
    pub asked: Asked,
    /// Which door asks: `SocketRequest` for text, `SocketExec` or `Node` for an argv.
    pub source: Source,
}

/// The answer, with what it assumed.
#[derive(Debug, Clone)]
pub struct Explained {
    pub verdict: Verdict,
    /// The deployment's workspace (never the request's).
    pub workspace: PathBuf,
    /// Where the command would run.
    pub cwd: PathBuf,
    /// The resolved program and argv of an argv request's plan.
    pub program: Option<PathBuf>,
    pub argv: Vec<String>,
    /// The sandbox profile a run would get: the autonomous one for an allow, the category's
    /// for an approved run; `None` where the guard does not run it (a `request` frame).
    pub profile: Option<String>,
    /// Where the configuration came from.
    pub origin: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Judge(#[from] JudgeError),
    #[error("OpenClaw approvals store: {0}")]
    Store(#[from] StoreError),
}

/// Answers `input` as the deployment's `serve` would, without running anything.
pub fn explain(input: &ExplainInput) -> Result<Explained, ExplainError> {
    let cfg = Config::load(&input.overrides)?;
    let store = Store::open(&cfg.openclaw_state_dir, Era::Sqlite)?;
    let judge = Judge::load(cfg.judge_config()?, store)?;
    let workspace = judge.deployment().workspace.clone();
    let origin = cfg.origin.clone();
    let who = Who {
        agent_id: "main".into(),
        session_key: None,
        source: input.source,
    };
    let request = |action: ExecAction| Request {
        id: "explain".into(),
        who: who.clone(),
        action: Action::Exec(action),
        received_at_ms: 0,
        deadline_ms: None,
        openclaw: OpenClawAsk::default(),
    };
    match &input.asked {
        Asked::Text(text) => {
            let cwd = match input.cwd.as_deref() {
                Some(c) if !c.is_empty() => PathBuf::from(c),
                _ => workspace.clone(),
            };
            let req = request(ExecAction {
                command: Some(text.clone()),
                cwd: Some(cwd.clone()),
                ..ExecAction::default()
            });
            let verdict = judge.decide(&req);
            Ok(Explained {
                verdict,
                workspace,
                cwd,
                program: None,
                argv: Vec::new(),
                profile: None,
                origin,
            })
        }
        Asked::Argv(argv) => {
            let plan_input = PlanInput {
                argv: argv.clone(),
                cwd: input.cwd.clone(),
                env: BTreeMap::new(),
                timeout_ms: None,
            };
            let plan = match judge.plan(&plan_input) {
                Ok(p) => p,
                Err(e) => {
                    // The door denies a request it cannot plan, with this reason.
                    let verdict = Verdict {
                        kind: VerdictKind::Deny,
                        category: Category::Unanalysable,
                        reasons: vec![Reason::new(e.reason(), e.to_string())],
                        offered: Vec::new(),
                        segments: Vec::new(),
                        profile: None,
                    };
                    return Ok(Explained {
                        verdict,
                        cwd: workspace.clone(),
                        workspace,
                        program: None,
                        argv: argv.clone(),
                        profile: None,
                        origin,
                    });
                }
            };
            let req = request(plan.action(None));
            let verdict = judge.decide_plan(&req, &plan);
            let profile = match verdict.kind {
                VerdictKind::Deny => None,
                kind => Some(judge.run_profile(&verdict, kind == VerdictKind::Allow)),
            };
            Ok(Explained {
                verdict,
                workspace,
                cwd: plan.cwd.clone(),
                program: Some(plan.program.clone()),
                argv: plan.argv.clone(),
                profile,
                origin,
            })
        }
    }
}

/// What a real run adds around a profile, for `sanctum-guard sandbox`: the deployment's
/// deny list (its state, config and policy files, OpenClaw's state, every sensitive path)
/// and the agent's home, from the same configuration `serve` loads.
pub fn deployment_confinement(
    overrides: &Overrides,
) -> Result<(crate::sandbox::DenyList, PathBuf), ExplainError> {
    let cfg = Config::load(overrides)?;
    let store = Store::open(&cfg.openclaw_state_dir, Era::Sqlite)?;
    let judge = Judge::load(cfg.judge_config()?, store)?;
    Ok((
        judge.deny_list().clone(),
        judge.deployment().agent_home.clone(),
    ))
}
