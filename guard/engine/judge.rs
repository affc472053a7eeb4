//! The judge: the policy (verdicts) over OpenClaw's approvals document (effective
//! security/ask/allowlist per agent, cached and reloaded when OpenClaw changes it;
//! `allow-always` entries written back), and the sandbox runner for approved execs.

mod fair;
mod run;
pub use run::RunFor;

use super::git;
use super::plan::{Deployment, ExecPlan, PlanError, PlanInput};
use crate::openclaw::allow_always::{append_allow_always, Grant};
use crate::openclaw::document::{ApprovalsDocument, DocumentError};
use crate::openclaw::resolve;
use crate::openclaw::store::{Era, Store, StoreError};
use crate::policy::allowlist::{CompiledAllowlist, Rule};
use crate::policy::decide::{decide, DecideContext, ExecAsk, ExecSecurity};
use crate::policy::facts::Facts;
use crate::policy::file::{Policy, PolicyError};
use crate::policy::request::DecisionKind;
use crate::policy::request::Request;
use crate::policy::verdict::Reason;
use crate::policy::verdict::{Category, Verdict, VerdictKind};
use crate::sandbox::{self, DenyList, ProfileSpec, RunOutcome, RunSpec, SandboxError};
use run::Slots;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Errors of the judge's I/O (policy file, OpenClaw store, sandbox).
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error("{0}")]
    Policy(#[from] PolicyError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Sandbox(#[from] SandboxError),
    #[error("no sandbox profile named {0:?}")]
    NoProfile(String),
    #[error(
        "the profile {0:?} reaches the network through the guard's read proxy, and none runs here"
    )]
    NoReadProxy(String),
    #[error("{0}")]
    ReadProxy(#[from] crate::readproxy::ReadProxyError),
    #[error("background task: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error(
        "workspace {workspace} is inside the sensitive path {secret}; choose another workspace"
    )]
    WorkspaceInSecret { workspace: PathBuf, secret: PathBuf },
    /// The run's whole time went by waiting for a slot: nothing ran.
    #[error("waited {waited:?} for a free slot of profile {profile} (limits.concurrent): not run")]
    QueueTimeout { profile: String, waited: Duration },
}

/// Why OpenClaw's approvals document is not in hand (the judge then fails closed).
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error("not read yet")]
    NotReadYet,
    #[error("{0}")]
    Parse(#[from] DocumentError),
    #[error("{0}")]
    Store(#[from] StoreError),
}

struct Cached {
    raw: Option<String>,
    doc: Result<ApprovalsDocument, Unreadable>,
    contexts: HashMap<String, Arc<DecideContext>>,
}

/// The decide context of one agent: the deployment's home, PATH and workspace, OpenClaw's
/// effective security/ask/askFallback and its compiled allowlist. Unknown enum spellings fail
/// closed.
fn context_for(
    dep: &Deployment,
    facts: &Arc<dyn Facts>,
    eff: &resolve::EffectivePolicy,
) -> DecideContext {
    let home = dep.agent_home.clone();
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
        cwd: dep.workspace.clone(),
        path: dep.agent_path.clone(),
        workspace: Some(dep.workspace.clone()),
        security: ExecSecurity::parse(v.security.as_str()).unwrap_or(ExecSecurity::Deny),
        ask: ExecAsk::parse(v.ask.as_str()).unwrap_or(ExecAsk::Always),
        ask_fallback: ExecSecurity::parse(v.ask_fallback.as_str()).unwrap_or(ExecSecurity::Deny),
        allowlist: CompiledAllowlist::compile(&rules, &home),
        home,
        facts: facts.clone(),
    }
}

