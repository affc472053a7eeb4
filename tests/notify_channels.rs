//! Push notifications against local servers that speak each channel's documented API
//! (tests/support/channels.rs), beside the real `serve` and real socket clients asking:
//! the ntfy message's fields, the command redacted and a card link that alone cannot act,
//! batching, a channel's minimum category and quiet hours, Telegram's message edited to the
//! outcome on a decision and on expiry, the webhook's HMAC, its retry after a 500 and its
//! outcome post, a dead channel named in `/readyz` and `doctor` while decisions go on, a hung
//! one whose full queue drops (counted) without delaying a decision, and TLS that refuses a
//! certificate no public root signed.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::channels::*;
use support::socket::*;
use support::web::*;

const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

fn ntfy_channel(url: &str, topic: &str, extra: &str) -> String {
    format!("[[notify.channel]]\nkind = \"ntfy\"\nname = \"{topic}\"\nurl = \"{url}\"\ntopic = \"{topic}\"\n{extra}\n")
}

/// The inbox id of the pending request the socket client sent as `req_id`.
fn inbox_id(w: &Web, login: &Login, req_id: &str) -> String {
    w.wait_pending(login, req_id)["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

#[test]
fn ntfy_gets_the_redacted_command_its_priority_and_a_view_action_to_the_card() {
    let ntfy = ChannelServer::start(
        Api::Ntfy {
            token: Some("tk_ntfytoken".into()),
        },
        0,
    );
    let (_d, token) = secret("tk_ntfytoken");
    let w = serve_with(
        20_000,
        &format!(
            "[notify]\nbatch_ms = 0\n{}",
            ntfy_channel(
                &ntfy.url,
                "guard-phone",
                &format!("token_file = \"{token}\"")
            )
        ),
    );
    let me = w.login();
    let cmd =
        format!("curl -H 'Authorization: Bearer {SECRET}' -X POST -d x https://example.com/hook");
    let a = w.ask("nt-1", &cmd);
    let id = inbox_id(&w, &me, "nt-1");
    let hit = &ntfy.wait_hits(1, Duration::from_secs(10))[0];
    assert_eq!(hit.status, 200, "ntfy refused: {:?}", hit.refusal);
    let b = &hit.body;
    assert_eq!(b["topic"], "guard-phone");
    assert_eq!(b["priority"], 4, "http-write is high: {b}");
    assert_eq!(b["title"], "Approval needed: http-write");
    let msg = b["message"].as_str().expect("message");
    assert!(msg.starts_with("exec curl"), "{msg}");
    assert!(msg.contains("[redacted]"), "{msg}");
    let link = format!("{}/#r={id}", w.base);
    assert_eq!(b["click"], link.as_str());
    assert_eq!(
        b["actions"],
        json!([{"action": "view", "label": "Open card", "url": link, "clear": true}])
    );
    let raw = String::from_utf8_lossy(&hit.raw);
    assert!(
        !raw.contains(SECRET) && !raw.contains("ghp_"),
        "a secret left the guard: {raw}"
    );
    // The link alone acts on nothing: without a signed-in session, a decision is refused.
    let anon = w.client().call(
        "POST",
        &format!("/api/requests/{id}/decision"),
        None,
        Some(r#"{"decision":"allow-once"}"#),
    );
    assert_eq!(anon.status, 401, "{anon:?}");
    // The signed-in reviewer decides as before.
    let hash = w.wait_pending(&me, "nt-1")["requestHash"].clone();
    let r = w.decide(&me, &id, json!({"decision": "deny", "hash": hash}));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "deny");
}

#[test]
fn five_asks_within_a_second_become_two_messages_the_first_at_once() {
    let ntfy = ChannelServer::start(Api::Ntfy { token: None }, 0);
    let w = serve_with(
        20_000,
        &format!(
            "[notify]\nbatch_ms = 2500\n{}",
            ntfy_channel(&ntfy.url, "batch", "")
        ),
    );
    let start = Instant::now();
    let asks: Vec<_> = (0..5)
        .map(|i| {
            let h = w.ask(
                &format!("b-{i}"),
                &format!("touch /tmp/sg-notify-batch-{i}"),
            );
            std::thread::sleep(Duration::from_millis(200));
            h
        })
        .collect();
    assert!(start.elapsed() < Duration::from_millis(1500));
    // The first request of a quiet channel leaves at once; the four behind it wait out the
    // window after that message and leave together.
    let hits = ntfy.wait_hits(2, Duration::from_secs(10));
    let first = hits[0].at.saturating_duration_since(start);
    assert!(
        first < Duration::from_millis(1000),
        "first message after {first:?}"
    );
    let second = hits[1].at.saturating_duration_since(hits[0].at);
    assert!(
        second >= Duration::from_millis(2400),
        "second message {second:?} after the first"
    );
    // Nothing more arrives after the window.
    std::thread::sleep(Duration::from_millis(3000));
    let hits_after = ntfy.hits();
    assert_eq!(hits_after.len(), 2, "{hits_after:#?}");
    let one = hits[0].body["message"].as_str().expect("message");
    assert!(one.contains("sg-notify-batch-0"), "{one}");
    let b = &hits[1].body;
    assert_eq!(b["title"], "4 approvals needed", "{b}");
    let msg = b["message"].as_str().expect("message");
    for i in 1..5 {
        assert!(msg.contains(&format!("sg-notify-batch-{i}")), "{msg}");
    }
    assert!(!msg.contains("sg-notify-batch-0"), "{msg}");
    assert_eq!(
        b["actions"].as_array().expect("actions").len(),
        3,
        "ntfy takes three actions"
    );
    drop(asks);
}

/// `HH:MM-HH:MM` around (or away from) the current UTC minute.
fn window(around_now: bool) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let m = (secs / 60 % 1440) as i64;
    let (a, b) = if around_now {
        (m - 60, m + 60)
    } else {
        (m + 120, m + 240)
    };
    let f = |x: i64| {
        let x = x.rem_euclid(1440);
        format!("{:02}:{:02}", x / 60, x % 60)
    };
    format!("{}-{}", f(a), f(b))
}

#[test]
fn minimum_category_and_quiet_hours_choose_what_goes_out() {
    let ntfy = ChannelServer::start(Api::Ntfy { token: None }, 0);
    let u = &ntfy.url;
    let cfg = format!(
        "[notify]\nbatch_ms = 0\n{}{}{}",
        ntfy_channel(u, "min-http-write", "min_category = \"http-write\""),
        ntfy_channel(
            u,
            "quiet-now",
            &format!(
                "quiet_hours = \"{}\"\nquiet_min_category = \"http-write\"",
                window(true)
            )
        ),
        ntfy_channel(
            u,
            "quiet-later",
            &format!("quiet_hours = \"{}\"", window(false))
        ),
    );
    let w = serve_with(20_000, &cfg);
    let me = w.login();
    // A write (low): only the channel outside its quiet hours and without a minimum sends.
    let _a = w.ask("q-1", "touch /tmp/sg-notify-quiet");
    inbox_id(&w, &me, "q-1");
    ntfy.wait_hits(1, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(1500));
    let topics: Vec<Value> = ntfy
        .hits()
        .iter()
        .map(|h| h.body["topic"].clone())
        .collect();
    assert_eq!(topics, vec![json!("quiet-later")]);
    // A network write (high): every channel sends it.
    let _b = w.ask("q-2", "curl -X POST -d x https://example.com/api");
    inbox_id(&w, &me, "q-2");
    let hits = ntfy.wait_hits(4, Duration::from_secs(10));
    let mut topics: Vec<String> = hits[1..]
        .iter()
        .map(|h| h.body["topic"].as_str().unwrap().to_owned())
        .collect();
    topics.sort();
    assert_eq!(topics, ["min-http-write", "quiet-later", "quiet-now"]);
}

#[test]
fn telegram_message_is_edited_to_the_outcome_on_decision_and_on_expiry() {
    let tg = ChannelServer::start(
        Api::Telegram {
            token: "123:bot-token".into(),
            chat: "-1001".into(),
        },
        0,
    );
    let (_d, token) = secret("123:bot-token");
    let w = serve_with(
        6_000,
        &format!("[notify]\nbatch_ms = 0\n[[notify.channel]]\nkind = \"telegram\"\nurl = \"{}\"\nchat_id = \"-1001\"\ntoken_file = \"{token}\"\n", tg.url),
    );
    let me = w.login();
    let a = w.ask("tg-1", "touch /tmp/sg-notify-tg-approve");
    let id = inbox_id(&w, &me, "tg-1");
    let sent = &tg.wait_hits(1, Duration::from_secs(10))[0];
    assert!(
        sent.path.ends_with("/sendMessage") && sent.status == 200,
        "{sent:?}"
    );
    assert!(sent.body["text"]
        .as_str()
        .unwrap()
        .contains("write: exec touch /tmp/sg-notify-tg-approve"));
    assert_eq!(
        sent.body["reply_markup"],
        json!({"inline_keyboard": [[{"text": "Open card", "url": format!("{}/#r={id}", w.base)}]]})
    );
    let hash = w.wait_pending(&me, "tg-1")["requestHash"].clone();
    assert_eq!(
        w.decide(&me, &id, json!({"decision": "allow-once", "hash": hash}))
            .status,
        200
    );
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "allow-once");
    let edit = &tg.wait_hits(2, Duration::from_secs(10))[1];
    assert!(
        edit.path.ends_with("/editMessageText") && edit.status == 200,
        "{edit:?}"
    );
    assert_eq!(
        edit.body["message_id"], 101,
        "the message sendMessage answered with"
    );
    let text = edit.body["text"].as_str().unwrap();
    assert!(text.contains("→ approved by web:admin"), "{text}");
    assert_eq!(
        edit.body["reply_markup"],
        json!({"inline_keyboard": []}),
        "no button once decided"
    );

    // Nobody answers the second one: at its deadline the message says it expired.
    let b = w.ask("tg-2", "touch /tmp/sg-notify-tg-expire");
    inbox_id(&w, &me, "tg-2");
    let hits = tg.wait_hits(4, Duration::from_secs(20));
    assert!(hits[2].path.ends_with("/sendMessage"));
    assert!(
        hits[3].path.ends_with("/editMessageText") && hits[3].status == 200,
        "{:?}",
        hits[3]
    );
    assert_eq!(hits[3].body["message_id"], 102);
    let text = hits[3].body["text"].as_str().unwrap();
    assert!(text.contains("→ expired: denied"), "{text}");
    assert_eq!(first_json(&b.join().expect("b"))["decision"], "deny");
}

