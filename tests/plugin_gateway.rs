//! The Sanctum plugin (plugin/) in the REAL OpenClaw 2026.9.6 gateway, installed from this
//! repository with `openclaw plugins install --link`, with real agent turns (the scripted
//! model) and the real `sanctum-guard serve` with its web prompt: a read runs at once, a
//! write waits in the inbox with its content preview and runs only after a person approves
//! it through the web API, a denied write never runs and the agent reads why, a sensitive
//! read is blocked, a web_fetch GET of a loopback address waits for a person and runs once
//! approved, and with the guard stopped every call is blocked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;
use support::node::*;
use support::web::{Login, Web, TOKEN};

const MARKER: &str = "marker-plugin-7e2a";
const FETCHED: &str = "fetched-plugin-91c4";
const SECRET: &str = "secret-key-plugin-55d0";

fn has(results: &[String], needle: &str) -> bool {
    results.iter().any(|r| r.contains(needle))
}

/// A loopback HTTP server answering every request with [`FETCHED`]; its port.
fn http_server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut s = s;
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.read(&mut buf);
            let body = format!("<html><body><p>{FETCHED}</p></body></html>");
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// The pending inbox entry of the plugin's `name` tool call, as the web page lists it.
fn wait_tool(web: &Web, login: &Login, name: &str, path: &str) -> Value {
    wait_until(
        &format!("the pending {name} of {path}"),
        Duration::from_secs(240),
        || {
            web.pending(login).into_iter().find(|e| {
                e["action"]["kind"] == "tool"
                    && e["action"]["name"] == name
                    && e["action"]["paths"][0] == path
            })
        },
    )
}

fn install_plugin(home: &Path, state: &Path) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin");
    let out = oc(home, state)
        .args([
            "plugins",
            "install",
            "--link",
            "--force",
            "--accept-capabilities",
        ])
        .arg(&dir)
        .output()
        .expect("plugins install");
    assert!(out.status.success(), "{}", output_text(&out));
}

