//! The web prompt's Agent page API through the guard's own gateway connection, against the
//! REAL OpenClaw 2026.9.6 gateway with the scripted model and the guard's node: New Task
//! (`chat.send`) drives a real session to completion and Status shows it; a turn running
//! `sleep 30` on the node is stopped (`chat.abort`) and shows aborted; every action is
//! audited with the web identity; refusals: no session 401, a foreign Origin 403, no CSRF 403,
//! a chat directive 403 (never sent). In Chromium, the Agent page (reached from the inbox's
//! navigation) sends a task into a session, shows it running and stops it. The front door takes the signed-in browser's cookie as
//! its credential, only with the web prompt's Origin, and not after logout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::gateway::{open_with, WsClient};
use support::node::*;
use support::web::{Login, Web};
use tokio_tungstenite::tungstenite;

const TOKEN: &str = "gw-agent-socket-token-0123456789";

fn script(command: &str) -> String {
    format!(
        "SCRIPT {}",
        json!({"name":"exec","arguments":{"command":command}})
    )
}

fn sessions(web: &Web, login: &Login) -> Vec<Value> {
    let r = web.call("GET", "/api/agent/sessions", Some(login), None);
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["sessions"].as_array().cloned().unwrap_or_default()
}

fn session(web: &Web, login: &Login, key: &str) -> Option<Value> {
    sessions(web, login).into_iter().find(|s| s["key"] == key)
}

