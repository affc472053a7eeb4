//! Recipe A (docs/openclaw-protocol.md §5): the REAL `requestExecApprovalViaSocket` of OpenClaw
//! 2026.9.6 (SQLite era) and 2026.7.35 (JSON era) against the real `serve` binary: allow,
//! deny, ask→approved through the `inbox approve` CLI (also allow-always, written back into
//! OpenClaw's own document), ask→timeout (an explicit deny, never null), wrong token.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::Duration;
use support::socket::*;

const TOKEN: &str = "recipe-a-token-0123456789abcdefgh";

/// Waits for exactly one pending entry and returns its id. The real Node client needs
/// several seconds just to load OpenClaw on a loaded 2-core machine before it connects.
fn wait_pending(w: &World) -> String {
    let ids = wait_pending_ids(w, Duration::from_secs(40));
    assert_eq!(ids.len(), 1, "one pending request expected: {ids:?}");
    ids[0].clone()
}

fn ask(
    version: &'static str,
    w: &World,
    command: &str,
    timeout_ms: u64,
) -> std::thread::JoinHandle<serde_json::Value> {
    let sock = w.socket();
    let req = json!({"command": command, "cwd": w.home, "agentId": "main", "sessionKey": "agent:main:main",
                     "security": "allowlist", "ask": "on-miss"});
    std::thread::spawn(move || real_request(version, &sock, TOKEN, &req, timeout_ms))
}

fn run_basic(version: &'static str) {
    let w = World::new(version, TOKEN, &["/usr/bin/uname"]);
    let _serve = Serve::start(&w, &[], &[]);
    let sock = w.socket();
    let req = |cmd: &str| json!({"command": cmd, "cwd": "/usr", "agentId": "main"});

    assert_eq!(
        real_request(version, &sock, TOKEN, &req("ls"), 5000),
        json!("allow-once")
    );
    let ssh = format!("cat {}/.ssh/id_rsa", w.home.display());
    assert_eq!(
        real_request(version, &sock, TOKEN, &req(&ssh), 5000),
        json!("deny")
    );
    assert_eq!(
        real_request(version, &sock, TOKEN, &req("cat ~/.ssh/id_rsa"), 5000),
        json!("deny")
    );
    assert_eq!(
        real_request(version, &sock, "not-the-token", &req("ls"), 5000),
        json!("deny")
    );

    let audit = audit_with(&w, &["sensitive-path", "\"reason\":\"token\""]);
    assert!(
        !audit.contains(TOKEN),
        "the token never reaches the audit log"
    );
}

#[test]
fn real_client_allow_and_deny_sqlite_era() {
    run_basic(NEW);
}

#[test]
fn real_client_allow_and_deny_json_era() {
    let w = World::new(OLD, TOKEN, &[]);
    assert!(
        w.oc_state.join("exec-approvals.json").is_file(),
        "2026.7.35 stores the JSON document"
    );
    drop(w);
    run_basic(OLD);
}

#[test]
fn real_client_ask_approved_then_allow_always_persisted() {
    let w = World::new(NEW, TOKEN, &[]);
    let serve = Serve::start(&w, &[], &[]);
    let state = w.guard_state.to_str().expect("utf8").to_owned();
    let target = w.home.join("made-by-test");
    let cmd = format!("touch {}", target.display());

    let client = ask(NEW, &w, &cmd, 15_000);
    let id = wait_pending(&w);
    let (code, out, err) = guard_cli(&["inbox", "approve", &id, "--state-dir", &state], &[]);
    assert_eq!(code, 0, "approve: {out}{err}");
    assert_eq!(client.join().expect("client"), json!("allow-once"));

    // Same command again: still gated (allow-once grants nothing lasting); approve always.
    let client = ask(NEW, &w, &cmd, 15_000);
    let id = wait_pending(&w);
    let (code, out, err) = guard_cli(
        &["inbox", "approve", &id, "--always", "--state-dir", &state],
        &[],
    );
    assert_eq!(code, 0, "approve --always: {out}{err}");
    assert_eq!(client.join().expect("client"), json!("allow-always"));

    // The entry is in OpenClaw's own store, in OpenClaw's format, as the real CLI reads it.
    let got = openclaw_cli(NEW, &w.home, &w.oc_state, &["approvals", "get", "--json"]);
    assert!(
        got.contains("sha256:cwd-argv:v1:"),
        "allow-always entry missing: {got}"
    );
    assert!(got.contains("allow-always"), "{got}");
    assert!(
        got.contains("/usr/bin/touch") || got.contains("/bin/touch"),
        "{got}"
    );

    // The third time the grant lifts the gate: no human needed.
    let third = ask(NEW, &w, &cmd, 15_000).join().expect("client");
    assert_eq!(third, json!("allow-once"), "{}", serve.log());
}

#[test]
fn real_client_ask_timeout_gets_an_explicit_deny() {
    let w = World::new(NEW, TOKEN, &[]);
    let cfg = w.write_config("[deadlines]\nrequest_ms = 4000\nmargin_ms = 1000\n");
    let _serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let cmd = format!("touch {}/never", w.home.display());
    // The client's own timeout is 4 s; the guard's fallback answers ~1 s earlier. Had it
    // answered later (or not at all), the real client would have returned null.
    let got = ask(NEW, &w, &cmd, 4_000).join().expect("client");
    assert_eq!(
        got,
        json!("deny"),
        "the real client must get a deny, not null"
    );
    let (_, out, _) = guard_cli(
        &[
            "inbox",
            "list",
            "--state",
            "all",
            "--json",
            "--state-dir",
            w.guard_state.to_str().expect("utf8"),
        ],
        &[],
    );
    assert!(
        out.contains("expired") && out.contains("approval-timeout"),
        "{out}"
    );
}
