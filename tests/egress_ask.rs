//! Destinations no egress rule covers are asked in the guard's inbox, for real: `serve`, the
//! egress proxy asking it over the approvals socket, loopback upstreams and clients through
//! the proxy. A connection waits for a person; allow-once lets that one through, allow-for
//! that host:port until the grant ends, allow-always stores the rule shown (in the proxy's
//! overlay, listed by `egress rules`, kept across a restart), deny and the deadline refuse it
//! with a body that says how to ask; a guard that is down refuses at once; a deny rule wins
//! over a grant; bad `egress-ask` frames are refused without harming an honest ask. Every
//! decision is in the proxy's audit log and the guard's.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use serde_json::Value;
use std::time::{Duration, Instant};
use support::egress::*;
use support::socket::*;

const TOKEN: &str = "egress-ask-test-token-0123456789abcdef";

/// `serve` on a fresh world and a token file for the proxy.
struct Desk {
    w: World,
    serve: Serve,
    token_file: std::path::PathBuf,
}

fn desk() -> Desk {
    let w = World::new(NEW, TOKEN, &[]);
    let serve = Serve::start(&w, &HIGH_RATE, &[]);
    let token_file = w.tmp.path().join("egress-token");
    write_secret(&token_file, TOKEN);
    Desk {
        w,
        serve,
        token_file,
    }
}

