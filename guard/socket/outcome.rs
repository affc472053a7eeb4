//! Our extensions of the approvals socket for `sanctum-guard node` (the real OpenClaw clients
//! never send them): a `request` frame with `source:"node"` (judged by its argv, waiting as
//! long as the node can, answered with the deny reason and the sandbox profile so the node runs
//! exactly what was judged), and the `outcome` frame (how the node's run ended, for the audit
//! log and the history), acknowledged with `{"type":"outcome-ack","id","ok":true}`.

use super::auth::Peer;
use super::decision::peer_id;
use super::peer::PeerLink;
use super::wire::{NodeVerdict, Reply, RequestFrame};
use crate::audit::event::{AuditEvent, Origin, Requester, RunOutcome};
use crate::engine::ask::{self, Ask, Outcome};
use crate::engine::decision::{deny_text, now_ms};
use crate::engine::plan::WorkspaceStamp;
use crate::engine::Engine;
use crate::policy::request::{DecidedBy, DecisionKind};
use crate::policy::verdict::{Reason, Verdict, VerdictKind};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::watch;

/// `{"type":"outcome","token","id","outcome":{…}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeFrame {
    pub id: String,
    pub token: String,
    pub outcome: Outcome,
}

/// Decodes an outcome frame's fields; `None` when a field is missing or mistyped.
pub fn parse(
    id: Option<String>,
    token: Option<String>,
    outcome: Option<serde_json::Value>,
) -> Option<OutcomeFrame> {
    let outcome: Outcome = serde_json::from_value(outcome?).ok()?;
    Some(OutcomeFrame {
        id: id.unwrap_or_default(),
        token: token?,
        outcome,
    })
}

/// The node's `request` (token already checked): the engine decides; the reply carries the
/// reason and profile the node needs (a reason only for a deny).
pub async fn on_node_request(
    engine: &Arc<Engine>,
    peer: &Peer,
    f: RequestFrame,
    shutdown: watch::Receiver<bool>,
    link: PeerLink<'_>,
) -> Reply {
    let r = &f.request;
    let a = Ask {
        id: f.id.clone(),
        argv: r.command_argv.clone().unwrap_or_default(),
        command_text: r.command.clone(),
        cwd: r.cwd.clone(),
        env_keys: r.env_keys.clone().unwrap_or_default(),
        env: r.env_shown.clone().unwrap_or_default(),
        resolved_path: r.resolved_path.clone(),
        agent_id: r.agent_id.clone(),
        session_key: r.session_key.clone(),
        run_id: r.run_id.clone(),
        node_id: r.node_id.clone(),
        wait_ms: r
            .timeout_ms
            .unwrap_or(engine.deadlines().request_ms)
            .saturating_sub(engine.deadlines().margin_ms),
    };
    if a.argv.is_empty() {
        return Reply::Line(json!({"type":"decision","id":f.id,"decision":"deny",
                                  "reason":"json","message":"a node request needs commandArgv"}));
    }
    let req = ask::request(&a, now_ms());
    let requester = Requester::SocketNode {
        peer: peer_id(peer),
        node_id: a.node_id.clone(),
        run_id: a.run_id.clone(),
    };
    let here = WorkspaceStamp::of(&engine.judge().deployment().workspace);
    let verdict = stricter(engine.judge().decide(&req), r.node_verdict.as_ref(), here);
    let (decision, verdict) = engine
        .decide_verdict(&requester, &req, verdict, shutdown, async move {
            link.gone().await;
            crate::inbox::Cancel::RequesterGone
        })
        .await;
    if decision.kind == DecisionKind::AllowAlways {
        engine.persist_allow_always(&req, &verdict).await;
    }
    let reason = (decision.kind == DecisionKind::Deny).then(|| {
        decision
            .reason
            .clone()
            .unwrap_or_else(|| "approval-required".into())
    });
    // Who answered: the node neutralises what git would run by itself only for the policy's.
    let by = match decision.by {
        DecidedBy::Policy => "policy",
        DecidedBy::Human(_) => "human",
        DecidedBy::Fallback => "fallback",
    };
    // The sentence the node tells the agent: a person's deny names the person.
    let message = (decision.kind == DecisionKind::Deny).then(|| deny_text(&decision));
    Reply::Line(
        json!({"type":"decision","id":f.id,"decision":decision.kind.as_str(),
                       "reason":reason,"message":message,"profile":verdict.profile,"by":by}),
    )
}

