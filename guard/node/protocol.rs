//! The gateway's node protocol as this node speaks it (docs/openclaw-linux-exec.md §A,
//! docs/openclaw-protocol.md §3): the connect request, the invoke request and its params, and
//! the `node.invoke.result` / `node.event` frames in the exact shapes the built-in node host
//! sends.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The commands this node declares (and the only ones it answers).
pub const COMMANDS: [&str; 4] = [
    "system.run",
    "system.run.prepare",
    "system.which",
    "system.execApprovals.get",
];

/// `exec.finished` / `exec.denied` keep the last this many characters of the output.
pub const OUTPUT_EVENT_TAIL: usize = 20_000;

/// The node's self-description in `connect` (fixed values OpenClaw checks).
pub const CLIENT_ID: &str = "node-host";
pub const CLIENT_MODE: &str = "node";
pub const ROLE: &str = "node";
pub const PLATFORM: &str = "linux";
pub const DEVICE_FAMILY: &str = "Linux";

/// `event node.invoke.request`'s payload.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvokeRequest {
    pub id: String,
    #[serde(default)]
    pub node_id: Option<String>,
    pub command: String,
    #[serde(default, rename = "paramsJSON")]
    pub params_json: Option<String>,
    /// How long the gateway waits for our result.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `system.run` / `system.run.prepare` params. `approved`, `approvalDecision` and
/// `approvalSource` are read only to be ignored (never trusted): they are not fields here.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunParams {
    #[serde(default)]
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
    pub agent_id: Option<String>,
    #[serde(default)]
    pub session_key: Option<String>,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub system_run_plan: Option<RunPlan>,
    #[serde(default)]
    pub suppress_notify_on_exit: Option<bool>,
}

/// The plan `system.run.prepare` binds and `system.run` carries back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    pub argv: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub command_text: Option<String>,
    #[serde(default)]
    pub command_preview: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub session_key: Option<String>,
}

/// The `system.run` result payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPayload {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub error: Option<String>,
}

/// The answer to one invoke: a JSON payload or an error code and message.
#[derive(Debug, Clone, PartialEq)]
pub enum InvokeAnswer {
    Ok(Value),
    Err { code: String, message: String },
}

impl InvokeAnswer {
    pub fn invalid(message: &str) -> Self {
        InvokeAnswer::Err {
            code: "INVALID_REQUEST".into(),
            message: format!("INVALID_REQUEST: {message}"),
        }
    }

    pub fn denied(message: &str) -> Self {
        InvokeAnswer::Err {
            code: "SYSTEM_RUN_DENIED".into(),
            message: format!("SYSTEM_RUN_DENIED: {message}"),
        }
    }
}

/// A request frame to the gateway.
pub fn req(id: &str, method: &str, params: Value) -> String {
    json!({"type":"req","id":id,"method":method,"params":params}).to_string()
}

/// `node.invoke.result` params for an answer.
pub fn invoke_result(invoke_id: &str, node_id: &str, answer: &InvokeAnswer) -> Value {
    match answer {
        InvokeAnswer::Ok(payload) => json!({"id":invoke_id,"nodeId":node_id,"ok":true,
                                            "payloadJSON":payload.to_string()}),
        InvokeAnswer::Err { code, message } => json!({"id":invoke_id,"nodeId":node_id,"ok":false,
                                                      "error":{"code":code,"message":message}}),
    }
}

/// `node.event` params.
pub fn node_event(event: &str, payload: &Value) -> Value {
    json!({"event":event,"payloadJSON":payload.to_string()})
}

/// The built-in's event tail: trimmed, and past the limit `... (truncated) ` + the last
/// [`OUTPUT_EVENT_TAIL`] characters.
pub fn event_output(raw: &str) -> String {
    let t = raw.trim();
    let n = t.chars().count();
    if n <= OUTPUT_EVENT_TAIL {
        return t.to_owned();
    }
    let tail: String = t.chars().skip(n - OUTPUT_EVENT_TAIL).collect();
    format!("... (truncated) {tail}")
}

/// What identifies one run in its lifecycle events.
pub struct RunContext<'a> {
    pub session_key: Option<&'a str>,
    pub run_id: &'a str,
    pub command: &'a str,
    pub suppress_notify_on_exit: bool,
}

/// `exec.finished`: stdout, stderr and error joined by newlines, as the built-in does.
pub fn exec_finished(c: &RunContext<'_>, r: &RunPayload) -> Value {
    let combined: Vec<&str> = [r.stdout.as_str(), r.stderr.as_str()]
        .into_iter()
        .chain(r.error.as_deref())
        .filter(|s| !s.is_empty())
        .collect();
    let mut v = json!({"sessionKey":c.session_key,"runId":c.run_id,"host":"node",
        "command":c.command,"timedOut":r.timed_out,"success":r.success,
        "output":event_output(&combined.join("\n")),
        "suppressNotifyOnExit":c.suppress_notify_on_exit});
    if let Some(code) = r.exit_code {
        v["exitCode"] = json!(code);
    }
    v
}

