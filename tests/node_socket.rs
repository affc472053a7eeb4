//! The sidecar's side of `sanctum-guard node`, on the real `serve`: a `request` frame with
//! `source:"node"` is judged by its argv and answered with the reason and the sandbox profile;
//! a gated one waits for a person (the real `inbox approve` CLI) within the node's wait; the
//! `outcome` frame lands in the audit log. Tokens are checked on both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::node::*;

const TOKEN: &str = "node-socket-token-0123456789abcdef";

fn node_request(w: &World, token: &str, id: &str, argv: &[&str], wait_ms: u64) -> String {
    json!({"type":"request","token":token,"id":id,"request":{"command":argv.join(" "),
        "cwd":"/usr","host":"node","agentId":"main","sessionKey":"agent:main:n",
        "commandArgv":argv,"envKeys":[],"source":"node","runId":"run-1","nodeId":"node-x",
        "timeoutMs":wait_ms,
        "nodeVerdict":{"kind":"allow","reasons":[],"workspace":workspace_stamp(w)}}})
    .to_string()
        + "\n"
}

/// The guard's workspace as the node names it (`stat`'s device and inode): the same directory.
fn workspace_stamp(w: &World) -> Value {
    use std::os::unix::fs::MetadataExt;
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(&ws).expect("workspace");
    let m = std::fs::metadata(&ws).expect("stat workspace");
    json!({"dev": m.dev(), "ino": m.ino()})
}

/// What the node saw on its own filesystem counts: the sidecar's answer is never laxer than
/// the node's verdict, and a node that sends none gets no autonomy from the sidecar's view.
#[test]
fn the_nodes_own_verdict_is_a_floor() {
    let w = World::full(TOKEN);
    let _serve = Serve::start(&w, &[], &[]);
    let ask = |line: Value| {
        first_json(&raw_exchange(
            &w.socket(),
            (line.to_string() + "\n").as_bytes(),
            false,
        ))
    };
    let base = |id: &str| -> Value {
        serde_json::from_str(
            node_request(&w, TOKEN, id, &["/bin/sh", "-lc", "ls /usr"], 1_500).trim(),
        )
        .expect("json")
    };
    assert_eq!(
        ask(base("f0"))["decision"],
        "allow-once",
        "the baseline is autonomous"
    );
    let mut deny = base("f1");
    deny["request"]["nodeVerdict"] =
        json!({"kind":"deny","reasons":[{"code":"sensitive-path","message":"a .env here"}]});
    let r = ask(deny);
    assert_eq!(
        (r["decision"].as_str(), r["reason"].as_str()),
        (Some("deny"), Some("sensitive-path")),
        "{r}"
    );
    let mut gated = base("f2");
    gated["request"]["nodeVerdict"] =
        json!({"kind":"ask","reasons":[{"code":"git-config","message":"x"}]});
    let r = ask(gated);
    assert_eq!(
        r["decision"], "deny",
        "nobody answered a gated request: {r}"
    );
    assert_eq!(r["reason"], "approval-timeout", "{r}");
    // A node whose workspace is another directory than this guard's: the guard's view of
    // workspace paths does not count, so nothing is autonomous.
    let mut elsewhere = base("f4");
    elsewhere["request"]["nodeVerdict"]["workspace"]["ino"] = json!(1);
    let r = ask(elsewhere);
    assert_eq!(r["reason"], "approval-timeout", "{r}");
    let mut unstamped = base("f5");
    unstamped["request"]["nodeVerdict"]
        .as_object_mut()
        .expect("obj")
        .remove("workspace");
    let r = ask(unstamped);
    assert_eq!(r["reason"], "approval-timeout", "{r}");
    let mut none = base("f3");
    none["request"]
        .as_object_mut()
        .expect("obj")
        .remove("nodeVerdict");
    let r = ask(none);
    assert_eq!(
        r["reason"], "approval-timeout",
        "no node verdict, no autonomy: {r}"
    );
    audit_with(&w, &["node-facts-missing", "workspace-unverified"]);
}

