//! What a newcomer sees from the command line says what it means: `inbox list` on an empty
//! inbox, `audit verify` with no file, `serve`'s next step and `doctor`'s root-fs and root-uid
//! lines, `tests/setup.sh`'s progress, and no comment that cites a tracker number instead of
//! saying why.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::path::{Path, PathBuf};
use support::guard::{Serve, World};
use support::process::guard_cli;
use support::tools::NEW;

const TOKEN: &str = "newcomer-token-0123456789abcdef0123";

#[test]
fn an_empty_inbox_says_nothing_pending_and_verify_finds_the_state_dirs_log() {
    let w = World::new(NEW, TOKEN, &[]);
    let mut serve = Serve::start(&w, &[], &[]);
    let state = w.guard_state.to_str().expect("utf8");

    let (code, out, err) = guard_cli(&["inbox", "list", "--state-dir", state], &[]);
    assert_eq!((code, out.trim()), (0, "nothing pending"), "{err}");
    let (code, out, err) = guard_cli(
        &["inbox", "list", "--state", "resolved", "--state-dir", state],
        &[],
    );
    assert_eq!((code, out.trim()), (0, "nothing resolved"), "{err}");
    // The machine-readable form stays an empty list.
    let (code, out, _) = guard_cli(&["inbox", "list", "--json", "--state-dir", state], &[]);
    assert_eq!((code, out.trim()), (0, "[]"));

    // serve's next step, after its start-up block: how a node connects, and where to read.
    let log = serve.log();
    let next = log
        .lines()
        .find(|l| l.contains("next step"))
        .unwrap_or_else(|| panic!("no next step in serve's start-up:\n{log}"));
    assert!(next.contains("sanctum-guard node"), "{next}");
    assert!(next.contains(&w.socket().display().to_string()), "{next}");
    assert!(next.contains("README"), "{next}");
    let root = nix::unistd::getuid().is_root();
    assert_eq!(log.contains("running as root"), root, "{log}");
    serve.stop();

    // No file: the state dir's log (and its rotations), named on stderr.
    let (code, out, err) = guard_cli(&["audit", "verify", "--state-dir", state], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&w.guard_state.join("audit.jsonl").display().to_string()),
        "{err}"
    );
    // Rotated files are found next to it.
    let rotated = w.guard_state.join("audit.000000000001.jsonl");
    std::fs::write(&rotated, "").expect("rotated");
    let (_, _, err) = guard_cli(&["audit", "verify", "--state-dir", state], &[]);
    assert!(err.contains("(2 file(s))"), "{err}");
    std::fs::remove_file(&rotated).expect("rm");
    // A state dir without a log says which file to give.
    let empty = tempfile::tempdir().expect("tmp");
    let (code, _, err) = guard_cli(
        &[
            "audit",
            "verify",
            "--state-dir",
            empty.path().to_str().expect("utf8"),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no audit log at"), "{err}");
    assert!(err.contains("give the log file"), "{err}");
}

#[test]
fn doctor_explains_a_writable_root_and_warns_as_root() {
    let home = tempfile::tempdir().expect("home");
    let (_, out, err) = guard_cli(
        &["doctor"],
        &[
            ("HOME", home.path().to_str().expect("utf8")),
            ("OPENCLAW_STATE_DIR", "/nonexistent-sg"),
        ],
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("root fs read-only:"))
        .unwrap_or_else(|| panic!("no root fs line:\n{out}{err}"));
    let ro = nix::sys::statvfs::statvfs("/")
        .expect("statvfs")
        .flags()
        .contains(nix::sys::statvfs::FsFlags::ST_RDONLY);
    if ro {
        assert!(line.ends_with("yes"), "{line}");
    } else {
        assert!(line.contains("NO (normal on a laptop"), "{line}");
    }
    let root = nix::unistd::getuid().is_root();
    assert_eq!(
        out.contains("warning:             running as root"),
        root,
        "{out}"
    );
}

#[test]
fn setup_prints_one_line_per_step_with_its_duration() {
    let cache = support::tools::cache();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/setup.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("SANCTUM_TEST_CACHE", &cache)
        .output()
        .expect("setup.sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let steps: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("setup: ") && !l.starts_with("setup: ok"))
        .collect();
    for want in [
        "debian packages",
        "podman runtime",
        "node ",
        "openclaw@2026.9.6",
        "openclaw@2026.7.35",
    ] {
        let line = steps
            .iter()
            .find(|l| l.contains(want))
            .unwrap_or_else(|| panic!("no line for {want}:\n{text}"));
        let secs = line
            .rsplit_once('(')
            .and_then(|(_, r)| r.strip_suffix(" s)"))
            .and_then(|n| n.parse::<f64>().ok());
        assert!(secs.is_some(), "no duration: {line}");
    }
    assert!(text.lines().last().unwrap_or("").starts_with("setup: ok"));
}

/// Every file whose comments count: the code, tests, benches, fuzzers, the test data and the
/// configuration shipped with the guard.
fn commented_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let exts = [
        "rs", "toml", "sh", "tsv", "mjs", "js", "json", "c", "py", "yml", "yaml",
    ];
    fn walk(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if name != "target" && name != "corpus" && name != "artifacts" {
                    walk(&p, exts, out);
                }
            } else if p
                .extension()
                .is_some_and(|x| exts.contains(&x.to_string_lossy().as_ref()))
                || name == "run"
            {
                out.push(p);
            }
        }
    }
    for d in [
        "guard", "tests", "benches", "fuzz", "seccomp", "compose", "plugin", ".ci",
    ] {
        walk(&root.join(d), &exts, &mut out);
    }
    for f in ["Cargo.toml", "clippy.toml"] {
        out.push(root.join(f));
    }
    out.sort();
    out
}

