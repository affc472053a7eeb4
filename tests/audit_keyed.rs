//! The keyed audit chain, attacked as someone who can rewrite the log file
//! but cannot read the key: every edit is followed by recomputing the hash chain (which is
//! what beat the unkeyed log), and `audit verify` with the key must still fail, while without
//! the key the same file passes (showing what the key adds). Rotation keeps one chain that
//! verifies as a set of files.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::audit::{self, AuditKey, AuditLog, AuditOptions, Verification};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::audit::{lines, write_lines};
use support::process::{guard_bin, output_text};

fn write_log(dir: &Path, n: usize, rotate_bytes: u64) -> PathBuf {
    let path = dir.join("audit.jsonl");
    let opts = AuditOptions {
        key_path: None,
        rotate_bytes,
    };
    let (log, _) = AuditLog::open_with(&path, &opts).expect("open");
    for i in 0..n {
        log.append_raw(
            "decision",
            json!({"n": i, "cmd": format!("rm -rf /tmp/x{i}")}),
        )
        .expect("append");
    }
    path
}

/// Rewrites `seq` and `prev` of every line so the unkeyed chain holds again; `macs` says
/// what the attacker does with the seals it cannot recompute.
fn recompute(path: &Path, mut ls: Vec<String>, macs: Macs) {
    let mut prev = audit::GENESIS.to_owned();
    let mut seq = 0;
    for (i, l) in ls.iter_mut().enumerate() {
        let mut v: Value = serde_json::from_str(l).expect("json");
        if i == 0 && v["kind"] == "rotation" {
            // Keep a rotation start as it is.
            prev = v["prev"].as_str().expect("prev").to_owned();
            seq = v["seq"].as_u64().expect("seq") - 1;
        }
        seq += 1;
        let unchanged = v["seq"] == json!(seq) && v["prev"] == json!(prev);
        if unchanged && matches!(macs, Macs::Keep) {
            // Nothing to recompute: keep the exact bytes (and their valid seal).
            prev = audit::line_hash(l.as_bytes());
            continue;
        }
        v["seq"] = json!(seq);
        v["prev"] = json!(prev);
        match macs {
            Macs::Keep => {}
            Macs::Strip => {
                v.as_object_mut().expect("obj").remove("mac");
            }
            Macs::Forge => v["mac"] = json!("ab".repeat(32)),
        }
        *l = serde_json::to_string(&v).expect("encode");
        prev = audit::line_hash(l.as_bytes());
    }
    write_lines(path, &ls);
}

#[derive(Clone, Copy, Debug)]
enum Macs {
    Keep,
    Strip,
    Forge,
}

fn cli_verify(files: &[&Path], extra: &[&str]) -> (i32, String) {
    let out = Command::new(guard_bin())
        .args(["audit", "verify"])
        .args(files)
        .args(extra)
        .output()
        .expect("run");
    (out.status.code().unwrap_or(-1), output_text(&out))
}

type Attack = fn(Vec<String>) -> Vec<String>;

#[test]
fn tampering_then_recomputing_the_chain_fails_with_the_key() {
    let attacks: &[(&str, Attack)] = &[
        ("delete a middle record", |mut l| {
            l.remove(4);
            l
        }),
        ("delete the first record", |mut l| {
            l.remove(0);
            l
        }),
        ("edit a payload", |mut l| {
            l[3] = l[3].replacen("rm -rf /tmp/x3", "ls", 1);
            l
        }),
        ("reorder two records", |mut l| {
            l.swap(2, 6);
            l
        }),
        ("duplicate a record", |mut l| {
            let d = l[5].clone();
            l.insert(6, d);
            l
        }),
        ("insert a forged record", |mut l| {
            l.insert(
                2,
                r#"{"seq":0,"ts":"x","ts_ms":1,"kind":"decision","fields":{},"prev":"x"}"#.into(),
            );
            l
        }),
        ("truncate the newest records", |mut l| {
            l.truncate(7);
            l
        }),
        ("truncate to one record", |mut l| {
            l.truncate(1);
            l
        }),
    ];
    for (name, attack) in attacks {
        for macs in [Macs::Keep, Macs::Strip, Macs::Forge] {
            let dir = tempfile::tempdir().expect("tmp");
            let path = write_log(dir.path(), 10, 0);
            let (code, out) = cli_verify(&[&path], &[]);
            assert_eq!(code, 0, "{name}: the untouched log verifies: {out}");
            recompute(&path, attack(lines(&path)), macs);
            let (code, out) = cli_verify(&[&path], &[]);
            assert_eq!(
                code, 1,
                "{name} ({macs:?}) must be caught with the key: {out}"
            );
            assert!(out.contains("BROKEN"), "{name}: {out}");
            if matches!(macs, Macs::Strip) {
                // Without the key the recomputed chain is consistent: that is exactly the
                // attack the key closes, and verify says it proves nothing more.
                assert!(
                    matches!(
                        audit::verify(&path).expect("verify"),
                        Verification::Ok { .. }
                    ),
                    "{name}: the recomputed chain is internally consistent"
                );
                let key = dir.path().join("audit.key");
                std::fs::rename(&key, dir.path().join("elsewhere.key")).expect("mv");
                let (code, out) = cli_verify(&[&path], &["--allow-unanchored"]);
                assert_eq!(code, 0, "{name}: {out}");
                assert!(out.contains("NOT keyed"), "{out}");
                let (code, out) = cli_verify(
                    &[&path],
                    &[
                        "--key",
                        dir.path().join("elsewhere.key").to_str().expect("utf8"),
                    ],
                );
                assert_eq!(code, 1, "{name}: --key finds it: {out}");
            }
        }
    }
}