#[test]
fn webhook_is_signed_and_retried_after_a_500() {
    let hook = ChannelServer::start(
        Api::Webhook {
            key: "hook-key-0123456789".into(),
        },
        1,
    );
    let (_d, key) = secret("hook-key-0123456789");
    let w = serve_with(
        20_000,
        &format!("[notify]\nbatch_ms = 0\n[[notify.channel]]\nkind = \"webhook\"\nname = \"ops\"\nurl = \"{}/hook\"\nsecret_file = \"{key}\"\n", hook.url),
    );
    let me = w.login();
    let a = w.ask("wh-1", "touch /tmp/sg-notify-hook");
    let id = inbox_id(&w, &me, "wh-1");
    let hits = hook.wait_hits(2, Duration::from_secs(10));
    assert_eq!((hits[0].status, hits[1].status), (500, 200), "{hits:#?}");
    assert_eq!(
        hits[0].header("x-sanctum-delivery"),
        hits[1].header("x-sanctum-delivery"),
        "one delivery id across retries"
    );
    let sig = hits[1].header("x-sanctum-signature").expect("signed");
    verify_signature("hook-key-0123456789", sig, &hits[1].raw, 300)
        .expect("the signature verifies");
    assert!(verify_signature("another-key", sig, &hits[1].raw, 300).is_err());
    let mut tampered = hits[1].raw.clone();
    tampered.push(b' ');
    assert!(verify_signature("hook-key-0123456789", sig, &tampered, 300).is_err());
    let r = &hits[1].body["requests"][0];
    assert_eq!(hits[1].body["event"], "requests");
    assert_eq!(r["id"], id.as_str());
    assert_eq!(r["category"], "write");
    assert_eq!(r["link"], format!("{}/#r={id}", w.base));
    // The channel recovered: /readyz says so.
    let ready = w.client().call("GET", "/readyz", None, None);
    assert_eq!(
        ready.json()["notify"]["channels"][0]["ok"],
        true,
        "{}",
        ready.body
    ); // The outcome follows, signed too.
    let hash = w.wait_pending(&me, "wh-1")["requestHash"].clone();
    assert_eq!(
        w.decide(&me, &id, json!({"decision": "deny", "hash": hash}))
            .status,
        200
    );
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "deny");
    let done = &hook.wait_hits(3, Duration::from_secs(10))[2];
    assert_eq!(done.status, 200, "{done:?}");
    assert_eq!(
        (
            done.body["event"].as_str(),
            done.body["id"].as_str(),
            done.body["state"].as_str()
        ),
        (Some("resolved"), Some(id.as_str()), Some("denied"))
    );
}

