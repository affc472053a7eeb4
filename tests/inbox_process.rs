//! The inbox across processes: the real `sanctum-guard inbox` command line deciding for a
//! ticket waiting in this process, and a serving process killed with SIGKILL.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::audit::{self, AuditLog, Verification};
use sanctum_guard::inbox::{cli_identity, Inbox, State, StateFilter};
use sanctum_guard::policy::request::{DecidedBy, DecisionKind};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::inbox::*;
use support::process::guard_bin;

fn cli(dir: &Path, args: &[&str]) -> Output {
    Command::new(guard_bin())
        .arg("inbox")
        .args(args)
        .arg("--state-dir")
        .arg(dir)
        .output()
        .unwrap()
}

fn open(dir: &Path) -> (Inbox, usize) {
    let (log, _) = AuditLog::open(&dir.join("audit.jsonl")).unwrap();
    Inbox::open(&dir.join("inbox.db"), Some(log)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_approve_reaches_ticket_waiting_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let mut events = inbox.subscribe();
    let t = inbox
        .submit(
            &exec_request("touch cli"),
            &ask_verdict(ALL),
            now_ms() + 20_000,
        )
        .await
        .unwrap();
    let (id, hash) = (t.id.clone(), t.request_hash.clone());

    // `inbox list --json` shows it, with its hash and reasons.
    let out = cli(dir.path(), &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["request_hash"], hash.as_str());
    assert_eq!(listed[0]["verdict"]["reasons"][0]["code"], "write");
    let text = cli(dir.path(), &["list"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("exec touch cli"));

    // A hash that is not the one shown is refused; the entry stays pending.
    let wrong = "0".repeat(64);
    let out = cli(dir.path(), &["approve", &id, "--hash", &wrong]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("hash mismatch"));

    let waiter = tokio::spawn(async move {
        let d = t.wait().await;
        (d, Instant::now())
    });
    let out = cli(dir.path(), &["approve", &id, "--hash", &hash]);
    let cli_done = Instant::now();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (d, woke) = tokio::time::timeout(Duration::from_secs(3), waiter)
        .await
        .expect("ticket answered promptly")
        .unwrap();
    let lag = woke.saturating_duration_since(cli_done);
    eprintln!("cli decision -> ticket wake-up: {lag:?}");
    assert!(lag < Duration::from_millis(500), "lag {lag:?}");
    assert_eq!(d.kind, DecisionKind::AllowOnce);
    assert_eq!(d.by, DecidedBy::Human(cli_identity()));
    assert!(cli_identity().starts_with("cli:"));
    // Subscribers hear about it too.
    let mut resolved = false;
    while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_secs(1), events.recv()).await {
        if matches!(&ev, sanctum_guard::inbox::InboxEvent::Resolved(r) if r.id == id && r.state == State::Approved)
        {
            resolved = true;
            break;
        }
    }
    assert!(resolved);

    // Deciding again is refused with exit 1.
    let out = cli(dir.path(), &["deny", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already approved"));
    let out = cli(dir.path(), &["approve", "no-such-id"]);
    assert_eq!(out.status.code(), Some(1));

    // pending (this process) + the vote naming who approved, and the decision (the CLI
    // process): one chain.
    assert_eq!(
        audit::verify(&dir.path().join("audit.jsonl")).unwrap(),
        Verification::Ok { records: 3 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_deny_with_reason_and_not_offered_always() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let offered = [DecisionKind::AllowOnce, DecisionKind::Deny];
    let t = inbox
        .submit(
            &exec_request("touch d"),
            &ask_verdict(&offered),
            now_ms() + 20_000,
        )
        .await
        .unwrap();
    let id = t.id.clone();
    let out = cli(dir.path(), &["approve", &id, "--always"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("allow-always was not offered"));
    let out = cli(
        dir.path(),
        &["deny", &id, "--reason", "not on a friday", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["state"], "denied");
    let d = tokio::time::timeout(Duration::from_secs(3), t.wait())
        .await
        .unwrap();
    assert_eq!(d.kind, DecisionKind::Deny);
    assert_eq!(d.reason.as_deref(), Some("not on a friday"));
    let e = inbox.get(&id).unwrap().unwrap();
    assert_eq!(e.state, State::Denied);
}

#[test]
fn cli_list_does_not_touch_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    drop(Inbox::open(&dir.path().join("inbox.db"), None).unwrap());
    let out = cli(dir.path(), &["list", "--state", "all"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!dir.path().join("audit.jsonl").exists());
    let out = cli(dir.path(), &["list", "--state", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cli_without_inbox_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !dir.path().join("inbox.db").exists(),
        "the CLI must not create an inbox"
    );
}

/// The child side of the crash test: serves an inbox with pending requests until killed.
fn crash_child(dir: &Path) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (inbox, _) = open(dir);
        let mut tickets = Vec::new();
        for i in 0..3 {
            let t = inbox
                .submit(
                    &exec_request(&format!("touch k{i}")),
                    &ask_verdict(ALL),
                    now_ms() + 60_000,
                )
                .await
                .unwrap();
            tickets.push(t);
        }
        println!("READY");
        let _ = std::io::Write::flush(&mut std::io::stdout());
        tokio::time::sleep(Duration::from_secs(120)).await;
    });
}

#[test]
fn kill_9_with_pending_requests_expires_them_on_restart() {
    if let Ok(dir) = std::env::var("INBOX_CRASH_CHILD") {
        crash_child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "inbox_process::kill_9_with_pending_requests_expires_them_on_restart",
            "--nocapture",
        ])
        .env("INBOX_CRASH_CHILD", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "child exited before READY"
        );
        if line.trim() == "READY" {
            break;
        }
    }
    // While the child serves, the command line sees its pending requests.
    let listed = cli(dir.path(), &["list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    // ... and a second server is refused.
    assert!(Inbox::open(&dir.path().join("inbox.db"), None).is_err());

    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());

    let (inbox, expired) = open(dir.path());
    assert_eq!(expired, 3);
    assert!(inbox.list(StateFilter::Pending).unwrap().is_empty());
    for e in inbox.list(StateFilter::All).unwrap() {
        assert_eq!(e.state, State::Expired, "{}", e.id);
        let d = e.decision.unwrap();
        assert_eq!(d.kind, DecisionKind::Deny);
        assert_eq!(d.reason.as_deref(), Some("guard-restart"));
        assert_eq!(d.by, DecidedBy::Fallback);
        // Too late to approve from the command line.
        let out = cli(dir.path(), &["approve", &e.id]);
        assert_eq!(out.status.code(), Some(1));
    }
    assert!(inbox
        .list(StateFilter::Only(State::Approved))
        .unwrap()
        .is_empty());
    // 3 pending (child) + 3 expiries (restart): the chain survived the kill.
    let out = Command::new(guard_bin())
        .args(["audit", "verify"])
        .arg(dir.path().join("audit.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("OK 6 records in 1 file(s)\n"),
        "{stdout}"
    );
}
