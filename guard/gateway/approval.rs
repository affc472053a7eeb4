//! The gateway's approval events as engine requests, and engine decisions as the gateway's
//! resolve frames (research/openclaw-gateway-door.md §3): `exec.approval.requested` (host
//! `gateway` or `node`, with `systemRunPlan` when present) and `plugin.approval.requested`
//! become a [`Request`] with source `gateway`; the answer is `exec.approval.resolve` /
//! `plugin.approval.resolve` with a decision the event's `allowedDecisions` offers.

use crate::audit::event::Requester;
use crate::policy::request::{Action, DecisionKind, ExecAction, OpenClawAsk, Request, Source, Who};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Which kind of approval the gateway asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exec,
    Plugin,
}

impl Kind {
    /// The kind of an event name (`exec.approval.requested`, ...), if it is a request.
    pub fn of_requested(event: &str) -> Option<Kind> {
        match event {
            "exec.approval.requested" => Some(Kind::Exec),
            "plugin.approval.requested" => Some(Kind::Plugin),
            _ => None,
        }
    }

    /// The kind of a `*.approval.resolved` event name.
    pub fn of_resolved(event: &str) -> Option<Kind> {
        match event {
            "exec.approval.resolved" => Some(Kind::Exec),
            "plugin.approval.resolved" => Some(Kind::Plugin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Exec => "exec",
            Kind::Plugin => "plugin",
        }
    }

    /// The gateway method that answers this kind.
    pub fn resolve_method(self) -> &'static str {
        match self {
            Kind::Exec => "exec.approval.resolve",
            Kind::Plugin => "plugin.approval.resolve",
        }
    }
}

/// One approval the gateway asked about, as the approver keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub kind: Kind,
    pub id: String,
    /// The decisions the gateway accepts (`allowedDecisions`); `None` when it did not say.
    pub allowed: Option<Vec<DecisionKind>>,
    pub expires_at_ms: Option<u64>,
    pub request: Request,
    pub requester: Requester,
}

/// Why an event could not become a request (the approval is then denied).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EventError {
    #[error("approval event without an id")]
    NoId,
    #[error("exec approval {0} names no command")]
    NoCommand(String),
}

