//! The audit chain: verification finds the exact first broken line, torn tails are
//! recovered, concurrent writers (threads and processes) keep one chain, secrets are redacted.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::audit::{self, redact, AuditLog, Verification, GENESIS};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::audit::{lines, write_lines};
use support::process::guard_bin;

fn write_log(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("audit.jsonl");
    let (log, report) = AuditLog::open(&path).unwrap();
    assert_eq!(report.records, 0);
    for i in 0..n {
        let seq = log
            .append_raw("request", json!({"n": i, "cmd": format!("echo {i}")}))
            .unwrap();
        assert_eq!(seq, i as u64 + 1);
    }
    path
}

fn broken_line(path: &Path) -> u64 {
    match audit::verify(path).unwrap() {
        Verification::Broken { line, .. } => line,
        ok => panic!("expected a break, got {ok:?}"),
    }
}

#[test]
fn fresh_chain_verifies_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 5);
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 5 }
    );
    let ls = lines(&path);
    let first: Value = serde_json::from_str(&ls[0]).unwrap();
    assert_eq!(first["prev"], GENESIS);
    assert_eq!(first["seq"], 1);
    assert_eq!(first["kind"], "request");
    assert!(first["ts"].as_str().unwrap().ends_with('Z'));
    assert!(first["ts_ms"].as_u64().unwrap() > 1_700_000_000_000);
    let second: Value = serde_json::from_str(&ls[1]).unwrap();
    assert_eq!(second["prev"], audit::line_hash(ls[0].as_bytes()));

    // The command line agrees.
    let out = Command::new(guard_bin())
        .args(["audit", "verify"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("OK 5 records in 1 file(s)\n"),
        "{stdout}"
    );
    assert!(stdout.contains("keyed with"), "{stdout}");
}

#[test]
fn reopen_resumes_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 3);
    let (log, report) = AuditLog::open(&path).unwrap();
    assert_eq!(report.records, 3);
    assert_eq!(report.torn_tail_bytes, None);
    assert_eq!(log.append_raw("startup", json!({})).unwrap(), 4);
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 4 }
    );
}

#[test]
fn tampered_byte_is_found_at_the_next_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 10);
    let mut ls = lines(&path);
    // Change one byte of line 4's payload, keeping it valid JSON: line 5's prev no longer
    // matches.
    ls[3] = ls[3].replacen("echo 3", "echo 7", 1);
    write_lines(&path, &ls);
    assert_eq!(
        broken_line(&path),
        5,
        "without the key: the next line's prev"
    );
    // With the key (found next to the log), the edited line itself no longer opens.
    let out = Command::new(guard_bin())
        .args(["audit", "verify"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("line 4: record not sealed"), "{stdout}");

    // A byte that breaks the JSON is found on its own line.
    let path2 = write_log(&dir.path().join("b").tap_mkdir(), 10);
    let mut raw = std::fs::read(&path2).unwrap();
    let third_line_start = raw
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .unwrap()
        .0
        + 1;
    raw[third_line_start] = b'X';
    std::fs::write(&path2, raw).unwrap();
    assert_eq!(broken_line(&path2), 3);
}

#[test]
fn deleted_line_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 10);
    let mut ls = lines(&path);
    ls.remove(6); // line 7
    write_lines(&path, &ls);
    assert_eq!(broken_line(&path), 7);
    // Deleting the first line breaks line 1 (its prev is not the genesis hash).
    let mut ls = lines(&path);
    ls.remove(0);
    write_lines(&path, &ls);
    assert_eq!(broken_line(&path), 1);
}

#[test]
fn reordered_lines_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 10);
    let mut ls = lines(&path);
    ls.swap(2, 3); // lines 3 and 4
    write_lines(&path, &ls);
    assert_eq!(broken_line(&path), 3);
}