/// A tracker citation: the word (or its plural), spaces or `#`, then a number.
fn cites_an_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let word = concat!("iss", "ue");
    lower.match_indices(word).any(|(at, _)| {
        let rest = lower[at + word.len()..].trim_start_matches('s');
        let rest = rest.trim_start_matches([' ', '#']);
        rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[test]
fn no_comment_or_config_note_cites_an_issue_number() {
    let files = commented_files();
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if cites_an_issue(line) {
                bad.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "say what the code does and why; the number belongs in the commit message:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_citation_scanner_sees_each_spelling() {
    let i = concat!("Iss", "ue");
    for (line, want) in [
        (format!("// ({i} 9 item 6)"), true),
        (format!("# {i} #11: x"), true),
        (format!("//! {}s 3 and 4", i.to_lowercase()), true),
        (format!("# {i}:  not a number"), false),
        ("// an issuer of tokens".to_string(), false),
        (format!("// the {i}'s target"), false),
    ] {
        assert_eq!(cites_an_issue(&line), want, "{line}");
    }
}

/// `approver-id` prints the device a deployment approves on the gateway: the key `serve`'s
/// approver uses, created 0600 once and the same id every time after; a state dir another uid
/// owns is refused, not used.
#[test]
fn approver_id_prints_the_one_device_to_approve_and_keeps_it() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let state = tmp.path().join("state");
    let s = state.to_str().expect("utf8");
    let (code, first, err) = guard_cli(&["approver-id", "--state-dir", s], &[]);
    assert_eq!(code, 0, "{err}");
    let first = first.trim().to_owned();
    assert!(
        first.len() == 64 && first.chars().all(|c| c.is_ascii_hexdigit()),
        "{first}"
    );
    let key = state.join("gateway/device-identity.json");
    let mode = std::fs::metadata(&key).expect("key").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&key).expect("key")).expect("json");
    assert_eq!(stored["deviceId"], first.as_str());
    let (code, again, _) = guard_cli(&["approver-id", "--state-dir", s], &[]);
    assert_eq!((code, again.trim()), (0, first.as_str()));
    // A key others can read is refused (it would be as good as the gateway token).
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, out, err) = guard_cli(&["approver-id", "--state-dir", s], &[]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("approver-id:"), "{err}");
    // Another uid's state dir is not trusted.
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).expect("dir");
    nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(4242)), None).expect("chown");
    let (code, _, err) = guard_cli(
        &["approver-id", "--state-dir", theirs.to_str().expect("utf8")],
        &[],
    );
    assert_eq!(code, 2);
    assert!(err.contains("4242"), "{err}");
    assert!(!theirs.join("gateway").exists());
}

/// A token file others can read authenticates anyone who reads it: `node` and `serve`'s
/// gateway approver refuse it at start (exit 2) and say how to fix it.
#[test]
fn token_files_others_can_read_are_refused() {
    let w = World::new(NEW, TOKEN, &[]);
    let token = w.tmp.path().join("gw-token");
    std::fs::write(&token, "a-gateway-token").expect("token");
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let t = token.to_str().expect("utf8");
    let (code, log) = Serve::start_fails(
        &w,
        &[
            "--gateway-url",
            "ws://127.0.0.1:9",
            "--gateway-token-file",
            t,
        ],
    );
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("readable or writable by others"), "{log}");
    let state = w.tmp.path().join("node-state");
    let (code, out, err) = guard_cli(
        &[
            "node",
            "--gateway-url",
            "ws://127.0.0.1:9",
            "--token-file",
            t,
            "--state-dir",
            state.to_str().expect("utf8"),
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("chmod o-rwx"), "{err}");
}
