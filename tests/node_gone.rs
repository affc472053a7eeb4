//! An approval whose requester is gone does not run, at the node door as at the socket door
//! (tests/socket_gone.rs, same helper): the gateway connection an invoke came on drops while
//! a person decides (a gateway restart), and the request is cancelled `requester-gone`,
//! whether the node decides itself or asks the sidecar.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::path::Path;
use std::time::Duration;
use support::node::*;

const TOKEN: &str = "node-gone-token-0123456789abcdefgh";

/// The node gets a gated `touch` from a gateway that then drops; the pending entry in
/// `inbox_state` must be cancelled as gone and nothing run.
fn gateway_drops_while_a_person_decides(
    dir: &Path,
    inbox_state: &Path,
    audit: &Path,
    extra: &[&str],
) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let target = ws.join("made-after-gone");
    let params = json!({"command":["/usr/bin/touch", target],"agentId":"main",
        "sessionKey":"agent:main:main","runId":"run-gone"});
    let gw = OneInvokeGateway::start(params);
    let node = NodeProc::start_at(dir, gw.port, &dir.join("node-state"), &ws, extra);
    let e = wait_until("a pending entry", Duration::from_secs(60), || {
        let made = inbox_state.join("inbox.db").exists();
        made.then(|| inbox_list(inbox_state, &[]).into_iter().next())?
    });
    let id = e["id"].as_str().expect("id").to_owned();
    gw.drop_connection();
    expect_requester_gone(inbox_state, audit, &id, &target, Duration::from_secs(10));
    drop(node);
}

#[test]
fn laptop_mode_cancels_when_the_gateway_drops() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("node-state");
    gateway_drops_while_a_person_decides(dir.path(), &state, &state.join("audit.jsonl"), &[]);
}

#[test]
fn deployment_mode_cancels_at_the_sidecar_when_the_gateway_drops() {
    let w = World::full(TOKEN);
    let _serve = Serve::start(&w, &[], &[]);
    let (sock, oc) = (
        w.socket().to_str().expect("utf8").to_owned(),
        w.oc_state.to_str().expect("utf8").to_owned(),
    );
    let dir = w.tmp.path().join("node");
    std::fs::create_dir_all(&dir).expect("dir");
    gateway_drops_while_a_person_decides(
        &dir,
        &w.guard_state,
        &w.audit_path(),
        &["--decider", &sock, "--openclaw-state", &oc],
    );
}
