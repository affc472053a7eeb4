//! `run_as`: a guard running as root gives every run another uid and gid, so a run owns none
//! of the guard's files. Landlock does not cover metadata (chmod/utime), so without this an
//! approved run under the guard's own uid could loosen the guard's state dir, audit key and
//! tokens. Shown against the real `serve` through the socket: an autonomous run and an
//! approved run both carry the configured identity with no supplementary groups; the approved
//! run writes the workspace and its private tmp, and its chmod of the guard's state dir and
//! utime of its audit log are refused by the kernel, as is a signal to the guard; an identity the guard cannot separate stops the start.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;
use support::process::guard_cli;
use support::socket::*;

const TOKEN: &str = "run-as-test-token-0123456789abcdefgh";
/// An identity no file of the test machine belongs to.
const RUN_UID: u32 = 64_123;
const RUN_GID: u32 = 64_124;

fn exec(sock: &Path, argv: &[&str], cwd: &Path) -> Value {
    // OpenClaw's node host names a shell wrapper's script as the raw command.
    let raw = match argv {
        [_, "-c", script] => (*script).to_owned(),
        _ => argv.join(" "),
    };
    let rj = json!({"command":argv,"rawCommand":raw,"cwd":cwd,"env":{"LANG":"C"},
        "timeoutMs":20_000,"needsScreenRecording":false,"agentId":"main",
        "sessionKey":"agent:main:main","approvalDecision":null})
    .to_string();
    let v = send_exec(sock, TOKEN, &rj);
    assert_eq!(v["type"], "exec-res", "{v}");
    v
}