fn text(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// `allowedDecisions` as decisions; unknown spellings are dropped (never widened).
fn allowed_decisions(v: &Value) -> Option<Vec<DecisionKind>> {
    let list = v.as_array()?;
    Some(
        list.iter()
            .filter_map(|d| d.as_str().and_then(DecisionKind::parse))
            .collect(),
    )
}

/// The engine request for one `*.approval.requested` payload received at `now_ms`. Its
/// deadline is the gateway's `expiresAtMs` less `margin_ms`, or `now + ask_timeout_ms` when
/// that comes first: the deny reaches the gateway before it gives up on its own.
pub fn pending(
    kind: Kind,
    payload: &Value,
    now_ms: u64,
    ask_timeout_ms: u64,
    margin_ms: u64,
) -> Result<Pending, EventError> {
    let id = text(&payload["id"]).ok_or(EventError::NoId)?;
    let r = &payload["request"];
    let expires_at_ms = payload["expiresAtMs"].as_u64();
    let by_timeout = now_ms.saturating_add(ask_timeout_ms);
    let deadline = match expires_at_ms {
        Some(e) => by_timeout.min(e.saturating_sub(margin_ms)),
        None => by_timeout,
    };
    let allowed = allowed_decisions(&r["allowedDecisions"]);
    let (action, host, node_id) = match kind {
        Kind::Exec => {
            let (a, host, node) = exec_action(&id, r)?;
            (Action::Exec(a), host, node)
        }
        Kind::Plugin => (plugin_action(r), None, None),
    };
    let request = Request {
        id: id.clone(),
        who: Who {
            agent_id: text(&r["agentId"]).unwrap_or_else(|| "main".into()),
            session_key: text(&r["sessionKey"]),
            source: Source::Gateway,
        },
        action,
        received_at_ms: now_ms,
        deadline_ms: Some(deadline),
        openclaw: OpenClawAsk {
            security: text(&r["security"]),
            ask: text(&r["ask"]),
            allowed_decisions: allowed.clone(),
        },
    };
    Ok(Pending {
        kind,
        requester: Requester::GatewayApproval {
            approval_id: id.clone(),
            kind: kind.as_str().into(),
            host,
            node_id,
        },
        id,
        allowed,
        expires_at_ms,
        request,
    })
}

/// An exec approval: a node exec runs exactly its `systemRunPlan.argv` (analysed as argv);
/// a gateway exec runs its command text through a shell (analysed as shell text).
fn exec_action(
    id: &str,
    r: &Value,
) -> Result<(ExecAction, Option<String>, Option<String>), EventError> {
    let plan = &r["systemRunPlan"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let plan_argv = strings(&plan["argv"]);
    let (argv, command) = if !plan_argv.is_empty() {
        (plan_argv, None)
    } else {
        let command = text(&r["command"]).ok_or_else(|| EventError::NoCommand(id.into()))?;
        (strings(&r["commandArgv"]), Some(command))
    };
    let cwd = text(&plan["cwd"]).or_else(|| text(&r["cwd"]));
    Ok((
        ExecAction {
            env: Vec::new(),
            argv,
            command,
            cwd: cwd.map(PathBuf::from),
            env_keys: strings(&r["envKeys"]),
            resolved_path: text(&r["resolvedPath"]).map(PathBuf::from),
        },
        text(&r["host"]),
        text(&r["nodeId"]),
    ))
}

fn plugin_action(r: &Value) -> Action {
    Action::PluginApproval {
        plugin_id: text(&r["pluginId"]),
        tool_name: text(&r["toolName"]),
        title: text(&r["title"]).unwrap_or_default(),
        description: text(&r["description"]).unwrap_or_default(),
        severity: text(&r["severity"]),
    }
}

/// The decision the gateway is sent: `wanted` when it is allowed; an `allow-always` the
/// gateway does not offer becomes `allow-once` when that is offered; anything else is `deny`
/// (the gateway accepts a deny whatever it offered: it is what it does itself at expiry).
pub fn wire_decision(wanted: DecisionKind, allowed: Option<&[DecisionKind]>) -> DecisionKind {
    let Some(allowed) = allowed else {
        return wanted;
    };
    if allowed.contains(&wanted) {
        return wanted;
    }
    if wanted == DecisionKind::AllowAlways && allowed.contains(&DecisionKind::AllowOnce) {
        return DecisionKind::AllowOnce;
    }
    DecisionKind::Deny
}

/// The resolve request's params.
pub fn resolve_params(id: &str, decision: DecisionKind) -> Value {
    json!({"id": id, "decision": decision.as_str()})
}

/// Who resolved an approval, from a `*.approval.resolved` payload.
pub fn resolved_by(payload: &Value) -> String {
    ["resolvedBy", "resolvedByDisplayName", "resolvedByConnId"]
        .iter()
        .find_map(|k| text(&payload[k]))
        .unwrap_or_else(|| "another approver".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec_event() -> Value {
        json!({"approvalKind":"exec","id":"a1","request":{"command":"echo hi","systemRunPlan":null,
            "cwd":"/ws","nodeId":null,"host":"gateway","security":"allowlist","ask":"on-miss",
            "unavailableDecisions":["allow-always"],"allowedDecisions":["allow-once","deny"],
            "agentId":"main","resolvedPath":"/usr/bin/echo","sessionKey":"agent:main:s"},
            "createdAtMs":1000,"expiresAtMs":1_801_000})
    }

    #[test]
    fn a_gateway_exec_is_shell_text_with_the_gateways_deadline_and_decisions() {
        let p = pending(Kind::Exec, &exec_event(), 1000, 600_000, 1500).expect("pending");
        assert_eq!(p.request.who.source, Source::Gateway);
        assert_eq!(
            p.request.deadline_ms,
            Some(601_000),
            "the ask timeout comes first"
        );
        let Action::Exec(e) = &p.request.action else {
            panic!("exec")
        };
        assert_eq!(e.command.as_deref(), Some("echo hi"));
        assert_eq!(e.cwd, Some(PathBuf::from("/ws")));
        assert_eq!(
            p.request.openclaw.allowed_decisions,
            Some(vec![DecisionKind::AllowOnce, DecisionKind::Deny])
        );
        let short = pending(Kind::Exec, &exec_event(), 1000, 10_000_000, 1500).expect("p");
        assert_eq!(
            short.request.deadline_ms,
            Some(1_799_500),
            "before expiresAtMs"
        );
    }

    #[test]
    fn a_node_exec_is_its_plan_argv() {
        let mut ev = exec_event();
        ev["request"]["host"] = json!("node");
        ev["request"]["nodeId"] = json!("n1");
        ev["request"]["systemRunPlan"] = json!({"argv":["/bin/sh","-lc","ls"],"cwd":"/w2","commandText":"ls","agentId":"main","sessionKey":"s"});
        let p = pending(Kind::Exec, &ev, 0, 1000, 0).expect("p");
        let Action::Exec(e) = &p.request.action else {
            panic!("exec")
        };
        assert_eq!(e.argv, ["/bin/sh", "-lc", "ls"]);
        assert_eq!(e.command, None);
        assert_eq!(e.cwd, Some(PathBuf::from("/w2")));
        assert!(
            matches!(p.requester, Requester::GatewayApproval { ref node_id, .. } if node_id.as_deref() == Some("n1"))
        );
    }

    #[test]
    fn malformed_events_are_errors_and_unknown_decisions_never_widen() {
        assert_eq!(
            pending(Kind::Exec, &json!({"request":{}}), 0, 1, 0).err(),
            Some(EventError::NoId)
        );
        assert!(matches!(
            pending(Kind::Exec, &json!({"id":"x","request":{}}), 0, 1, 0),
            Err(EventError::NoCommand(_))
        ));
        let ev = json!({"id":"plugin:1","request":{"title":"t","description":"d",
            "allowedDecisions":["bogus","deny"]}});
        let p = pending(Kind::Plugin, &ev, 0, 1, 0).expect("plugin");
        assert_eq!(p.allowed, Some(vec![DecisionKind::Deny]));
    }

    #[test]
    fn wire_decisions_stay_within_what_the_gateway_offers() {
        use DecisionKind::*;
        let once = [AllowOnce, Deny];
        assert_eq!(wire_decision(AllowAlways, Some(&once)), AllowOnce);
        assert_eq!(wire_decision(AllowOnce, Some(&[Deny])), Deny);
        assert_eq!(wire_decision(Deny, Some(&[AllowOnce])), Deny);
        assert_eq!(wire_decision(AllowAlways, None), AllowAlways);
        assert_eq!(
            resolve_params("a", AllowOnce),
            json!({"id":"a","decision":"allow-once"})
        );
    }
}
