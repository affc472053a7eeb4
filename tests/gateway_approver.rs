//! The guard as the REAL OpenClaw 2026.9.6 gateway's approver: `serve --gateway-url` connects
//! as an operator with its own device (silently paired on loopback) and resolves every
//! approval the real CLI requests (`openclaw gateway call exec.approval.request`) as the
//! policy says: autonomous → allow-once, blocked → deny, gated → a person at the web prompt
//! (the card names the source `gateway`), nobody → deny before the gateway's deadline; a
//! plugin approval the same way; an approval resolved by another client closes its inbox
//! entry; with the guard away the gateway itself denies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::node::*;
use support::web::Web;

const TOKEN: &str = "gw-approver-socket-token-0123456789";

/// The first JSON object in a CLI's output.
fn json_in(out: &str) -> Value {
    let at = out.find('{').unwrap_or_else(|| panic!("no JSON in {out}"));
    serde_json::Deserializer::from_str(&out[at..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON in {out}"))
}

/// `openclaw gateway call METHOD --params P` as a command (waits for the decision).
fn call_cmd(gw: &Gateway, method: &str, params: &Value) -> std::process::Command {
    let mut c = oc(&gw.home, &gw.state);
    c.args(["gateway", "call", method, "--json", "--timeout", "120000"])
        .args(["--params", &params.to_string()]);
    c
}

fn exec_request(id: &str, command: &str, cwd: &str, timeout_ms: u64) -> Value {
    json!({"id":id,"command":command,"cwd":cwd,"host":"gateway","agentId":"main",
           "sessionKey":"agent:main:approver","timeoutMs":timeout_ms})
}

#[test]
fn the_guard_resolves_the_real_gateways_approvals_as_the_policy_says() {
    let _one = one_gateway_at_a_time();
    let w = World::full(TOKEN);
    let dir = w.tmp.path().to_path_buf();
    let gw = Gateway::start(&dir, 9, json!({}));
    let web = Web::approver_of(w, gw.port, &[]);
    // doctor reports the approver's pairing as serve last saw it.
    let (_, out, err) = guard_cli(
        &["doctor"],
        &[(
            "SANCTUM_STATE_DIR",
            web.world.guard_state.to_str().expect("utf8"),
        )],
    );
    assert!(
        out.contains("gateway approver:    paired as device"),
        "{out}{err}"
    );
    let ws = web.world.oc_state.join("workspace");
    let cwd = ws.to_str().expect("utf8");

    // The requests below but the timed one are made at once (each an `openclaw gateway
    // call` process whose start is most of its time); each is then checked in turn.
    let request = |id: &str, command: &str, timeout_ms: u64| {
        spawn_collect(call_cmd(
            &gw,
            "exec.approval.request",
            &exec_request(id, command, cwd, timeout_ms),
        ))
    };
    let auto = request("auto-1", "ls", 60_000);
    let blocked = request("blocked-1", "cat /etc/shadow", 60_000);
    let gated = request("gated-1", "echo hi > out.txt", 120_000);
    let elsewhere = request("else-1", "echo else > else.txt", 120_000);
    let plugin = spawn_collect(call_cmd(
        &gw,
        "plugin.approval.request",
        &json!({"pluginId":"sanctum-test","title":"Send the report","description":"posts it",
                "toolName":"message","timeoutMs":120_000}),
    ));

    // Autonomous: allow-once at once.
    let out = collect(auto);
    assert_eq!(json_in(&out)["decision"], "allow-once", "{out}");

    // Blocked: deny at once.
    let out = collect(blocked);
    assert_eq!(json_in(&out)["decision"], "deny", "{out}");

    // Gated: waits for a person at the web prompt; the card says `gateway`.
    let login = web.login();
    let entry = web.wait_pending(&login, "gated-1");
    assert_eq!(entry["source"], "gateway", "{entry}");
    let r = web.decide(
        &login,
        entry["id"].as_str().expect("id"),
        json!({"decision":"allow-once","hash":entry["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let out = collect(gated);
    assert_eq!(json_in(&out)["decision"], "allow-once", "{out}");

    // Resolved elsewhere: another operator answers; the inbox entry says so.
    let entry = web.wait_pending(&login, "else-1");
    // Another admin operator (its own device) answers first.
    let (mut other, _) =
        support::gateway::WsClient::operator(&format!("ws://127.0.0.1:{}", gw.port), GW_TOKEN);
    let r = other.call(
        "exec.approval.resolve",
        json!({"id":"else-1","decision":"deny"}),
    );
    assert_eq!(r["ok"], true, "{r}");
    let _ = collect(elsewhere);
    let closed = wait_entry_where(&web.world, Duration::from_secs(20), |e| {
        e["id"] == entry["id"] && e["state"] != "pending"
    })
    .expect("the entry closes");
    assert!(
        closed.to_string().contains("resolved-elsewhere"),
        "{closed}"
    );

    // A plugin approval: gated, approved through the web prompt.
    let entry = wait_until("the plugin entry", Duration::from_secs(30), || {
        web.pending(&login).into_iter().find(|e| {
            e["requestId"]
                .as_str()
                .is_some_and(|i| i.starts_with("plugin:"))
        })
    });
    assert_eq!(entry["source"], "gateway", "{entry}");
    let r = web.decide(
        &login,
        entry["id"].as_str().expect("id"),
        json!({"decision":"allow-once","hash":entry["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let out = collect(plugin);
    assert_eq!(json_in(&out)["decision"], "allow-once", "{out}");

    // Gated, nobody decides: denied before the gateway's own deadline. Made alone, so its
    // process starts as fast as it can and the time measured is the wait.
    let started = Instant::now();
    let out = collect(request("slow-1", "echo slow > slow.txt", 8_000));
    assert_eq!(json_in(&out)["decision"], "deny", "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(8) + Duration::from_secs(5),
        "the guard answers before the gateway expires it"
    );
    let audit = web.audit();
    assert!(audit.contains("slow-1"), "audited");

    // The guard away: the gateway has no approval route and denies by itself.
    // (No other approver either: the second operator leaves too.)
    drop(other);
    let Web { mut serve, .. } = web;
    assert_eq!(serve.stop(), Some(0));
    let started = Instant::now();
    let out = collect(spawn_collect(call_cmd(
        &gw,
        "exec.approval.request",
        &exec_request("away-1", "echo away", cwd, 60_000),
    )));
    assert_ne!(json_in(&out)["decision"], "allow-once", "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no approval route: expired at once, not at expiresAtMs: {out}"
    );
    eprintln!("with the guard away the gateway answered: {out}");
}

/// One prompt per exec: under the Sanctum config (exec bound to the guard's node, the
/// gateway's `tools.exec` not asking, the node answering `execPolicy {full, off}`) an agent's
/// gated exec on the node is decided once, by the node's request, even with the guard also
/// connected as the gateway's approver: exactly one inbox entry, none from the gateway.
#[test]
fn a_node_exec_under_the_sanctum_config_is_asked_once() {
    let _one = one_gateway_at_a_time();
    let w = World::full(TOKEN);
    let dir = w.tmp.path().to_path_buf();
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("sub")).expect("ws");
    let (_model, model_port, _log) = start_model(&dir);
    let gw = Gateway::start(&dir, model_port, json!({}));
    let token = dir.join("gw-token-approver");
    support::process::write_secret(&token, GW_TOKEN);
    let url = format!("ws://127.0.0.1:{}", gw.port);
    let serve = Serve::start(
        &w,
        &[],
        &[
            "--workspace",
            ws.to_str().expect("utf8"),
            "--web-listen",
            "off",
            "--gateway-url",
            &url,
            "--gateway-token-file",
            token.to_str().expect("utf8"),
            "--allow-unsafe-posture",
        ],
    );
    wait_until("the approver to connect", Duration::from_secs(60), || {
        serve
            .log()
            .contains("gateway approver connected")
            .then_some(())
    });
    let _node = NodeProc::start_for_guard(&dir, &gw, &w, &ws);
    let state = w.guard_state.to_str().expect("utf8").to_owned();
    let cmd = "echo once > sub/once.txt";
    let turn = spawn_collect(gw.agent_cmd("once", cmd));
    let (id, req) = wait_until("the gated entry", Duration::from_secs(180), || {
        pending(&w.guard_state)
            .into_iter()
            .find(|(_, r)| r["action"]["argv"][2] == cmd)
    });
    assert_eq!(req["who"]["source"], "node");
    let (code, o, e) = guard_cli(&["inbox", "approve", &id, "--state-dir", &state], &[]);
    assert_eq!(code, 0, "{o}{e}");
    let out = collect(turn);
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/once.txt")).unwrap_or_default(),
        "once\n",
        "{out}"
    );
    let all = inbox_all(&w);
    assert_eq!(all.len(), 1, "exactly one prompt for one exec: {all:?}");
    assert!(
        !std::fs::read_to_string(w.audit_path())
            .unwrap_or_default()
            .contains("gatewayApproval"),
        "the gateway asked nothing"
    );
}
