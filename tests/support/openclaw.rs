//! Helpers of tests/openclaw_formats.rs: throwaway state dirs, the sample document, and the
//! effective policy as OpenClaw reports it and as we compute it (the CLI and JS runners are
//! in `tools`).

use sanctum_guard::openclaw::document::{ApprovalsDocument, Ask, Security};
use sanctum_guard::openclaw::resolve::{effective_with_config, ConfigPolicy};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

pub use super::tools::*;

/// Throwaway HOME and OpenClaw state dir (removed on drop).
pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub state: PathBuf,
}

/// A fresh [`Env`] (the state dir is left for the code under test to create).
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

/// Lowercase hex SHA-256 of `text` (OpenClaw's document hash).
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// tests/data/openclaw/sample-approvals.json with its socket path filled in.
pub fn sample_doc(socket_path: &Path) -> ApprovalsDocument {
    let file = super::process::repo_root().join("tests/data/openclaw/sample-approvals.json");
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

/// The policy our resolver computes for agent `main` with the default config.
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
