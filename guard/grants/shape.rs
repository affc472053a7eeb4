//! What a bounded grant is and what it covers, as pure functions over the request and the
//! verdict the policy gave it: the same segments the exec plan and the card use, so a grant
//! can only lift what a person saw, and only on the segments it names.

use crate::policy::request::{Action, DecisionKind, Request};
use crate::policy::verdict::{Category, SegmentVerdict, Verdict, VerdictKind};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path};

/// How far a grant reaches beyond the request it was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// The same command in the same cwd, for the rest of the agent's session.
    Session,
    /// The same command in the same cwd, until a time.
    Minutes,
    /// The same command in the same cwd, a number of times.
    Uses,
    /// The program and its leading subcommand words with any further arguments, in any
    /// directory inside the workspace.
    Prefix,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Minutes => "minutes",
            Scope::Uses => "uses",
            Scope::Prefix => "prefix",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "session" => Some(Scope::Session),
            "minutes" => Some(Scope::Minutes),
            "uses" => Some(Scope::Uses),
            "prefix" => Some(Scope::Prefix),
            _ => None,
        }
    }
}

/// The largest N a card may ask for: a grant stays bounded.
pub const MAX_MINUTES: u32 = 24 * 60;
pub const MAX_USES: u32 = 1000;
/// Subcommand words a prefix keeps after the program (`pnpm run build *`).
const PREFIX_WORDS: usize = 2;

/// One command shape a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// The executable as the analysis resolved it: `./pnpm` is another program.
    pub program: String,
    /// argv[0] as typed (for showing the pattern only; the program path is what binds).
    pub name: String,
    /// argv[1..]: all of it (exact), or the leading words (prefix).
    pub words: Vec<String>,
    /// Further arguments after `words` are covered.
    pub prefix: bool,
    /// The category the person approved: `pnpm test > f` is a write, not this.
    pub category: Category,
}

impl Shape {
    /// The pattern as the card and the Grants page show it: `pnpm test *`.
    pub fn pattern(&self) -> String {
        let mut s = std::iter::once(self.name.as_str())
            .chain(self.words.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        if self.prefix {
            s.push_str(" *");
        }
        s
    }
}

/// What a grant binds, besides its shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantSpec {
    pub scope: Scope,
    pub agent_id: String,
    /// Session scope: the session key the request carried.
    pub session_key: Option<String>,
    pub expires_ms: Option<u64>,
    pub uses: Option<u32>,
    /// Exact scopes: the cwd the command ran in ("" when the request named none).
    pub cwd: Option<String>,
    /// Prefix scope: the workspace every cwd must be inside.
    pub workspace: Option<String>,
    /// Environment overrides the request carried (name, value digest or "" when unknown):
    /// `FOO=1 pnpm test` is another command.
    pub env: Vec<(String, String)>,
    pub shapes: Vec<Shape>,
    /// The sandbox profile an approved run of the verdict got: a grant never runs another.
    pub profile: Option<String>,
    /// The verdict's category when it was made (shown; each shape binds its own).
    pub category: Category,
}

/// Why no grant of the asked scope can be made for a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    #[error("only a command the policy lets a person grant (allow-always offered) can be granted")]
    NotGrantable,
    #[error("the request carries no session key")]
    NoSession,
    #[error("a grant needs {0} between 1 and {1}")]
    OutOfRange(&'static str, u32),
    #[error("no subcommand word to bound a prefix: it would cover every use of the program")]
    NoPrefix,
    #[error("the program {0} is where the agent could change it")]
    UntrustedProgram(String),
    #[error("the command does not run inside the workspace")]
    OutsideWorkspace,
}

/// What a person asks for on the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    pub scope: Scope,
    /// Minutes (scope `minutes`) or uses (scope `uses`).
    pub n: Option<u32>,
}

/// The exec action of `req`, if it is one.
fn exec(req: &Request) -> Option<&crate::policy::request::ExecAction> {
    match &req.action {
        Action::Exec(e) => Some(e),
        _ => None,
    }
}

