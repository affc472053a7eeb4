//! The posture check against the REAL OpenClaw 2026.9.6 gateway: `serve`
//! with a gateway url asks it for its effective config and plugins, and refuses to serve
//! when OpenClaw could act without the guard (here: the test gateway has no Sanctum plugin
//! and lets chat directives through), naming each finding; `--allow-unsafe-posture` serves
//! anyway and says so; a gateway that cannot be checked leaves every decision a deny.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::node::*;

const TOKEN: &str = "gw-posture-socket-token-0123456789";

fn gateway_args(w: &World, port: u16) -> Vec<String> {
    let token = w.tmp.path().join("gw-token");
    support::process::write_secret(&token, GW_TOKEN);
    vec![
        "--web-listen".into(),
        "off".into(),
        "--gateway-url".into(),
        format!("ws://127.0.0.1:{port}"),
        "--gateway-token-file".into(),
        token.to_str().expect("utf8").into(),
    ]
}

fn posture_file(w: &World) -> Value {
    let text =
        std::fs::read_to_string(w.guard_state.join("gateway-posture.json")).expect("posture file");
    serde_json::from_str(&text).expect("json")
}

#[test]
fn serve_refuses_a_gateway_that_can_act_without_it_unless_told() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_model, model_port, _) = start_model(dir.path());
    let gw = Gateway::start(dir.path(), model_port, json!({}));
    let w = World::new(NEW, TOKEN, &[]);
    let args = gateway_args(&w, gw.port);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // Refused: serve exits non-zero before serving, naming every finding and the override.
    let mut child = Serve::command(&w, &args).spawn().expect("spawn serve");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "serve never gave up"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert!(!status.success(), "serve ran on an unsafe gateway: {err}");
    for needle in ["plugin:", "directives:", "--allow-unsafe-posture"] {
        assert!(err.contains(needle), "no {needle:?} in: {err}");
    }
    assert!(!err.contains("sanctum-guard: serving"), "{err}");
    assert!(!err.contains(GW_TOKEN), "the gateway token was printed");
    let p = posture_file(&w);
    assert_eq!(p["posture"]["state"], "unsafe", "{p}");
    assert_eq!(p["enforced"], true, "{p}");

    // Told: it serves, reports the same findings, and decides as the policy says.
    let serve = Serve::start(
        &w,
        &[],
        &[args.as_slice(), &["--allow-unsafe-posture"]].concat(),
    );
    let p = posture_file(&w);
    assert_eq!(p["posture"]["state"], "unsafe", "{p}");
    assert_eq!(p["enforced"], false, "{p}");
    let codes: Vec<&str> = p["posture"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert_eq!(codes, vec!["plugin", "directives"], "{p}");
    assert!(serve.log().contains("NOT enforced"), "{}", serve.log());
    let r = raw_exchange(
        &w.socket(),
        request_line(TOKEN, "told", "ls").as_bytes(),
        true,
    );
    assert_eq!(first_json(&r)["decision"], "allow-once", "{r}");
}

/// A gateway the guard cannot reach cannot be checked: serve starts after its wait, and every
/// decision (even one the policy allows) is a deny whose record says why.
#[test]
fn an_unchecked_gateway_leaves_every_decision_a_deny() {
    let w = World::new(NEW, TOKEN, &[]);
    let closed = free_port();
    let args = gateway_args(&w, closed);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&w, &[], &args);
    assert!(
        serve.log().contains("gateway posture not checked yet"),
        "{}",
        serve.log()
    );
    let r = raw_exchange(
        &w.socket(),
        request_line(TOKEN, "unchecked", "ls").as_bytes(),
        true,
    );
    let v = first_json(&r);
    // OpenClaw's `request` reply carries only the decision; the reason is in the log.
    assert_eq!(v["decision"], "deny", "{r}");
    // The record of an answer that runs nothing follows the answer within milliseconds.
    wait_until("the deny's record", Duration::from_secs(10), || {
        std::fs::read_to_string(w.audit_path())
            .ok()?
            .contains("posture-unchecked: the approver has not reached the gateway yet")
            .then_some(())
    });
}
