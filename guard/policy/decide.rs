//! `decide()`: the pure function from a request to a verdict. Shell text is analysed into
//! segments, each segment classified by the command table and given the policy's status;
//! the strictest segment decides. Allowlist grants and OpenClaw's own `security`/`ask`
//! then adjust it, only ever toward stricter, except that an exact `allow-always` grant
//! may lift a gated segment whose category persists.

use super::allowlist::{AllowMatch, CompiledAllowlist, Target};
use super::env::{self, EnvName};
use super::facts::Facts;
use super::file::Policy;
use super::fs_memo;
use super::request::{Action, DecisionKind, ExecAction, Request, Source, Status};
use super::shell::{self, Analysis, Segment, ShellContext};
use super::table::{self, Classification, TableContext};
use super::verdict::{Category, Reason, SegmentVerdict, Verdict, VerdictKind};
use std::borrow::Cow;
use std::collections::BTreeSet;

mod env_values;
mod gates;
mod processes;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// OpenClaw's `security` (and `askFallback`) enum, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExecSecurity {
    Deny,
    Allowlist,
    Full,
}

impl ExecSecurity {
    /// OpenClaw's spelling; anything else is `None` (OpenClaw drops invalid values).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "deny" => Some(Self::Deny),
            "allowlist" => Some(Self::Allowlist),
            "full" => Some(Self::Full),
            _ => None,
        }
    }
}

/// OpenClaw's `ask` enum, least strict first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExecAsk {
    Off,
    OnMiss,
    Always,
}

impl ExecAsk {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Self::Off),
            "on-miss" => Some(Self::OnMiss),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

/// Everything `decide()` needs besides the policy and the request.
#[derive(Debug)]
pub struct DecideContext {
    /// The agent's home (`~`, `$HOME`).
    pub home: PathBuf,
    /// The agent's PATH, for resolving bare command names.
    pub path: String,
    /// Working directory when the request names none.
    pub cwd: PathBuf,
    /// Workspace when the policy names none (default: the request's cwd).
    pub workspace: Option<PathBuf>,
    /// OpenClaw's effective settings for this agent.
    pub security: ExecSecurity,
    pub ask: ExecAsk,
    pub ask_fallback: ExecSecurity,
    /// The agent's effective allowlist (`agents["*"]` then `agents.<id>`), compiled.
    pub allowlist: CompiledAllowlist,
    /// What the filesystem looks like (the host's, or a fake in tests).
    pub facts: Arc<dyn Facts>,
}

impl DecideContext {
    /// A context with no OpenClaw constraints (security `full`, ask `off`) and an empty
    /// allowlist: the guard's own policy alone decides, on `facts`.
    pub fn new(home: &Path, path: &str, cwd: &Path, facts: Arc<dyn Facts>) -> Self {
        DecideContext {
            home: home.to_path_buf(),
            path: path.to_string(),
            cwd: cwd.to_path_buf(),
            workspace: None,
            security: ExecSecurity::Full,
            ask: ExecAsk::Off,
            ask_fallback: ExecSecurity::Deny,
            allowlist: CompiledAllowlist::compile(&[], home),
            facts,
        }
    }
}

/// One segment's outcome before the request-level combination.
struct Scored {
    verdict: SegmentVerdict,
    status: Status,
    /// Categories of the segment's gated findings (allow-always needs all to persist).
    gated: Vec<Category>,
    inline_eval: bool,
    allowlisted: bool,
    /// An allow-always grant can cover it later: a plain segment (no redirection, nothing
    /// unread) with a static argv and a resolved program. Else a grant would be stored and
    /// never match, and the exact command would keep asking after "allow always".
    grantable: bool,
}

impl Scored {
    /// A request classified as one whole (no shell segment, no allowlist).
    fn whole(policy: &Policy, c: &Classification, text: String, argv: Vec<String>) -> Scored {
        let (status, category, reasons, gated) = score(policy, c);
        Scored {
            verdict: SegmentVerdict {
                text,
                argv,
                resolved_path: None,
                category,
                verdict: status.into(),
                reasons,
                cwds: None,
            },
            status,
            gated,
            inline_eval: c.inline_eval,
            allowlisted: false,
            grantable: false,
        }
    }
}