/// The stricter of this guard's verdict and the node's. Paths are resolved where the command
/// runs, which this guard may not see (another container or mount namespace): a node that
/// sends no verdict of its own is never answered autonomously from this filesystem.
fn stricter(
    mut mine: Verdict,
    node: Option<&NodeVerdict>,
    here: Option<WorkspaceStamp>,
) -> Verdict {
    let (kind, reasons) = match node {
        None => (
            VerdictKind::Ask,
            vec![Reason::new(
                "node-facts-missing",
                "the node sent no verdict of its own; this guard cannot see its filesystem",
            )],
        ),
        // This guard judged workspace paths on its own filesystem: only sound when the
        // node's workspace is the very directory this guard sees.
        Some(n) if n.workspace.is_none() || n.workspace != here => {
            let mut reasons = n.reasons.clone();
            reasons.push(Reason::new(
                "workspace-unverified",
                "the node's workspace is not the directory this guard sees (device and inode differ, or one is unknown): its paths were judged elsewhere",
            ));
            let kind = match n.kind {
                VerdictKind::Deny => VerdictKind::Deny,
                _ => VerdictKind::Ask,
            };
            (kind, reasons)
        }
        Some(n) => (n.kind, n.reasons.clone()),
    };
    let rank = |k: VerdictKind| match k {
        VerdictKind::Allow => 0,
        VerdictKind::Ask => 1,
        VerdictKind::Deny => 2,
    };
    // The node judged the same command with the same policy: most of its reasons are this
    // guard's too, and are shown once (card, History, `inbox list`).
    let reasons: Vec<Reason> = reasons
        .into_iter()
        .filter(|r| {
            !mine
                .reasons
                .iter()
                .any(|m| m.code == r.code && m.message == r.message)
        })
        .collect();
    let raise = rank(kind) > rank(mine.kind);
    if raise {
        mine.kind = kind;
        if kind == VerdictKind::Ask {
            mine.offered = vec![DecisionKind::AllowOnce, DecisionKind::Deny];
        }
        mine.reasons.splice(0..0, reasons);
    } else if kind == VerdictKind::Ask && mine.kind == VerdictKind::Ask {
        mine.reasons.extend(reasons);
    }
    mine
}

/// Records how a node's run ended (token already checked).
pub async fn on_outcome(engine: &Arc<Engine>, peer: &Peer, f: OutcomeFrame) -> Reply {
    let event = AuditEvent::RunOutcome(Box::new(RunOutcome {
        source: Origin::Node,
        peer: Some(peer_id(peer)),
        outcome: f.outcome,
    }));
    let ok = engine.record(event).await;
    Reply::Line(json!({"type":"outcome-ack","id":f.id,"ok":ok}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_frames_need_a_token_and_a_whole_outcome() {
        let o = json!({"requestId":"r","exitCode":0,"durationMs":3,"outputSha256":"ab",
                       "timedOut":false,"success":true});
        let f = parse(Some("i".into()), Some("t".into()), Some(o.clone())).expect("frame");
        assert_eq!(f.outcome.duration_ms, 3);
        assert!(parse(Some("i".into()), None, Some(o)).is_none());
        assert!(parse(
            Some("i".into()),
            Some("t".into()),
            Some(json!({"requestId":1}))
        )
        .is_none());
    }

    /// The answer is never laxer than the node's verdict, and this guard's own view of the
    /// workspace counts only for the very directory the node judged.
    #[test]
    fn the_node_verdict_and_its_workspace_are_floors() {
        use VerdictKind::{Allow, Ask, Deny};
        let ws = WorkspaceStamp { dev: 1, ino: 2 };
        let other = WorkspaceStamp { dev: 1, ino: 3 };
        let node = |kind, workspace| NodeVerdict {
            kind,
            reasons: vec![],
            workspace,
        };
        // (this guard's verdict, the node's, this guard's workspace, result, reason code)
        type Row<'a> = (
            VerdictKind,
            Option<NodeVerdict>,
            Option<WorkspaceStamp>,
            VerdictKind,
            Option<&'a str>,
        );
        let rows: &[Row] = &[
            (Allow, Some(node(Allow, Some(ws))), Some(ws), Allow, None),
            (Ask, Some(node(Allow, Some(ws))), Some(ws), Ask, None),
            (Allow, Some(node(Ask, Some(ws))), Some(ws), Ask, None),
            (Allow, Some(node(Deny, Some(ws))), Some(ws), Deny, None),
            (Allow, None, Some(ws), Ask, Some("node-facts-missing")),
            (
                Allow,
                Some(node(Allow, None)),
                Some(ws),
                Ask,
                Some("workspace-unverified"),
            ),
            (
                Allow,
                Some(node(Allow, Some(other))),
                Some(ws),
                Ask,
                Some("workspace-unverified"),
            ),
            (
                Allow,
                Some(node(Allow, Some(ws))),
                None,
                Ask,
                Some("workspace-unverified"),
            ),
            (
                Allow,
                Some(node(Deny, Some(other))),
                Some(ws),
                Deny,
                Some("workspace-unverified"),
            ),
            (Deny, Some(node(Allow, Some(other))), Some(ws), Deny, None),
        ];
        for (i, (mine, n, here, want, code)) in rows.iter().enumerate() {
            let v = Verdict {
                kind: *mine,
                category: crate::policy::verdict::Category::Read,
                reasons: vec![],
                offered: vec![],
                segments: vec![],
                profile: None,
            };
            let got = stricter(v, n.as_ref(), *here);
            assert_eq!(got.kind, *want, "row {i}");
            if let Some(code) = code {
                assert!(
                    got.reasons.iter().any(|r| r.code == *code),
                    "row {i}: {:?}",
                    got.reasons
                );
            }
        }
    }
}