/// The `Uid:`/`Gid:`/`Groups:` lines of a `/proc/self/status` dump.
fn ids(status: &str) -> Vec<String> {
    status
        .lines()
        .filter(|l| l.starts_with("Uid:") || l.starts_with("Gid:") || l.starts_with("Groups:"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn runs_take_the_configured_identity_and_cannot_touch_the_guards_files() {
    if !nix::unistd::Uid::effective().is_root() || support::process::guard_uid().is_some() {
        eprintln!("skipped: run_as needs the guard to run as root (tests/run runs as root)");
        return;
    }
    let w = World::new(NEW, TOKEN, &[]);
    // The run's uid may pass through the test's directories to the workspace, which is its
    // own (a laptop: the user's project); the guard's state dir stays root's, 0700.
    std::fs::set_permissions(w.tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let ws = w.tmp.path().join("project");
    std::fs::create_dir_all(&ws).expect("ws");
    std::os::unix::fs::chown(&ws, Some(RUN_UID), Some(RUN_GID)).expect("chown ws");
    let cfg = w.write_config("[deadlines]\nexec_ms = 20000\nmargin_ms = 1000\n");
    let run_as = format!("{RUN_UID}:{RUN_GID}");
    let serve = Serve::start(
        &w,
        &[("SANCTUM_RUN_AS", run_as.as_str())],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
    );
    let state = w.guard_state.clone();
    let mode_before = std::fs::metadata(&state).expect("state").mode() & 0o7777;

    // Autonomous: the run is the configured identity, with no supplementary groups.
    let v = exec(&w.socket(), &["/usr/bin/cat", "/proc/self/status"], &ws);
    assert_eq!(v["ok"], true, "{v}");
    let status = v["payload"]["stdout"].as_str().expect("stdout");
    assert_eq!(
        ids(status),
        vec![
            format!("Uid: {RUN_UID} {RUN_UID} {RUN_UID} {RUN_UID}"),
            format!("Gid: {RUN_GID} {RUN_GID} {RUN_GID} {RUN_GID}"),
            "Groups:".to_owned(),
        ],
        "{status}"
    );

    // Approved: writes the workspace and its private tmp as that identity; the chmod of the
    // guard's state dir (which Landlock would not stop) fails: the run does not own it.
    // The state dir's path is hidden from the analysis (which would refuse to run a command
    // naming it), as a hostile agent would hide it: the person approves what looks like a
    // harmless script, and only the kernel is left to say no.
    use base64::Engine as _;
    let hidden =
        base64::engine::general_purpose::STANDARD.encode(state.as_os_str().as_encoded_bytes());
    let script = format!(
        "id -u; touch {ws}/approved; echo touch=$?; echo x > \"$TMPDIR/probe\" && echo tmp=ok; \
         s=$(echo {hidden} | base64 -d); \
         perl -e 'chmod(0777, $ARGV[0]) or die \"chmod: $!\\n\"' \"$s\"; echo chmod=$?; \
         touch -d 2000-01-01 \"$s/audit.jsonl\"; echo utime=$?; \
         kill -0 {guard} 2>/dev/null; echo signal=$?",
        ws = ws.display(),
        guard = serve.pid(),
    );
    let (sock, cwd) = (w.socket(), ws.clone());
    let client = std::thread::spawn(move || exec(&sock, &["/bin/sh", "-c", &script], &cwd));
    let id = loop {
        if let Some(id) = pending_ids(&w).into_iter().next() {
            break id;
        }
        assert!(
            !client.is_finished(),
            "answered without asking a person: {}",
            client.join().expect("client")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let dir = state.to_str().expect("utf8").to_owned();
    let (code, out, err) = guard_cli(&["inbox", "approve", &id, "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let v = client.join().expect("client");
    assert_eq!(v["ok"], true, "{v}");
    let out = v["payload"]["stdout"].as_str().expect("stdout");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&RUN_UID.to_string().as_str()), "{v}");
    assert!(lines.contains(&"touch=0"), "{v}");
    assert!(
        lines.contains(&"tmp=ok"),
        "the private tmp is the run's: {v}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("chmod=") && *l != "chmod=0"),
        "{v}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("utime=") && *l != "utime=0"),
        "{v}"
    );
    // Refused by the kernel for ownership, not by anything else on the way.
    let err = v["payload"]["stderr"].as_str().expect("stderr");
    assert!(err.contains("chmod: Operation not permitted"), "{v}");
    assert!(
        lines.contains(&"signal=1"),
        "the run may not signal the guard: {v}"
    );
    let made = std::fs::metadata(ws.join("approved")).expect("the approved run wrote");
    assert_eq!((made.uid(), made.gid()), (RUN_UID, RUN_GID));
    assert_eq!(
        std::fs::metadata(&state).expect("state").mode() & 0o7777,
        mode_before,
        "the guard's state dir is unchanged"
    );
    let audit = std::fs::metadata(state.join("audit.jsonl")).expect("audit");
    assert!(
        audit.mtime() > 946_684_800,
        "the audit log's time is unchanged"
    );
    drop(serve);
}

#[test]
fn an_identity_the_guard_cannot_separate_stops_the_start() {
    let w = World::new(NEW, TOKEN, &[]);
    let me = nix::unistd::Uid::effective().as_raw();
    let own = format!("run_as = \"{me}:{me}\"\n");
    let mut cases = vec![
        ("run_as = \"0:0\"\n", "runs may not be root"),
        ("run_as = \"1000\"\n", "needs its gid"),
        (
            "run_as = \"no-such-user-7f3a\"\n",
            "no user no-such-user-7f3a",
        ),
    ];
    // As root the guard's own uid is root, refused above; a non-root guard is refused both
    // its own uid and any other (it cannot switch).
    if me != 0 {
        cases.push((own.as_str(), "guard's own uid"));
        cases.push((
            "run_as = \"64123:64123\"\n",
            "needs the guard to run as root",
        ));
    }
    for (config, says) in cases {
        let cfg = w.write_config(config);
        let (code, err) = Serve::start_fails(&w, &["--config", cfg.to_str().expect("utf8")]);
        assert_eq!(code, 2, "{config}: {err}");
        assert!(err.contains(says), "{config}: {err}");
    }
}