/// Decides one request: a pure function of the policy, the context (with its facts about
/// the filesystem) and the request.
pub fn decide(policy: &Policy, ctx: &DecideContext, req: &Request) -> Verdict {
    // One decision asks its facts each question once (see `fs_memo`).
    let _memo = fs_memo::Scope::enter(ctx.facts.clone());
    // The sensitive list is built for the policy's agent home; follow the context's.
    let policy: Cow<Policy> = if policy.agent_home() == Some(ctx.home.as_path()) {
        Cow::Borrowed(policy)
    } else {
        match policy.with_agent_home(&ctx.home) {
            Ok(p) => Cow::Owned(p),
            Err(e) => return error_verdict(&format!("policy for agent home: {e}")),
        }
    };
    let policy = policy.as_ref();
    match &req.action {
        Action::Exec(exec) => decide_exec(policy, ctx, req, exec),
        other => decide_action(policy, ctx, req, other),
    }
}

fn error_verdict(msg: &str) -> Verdict {
    Verdict {
        kind: VerdictKind::Deny,
        category: Category::Unanalysable,
        reasons: vec![Reason::new("policy-error", msg.to_string())],
        offered: Vec::new(),
        segments: Vec::new(),
        profile: None,
    }
}

/// The statuses of a classification's findings: (status, deciding category, its reasons,
/// gated categories).
fn score(policy: &Policy, c: &Classification) -> (Status, Category, Vec<Reason>, Vec<Category>) {
    let status = c
        .findings
        .iter()
        .map(|f| policy.status(f.category))
        .max()
        .unwrap_or(Status::Gated);
    // The findings at that status (iterated, not collected: this runs per segment).
    let deciding = || {
        c.findings
            .iter()
            .filter(move |f| policy.status(f.category) == status)
    };
    let category = deciding()
        .next()
        .map(|f| f.category)
        .unwrap_or(Category::Unanalysable);
    let mut reasons: Vec<Reason> = Vec::new();
    for f in deciding() {
        if !reasons.contains(&f.reason) {
            reasons.push(f.reason.clone());
        }
    }
    let gated = c
        .findings
        .iter()
        .filter(|f| policy.status(f.category) == Status::Gated)
        .map(|f| f.category)
        .collect();
    (status, category, reasons, gated)
}

/// An exec: the strictest segment decides, then OpenClaw's settings, the request's
/// environment and the policy's `ask_every_command` adjust it, only ever toward stricter.
fn decide_exec(policy: &Policy, ctx: &DecideContext, req: &Request, exec: &ExecAction) -> Verdict {
    let (security, ask) = openclaw_settings(ctx, req);
    // Whether every segment's allowlist status matters (else only gated ones, for grants).
    let need_all = security == ExecSecurity::Allowlist && ask == ExecAsk::Off;
    let scored = score_exec(policy, ctx, exec, need_all, set_at_start(ctx, req, exec));
    let all_allowlisted = scored.iter().all(|s| s.allowlisted);
    let mut verdict = combine(policy, scored);
    if security == ExecSecurity::Deny {
        deny(
            &mut verdict,
            "openclaw-security-deny",
            "OpenClaw's exec security is `deny`",
        );
    } else if need_all && !all_allowlisted {
        deny(
            &mut verdict,
            "allowlist-miss",
            "OpenClaw's allowlist does not cover every segment and it asks nobody (ask=off)",
        );
    }
    request_env(&mut verdict, &exec.env_keys);
    secret_in_tree(&mut verdict, req.who.source);
    env_values::judge(&mut verdict, req.who.source, exec.command.as_deref());
    processes::judge(&mut verdict, req.who.source);
    // OpenClaw's `ask` says when it consults the guard; the guard is that approver, so
    // `ask=always` does not make a person answer what the table runs by itself (DESIGN §2).
    // It only narrows what a person may answer: OpenClaw offers no allow-always then.
    if policy.ask_every_command() {
        ask_person(
            &mut verdict,
            "policy-ask-every-command",
            "the policy has a person answer every command (ask_every_command = true)",
        );
    }
    if ask == ExecAsk::Always && verdict.kind == VerdictKind::Ask {
        verdict.offered = vec![DecisionKind::AllowOnce, DecisionKind::Deny];
    }
    finish_offered(&mut verdict, req);
    verdict
}

