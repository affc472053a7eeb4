//! What the Sanctum plugin adds to an autonomous tool call: its hook, entered → returned,
//! against the real `sanctum-guard serve`, over 500 `read` calls (plugin/bench/latency.mjs).
//! The figure is printed; the bound asserted is loose (debug builds on a shared machine),
//! the target (p99 ≤ 5 ms) is for a release build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::path::Path;
use std::process::Command;
use support::socket::*;

const TOKEN: &str = "plugin-latency-token-0123456789abcd";

#[test]
fn autonomous_tool_calls_cost_the_plugin_little() {
    let w = World::full(TOKEN);
    let ws = w.tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("a.txt"), "a").expect("file");
    let _serve = Serve::start(&w, &HIGH_RATE, &["--workspace", ws.to_str().expect("utf8")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin/bench/latency.mjs");
    let out = Command::new(node())
        .arg(script)
        .arg(w.socket())
        .arg(TOKEN)
        .arg("500")
        .arg("a.txt")
        .output()
        .expect("node");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("json");
    eprintln!("plugin latency per autonomous call: {v}");
    assert_eq!(v["allowed"], 500, "every read is allowed: {v}");
    assert!(v["p99Ms"].as_f64().expect("p99") < 250.0, "{v}");
}
