//! The socket's view of the rest of the guard: the policy (verdicts), OpenClaw's approvals
//! document (effective security/ask/allowlist per agent, cached and reloaded when OpenClaw
//! changes it; `allow-always` entries written back) and the sandbox (approved runs).

use super::wire::{ExecPayload, ExecRequest};
use crate::config::Config;
use crate::openclaw::allow_always::{append_allow_always, Grant};
use crate::openclaw::document::ApprovalsDocument;
use crate::openclaw::resolve;
use crate::openclaw::store::{Era, Store, StoreError};
use crate::policy::allowlist::{CompiledAllowlist, Rule};
use crate::policy::decide::{decide, DecideContext, ExecAsk, ExecSecurity};
use crate::policy::file::{Policy, PolicyError};
use crate::policy::request::Request;
use crate::policy::verdict::{Category, Verdict, VerdictKind};
use crate::sandbox::{self, ProfileSpec, RunSpec, SandboxError};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Errors of the oracle's I/O (policy file, OpenClaw store, sandbox).
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    #[error("{0}")]
    Policy(#[from] PolicyError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Sandbox(#[from] SandboxError),
    #[error("no sandbox profile named {0:?}")]
    NoProfile(String),
    #[error("{0}")]
    Join(String),
}

struct Cached {
    raw: Option<String>,
    doc: Result<ApprovalsDocument, String>,
    contexts: HashMap<String, Arc<DecideContext>>,
}

/// The decide context of one agent: the policy's agent home and PATH, OpenClaw's effective
/// security/ask/askFallback and its compiled allowlist. Unknown enum spellings fail closed.
fn context_for(policy: &Policy, eff: &resolve::EffectivePolicy) -> DecideContext {
    // The policy was completed for this host at load (`config::load_policy`).
    let home = policy
        .agent_home()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let rules: Vec<Rule> = eff
        .allowlist
        .iter()
        .map(|e| Rule {
            pattern: e.pattern().to_owned(),
            arg_pattern: e.arg_pattern().map(str::to_owned),
            allow_always: e.source_allow_always(),
        })
        .collect();
    let v = &eff.values;
    DecideContext {
        cwd: policy
            .workspace()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| home.clone()),
        path: policy
            .agent_path()
            .unwrap_or(crate::config::DEFAULT_AGENT_PATH)
            .to_owned(),
        workspace: None,
        security: ExecSecurity::parse(v.security.as_str()).unwrap_or(ExecSecurity::Deny),
        ask: ExecAsk::parse(v.ask.as_str()).unwrap_or(ExecAsk::Always),
        ask_fallback: ExecSecurity::parse(v.ask_fallback.as_str()).unwrap_or(ExecSecurity::Deny),
        allowlist: CompiledAllowlist::compile(&rules, &home),
        home,
        facts: crate::host_facts::HostFacts::shared(),
    }
}

/// Policy + OpenClaw document + sandbox, as the engine calls them.
pub struct Oracle {
    policy: Policy,
    policy_origin: String,
    store: Store,
    cache: RwLock<Cached>,
    profiles: BTreeMap<String, ProfileSpec>,
}

impl Oracle {
    /// Loads the policy (file or embedded) and reads the approvals document once.
    pub fn load(cfg: &Config, store: Store) -> Result<Oracle, OracleError> {
        let policy = match &cfg.policy {
            Some(p) => crate::config::load_policy(Some(p))?,
            None => crate::config::load_policy(None)?,
        };
        let policy_origin = policy.origin().to_owned();
        let profiles = policy.profiles().clone();
        let o = Oracle {
            policy,
            policy_origin,
            store,
            cache: RwLock::new(Cached {
                raw: None,
                doc: Err("not read yet".into()),
                contexts: HashMap::new(),
            }),
            profiles,
        };
        o.reload();
        Ok(o)
    }

    pub fn store_path(&self) -> PathBuf {
        self.store.path()
    }