#[test]
fn node_requests_get_verdicts_with_reason_and_profile() {
    let w = World::full(TOKEN);
    let _serve = Serve::start(&w, &[], &[]);
    let ask = |line: String| first_json(&raw_exchange(&w.socket(), line.as_bytes(), false));

    let r = ask(node_request(
        &w,
        TOKEN,
        "a1",
        &["/bin/sh", "-lc", "ls /usr"],
        10_000,
    ));
    assert_eq!(
        (r["type"].as_str(), r["id"].as_str()),
        (Some("decision"), Some("a1"))
    );
    assert_eq!(r["decision"], "allow-once", "{r}");
    assert_eq!(r["profile"], "autonomous-read", "{r}");
    assert_eq!(r["reason"], Value::Null);

    // Blocked whatever the display text says: the argv is judged.
    let mut line: Value = serde_json::from_str(
        node_request(
            &w,
            TOKEN,
            "a2",
            &["/bin/sh", "-lc", "cat /etc/shadow"],
            10_000,
        )
        .trim(),
    )
    .expect("json");
    line["request"]["command"] = json!("ls");
    let r = ask(line.to_string() + "\n");
    assert_eq!(r["decision"], "deny", "{r}");
    assert_eq!(r["reason"], "sensitive-path", "{r}");

    let r = ask(node_request(
        &w,
        "wrong-token",
        "a3",
        &["/bin/sh", "-lc", "ls"],
        10_000,
    ));
    assert_eq!(r["decision"], "deny");
    assert_eq!(r["reason"], "token", "{r}");

    let mut line: Value =
        serde_json::from_str(node_request(&w, TOKEN, "a4", &["ls"], 10_000).trim()).expect("json");
    line["request"]["commandArgv"] = json!([]);
    let r = ask(line.to_string() + "\n");
    assert_eq!(
        r["decision"], "deny",
        "an argv-less node request is refused: {r}"
    );

    // Gated: the node's wait bounds the decision (fallback deny once it is over) ...
    let started = Instant::now();
    let r = ask(node_request(
        &w,
        TOKEN,
        "a5",
        &["/bin/sh", "-lc", "echo x > /tmp/never"],
        3_000,
    ));
    assert_eq!(r["decision"], "deny", "{r}");
    assert_eq!(r["reason"], "approval-timeout", "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "bounded by the node's wait"
    );

    // ... and a person approves through the real CLI within it.
    let sock = w.socket();
    let line = node_request(
        &w,
        TOKEN,
        "a6",
        &["/bin/sh", "-lc", "echo x > /tmp/f"],
        60_000,
    );
    let asker =
        std::thread::spawn(move || first_json(&raw_exchange(&sock, line.as_bytes(), false)));
    let (inbox_id, req) = wait_until("the pending entry", Duration::from_secs(30), || {
        pending(&w.guard_state)
            .into_iter()
            .find(|(_, r)| r["id"] == "a6")
    });
    assert_eq!(
        req["who"]["source"], "node",
        "the card names the node as the source"
    );
    assert_eq!(
        req["action"]["argv"],
        json!(["/bin/sh", "-lc", "echo x > /tmp/f"])
    );
    let (code, out, err) = guard_cli(
        &[
            "inbox",
            "approve",
            &inbox_id,
            "--state-dir",
            w.guard_state.to_str().expect("utf8"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let r = asker.join().expect("asker");
    assert_eq!(r["decision"], "allow-once", "{r}");
    assert_eq!(r["profile"], "workspace-write", "{r}");
}

#[test]
fn outcome_frames_are_audited_and_need_the_token() {
    let w = World::full(TOKEN);
    let _serve = Serve::start(&w, &[], &[]);
    let outcome = json!({"requestId":"req-9","nodeId":"node-x","runId":"run-9","exitCode":0,
        "durationMs":12,"outputSha256":"5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
        "timedOut":false,"success":true});
    let frame = |token: &str| {
        json!({"type":"outcome","token":token,"id":"req-9","outcome":outcome}).to_string() + "\n"
    };
    let r = first_json(&raw_exchange(&w.socket(), frame("bad").as_bytes(), false));
    assert_eq!(r["decision"], "deny", "{r}");
    assert_eq!(r["reason"], "token");
    let r = first_json(&raw_exchange(&w.socket(), frame(TOKEN).as_bytes(), false));
    assert_eq!(r, json!({"type":"outcome-ack","id":"req-9","ok":true}));
    let audit = audit_with(
        &w,
        &[
            "exec-outcome",
            "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
        ],
    );
    let recs: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(
        recs.iter().filter(|r| r["kind"] == "exec-outcome").count(),
        1,
        "only the authenticated one"
    );
    let bad = json!({"type":"outcome","token":TOKEN,"id":"x","outcome":{"requestId":"x"}})
        .to_string()
        + "\n";
    let r = first_json(&raw_exchange(&w.socket(), bad.as_bytes(), false));
    assert_eq!(r["decision"], "deny", "a partial outcome is malformed: {r}");
}
