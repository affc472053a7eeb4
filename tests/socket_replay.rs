//! A captured `exec` frame must not run again after the guard restarts. The
//! frame is captured (sent once, accepted), the real `serve` is restarted (gracefully and by
//! kill -9), and the same bytes are replayed inside the ±10 s window: `replay`, and nothing
//! runs a second time.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use support::socket::*;

const TOKEN: &str = "replay-test-token-0123456789abcd";

/// An `exec` frame that appends a line to `marker` (so each run is counted).
fn appending_frame(marker: &Path, cwd: &Path, ts: i64) -> String {
    let script = format!("echo ran >> {}", marker.display());
    let argv = ["/bin/sh", "-c", script.as_str()];
    let rj = json!({"command":argv,"rawCommand":script,"cwd":cwd,"env":null,
        "timeoutMs":5000,"needsScreenRecording":false,"agentId":"main",
        "sessionKey":"agent:main:main","approvalDecision":null})
    .to_string();
    exec_line(TOKEN, &fresh_nonce(), ts, &rj)
}

/// An autonomous `exec` frame (nothing to approve).
fn echo_frame(cwd: &Path, ts: i64) -> String {
    let rj = json!({"command":["/bin/echo","hi"],"rawCommand":"/bin/echo hi","cwd":cwd,
        "env":null,"timeoutMs":5000,"needsScreenRecording":false,"agentId":"main",
        "sessionKey":"agent:main:main","approvalDecision":null})
    .to_string();
    exec_line(TOKEN, &fresh_nonce(), ts, &rj)
}

fn reason(v: &serde_json::Value) -> &str {
    v["error"]["reason"].as_str().unwrap_or("")
}

#[test]
fn a_captured_exec_frame_does_not_replay_after_a_restart() {
    let w = World::new(NEW, TOKEN, &[]);
    // Both restarts: a clean stop, and a crash (kill -9: nothing flushed at exit).
    for crash in [false, true] {
        let mut serve = Serve::start(&w, &[], &[]);
        // Captured frames: one dated now, one dated 8 s ahead (a skewed signer; still
        // inside the window after the restart), and an autonomous one.
        let captured = [
            echo_frame(&w.home, now_ms()),
            echo_frame(&w.home, now_ms() + 8_000),
        ];
        for line in &captured {
            let v = send_line(&w.socket(), line);
            assert_eq!(v["ok"], true, "the original is accepted: {v}");
            let again = send_line(&w.socket(), line);
            assert_eq!(reason(&again), "replay", "same process: {again}");
        }
        if crash {
            serve.child.kill9();
        } else {
            assert_eq!(serve.stop(), Some(0));
        }
        let _serve = Serve::start(&w, &[], &[]);
        for line in &captured {
            let v = send_line(&w.socket(), line);
            assert_eq!(
                v["ok"], false,
                "replayed after restart (crash={crash}): {v}"
            );
            assert_eq!(reason(&v), "replay", "{v}");
            assert_eq!(v["error"]["code"], "INVALID_REQUEST");
        }
        // A fresh frame still works.
        let v = send_line(&w.socket(), &echo_frame(&w.home, now_ms()));
        assert_eq!(v["ok"], true, "{v}");
        audit_with(&w, &["\"reason\":\"replay\""]);
    }
    let journal = w.guard_state.join("replay-nonces");
    assert_eq!(
        std::fs::metadata(&journal).expect("journal").mode() & 0o777,
        0o600
    );
}

#[test]
fn a_frame_signed_before_the_guard_started_is_refused() {
    let w = World::new(NEW, TOKEN, &[]);
    // Signed (captured) while no guard ran, e.g. in the gap of a restart: never sent to the
    // new process before, but it could have been accepted by the old one.
    let line = echo_frame(&w.home, now_ms());
    std::thread::sleep(std::time::Duration::from_millis(50));
    let _serve = Serve::start(&w, &[], &[]);
    let v = send_line(&w.socket(), &line);
    assert_eq!(reason(&v), "replay", "{v}");
    // Older than the window: `ttl` as before, and nothing runs.
    let marker = w.home.join("never.txt");
    let gated = appending_frame(&marker, &w.home, now_ms() - 60_000);
    let v = send_line(&w.socket(), &gated);
    assert_eq!(reason(&v), "ttl", "{v}");
    assert!(!marker.exists());
}