/// `exec.denied`.
pub fn exec_denied(c: &RunContext<'_>, reason: &str) -> Value {
    json!({"sessionKey":c.session_key,"runId":c.run_id,"host":"node","command":c.command,
           "reason":reason,"suppressNotifyOnExit":c.suppress_notify_on_exit})
}

/// The `connect` params (v4), the device proof already computed by the caller.
pub struct ConnectInfo<'a> {
    pub display_name: &'a str,
    pub device_id: &'a str,
    pub public_key: &'a str,
    pub signature: &'a str,
    pub signed_at_ms: u64,
    pub nonce: &'a str,
    pub token: &'a str,
    pub path_env: &'a str,
}

pub fn connect_params(c: &ConnectInfo<'_>) -> Value {
    json!({"minProtocol":3,"maxProtocol":4,
        "client":{"id":CLIENT_ID,"displayName":c.display_name,"version":env!("CARGO_PKG_VERSION"),
                  "platform":PLATFORM,"deviceFamily":DEVICE_FAMILY,"mode":CLIENT_MODE,
                  "instanceId":c.device_id},
        "role":ROLE,"scopes":[],"caps":["system"],"commands":COMMANDS,"pathEnv":c.path_env,
        "auth":{"token":c.token},
        "device":{"id":c.device_id,"publicKey":c.public_key,"signature":c.signature,
                  "signedAt":c.signed_at_ms,"nonce":c.nonce}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verified_invoke_request_parses_and_approval_flags_are_dropped() {
        let ev = r#"{"id":"inv1","nodeId":"n","command":"system.run","paramsJSON":"{\"command\":[\"/bin/sh\",\"-lc\",\"echo approved-run\"],\"rawCommand\":\"echo approved-run\",\"systemRunPlan\":{\"argv\":[\"/bin/sh\",\"-lc\",\"echo approved-run\"],\"cwd\":null,\"commandText\":\"echo approved-run\",\"commandPreview\":null,\"agentId\":\"main\",\"sessionKey\":\"agent:main:t11\"},\"timeoutMs\":1800000,\"agentId\":\"main\",\"sessionKey\":\"agent:main:t11\",\"runId\":\"r\",\"approved\":true,\"approvalDecision\":\"allow-once\"}","timeoutMs":1804933,"idempotencyKey":"k"}"#;
        let inv: InvokeRequest = serde_json::from_str(ev).expect("invoke");
        assert_eq!(inv.timeout_ms, Some(1_804_933));
        let p: RunParams =
            serde_json::from_str(inv.params_json.as_deref().expect("params")).expect("params");
        assert_eq!(p.command, ["/bin/sh", "-lc", "echo approved-run"]);
        assert_eq!(p.system_run_plan.expect("plan").argv, p.command);
        assert_eq!(p.timeout_ms, Some(1_800_000));
    }

    #[test]
    fn results_and_events_have_the_builtin_shapes() {
        let r = invoke_result("i", "n", &InvokeAnswer::denied("blocked (x)"));
        assert_eq!(r["ok"], false);
        assert_eq!(r["error"]["code"], "SYSTEM_RUN_DENIED");
        assert_eq!(r["error"]["message"], "SYSTEM_RUN_DENIED: blocked (x)");
        let ok = invoke_result("i", "n", &InvokeAnswer::Ok(json!({"a":1})));
        assert_eq!(ok["payloadJSON"], "{\"a\":1}");
        let c = RunContext {
            session_key: Some("s"),
            run_id: "r",
            command: "ls",
            suppress_notify_on_exit: false,
        };
        let payload = RunPayload {
            exit_code: Some(0),
            success: true,
            stdout: "out\n".into(),
            stderr: "err".into(),
            ..Default::default()
        };
        let f = exec_finished(&c, &payload);
        assert_eq!(f["output"], "out\n\nerr");
        assert_eq!(f["exitCode"], 0);
        assert_eq!(
            exec_denied(&c, "sensitive-path")["reason"],
            "sensitive-path"
        );
    }

    #[test]
    fn event_output_keeps_the_tail() {
        let long = format!("HEAD{}TAIL", "x".repeat(OUTPUT_EVENT_TAIL));
        let t = event_output(&long);
        assert!(t.starts_with("... (truncated) "));
        assert!(t.ends_with("TAIL"));
        assert!(!t.contains("HEAD"));
        assert_eq!(
            t.chars().count(),
            OUTPUT_EVENT_TAIL + "... (truncated) ".len()
        );
        assert_eq!(event_output("  short \n"), "short");
    }
}