/// What the deployment tells the judge; the app wiring builds it from its configuration
/// (the engine reads no configuration file and no environment).
#[derive(Debug, Clone)]
pub struct JudgeConfig {
    /// The policy, completed for this host (agent home and PATH filled in).
    pub policy: Policy,
    /// The guard's own state (unreadable to every run).
    pub state_dir: PathBuf,
    /// Every file this process was given or keeps (state dir, config, policy, TLS key,
    /// token files): denied to every run.
    pub own_files: Vec<PathBuf>,
    /// OpenClaw's state dir (its approvals document and state are unreadable to every run).
    pub openclaw_state_dir: PathBuf,
    /// The deployment's writable workspace (never chosen by a request).
    pub workspace: PathBuf,
    /// The agent's home and PATH as the policy's host completion left them.
    pub agent_home: PathBuf,
    pub agent_path: String,
    /// The filesystem the judged commands run on when it is not this host's (the agent's
    /// container: `agent_filesystem`); such a judge resolves no plan to run itself.
    pub elsewhere: Option<Arc<dyn Facts>>,
    /// The identity every run takes (`run_as`); None: the guard's own uid.
    pub run_as: Option<sandbox::RunAs>,
}

/// Policy + OpenClaw document + sandbox, as the engine calls them.
pub struct Judge {
    policy: Policy,
    policy_origin: String,
    store: Store,
    cache: RwLock<Cached>,
    profiles: BTreeMap<String, ProfileSpec>,
    deployment: Deployment,
    /// The deployment's own secrets, unreadable in every profile.
    deny: DenyList,
    /// What every decision asks about the filesystem.
    facts: Arc<dyn Facts>,
    /// Judged commands run on another host's filesystem (see [`JudgeConfig::elsewhere`]).
    elsewhere: bool,
    run_as: Option<sandbox::RunAs>,
    /// Slots of each profile with `limits.concurrent`: runs beyond it wait here.
    slots: Slots,
    /// The proxy a `network = "read-proxy"` run reaches (`serve` and `node` attach it).
    read_proxy: std::sync::OnceLock<crate::readproxy::ReadProxy>,
}

impl Judge {
    /// Takes the deployment's policy and places and reads the approvals document once.
    pub fn load(cfg: JudgeConfig, store: Store) -> Result<Judge, JudgeError> {
        // The deployment's own secrets (their places are configuration, not policy):
        // OpenClaw's approvals document and SQLite state, the guard's state dir.
        let oc = &cfg.openclaw_state_dir;
        let policy = cfg.policy.with_sensitive_extra(&[
            oc.join(crate::openclaw::store::JSON_FILE)
                .to_string_lossy()
                .into_owned(),
            format!("{}/", oc.join("state").to_string_lossy()),
            format!("{}/", cfg.state_dir.to_string_lossy()),
        ])?;
        let policy_origin = policy.origin().to_owned();
        let profiles = policy.profiles().clone();
        let deployment = Deployment {
            workspace: cfg.workspace,
            agent_home: cfg.agent_home,
            agent_path: cfg.agent_path,
        };
        // Every file this process was given or keeps, from its own configuration, and all
        // of OpenClaw's state outside the workspace.
        let mut deny = DenyList::default();
        for p in cfg.own_files {
            // Inside the workspace a deny would cap the workspace root for approved runs
            // (Landlock rights cover subtrees); such a file is the agent's to write anyway.
            if p.starts_with(&deployment.workspace) {
                tracing::warn!(file = %p.display(), "a file of the guard lies inside the workspace: runs can read it");
                continue;
            }
            deny.push(p)?;
        }
        deny.push_openclaw_state_dir(&cfg.openclaw_state_dir, &deployment.workspace)?;
        // One list: everything the policy treats as a secret is unreadable in every run too
        // (globs like /proc/*/environ are the kernel's ptrace rule's, not Landlock's).
        let sensitive =
            crate::policy::paths::sensitive_paths(&deployment.agent_home, policy.sensitive_extra());
        for e in sensitive {
            let p = PathBuf::from(&e.path);
            if e.path.contains(['*', '?', '[']) {
                continue;
            }
            // A workspace inside a secret would make the secret writable: refuse to start
            // rather than drop the secret from the list.
            if deployment.workspace.starts_with(&p) {
                return Err(JudgeError::WorkspaceInSecret {
                    workspace: deployment.workspace.clone(),
                    secret: p,
                });
            }
            deny.push(p)?;
        }
        // A run identity the guard cannot take stops the start, rather than running as itself.
        if let Some(r) = &cfg.run_as {
            r.check_switchable()?;
        }
        let o = Judge {
            policy,
            policy_origin,
            store,
            cache: RwLock::new(Cached {
                raw: None,
                doc: Err(Unreadable::NotReadYet),
                contexts: HashMap::new(),
            }),
            profiles,
            deployment,
            deny,
            elsewhere: cfg.elsewhere.is_some(),
            run_as: cfg.run_as,
            slots: Slots::default(),
            read_proxy: std::sync::OnceLock::new(),
            facts: cfg
                .elsewhere
                .unwrap_or_else(crate::host_facts::HostFacts::shared),
        };
        o.reload();
        Ok(o)
    }

