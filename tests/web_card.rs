//! What one card's JSON says approving does, over HTTP against the real `serve` and real
//! socket clients: who runs each source's request and how confined (`runs`), the exact
//! grants allow-always stores (paired with what the store then holds and how the guard then
//! answers), a write's whole content checked against its digest, and environment values
//! with only their secret parts hidden.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;
use support::card::*;
use support::socket::*;
use support::web::*;

/// A `request`'s deny decision, or an `exec`'s refusal (`ok:false`).
fn denied(reply: &str) -> bool {
    let v = first_json(reply);
    v["decision"] == "deny" || v["ok"] == false
}

fn pending_where(w: &Web, login: &Login, pred: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if let Some(e) = w.pending(login).into_iter().find(|e| pred(e)) {
            return e;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("never pending; serve log:\n{}", w.serve.log());
}

/// Every source's card names who runs it: the guard's sandbox (socket `exec` and a node host's
/// `system.run`, confined, with
/// uid, profile, writes, network and timeout), OpenClaw unconfined (socket `request`, plugin
/// tool calls), and the request's absolute deadline.
#[test]
fn the_run_line_names_who_runs_each_source_and_how_confined() {
    let w = Web::start(20_000);
    let login = w.login();
    let r = w.ask("runs-req", "touch /tmp/sg-card-runs");
    let e = w.wait_pending(&login, "runs-req");
    let runs = &e["runs"];
    assert_eq!(runs["by"], "openclaw", "{runs}");
    assert_eq!(runs["confined"], false, "{runs}");
    assert!(
        runs["text"]
            .as_str()
            .unwrap()
            .contains("outside the guard's sandbox"),
        "{runs}"
    );
    assert_eq!(runs["deadlineMs"], e["deadlineMs"]);
    assert!(runs["deadlineMs"].as_u64().unwrap() > e["createdMs"].as_u64().unwrap());

    let p = send(
        &w,
        plugin_write("runs-plugin", "notes.txt", "hello\n", None),
    );
    let e = w.wait_pending(&login, "runs-plugin");
    assert_eq!(e["runs"]["by"], "openclaw", "{}", e["runs"]);
    assert_eq!(e["runs"]["confined"], false);

    let x = exec(
        &w,
        json!({"command":["/bin/sh","-c","eval \"$NOTE\""],"rawCommand":"/bin/sh -c 'eval \"$NOTE\"'",
               "env":{"NOTE":"touch x"},"timeoutMs":15_000,"agentId":"main","sessionKey":"agent:main:main"}),
    );
    let e = pending_where(&w, &login, |e| e["sourceDetail"] == "socket-exec");
    let runs = &e["runs"];
    assert_eq!(runs["by"], "guard-sandbox", "{runs}");
    assert_eq!(runs["confined"], true, "{runs}");
    assert!(runs["uid"].is_u64(), "{runs}");
    assert_eq!(runs["profile"], "workspace-write", "{runs}");
    assert!(
        runs["writes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().starts_with('/')),
        "{runs}"
    );
    assert!(runs["network"].is_string(), "{runs}");
    assert!(runs["timeoutMs"].as_u64().unwrap() > 0, "{runs}");
    assert_eq!(runs["deadlineMs"], e["deadlineMs"]);
    // A node host's `system.run` (the socket `request` with `source:"node"`): its sandbox.
    let nd = send(
        &w,
        json!({"type":"request","token":TOKEN,"id":"runs-node","request":{
            "command":"touch /tmp/sg-card-node","commandArgv":["touch","/tmp/sg-card-node"],
            "cwd":"/tmp","source":"node","agentId":"main","timeoutMs":15_000}})
        .to_string()
            + "\n",
    );
    let e = w.wait_pending(&login, "runs-node");
    assert_eq!(e["runs"]["by"], "node", "{}", e["runs"]);
    assert_eq!(e["runs"]["confined"], true, "{}", e["runs"]);
    assert!(e["runs"]["profile"].is_string(), "{}", e["runs"]);
    for e in w.pending(&login) {
        let id = e["id"].as_str().unwrap();
        let hash = e["requestHash"].as_str().unwrap();
        w.decide(&login, id, json!({"decision":"deny","hash":hash}));
    }
    for h in [r, p, x, nd] {
        assert!(denied(&h.join().expect("reply")));
    }
}

/// A write's whole content reaches the card, and only the content that was hashed: a
/// content that does not match its digest is denied before anyone sees it.
#[test]
fn the_whole_write_reaches_the_card_and_must_match_its_digest() {
    let w = Web::start(20_000);
    let login = w.login();
    let script = long_script();
    let h = send(&w, plugin_write("write-long", "build.sh", &script, None));
    let e = w.wait_pending(&login, "write-long");
    assert_eq!(
        e["action"]["content"],
        script.as_str(),
        "the line after 2,048 is there"
    );
    assert_eq!(e["action"]["content_bytes"], 4151);
    assert!(e["action"].get("preview").is_none(), "{}", e["action"]);
    let hash = e["requestHash"].as_str().unwrap();
    w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":hash}),
    );
    assert!(h.join().unwrap().contains("deny"));

    let other = hex::encode(Sha256::digest(b"echo harmless\n"));
    let reply = raw_exchange(
        &w.world.socket(),
        plugin_write("write-lie", "build.sh", &script, Some(&other)).as_bytes(),
        false,
    );
    let v = first_json(&reply);
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["reason"], "content-mismatch", "{v}");
    assert!(w
        .pending(&login)
        .iter()
        .all(|e| e["requestId"] != "write-lie"));
}

