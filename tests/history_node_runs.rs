//! History tells what happened, whichever door a run came through: a node's run (decided by
//! the sidecar `serve`, run and reported by the node) shows its outcome in `/api/requests`
//! (exit code, duration, output digest) from the `exec-outcome` record, and a person's deny
//! reaches the agent as "denied by <who>: <reason>", not as a policy block.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::inproc::{events_of, result_of, InProc};
use support::web::{Login, Web, TOKEN};

/// One `system.run` of `cmd` through the in-process node, on its own thread and runtime.
fn run_on_node(
    n: &std::sync::Arc<InProc>,
    cmd: &str,
) -> std::thread::JoinHandle<Vec<(String, Value)>> {
    let (n, cmd) = (n.clone(), cmd.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        rt.block_on(n.invoke(
            "system.run",
            &json!({"command":["/bin/sh","-lc",cmd]}),
            60_000,
        ))
    })
}

/// The pending entry whose shell text is `cmd`.
fn wait_pending_cmd(w: &Web, me: &Login, cmd: &str) -> Value {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Some(e) = w
            .pending(me)
            .into_iter()
            .find(|e| e["action"]["argv"][2] == cmd)
        {
            return e;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{cmd} never pending:\n{}", w.serve.log());
}

/// The entry `id` among every request, once its run (if any) is on record.
fn entry(w: &Web, me: &Login, id: &str) -> Value {
    let r = w.call("GET", "/api/requests?state=all", Some(me), None);
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no entry {id}"))
}

#[test]
fn node_runs_show_their_outcome_and_a_persons_deny_names_them() {
    let w = Web::start(60_000);
    let me = w.login();
    let n = std::sync::Arc::new(InProc::remote_with_token(w.world.socket(), TOKEN));

    // Approved by a person on the web page: the node runs it and reports the outcome.
    let cmd = "echo ran-on-node > sub/approved.txt; echo done";
    let call = run_on_node(&n, cmd);
    let e = wait_pending_cmd(&w, &me, cmd);
    assert_eq!(e["source"], "node", "{e}");
    let id = e["id"].as_str().expect("id").to_owned();
    let r = w.decide(
        &me,
        &id,
        json!({"decision":"allow-once","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let frames = call.join().expect("node");
    assert_eq!(result_of(&frames)["ok"], true, "{frames:?}");
    let start = Instant::now();
    let e = loop {
        let e = entry(&w, &me, &id);
        if !e["run"].is_null() || start.elapsed() > Duration::from_secs(20) {
            break e;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let run = &e["run"];
    assert!(
        !run.is_null(),
        "the node's exec-outcome joins the entry: {e}\n{}",
        w.audit()
    );
    assert_eq!(run["exitCode"], 0, "{run}");
    assert_eq!(run["success"], true, "{run}");
    assert!(run["durationMs"].is_u64(), "{run}");
    let digest = run["outputSha256"].as_str().unwrap_or("");
    assert_eq!(digest.len(), 64, "{run}");
    assert_eq!(digest, sha256_hex("done\n"), "{run}");

    // Denied by a person with a reason: the agent is told who and why.
    let cmd = "echo no > sub/denied.txt";
    let call = run_on_node(&n, cmd);
    let e = wait_pending_cmd(&w, &me, cmd);
    let id = e["id"].as_str().expect("id").to_owned();
    let r = w.decide(
        &me,
        &id,
        json!({"decision":"deny","reason":"not on a Friday","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let frames = call.join().expect("node");
    let res = result_of(&frames);
    assert_eq!(res["ok"], false, "{res}");
    let msg = res["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("SYSTEM_RUN_DENIED: denied by web:") && msg.ends_with(": not on a Friday"),
        "{msg}"
    );
    assert!(!msg.contains("blocked by sanctum-guard"), "{msg}");
    assert!(!msg.contains('@'), "no address reaches the agent: {msg}");
    // The exec.denied event keeps the reason as given.
    let ev = events_of(&frames);
    assert!(ev.iter().any(|(name, _)| name == "exec.denied"), "{ev:?}");
    assert!(!n.workspace.join("sub/denied.txt").exists());
    // A denied entry has no run.
    assert!(entry(&w, &me, &id)["run"].is_null());
}

fn sha256_hex(s: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(s.as_bytes()))
}
