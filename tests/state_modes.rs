//! A guard without `run_as` shares its uid with its runs, and Landlock does not cover chmod:
//! an approved run can widen the guard's own files. Against the real `serve` running
//! unprivileged (uid 64130 when the test is root, else the test's own uid): an approved run
//! that chmods the audit key 0666 and the state dir 0777 succeeds (the kernel lets the owner),
//! yet when it ends both are back at 0600 and 0700 and a `tamper` audit record names each
//! with its old and new mode; `doctor` then names nothing loose, and names a state file
//! loosened by hand.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;
use support::process::{guard_cli, guard_uid};
use support::socket::*;

const TOKEN: &str = "state-modes-test-token-0123456789abcd";

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777
}

/// `doctor --json`'s layout warnings for the guard on `state`, run as the guard.
fn doctor_layout(state: &Path, home: &Path) -> Vec<String> {
    let (_, out, err) = guard_cli(
        &["doctor", "--json"],
        &[
            ("SANCTUM_STATE_DIR", state.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    v["layout"]
        .as_array()
        .expect("layout")
        .iter()
        .map(|w| w.as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn an_approved_runs_chmod_of_the_guards_files_is_put_back_and_audited() {
    // The threat is a guard that is not root: as root, the test hands the guard uid 64130.
    if nix::unistd::Uid::effective().is_root() && guard_uid().is_none() {
        std::env::set_var("SANCTUM_TEST_GUARD_UID", "64130");
    }
    let w = World::new(NEW, TOKEN, &[]);
    let ws = w.tmp.path().join("project");
    std::fs::create_dir_all(&ws).expect("ws");
    let cfg = w.write_config("[deadlines]\nexec_ms = 20000\nmargin_ms = 1000\n");
    let serve = Serve::start(
        &w,
        &[],
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            "--web-listen",
            "off",
        ],
    );
    let state = w.guard_state.clone();
    let key = state.join("audit.key");
    assert_eq!((mode(&state), mode(&key)), (0o700, 0o600));

    // The state dir's path is hidden from the analysis, as a hostile agent would hide it: the
    // person approves what looks like a harmless script.
    use base64::Engine as _;
    let hidden =
        base64::engine::general_purpose::STANDARD.encode(state.as_os_str().as_encoded_bytes());
    let script = format!(
        "s=$(echo {hidden} | base64 -d); perl -e 'chmod(0666, \"$ARGV[0]/audit.key\") or \
         die \"key: $!\\n\"; chmod(0777, $ARGV[0]) or die \"dir: $!\\n\"; printf \"%o %o\\n\", \
         (stat(\"$ARGV[0]/audit.key\"))[2] & 07777, (stat($ARGV[0]))[2] & 07777' \"$s\""
    );
    let rj = json!({"command":["/bin/sh","-c",script],"rawCommand":script,"cwd":ws,
        "env":{"LANG":"C"},"timeoutMs":20_000,"needsScreenRecording":false,"agentId":"main",
        "sessionKey":"agent:main:main","approvalDecision":null})
    .to_string();
    let sock = w.socket();
    let client = std::thread::spawn(move || send_exec(&sock, TOKEN, &rj));
    let id = wait_pending_ids(&w, Duration::from_secs(20))
        .into_iter()
        .next()
        .expect("the script waits for a person");
    let dir = state.to_str().unwrap().to_owned();
    let (code, out, err) = guard_cli(&["inbox", "approve", &id, "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let v = client.join().expect("client");
    assert_eq!(v["ok"], true, "{v}");
    let stdout = v["payload"]["stdout"].as_str().expect("stdout");
    // The run did widen them (the kernel lets the owner chmod; Landlock does not cover it).
    assert!(stdout.contains("666 777"), "{v}");

    // Put back before the answer reached the agent.
    assert_eq!(mode(&key), 0o600, "the audit key");
    assert_eq!(mode(&state), 0o700, "the state dir");
    let audit = audit_with(&w, &["\"tamper\""]);
    let record: Value = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["kind"] == "tamper")
        .expect("a tamper record");
    let entries = record["fields"]["entries"].as_array().expect("entries");
    let seen: Vec<(String, String, String, bool)> = entries
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                e["modeWas"].as_str().unwrap_or_default().to_owned(),
                e["modeNow"].as_str().unwrap_or_default().to_owned(),
                e["restored"] == true,
            )
        })
        .collect();
    for (path, was, now) in [(&key, "0666", "0600"), (&state, "0777", "0700")] {
        let want = (
            path.to_str().unwrap().to_owned(),
            was.to_owned(),
            now.to_owned(),
            true,
        );
        assert!(seen.contains(&want), "{want:?} not in {record:#}");
    }
    assert_eq!(
        record["fields"]["requestId"].as_str().map(str::is_empty),
        Some(false)
    );

    // Nothing loose is left for doctor to name; a file loosened by hand is named.
    let warned = doctor_layout(&state, &w.home);
    assert!(
        !warned.iter().any(|l| l.contains("loose modes")),
        "{warned:#?}"
    );
    drop(serve);
    let log = state.join("audit.jsonl");
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let warned = doctor_layout(&state, &w.home);
    assert!(
        warned
            .iter()
            .any(|l| l.contains("loose modes") && l.contains("audit.jsonl 0644 (want 0600)")),
        "{warned:#?}"
    );
}