#[test]
fn cutting_the_newest_records_is_caught_by_the_head() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write_log(dir.path(), 10, 0);
    let ls = lines(&path);
    // Exact bytes of the first 7 records: every remaining seal is valid.
    std::fs::write(&path, ls[..7].join("\n") + "\n").expect("write");
    assert!(matches!(
        audit::verify(&path).expect("verify"),
        Verification::Ok { records: 7 }
    ));
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("cut off"), "{out}");
}

#[test]
fn a_log_rewritten_under_another_key_fails() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write_log(dir.path(), 5, 0);
    // The attacker writes a whole new, internally consistent and sealed log with a key of
    // their own, in another directory, and puts it in place of the real one.
    let other = tempfile::tempdir().expect("tmp");
    let forged = write_log(other.path(), 5, 0);
    std::fs::copy(&forged, &path).expect("copy");
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn a_key_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tmp");
    let path = write_log(dir.path(), 2, 0);
    let key = dir.path().join("audit.key");
    assert_eq!(
        std::fs::metadata(&key).expect("key").permissions().mode() & 0o777,
        0o600
    );
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("0600"), "{out}");
    let (code, out) = cli_verify(&[&path], &["--key", "/nonexistent/key"]);
    assert_eq!(code, 2, "{out}");
}

fn rotated_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

#[test]
fn rotation_keeps_one_chain_across_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write_log(dir.path(), 60, 2_000);
    let files = rotated_files(dir.path());
    assert!(files.len() >= 4, "rotated into several files: {files:?}");
    let live = lines(&path);
    let first: Value = serde_json::from_str(&live[0]).expect("json");
    assert_eq!(
        first["kind"], "rotation",
        "the new file names the previous one"
    );
    assert!(first["fields"]["previousFile"].as_str().is_some());
    assert_eq!(first["prev"], first["fields"]["previousLastHash"]);

    let key = AuditKey::load(&dir.path().join("audit.key")).expect("key");
    let rep = audit::verify_set(&files, Some(&key)).expect("verify");
    assert!(rep.is_ok(), "{}", rep.render());
    let rotations = files.len() as u64 - 1;
    assert_eq!(
        rep.verification,
        Verification::Ok {
            records: 60 + rotations
        }
    );
    // Any order on the command line; the live file alone verifies with a note.
    let mut shuffled = files.clone();
    shuffled.reverse();
    let refs: Vec<&Path> = shuffled.iter().map(PathBuf::as_path).collect();
    let (code, out) = cli_verify(&refs, &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("continuing"), "{out}");

    // A missing middle file, or a middle file swapped for another, breaks the set.
    let mut gap = files.clone();
    gap.remove(1);
    let rep = audit::verify_set(&gap, Some(&key)).expect("verify");
    assert!(!rep.is_ok(), "a missing file must show: {}", rep.render());
    // Reopening a rotated log resumes the chain.
    let opts = AuditOptions {
        key_path: None,
        rotate_bytes: 2_000,
    };
    let (log, _) = AuditLog::open_with(&path, &opts).expect("reopen");
    log.append_raw("startup", json!({})).expect("append");
    drop(log);
    let files = rotated_files(dir.path());
    let rep = audit::verify_set(&files, Some(&key)).expect("verify");
    assert!(rep.is_ok(), "{}", rep.render());
}

