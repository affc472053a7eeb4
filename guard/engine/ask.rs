//! What a node asks the deciding guard about one `system.run`, and how that becomes the
//! engine's [`Request`]: one builder for both deciders (the sidecar's socket door and the
//! in-process engine), so a command is judged the same way wherever it is decided. The
//! engine's vocabulary, not a door's: the node door sends an [`Ask`], the socket door
//! receives it, and the audit log records the [`Outcome`].

use crate::policy::request::{Action, ExecAction, OpenClawAsk, Request, Source, Who};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The most a decision may wait (OpenClaw's own approvals expire after 30 min).
pub const MAX_WAIT_MS: u64 = 30 * 60 * 1000;

/// One `system.run`, as the node describes it to the decider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ask {
    /// The invoke id (the decision's request id).
    pub id: String,
    /// Exactly what will run.
    pub argv: Vec<String>,
    /// Display text (`rawCommand`, else the argv joined).
    pub command_text: String,
    pub cwd: Option<String>,
    /// The override names.
    pub env_keys: Vec<String>,
    /// The overrides as the card shows them: values of secret-looking names never leave the
    /// node (only their length and digest do).
    #[serde(default)]
    pub env: Vec<crate::policy::request::EnvShown>,
    /// The exact program file the node's exec plan resolved.
    pub resolved_path: Option<String>,
    pub agent_id: Option<String>,
    pub session_key: Option<String>,
    pub run_id: Option<String>,
    pub node_id: Option<String>,
    /// How long the node can wait for the answer.
    pub wait_ms: u64,
}

/// The decider's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub allow: bool,
    /// A deny's reason code (what the agent and `exec.denied` see).
    pub reason: Option<String>,
    /// The sandbox profile the verdict names for the run.
    pub profile: Option<String>,
    /// The policy answered by itself (an autonomous run), not a person.
    pub by_policy: bool,
    /// What the agent is told after `SYSTEM_RUN_DENIED: ` when it differs from the reason's
    /// own sentence (a person's deny names the person and their reason).
    pub message: Option<String>,
}

impl Answer {
    pub fn deny(reason: &str) -> Self {
        Answer {
            allow: false,
            reason: Some(reason.into()),
            profile: None,
            by_policy: true,
            message: None,
        }
    }

    /// The deny of `d`, told to the agent as [`deny_text`](super::decision::deny_text).
    pub fn denied(d: &crate::policy::request::Decision) -> Self {
        Answer {
            message: Some(super::decision::deny_text(d)),
            ..Answer::deny(d.reason.as_deref().unwrap_or("approval-required"))
        }
    }
}

/// How a run ended: the audit log's type (it records it), named here too for the doors.
pub use crate::audit::event::Outcome;

/// The engine's request: the argv is what runs, so the argv is analysed (the shell text is
/// display only); the deadline is the node's wait, capped at [`MAX_WAIT_MS`].
pub fn request(a: &Ask, received_ms: u64) -> Request {
    Request {
        id: a.id.clone(),
        who: Who {
            agent_id: a
                .agent_id
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or("main")
                .into(),
            session_key: a.session_key.clone(),
            source: Source::Node,
        },
        action: Action::Exec(ExecAction {
            argv: a.argv.clone(),
            command: None,
            cwd: a.cwd.as_ref().map(PathBuf::from),
            env_keys: a.env_keys.clone(),
            resolved_path: a.resolved_path.as_ref().map(PathBuf::from),
            env: a.env.clone(),
        }),
        received_at_ms: received_ms,
        deadline_ms: Some(received_ms + a.wait_ms.min(MAX_WAIT_MS)),
        openclaw: OpenClawAsk::default(),
    }
}
