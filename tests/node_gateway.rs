//! `sanctum-guard node` with the REAL OpenClaw 2026.9.6 gateway and real agent turns (the
//! scripted model as provider): every agent exec goes to our node and gets the guard's
//! verdict (autonomous runs, gated waits for a person, denied and blocked reach the agent as
//! SYSTEM_RUN_DENIED with the reason), a raw operator `node.invoke` gets the same verdicts
//! whatever approval it claims, and with the node stopped the agent's exec fails (no
//! fallback). Pairing from scratch: the node prints the request, the real CLI approves it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::Duration;
use support::node::*;

const TOKEN: &str = "node-gw-socket-token-0123456789abcd";
const MARKER: &str = "marker-node-4c1d";

fn has(results: &[String], needle: &str) -> bool {
    results.iter().any(|r| r.contains(needle))
}

#[test]
fn agent_execs_go_through_the_guard_node_with_the_guards_verdicts() {
    let _one = one_gateway_at_a_time();
    let w = World::full(TOKEN);
    let dir = w.tmp.path().to_path_buf();
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("sub")).expect("ws");
    // The sidecar's workspace is the node's (one directory: the node's stamp matches).
    let serve = Serve::start(&w, &[], &["--workspace", ws.to_str().expect("utf8")]);
    std::fs::write(ws.join(MARKER), "").expect("marker");
    let (_model, model_port, model_log) = start_model(&dir);
    let gw = Gateway::start(&dir, model_port, json!({}));
    // Deployment mode: the sidecar decides; its socket token comes from OpenClaw's document.
    let oc_state = w.oc_state.to_str().expect("utf8").to_owned();
    let sock = w.socket().to_str().expect("utf8").to_owned();
    let mut node = NodeProc::start(
        &dir,
        &gw,
        &dir.join("node-state"),
        &ws,
        &["--decider", &sock, "--openclaw-state", &oc_state],
    );
    node.wait_log("connected as node", Duration::from_secs(60));
    let node_id = gw.approve_node();
    assert!(node.log().contains(&node_id), "the node printed its id");
    let state = w.guard_state.to_str().expect("utf8").to_owned();

    // Autonomous: runs at once on our node, its output reaches the agent.
    let out = gw.agent_turn("auto", "ls");
    let results = tool_results(&model_log);
    assert!(
        has(&results, MARKER),
        "ls output must reach the agent: {results:?}\n{out}\n{}",
        node.log()
    );
    let audit = audit_with(&w, &["exec-outcome", &node_id]);
    assert!(
        audit.contains("\"source\":\"node\""),
        "the verdict names the node as source"
    );

    // Gated: waits for a person; the file exists only after the approval.
    let approved = ws.join("sub/approved.txt");
    let turn = spawn_collect(gw.agent_cmd("gated", "echo approved > sub/approved.txt"));
    let (id, req) = wait_until("the gated entry", Duration::from_secs(180), || {
        pending(&w.guard_state)
            .into_iter()
            .find(|(_, r)| r["action"]["argv"][2] == "echo approved > sub/approved.txt")
    });
    assert_eq!(req["who"]["source"], "node");
    std::thread::sleep(Duration::from_secs(2));
    assert!(!approved.exists(), "nothing runs before the approval");
    let (code, o, e) = guard_cli(&["inbox", "approve", &id, "--state-dir", &state], &[]);
    assert_eq!(code, 0, "{o}{e}");
    let out = collect(turn);
    assert_eq!(
        std::fs::read_to_string(&approved).unwrap_or_default(),
        "approved\n",
        "{out}\n{}",
        node.log()
    );

    // Denied by the person: no file, the agent gets SYSTEM_RUN_DENIED with the reason.
    let denied = ws.join("sub/denied.txt");
    let turn = spawn_collect(gw.agent_cmd("denied", "echo denied > sub/denied.txt"));
    let (id, _) = wait_until("the second gated entry", Duration::from_secs(180), || {
        pending(&w.guard_state)
            .into_iter()
            .find(|(_, r)| r["action"]["argv"][2] == "echo denied > sub/denied.txt")
    });
    let (code, o, e) = guard_cli(
        &[
            "inbox",
            "deny",
            &id,
            "--reason",
            "not in this repo",
            "--state-dir",
            &state,
        ],
        &[],
    );
    assert_eq!(code, 0, "{o}{e}");
    let out = collect(turn);
    assert!(!denied.exists(), "a denied command never runs");
    let results = tool_results(&model_log);
    assert!(
        has(&results, "SYSTEM_RUN_DENIED: denied by cli:")
            && has(&results, ": not in this repo")
            && !has(&results, "blocked by sanctum-guard (not in this repo)"),
        "the agent sees who denied it and why: {results:?}\n{out}"
    );

    // Blocked: a sensitive read never runs.
    let out = gw.agent_turn("blocked", "cat /etc/shadow");
    let results = tool_results(&model_log);
    assert!(
        has(
            &results,
            "SYSTEM_RUN_DENIED: blocked by sanctum-guard (sensitive-path)"
        ),
        "{results:?}\n{out}"
    );

    // A raw operator node.invoke reaches the node with no approval at all (a forged
    // `approved` is refused by the gateway itself without a live approval record; the node
    // ignores the flag anyway: tests/node_invoke.rs): the guard's verdicts still apply.
    let out = collect(spawn_collect(gw.raw_invoke_cmd(
        &node_id,
        json!({"command":["/bin/sh","-lc","cat /etc/shadow"]}),
        "raw-1",
    )));
    assert!(out.contains("SYSTEM_RUN_DENIED"), "{out}");
    let raw = ws.join("sub/raw.txt");
    let call = spawn_collect(gw.raw_invoke_cmd(
        &node_id,
        json!({"command":["/bin/sh","-lc","echo raw > sub/raw.txt"]}),
        "raw-2",
    ));
    let (id, _) = wait_until("the raw gated entry", Duration::from_secs(120), || {
        pending(&w.guard_state)
            .into_iter()
            .find(|(_, r)| r["action"]["argv"][2] == "echo raw > sub/raw.txt")
    });
    assert!(
        !raw.exists(),
        "an operator's raw call does not run a gated command"
    );
    let (code, o, e) = guard_cli(&["inbox", "deny", &id, "--state-dir", &state], &[]);
    assert_eq!(code, 0, "{o}{e}");
    let out = collect(call);
    assert!(out.contains("SYSTEM_RUN_DENIED"), "{out}");
    assert!(!raw.exists());
    let out = collect(spawn_collect(gw.raw_invoke_cmd(
        &node_id,
        json!({"command":["ls"]}),
        "raw-3",
    )));
    assert!(
        out.contains(MARKER),
        "a raw autonomous run gets the same verdict as the agent's: {out}"
    );

    // Node stopped: the agent's exec fails; the gateway does not run it itself.
    node.child.kill9();
    let nofallback = ws.join("sub/nofallback.txt");
    let out = gw.agent_turn("stopped", &format!("touch {}", nofallback.display()));
    let results = tool_results(&model_log);
    assert!(
        !nofallback.exists(),
        "no fallback to the gateway host: {out}"
    );
    assert!(
        has(&results, "not eligible") || has(&results, "requires a connected node"),
        "{results:?}\n{out}"
    );
    drop(serve);
}