    /// Gives `network = "read-proxy"` runs their proxy (once; a second call is ignored).
    pub fn attach_read_proxy(&self, proxy: crate::readproxy::ReadProxy) {
        let _ = self.read_proxy.set(proxy);
    }

    /// Whether the judged commands run in another container (the judge runs none).
    pub fn runs_elsewhere(&self) -> bool {
        self.elsewhere
    }

    /// The identity runs take (`run_as`), when not the guard's own.
    pub fn run_as(&self) -> Option<sandbox::RunAs> {
        self.run_as
    }

    /// What no run may read: the deployment's secrets and the policy's sensitive list.
    pub fn deny_list(&self) -> &DenyList {
        &self.deny
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

    /// The front door's method filter tables (the policy's `[gateway]`).
    pub fn gateway_tables(&self) -> &crate::policy::gateway_filter::GatewayTables {
        self.policy.gateway()
    }

    /// Whether the policy wants an allow in `category` signed with a passkey.
    pub fn needs_passkey(&self, category: Category) -> bool {
        self.policy.needs_passkey(category)
    }

    /// How many different reviewers must approve a request of `category`.
    pub fn approvals_required(&self, category: Category) -> u8 {
        self.policy.approvals_required(category)
    }

    /// The categories that need more than one approver, by name.
    pub fn approvals_rules(&self) -> std::collections::BTreeMap<String, u8> {
        self.policy
            .approvals_required_map()
            .iter()
            .map(|(c, n)| (crate::policy::file::category_name(*c), *n))
            .collect()
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
                    Some(text) => ApprovalsDocument::parse_lenient(text).map_err(Unreadable::from),
                    None => Ok(ApprovalsDocument::default()),
                };
                c.raw = raw;
                c.contexts.clear();
            }
            Err(e) => {
                c.doc = Err(Unreadable::from(e));
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
        let ctx = Arc::new(context_for(&self.deployment, &self.facts, &effective));
        c.contexts.insert(agent_id.to_owned(), ctx.clone());
        ctx
    }

    /// The policy's verdict for one request.
    pub fn decide(&self, req: &Request) -> Verdict {
        let ctx = self.context(&req.who.agent_id);
        decide(&self.policy, &ctx, req)
    }

    /// Writes OpenClaw `allow-always` entries for every gated segment of `verdict` that has a
    /// resolved executable ([`super::grants::planned`], the list the card shows), atomically
    /// in the store. Returns how many entries were added.
    pub async fn persist_allow_always(
        &self,
        req: &Request,
        verdict: &Verdict,
    ) -> Result<usize, JudgeError> {
        let planned = super::grants::planned(req, verdict);
        let agent = req.who.agent_id.clone();
        let store = self.store.clone();
        let added = tokio::task::spawn_blocking(move || {
            let mut added = 0;
            store.update(|doc| {
                let grants: Vec<Grant<'_>> = planned
                    .iter()
                    .map(|g| Grant {
                        resolved_path: &g.pattern,
                        argv: &g.argv,
                        cwd: &g.cwd,
                    })
                    .collect();
                added = append_allow_always(doc, &agent, &grants, super::decision::now_ms());
                Ok(added > 0)
            })?;
            Ok::<usize, JudgeError>(added)
        })
        .await
        .map_err(JudgeError::from)??;
        self.reload();
        Ok(added)
    }

