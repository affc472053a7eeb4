//! Crash test: pending requests, `kill -9` of the real `serve`, restart on the same state:
//! the audit chain verifies, nothing was approved, pending entries are expired, and the
//! restarted server serves again.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::time::{Duration, Instant};
use support::socket::*;

const TOKEN: &str = "crash-test-token-0123456789abcdefg";

#[test]
fn kill_9_with_pending_requests_then_restart() {
    let w = World::new(NEW, TOKEN, &[]);
    let mut serve = Serve::start(&w, &[], &[]);
    let sock = w.socket();
    let clients: Vec<_> = (0..3)
        .map(|i| {
            let sock = sock.clone();
            let line = request_line(
                TOKEN,
                &format!("crash{i}"),
                &format!("touch /tmp/sg-crash-{i}"),
            );
            std::thread::spawn(move || raw_exchange(&sock, line.as_bytes(), true))
        })
        .collect();
    let start = Instant::now();
    while inbox_list(&w.guard_state, &["--state", "pending"]).len() < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "requests never became pending"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    serve.child.kill9();
    for c in clients {
        let reply = c.join().expect("client");
        assert!(
            !reply.contains("allow"),
            "a killed guard must not have allowed anything: {reply}"
        );
    }
    let dir = w.guard_state.to_str().expect("utf8").to_owned();
    let audit = w.audit_path();
    let (code, out, err) = guard_cli(&["audit", "verify", audit.to_str().expect("utf8")], &[]);
    assert_eq!(code, 0, "audit verify after kill -9: {out}{err}");

    // While the guard is down, a stale approval must not be able to sneak through later.
    let restarted = Serve::start(&w, &[], &[]);
    assert!(
        restarted.log().contains("3 pending expired at start"),
        "{}",
        restarted.log()
    );
    let all = inbox_list(&w.guard_state, &["--state", "all"]);
    assert_eq!(all.len(), 3, "{all:?}");
    for e in &all {
        assert_eq!(e["state"], "expired", "{e}");
        assert_eq!(e["decision"]["kind"], "deny", "{e}");
        assert_eq!(e["decision"]["reason"], "guard-restart", "{e}");
    }
    let id = all[0]["id"].as_str().expect("id");
    let (code, _, _) = guard_cli(&["inbox", "approve", id, "--state-dir", &dir], &[]);
    assert_ne!(code, 0, "an expired request cannot be approved");
    assert!(inbox_list(&w.guard_state, &["--state", "approved"]).is_empty());

    let r = raw_exchange(&sock, request_line(TOKEN, "after", "ls").as_bytes(), true);
    assert_eq!(first_json(&r)["decision"], "allow-once", "{r}");
    drop(restarted);
    let (code, out, err) = guard_cli(&["audit", "verify", audit.to_str().expect("utf8")], &[]);
    assert_eq!(code, 0, "audit verify after restart: {out}{err}");
}

#[test]
fn sigterm_answers_in_flight_clients_with_guard_shutdown() {
    let w = World::new(NEW, TOKEN, &[]);
    let mut serve = Serve::start(&w, &[], &[]);
    let sock = w.socket();
    let line = request_line(TOKEN, "inflight", "touch /tmp/sg-shutdown");
    let client = std::thread::spawn(move || raw_exchange(&sock, line.as_bytes(), true));
    let start = Instant::now();
    while inbox_list(&w.guard_state, &["--state", "pending"]).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "request never became pending"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(serve.child.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let reply = client.join().expect("client");
    assert_eq!(first_json(&reply)["decision"], "deny", "{reply}");
    let status = serve
        .child
        .child
        .take()
        .expect("child")
        .wait()
        .expect("wait");
    assert_eq!(
        status.code(),
        Some(0),
        "serve exits 0 on SIGTERM: {}",
        serve.log()
    );
    assert!(!w.socket().exists(), "the socket file is removed at exit");
    let audit = std::fs::read_to_string(w.audit_path()).expect("audit");
    assert!(
        audit.contains("guard-shutdown"),
        "the shutdown deny is audited"
    );
}

/// Autonomous answers do not wait for their audit record, but the record follows within
/// `audit::TICK` (written) and `audit::SYNC_WINDOW` (fsynced): after a burst of answers and
/// a pause longer than both, a `kill -9` loses none of them.
#[test]
fn kill_9_after_autonomous_answers_loses_no_record() {
    let w = World::new(NEW, TOKEN, &[]);
    let mut serve = Serve::start(
        &w,
        &[
            ("SANCTUM_SOCKET_RATE_PER_SEC", "100000"),
            ("SANCTUM_SOCKET_RATE_BURST", "100000"),
        ],
        &[],
    );
    let sock = w.socket();
    for i in 0..300 {
        let r = raw_exchange(
            &sock,
            request_line(TOKEN, &format!("burst{i}"), "ls").as_bytes(),
            true,
        );
        assert_eq!(first_json(&r)["decision"], "allow-once", "{r}");
    }
    // TICK is 200 µs; the rest of the pause is for a busy 2-core CI machine's scheduler.
    std::thread::sleep(Duration::from_millis(250));
    serve.child.kill9();
    let audit = w.audit_path();
    let text = std::fs::read_to_string(&audit).expect("audit log");
    for i in 0..300 {
        assert!(
            text.contains(&format!("\"id\":\"burst{i}\"")),
            "the answer to burst{i} is not in the audit log"
        );
    }
    let (code, out, err) = guard_cli(&["audit", "verify", audit.to_str().expect("utf8")], &[]);
    assert_eq!(code, 0, "audit verify after kill -9: {out}{err}");
}

/// With `[socket] durable_answers = true` the answer waits for its record's fsync: the moment
/// the client has its answer, the record is in the file, and a `kill -9` right then loses
/// nothing.
#[test]
fn durable_answers_are_in_the_log_before_the_reply() {
    let w = World::new(NEW, TOKEN, &[]);
    let cfg = w.write_config("[socket]\ndurable_answers = true\n");
    let mut serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let sock = w.socket();
    let audit = w.audit_path();
    for i in 0..20 {
        let id = format!("durable{i}");
        let r = raw_exchange(&sock, request_line(TOKEN, &id, "ls").as_bytes(), true);
        assert_eq!(first_json(&r)["decision"], "allow-once", "{r}");
        let text = std::fs::read_to_string(&audit).expect("audit log");
        assert!(
            text.contains(&format!("\"id\":\"{id}\"")),
            "{id} answered before its record was written"
        );
    }
    // A rejection too.
    let r = raw_exchange(&sock, b"{\"type\":\"nope\"}\n", true);
    assert_eq!(first_json(&r)["decision"], "deny", "{r}");
    let text = std::fs::read_to_string(&audit).expect("audit log");
    assert!(
        text.contains("\"kind\":\"rejection\""),
        "rejection not recorded before the reply"
    );
    serve.child.kill9();
    let (code, out, err) = guard_cli(&["audit", "verify", audit.to_str().expect("utf8")], &[]);
    assert_eq!(code, 0, "audit verify after kill -9: {out}{err}");
}