#[test]
fn every_tool_call_asks_the_guard_through_the_plugin() {
    let _one = one_gateway_at_a_time();
    let tmp = tempfile::Builder::new()
        .prefix("sg-plugin-")
        .tempdir()
        .expect("tmp");
    let dir = tmp.path();
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("readme.txt"), MARKER).expect("marker");
    let mut web = Web::start_with(
        120_000,
        &["--workspace", ws.to_str().expect("utf8")],
        "http",
    );
    let login = web.login();
    let (_model, model_port, model_log) = start_model(dir);
    let fetch_port = http_server();
    let sock = web.world.socket();
    let cfg = json!({
        "agents":{"defaults":{"workspace":ws}},
        // OpenClaw's own SSRF guard refuses loopback; the fetch target here is the test's.
        "tools":{"web":{"fetch":{"ssrfPolicy":{"dangerouslyAllowPrivateNetwork":true}}},
                 "elevated":{"enabled":false}},
        // Chat directives are plain text (the Sanctum posture, checked below).
        "commands":{"allowFrom":{"*":["<nobody>"]}},
        "plugins":{"entries":{"sanctum":{
            "config":{"socketPath":sock,"token":TOKEN,"askTimeoutMs":120000},
            "hooks":{"timeouts":{"before_tool_call":130000}}}}}});
    let gw = Gateway::start_prepared(dir, model_port, cfg, install_plugin);
    // The agent's own secret: were a blocked read to run, its content would reach the model.
    std::fs::create_dir_all(gw.home.join(".ssh")).expect("ssh");
    std::fs::write(gw.home.join(".ssh/id_rsa"), SECRET).expect("key");

    // This gateway has the Sanctum posture: the guard's check, on what the real gateway
    // answers, finds no way around the guard (the plugin is installed, enabled and active).
    let (mut op, _) =
        support::gateway::WsClient::operator(&format!("ws://127.0.0.1:{}", gw.port), GW_TOKEN);
    let config = op.call("config.get", json!({}));
    let plugins = op.call("plugins.list", json!({}));
    let findings = sanctum_guard::openclaw::posture::assess(
        &config["payload"],
        &plugins["payload"],
        &sanctum_guard::openclaw::posture::Expect {
            gateway_host: Some("127.0.0.1".into()),
        },
    );
    assert_eq!(findings, vec![], "the Sanctum posture on the real gateway");
    drop(op);

    // Every turn below starts at once (each an `openclaw agent` process whose start is
    // most of its time); each is then checked in turn.
    let read = spawn_collect(gw.agent_tool_cmd("read", "read", json!({"path":"readme.txt"})));
    let secret =
        spawn_collect(gw.agent_tool_cmd("secret", "read", json!({"path":"~/.ssh/id_rsa"})));
    let content = "approved content\u{202e}evil\n";
    let write = spawn_collect(gw.agent_tool_cmd(
        "write",
        "write",
        json!({"path":"approved.txt","content":content}),
    ));
    let denied = spawn_collect(gw.agent_tool_cmd(
        "denied",
        "write",
        json!({"path":"denied.txt","content":"no"}),
    ));
    let url = format!("http://127.0.0.1:{fetch_port}/page");
    let fetch = spawn_collect(gw.agent_tool_cmd(
        "fetch",
        "tool_call",
        json!({"id":"web_fetch","args":{"url":url}}),
    ));

    // A read runs at once.
    let out = collect(read);
    let results = tool_results(&model_log);
    assert!(
        has(&results, MARKER),
        "the read's content reaches the agent: {results:?}\n{out}\n{}",
        gw.gateway_log()
    );
    let audit = web.audit();
    assert!(
        audit.contains("\"source\":\"plugin\"") && audit.contains("readme.txt"),
        "the audit log records the plugin's read"
    );

    // A write waits in the inbox with its whole content (checked against its digest by the
    // guard); the file exists only after approval.
    let e = wait_tool(&web, &login, "write", "approved.txt");
    assert_eq!(e["action"]["content"], content, "{e}");
    assert_eq!(e["action"]["content_bytes"], content.len());
    assert_eq!(e["source"], "plugin");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !ws.join("approved.txt").exists(),
        "nothing is written before the approval"
    );
    let id = e["id"].as_str().expect("id");
    let r = web.decide(
        &login,
        id,
        json!({"decision":"allow-once","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let out = collect(write);
    assert_eq!(
        std::fs::read_to_string(ws.join("approved.txt")).unwrap_or_default(),
        content,
        "{out}"
    );

    // A denied write leaves no file; the agent reads the person's reason.
    let e = wait_tool(&web, &login, "write", "denied.txt");
    let r = web.decide(
        &login,
        e["id"].as_str().expect("id"),
        json!({"decision":"deny","reason":"not this file","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let out = collect(denied);
    assert!(!ws.join("denied.txt").exists(), "a denied write never runs");
    let results = tool_results(&model_log);
    assert!(
        has(&results, "SANCTUM_DENIED: user denied: not this file"),
        "the agent reads the reason: {results:?}\n{out}"
    );

    // A sensitive read is blocked without asking anyone.
    let out = collect(secret);
    let results = tool_results(&model_log);
    assert!(
        has(&results, "blocked by sanctum-guard (sensitive-path)"),
        "{results:?}\n{out}"
    );
    assert!(!has(&results, SECRET), "the key never reaches the agent");

    // A web_fetch GET of a loopback address waits for a person (only public names are
    // fetched by themselves), then runs once approved. It is a deferred tool: the model calls
    // it through `tool_call`, the hook fires for both, and the inner call is the one the
    // guard judges.
    let e = wait_until("the pending web_fetch", Duration::from_secs(240), || {
        web.pending(&login).into_iter().find(|e| {
            e["action"]["kind"] == "tool"
                && e["action"]["name"] == "web_fetch"
                && e.to_string().contains(&url)
        })
    });
    assert!(
        e["reasons"].to_string().contains("internal-host"),
        "a loopback fetch asks because of its host: {e}"
    );
    let r = web.decide(
        &login,
        e["id"].as_str().expect("id"),
        json!({"decision":"allow-once","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let out = collect(fetch);
    let results = tool_results(&model_log);
    assert!(
        has(&results, FETCHED),
        "the approved fetch reaches the agent: {results:?}\n{out}"
    );
    let audit = web.audit();
    assert!(
        audit.contains(&url) && audit.contains("\"web_fetch\""),
        "the inner web_fetch was judged"
    );

    // The guard stopped: every call is blocked, none runs.
    web.serve.child.kill9();
    let write = spawn_collect(gw.agent_tool_cmd(
        "stopped",
        "write",
        json!({"path":"stopped.txt","content":"x"}),
    ));
    let read =
        spawn_collect(gw.agent_tool_cmd("stopped-read", "read", json!({"path":"readme.txt"})));
    let out = collect(write);
    assert!(!ws.join("stopped.txt").exists(), "{out}");
    let out = collect(read);
    let results = tool_results(&model_log);
    assert!(
        has(&results, "SANCTUM_DENIED: no decision from sanctum-guard"),
        "{results:?}\n{out}"
    );
    drop(gw);
}

/// Runs agent turns (a session, a tool and its arguments each), [`AT_ONCE`] at a time, while
/// a person denies every card that appears; the paths of the cards denied. Each turn is an
/// `openclaw agent` process whose start is most of its time, so they overlap.
fn turns_denying_every_card(
    gw: &Gateway,
    web: &Web,
    login: &Login,
    turns: Vec<(String, &str, Value)>,
) -> Vec<String> {
    let mut waiting = turns.into_iter();
    let mut running: Vec<(String, std::process::Child)> = Vec::new();
    let mut denied = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        while running.len() < AT_ONCE {
            let Some((session, tool, args)) = waiting.next() else {
                break;
            };
            let turn = spawn_collect(gw.agent_tool_cmd(&session, tool, args));
            running.push((session, turn));
        }
        if running.is_empty() {
            return denied;
        }
        for e in web.pending(login) {
            if e["action"]["kind"] != "tool" {
                continue;
            }
            denied.push(e["action"]["paths"].to_string());
            let r = web.decide(
                login,
                e["id"].as_str().expect("id"),
                json!({"decision":"deny","reason":"denying every card","hash":e["requestHash"]}),
            );
            assert_eq!(r.status, 200, "{r:?}");
        }
        let mut still = Vec::new();
        for (session, mut turn) in running {
            if turn.try_wait().expect("wait").is_some() {
                let _ = collect(turn);
            } else {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{session}: turn hangs"
                );
                still.push((session, turn));
            }
        }
        running = still;
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Agent turns [`turns_denying_every_card`] runs at once (each a Node process on a 2-core
/// machine).
const AT_ONCE: usize = 4;

/// OpenClaw rewrites a file tool's path after `before_tool_call` (a leading
/// `@`, a trailing `</arg_value>>`, `~`, `file://`, the Office repair). Each spelling, for
/// read, write, edit and ls, against the real gateway with a person denying every card:
/// no secret outside the workspace (nor the workspace's `.env`) reaches the model, no file
/// outside it changes, and each card shows the path the tool would have opened.
#[test]
fn rewritten_paths_are_judged_as_the_tool_opens_them() {
    let _one = one_gateway_at_a_time();
    let tmp = tempfile::Builder::new()
        .prefix("sg-plugin-rw-")
        .tempdir()
        .expect("tmp");
    let dir = tmp.path();
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join(".env"), format!("TOKEN={SECRET}-env")).expect("env");
    std::fs::write(ws.join("readme.txt"), MARKER).expect("marker");
    // Outside the workspace, with a name no sensitive rule knows: only a person can let
    // it through, and this person denies.
    std::fs::write(dir.join("outside.txt"), format!("{SECRET}-outside")).expect("outside");
    let mut web = Web::start_with(
        120_000,
        &["--workspace", ws.to_str().expect("utf8")],
        "http",
    );
    let login = web.login();
    let (_model, model_port, model_log) = start_model(dir);
    let sock = web.world.socket();
    let cfg = json!({
        "agents":{"defaults":{"workspace":ws}},
        "tools":{"elevated":{"enabled":false}},
        "commands":{"allowFrom":{"*":["<nobody>"]}},
        "plugins":{"entries":{"sanctum":{
            "config":{"socketPath":sock,"token":TOKEN,"askTimeoutMs":120000},
            "hooks":{"timeouts":{"before_tool_call":130000}}}}}});
    let gw = Gateway::start_prepared(dir, model_port, cfg, install_plugin);
    let home = gw.home.clone();
    std::fs::create_dir_all(home.join(".ssh")).expect("ssh");
    std::fs::write(home.join(".ssh/id_rsa"), format!("{SECRET}-key")).expect("key");
    std::fs::write(home.join(".ssh/authorized_keys"), "original\n").expect("ak");
    let key_url = format!("file://{}/.ssh/id_rsa", home.display());

    let cases: Vec<(&str, Value)> = vec![
        ("read", json!({"path":"@.env"})),
        ("read", json!({"path":".env</arg_value>>"})),
        ("read", json!({"path":"@.env</arg_value>>>"})),
        ("read", json!({"path":"@~/.ssh/id_rsa"})),
        ("read", json!({"path":"~/.ssh/id_rsa</arg_value>>"})),
        ("read", json!({"path":key_url})),
        ("read", json!({"path":"@../outside.txt"})),
        ("read", json!({"path":"@@../outside.txt"})),
        ("read", json!({"path":"x</arg_value>></arg_value>>"})),
        ("ls", json!({"path":"@~/.ssh"})),
        ("ls", json!({"path":"@.."})),
        (
            "write",
            json!({"path":"@~/.ssh/authorized_keys","content":"attacker\n"}),
        ),
        (
            "write",
            json!({"path":"@../outside.txt</arg_value>>","content":"attacker\n"}),
        ),
        (
            "edit",
            json!({"path":"@~/.ssh/authorized_keys",
                        "edits":[{"oldText":"original","newText":"attacker"}]}),
        ),
        (
            "edit",
            json!({"path":"@../outside.txt",
                        "edits":[{"oldText":"secret","newText":"attacker"}]}),
        ),
    ];
    let turns = cases
        .into_iter()
        .enumerate()
        .map(|(i, (tool, args))| (format!("rw{i}"), tool, args))
        .collect();
    let cards = turns_denying_every_card(&gw, &web, &login, turns);
    let results = tool_results(&model_log);
    // Checked once all have run: the results shown say which spelling let a secret through.
    assert!(
        !has(&results, SECRET),
        "a secret reached the model: {results:?}\n{}",
        gw.gateway_log()
    );
    // Refused without a card: sensitive once resolved, or rewritten more than once.
    assert!(
        has(&results, "sensitive-path"),
        "the resolved secrets are refused: {results:?}"
    );
    assert!(
        has(&results, "rewritten by OpenClaw more than once"),
        "{results:?}"
    );
    // The cards show the path the tool would open, never the spelling.
    for c in &cards {
        assert!(
            !c.contains('@') && !c.contains("arg_value") && !c.contains('~'),
            "a card names an unresolved spelling: {c}"
        );
    }
    assert!(
        cards.iter().any(|c| c.contains("../outside.txt")),
        "the outside reads and edits reached a person: {cards:?}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/authorized_keys")).expect("ak"),
        "original\n"
    );
    assert!(std::fs::read_to_string(dir.join("outside.txt"))
        .expect("outside")
        .starts_with(SECRET));
    assert!(!ws.join("outside.txt</arg_value>>").exists());

    // The normalized path is what the tool gets: an allowed `@readme.txt` reads readme.txt.
    let out = output_text(
        &gw.agent_tool_cmd("rw-ok", "read", json!({"path":"@readme.txt"}))
            .output()
            .expect("agent"),
    );
    assert!(
        has(&tool_results(&model_log), MARKER),
        "@readme.txt reads the workspace's readme.txt\n{out}"
    );
    web.serve.child.kill9();
    drop(gw);
}
