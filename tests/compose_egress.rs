//! Egress a person steers, end to end in the compose deployment: an agent turn (the scripted
//! model as the provider, reached through the egress proxy's key-holding route) whose
//! `web_fetch` of a host no egress rule lists waits in the guard's inbox as one card, is
//! allowed for a while there and succeeds; a second fetch of the same host within that grant
//! asks no one; a fetch of another unlisted host that a person denies reaches the model as a
//! refusal that says why and how to ask for it. Meanwhile the agent's container holds no
//! model key. The site is a local server at a public-range address (tests/data/compose/
//! site.yml), since the proxy lets a name reach public addresses only.
//! `SANCTUM_SKIP_COMPOSE=1` skips it (it says so); `tests/run` runs it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::compose::*;
use support::compose_turns::{new_task, tool_results};
use support::process::{wait_until, wait_until_or};
use support::web::{Login, WebClient};

fn skipped() -> bool {
    if std::env::var_os("SANCTUM_SKIP_COMPOSE").is_some() {
        eprintln!("compose_egress: SKIPPED (SANCTUM_SKIP_COMPOSE is set)");
        return true;
    }
    false
}

/// A New Task whose model fetches `url` with `web_fetch` (a deferred tool: called through
/// `tool_call`, as OpenClaw offers it).
fn fetch(web: &WebClient, login: &Login, url: &str) {
    new_task(
        web,
        login,
        "tool_call",
        json!({"id":"web_fetch","args":{"url":url}}),
    );
}

/// The egress card of `host`, once it is pending.
fn egress_card(web: &WebClient, login: &Login, host: &str) -> Value {
    wait_until(
        &format!("the egress card of {host}"),
        Duration::from_secs(120),
        || {
            web.pending(login).into_iter().find(|e| {
                e["action"]["kind"] == "http" && e["action"]["url"].to_string().contains(host)
            })
        },
    )
}