/// OpenClaw's effective `security` and `ask`: the context's, made stricter (never looser)
/// by what the request asks for.
fn openclaw_settings(ctx: &DecideContext, req: &Request) -> (ExecSecurity, ExecAsk) {
    let requested_security = req
        .openclaw
        .security
        .as_deref()
        .and_then(ExecSecurity::parse);
    let security = requested_security.map_or(ctx.security, |s| s.min(ctx.security));
    let requested_ask = req.openclaw.ask.as_deref().and_then(ExecAsk::parse);
    let ask = requested_ask.map_or(ctx.ask, |a| a.max(ctx.ask));
    (security, ask)
}

/// Every segment of the command, scored; plus one for the constructs not known inert, or
/// one that says there is nothing to run.
fn score_exec(
    policy: &Policy,
    ctx: &DecideContext,
    exec: &ExecAction,
    need_all: bool,
    set_at_start: Option<Arc<BTreeSet<String>>>,
) -> Vec<Scored> {
    let cwd = exec.cwd.clone().unwrap_or_else(|| ctx.cwd.clone());
    // The deployment's workspace (the context's) wins over the policy file's.
    let workspace = ctx
        .workspace
        .clone()
        .or_else(|| policy.workspace().map(Path::to_path_buf))
        .unwrap_or_else(|| cwd.clone());
    let sctx = ShellContext {
        home: ctx.home.clone(),
        path: ctx.path.clone(),
        cwd: cwd.clone(),
        set_at_start,
    };
    let analysis: Analysis = match (&exec.command, exec.argv.is_empty()) {
        (Some(text), _) => shell::analyse(text, &sctx),
        (None, false) => shell::analyse_argv(&exec.argv, &sctx),
        (None, true) => Analysis::default(),
    };
    let t = TableContext {
        policy,
        home: &ctx.home,
        workspace: &workspace,
        cwd: &cwd,
    };
    let cwd_str = cwd.to_string_lossy();
    let gates = gates::not_inert(&analysis);
    // Each segment's text and path move into its verdict.
    let mut scored: Vec<Scored> = analysis
        .segments
        .into_iter()
        .map(|seg| score_segment(policy, ctx, &t, seg, &cwd_str, need_all))
        .collect();
    let whole = |c: &Classification| {
        let text = exec.command.clone().unwrap_or_default();
        Scored::whole(policy, c, text, exec.argv.clone())
    };
    if !gates.findings.is_empty() {
        scored.push(whole(&gates));
    }
    if scored.is_empty() {
        let mut c = Classification::default();
        c.add(Category::Unanalysable, "unanalysable", "no command to run");
        scored.push(whole(&c));
    }
    scored
}

/// The names that may be set when the text starts, where the guard runs it (node host,
/// socket `exec`: the run's environment is the request's names and the deployment's
/// upper-case ones, after the login start-up files); `None` where OpenClaw runs it with an
/// environment the guard does not see, or the start-up files are not understood.
fn set_at_start(
    ctx: &DecideContext,
    req: &Request,
    exec: &ExecAction,
) -> Option<Arc<BTreeSet<String>>> {
    if !matches!(req.who.source, Source::SocketExec | Source::Node) {
        return None;
    }
    let login = ctx.facts.login_names(&ctx.home)?;
    if exec.env_keys.is_empty() {
        return Some(login);
    }
    let mut names = (*login).clone();
    names.extend(exec.env_keys.iter().cloned());
    Some(Arc::new(names))
}

/// A read that walks past a secret (`secret-in-tree`) asks a person only where the guard
/// itself runs the command (node host, socket `exec`) under a profile that keeps the
/// workspace's secrets unreadable (the autonomous ones: siblings granted, secrets not).
/// Where OpenClaw runs it (the socket's `request` frame, the gateway), or where the run
/// would get another profile (the verdict is decided by a write in the same text), the
/// secret would be read: denied, as the sensitive read it then is.
fn secret_in_tree(verdict: &mut Verdict, source: Source) {
    use super::profile::{AUTONOMOUS_HTTP_PROFILE, AUTONOMOUS_PROFILE};
    let walks = verdict
        .segments
        .iter()
        .any(|s| s.reasons.iter().any(|r| r.code == "secret-in-tree"));
    if !walks || verdict.kind != VerdictKind::Ask {
        return;
    }
    let contained = matches!(source, Source::SocketExec | Source::Node);
    let profile = verdict.profile.as_deref();
    let keeps_secrets = matches!(profile, Some(AUTONOMOUS_PROFILE | AUTONOMOUS_HTTP_PROFILE));
    if contained && keeps_secrets {
        return;
    }
    verdict.category = Category::SensitivePath;
    verdict.offered.clear();
    deny(
        verdict,
        "secret-in-tree-uncontained",
        if contained {
            "it reads a tree that holds a secret, and the run's sandbox profile would not keep \
             that file unreadable"
        } else {
            "it reads a tree that holds a secret, and the guard does not run this command \
             itself, so nothing would keep that file unreadable"
        },
    );
}

