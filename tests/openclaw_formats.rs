//! OpenClaw's approvals formats against the real OpenClaw CLI (2026.9.6 SQLite era, 2026.7.35
//! JSON era) and its real JavaScript hash function. Needs `tests/setup.sh` (Node 24 and both
//! OpenClaw versions under `.cache/`, or `SANCTUM_TEST_CACHE`).

use sanctum_guard::openclaw::socket::ensure_socket;
use sanctum_guard::openclaw::store::{Era, Store, JSON_FILE, SQLITE_FILE};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

const SQLITE_VERSION: &str = "2026.9.6";

fn cache() -> PathBuf {
    let dir = std::env::var_os("SANCTUM_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache"));
    let node = dir.join("node/bin/node");
    assert!(
        node.is_file(),
        "Node 24 missing at {}: run tests/setup.sh (or set SANCTUM_TEST_CACHE)",
        node.display()
    );
    dir
}

/// Runs the real `openclaw` CLI of `version` against `state` with a throwaway HOME.
fn openclaw(version: &str, home: &Path, state: &Path, args: &[&str]) -> String {
    let cache = cache();
    let bin = cache.join(format!("openclaw-{version}/node_modules/.bin/openclaw"));
    assert!(
        bin.exists(),
        "{} missing: run tests/setup.sh",
        bin.display()
    );
    let path = format!(
        "{}:{}",
        cache.join("node/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&bin)
        .args(args)
        .env("PATH", path)
        .env("HOME", home)
        .env("OPENCLAW_STATE_DIR", state)
        .env("OPENCLAW_HIDE_BANNER", "1")
        .env("OPENCLAW_SUPPRESS_NOTES", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("run openclaw");
    assert!(
        out.status.success(),
        "openclaw {version} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8 stdout")
}

/// `openclaw approvals get --json`, parsed (first JSON object in stdout).
fn approvals_get(version: &str, home: &Path, state: &Path) -> Value {
    let out = openclaw(version, home, state, &["approvals", "get", "--json"]);
    let start = out.find('{').expect("json in approvals get output");
    serde_json::from_str(&out[start..]).expect("approvals get --json parses")
}

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).expect("home");
    let state = tmp.path().join("state");
    Env {
        home,
        state,
        _tmp: tmp,
    }
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[test]
fn ensure_socket_seeds_a_sqlite_store_openclaw_reads() {
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let config = ensure_socket(&store).unwrap();
    assert_eq!(config.path, e.state.join("exec-approvals.sock"));
    assert_eq!(config.token.len(), 32);
    assert!(!e.state.join(JSON_FILE).exists(), "legacy JSON created");
    // Idempotent: a second call returns the stored values, not new ones.
    assert_eq!(ensure_socket(&store).unwrap(), config);

    let got = approvals_get(SQLITE_VERSION, &e.home, &e.state);
    assert_eq!(got["exists"], json!(true));
    assert_eq!(
        got["file"]["socket"]["path"],
        json!(config.path.to_str().unwrap())
    );
    assert!(
        got["file"]["socket"].get("token").is_none(),
        "OpenClaw redacts the token"
    );
    let raw = store.read_raw().unwrap().unwrap();
    assert_eq!(
        got["hash"],
        json!(sha256_hex(&raw)),
        "OpenClaw read our exact bytes"
    );
    let conn = rusqlite::Connection::open(e.state.join(SQLITE_FILE)).unwrap();
    let (has_token, socket_path): (i64, String) = conn
        .query_row(
            "SELECT has_socket_token, socket_path FROM exec_approvals_config WHERE config_key='current'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(has_token, 1);
    assert_eq!(socket_path, config.path.to_str().unwrap());
}

#[test]
fn ensure_socket_reads_the_token_openclaw_generated() {
    let e = env();
    let doc = e.home.join("doc.json");
    std::fs::write(
        &doc,
        r#"{"version":1,"socket":{"path":"~/oc.sock"},"defaults":{"security":"allowlist","ask":"on-miss"}}"#,
    )
    .unwrap();
    openclaw(
        SQLITE_VERSION,
        &e.home,
        &e.state,
        &["approvals", "set", "--file", doc.to_str().unwrap()],
    );
    let store = Store::open(&e.state, Era::Json).unwrap();
    assert_eq!(
        store.era(),
        Era::Sqlite,
        "detected from the existing database"
    );
    let before = store.read_raw().unwrap().unwrap();
    let token = store
        .read()
        .unwrap()
        .unwrap()
        .socket_token()
        .unwrap()
        .to_string();
    assert_eq!(token.len(), 32, "OpenClaw generated a 32-char token");
    let config = ensure_socket(&store).unwrap();
    assert_eq!(config.token, token);
    assert_eq!(
        config.path,
        sanctum_guard::openclaw::store::expand_home("~/oc.sock")
    );
    assert_eq!(
        store.read_raw().unwrap().unwrap(),
        before,
        "nothing rewritten"
    );
}