/// The gate every grant passes, made or used: an exec the policy gated and would let an
/// `allow-always` persist (no blocked, unanalysable, inline-code or secret segment), with
/// every gated segment's program resolved.
fn grantable(req: &Request, v: &Verdict) -> bool {
    exec(req).is_some()
        && v.kind == VerdictKind::Ask
        && !v.segments.iter().any(moves_cwd)
        && v.offered.contains(&DecisionKind::AllowAlways)
        && v.segments.iter().all(|s| match s.verdict {
            VerdictKind::Allow => true,
            VerdictKind::Deny => false,
            VerdictKind::Ask => {
                s.category != Category::Unanalysable
                    && s.resolved_path.as_deref().is_some_and(|p| !p.is_empty())
                    && !s.argv.is_empty()
            }
        })
}

/// Text the shell would still expand (a variable, a substitution): the argv the analysis
/// shows is not all that runs, so it is never covered.
fn expands(w: &str) -> bool {
    w.contains(['$', '`']) || w.contains("<(") || w.contains(">(")
}

/// A segment that moves the shell to another directory: the later segments' cwd is then
/// not the request's, so nothing of it is covered.
fn moves_cwd(s: &SegmentVerdict) -> bool {
    s.argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .is_some_and(|a| matches!(a, "cd" | "pushd" | "popd" | "chdir"))
}

/// A subcommand word a prefix may keep: a plain name, not an option, path or assignment.
fn plain_word(w: &str) -> bool {
    !w.is_empty()
        && !w.starts_with('-')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '@'))
        && w != "."
        && w != ".."
}

/// The leading plain words of `args` (at most [`PREFIX_WORDS`]).
fn prefix_words(args: &[String]) -> Vec<String> {
    args.iter()
        .take(PREFIX_WORDS)
        .take_while(|w| plain_word(w))
        .cloned()
        .collect()
}

/// The gated segments of `v` as shapes of `scope`.
fn shapes(v: &Verdict, prefix: bool) -> Result<Vec<Shape>, ProposeError> {
    let mut out: Vec<Shape> = Vec::new();
    for s in v.segments.iter().filter(|s| s.verdict == VerdictKind::Ask) {
        let program = s.resolved_path.clone().unwrap_or_default();
        let args = s.argv.get(1..).unwrap_or_default();
        if args.iter().any(|w| expands(w)) || expands(&s.text) {
            return Err(ProposeError::NotGrantable);
        }
        let words = if prefix {
            let w = prefix_words(args);
            if w.is_empty() {
                return Err(ProposeError::NoPrefix);
            }
            w
        } else {
            args.to_vec()
        };
        let shape = Shape {
            program,
            name: s.argv.first().cloned().unwrap_or_default(),
            words,
            prefix,
            category: s.category,
        };
        if !out.contains(&shape) {
            out.push(shape);
        }
    }
    Ok(out)
}

/// `p` lies inside `root` by its components, with no `..` to climb out.
fn inside(p: &str, root: &str) -> bool {
    let p = Path::new(p);
    p.is_absolute()
        && !p.components().any(|c| matches!(c, Component::ParentDir))
        && p.starts_with(root)
}

/// The request's environment overrides as a grant binds them, sorted.
fn env_of(req: &Request) -> Vec<(String, String)> {
    let Some(e) = exec(req) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = if e.env.is_empty() {
        e.env_keys
            .iter()
            .map(|k| (k.clone(), String::new()))
            .collect()
    } else {
        e.env
            .iter()
            .map(|v| (v.name.clone(), v.sha256.clone()))
            .collect()
    };
    out.sort();
    out.dedup();
    out
}

