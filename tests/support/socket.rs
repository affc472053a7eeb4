//! Clients of the exec-approvals socket: raw exchanges (tests may send anything), `request`
//! lines, `exec` frames signed like the real client, and the REAL OpenClaw client. Re-exports
//! the deployment and process helpers, which every socket test also needs.

pub use super::guard::*;
pub use super::process::*;
pub use super::tools::*;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Sends `bytes` on a fresh connection, half-closes if asked, and reads the whole reply.
pub fn raw_exchange(sock: &Path, bytes: &[u8], half_close: bool) -> String {
    let mut s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s.write_all(bytes).expect("write");
    if half_close {
        s.shutdown(std::net::Shutdown::Write).expect("shutdown");
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Sends one line on a fresh connection, half-closes, and returns the first reply line as JSON.
pub fn send_line(sock: &Path, line: &str) -> serde_json::Value {
    first_json(&raw_exchange(sock, line.as_bytes(), true))
}

/// Sends `request_json` in a freshly signed `exec` frame (new nonce, now); the reply line.
pub fn send_exec(sock: &Path, token: &str, request_json: &str) -> serde_json::Value {
    send_line(
        sock,
        &exec_line(token, &fresh_nonce(), now_ms(), request_json),
    )
}

/// Environment for `serve` that lifts the per-peer rate limit (tests that send many frames).
pub const HIGH_RATE: [(&str, &str); 2] = [
    ("SANCTUM_SOCKET_RATE_PER_SEC", "100000"),
    ("SANCTUM_SOCKET_RATE_BURST", "100000"),
];

/// The first reply line as JSON.
pub fn first_json(reply: &str) -> serde_json::Value {
    let line = reply
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no reply line: {reply:?}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("reply {line:?}: {e}"))
}

/// A `request` frame for agent `main` as OpenClaw's client sends it (allowlist, on-miss), run
/// in `/usr`: a system directory, so a listing of the cwd (`ls`) is a read the guard may let
/// run by itself (in `/tmp`, outside the workspace, it would ask a person).
pub fn request_line(token: &str, id: &str, command: &str) -> String {
    serde_json::json!({"type":"request","token":token,"id":id,
        "request":{"command":command,"cwd":"/usr","agentId":"main","sessionKey":"agent:main:main",
                   "security":"allowlist","ask":"on-miss"}})
    .to_string()
        + "\n"
}

/// An `exec` frame signed like the real client (hex nonce, epoch-ms ts).
pub fn exec_line(token: &str, nonce: &str, ts: i64, request_json: &str) -> String {
    let hmac = sanctum_guard::socket::auth::exec_hmac(token, nonce, ts, request_json);
    serde_json::json!({"type":"exec","id":format!("id-{nonce}"),"nonce":nonce,"ts":ts,
        "hmac":hmac,"requestJson":request_json})
    .to_string()
        + "\n"
}

/// A nonce never used before (hex, like the real client's).
pub fn fresh_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Recipe A: the REAL `requestExecApprovalViaSocket` of `version`; prints its result as JSON.
pub fn real_request(
    version: &str,
    sock: &Path,
    token: &str,
    request: &serde_json::Value,
    timeout_ms: u64,
) -> serde_json::Value {
    let script = format!(
        "import('openclaw/plugin-sdk/infra-runtime').then(async m => {{ \
           const r = await m.requestExecApprovalViaSocket({{socketPath: {}, token: {}, timeoutMs: {}, request: {}}}); \
           process.stdout.write(JSON.stringify({{result: r}})); }})",
        serde_json::Value::String(sock.display().to_string()),
        serde_json::Value::String(token.into()),
        timeout_ms,
        request
    );
    let out = Command::new(node())
        .arg("-e")
        .arg(script)
        .current_dir(openclaw_dir(version))
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "node client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("client output is JSON");
    v["result"].clone()
}
