//! A gated request whose requester went away is cancelled (state
//! `cancelled`, reason `requester-gone`, shown by `inbox list`, audited) and never runs,
//! even if someone approves it afterwards. A half-closed client (OpenClaw 2026.9.6's Node
//! client shuts its write side after sending) is still there and gets its answer.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;
use support::socket::*;

const TOKEN: &str = "gone-test-token-0123456789abcdefg";

fn approve(w: &World, id: &str) -> (i32, String) {
    let (code, out, err) = guard_cli(
        &[
            "inbox",
            "approve",
            id,
            "--state-dir",
            w.guard_state.to_str().expect("utf8"),
        ],
        &[],
    );
    (code, out + &err)
}

fn list_text(w: &World) -> String {
    let (_, out, _) = guard_cli(
        &[
            "inbox",
            "list",
            "--state",
            "all",
            "--state-dir",
            w.guard_state.to_str().expect("utf8"),
        ],
        &[],
    );
    out
}

/// Sends `line` without half-closing, waits for the entry to be pending, then closes.
fn ask_then_vanish(w: &World, line: &str) -> String {
    let mut s = UnixStream::connect(w.socket()).expect("connect");
    s.write_all(line.as_bytes()).expect("write");
    let e = wait_entry(w, "pending", Duration::from_secs(10)).expect("no pending entry");
    drop(s);
    e["id"].as_str().expect("id").to_owned()
}

#[test]
fn a_raw_client_that_closes_cancels_its_request_and_nothing_runs() {
    let w = World::new(NEW, TOKEN, &[]);
    let serve = Serve::start(&w, &[], &[]);
    let target = w.home.join("made-after-gone");
    let t = target.to_str().expect("utf8").to_owned();

    // An `exec` frame (the guard runs it once approved) and a `request` frame.
    let rj = json!({"command":["/usr/bin/touch",t],"rawCommand":format!("/usr/bin/touch {t}"),
        "cwd":w.home,"env":null,"timeoutMs":15000,"needsScreenRecording":false,"agentId":"main",
        "sessionKey":"agent:main:main","approvalDecision":null})
    .to_string();
    let frames = [
        exec_line(TOKEN, &fresh_nonce(), now_ms(), &rj),
        request_line(TOKEN, "r1", &format!("touch {t}")),
    ];
    for line in &frames {
        let id = ask_then_vanish(&w, line);
        expect_requester_gone(
            &w.guard_state,
            &w.audit_path(),
            &id,
            &target,
            Duration::from_secs(5),
        );
    }
    let _ = &serve;
    // `inbox list` shows no countdown on resolved entries.
    for line in list_text(&w).lines() {
        assert!(
            !line.contains("s  exec"),
            "countdown on a resolved entry: {line}"
        );
    }
}

#[test]
fn the_real_node_client_half_closes_and_still_gets_its_approval() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &[], &[]);
    let target = w.home.join("approved-by-test");
    let cmd = format!("touch {}", target.display());
    let req = json!({"command": cmd, "cwd": w.home, "agentId": "main",
                     "sessionKey": "agent:main:main", "security": "allowlist", "ask": "on-miss"});
    let sock = w.socket();
    let r = req.clone();
    let client = std::thread::spawn(move || real_request(NEW, &sock, TOKEN, &r, 15_000));
    let e = wait_entry(&w, "pending", Duration::from_secs(20)).expect("pending");
    // Waiting a few probe intervals: a half-close must not be taken for a departure.
    std::thread::sleep(Duration::from_millis(800));
    let id = e["id"].as_str().expect("id");
    let (code, out) = approve(&w, id);
    assert_eq!(code, 0, "{out}");
    assert_eq!(client.join().expect("client"), json!("allow-once"));

    // The same client giving up (its timeout destroys the socket): cancelled.
    let sock = w.socket();
    let client = std::thread::spawn(move || real_request(NEW, &sock, TOKEN, &req, 2_500));
    assert_eq!(client.join().expect("client"), serde_json::Value::Null);
    let e = wait_entry(&w, "cancelled", Duration::from_secs(5))
        .unwrap_or_else(|| panic!("not cancelled: {:?}", inbox_all(&w)));
    assert_eq!(e["decision"]["reason"], "requester-gone", "{e}");
}