    /// The sandbox profile named `name`, as the policy defines it (what the card's run
    /// line describes).
    pub fn profile_spec(&self, name: &str) -> Option<&ProfileSpec> {
        self.profiles.get(name)
    }

    /// The deployment facts every plan is resolved against.
    pub fn deployment(&self) -> &Deployment {
        &self.deployment
    }

    /// Resolves one run (see [`ExecPlan`]).
    pub fn plan(&self, input: &PlanInput) -> Result<ExecPlan, PlanError> {
        if self.elsewhere {
            return Err(PlanError::RunsElsewhere);
        }
        ExecPlan::resolve(input, &self.deployment)
    }

    /// The verdict for an exec whose plan is resolved: the policy's, then what only the
    /// plan knows. A program the agent could have put where it is, or a git repository
    /// whose config can run programs, is never autonomous.
    pub fn decide_plan(&self, req: &Request, plan: &ExecPlan) -> Verdict {
        let mut v = self.decide(req);
        if v.kind != VerdictKind::Allow {
            return v;
        }
        let why = if !plan.program_trusted {
            Some(Reason::new(
                "program-untrusted-location",
                format!(
                    "{} is where the agent could have put it (workspace, home, a temp dir, or a \
                     directory not owned by root)",
                    plan.program.display()
                ),
            ))
        } else {
            git_segments(&v)
                .find_map(|(argv, cwds)| git_reason(argv, cwds, plan))
                .map(|m| Reason::new("git-config", m))
        };
        if let Some(r) = why {
            v.reasons.insert(0, r);
            v.kind = VerdictKind::Ask;
            v.offered = vec![DecisionKind::AllowOnce, DecisionKind::Deny];
        }
        v
    }
}

/// The argv of every segment of the verdict that runs git, and the directories it may run in.
fn git_segments(v: &Verdict) -> impl Iterator<Item = (&[String], Option<&[String]>)> {
    v.segments.iter().filter_map(|s| {
        let by_path = s
            .resolved_path
            .as_deref()
            .is_some_and(|p| p.rsplit('/').next() == Some("git"));
        let by_name = s
            .argv
            .first()
            .is_some_and(|a| a.rsplit('/').next() == Some("git"));
        (by_path || by_name).then_some((s.argv.as_slice(), s.cwds.as_deref()))
    })
}

/// Why the git command line `argv` of `plan`, run in one of `cwds` (`None`: the plan's cwd;
/// `cd sub && git diff` runs in `sub`), may run a program of a repository's choosing or
/// read outside the workspace: every repository it reads (`-C`, `--git-dir`, `--work-tree`,
/// `GIT_DIR`, a bare repository, one found above the directory) must be inside the
/// workspace, with inert config.
fn git_reason(argv: &[String], cwds: Option<&[String]>, plan: &ExecPlan) -> Option<String> {
    // The analysis's directories already follow `-C`; the plan's cwd does not.
    let (dirs, find): (Vec<std::path::PathBuf>, fn(_, _, _) -> _) = match cwds {
        None => (vec![plan.cwd.clone()], git::places),
        Some([]) => return Some("git runs in a directory that is not known".into()),
        Some(c) => (
            c.iter().map(std::path::PathBuf::from).collect(),
            git::places_in,
        ),
    };
    dirs.iter().find_map(|cwd| {
        let places = match find(argv, cwd, &plan.env) {
            Ok(p) => p,
            Err(why) => return Some(why),
        };
        places.iter().find_map(|place| {
            match git::repository_outside(place, &plan.workspace) {
                Ok(Some(g)) => {
                    return Some(format!(
                        "the repository {} is outside the workspace",
                        g.display()
                    ))
                }
                Ok(None) => {}
                Err(e) => return Some(format!("the repository cannot be found: {e}")),
            }
            match git::config_not_plain(place) {
                Ok(None) => None,
                Ok(Some(key)) => Some(format!(
                    "the repository's config sets {key}, which this guard does not know to be \
                     inert"
                )),
                Err(e) => Some(format!("the repository's config cannot be read: {e}")),
            }
        })
    })
}
