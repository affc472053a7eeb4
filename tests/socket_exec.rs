//! The `exec` path with frames signed exactly like OpenClaw's node host (HMAC over
//! `nonce:ts:requestJson`), against the real `serve`: autonomous runs under the sandbox,
//! gated runs wait for the inbox (approved → run, denied → SYSTEM_RUN_DENIED user-denied,
//! nobody → approval-timeout before the client's deadline), the output cap and the timeout.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use support::socket::*;

const TOKEN: &str = "exec-test-token-0123456789abcdefgh";

fn exec(sock: &Path, argv: &[&str], cwd: &Path, timeout_ms: u64) -> Value {
    let rj = json!({"command":argv,"rawCommand":argv.join(" "),"cwd":cwd,"env":{"LANG":"C"},
        "timeoutMs":timeout_ms,"needsScreenRecording":false,"agentId":"main",
        "sessionKey":"agent:main:main","approvalDecision":null})
    .to_string();
    let v = send_exec(sock, TOKEN, &rj);
    assert_eq!(v["type"], "exec-res", "{v}");
    v
}

#[test]
fn autonomous_exec_runs_with_cap_and_timeout() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &[], &[]);
    let sock = w.socket();

    let v = exec(&sock, &["/bin/echo", "guard-ran"], &w.home, 5000);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["payload"],
        json!({"exitCode":0,"timedOut":false,"success":true,"stdout":"guard-ran\n","stderr":"","error":null})
    );

    // ~589 KB of output: the head is kept, 200,000 bytes combined, then the marker.
    let v = exec(&sock, &["/usr/bin/seq", "1", "100000"], &w.home, 5000);
    let out = v["payload"]["stdout"].as_str().expect("stdout");
    assert!(out.starts_with("1\n2\n3\n"), "{}", &out[..20]);
    assert!(
        out.ends_with("... (truncated)"),
        "{}",
        &out[out.len() - 40..]
    );
    assert!(
        out.len() <= 200_000 + "\n... (truncated)".len(),
        "{}",
        out.len()
    );

    // The request's timeoutMs bounds the run; the process group is killed.
    let start = Instant::now();
    let v = exec(&sock, &["/usr/bin/sleep", "30"], &w.home, 800);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["payload"]["timedOut"], true, "{v}");
    assert_eq!(v["payload"]["success"], false, "{v}");
    assert!(start.elapsed() < Duration::from_secs(10));

    // A sensitive read is blocked with the policy's reason, in the node host's shape.
    let key = format!("{}/.ssh/id_rsa", w.home.display());
    let v = exec(&sock, &["/usr/bin/cat", &key], &w.home, 5000);
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], "UNAVAILABLE");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("SYSTEM_RUN_DENIED: "),
        "{v}"
    );
    assert_eq!(v["error"]["reason"], "sensitive-path", "{v}");

    // The command's capability sets are all empty, whether the child dropped its bounding
    // set itself or (serve run as root) found it already cleared by serve. An unprivileged
    // guard cannot clear a bounding set (that needs CAP_SETPCAP); its runs hold no
    // capability and, under no_new_privs, can gain none from a file at exec.
    let v = exec(&sock, &["/usr/bin/cat", "/proc/self/status"], &w.home, 5000);
    let status = v["payload"]["stdout"].as_str().expect("stdout");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    let unprivileged = support::process::guard_uid().is_some();
    let sets: &[&str] = if unprivileged {
        &["CapInh", "CapPrm", "CapEff", "CapAmb"]
    } else {
        &["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]
    };
    for key in sets {
        assert!(
            status.contains(&format!("{key}:\t0000000000000000")),
            "{key} not empty: {status}"
        );
    }
}