impl Desk {
    /// The proxy asking this guard, with `extra` flags, in `state`.
    fn egress(&self, state: &std::path::Path, extra: &[&str]) -> Egress {
        let sock = self.w.socket();
        let mut args = vec![
            "--ask-socket",
            sock.to_str().unwrap(),
            "--ask-token-file",
            self.token_file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        start_egress(state, &args)
    }

    /// The egress entries of the inbox (any state).
    fn entries(&self) -> Vec<Value> {
        inbox_all(&self.w)
            .into_iter()
            .filter(|e| e["request"]["who"]["source"] == "egress")
            .collect()
    }

    /// Waits for a pending egress entry whose URL is `url`.
    fn pending(&self, url: &str) -> Value {
        wait_entry_where(&self.w, Duration::from_secs(20), |e| {
            e["state"] == "pending" && e["request"]["action"]["url"] == url
        })
        .unwrap_or_else(|| panic!("no pending egress entry for {url}: {:?}", self.entries()))
    }

    fn decide(&self, args: &[&str]) {
        let mut all = vec!["inbox"];
        all.extend_from_slice(args);
        all.extend(["--state-dir", self.w.guard_state.to_str().unwrap()]);
        let (code, out, err) = guard_cli(&all, &[]);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
    }
}

fn connect_head(port: u16) -> String {
    format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n")
}

fn rule_for(port: u16, scheme: &str) -> String {
    format!(r#"{{ action = "allow", host = "127.0.0.1", ports = [{port}], scheme = "{scheme}" }}"#)
}

/// The proxy's `asked` records.
fn asked(e: &Egress) -> Vec<Value> {
    egress_records(&e.state)
        .into_iter()
        .filter(|r| r["fields"]["phase"] == "asked")
        .collect()
}

#[test]
fn an_unknown_host_waits_in_the_inbox_and_passes_once_approved() {
    let d = desk();
    let st = tempfile::tempdir().unwrap();
    let e = d.egress(&st.path().join("egress"), &[]);
    let (up, seen) = upstream();

    // A tunnel waits; the card's facts are on the entry: what, the rule "always" stores,
    // how long "for a while" lasts, and the four answers.
    let rx = through_later(e.port, connect_head(up), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{up}"));
    assert_eq!(entry["request"]["action"]["method"], "CONNECT", "{entry}");
    let reasons = entry["verdict"]["reasons"].to_string();
    assert!(
        reasons.contains(&rule_for(up, "https").replace('"', "\\\"")),
        "{reasons}"
    );
    assert!(reasons.contains("for 10 min"), "{reasons}");
    let offered = entry["verdict"]["offered"].to_string();
    for k in ["allow-once", "allow-for", "allow-always", "deny"] {
        assert!(offered.contains(k), "{offered}");
    }
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "answered before a person decided"
    );
    d.decide(&["approve", entry["id"].as_str().unwrap()]);
    let got = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(
        got.starts_with("HTTP/1.1 200") && got.ends_with("pong"),
        "{got}"
    );
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");

    // Once is once: the next connection asks again; denied, the client reads why and how.
    let rx = through_later(e.port, connect_head(up), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{up}"));
    d.decide(&[
        "deny",
        entry["id"].as_str().unwrap(),
        "--reason",
        "not today",
    ]);
    let got = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(got.starts_with("HTTP/1.1 403"), "{got}");
    assert!(
        got.contains("not allowed") && got.contains("not today"),
        "{got}"
    );
    assert!(
        got.contains("[[egress.rules]]") && got.contains(&rule_for(up, "https")),
        "{got}"
    );
    assert!(seen.recv_timeout(Duration::from_millis(300)).is_err());

    // Plain HTTP shows its method and path.
    let head =
        format!("GET http://127.0.0.1:{up}/docs?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n");
    let rx = through_later(e.port, head, b"");
    let entry = d.pending(&format!("http://127.0.0.1:{up}/docs?q=1"));
    assert_eq!(entry["request"]["action"]["method"], "GET");
    assert!(entry["verdict"]["reasons"]
        .to_string()
        .contains("scheme = \\\"http\\\""));
    d.decide(&["approve", entry["id"].as_str().unwrap()]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), "pong");
    assert!(seen
        .recv_timeout(Duration::from_secs(5))
        .unwrap()
        .starts_with("GET /docs?q=1 HTTP/1.1"));

    // Every answer is on record: the proxy's `asked` records and its connections, and the
    // guard's request and answer records.
    wait_until("three asked records", Duration::from_secs(10), || {
        (asked(&e).len() == 3).then_some(())
    });
    let a = asked(&e);
    let verdicts: Vec<&str> = a
        .iter()
        .map(|r| r["fields"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["allow", "deny", "allow"], "{a:?}");
    assert!(a[0]["fields"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("allow-once by cli:"));
    let allowed = egress_records(&e.state)
        .into_iter()
        .filter(|r| r["fields"]["phase"] == "decided" && r["fields"]["verdict"] == "allow")
        .count();
    assert_eq!(allowed, 2);
    audit_with(&d.w, &["\"source\":\"egress\"", "\"kind\":\"decision\""]);
}

#[test]
fn allow_for_a_while_covers_that_host_and_port_until_it_ends() {
    let d = desk();
    let st = tempfile::tempdir().unwrap();
    let e = d.egress(&st.path().join("egress"), &["--grant", "4s"]);
    let (up, seen) = upstream();
    let (other, _) = upstream();

    let rx = through_later(e.port, connect_head(up), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{up}"));
    assert!(entry["verdict"]["reasons"].to_string().contains("for 4 s"));
    d.decide(&["approve", "--grant", entry["id"].as_str().unwrap()]);
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .ends_with("pong"));
    let granted = Instant::now();

    // The same host:port passes at once, without a new inbox entry.
    let before = d.entries().len();
    let t = Instant::now();
    let got = through(e.port, &connect_head(up), b"ping");
    assert!(got.ends_with("pong"), "{got}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(
        d.entries().len(),
        before,
        "a granted host:port was asked again"
    );
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");

    // Another port of the same host is asked.
    let rx = through_later(e.port, connect_head(other), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{other}"));
    d.decide(&["deny", entry["id"].as_str().unwrap()]);
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .starts_with("HTTP/1.1 403"));

    // Once the grant ended, the same host:port is asked again.
    std::thread::sleep(
        Duration::from_secs(4).saturating_sub(granted.elapsed()) + Duration::from_millis(300),
    );
    let rx = through_later(e.port, connect_head(up), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{up}"));
    d.decide(&["approve", entry["id"].as_str().unwrap()]);
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .ends_with("pong"));
    let a = asked(&e);
    assert!(
        a.iter().any(|r| r["fields"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("allow-for 127.0.0.1:")),
        "{a:?}"
    );
}

#[test]
fn always_stores_the_rule_shown_and_it_outlives_a_restart() {
    let d = desk();
    let st = tempfile::tempdir().unwrap();
    let state = st.path().join("egress");
    let mut e = d.egress(&state, &[]);
    let (up, seen) = upstream();

    let rx = through_later(e.port, connect_head(up), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{up}"));
    d.decide(&["approve", "--always", entry["id"].as_str().unwrap()]);
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .ends_with("pong"));
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");

    // The rule shown is the rule stored: in the guard's overlay and the proxy's.
    let shown = rule_for(up, "https");
    let guard_overlay =
        std::fs::read_to_string(d.w.guard_state.join("egress-overlay.toml")).unwrap();
    assert!(
        guard_overlay.contains(&format!("ports = [{up}]")),
        "{guard_overlay}"
    );
    let (code, out, err) = guard_cli(
        &["egress", "rules", "--state-dir", state.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!(
            "allow 127.0.0.1:{up}  scheme=https  (overlay rule 1)"
        )),
        "{out}"
    );
    let (_, json, _) = guard_cli(
        &[
            "egress",
            "rules",
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        &[],
    );
    assert!(json.contains("\"origin\":\"overlay rule 1\""), "{json}");
    assert!(entry["verdict"]["reasons"]
        .to_string()
        .contains(&shown.replace('"', "\\\"")));

    // A restarted proxy serves it without asking; with the guard gone too.
    e.child.kill9();
    drop(e);
    let mut serve = d.serve;
    serve.stop();
    let e = start_egress(&state, &[]);
    let got = through(e.port, &connect_head(up), b"ping");
    assert!(got.ends_with("pong"), "{got}");
}

#[test]
fn a_deny_rule_beats_a_grant() {
    let d = desk();
    let (up, seen) = upstream();
    let policy = d.w.write_policy(&format!(
        "version = 1\n[[egress.rules]]\naction = \"deny\"\nhost = \"127.0.0.1\"\nports = [{up}]\nscheme = \"http\"\nmethods = [\"POST\"]\n"
    ));
    let st = tempfile::tempdir().unwrap();
    let e = d.egress(
        &st.path().join("egress"),
        &["--policy", policy.to_str().unwrap()],
    );
    let get = format!("GET http://127.0.0.1:{up}/ HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n");
    let rx = through_later(e.port, get.clone(), b"");
    let entry = d.pending(&format!("http://127.0.0.1:{up}/"));
    d.decide(&["approve", "--grant", entry["id"].as_str().unwrap()]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), "pong");
    assert_eq!(through(e.port, &get, b""), "pong");
    let _ = seen.recv_timeout(Duration::from_secs(5));
    let _ = seen.recv_timeout(Duration::from_secs(5));

    // The grant is for 127.0.0.1:up; a POST there is what the deny rule names.
    let before = d.entries().len();
    let post = format!(
        "POST http://127.0.0.1:{up}/ HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\nContent-Length: 2\r\n\r\n"
    );
    let got = through(e.port, &post, b"hi");
    assert!(
        got.starts_with("HTTP/1.1 403") && got.contains("egress rule 1"),
        "{got}"
    );
    assert_eq!(d.entries().len(), before, "a denied destination was asked");
    // The grant was for plain requests: a tunnel to the same port (where the plain-HTTP deny
    // rule could not see a POST) is asked, not let through.
    let rx = through_later(e.port, connect_head(up), b"ping");
    let entry = d.pending(&format!("connect://127.0.0.1:{up}"));
    d.decide(&["deny", entry["id"].as_str().unwrap()]);
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .starts_with("HTTP/1.1 403"));
    assert!(seen.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn an_unanswered_ask_times_out_and_a_guard_that_is_down_refuses_at_once() {
    let d = desk();
    let st = tempfile::tempdir().unwrap();
    let e = d.egress(&st.path().join("egress"), &["--ask-wait", "2s"]);
    let (up, seen) = upstream();

    let t = Instant::now();
    let got = through(e.port, &connect_head(up), b"ping");
    let waited = t.elapsed();
    assert!(
        got.starts_with("HTTP/1.1 403") && got.contains("approval-timeout"),
        "{got}"
    );
    assert!(got.contains(&rule_for(up, "https")), "{got}");
    assert!(
        waited >= Duration::from_millis(1900) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    let entry = wait_entry(&d.w, "expired", Duration::from_secs(10)).expect("expired entry");
    assert_eq!(entry["decision"]["reason"], "approval-timeout");
    wait_until("the timeout on record", Duration::from_secs(10), || {
        asked(&e)
            .iter()
            .any(|r| {
                r["fields"]["verdict"] == "deny"
                    && r["fields"]["reason"]
                        .as_str()
                        .unwrap()
                        .contains("approval-timeout")
            })
            .then_some(())
    });

    let mut serve = d.serve;
    serve.stop();
    let t = Instant::now();
    let got = through(e.port, &connect_head(up), b"ping");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(
        got.starts_with("HTTP/1.1 403") && got.contains("cannot be reached"),
        "{got}"
    );
    wait_until("the refusal on record", Duration::from_secs(10), || {
        asked(&e)
            .iter()
            .any(|r| {
                r["fields"]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("cannot be reached")
            })
            .then_some(())
    });
    assert!(seen.recv_timeout(Duration::from_millis(300)).is_err());
}

/// Frames an agent (or anyone holding a socket connection) might send instead of the proxy.
#[test]
fn forged_oversized_and_garbage_egress_asks_are_refused_without_harming_others() {
    let d = desk();
    let st = tempfile::tempdir().unwrap();
    let e = d.egress(&st.path().join("egress"), &[]);
    let (up, _seen) = upstream();
    // An honest ask waits meanwhile.
    let rx = through_later(e.port, connect_head(up), b"ping");
    d.pending(&format!("connect://127.0.0.1:{up}"));

    let ask =
        r#"{"host":"evil.example","port":443,"method":"CONNECT","waitMs":60000,"grantSecs":60}"#;
    let frame = |token: &str, ask: &str| {
        format!(r#"{{"type":"egress-ask","id":"x1","token":"{token}","ask":{ask}}}"#)
    };
    let rows: Vec<(&str, String, &str)> = vec![
        ("forged token", frame("wrong", ask), "token"),
        (
            "no token",
            frame(TOKEN, ask).replace(&format!(r#""token":"{TOKEN}","#), ""),
            "json",
        ),
        (
            "oversized",
            frame(TOKEN, &ask.replace("evil", &"e".repeat(5000))),
            "too-large",
        ),
        (
            "garbage",
            r#"{"type":"egress-ask","id":"x1",garbage"#.to_owned(),
            "json",
        ),
        (
            "unknown field",
            frame(TOKEN, &ask.replace("}", r#","allow":true}"#)),
            "json",
        ),
        (
            "bracketed host",
            frame(TOKEN, &ask.replace("evil.example", "[evil.example]")),
            "json",
        ),
        (
            "upper-case host",
            frame(TOKEN, &ask.replace("evil", "EVIL")),
            "json",
        ),
        (
            "control in path",
            frame(
                TOKEN,
                &ask.replace("CONNECT", "GET")
                    .replace("\"waitMs", "\"path\":\"/\\u0000\",\"waitMs"),
            ),
            "json",
        ),
        (
            "wait of a day",
            frame(TOKEN, &ask.replace("60000", "86400000")),
            "json",
        ),
        (
            "grant of a week",
            frame(TOKEN, &ask.replace(":60}", ":604800}")),
            "json",
        ),
        (
            "id with a newline",
            frame(TOKEN, ask).replace("x1", "x\\n1"),
            "json",
        ),
    ];
    for (what, line, reason) in &rows {
        let reply = send_line(&d.w.socket(), &format!("{line}\n"));
        assert_eq!(reply["decision"], "deny", "{what}: {reply}");
        assert_eq!(reply["reason"], *reason, "{what}: {reply}");
    }
    // None of them reached the inbox; the honest one still waits and passes once approved.
    let egress: Vec<Value> = d.entries();
    assert_eq!(egress.len(), 1, "{egress:?}");
    assert!(!egress[0].to_string().contains("evil"));
    d.decide(&["approve", egress[0]["id"].as_str().unwrap()]);
    assert!(rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .ends_with("pong"));
    audit_with(&d.w, &["\"reason\":\"too-large\"", "\"reason\":\"token\""]);
}