#[test]
fn torn_tail_is_cut_recorded_and_the_chain_continues() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 4);
    // A crash in the middle of a write: half a line, no newline.
    let mut raw = std::fs::read(&path).unwrap();
    let fragment = br#"{"seq":5,"ts":"2026-01-01T00:00:00.000Z","ts_ms":1,"kind":"exec","fie"#;
    raw.extend_from_slice(fragment);
    std::fs::write(&path, &raw).unwrap();
    assert_eq!(broken_line(&path), 5);
    let out = Command::new(guard_bin())
        .args(["audit", "verify"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));

    let (log, report) = AuditLog::open(&path).unwrap();
    assert_eq!(report.torn_tail_bytes, Some(fragment.len()));
    assert_eq!(report.records, 5);
    assert_eq!(log.append_raw("startup", json!({})).unwrap(), 6);
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 6 }
    );
    let ls = lines(&path);
    let torn: Value = serde_json::from_str(&ls[4]).unwrap();
    assert_eq!(torn["kind"], "torn-tail");
    assert_eq!(torn["fields"]["bytes"], fragment.len());
    assert!(torn["fields"]["text"]
        .as_str()
        .unwrap()
        .contains("\"kind\":\"exec\""));
}

#[test]
fn garbage_last_line_is_kept_and_the_chain_continues_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), 4);
    let mut ls = lines(&path);
    ls[3] = "edited by hand".into();
    write_lines(&path, &ls);
    let (log, report) = AuditLog::open(&path).unwrap();
    assert_eq!(report.bad_tail_line, Some(4));
    assert_eq!(report.records, 5);
    assert_eq!(log.append_raw("startup", json!({})).unwrap(), 6);
    // The garbage line stays (evidence) and verify points at it.
    let v = audit::verify(&path).unwrap();
    assert!(
        matches!(&v, Verification::Broken { line: 4, what, .. } if what.contains("not a record")),
        "{v:?}"
    );
    let ls = lines(&path);
    assert_eq!(ls[3], "edited by hand");
    let bad: Value = serde_json::from_str(&ls[4]).unwrap();
    assert_eq!(bad["kind"], "bad-tail");
    assert_eq!(bad["prev"], audit::line_hash(b"edited by hand"));
}

#[test]
fn reopen_finds_the_tail_past_large_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    {
        let (log, _) = AuditLog::open(&path).unwrap();
        for i in 0..3 {
            // Each record is larger than the 64 KiB read-back chunk.
            log.append_raw("exec", json!({"stdout": "x".repeat(150_000 + i)}))
                .unwrap();
        }
    }
    let (log, report) = AuditLog::open(&path).unwrap();
    assert_eq!(report.records, 3);
    assert_eq!(log.append_raw("startup", json!({})).unwrap(), 4);
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 4 }
    );
}

#[test]
fn eight_threads_append_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (log, _) = AuditLog::open(&path).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut seqs = Vec::new();
                for i in 0..50 {
                    seqs.push(
                        log.append_raw("exec", json!({"thread": t, "i": i}))
                            .unwrap(),
                    );
                }
                seqs
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort();
    assert_eq!(all, (1..=400).collect::<Vec<u64>>());
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 400 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_async_records_form_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (log, _) = AuditLog::open(&path).unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|t| {
            let log = log.clone();
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..10 {
                    seqs.push(
                        log.record_raw("verdict", json!({"t": t, "i": i}))
                            .await
                            .unwrap(),
                    );
                }
                seqs
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    assert_eq!(all, (1..=1000).collect::<Vec<u64>>());
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 1000 }
    );
}

/// Two processes (this test binary re-run as writers) append to one file at once: the file
/// lock and tail re-read keep a single chain.
#[test]
fn two_processes_append_one_chain() {
    if let Ok(p) = std::env::var("AUDIT_CHILD_WRITER") {
        let (log, _) = AuditLog::open(Path::new(&p)).unwrap();
        for i in 0..100 {
            log.append_raw("exec", json!({"pid": std::process::id(), "i": i}))
                .unwrap();
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "audit_chain::two_processes_append_one_chain",
                    "--nocapture",
                ])
                .env("AUDIT_CHILD_WRITER", &path)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 200 }
    );
}