#[test]
fn gated_exec_goes_through_the_inbox() {
    let w = World::new(NEW, TOKEN, &[]);
    let cfg = w.write_config("[deadlines]\nexec_ms = 6000\nmargin_ms = 1000\n");
    let _serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let dir = w.guard_state.to_str().expect("utf8").to_owned();
    // workspace-write lets the command write inside the deployment's workspace (OpenClaw's
    // default, <state>/workspace), whatever cwd the request names.
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(ws.join("out")).expect("out dir");
    support::process::give_to_guard(&ws);
    let target = ws.join("out/approved-file");
    let argv = ["/usr/bin/touch".to_owned(), target.display().to_string()];

    // Approved by a person → the guard runs it (in the workspace-write profile).
    let (sock, home, a) = (w.socket(), w.home.clone(), argv.clone());
    let client = std::thread::spawn(move || exec(&sock, &[&a[0], &a[1]], &home, 30_000));
    let id = wait_pending_ids(&w, Duration::from_secs(10))[0].clone();
    assert!(!target.exists(), "nothing runs before the approval");
    let (code, out, err) = guard_cli(&["inbox", "approve", &id, "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let v = client.join().expect("client");
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["payload"]["exitCode"], 0, "{v}");
    assert!(target.exists(), "the approved command ran");

    // Denied by a person → SYSTEM_RUN_DENIED with reason user-denied, naming the person.
    let other = ws.join("out/denied-file");
    let (sock, home, o) = (w.socket(), w.home.clone(), other.display().to_string());
    let client = std::thread::spawn(move || exec(&sock, &["/usr/bin/touch", &o], &home, 30_000));
    let id = wait_pending_ids(&w, Duration::from_secs(10))[0].clone();
    let (code, out, err) = guard_cli(&["inbox", "deny", &id, "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let v = client.join().expect("client");
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["reason"], "user-denied", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("SYSTEM_RUN_DENIED: denied by cli:") && msg.ends_with(": no reason given"),
        "{v}"
    );
    assert!(!other.exists());

    // Nobody answers → the fallback denies before the client's deadline (6 s here).
    let start = Instant::now();
    let v = exec(
        &w.socket(),
        &["/usr/bin/touch", &other.display().to_string()],
        &w.home,
        30_000,
    );
    assert_eq!(v["error"]["reason"], "approval-timeout", "{v}");
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
    assert!(!other.exists());
    audit_with(
        &w,
        &["\"kind\":\"exec\"", "user-denied", "approval-timeout"],
    );
}

/// Autonomous git runs for real under the guard's protective git environment (which the
/// environment filter must not strip: git refuses a GIT_CONFIG_COUNT without its keys).
#[test]
fn autonomous_git_reads_run() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &[], &[]);
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(&ws).expect("ws");
    git_repo_with_history(&ws);
    support::process::give_to_guard(&ws);
    for (argv, want) in GIT_READS {
        let v = exec(&w.socket(), argv, &ws, 20_000);
        assert_eq!(v["ok"], true, "{argv:?}: {v}");
        assert_eq!(v["payload"]["exitCode"], 0, "{argv:?}: {v}");
        let out = v["payload"]["stdout"].as_str().unwrap_or_default();
        assert!(out.contains(want), "{argv:?}: {v}");
    }
}

/// A recursive read past a secret asks a person; approved, it runs under the autonomous
/// profile, so the secret stays unreadable while the rest of the tree is searched.
#[test]
fn an_approved_read_past_a_secret_cannot_read_it() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &[], &[]);
    let dir = w.guard_state.to_str().expect("utf8").to_owned();
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(ws.join("src/deep")).expect("dirs");
    std::fs::write(ws.join("src/a.txt"), "needle here\n").expect("a");
    std::fs::write(ws.join("src/deep/.env"), "KEY=needle-MARK-4d1e\n").expect("env");
    support::process::give_to_guard(&ws);
    let (sock, cwd) = (w.socket(), ws.clone());
    let client =
        std::thread::spawn(move || exec(&sock, &["grep", "-r", "needle", "src"], &cwd, 30_000));
    let id = wait_pending_ids(&w, Duration::from_secs(10))[0].clone();
    let (code, out, err) = guard_cli(&["inbox", "approve", &id, "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let v = client.join().expect("client");
    assert_eq!(v["ok"], true, "{v}");
    let stdout = v["payload"]["stdout"].as_str().unwrap_or_default();
    let stderr = v["payload"]["stderr"].as_str().unwrap_or_default();
    assert!(stdout.contains("src/a.txt:needle here"), "{v}");
    assert!(
        !stdout.contains("MARK-4d1e") && !stderr.contains("MARK-4d1e"),
        "{v}"
    );
    assert!(stderr.contains("Permission denied"), "{v}");
    audit_with(&w, &["secret-in-tree"]);
}
