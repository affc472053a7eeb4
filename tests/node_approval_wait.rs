//! `connected as node` is not usable until a person approves the node's commands: against
//! the real gateway on loopback, the node says it waits for `openclaw nodes approve
//! <requestId>` naming the real request (the one `openclaw nodes pending` lists), and says
//! when the approval came; `doctor` reports the same.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::Duration;
use support::node::*;

#[test]
fn the_node_names_the_approval_it_waits_for() {
    let _one = one_gateway_at_a_time();
    let dir = tempfile::Builder::new()
        .prefix("sg-wait-")
        .tempdir()
        .expect("tmp");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let gw = Gateway::start(dir.path(), 9, json!({}));
    let node = NodeProc::start(dir.path(), &gw, &dir.path().join("node-state"), &ws, &[]);
    let log = node.wait_log("openclaw nodes approve ", Duration::from_secs(120));
    let said = log
        .lines()
        .find_map(|l| {
            l.split("openclaw nodes approve ")
                .nth(1)?
                .split('`')
                .next()
                .map(str::to_owned)
        })
        .expect("a request id");
    assert!(log.contains("not usable yet"), "{log}");
    // The id the node printed is the one the operator CLI lists.
    let (_, out) = gw.cli(&["nodes", "pending", "--json"]);
    let at = out.find(['[', '{']).expect("json");
    let v: Value = serde_json::from_str(out[at..].trim()).expect("pending json");
    let listed = v
        .get(0)
        .or_else(|| v["pending"].get(0))
        .and_then(|p| p["requestId"].as_str())
        .expect("a pending request")
        .to_owned();
    assert_eq!(said, listed, "{log}");
    // doctor reads what the node saw: connected, not approved, and which request.
    let doctor = || {
        let state = dir.path().join("node-state");
        let (_, out, err) = guard_cli(
            &["doctor"],
            &[
                ("SANCTUM_STATE_DIR", state.to_str().expect("utf8")),
                ("SANCTUM_OPENCLAW_STATE", gw.state.to_str().expect("utf8")),
            ],
        );
        format!("{out}{err}")
    };
    let out = doctor();
    assert!(
        out.contains("node connected but not approved for system.run")
            && out.contains(&format!("openclaw nodes approve {said}")),
        "{out}"
    );
    gw.approve_node();
    node.wait_log("commands approved", Duration::from_secs(60));
    let out = doctor();
    assert!(out.contains("node approved for system.run"), "{out}");
}
