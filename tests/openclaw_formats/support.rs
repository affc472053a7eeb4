//! Helpers for tests/openclaw_formats.rs: locating and running the real OpenClaw CLI and its
//! JS functions, throwaway state dirs, the sample document.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::openclaw::document::{ApprovalsDocument, Ask, Security};
use sanctum_guard::openclaw::resolve::{effective_with_config, ConfigPolicy};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const SQLITE_VERSION: &str = "2026.9.6";
pub const JSON_VERSION: &str = "2026.7.35";

pub fn cache() -> PathBuf {
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
pub fn openclaw(version: &str, home: &Path, state: &Path, args: &[&str]) -> String {
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
pub fn approvals_get(version: &str, home: &Path, state: &Path) -> Value {
    let out = openclaw(version, home, state, &["approvals", "get", "--json"]);
    let start = out.find('{').expect("json in approvals get output");
    serde_json::from_str(&out[start..]).expect("approvals get --json parses")
}

pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub state: PathBuf,
}

pub fn env() -> Env {
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

pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

pub fn openclaw_dist(version: &str) -> PathBuf {
    let dir = cache().join(format!("openclaw-{version}/node_modules/openclaw/dist"));
    assert!(
        dir.is_dir(),
        "OpenClaw {version} missing at {}: run tests/setup.sh",
        dir.display()
    );
    dir
}

/// The dist chunk that defines `function name(` and the minified name it exports it under.
pub fn js_export(version: &str, name: &str) -> (PathBuf, String) {
    let defines = format!("function {name}(");
    let exports = format!("{name} as ");
    std::fs::read_dir(openclaw_dist(version))
        .unwrap()
        .filter_map(|f| f.ok().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mjs"))
        .find_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            text.contains(&defines).then_some(())?;
            let at = text.rfind(&exports)?;
            let export: String = text[at + exports.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            Some((p, export))
        })
        .unwrap_or_else(|| panic!("no OpenClaw {version} chunk exports {name}"))
}

/// Calls OpenClaw's own JS function `name` once per argument list; returns the results.
pub fn run_js(version: &str, name: &str, args: &[Value]) -> Value {
    let (chunk, export) = js_export(version, name);
    let script = format!(
        "import * as m from {chunk:?}; let d=''; process.stdin.on('data',c=>d+=c).on('end',()=>{{\
         process.stdout.write(JSON.stringify(JSON.parse(d).map(a=>m[{export:?}](...a))))}});",
        chunk = chunk.to_str().unwrap(),
    );
    let mut child = Command::new(cache().join("node/bin/node"))
        .args(["--input-type=module", "-e", &script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node");
    use std::io::Write;
    let input = serde_json::to_vec(args).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "node failed: {:?}",
        out.status.signal()
    );
    let results: Value = serde_json::from_slice(&out.stdout).expect("node output");
    assert_eq!(results.as_array().map(Vec::len), Some(args.len()));
    results
}

/// tests/data/openclaw/sample-approvals.json with its socket path filled in.
pub fn sample_doc(socket_path: &Path) -> ApprovalsDocument {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openclaw/sample-approvals.json");
    let text = std::fs::read_to_string(&file).expect("sample document");
    let path = serde_json::to_string(socket_path.to_str().unwrap()).unwrap();
    ApprovalsDocument::parse_lenient(&text.replace("\"@SOCKET@\"", &path)).expect("sample doc")
}

/// Our document as OpenClaw shows it (`approvals get` drops the token).
pub fn without_token(doc: &ApprovalsDocument) -> Value {
    let mut v = serde_json::to_value(doc).unwrap();
    let socket = v["socket"].as_object_mut().unwrap();
    socket.remove("token");
    if !socket.contains_key("path") {
        v.as_object_mut().unwrap().remove("socket");
    }
    v
}

/// The policy OpenClaw's `approvals get --json` reports for agent `main` with the default
/// config (`tools.exec` unset: full/off).
pub fn openclaw_effective(got: &Value) -> (String, String, String) {
    let scope = got["effectivePolicy"]["scopes"]
        .as_array()
        .and_then(|s| {
            // 2026.9.6 labels the main scope with agentId; 2026.7.35 only as `tools.exec`.
            s.iter()
                .find(|s| s["agentId"] == "main")
                .or_else(|| s.iter().find(|s| s["scopeLabel"] == "tools.exec"))
        })
        .unwrap_or_else(|| panic!("no scope for main in {got}"));
    let s = |v: &Value| v.as_str().unwrap().to_string();
    (
        s(&scope["security"]["effective"]),
        s(&scope["ask"]["effective"]),
        s(&scope["askFallback"]["effective"]),
    )
}

pub fn ours_effective(doc: &ApprovalsDocument) -> (String, String, String) {
    let p = effective_with_config(
        doc,
        "main",
        ConfigPolicy {
            security: Security::Full,
            ask: Ask::Off,
        },
    );
    (
        p.values.security.as_str().into(),
        p.values.ask.as_str().into(),
        p.values.ask_fallback.as_str().into(),
    )
}