/// Environment the request sets is data to judge: only inert names run by themselves.
fn request_env(verdict: &mut Verdict, env_keys: &[String]) {
    let gating: Vec<&str> = env_keys
        .iter()
        .filter(|k| matches!(env::classify(k), EnvName::Loads | EnvName::Other))
        .map(String::as_str)
        .collect();
    // A grant covers argv and cwd, never the environment: with these names set the granted
    // command would ask again, so "allow always" would promise what it cannot keep.
    if !gating.is_empty() && verdict.kind == VerdictKind::Ask {
        verdict.offered.retain(|d| *d != DecisionKind::AllowAlways);
    }
    if !gating.is_empty() && verdict.kind == VerdictKind::Allow {
        ask_person(
            verdict,
            "request-env",
            format!(
                "the request sets environment variables a person must see: {} \
                 (names that load code are dropped from the run)",
                gating.join(", ")
            ),
        );
    }
}

/// Makes the verdict a deny, this reason first.
fn deny(verdict: &mut Verdict, code: &'static str, why: impl Into<Cow<'static, str>>) {
    verdict.kind = VerdictKind::Deny;
    verdict.reasons.insert(0, Reason::new(code, why));
}

/// Makes an allow a question for a person (allow once or deny), this reason first.
fn ask_person(verdict: &mut Verdict, code: &'static str, why: impl Into<Cow<'static, str>>) {
    if verdict.kind == VerdictKind::Allow {
        verdict.reasons.insert(0, Reason::new(code, why));
        verdict.kind = VerdictKind::Ask;
        verdict.offered = vec![DecisionKind::AllowOnce, DecisionKind::Deny];
    }
}

fn score_segment(
    policy: &Policy,
    ctx: &DecideContext,
    t: &TableContext,
    seg: Segment,
    cwd: &str,
    need_all: bool,
) -> Scored {
    let mut c = table::classify_segment(&seg, t);
    gates::variable_secrets(policy, ctx, &seg, &mut c);
    gates::named_secrets_not_understood(policy, ctx, &seg, &mut c);
    let (mut status, category, mut reasons, gated) = score(policy, &c);
    let mut allowlisted = false;
    // OpenClaw fails the analysis of a segment with a redirection or a substitution.
    let plain = seg.redirects.is_empty() && seg.problem.is_none();
    let wanted = need_all || status == Status::Gated;
    // The argv as the allowlist sees it, only when the allowlist is asked.
    let static_argv =
        || -> Option<Vec<String>> { seg.argv.iter().map(|w| w.value.clone()).collect() };
    let grantable = plain
        && seg.resolved.is_some()
        && !seg.argv.is_empty()
        && seg.argv.iter().all(|w| w.value.is_some());
    if let Some(argv) = (plain && wanted).then(static_argv).flatten() {
        if let Some(first) = argv.first() {
            let real = seg.real_path();
            let target = Target {
                raw_executable: first,
                resolved_path: seg.resolved.as_deref(),
                resolved_real_path: real.as_deref(),
                argv: &argv,
                cwd,
            };
            let hit = ctx.allowlist.matches(&target);
            allowlisted = hit.is_some();
            if let Some(AllowMatch::AllowAlways { rule }) = hit {
                if status == Status::Gated
                    && !c.inline_eval
                    && gated.iter().all(|cat| policy.persist(*cat))
                {
                    status = Status::Autonomous;
                    reasons.push(Reason::new(
                        "allow-always",
                        format!("an allow-always grant (allowlist entry {rule}) covers this exact argv and cwd"),
                    ));
                }
            }
        }
    }
    let is_git = seg.program.as_deref() == Some("git")
        || seg
            .resolved
            .as_deref()
            .is_some_and(|p| p.file_name().is_some_and(|n| n == "git"));
    Scored {
        verdict: SegmentVerdict {
            argv: seg.argv.iter().map(|w| w.display().to_string()).collect(),
            text: seg.text,
            resolved_path: seg.resolved.map(|p| {
                p.into_os_string()
                    .into_string()
                    .unwrap_or_else(|p| p.to_string_lossy().into_owned())
            }),
            category,
            verdict: status.into(),
            reasons,
            // Only git's are read (the engine checks the repository of each); others would
            // cost an allocation per segment on the hot path for nothing.
            cwds: is_git.then(|| {
                seg.cwds
                    .iter()
                    .map(|d| d.to_string_lossy().into_owned())
                    .collect()
            }),
        },
        status,
        gated,
        inline_eval: c.inline_eval,
        allowlisted,
        grantable,
    }
}

