//! The grants an `allow-always` stores, computed once for both uses: the card lists them
//! before a person decides and [`super::judge::Judge::persist_allow_always`] writes them,
//! so what the card promises is exactly what is stored.

use crate::openclaw::allow_always::cwd_argv_pattern;
use crate::policy::request::{Action, Request};
use crate::policy::verdict::{Category, Verdict, VerdictKind};
use serde::Serialize;

/// One OpenClaw allowlist entry an `allow-always` of this request adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedGrant {
    /// The executable's resolved path (the entry's `pattern`).
    pub pattern: String,
    /// The exact argv the grant covers (argv[0] is not part of the hash).
    pub argv: Vec<String>,
    /// The working directory it covers ("" when the request named none).
    pub cwd: String,
    /// OpenClaw's `argPattern` (`sha256:cwd-argv:v1:…`) binding argv and cwd.
    pub arg_pattern: String,
}

/// The grants for every gated segment of `verdict` that names a resolved executable (a
/// segment the analysis could not read gets none: it keeps asking).
pub fn planned(req: &Request, verdict: &Verdict) -> Vec<PlannedGrant> {
    let cwd = match &req.action {
        Action::Exec(e) => e
            .cwd
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let mut out: Vec<PlannedGrant> = Vec::new();
    for s in &verdict.segments {
        if s.verdict != VerdictKind::Ask || s.category == Category::Unanalysable {
            continue;
        }
        let Some(p) = s.resolved_path.as_deref().map(str::trim) else {
            continue;
        };
        if p.is_empty() {
            continue;
        }
        let g = PlannedGrant {
            pattern: p.to_owned(),
            argv: s.argv.clone(),
            cwd: cwd.clone(),
            arg_pattern: cwd_argv_pattern(&cwd, &s.argv),
        };
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}