#[test]
fn a_log_from_before_keying_is_rotated_away_on_open() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write_log(dir.path(), 4, 0);
    // Simulate a pre-keying log: no seals.
    recompute(&path, lines(&path), Macs::Strip);
    let (log, _) = AuditLog::open(&path).expect("open");
    log.append_raw("startup", json!({})).expect("append");
    drop(log);
    let files = rotated_files(dir.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let key = AuditKey::load(&dir.path().join("audit.key")).expect("key");
    // The keyed file verifies with the key; the old one only without.
    let rep = audit::verify_set(std::slice::from_ref(&path), Some(&key)).expect("verify");
    assert!(rep.is_ok(), "{}", rep.render());
    assert!(matches!(
        audit::verify(&files[0]).expect("verify"),
        Verification::Ok { records: 4 }
    ));
}

/// Processes that open a fresh log at the same moment all get the one key: the key file
/// appears whole or not at all (it once could be read half-written, "not 32 bytes").
#[test]
fn processes_racing_to_create_the_key_share_it() {
    if let Ok(p) = std::env::var("AUDIT_KEY_RACER") {
        // Start together: spin until the parent says go, so the creations overlap.
        let go = Path::new(&p).with_file_name("go");
        let start = std::time::Instant::now();
        while !go.exists() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(20),
                "no go"
            );
            std::hint::spin_loop();
        }
        let key = AuditKey::load_or_create(Path::new(&p)).unwrap();
        println!("KEY {}", key.tag("race", b"x"));
        return;
    }
    for round in 0..15 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.key");
        let racers: Vec<_> = (0..6)
            .map(|_| {
                Command::new(std::env::current_exe().unwrap())
                    .args([
                        "--exact",
                        "audit_keyed::processes_racing_to_create_the_key_share_it",
                        "--nocapture",
                    ])
                    .env("AUDIT_KEY_RACER", &path)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(150));
        std::fs::write(dir.path().join("go"), b"").unwrap();
        let mut tags = Vec::new();
        for r in racers {
            let out = r.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: a racer failed: {}",
                output_text(&out)
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let tag = text
                .lines()
                .find_map(|l| l.strip_prefix("KEY "))
                .map(str::to_owned)
                .unwrap();
            tags.push(tag);
        }
        tags.dedup();
        assert_eq!(
            tags.len(),
            1,
            "round {round}: racers ended with different keys"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "go")
            .collect();
        assert_eq!(
            left,
            vec![std::ffi::OsString::from("audit.key")],
            "temporary files left"
        );
    }
}

/// Deleting the head and cutting the newest records: without a sealed head nothing shows the
/// cut, so verify fails unless told `--allow-unanchored`; and a BROKEN report never claims
/// that nothing was cut off.
#[test]
fn without_a_head_verify_fails_unless_told_and_broken_claims_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write_log(dir.path(), 12, 0);
    let head = dir.path().join("audit.head");
    assert!(head.exists(), "the writer keeps a head");
    let ls = lines(&path);
    std::fs::write(&path, ls[..9].join("\n") + "\n").expect("cut");
    std::fs::remove_file(&head).expect("rm head");
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 1, "an unanchored log must not pass silently: {out}");
    assert!(out.starts_with("UNANCHORED"), "{out}");
    assert!(out.contains("--allow-unanchored"), "{out}");
    let (code, out) = cli_verify(&[&path], &["--allow-unanchored"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("OK 9 records"), "{out}");
    assert!(out.contains("would not show"), "{out}");
    // An unkeyed log has no head either.
    std::fs::rename(dir.path().join("audit.key"), dir.path().join("k")).expect("mv");
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 1, "{out}");
    std::fs::rename(dir.path().join("k"), dir.path().join("audit.key")).expect("mv");

    // A broken log with its head in place: the report says the chain does not hold, never
    // that nothing was cut off.
    let b = dir.path().join("b");
    std::fs::create_dir(&b).expect("b");
    let path = write_log(&b, 10, 0);
    let mut ls = lines(&path);
    ls.remove(3);
    std::fs::write(&path, ls.join("\n") + "\n").expect("edit");
    let (code, out) = cli_verify(&[&path], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("BROKEN"), "{out}");
    assert!(!out.contains("nothing was"), "{out}");
}