/// Strictest segment decides; reasons from every non-autonomous segment.
fn combine(policy: &Policy, scored: Vec<Scored>) -> Verdict {
    let status = scored
        .iter()
        .map(|s| s.status)
        .max()
        .unwrap_or(Status::Gated);
    let deciding = scored.iter().find(|s| s.status == status);
    let category = deciding
        .map(|s| s.verdict.category)
        .unwrap_or(Category::Unanalysable);
    let mut reasons: Vec<Reason> = Vec::new();
    for s in scored.iter().filter(|s| s.status != Status::Autonomous) {
        for r in &s.verdict.reasons {
            if !reasons.contains(r) {
                reasons.push(r.clone());
            }
        }
    }
    if reasons.is_empty() {
        if let Some(d) = deciding {
            reasons = d.verdict.reasons.clone();
        }
    }
    let kind: VerdictKind = status.into();
    let offered = if kind == VerdictKind::Ask {
        let persists = scored
            .iter()
            .filter(|s| s.status == Status::Gated)
            .all(|s| s.grantable && !s.inline_eval && s.gated.iter().all(|c| policy.persist(*c)));
        if persists {
            vec![
                DecisionKind::AllowOnce,
                DecisionKind::AllowAlways,
                DecisionKind::Deny,
            ]
        } else {
            vec![DecisionKind::AllowOnce, DecisionKind::Deny]
        }
    } else {
        Vec::new()
    };
    Verdict {
        kind,
        category,
        reasons,
        offered,
        profile: policy.profile(category).map(str::to_string),
        segments: scored.into_iter().map(|s| s.verdict).collect(),
    }
}

/// Applies the request's `allowedDecisions`; an ask left with no way to allow is a deny.
fn finish_offered(verdict: &mut Verdict, req: &Request) {
    if verdict.kind != VerdictKind::Ask {
        verdict.offered.clear();
        return;
    }
    if let Some(allowed) = &req.openclaw.allowed_decisions {
        verdict.offered.retain(|d| allowed.contains(d));
    }
    if !verdict
        .offered
        .iter()
        .any(|d| matches!(d, DecisionKind::AllowOnce | DecisionKind::AllowAlways))
    {
        verdict.kind = VerdictKind::Deny;
        verdict.offered.clear();
        verdict.reasons.insert(
            0,
            Reason::new(
                "no-allow-decision",
                "the request offers no decision that allows it",
            ),
        );
    }
}

fn decide_action(policy: &Policy, ctx: &DecideContext, req: &Request, action: &Action) -> Verdict {
    let workspace = policy
        .workspace()
        .map(Path::to_path_buf)
        .or_else(|| ctx.workspace.clone())
        .unwrap_or_else(|| ctx.cwd.clone());
    // A tool's relative paths are the agent's workspace's (OpenClaw resolves them there).
    let cwd = match action {
        Action::Tool(_) => &workspace,
        _ => &ctx.cwd,
    };
    let t = TableContext {
        policy,
        home: &ctx.home,
        workspace: &workspace,
        cwd,
    };
    let c = table::classify_action(action, &t);
    let text = serde_json::to_string(action).unwrap_or_default();
    let scored = vec![Scored::whole(policy, &c, text, Vec::new())];
    let mut verdict = combine(policy, scored);
    // A grant persists as an exec allowlist entry: a tool call has none to write.
    if matches!(action, Action::Tool(_)) {
        verdict.offered.retain(|d| *d != DecisionKind::AllowAlways);
    }
    finish_offered(&mut verdict, req);
    verdict
}
