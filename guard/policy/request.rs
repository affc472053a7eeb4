//! The request model: one normalized shape for everything an agent may ask, whatever the
//! source (approvals socket, gateway, tool-call plugin, command line), and the verdicts and
//! decisions that answer it. This module owns these types; every other box speaks them.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a request came from. The source fixes the deadline and the reply format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// OpenClaw's exec-approvals socket, `type:"request"` (prompt only).
    SocketRequest,
    /// OpenClaw's exec-approvals socket, `type:"exec"` (the guard runs the command).
    SocketExec,
    /// The gateway's `exec.approval.requested` event.
    Gateway,
    /// The Sanctum tool-call plugin in the agent (non-exec tools).
    Plugin,
    /// A person at the command line (`policy explain`).
    Cli,
    /// `sanctum-guard node`: a `system.run` the gateway sent to our node host (the socket's
    /// `request` frame with `source:"node"`, or in-process in laptop mode).
    Node,
    /// The egress proxy: a connection to a destination no egress rule covers.
    Egress,
}

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Who {
    /// OpenClaw agent id (`main` when the source does not say).
    pub agent_id: String,
    /// OpenClaw session key, e.g. `agent:main:main`.
    pub session_key: Option<String>,
    pub source: Source,
}

/// An exec request: what OpenClaw knows about a command before it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecAction {
    /// The argv, when the source sent one (`commandArgv`, or `command` of an `exec`).
    pub argv: Vec<String>,
    /// The raw shell text (`command` of a `request`, `rawCommand` of an `exec`). When present
    /// it is what gets analysed: it is what a shell would run.
    pub command: Option<String>,
    /// Working directory the command runs in.
    pub cwd: Option<PathBuf>,
    /// Names (never values) of the environment overrides the request carries.
    pub env_keys: Vec<String>,
    /// The executable as OpenClaw resolved it, if it did.
    pub resolved_path: Option<PathBuf>,
    /// The environment overrides with what the reviewer may see of their values, when the
    /// source knows them (a node's `system.run`). In the request hash, so an approval binds
    /// the values too; absent (not empty) when unknown, so older hashes stay the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvShown>,
}

/// One environment override as a card shows it. What the hash binds is the real value (its
/// `sha256`); what a person sees is `parts`: the value piece by piece, with the pieces that
/// look secret (a token, a URL's password, the whole value of a secret-looking name) marked,
/// and hidden (`text` null) unless showing them is needed to see what runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvShown {
    pub name: String,
    /// The whole value, when no part of it is hidden.
    #[serde(default)]
    pub value: Option<String>,
    /// The value in pieces, in order (empty for an empty value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<EnvPart>,
    /// Length of the value in bytes.
    pub len: usize,
    /// Lowercase hex SHA-256 of the value: what the hash binds even when a part is hidden.
    pub sha256: String,
    /// The run will not receive it (a loader or secret variable the sandbox drops).
    #[serde(default)]
    pub dropped: bool,
    /// The command names it (`$NAME`, `${NAME}`, `eval "$NAME"`, `printenv NAME`): what it
    /// holds may run, so a secret part that could be code is shown too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expanded: bool,
}

/// One piece of an environment value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPart {
    /// The text, or null when this secret-looking piece is hidden.
    #[serde(default)]
    pub text: Option<String>,
    /// The piece looks like a secret.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
    /// Its length in bytes.
    pub len: usize,
}

/// What the agent wants to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    Exec(ExecAction),
    FileRead {
        path: PathBuf,
    },
    FileWrite {
        path: PathBuf,
        /// Lowercase hex SHA-256 of the content to be written, so a human approves bytes.
        content_sha256: Option<String>,
    },
    FileDelete {
        path: PathBuf,
    },
    Http {
        method: String,
        url: String,
    },
    Browser {
        /// The browser tool's action (`goto`, `click`, `screenshot`, `launch`, ...).
        action: String,
        url: Option<String>,
    },
    PackageInstall {
        /// `npm`, `pnpm`, `yarn`, `pip`, `cargo`, ...
        manager: String,
        packages: Vec<String>,
    },
    ProcessExit {
        code: Option<i32>,
    },
    SkillInstall {
        name: String,
    },
    ConfigChange {
        key: String,
        value: Option<String>,
    },
    /// An OpenClaw plugin asks a person (`plugin.approval.requested`): only its words are
    /// known, never what it will do, so it can never be judged safe by itself.
    PluginApproval {
        plugin_id: Option<String>,
        tool_name: Option<String>,
        title: String,
        description: String,
        severity: Option<String>,
    },
    /// A tool call the Sanctum plugin forwarded (any tool but `exec`).
    Tool(Box<super::tools::ToolCall>),
}

/// OpenClaw's own view of the request (the `security`/`ask` it sent), so the guard is never
/// looser than OpenClaw asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenClawAsk {
    pub security: Option<String>,
    pub ask: Option<String>,
    /// `allowedDecisions` the source offered, if any.
    pub allowed_decisions: Option<Vec<DecisionKind>>,
}

/// One request, normalized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The source's id for this request (the socket frame id, the gateway approval id, ...).
    pub id: String,
    pub who: Who,
    pub action: Action,
    /// Epoch milliseconds at which the guard received it.
    pub received_at_ms: u64,
    /// Epoch milliseconds by which the source needs an answer.
    pub deadline_ms: Option<u64>,
    pub openclaw: OpenClawAsk,
}

/// The three statuses of the Sanctum action table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Runs by itself.
    Autonomous,
    /// Waits for a human.
    Gated,
    /// Never runs.
    Blocked,
}

/// A decision a human (or the policy, or the fallback) can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionKind {
    AllowOnce,
    AllowAlways,
    Deny,
    /// Ours, offered for egress only: this host:port for the grant's stated time.
    AllowFor,
}

impl DecisionKind {
    /// OpenClaw's wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::AllowOnce => "allow-once",
            DecisionKind::AllowAlways => "allow-always",
            DecisionKind::Deny => "deny",
            DecisionKind::AllowFor => "allow-for",
        }
    }

    /// Parses OpenClaw's wire spelling; anything else is `None` (callers treat it as deny).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "allow-once" => Some(DecisionKind::AllowOnce),
            "allow-always" => Some(DecisionKind::AllowAlways),
            "deny" => Some(DecisionKind::Deny),
            "allow-for" => Some(DecisionKind::AllowFor),
            _ => None,
        }
    }
}

/// Who made a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", content = "name", rename_all = "kebab-case")]
pub enum DecidedBy {
    /// The policy answered without a human (allow or deny verdicts).
    Policy,
    /// A named, authenticated person.
    Human(String),
    /// Nobody answered before the deadline.
    Fallback,
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Why; for a deny this is what the agent is told (e.g. `approval-timeout`, `user-denied`).
    pub reason: Option<String>,
    pub by: DecidedBy,
    /// Epoch milliseconds.
    pub at_ms: u64,
}
