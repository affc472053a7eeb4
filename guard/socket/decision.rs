//! Building the guard's [`Request`] from socket frames: the socket door's half of the
//! adapter (the engine's decision helpers live in `engine::decision`).

use super::auth::Peer;
use super::wire::{ApprovalRequest, ExecRequest};
use crate::policy::request::{Action, DecisionKind, ExecAction, OpenClawAsk, Request, Source, Who};
use serde_json::json;
use std::path::PathBuf;

pub fn peer_json(p: &Peer) -> serde_json::Value {
    json!({"uid":p.uid,"pid":p.pid})
}

/// The requester: OpenClaw's agent id (`main` when absent or empty) and session key.
fn who(agent_id: Option<&str>, session_key: Option<String>, source: Source) -> Who {
    Who {
        agent_id: agent_id.filter(|s| !s.is_empty()).unwrap_or("main").into(),
        session_key,
        source,
    }
}

/// A `request` frame as a Request: the shell text is what gets analysed. The frame does not
/// carry the client's timeout, so the deadline is the documented default (15 s) minus the
/// margin; a caller passing a shorter `timeoutMs` to the Node client may time out first.
pub fn request_from_prompt(
    id: &str,
    r: &ApprovalRequest,
    received_ms: u64,
    deadline_ms: u64,
) -> Request {
    Request {
        id: id.into(),
        who: who(
            r.agent_id.as_deref(),
            r.session_key.clone(),
            Source::SocketRequest,
        ),
        action: Action::Exec(ExecAction {
            argv: r.command_argv.clone().unwrap_or_default(),
            command: Some(r.command.clone()),
            cwd: r.cwd.as_ref().map(PathBuf::from),
            env_keys: r.env_keys.clone().unwrap_or_default(),
            resolved_path: r.resolved_path.as_ref().map(PathBuf::from),
        }),
        received_at_ms: received_ms,
        deadline_ms: Some(deadline_ms),
        openclaw: OpenClawAsk {
            security: r.security.clone(),
            ask: r.ask.clone(),
            allowed_decisions: r
                .allowed_decisions
                .as_ref()
                .map(|v| v.iter().filter_map(|d| DecisionKind::parse(d)).collect()),
        },
    }
}

/// An `exec` request as a Request: the argv is what runs, so the argv is analysed (the
/// `rawCommand` is kept for display only). `approvalDecision` (set when OpenClaw's gateway
/// already approved) is deliberately not trusted: it comes through the agent side, so the
/// guard's own policy and inbox decide.
pub fn request_from_exec(id: &str, r: &ExecRequest, received_ms: u64, deadline_ms: u64) -> Request {
    Request {
        id: id.into(),
        who: who(
            r.agent_id.as_deref(),
            r.session_key.clone(),
            Source::SocketExec,
        ),
        action: Action::Exec(ExecAction {
            argv: r.command.clone(),
            command: None,
            cwd: r.cwd.as_ref().map(PathBuf::from),
            env_keys: r
                .env
                .as_ref()
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default(),
            resolved_path: None,
        }),
        received_at_ms: received_ms,
        deadline_ms: Some(deadline_ms),
        openclaw: OpenClawAsk::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_frames_become_shell_text_requests() {
        let r = ApprovalRequest {
            command: "ls | wc -l".into(),
            cwd: Some("/tmp".into()),
            agent_id: Some(String::new()),
            allowed_decisions: Some(vec!["allow-once".into(), "bogus".into(), "deny".into()]),
            ..Default::default()
        };
        let req = request_from_prompt("i1", &r, 5, 10);
        assert_eq!(req.who.agent_id, "main", "an empty agent id means main");
        assert_eq!(req.who.source, Source::SocketRequest);
        assert_eq!(req.deadline_ms, Some(10));
        let Action::Exec(e) = &req.action else {
            panic!("exec action")
        };
        assert_eq!(e.command.as_deref(), Some("ls | wc -l"));
        assert_eq!(
            req.openclaw.allowed_decisions,
            Some(vec![DecisionKind::AllowOnce, DecisionKind::Deny]),
            "unknown decisions are dropped"
        );
    }

    #[test]
    fn exec_frames_are_analysed_by_argv_and_env_names_only() {
        let r = ExecRequest {
            command: vec!["/bin/echo".into(), "a b".into()],
            raw_command: Some("echo 'a b' ; rm -rf /".into()),
            env: Some([("API_KEY".to_owned(), "s3cret".to_owned())].into()),
            agent_id: Some("ops".into()),
            ..Default::default()
        };
        let req = request_from_exec("i2", &r, 1, 2);
        let Action::Exec(e) = &req.action else {
            panic!("exec action")
        };
        assert_eq!(
            e.command, None,
            "the rawCommand is display text, not what runs"
        );
        assert_eq!(e.argv, r.command);
        assert_eq!(e.env_keys, vec!["API_KEY"]);
        assert!(!serde_json::to_string(&req)
            .unwrap_or_default()
            .contains("s3cret"));
        assert_eq!(req.who.agent_id, "ops");
    }

    #[test]
    fn deny_reasons_and_messages() {
        use crate::engine::decision::{deny_message, fallback};
        use crate::policy::request::DecidedBy;
        assert_eq!(deny_message("user-denied"), "user denied");
        assert_eq!(
            deny_message("sensitive-path"),
            "blocked by sanctum-guard (sensitive-path)"
        );
        let d = fallback("approval-timeout");
        assert_eq!((d.kind, d.by), (DecisionKind::Deny, DecidedBy::Fallback));
        assert_eq!(
            peer_json(&Peer {
                uid: 3,
                pid: Some(4)
            }),
            json!({"uid":3,"pid":4})
        );
    }
}