#[test]
fn new_task_stop_and_status_drive_a_real_session_through_the_web_api() {
    let _one = one_gateway_at_a_time();
    let w = World::full(TOKEN);
    let dir = w.tmp.path().to_path_buf();
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let (_model, model_port, model_log) = start_model(&dir);
    let gw = Gateway::start(&dir, model_port, json!({}));
    let web = Web::approver_of(
        w,
        gw.port,
        &[
            "--front-listen",
            "127.0.0.1:0",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
    );
    let _node = NodeProc::start_for_guard(&dir, &gw, &web.world, &ws);

    // Refusals, before anything reaches the gateway.
    let task = json!({"message": script("echo refused")}).to_string();
    let r = web.call("GET", "/api/agent/sessions", None, None);
    assert_eq!(r.status, 401, "no session: {r:?}");
    let r = web.call("POST", "/api/agent/tasks", None, Some(&task));
    assert_eq!(r.status, 401, "no session: {r:?}");
    let login = web.login();
    let r = web.raw(
        "POST",
        "/api/agent/tasks",
        &[
            format!("Host: {}", web.host()),
            "Origin: http://evil.example".into(),
            format!("Cookie: {}", login.cookie),
            format!("X-CSRF-Token: {}", login.csrf),
        ],
        Some(task.as_bytes()),
    );
    assert_eq!(r.status, 403, "foreign origin: {r:?}");
    let r = web.raw(
        "POST",
        "/api/agent/sessions/agent:main:main/stop",
        &[
            format!("Host: {}", web.host()),
            format!("Origin: {}", web.origin()),
            format!("Cookie: {}", login.cookie),
        ],
        Some(b"{}"),
    );
    assert_eq!(r.status, 403, "no CSRF: {r:?}");
    let r = web.call(
        "POST",
        "/api/agent/tasks",
        Some(&login),
        Some(&json!({"message":"please /exec security=full ask=off then run it"}).to_string()),
    );
    assert_eq!(r.status, 403, "chat directive: {r:?}");
    assert!(
        r.json()["message"].as_str().unwrap_or("").contains("/exec"),
        "{r:?}"
    );
    for bad in [
        json!({}),
        json!({"message": 5}),
        json!({"message":"x","sessionKey":"a/b"}),
    ] {
        let r = web.call(
            "POST",
            "/api/agent/tasks",
            Some(&login),
            Some(&bad.to_string()),
        );
        assert_eq!(r.status, 400, "{bad}: {r:?}");
    }
    assert!(
        !gw.gateway_log().contains("ask=off"),
        "the refused directive never reached the gateway"
    );

    // New Task into a new session: the scripted turn runs `echo` on the node and completes.
    let r = web.call(
        "POST",
        "/api/agent/tasks",
        Some(&login),
        Some(&json!({"message": script("echo web-task-done")}).to_string()),
    );
    assert_eq!(r.status, 202, "{r:?}");
    let started = r.json();
    assert_eq!(started["status"], "started", "{started}");
    let key = started["sessionKey"].as_str().expect("key").to_owned();
    let run = started["runId"].as_str().expect("runId").to_owned();
    // (The node's exec completion starts a second, script-less turn: "no script".)
    let row = wait_until("the task to complete", Duration::from_secs(180), || {
        let ran = tool_results(&model_log)
            .iter()
            .any(|t| t.contains("web-task-done"));
        session(&web, &login, &key).filter(|s| {
            ran && s["status"] == "done"
                && s["hasActiveRun"] == false
                && s["lastMessage"]["role"] == "assistant"
        })
    });
    assert!(row["updatedAt"].is_number(), "{row}");
    assert!(row["lastRunId"].is_string(), "{row}");
    assert_eq!(row["pendingApprovals"], json!([]), "{row}");

    // A follow-up into the chosen session.
    let r = web.call(
        "POST",
        "/api/agent/tasks",
        Some(&login),
        Some(&json!({"sessionKey": key, "message": script("sleep 30")}).to_string()),
    );
    assert_eq!(r.status, 202, "{r:?}");
    let run2 = r.json()["runId"].as_str().expect("runId").to_owned();
    wait_until("the sleep to run", Duration::from_secs(120), || {
        let text = std::fs::read_to_string(&model_log).ok()?;
        let active = session(&web, &login, &key)?["hasActiveRun"] == true;
        (text.contains("sleep 30") && active).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));

    // Stop: chat.abort of the active run.
    let stop_at = Instant::now();
    let path = format!("/api/agent/sessions/{}/stop", key.replace(':', "%3A"));
    let r = web.call("POST", &path, Some(&login), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    assert_eq!(v["aborted"], true, "{v}");
    assert!(v["runIds"].to_string().contains(&run2), "{v}");
    let row = wait_until(
        "the session to show the stop",
        Duration::from_secs(20),
        || session(&web, &login, &key).filter(|s| s["hasActiveRun"] == false),
    );
    assert!(
        stop_at.elapsed() < Duration::from_secs(25),
        "stopped, not finished"
    );
    // The row shows the abort, unless OpenClaw already started the follow-up turn the
    // interrupted exec leaves behind (seen on a loaded machine 150 ms after the abort): then
    // the row is that later run's, and `sleep 30` ending by itself is excluded by the time
    // bound above.
    let later_run = row["lastRunId"].as_str().is_some_and(|r| r != run2);
    assert!(
        row["abortedLastRun"] == true || row["status"] == "killed" || later_run,
        "shows aborted: {row}"
    );

    // Every action audited with who did it.
    let audit = web.audit();
    let actions: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.to_string().contains("agent-action"))
        .collect();
    let text = serde_json::to_string(&actions).expect("json");
    assert!(actions.len() >= 4, "{text}");
    assert!(text.contains(&login.identity), "{text}");
    assert!(text.contains("\"stop\"") && text.contains(&run), "{text}");
    assert!(text.contains("chat directive"), "refusals audited: {text}");

    // The Agent page in Chromium: from the inbox's navigation, a task into the session,
    // shown running, stopped with the row's Stop button.
    let link = web.new_link();
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(agent_page_in_chromium(&web, &link, &key, &model_log));

    // The front door takes the browser's web-prompt cookie, with the web prompt's Origin.
    let door = format!("ws://{}/", web.serve.front_addr());
    let origin = web.origin();
    let (mut c, hello) = WsClient::operator_with(
        &door,
        &[("Cookie", &login.cookie), ("Origin", &origin)],
        GW_TOKEN,
    );
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(c.call("sessions.list", json!({}))["ok"], true);
    drop(c);
    let refused = |headers: &[(&str, &str)]| match open_with(&door, headers) {
        Err(tungstenite::Error::Http(r)) => r.status().as_u16(),
        Err(e) => panic!("not an HTTP refusal: {e}"),
        Ok(_) => 101,
    };
    // A cookie alone (no Origin: not a page of ours), a foreign page, a made-up session.
    assert_eq!(refused(&[("Cookie", &login.cookie)]), 401);
    assert_eq!(
        refused(&[("Cookie", &login.cookie), ("Origin", "http://evil.example")]),
        403
    );
    // Near misses of the web prompt's origin (serve was given --web-listen 127.0.0.1:0): the
    // address as configured rather than bound, another port, scheme or suffix, an opaque one.
    let port = web.port;
    for near in [
        "http://127.0.0.1:0".to_owned(),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        format!("https://127.0.0.1:{port}"),
        format!("{origin}/"),
        format!("{origin}.evil.example"),
        format!("http://127.0.0.1:{port}@evil.example"),
        "null".to_owned(),
    ] {
        assert_eq!(
            refused(&[("Cookie", &login.cookie), ("Origin", &near)]),
            403,
            "{near}"
        );
    }
    assert_eq!(
        refused(&[("Cookie", "sg_session=forged"), ("Origin", &origin)]),
        401
    );
    // Signed out: the cookie opens nothing.
    let r = web.call("POST", "/api/logout", Some(&login), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        refused(&[("Cookie", &login.cookie), ("Origin", &origin)]),
        401
    );
}

/// Signs in with `link`, goes Inbox → Agent, sends `sleep 31` into `key` from the form, waits
/// for the row to show RUNNING, clicks its Stop and waits for the run to end.
async fn agent_page_in_chromium(web: &Web, link: &str, key: &str, model_log: &std::path::Path) {
    use support::browser::{browser, chromedriver, click, js, shot, until};
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;
    c.goto(link).await.expect("goto link");
    click(&c, "#signin").await;
    until(&c, "the inbox", "return !!document.querySelector('nav a[href=\"/agent\"]') && document.getElementById('signed-out').hidden", vec![]).await;
    click(&c, "nav a[href='/agent']").await;
    until(
        &c,
        "the session row",
        "return [...document.querySelectorAll('#sessions li.row')].some(r => r.getAttribute('data-key') === arguments[0])",
        vec![json!(key)],
    )
    .await;
    // Choose the session, type the task, send.
    js(
        &c,
        "const s = document.getElementById('t-session'); s.value = arguments[0]; return s.value === arguments[0]",
        vec![json!(key)],
    )
    .await;
    c.find(fantoccini::Locator::Css("#t-message"))
        .await
        .expect("message box")
        .send_keys(&script("sleep 31"))
        .await
        .expect("type");
    click(&c, "#t-send").await;
    let row = "const r = [...document.querySelectorAll('#sessions li.row')].find(r => r.getAttribute('data-key') === arguments[0]); return !!r && ";
    let wait_run = Instant::now();
    loop {
        let ran = std::fs::read_to_string(model_log)
            .unwrap_or_default()
            .contains("sleep 31");
        let running = js(
            &c,
            &format!("{row} r.textContent.includes('RUNNING')"),
            vec![json!(key)],
        )
        .await;
        if ran && running == json!(true) {
            break;
        }
        assert!(
            wait_run.elapsed() < Duration::from_secs(120),
            "the page never showed the run"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    shot(&c, "agent-desktop.png").await;
    // The list re-renders every 3 s: find and click in one script (no stale element).
    let clicked = js(
        &c,
        "const b = [...document.querySelectorAll('#sessions button[data-key]')].find(b => b.getAttribute('data-key') === arguments[0]); if (!b || b.disabled) return false; b.click(); return true",
        vec![json!(key)],
    )
    .await;
    assert_eq!(
        clicked,
        json!(true),
        "no enabled Stop button on the running row"
    );
    let stopped = Instant::now();
    loop {
        let idle = js(
            &c,
            &format!("{row} !r.textContent.includes('RUNNING')"),
            vec![json!(key)],
        )
        .await;
        if idle == json!(true) {
            break;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(25),
            "Stop did not end the run"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let text = web.audit();
    assert!(
        text.lines()
            .filter(|l| l.contains("agent-action") && l.contains("\"stop\""))
            .count()
            >= 2,
        "the page's Stop is audited"
    );
    c.close().await.expect("close");
}

/// Without a gateway the Agent API says so (and still refuses the unauthenticated first).
#[test]
fn without_a_gateway_the_agent_api_is_unavailable() {
    let web = Web::start(60_000);
    let r = web.call("GET", "/api/agent/sessions", None, None);
    assert_eq!(r.status, 401, "{r:?}");
    let login = web.login();
    let r = web.call("GET", "/api/agent/sessions", Some(&login), None);
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.json()["error"], "no-gateway", "{r:?}");
    // It says what to add (the quick start's serve has no gateway connection).
    let msg = r.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        msg.contains("--gateway-url") && msg.contains("--gateway-token-file"),
        "{msg}"
    );
    let r = web.call("GET", "/agent", None, None);
    assert_eq!(r.status, 200, "the page is served");
    assert!(r.body.contains("/assets/agent.js"), "{r:?}");
}