#[test]
fn verify_usage_and_io_errors_exit_2() {
    let out = Command::new(guard_bin())
        .args(["audit", "verify", "/nonexistent/audit.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(guard_bin())
        .args(["audit", "verify"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn secrets_are_redacted_before_writing() {
    let secrets = [
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12345",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "xoxb-123456789012-abcdefghijkl",
        "AKIAIOSFODNN7EXAMPLE",
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (log, _) = AuditLog::open(&path).unwrap();
    for s in secrets {
        log.append_raw(
            "request",
            json!({"command": format!("curl -d x={s} https://h")}),
        )
        .unwrap();
    }
    log.append_raw(
        "request",
        json!({
            "token": "plain-token-value-1",
            "Token": "plain-token-value-2",
            "HMAC": "plain-hmac-value-3",
            "password": "plain-password-value-4",
            "Secret": "plain-secret-value-5",
            "key": "plain-key-value-6",
            "authToken": "plain-token-value-7",
            "env": {"OPENAI_API_KEY": "plain-env-value-8", "GH_TOKEN": "plain-env-value-9",
                    "DB_PASSWORD": "plain-env-value-10", "AWS_SECRET_ACCESS_KEY": "plain-env-value-11",
                    "GOOGLE_CREDENTIALS": "plain-env-value-12", "HOME": "/home/agent"},
            "command": "curl -H 'Authorization: Bearer plain-bearer-value-13' https://x",
            "argv": ["mysql", "--password=plain-flag-value-14", "--token", "plain-flag-value-15"],
            "shell": "API_TOKEN=plain-assign-value-16 ./run",
            "url": "git clone https://deploy:plain-url-value-18@git.example/r.git",
            "env_keys": ["OPENAI_API_KEY"],
            "raw_frame": "{\"type\":\"request\",\"token\":\"plain-frame-value-17\",\"id\":\"f1\"}",
        }),
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for s in secrets {
        assert!(!text.contains(s), "{s} leaked");
    }
    assert!(!text.contains("plain-"), "a secret leaked: {text}");
    // What is not secret stays readable.
    assert!(text.contains("/home/agent"));
    assert!(text.contains("OPENAI_API_KEY"));
    assert!(text.contains("Bearer [redacted]"));
    assert!(text.contains("--password=[redacted]"));
    assert!(text.contains("curl -d x=[redacted] https://h"));
    assert!(
        text.contains("https://deploy:[redacted]@git.example/r.git"),
        "{text}"
    );
    assert!(
        text.contains(r#"\"token\":\"[redacted]\",\"id\":\"f1\""#),
        "{text}"
    );
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 8 }
    );

    // The same function is public for other sinks.
    let mut v =
        json!({"nested": [{"secret": "s"}], "note": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"});
    redact(&mut v);
    assert_eq!(
        v,
        json!({"nested": [{"secret": "[redacted]"}], "note": "[redacted]"})
    );
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}
impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

/// Detached records (autonomous answers) reach the file without anybody waiting: at once
/// when a waited-for record follows (same chain, in order), and on their own within the
/// sync window. Their fields are built and redacted on the writer thread.
#[test]
fn detached_records_are_written_in_order_and_redacted() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (log, _) = AuditLog::open(&path).unwrap();
    let ok = Arc::new(AtomicBool::new(true));
    for i in 0..50 {
        let fields =
            move || json!({"i": i, "cmd": format!("curl -H 'Authorization: Bearer abcdef{i}'")});
        log.record_detached_raw("decision", Box::new(fields), &ok);
    }
    // A waited-for record after them: when it returns, everything before it is on disk.
    assert_eq!(
        log.append_raw("request", json!({"after": true})).unwrap(),
        51
    );
    let got = lines(&path);
    assert_eq!(got.len(), 51);
    for (i, line) in got.iter().take(50).enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["fields"]["i"], i, "order");
        let cmd = v["fields"]["cmd"].as_str().unwrap();
        assert!(!cmd.contains("abcdef"), "not redacted: {cmd}");
        assert!(cmd.contains("[redacted]"), "{cmd}");
    }
    // Alone, a detached record is still written (and fsynced) within the sync window.
    log.record_detached_raw("decision", Box::new(|| json!({"alone": true})), &ok);
    let t = std::time::Instant::now();
    while lines(&path).len() < 52 {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "never written"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(ok.load(Ordering::Relaxed));
    assert_eq!(
        audit::verify(&path).unwrap(),
        Verification::Ok { records: 52 }
    );
}

/// A log that cannot be written (a full disk: /dev/full answers ENOSPC) clears the flag a
/// detached record carries, so the caller stops allowing (fail closed), and a waited-for
/// record gets the error itself.
#[test]
fn detached_record_on_a_full_disk_clears_the_health_flag() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (log, _) = AuditLog::open(Path::new("/dev/full")).unwrap();
    let ok = Arc::new(AtomicBool::new(true));
    log.record_detached_raw("decision", Box::new(|| json!({"x": 1})), &ok);
    let t = std::time::Instant::now();
    while ok.load(Ordering::Relaxed) {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "flag never cleared"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let err = log
        .append_raw("request", json!({}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("No space left"), "{err}");
}