    pub fn era_name(&self) -> &'static str {
        match self.store.era() {
            Era::Json => "JSON era",
            Era::Sqlite => "SQLite era",
        }
    }

    pub fn policy_origin(&self) -> &str {
        &self.policy_origin
    }

    /// Re-reads OpenClaw's document; drops the cached contexts when it changed. An unreadable
    /// document fails closed (deny/off/deny) until it reads again.
    pub fn reload(&self) {
        let raw = self.store.read_raw();
        let mut c = self.cache.write().unwrap_or_else(|p| p.into_inner());
        match raw {
            Ok(raw) if c.doc.is_ok() && raw == c.raw => {}
            Ok(raw) => {
                c.doc = match &raw {
                    Some(text) => ApprovalsDocument::parse_lenient(text).map_err(|e| e.to_string()),
                    None => Ok(ApprovalsDocument::default()),
                };
                c.raw = raw;
                c.contexts.clear();
            }
            Err(e) => {
                c.doc = Err(e.to_string());
                c.raw = None;
                c.contexts.clear();
            }
        }
    }

    fn context(&self, agent_id: &str) -> Arc<DecideContext> {
        if let Some(ctx) = self
            .cache
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contexts
            .get(agent_id)
        {
            return ctx.clone();
        }
        let mut c = self.cache.write().unwrap_or_else(|p| p.into_inner());
        let effective = match &c.doc {
            Ok(doc) => resolve::resolve(doc, agent_id),
            Err(_) => resolve::EffectivePolicy::fail_closed(),
        };
        let ctx = Arc::new(context_for(&self.policy, &effective));
        c.contexts.insert(agent_id.to_owned(), ctx.clone());
        ctx
    }

    /// The policy's verdict for one request.
    pub fn decide(&self, req: &Request) -> Verdict {
        let ctx = self.context(&req.who.agent_id);
        decide(&self.policy, &ctx, req)
    }

    /// Writes OpenClaw `allow-always` entries for every gated segment of `verdict` that has a
    /// resolved executable, atomically in the store. Returns how many entries were added.
    pub async fn persist_allow_always(
        &self,
        req: &Request,
        verdict: &Verdict,
    ) -> Result<usize, OracleError> {
        let cwd = match &req.action {
            crate::policy::request::Action::Exec(e) => e
                .cwd
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            _ => String::new(),
        };
        let segs: Vec<(String, Vec<String>)> = verdict
            .segments
            .iter()
            .filter(|s| s.verdict == VerdictKind::Ask && s.category != Category::Unanalysable)
            .filter_map(|s| s.resolved_path.clone().map(|p| (p, s.argv.clone())))
            .collect();
        let agent = req.who.agent_id.clone();
        let store = self.store.clone();
        let added = tokio::task::spawn_blocking(move || {
            let mut added = 0;
            store.update(|doc| {
                let grants: Vec<Grant<'_>> = segs
                    .iter()
                    .map(|(p, argv)| Grant {
                        resolved_path: p,
                        argv,
                        cwd: &cwd,
                    })
                    .collect();
                added = append_allow_always(doc, &agent, &grants, super::engine::now_ms());
                Ok(added > 0)
            })?;
            Ok::<usize, OracleError>(added)
        })
        .await
        .map_err(|e| OracleError::Join(e.to_string()))??;
        self.reload();
        Ok(added)
    }

    /// Runs an approved `exec` under the sandbox profile the verdict names.
    pub async fn run(
        &self,
        verdict: &Verdict,
        er: &ExecRequest,
        budget: Duration,
    ) -> Result<ExecPayload, OracleError> {
        let name = verdict
            .profile
            .clone()
            .unwrap_or_else(|| "workspace-write".into());
        let spec = self
            .profiles
            .get(&name)
            .ok_or_else(|| OracleError::NoProfile(name.clone()))?;
        let cwd = er
            .cwd
            .as_ref()
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| self.policy.workspace().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("/"));
        let workspace = self
            .policy
            .workspace()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| cwd.clone());
        let profile = spec.resolve(&workspace)?;
        let outcome = sandbox::run(RunSpec {
            argv: er.command.clone(),
            cwd,
            env: er.env.clone().unwrap_or_default(),
            timeout: budget,
            output_cap: super::engine::OUTPUT_CAP,
            profile,
        })
        .await?;
        Ok(ExecPayload {
            exit_code: outcome.exit_code,
            timed_out: outcome.timed_out,
            success: outcome.success,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            error: outcome.error,
        })
    }
}