/// Environment values: only the secret-looking part is hidden (a URL's password, a token),
/// so the host shows; a variable the command evaluates shows the code it carries; a dropped
/// one says so; no secret reaches the inbox store or the audit log.
#[test]
fn env_values_hide_only_their_secret_part() {
    let w = Web::start(20_000);
    let login = w.login();
    let token = "sk-ant-api03-Zq7abcdefghijklmnopqrstuv0123456789";
    let note = format!("touch pwned-env; # {token}");
    let h = exec(
        &w,
        json!({"command":["/bin/sh","-c","eval \"$NOTE\""],"rawCommand":"/bin/sh -c 'eval \"$NOTE\"'",
               "env":{"NOTE":note,"DATABASE_URL":"postgres://app:hunter2pass9c@prod-db.internal/app",
                      "LD_PRELOAD":"/tmp/x.so"},
               "timeoutMs":15_000,"agentId":"main","sessionKey":"agent:main:main"}),
    );
    let e = pending_where(&w, &login, |e| e["sourceDetail"] == "socket-exec");
    let env = e["action"]["env"].as_array().expect("env").clone();
    let get = |n: &str| env.iter().find(|v| v["name"] == n).cloned().expect(n);
    let n = get("NOTE");
    assert_eq!(n["expanded"], true, "{n}");
    assert_eq!(n["parts"][0]["text"], "touch pwned-env; # ", "{n}");
    assert_eq!(n["parts"][1]["secret"], true, "{n}");
    assert_eq!(
        n["parts"][1]["text"],
        Value::Null,
        "a plain token stays hidden: {n}"
    );
    assert_eq!(n["parts"][1]["len"], token.len());
    let db = get("DATABASE_URL");
    let shown: String = db["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert!(
        shown.contains("@prod-db.internal/app"),
        "the host shows: {db}"
    );
    assert!(!shown.contains("hunter2pass9c"), "{db}");
    assert_eq!(get("LD_PRELOAD")["dropped"], true);
    w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert!(denied(&h.join().unwrap()));
    let mut stored = w.audit();
    for f in std::fs::read_dir(&w.world.guard_state)
        .expect("state")
        .flatten()
    {
        stored.push_str(&String::from_utf8_lossy(
            &std::fs::read(f.path()).unwrap_or_default(),
        ));
    }
    assert!(!stored.contains(token), "a token was stored");
    assert!(!stored.contains("hunter2pass9c"), "a password was stored");
}

