//! Wire frames of OpenClaw's exec-approvals socket (docs/openclaw-protocol.md §1.3/§1.4): parsing
//! the one JSON line a client sends, and serialising the one reply, byte-compatible with the
//! real Node client. `requestJson` of an `exec` is kept as the exact string the HMAC covers.

pub use super::reply::{ExecError, ExecPayload, Reply};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The reference server's read cap; a longer line is rejected with `too-large`.
pub const MAX_LINE_BYTES: usize = 256_000;

/// Why a frame was rejected before any policy decision. The kebab-case spelling is the
/// `reason` the client (and the audit log) sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RejectReason {
    /// `|now − ts|` above the TTL window.
    Ttl,
    /// The `exec` HMAC does not verify.
    Hmac,
    /// Not JSON, or a required field is missing or mistyped.
    Json,
    /// The nonce of an `exec` was already seen inside the TTL window.
    Replay,
    /// The peer's UID (SO_PEERCRED) is not allowed.
    PeerUid,
    /// The peer (UID/PID) sent too many requests.
    RateLimit,
    /// The line exceeds [`MAX_LINE_BYTES`].
    TooLarge,
    /// A `type` other than `request` or `exec`.
    UnknownType,
    /// The `request` token does not match.
    Token,
    /// The client closed before sending a newline.
    Eof,
    /// The client sent no complete line within the read timeout.
    ReadTimeout,
    /// Shed under load: too many connections or buffered bytes (the oldest idle go first).
    Overloaded,
    /// The guard could not keep state it needs to answer safely (replay journal, audit).
    StateUnavailable,
    /// The frame carries several forms of the command (text, argv, plan) that disagree.
    CommandMismatch,
}

impl RejectReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::Ttl => "ttl",
            RejectReason::Hmac => "hmac",
            RejectReason::Json => "json",
            RejectReason::Replay => "replay",
            RejectReason::PeerUid => "peer-uid",
            RejectReason::RateLimit => "rate-limit",
            RejectReason::TooLarge => "too-large",
            RejectReason::UnknownType => "unknown-type",
            RejectReason::Token => "token",
            RejectReason::Eof => "eof",
            RejectReason::ReadTimeout => "read-timeout",
            RejectReason::Overloaded => "overloaded",
            RejectReason::StateUnavailable => "state-unavailable",
            RejectReason::CommandMismatch => "command-mismatch",
        }
    }

    /// The `error.code` of an `exec-res` rejection: malformed or unauthenticated input is
    /// `INVALID_REQUEST` (as the reference server), load shedding is `UNAVAILABLE`.
    pub fn code(self) -> &'static str {
        match self {
            RejectReason::RateLimit | RejectReason::Overloaded | RejectReason::StateUnavailable => {
                "UNAVAILABLE"
            }
            _ => "INVALID_REQUEST",
        }
    }
}

/// The `request` payload (prompt only). Unknown fields are ignored, as the Swift decoder does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub command: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub security: Option<String>,
    #[serde(default)]
    pub ask: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub resolved_path: Option<String>,
    #[serde(default)]
    pub session_key: Option<String>,
    #[serde(default)]
    pub allowed_decisions: Option<Vec<String>>,
    #[serde(default)]
    pub command_argv: Option<Vec<String>>,
    #[serde(default)]
    pub env_keys: Option<Vec<String>>,
    /// Ours (`sanctum-guard node`): the overrides as the card shows them.
    #[serde(default)]
    pub env_shown: Option<Vec<crate::policy::request::EnvShown>>,
    /// Ours (`sanctum-guard node`, see `super::outcome`): `"node"` marks a node host's
    /// `system.run`, judged by its argv and answered with the reason and the profile.
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub node_id: Option<String>,
    /// How long the node can wait for the decision.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The node host's plan (TS payload type): its argv and text are forms of the same
    /// command and must agree with `command` (the rest of it is not read).
    #[serde(default)]
    pub system_run_plan: Option<SystemRunPlan>,
    /// Ours (`sanctum-guard node`): the node's own verdict, judged on the filesystem the
    /// command runs on; the answer is never laxer than it.
    #[serde(default)]
    pub node_verdict: Option<NodeVerdict>,
    /// Ours (the Sanctum plugin, see `super::tool`): with `source:"plugin"`, the tool call
    /// to judge; `command` is then only its one-line summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<super::tool::ToolWire>,
}

/// The node's verdict on its plan: its kind and reasons, and which workspace it judged.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct NodeVerdict {
    pub kind: crate::policy::verdict::VerdictKind,
    #[serde(default)]
    pub reasons: Vec<crate::policy::verdict::Reason>,
    /// The node's workspace directory as `stat` names it there: the sidecar trusts its own
    /// view of workspace paths only when its workspace is this very directory.
    #[serde(default)]
    pub workspace: Option<crate::engine::plan::WorkspaceStamp>,
}

