//! Shared fixtures for the inbox tests: a gated exec request and its verdict.

pub use sanctum_guard::inbox::now_ms;
use sanctum_guard::policy::request::{
    Action, DecidedBy, Decision, DecisionKind, ExecAction, OpenClawAsk, Request, Source, Who,
};
use sanctum_guard::policy::verdict::{Category, Reason, Verdict, VerdictKind};

/// An exec request of agent `main` from the socket for `cmd` (split on spaces).
pub fn exec_request(cmd: &str) -> Request {
    Request {
        id: format!("frame-{cmd}"),
        who: Who {
            agent_id: "main".into(),
            session_key: Some("agent:main:main".into()),
            source: Source::SocketRequest,
        },
        action: Action::Exec(ExecAction {
            argv: cmd.split(' ').map(str::to_owned).collect(),
            command: Some(cmd.into()),
            cwd: Some("/work".into()),
            env_keys: vec![],
            resolved_path: None,
            env: vec![],
        }),
        received_at_ms: now_ms(),
        deadline_ms: None,
        openclaw: OpenClawAsk::default(),
    }
}

/// An `ask` verdict (a write) offering `offered`.
pub fn ask_verdict(offered: &[DecisionKind]) -> Verdict {
    Verdict {
        kind: VerdictKind::Ask,
        category: Category::Write,
        reasons: vec![Reason::new("write", "writes a file")],
        offered: offered.to_vec(),
        segments: vec![],
        profile: None,
    }
}

/// Every decision a person can make.
pub const ALL: &[DecisionKind] = &[
    DecisionKind::AllowOnce,
    DecisionKind::AllowAlways,
    DecisionKind::Deny,
];

/// A decision made by the person `who`, now.
pub fn human(kind: DecisionKind, who: &str) -> Decision {
    Decision {
        kind,
        reason: None,
        by: DecidedBy::Human(who.into()),
        at_ms: now_ms(),
    }
}