/// The grants the card lists are exactly the grants allow-always stores, and the words hold:
/// the same command then runs unasked, alone or combined with itself; another argv still
/// asks; a command a grant could never cover (a redirection) is not offered allow-always.
#[test]
fn allow_always_stores_exactly_the_listed_grants_and_the_words_hold() {
    use sanctum_guard::openclaw::store::{Era, Store};
    let w = Web::start(20_000);
    let login = w.login();
    let h = w.ask("grant-1", "touch /tmp/sg-card-grant-a");
    let e = w.wait_pending(&login, "grant-1");
    let listed = e["grants"]["entries"]
        .as_array()
        .expect("grants listed")
        .clone();
    assert_eq!(listed.len(), 1, "{}", e["grants"]);
    assert_eq!(listed[0]["argv"], json!(["touch", "/tmp/sg-card-grant-a"]));
    assert_eq!(listed[0]["cwd"], "/usr");
    let r = w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"allow-always","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-always");
    let doc = Store::open(&w.world.oc_state, Era::Sqlite)
        .unwrap()
        .read()
        .unwrap()
        .unwrap();
    let stored: Vec<(String, String)> = doc.agents["main"]
        .allowlist
        .iter()
        .flatten()
        .filter(|x| x.source.as_deref() == Some("allow-always"))
        .map(|x| (x.pattern.clone(), x.arg_pattern.clone().unwrap_or_default()))
        .collect();
    let want: Vec<(String, String)> = listed
        .iter()
        .map(|g| {
            (
                g["pattern"].as_str().unwrap().to_owned(),
                g["argPattern"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(stored, want, "exactly the listed grants are stored");
    // The same command, and a combination of granted commands, now run unasked.
    for (id, cmd) in [
        ("grant-2", "touch /tmp/sg-card-grant-a"),
        (
            "grant-3",
            "touch /tmp/sg-card-grant-a; touch /tmp/sg-card-grant-a",
        ),
    ] {
        let v = first_json(&w.ask(id, cmd).join().unwrap());
        assert_eq!(v["decision"], "allow-once", "{cmd} should run unasked: {v}");
    }
    // Another argv still asks.
    let h = w.ask("grant-4", "touch /tmp/sg-card-grant-a /tmp/sg-card-grant-b");
    let e = w.wait_pending(&login, "grant-4");
    w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(first_json(&h.join().unwrap())["decision"], "deny");
    // A redirection: a grant would be stored and never match, so allow-always is not offered.
    let h = w.ask("grant-5", "echo hi > /tmp/sg-card-grant-r");
    let e = w.wait_pending(&login, "grant-5");
    assert_eq!(e["offered"], json!(["allow-once", "deny"]), "{e}");
    assert_eq!(e["grants"], Value::Null);
    w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(first_json(&h.join().unwrap())["decision"], "deny");
}

/// Allow always is offered only where storing the listed grants makes the same command run
/// unasked: never for a segment a grant cannot match later (a redirection), nor where the
/// request sets environment a person must see (a grant binds argv and cwd, not env).
#[test]
fn allow_always_is_offered_only_where_the_grants_cover_the_command() {
    use sanctum_guard::engine::grants::planned;
    use sanctum_guard::policy::decide::{decide, DecideContext};
    use sanctum_guard::policy::request::{Action, DecisionKind};
    use support::policy::*;
    let w = attack_world();
    let mut ctx = DecideContext::standalone(&w.home, PATH, &w.ws);
    ctx.workspace = Some(w.ws.clone());
    for (command, env, offered, grants) in [
        ("touch /tmp/sg-card-x", &[][..], true, 1),
        ("touch /tmp/sg-card-x; touch /tmp/sg-card-y", &[], true, 2),
        ("echo hi > /tmp/sg-card-x", &[], false, 0),
        ("touch /tmp/sg-card-x > /tmp/sg-card-log", &[], false, 0),
        ("touch /tmp/sg-card-x", &["FOO"][..], false, 0),
    ] {
        let mut req = shell_request("offer", command, &w.ws);
        if let Action::Exec(e) = &mut req.action {
            e.env_keys = env.iter().map(|s| s.to_string()).collect();
        }
        let v = decide(&w.policy, &ctx, &req);
        let has = v.offered.contains(&DecisionKind::AllowAlways);
        assert_eq!(
            has, offered,
            "{command} {env:?}: {:?} {:?}",
            v.kind, v.offered
        );
        if has {
            assert_eq!(planned(&req, &v).len(), grants, "{command}");
        }
    }
}