/// The parts of OpenClaw's `systemRunPlan` that name the command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemRunPlan {
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    #[serde(default)]
    pub command_text: Option<String>,
}

/// `type:"request"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    pub id: String,
    pub token: String,
    pub request: ApprovalRequest,
}

/// `type:"exec"`: authenticated by HMAC; `request_json` is parsed only after it verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecFrame {
    pub id: String,
    pub nonce: String,
    pub ts: i64,
    pub hmac: String,
    /// The exact envelope string the HMAC covers. Never re-serialised.
    pub request_json: String,
}

/// The decoded `requestJson` of an `exec`. The node host sends `null` for absent values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRequest {
    pub command: Vec<String>,
    #[serde(default)]
    pub raw_command: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub needs_screen_recording: Option<bool>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub session_key: Option<String>,
    #[serde(default)]
    pub approval_decision: Option<String>,
    #[serde(default)]
    pub approval_source: Option<String>,
}

impl ExecRequest {
    /// Parses the verified `requestJson`; an empty argv is malformed.
    pub fn parse(request_json: &str) -> Result<Self, RejectReason> {
        let req: ExecRequest =
            serde_json::from_str(request_json).map_err(|_| RejectReason::Json)?;
        if req.command.is_empty() {
            return Err(RejectReason::Json);
        }
        Ok(req)
    }
}

/// One inbound frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Request(Box<RequestFrame>),
    Exec(ExecFrame),
    /// Ours: how a node's run ended (`super::outcome`).
    Outcome(Box<super::outcome::OutcomeFrame>),
    /// Ours: the egress proxy asks about a destination no rule covers (`super::egress_ask`).
    EgressAsk(
        Box<(
            crate::policy::egress_ask::AskFrame,
            crate::policy::egress::DestHost,
        )>,
    ),
}

/// A frame that could not be decoded; `id` is echoed when it could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame {
    pub id: Option<String>,
    pub kind: FrameKind,
    pub reason: RejectReason,
}

/// Which reply shape a client understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameKind {
    Request,
    Exec,
    /// Unknown: answer in both shapes so any client gets an explicit deny.
    Unknown,
}

/// Every field a frame of either type may carry; validated per type after decoding.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFrame {
    #[serde(rename = "type")]
    ty: Option<String>,
    id: Option<serde_json::Value>,
    token: Option<String>,
    request: Option<ApprovalRequest>,
    nonce: Option<String>,
    ts: Option<serde_json::Number>,
    hmac: Option<String>,
    request_json: Option<String>,
    outcome: Option<serde_json::Value>,
}

fn id_string(v: Option<serde_json::Value>) -> Option<String> {
    match v {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// Best-effort `type`/`id` of a line whose full decode failed, to answer in the right shape.
fn salvage(line: &[u8]) -> (Option<String>, FrameKind) {
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "type")]
        ty: Option<serde_json::Value>,
        id: Option<serde_json::Value>,
    }
    match serde_json::from_slice::<Head>(line) {
        Ok(h) => {
            let kind = match h.ty.as_ref().and_then(|t| t.as_str()) {
                Some("request") => FrameKind::Request,
                Some("exec") => FrameKind::Exec,
                _ => FrameKind::Unknown,
            };
            (id_string(h.id), kind)
        }
        Err(_) => (None, FrameKind::Unknown),
    }
}

