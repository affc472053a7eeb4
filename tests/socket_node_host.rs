//! Recipe B (docs/openclaw-protocol.md §5): the REAL OpenClaw 2026.9.6 gateway and node host (with
//! the darwin override, so it uses the exec-host socket) send HMAC `exec` frames to the real
//! `serve`, which runs the command under the sandbox and returns its output; a command the
//! guard blocks comes back from the node host as SYSTEM_RUN_DENIED.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::node::spawn_gateway;
use support::socket::*;

const TOKEN: &str = "recipe-b-token-0123456789abcdefghi";
const GW_TOKEN: &str = "gateway-test-token";

/// Runs an operator CLI command against the gateway; (success, stdout+stderr).
fn operator(cli_home: &Path, cli_state: &Path, port: u16, args: &[&str]) -> (bool, String) {
    let url = format!("ws://127.0.0.1:{port}");
    let out = openclaw_command(NEW, cli_home, cli_state)
        .args(args)
        .args(["--url", &url, "--token", GW_TOKEN])
        .output()
        .expect("openclaw cli");
    (out.status.success(), output_text(&out))
}

#[test]
fn real_node_host_exec_runs_under_the_guard_and_denies_are_system_run_denied() {
    // The node host checks its own allowlist before the socket: both binaries pass it, so
    // the guard is the one deciding.
    let w = World::new(NEW, TOKEN, &["/usr/bin/uname", "/usr/bin/cat"]);
    let serve = Serve::start(&w, &[], &[]);
    let t = w.tmp.path();
    let (gw_home, gw_state) = (t.join("gw-home"), t.join("gw-state"));
    std::fs::create_dir_all(&gw_home).expect("mkdir");
    // The operator CLI runs as the gateway's own user (same home and state), as in recipe B.
    let (cli_home, cli_state) = (gw_home.clone(), gw_state.clone());
    let port = free_port();
    let gw_log = t.join("gateway.log");
    let _gateway = spawn_gateway(&gw_home, &gw_state, port, GW_TOKEN, &gw_log);
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "gateway did not start: {}",
            std::fs::read_to_string(&gw_log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // It listens before its plugins finish loading; "ready" is logged once they have.
    wait_for_file_text(&gw_log, "ready", Duration::from_secs(30));

    let darwin = t.join("darwin.mjs");
    std::fs::write(
        &darwin,
        "Object.defineProperty(process,\"platform\",{value:\"darwin\"})\n",
    )
    .expect("darwin");
    let node_log = t.join("node.log");
    let _node = ChildGuard::spawn_group(
        "node host",
        openclaw_command(NEW, &w.home, &w.oc_state)
            .args([
                "node",
                "run",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--no-tls",
            ])
            .args(["--display-name", "guardtest"])
            .env("OPENCLAW_GATEWAY_TOKEN", GW_TOKEN)
            .env("OPENCLAW_NODE_EXEC_HOST", "app")
            .env("NODE_OPTIONS", format!("--import {}", darwin.display()))
            .current_dir(&w.home)
            .stdout(std::fs::File::create(&node_log).expect("log"))
            .stderr(Stdio::inherit()),
    );

    // Approve the node's capability surface (pairing is silent on loopback).
    let start = Instant::now();
    let mut last = String::new();
    let node_id = loop {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "node never asked for approval: {last}"
        );
        let (_, out) = operator(&cli_home, &cli_state, port, &["nodes", "pending", "--json"]);
        last = out.clone();
        let start_json = out.find(['[', '{']).unwrap_or(out.len());
        let listed: Option<Value> = serde_json::from_str(out[start_json..].trim()).ok();
        // `nodes pending --json` prints an array (older builds an object with `pending`).
        let first = listed.and_then(|v| v.get(0).or_else(|| v["pending"].get(0)).cloned());
        if let Some(p) = first {
            let rid = p["requestId"].as_str().expect("requestId").to_owned();
            let (ok, out) = operator(&cli_home, &cli_state, port, &["nodes", "approve", &rid]);
            assert!(ok, "nodes approve: {out}");
            break p["nodeId"].as_str().expect("nodeId").to_owned();
        }
        std::thread::sleep(Duration::from_millis(500));
    };

    let invoke = |argv: &[&str], key: &str| -> String {
        let params = json!({"nodeId": node_id, "command": "system.run",
            "params": {"command": argv, "agentId": "main"}, "idempotencyKey": key});
        let start = Instant::now();
        loop {
            let (_, out) = operator(
                &cli_home,
                &cli_state,
                port,
                &[
                    "gateway",
                    "call",
                    "node.invoke",
                    "--json",
                    "--params",
                    &params.to_string(),
                ],
            );
            // Right after approval the node may still be re-announcing itself: retry.
            if out.contains("awaiting operator approval")
                || out.contains("not connected")
                || out.contains("NOT_CONNECTED")
            {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "node not ready: {out}"
                );
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
            return out;
        }
    };

    let out = invoke(&["/usr/bin/uname", "-s"], "k-uname");
    let v = first_json_object(&out).unwrap_or_else(|| {
        panic!(
            "no JSON from node.invoke: {out}\nguard log:\n{}",
            serve.log()
        )
    });
    assert_eq!(v["ok"], true, "{out}");
    assert_eq!(v["payload"]["stdout"], "Linux\n", "{out}");
    assert_eq!(v["payload"]["exitCode"], 0, "{out}");

    let secret = w.home.join(".ssh/id_rsa");
    std::fs::create_dir_all(secret.parent().expect("parent")).expect("mkdir .ssh");
    std::fs::write(&secret, "PRIVATE KEY MATERIAL").expect("key");
    let out = invoke(&["/usr/bin/cat", secret.to_str().expect("utf8")], "k-cat");
    assert!(
        out.contains("SYSTEM_RUN_DENIED"),
        "node host must report SYSTEM_RUN_DENIED: {out}"
    );
    assert!(!out.contains("PRIVATE KEY MATERIAL"), "{out}");

    let audit = std::fs::read_to_string(w.audit_path()).expect("audit");
    assert!(audit.contains("\"kind\":\"exec\""), "the run is audited");
    assert!(
        audit.contains("sensitive-path"),
        "the deny reason is audited"
    );
}
