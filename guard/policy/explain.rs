//! `policy explain`: one shell text through `decide()` as a person at the command line
//! would ask it, and the two renderings of the verdict (human text, one JSON object).

use super::decide::{decide, DecideContext};
use super::file::Policy;
use super::request::{Action, ExecAction, OpenClawAsk, Request, Source, Who};
use super::verdict::{Verdict, VerdictKind};
use std::fmt::Write as _;
use std::path::Path;

/// Decides `text` run in the context's cwd under `policy` (the caller gives the agent's
/// home, PATH and facts in `ctx`; `crate::config::explain_context` for the command line).
pub fn explain(policy: &Policy, ctx: &DecideContext, text: &str) -> Verdict {
    decide(policy, ctx, &cli_request(text, &ctx.cwd))
}

/// Shell text asked from the command line: no OpenClaw constraints, agent `main`.
pub fn cli_request(text: &str, cwd: &Path) -> Request {
    Request {
        id: "cli".into(),
        who: Who {
            agent_id: "main".into(),
            session_key: None,
            source: Source::Cli,
        },
        action: Action::Exec(ExecAction {
            command: Some(text.to_string()),
            cwd: Some(cwd.to_path_buf()),
            ..ExecAction::default()
        }),
        received_at_ms: 0,
        deadline_ms: None,
        openclaw: OpenClawAsk::default(),
    }
}

/// The documented exit code of a verdict: 0 allow, 10 ask, 20 deny.
pub fn exit_code(kind: VerdictKind) -> u8 {
    match kind {
        VerdictKind::Allow => 0,
        VerdictKind::Ask => 10,
        VerdictKind::Deny => 20,
    }
}

fn kebab<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| j.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Human rendering: the verdict, its category, each reason, then every segment.
pub fn render_human(v: &Verdict) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "verdict:  {}", kebab(&v.kind));
    let _ = writeln!(out, "category: {}", kebab(&v.category));
    if let Some(p) = &v.profile {
        let _ = writeln!(out, "profile:  {p}");
    }
    if !v.offered.is_empty() {
        let offered: Vec<&str> = v.offered.iter().map(|d| d.as_str()).collect();
        let _ = writeln!(out, "offered:  {}", offered.join(", "));
    }
    for r in &v.reasons {
        let _ = writeln!(out, "reason:   [{}] {}", r.code, r.message);
    }
    for (i, s) in v.segments.iter().enumerate() {
        let _ = writeln!(
            out,
            "segment {}: {}  ->  {} ({})",
            i + 1,
            s.argv.join(" "),
            kebab(&s.verdict),
            kebab(&s.category)
        );
        if let Some(p) = &s.resolved_path {
            let _ = writeln!(out, "    resolved: {p}");
        }
        for r in &s.reasons {
            let _ = writeln!(out, "    [{}] {}", r.code, r.message);
        }
    }
    out
}

/// JSON rendering: `verdict`, `category`, `reasons`, `segments`, `offered`, `profile`.
pub fn render_json(v: &Verdict) -> serde_json::Value {
    serde_json::json!({
        "verdict": v.kind,
        "category": v.category,
        "reasons": v.reasons,
        "offered": v.offered,
        "profile": v.profile,
        "segments": v.segments,
    })
}