/// Decodes one line (without its `\n`).
pub fn parse_frame(line: &[u8]) -> Result<Frame, BadFrame> {
    let raw: RawFrame = match serde_json::from_slice(line) {
        Ok(r) => r,
        Err(_) => {
            let (id, kind) = salvage(line);
            return Err(BadFrame {
                id,
                kind,
                reason: RejectReason::Json,
            });
        }
    };
    let id = id_string(raw.id);
    let bad = |kind, reason| BadFrame {
        id: id.clone(),
        kind,
        reason,
    };
    match raw.ty.as_deref() {
        Some("request") => {
            let (Some(token), Some(request)) = (raw.token, raw.request) else {
                return Err(bad(FrameKind::Request, RejectReason::Json));
            };
            Ok(Frame::Request(Box::new(RequestFrame {
                id: id.clone().unwrap_or_default(),
                token,
                request,
            })))
        }
        Some("exec") => {
            let ts = raw.ts.as_ref().and_then(|n| n.as_i64());
            let (Some(nonce), Some(ts), Some(hmac), Some(request_json)) =
                (raw.nonce, ts, raw.hmac, raw.request_json)
            else {
                return Err(bad(FrameKind::Exec, RejectReason::Json));
            };
            Ok(Frame::Exec(ExecFrame {
                id: id.clone().unwrap_or_default(),
                nonce,
                ts,
                hmac,
                request_json,
            }))
        }
        // Its own strict parser and size cap (`policy::egress_ask`), not the lenient shape above.
        Some("egress-ask") => crate::policy::egress_ask::parse_ask(line)
            .map(|f| Frame::EgressAsk(Box::new(f)))
            .map_err(|e| {
                let reason = match e {
                    crate::policy::egress_ask::AskError::TooLarge(_) => RejectReason::TooLarge,
                    _ => RejectReason::Json,
                };
                bad(FrameKind::Request, reason)
            }),
        Some("outcome") => super::outcome::parse(id.clone(), raw.token, raw.outcome)
            .map(|f| Frame::Outcome(Box::new(f)))
            .ok_or_else(|| bad(FrameKind::Request, RejectReason::Json)),
        _ => Err(bad(FrameKind::Unknown, RejectReason::UnknownType)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR: &str = r#"{"type":"exec","id":"69836861-a619-4613-b829-eede743b03ce","nonce":"fa300b0eac5884d0fb5efdae3b4d86fa","ts":1795643441603,"hmac":"27dd954eaecee8b2a6e3dcdb8fa29ab60c861ada9c000aa23ddb23c4d6e626f1","requestJson":"{\"command\":[\"/usr/bin/uname\",\"-s\"],\"rawCommand\":\"/usr/bin/uname -s\",\"cwd\":\"/tmp\",\"env\":{\"FOO\":\"bar\"},\"timeoutMs\":5000,\"needsScreenRecording\":false,\"agentId\":\"main\",\"sessionKey\":\"agent:main:main\",\"approvalDecision\":null}"}"#;

    #[test]
    fn parses_the_protocol_request_example() {
        let line = br#"{"type":"request","token":"tok123","id":"b4f89939-52d5-499a-bce4-0b727d73df1e","request":{"command":"rm -rf /tmp/x && ls | wc -l","cwd":"/tmp","host":"node","security":"allowlist","ask":"on-miss","agentId":"main","resolvedPath":"/usr/bin/rm","sessionKey":"agent:main:main"}}"#;
        let Ok(Frame::Request(f)) = parse_frame(line) else {
            panic!("not a request")
        };
        assert_eq!(f.token, "tok123");
        assert_eq!(f.request.command, "rm -rf /tmp/x && ls | wc -l");
        assert_eq!(f.request.resolved_path.as_deref(), Some("/usr/bin/rm"));
        assert_eq!(f.request.agent_id.as_deref(), Some("main"));
    }

    #[test]
    fn exec_keeps_request_json_verbatim() {
        let Ok(Frame::Exec(f)) = parse_frame(VECTOR.as_bytes()) else {
            panic!("not exec")
        };
        assert_eq!(f.ts, 1_795_643_441_603);
        assert!(f
            .request_json
            .starts_with(r#"{"command":["/usr/bin/uname","-s"],"rawCommand""#));
        let req = ExecRequest::parse(&f.request_json).expect("requestJson");
        assert_eq!(req.command, vec!["/usr/bin/uname", "-s"]);
        assert_eq!(req.timeout_ms, Some(5000));
        assert_eq!(
            req.env
                .as_ref()
                .and_then(|e| e.get("FOO"))
                .map(String::as_str),
            Some("bar")
        );
    }

    #[test]
    fn null_fields_from_the_node_host_are_accepted() {
        let rj = r#"{"command":["/bin/ls"],"rawCommand":null,"cwd":null,"env":null,"timeoutMs":null,"needsScreenRecording":false,"agentId":null,"sessionKey":null,"approvalDecision":null}"#;
        let req = ExecRequest::parse(rj).expect("parses");
        assert_eq!(req.cwd, None);
        assert_eq!(
            ExecRequest::parse(r#"{"command":[]}"#),
            Err(RejectReason::Json)
        );
    }

    #[test]
    fn bad_frames_get_precise_reasons() {
        let e = parse_frame(b"{not json").expect_err("json");
        assert_eq!((e.reason, e.kind), (RejectReason::Json, FrameKind::Unknown));
        let e = parse_frame(br#"{"type":"hello","id":"x"}"#).expect_err("type");
        assert_eq!(e.reason, RejectReason::UnknownType);
        assert_eq!(e.id.as_deref(), Some("x"));
        let e = parse_frame(br#"{"type":"exec","id":"y","nonce":"n"}"#).expect_err("fields");
        assert_eq!((e.reason, e.kind), (RejectReason::Json, FrameKind::Exec));
        let e = parse_frame(br#"{"type":"request","id":"z","token":5}"#).expect_err("token");
        assert_eq!((e.reason, e.kind), (RejectReason::Json, FrameKind::Request));
    }
}