fn cwd_of(req: &Request) -> String {
    exec(req)
        .and_then(|e| e.cwd.as_ref())
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// The grant `ask` makes of `req` (which the policy answered `v`), at `now_ms`, for a
/// deployment whose workspace is `workspace`. `trusted` says whether a program lies where
/// the agent cannot change it: a grant on a workspace script would follow its edits.
pub fn propose(
    req: &Request,
    v: &Verdict,
    ask: Ask,
    workspace: &str,
    now_ms: u64,
    trusted: impl Fn(&str) -> bool,
) -> Result<GrantSpec, ProposeError> {
    if !grantable(req, v) {
        return Err(ProposeError::NotGrantable);
    }
    let shapes = shapes(v, ask.scope == Scope::Prefix)?;
    if let Some(s) = shapes.iter().find(|s| !trusted(&s.program)) {
        return Err(ProposeError::UntrustedProgram(s.program.clone()));
    }
    let n = |what: &'static str, max: u32| match ask.n {
        Some(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ProposeError::OutOfRange(what, max)),
    };
    let cwd = cwd_of(req);
    let mut spec = GrantSpec {
        scope: ask.scope,
        agent_id: req.who.agent_id.clone(),
        session_key: None,
        expires_ms: None,
        uses: None,
        cwd: Some(cwd.clone()),
        workspace: None,
        env: env_of(req),
        shapes,
        profile: v.profile.clone(),
        category: v.category,
    };
    match ask.scope {
        Scope::Session => {
            spec.session_key = Some(
                req.who
                    .session_key
                    .clone()
                    .filter(|k| !k.is_empty())
                    .ok_or(ProposeError::NoSession)?,
            );
        }
        Scope::Minutes => {
            let m = n("minutes", MAX_MINUTES)?;
            spec.expires_ms = Some(now_ms + u64::from(m) * 60_000);
        }
        Scope::Uses => spec.uses = Some(n("uses", MAX_USES)?),
        Scope::Prefix => {
            if !inside(&cwd, workspace) {
                return Err(ProposeError::OutsideWorkspace);
            }
            spec.cwd = None;
            spec.workspace = Some(workspace.to_owned());
        }
    }
    Ok(spec)
}

/// Whether one gated segment matches `shape`.
fn shape_covers(shape: &Shape, s: &SegmentVerdict) -> bool {
    let args = s.argv.get(1..).unwrap_or_default();
    s.category == shape.category
        && s.resolved_path.as_deref() == Some(shape.program.as_str())
        && !args.iter().any(|w| expands(w))
        && !expands(&s.text)
        && if shape.prefix {
            args.starts_with(&shape.words)
        } else {
            args == shape.words.as_slice()
        }
}

/// Whether every directory the segment runs in suits the grant.
fn cwds_fit(spec: &GrantSpec, req_cwd: &str, s: &SegmentVerdict) -> bool {
    let fits = |d: &str| match (&spec.workspace, &spec.cwd) {
        (Some(ws), _) => inside(d, ws),
        (None, Some(c)) => d == c,
        (None, None) => false,
    };
    match &s.cwds {
        None => fits(req_cwd),
        Some(list) => !list.is_empty() && list.iter().all(|d| fits(d)),
    }
}

/// Whether the grant `spec` applies to this request at all (its agent, session, cwd,
/// environment, profile), leaving the segments to [`covering`].
fn applies(spec: &GrantSpec, req: &Request, v: &Verdict) -> bool {
    req.who.agent_id == spec.agent_id
        && spec
            .session_key
            .as_ref()
            .is_none_or(|k| req.who.session_key.as_ref() == Some(k))
        && v.profile == spec.profile
        && env_of(req) == spec.env
}

/// Which of `grants` (id and spec, all live) cover `req` judged `v`: every gated segment
/// must match a shape of an applicable grant. Returns the ids used (each once), or None
/// when anything stays uncovered (the request is then asked as usual).
pub fn covering<'a>(
    grants: impl IntoIterator<Item = (&'a str, &'a GrantSpec)>,
    req: &Request,
    v: &Verdict,
) -> Option<Vec<String>> {
    if !grantable(req, v) {
        return None;
    }
    let cwd = cwd_of(req);
    let usable: Vec<(&str, &GrantSpec)> = grants
        .into_iter()
        .filter(|(_, g)| applies(g, req, v))
        .collect();
    let mut used: Vec<String> = Vec::new();
    for s in v.segments.iter().filter(|s| s.verdict == VerdictKind::Ask) {
        let (id, _) = usable
            .iter()
            .find(|(_, g)| cwds_fit(g, &cwd, s) && g.shapes.iter().any(|sh| shape_covers(sh, s)))?;
        if !used.iter().any(|u| u == id) {
            used.push((*id).to_owned());
        }
    }
    (!used.is_empty()).then_some(used)
}