#[test]
fn pairing_from_scratch_prints_the_request_and_connects_after_cli_approval() {
    let _one = one_gateway_at_a_time();
    let dir = tempfile::Builder::new()
        .prefix("sg-pair-")
        .tempdir()
        .expect("tmp");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join(MARKER), "").expect("marker");
    let gw = Gateway::start(
        dir.path(),
        9,
        json!({"gateway":{"nodes":{"pairing":{"autoApproveLocal":false}}}}),
    );
    // Laptop mode: the node decides in-process.
    let node = NodeProc::start(dir.path(), &gw, &dir.path().join("node-state"), &ws, &[]);
    let log = node.wait_log("openclaw devices approve ", Duration::from_secs(60));
    assert!(log.contains("NOT PAIRED"), "{log}");
    assert!(log.contains("openclaw nodes approve"), "{log}");
    let node_id = log
        .lines()
        .find_map(|l| {
            l.strip_prefix("sanctum-guard node: node id")?
                .split_whitespace()
                .next()
        })
        .expect("node id printed")
        .to_owned();
    let rid = log
        .lines()
        .find_map(|l| l.split("openclaw devices approve ").nth(1))
        .expect("request id")
        .trim()
        .to_owned();
    assert!(
        !rid.starts_with('<'),
        "the real request id is printed: {log}"
    );
    let (ok, out) = gw.cli(&["devices", "approve", &rid]);
    assert!(ok, "devices approve: {out}");
    node.wait_log("connected as node", Duration::from_secs(90));
    assert_eq!(gw.approve_node(), node_id);
    let out = wait_until("the node to answer", Duration::from_secs(120), || {
        let out = collect(spawn_collect(gw.raw_invoke_cmd(
            &node_id,
            json!({"command":["ls"]}),
            &format!("p-{}", now_ms()),
        )));
        (!out.contains("awaiting operator approval") && !out.contains("not connected"))
            .then_some(out)
    });
    assert!(out.contains(MARKER), "{out}\n{}", node.log());
    let out = collect(spawn_collect(gw.raw_invoke_cmd(
        &node_id,
        json!({"command":["cat","/etc/shadow"]}),
        "p-blocked",
    )));
    assert!(out.contains("SYSTEM_RUN_DENIED"), "{out}");
}
