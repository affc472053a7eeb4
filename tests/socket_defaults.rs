//! The embedded default on a "laptop": `serve` with no flags and no config, only HOME. It
//! creates its state dir (0700), seeds OpenClaw's SQLite approvals store with a token and the
//! default socket path (never the legacy JSON file), prints where everything is (never the
//! token), and the real OpenClaw client reading that store's token gets answers.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::socket::*;

#[test]
fn no_flags_no_config_works_and_never_prints_the_token() {
    // No flags: its web prompt binds the default port, which the podman suites publish.
    let _port = support::process::podman_lock();
    let tmp = tempfile::Builder::new()
        .prefix("sg-laptop-")
        .tempdir()
        .expect("tmp");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let log = tmp.path().join("serve.log");
    let mut serve = ChildGuard::new(
        "serve",
        Command::new(guard_bin())
            .arg("serve")
            .env("HOME", &home)
            .env_remove("OPENCLAW_STATE_DIR")
            .env_remove("XDG_STATE_HOME")
            .env_remove("SANCTUM_CONFIG")
            .env_remove("SANCTUM_STATE_DIR")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("spawn"),
    );
    let sock = home.join(".openclaw/exec-approvals.sock");
    let start = Instant::now();
    while UnixStream::connect(&sock).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    let state = home.join(".local/state/sanctum-guard");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&state), 0o700);
    assert!(state.join("inbox.db").is_file() && state.join("audit.jsonl").is_file());
    assert_eq!(mode(&sock), 0o600);
    assert!(
        !home.join(".openclaw/exec-approvals.json").exists(),
        "the legacy JSON file must never be created"
    );

    // The token OpenClaw's runtime would read: the SQLite row's raw_json.
    let db =
        rusqlite::Connection::open(home.join(".openclaw/state/openclaw.sqlite")).expect("sqlite");
    let raw: String = db
        .query_row(
            "SELECT raw_json FROM exec_approvals_config WHERE config_key='current'",
            [],
            |r| r.get(0),
        )
        .expect("approvals row");
    let doc: serde_json::Value = serde_json::from_str(&raw).expect("json");
    let token = doc["socket"]["token"].as_str().expect("token").to_owned();
    assert_eq!(
        token.len(),
        32,
        "OpenClaw's token shape: 24 bytes base64url"
    );
    assert_eq!(doc["socket"]["path"], sock.display().to_string());

    let got = real_request(
        NEW,
        &sock,
        &token,
        &json!({"command":"ls","cwd":"/usr"}),
        5000,
    );
    assert_eq!(got, json!("allow-once"));

    let text = std::fs::read_to_string(&log).expect("log");
    for what in [
        "inbox.db",
        "audit.jsonl",
        "openclaw.sqlite",
        "exec-approvals.sock",
        "OpenClaw runs the command itself, outside the guard's sandbox",
        "serving",
    ] {
        assert!(text.contains(what), "startup lines name {what}: {text}");
    }
    assert!(!text.contains(&token), "the token is never printed");
    // The audit log holds the startup and the decision, and not the token.
    let audit = audit_file_with(
        &state.join("audit.jsonl"),
        &["\"kind\":\"startup\"", "\"kind\":\"decision\""],
    );
    assert!(
        !audit.contains(&token),
        "the token never reaches the audit log"
    );
    bounding_set_cleared_in_every_thread(serve.pid(), &text);
    serve.kill9();
}

/// Run by root (with CAP_SETPCAP), `serve` clears its own capability bounding set before it
/// starts any thread, so every thread (the audit writer's, the blocking pool's) has none.
fn bounding_set_cleared_in_every_thread(pid: u32, startup: &str) {
    let own = std::fs::read_to_string("/proc/self/status").expect("status");
    let setpcap = own
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|eff| eff & (1 << 8) != 0);
    if !setpcap {
        return; // Not root here: nothing to clear, nothing to check.
    }
    assert!(startup.contains("bounding set    cleared"), "{startup}");
    let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .map(|e| e.expect("task").path())
        .collect();
    assert!(
        tasks.len() >= 2,
        "serve runs more than one thread: {tasks:?}"
    );
    for t in tasks {
        let status = std::fs::read_to_string(t.join("status")).expect("task status");
        assert!(
            status.contains("CapBnd:\t0000000000000000"),
            "{}: {status}",
            t.display()
        );
    }
}