#[test]
fn a_hung_channel_fills_its_queue_and_drops_counted_while_decisions_go_on() {
    let (_hold, url) = silent_url();
    let (_d, key) = secret("hook-key-0123456789");
    let w = serve_with(
        20_000,
        &format!("[notify]\nbatch_ms = 0\nqueue = 1\n[[notify.channel]]\nkind = \"webhook\"\nname = \"hung\"\nurl = \"{url}\"\nsecret_file = \"{key}\"\nattempts = 1\n"),
    );
    let me = w.login();
    let asks: Vec<_> = (0..4)
        .map(|i| {
            (
                i,
                w.ask(
                    &format!("hung-{i}"),
                    &format!("touch /tmp/sg-notify-hung-{i}"),
                ),
            )
        })
        .collect();
    let t = Instant::now();
    for (i, a) in asks {
        let e = w.wait_pending(&me, &format!("hung-{i}"));
        let r = w.decide(
            &me,
            e["id"].as_str().unwrap(),
            json!({"decision": "deny", "hash": e["requestHash"]}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(first_json(&a.join().expect("a"))["decision"], "deny");
    }
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "decisions waited for a hung channel: {:?}",
        t.elapsed()
    );
    // One notice is being sent (hung), one waits in the queue of 1: the rest were dropped.
    let ready = w.client().call("GET", "/readyz", None, None).json();
    let dropped = ready["notify"]["channels"][0]["dropped"].as_u64().unwrap();
    assert!(dropped >= 1, "{ready}");
    let metrics = w.client().call("GET", "/metrics", None, None).body;
    assert!(
        metrics.lines().any(
            |l| l.starts_with("sanctum_notify_dropped_total{channel=\"hung\"}")
                && !l.ends_with(" 0")
        ),
        "{metrics}"
    );
}

#[test]
fn a_dead_channel_is_named_in_readyz_and_doctor_and_decisions_go_on() {
    let (_d, key) = secret("hook-key-0123456789");
    let cfg_notify = format!(
        "[notify]\nbatch_ms = 0\n[[notify.channel]]\nkind = \"webhook\"\nname = \"dead-hook\"\nurl = \"{}\"\nsecret_file = \"{key}\"\nattempts = 2\n",
        dead_url()
    );
    let w = serve_with(20_000, &cfg_notify);
    let me = w.login();
    let a = w.ask("dead-1", "touch /tmp/sg-notify-dead");
    let id = inbox_id(&w, &me, "dead-1");
    let hash = w.wait_pending(&me, "dead-1")["requestHash"].clone();
    let t = Instant::now();
    assert_eq!(
        w.decide(&me, &id, json!({"decision": "allow-once", "hash": hash}))
            .status,
        200
    );
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "allow-once");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the decision waited for the channel"
    );
    let c = w.client();
    let ready = support::process::wait_until(
        "the channel failing in /readyz",
        Duration::from_secs(15),
        || {
            let r = c.call("GET", "/readyz", None, None);
            (r.json()["notify"]["ok"] == false).then_some(r)
        },
    );
    assert_eq!(
        ready.status, 200,
        "a failing channel never makes the guard unready"
    );
    let v = ready.json();
    assert_eq!(v["ok"], true);
    let ch = &v["notify"]["channels"][0];
    assert_eq!(
        (ch["name"].as_str(), ch["kind"].as_str()),
        (Some("dead-hook"), Some("webhook"))
    );
    assert!(
        ch["error"].as_str().unwrap().contains("connection failed"),
        "{ch}"
    );
    let cfg = w.world.tmp.path().join("guard.toml");
    let (_code, out, err) = support::process::guard_cli(
        &["doctor"],
        &[
            ("SANCTUM_CONFIG", cfg.to_str().unwrap()),
            ("SANCTUM_STATE_DIR", w.world.guard_state.to_str().unwrap()),
            ("HOME", w.world.home.to_str().unwrap()),
        ],
    );
    assert!(
        out.contains("notify channel:      dead-hook (webhook): FAILING: connection failed"),
        "{out}\n{err}"
    );
}

#[test]
fn a_channel_over_tls_refuses_a_certificate_no_public_root_signed() {
    // A server with a self-signed certificate for the name the URL uses: a real service's
    // certificate chains to a public root, so this one must be refused, never sent to.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let certs = tempfile::tempdir().expect("tmp");
    let _ca = rt.block_on(support::readproxy::public_server(
        "127.0.0.211",
        "127.0.0.211",
        certs.path(),
    ));
    let w = serve_with(
        20_000,
        "[notify]\nbatch_ms = 0\n[[notify.channel]]\nkind = \"ntfy\"\nname = \"tls\"\nurl = \"https://127.0.0.211\"\ntopic = \"t\"\nattempts = 1\n",
    );
    let me = w.login();
    let _a = w.ask("tls-1", "touch /tmp/sg-notify-tls");
    inbox_id(&w, &me, "tls-1");
    let c = w.client();
    let ch =
        support::process::wait_until("the TLS channel failing", Duration::from_secs(15), || {
            let v = c.call("GET", "/readyz", None, None).json();
            (v["notify"]["ok"] == false).then(|| v["notify"]["channels"][0].clone())
        });
    let err = ch["error"].as_str().unwrap();
    assert!(err.contains("certificate"), "{ch}");
}
