//! An egress request's card over HTTP, against the real `serve`, the real egress proxy and a
//! loopback upstream: it names the destination, the exact rule "allow always" would store
//! and how long "allow for" lasts, and lists what the agent did just before from the guard's
//! audit log; the web prompt's "allow for" answer lets that host:port through until the
//! grant ends, without asking again.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::Duration;
use support::egress::*;
use support::socket::*;
use support::web::*;

#[test]
fn an_egress_card_shows_the_destination_the_rule_and_what_the_agent_did_before() {
    let w = Web::start(20_000);
    let login = w.login();
    // What the agent did before: one command the policy let run, one a person denied.
    let ok = w.ask("before-ls", "ls");
    assert!(ok.join().unwrap().contains("allow-once"));
    let gated = w.ask("before-touch", "touch /tmp/sg-egress-card");
    let e = w.wait_pending(&login, "before-touch");
    let r = w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(gated.join().unwrap().contains("deny"));
    // The person's answer is in the audit log (the card reads it from there).
    wait_until(
        "the person's deny in the audit log",
        Duration::from_secs(10),
        || {
            w.audit()
                .lines()
                .any(|l| {
                    l.contains("\"kind\":\"decision\"")
                        && l.contains("\"request_id\"")
                        && l.contains("\"by\":\"human\"")
                })
                .then_some(())
        },
    );

    let (e, _st) = start_asking(&w.world, TOKEN);
    let (up, seen) = upstream();
    let rx = through_later(
        e.port,
        format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n"),
        b"ping",
    );

    let card = wait_until("the egress card", Duration::from_secs(20), || {
        w.pending(&login)
            .into_iter()
            .find(|c| c["source"] == "egress")
    });
    let g = &card["egress"];
    assert_eq!(g["target"], format!("127.0.0.1:{up}"), "{g}");
    assert_eq!(g["tunnel"], true);
    assert_eq!(
        g["rule"],
        format!(r#"{{ action = "allow", host = "127.0.0.1", ports = [{up}], scheme = "https" }}"#)
    );
    assert_eq!(g["grantLabel"], "Allow for 10 min", "{g}");
    let recent: Vec<String> = g["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} -> {}",
                r["what"].as_str().unwrap(),
                r["answer"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        recent.iter().any(|r| r == "exec ls -> allow-once (policy)"),
        "{recent:?}"
    );
    assert!(
        recent
            .iter()
            .any(|r| r == "exec touch /tmp/sg-egress-card -> deny (human)"),
        "{recent:?}"
    );
    assert_eq!(card["runs"]["by"], "egress-proxy");
    let offered: Vec<&str> = card["offered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(offered, ["allow-once", "allow-for", "allow-always", "deny"]);

    // The web prompt's allow-for: this connection and the next pass; nothing more is asked.
    let r = w.decide(
        &login,
        card["id"].as_str().unwrap(),
        json!({"decision":"allow-for","hash":card["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .ends_with("pong"));
    let again = through(
        e.port,
        &format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n"),
        b"ping",
    );
    assert!(again.ends_with("pong"), "{again}");
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");
    let egress_cards = |v: Vec<Value>| v.into_iter().filter(|c| c["source"] == "egress").count();
    assert_eq!(egress_cards(w.pending(&login)), 0);
}
