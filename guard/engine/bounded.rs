//! Bounded grants in the pipeline: before a gated request goes to a person, the live grants
//! are checked on its judged segments ([`crate::grants::covering`]); a covered request is
//! answered allow-once with no prompt, one use of each grant spent atomically, and the
//! `decision` record names the grants. The verdict is untouched, so the run gets exactly the
//! profile an approved run of it gets.

use super::decision::{fallback, now_ms};
use super::plan::trusted_location;
use super::Engine;
use crate::audit::event::{AuditEvent, Decided, Requester};
use crate::grants::{covering, GrantBackend};
use crate::policy::request::{DecidedBy, Decision, DecisionKind, Request};
use crate::policy::verdict::{Verdict, VerdictKind};
use std::path::Path;
use std::sync::Arc;

impl Engine {
    /// Checks the grants in `store` before asking a person.
    pub fn with_grants(mut self, store: Arc<dyn GrantBackend>) -> Self {
        self.grants = Some(store);
        self
    }

    /// The grants table (none in a guard built without one).
    pub fn grants(&self) -> Option<&Arc<dyn GrantBackend>> {
        self.grants.as_ref()
    }

    /// Whether `program` lies where the agent cannot change it (a grant on a workspace
    /// script would follow the agent's edits).
    pub fn program_trusted(&self, program: &str) -> bool {
        let dep = self.judge.deployment();
        trusted_location(Path::new(program), &dep.workspace, &dep.agent_home)
    }

    /// The decision of the live grants covering `req` (judged `verdict`), with one use of
    /// each spent, or None: the request is then asked. A failing store is no grant (the
    /// person is asked), never an allow.
    pub(super) async fn grant_decision(
        &self,
        requester: &Requester,
        req: &Request,
        verdict: &Verdict,
    ) -> Option<Decision> {
        let store = self.grants.clone()?;
        if verdict.kind != VerdictKind::Ask
            || req
                .openclaw
                .allowed_decisions
                .as_ref()
                .is_some_and(|a| !a.contains(&DecisionKind::AllowOnce))
        {
            return None;
        }
        let programs: Vec<String> = verdict
            .segments
            .iter()
            .filter(|s| s.verdict == VerdictKind::Ask)
            .filter_map(|s| s.resolved_path.clone())
            .collect();
        let dep = self.judge.deployment().clone();
        let (r, v) = (req.clone(), verdict.clone());
        let used = tokio::task::spawn_blocking(move || {
            let now = now_ms();
            let live = store.spendable(now)?;
            let Some(ids) = covering(live.iter().map(|g| (g.id.as_str(), &g.spec)), &r, &v) else {
                return Ok(None);
            };
            if !programs
                .iter()
                .all(|p| trusted_location(Path::new(p), &dep.workspace, &dep.agent_home))
            {
                return Ok(None);
            }
            Ok::<_, crate::grants::GrantError>(store.spend(&ids, now)?.then_some(ids))
        })
        .await;
        let ids = match used {
            Ok(Ok(Some(ids))) => ids,
            Ok(Ok(None)) => return None,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "grants: check failed; asking a person");
                return None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "grants: check task failed; asking a person");
                return None;
            }
        };
        let decision = Decision {
            kind: DecisionKind::AllowOnce,
            reason: Some(format!("grant {}", ids.join(","))),
            by: DecidedBy::Human(format!("grant:{}", ids.join(","))),
            at_ms: now_ms(),
        };
        self.metrics.decision(&decision, Some(req.received_at_ms));
        let recorded = self
            .record(AuditEvent::Decided(Box::new(Decided {
                requester: requester.clone(),
                request: req.clone(),
                verdict: verdict.clone(),
                decision: decision.clone(),
                grants: ids,
            })))
            .await;
        Some(if recorded {
            decision
        } else {
            fallback("audit-unavailable")
        })
    }
}