/// Waits until a tool result the model was shown holds `text`; else fails with what the model
/// saw, the egress log and every service's log.
fn seen_by_model(stack: &Stack, egress_log: &std::path::Path, what: &str, text: &str) {
    let until = Instant::now() + Duration::from_secs(120);
    while !tool_results(stack).contains(text) {
        assert!(
            Instant::now() < until,
            "{what}: not in time\nmodel saw:\n{}\negress log:\n{}\n{}",
            tool_results(stack),
            std::fs::read_to_string(egress_log).unwrap_or_default(),
            stack.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The guard's and the agent's last log lines with their times, and the gateway's own view of
/// device pairing asked inside the agent container (for a failure message: is the guard's
/// request pending, approved, or never made, and how far did the agent's start get?).
fn pairing_view(stack: &Stack) -> String {
    let out = stack.exec(
        "agent",
        "OPENCLAW_GATEWAY_TOKEN=$(cat /run/secrets/gateway-token 2>/dev/null) \
         timeout 60 openclaw devices list --json 2>&1 | tail -c 4000; \
         echo; ps -eo pid,etimes,args | head -40",
    );
    format!(
        "{}\n{}\nopenclaw devices list (agent container):\n{}",
        stack.service_log("guard", 30),
        stack.why_not_running("agent"),
        support::process::output_text(&out)
    )
}

#[test]
fn an_unlisted_fetch_is_asked_allowed_for_a_while_and_a_denied_one_tells_the_model_why() {
    if skipped() {
        return;
    }
    let stack = Stack::new("sanctumegress")
        .with_model(&openclaw_with_model())
        .with_site();
    // Under the stack's lock: the tag is shared with the other podman suites.
    base_image();
    let t = Instant::now();
    build_images(&stack.context());
    eprintln!(
        "compose_egress: images built in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    stack.up();
    let web = WebClient { port: 8484 };
    wait_until(
        "the guard's /readyz on 127.0.0.1:8484",
        Duration::from_secs(180),
        || {
            (sanctum_guard::app::health::probe(
                "http://127.0.0.1:8484/readyz",
                Duration::from_secs(3),
            )
            .ok()
                == Some(200))
            .then_some(())
        },
    );
    // New Tasks go through the guard's own gateway connection: wait until it is paired.
    let guard_state = stack.volume_path("guard-state");
    // Two stages, each with its own budget and the logs on timeout: on a loaded machine the
    // gateway's own start (plugin install, then `gateway run`) can take minutes before the
    // pairing can even be asked for.
    let posture_file = guard_state.join("gateway-posture.json");
    let t = Instant::now();
    wait_until_or(
        "the gateway up and its posture checked by the guard",
        Duration::from_secs(420),
        || {
            let s = std::fs::read_to_string(&posture_file).ok()?;
            let v: Value = serde_json::from_str(&s).ok()?;
            (v["posture"]["state"] != "unchecked" && !v["posture"]["state"].is_null()).then_some(())
        },
        || {
            format!(
                "{}\n{}\ngateway-posture.json: {}\ngateway-approver.json: {}",
                stack.logs(),
                pairing_view(&stack),
                std::fs::read_to_string(&posture_file).unwrap_or_default(),
                std::fs::read_to_string(guard_state.join("gateway-approver.json"))
                    .unwrap_or_default(),
            )
        },
    );
    eprintln!(
        "compose_egress: gateway posture checked {:.0} s after /readyz",
        t.elapsed().as_secs_f64()
    );
    let approver_file = guard_state.join("gateway-approver.json");
    wait_until_or(
        "the guard paired as approver",
        Duration::from_secs(300),
        || {
            let s = std::fs::read_to_string(&approver_file).ok()?;
            s.contains("\"paired\"").then_some(())
        },
        || {
            format!(
                "{}\n{}\ngateway-approver.json: {}",
                stack.logs(),
                pairing_view(&stack),
                std::fs::read_to_string(&approver_file).unwrap_or_default(),
            )
        },
    );
    eprintln!(
        "compose_egress: approver paired {:.0} s after /readyz",
        t.elapsed().as_secs_f64()
    );
    let link = std::fs::read_to_string(guard_state.join("web-login-link")).expect("login link");
    let token = link.trim().rsplit_once("#t=").expect("token").1.to_owned();
    let login = Login::from_answer(&web.login_with(&token));
    let egress_log = stack
        .volume_path("egress-state")
        .join("egress/egress-audit.jsonl");

    // An unlisted host: the fetch waits in the inbox as one card (the plugin's judgement of a
    // GET of a public name on port 80 is autonomous: nothing else is asked).
    let t = Instant::now();
    fetch(&web, &login, "http://site-one.test/first");
    let card = egress_card(&web, &login, "site-one.test");
    let pending = web.pending(&login);
    assert_eq!(
        pending.len(),
        1,
        "one prompt for one unlisted fetch: {pending:?}"
    );
    // OpenClaw's fetch tunnels even an http:// URL: the proxy sees a CONNECT to port 80, and
    // the card shows what the agent did just before (the plugin's web_fetch and its URL).
    assert_eq!(card["source"], "egress", "{card}");
    assert_eq!(
        card["action"]["url"], "connect://site-one.test:80",
        "{card}"
    );
    assert!(
        card["egress"]["recent"]
            .to_string()
            .contains("web_fetch http://site-one.test/first"),
        "{card}"
    );
    eprintln!(
        "compose_egress: New Task -> egress card of site-one.test in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let r = web.decide(
        &login,
        card["id"].as_str().expect("id"),
        json!({"decision":"allow-for","hash":card["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let fetched = format!("{SITE_MARKER} site-one.test /first");
    seen_by_model(
        &stack,
        &egress_log,
        "the allowed fetch's page at the model",
        &fetched,
    );
    eprintln!(
        "compose_egress: New Task -> card -> allowed page at the model in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // Within the grant, the same host on another path is fetched with no card.
    fetch(&web, &login, "http://site-one.test/second");
    let again = format!("{SITE_MARKER} site-one.test /second");
    seen_by_model(
        &stack,
        &egress_log,
        "the granted host's second page at the model",
        &again,
    );

    // Another unlisted host, denied: the model reads why, and how to ask for it.
    fetch(&web, &login, "http://site-two.test/secret-plans");
    let card = egress_card(&web, &login, "site-two.test");
    let r = web.decide(
        &login,
        card["id"].as_str().expect("id"),
        json!({"decision":"deny","hash":card["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let refusal = "no egress rule covers site-two.test:80 and it was not allowed";
    seen_by_model(
        &stack,
        &egress_log,
        "the denied fetch's refusal at the model",
        refusal,
    );
    let seen = tool_results(&stack);
    assert!(
        seen.contains("[[egress.rules]]") && !seen.contains("site-two.test /secret-plans"),
        "the refusal says how to ask, and nothing of the site came back:\n{seen}"
    );
    assert!(
        web.pending(&login).is_empty(),
        "nothing left waiting: {:?}",
        web.pending(&login)
    );

    // The egress log holds each person's answer, and the connections it let through.
    let log = std::fs::read_to_string(&egress_log).unwrap();
    let records: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let asked = |target: &str, verdict: &str| {
        records.iter().any(|r| {
            let s = r.to_string();
            s.contains("\"asked\"") && s.contains(target) && s.contains(verdict)
        })
    };
    assert!(asked("site-one.test:80", "allow-for"), "{log}");
    // The second fetch was a connection of its own, let through by the grant the guard kept.
    assert!(asked("site-one.test:80", "by egress-grant"), "{log}");
    assert!(asked("site-two.test:80", "\"deny\""), "{log}");
    // The model turns all went through the key-holding route, and the agent holds no key.
    assert!(
        !tool_results(&stack).contains("unauthorized"),
        "a model call went without the key"
    );
    assert!(log.contains("allowed by route fake"), "{log}");
    assert!(!log.contains(MODEL_KEY), "the key is in the egress log");
    assert_no_model_key_in_agent(&stack);
}
