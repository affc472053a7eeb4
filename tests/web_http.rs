//! The web prompt at the HTTP level, against the real `serve` binary and real socket
//! clients: every refusal (401, 403, 404, 409, 413, 429), the decision path through the
//! inbox to the client and the audit log, the security headers, secrets never served,
//! health, readiness and metrics.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::socket::*;
use support::web::*;

/// One refusal case: what, method, path, header lines, status, error code.
type Case<'a> = (&'a str, &'a str, &'a str, Vec<String>, u16, &'a str);

/// Every state-changing call without the page's own origin or CSRF token is refused, and
/// so is any request naming a foreign Host (DNS rebinding). Attacks first, as a table.
#[test]
fn refusals_without_session_csrf_origin_or_host() {
    let w = Web::start(15_000);
    let me = w.login();
    let h = w.host();
    let o = w.origin();
    let c = me.cookie.clone();
    let csrf = me.csrf.clone();
    let body = r#"{"decision":"allow-once","hash":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
    let path = "/api/requests/00000000-0000-4000-8000-000000000000/decision";
    // (what, method, path, headers, status, error code)
    let cases: Vec<Case> = vec![
        (
            "list without a session",
            "GET",
            "/api/requests",
            vec![format!("Host: {h}")],
            401,
            "unauthenticated",
        ),
        (
            "events without a session",
            "GET",
            "/api/events",
            vec![format!("Host: {h}")],
            401,
            "unauthenticated",
        ),
        (
            "a forged session cookie",
            "GET",
            "/api/requests",
            vec![
                format!("Host: {h}"),
                "Cookie: sg_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
            ],
            401,
            "unauthenticated",
        ),
        (
            "decision without a session",
            "POST",
            path,
            vec![format!("Host: {h}"), format!("Origin: {o}")],
            401,
            "unauthenticated",
        ),
        (
            "decision without CSRF",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}"),
                format!("Cookie: {c}"),
            ],
            403,
            "csrf",
        ),
        (
            "decision with a wrong CSRF",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}"),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {}x", &csrf[1..]),
            ],
            403,
            "csrf",
        ),
        (
            "decision with an empty CSRF",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}"),
                format!("Cookie: {c}"),
                "X-CSRF-Token: ".into(),
            ],
            403,
            "csrf",
        ),
        (
            "foreign Origin",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                "Origin: https://evil.example".into(),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "Origin null",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                "Origin: null".into(),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "no Origin",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "Origin on another port",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                "Origin: http://127.0.0.1:1".into(),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "https Origin for an http page",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Origin: https://{h}"),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "Origin with a path suffix trick",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}.evil.example"),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "cross-site fetch metadata",
            "POST",
            path,
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}"),
                "Sec-Fetch-Site: cross-site".into(),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "logout from a foreign Origin",
            "POST",
            "/api/logout",
            vec![
                format!("Host: {h}"),
                "Origin: https://evil.example".into(),
                format!("Cookie: {c}"),
                format!("X-CSRF-Token: {csrf}"),
            ],
            403,
            "origin",
        ),
        (
            "logout without CSRF",
            "POST",
            "/api/logout",
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}"),
                format!("Cookie: {c}"),
            ],
            403,
            "csrf",
        ),
        (
            "revoke without CSRF",
            "POST",
            "/api/sessions/revoke",
            vec![
                format!("Host: {h}"),
                format!("Origin: {o}"),
                format!("Cookie: {c}"),
            ],
            403,
            "csrf",
        ),
        (
            "login from a foreign Origin",
            "POST",
            "/api/login",
            vec![format!("Host: {h}"), "Origin: https://evil.example".into()],
            403,
            "origin",
        ),
        (
            "DNS rebinding: foreign Host on the API",
            "GET",
            "/api/requests",
            vec!["Host: evil.example:80".into(), format!("Cookie: {c}")],
            403,
            "host",
        ),
        (
            "DNS rebinding: foreign Host on the page",
            "GET",
            "/",
            vec![format!("Host: evil.example:{}", w.port)],
            403,
            "host",
        ),
        (
            "no Host",
            "GET",
            "/api/session",
            vec![format!("Cookie: {c}")],
            403,
            "host",
        ),
    ];
    for (what, method, p, headers, status, code) in cases {
        let body = (method == "POST").then_some(body.as_bytes());
        let r = w.raw(method, p, &headers, body);
        assert_eq!(r.status, status, "{what}: {r:?}");
        assert_eq!(r.json()["error"], code, "{what}: {r:?}");
    }
    // The same decision with everything right reaches the inbox (404: no such request).
    let r = w.decide(
        &me,
        "00000000-0000-4000-8000-000000000000",
        json!({"decision":"allow-once","hash":"0".repeat(64)}),
    );
    assert_eq!(r.status, 404, "{r:?}");
    // Unknown routes.
    for p in [
        "/nope",
        "/api/nope",
        "/api/requests/x/y/z",
        "/assets/../Cargo.toml",
        "/assets/missing.js",
    ] {
        assert_eq!(w.call("GET", p, Some(&me), None).status, 404, "{p}");
    }
    // Still signed in after all of that; logout ends the session, and the cookie with it.
    assert_eq!(w.call("GET", "/api/session", Some(&me), None).status, 200);
    let r = w.call("POST", "/api/logout", Some(&me), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("set-cookie")
            .is_some_and(|c| c.contains("Max-Age=0")),
        "{r:?}"
    );
    assert_eq!(w.call("GET", "/api/session", Some(&me), None).status, 401);
}

/// A login link works once; a wrong, truncated or used one gets 401; a new one from the
/// command line works; revocation ends every session; floods get 429.
#[test]
fn login_links_sessions_and_rate_limit() {
    let w = Web::start(15_000);
    let link_path = w.link_file();
    let mode = std::fs::metadata(&link_path)
        .expect("link file")
        .permissions();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.mode() & 0o777, 0o600, "login link file must be 0600");
    let token = w.link_token();
    // The store keeps only the hash of the token.
    let store = std::fs::read_to_string(w.world.guard_state.join("web-logins")).expect("store");
    assert!(!store.contains(&token), "token stored in clear: {store}");
    let r = w.login_with(&token);
    assert_eq!(r.status, 200, "{r:?}");
    let cookie = r.header("set-cookie").expect("cookie");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "cookie lacks {attr}: {cookie}");
    }
    assert!(
        !r.body.contains(
            cookie
                .split(';')
                .next()
                .expect("c")
                .split('=')
                .nth(1)
                .expect("v")
        ),
        "session id in body"
    );
    assert!(!link_path.exists(), "used link file should be gone");
    // Used once: dead.
    let again = w.login_with(&token);
    assert_eq!(again.status, 401, "{again:?}");
    assert_eq!(again.json()["error"], "bad-login");
    // A new link while serve runs.
    let link = w.new_link();
    assert!(link.starts_with(&format!("{}/login#t=", w.base)), "{link}");
    let t2 = link.rsplit_once("#t=").expect("t").1.to_owned();
    let alice = Login::from_answer(&w.login_with(&t2));
    assert!(alice.identity.starts_with("web:admin/"), "{alice:?}");
    // Revocation ends every session.
    let r = w.call("POST", "/api/sessions/revoke", Some(&alice), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        w.call("GET", "/api/session", Some(&alice), None).status,
        401
    );
    // Flood of wrong tokens from this address: each is refused, and a good link still works
    // (a 256-bit token cannot be guessed, so checking one is never starved).
    let good = w.new_link().rsplit_once("#t=").expect("t").1.to_owned();
    let mut statuses = Vec::new();
    for i in 0..8 {
        let bad = format!("{:A<43}", i);
        statuses.push(w.login_with(&bad).status);
    }
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
    let r = w.login_with(&good);
    assert_eq!(r.status, 200, "{r:?}");
}

/// A local process spraying `/api/login` from many loopback addresses cannot lock the
/// person holding a valid link out; every failed sign-in is logged with address and reason,
/// at a bounded rate of log lines.
#[test]
fn signin_spray_cannot_lock_out_a_valid_link() {
    let w = Web::start(15_000);
    let good = w.link_token();
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..120u32 {
        let src = std::net::Ipv4Addr::new(127, 1, (i / 200) as u8, (i % 200 + 2) as u8);
        let bad = format!("{:B<43}", i);
        let r = w.login_from(src, &json!({ "token": bad }));
        *statuses.entry(r.status).or_insert(0) += 1;
    }
    assert_eq!(
        statuses.keys().copied().collect::<Vec<_>>(),
        vec![401],
        "{statuses:?}"
    );
    let r = w.login_with(&good);
    assert_eq!(r.status, 200, "valid link locked out after a spray: {r:?}");
    let log = w.serve.log();
    assert!(
        log.contains("web: sign-in refused")
            && log.contains("127.1.0.2")
            && log.contains("unknown-token"),
        "failed sign-ins not logged with address and reason: {log}"
    );
    let lines = log.matches("web: sign-in refused").count();
    assert!(
        (1..=40).contains(&lines),
        "failed sign-in log not bounded: {lines} lines for 120 failures"
    );
}

/// With TOTP enrolled: wrong codes count against the link (the 5th burns it), a code
/// works once (the same code on a second link is refused), and an unknown or malformed
/// token gets the very same answer as a wrong code. Guessing codes is rate-limited per
/// address, so a spray from other addresses leaves the holder's address alone.
#[test]
fn totp_codes_burn_links_work_once_and_answer_alike() {
    let w = Web::start(15_000);
    let dir = w.world.guard_state.to_str().expect("utf8").to_owned();
    let (code, uri, err) = guard_cli(&["web", "totp-enroll", "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{err}");
    let totp = totp_rs::TOTP::from_url(uri.trim()).expect("uri");
    let now = || totp.generate_current().expect("code");
    let wrong = || {
        format!(
            "{:06}",
            (now().parse::<u32>().expect("n") + 500_000) % 1_000_000
        )
    };
    let src = |i: u8| std::net::Ipv4Addr::new(127, 2, 0, i);
    // Same answer (status, error and message) for a malformed token, an unknown token and
    // a wrong code on a live link.
    let victim = w.new_link().rsplit_once("#t=").expect("t").1.to_owned();
    let answer = |r: Resp| (r.status, r.body);
    let malformed = answer(w.login_from(src(2), &json!({"token": "short", "totp": wrong()})));
    let unknown = answer(w.login_from(src(3), &json!({"token": "C".repeat(43), "totp": wrong()})));
    let wrong_code = answer(w.login_from(src(4), &json!({"token": victim, "totp": wrong()})));
    assert_eq!(malformed, unknown);
    assert_eq!(unknown, wrong_code);
    assert_eq!(wrong_code.0, 401);
    // Four more wrong codes, each from a fresh address: the fifth burns the link, so even
    // the right code no longer signs in with it.
    for i in 5..9 {
        let r = w.login_from(src(i), &json!({"token": victim, "totp": wrong()}));
        assert_eq!(r.status, 401, "{r:?}");
    }
    let r = w.login_from(src(20), &json!({"token": victim, "totp": now()}));
    assert_eq!(r.status, 401, "link not burned after 5 wrong codes: {r:?}");
    // A code works once.
    let a = w.new_link().rsplit_once("#t=").expect("t").1.to_owned();
    let b = w.new_link().rsplit_once("#t=").expect("t").1.to_owned();
    let code = now();
    let r = w.login_from(src(30), &json!({"token": a, "totp": code}));
    assert_eq!(r.status, 200, "{r:?}");
    let r = w.login_from(src(31), &json!({"token": b, "totp": code}));
    assert_eq!(r.status, 401, "a code worked twice: {r:?}");
    // Code guesses from one address are rate-limited there only.
    let mut got = Vec::new();
    for _ in 0..10 {
        let bogus = "D".repeat(43);
        got.push(
            w.login_from(src(40), &json!({"token": bogus, "totp": wrong()}))
                .status,
        );
    }
    assert!(
        got.contains(&429),
        "no per-address limit on code guesses: {got:?}"
    );
    // Wait for the next code (codes are single-use), then sign in with b from the usual
    // address: neither the spray nor the other address's 429 got in the way.
    let deadline = Instant::now() + Duration::from_secs(35);
    while now() == code {
        assert!(Instant::now() < deadline, "TOTP step did not advance");
        std::thread::sleep(Duration::from_millis(500));
    }
    let r = w.call(
        "POST",
        "/api/login",
        None,
        Some(&json!({"token": b, "totp": now()}).to_string()),
    );
    assert_eq!(r.status, 200, "{r:?}");
}

/// Decisions go through the inbox bound to the request hash: allow-once reaches the
/// client; deny carries the reason and the approver into the audit log; a stale card or a
/// hash of another request gets 409 and changes nothing; bodies over 1 MB get 413.
#[test]
fn decisions_stale_cards_and_body_limit() {
    let w = Web::start(15_000);
    let me = w.login();
    let a = w.ask("req-a", "touch /tmp/sg-web-a");
    let b = w.ask("req-b", "touch /tmp/sg-web-b");
    let ea = w.wait_pending(&me, "req-a");
    let eb = w.wait_pending(&me, "req-b");
    let (ida, ha) = (
        ea["id"].as_str().expect("id"),
        ea["requestHash"].as_str().expect("h"),
    );
    let (idb, hb) = (
        eb["id"].as_str().expect("id"),
        eb["requestHash"].as_str().expect("h"),
    );
    assert_eq!(ea["action"]["argv"], json!([]), "{ea}");
    assert_eq!(ea["action"]["command"], "touch /tmp/sg-web-a");
    assert_eq!(ea["source"], "socket");
    assert_eq!(ea["agentId"], "main");
    // Shell text names no program; the analysis resolved one, and the entry says which.
    assert!(
        ea["programs"].to_string().contains("/touch"),
        "{}",
        ea["programs"]
    );
    // Pages: the true count comes with every page, and the next page is the rest.
    let page = |q: &str| {
        w.call("GET", &format!("/api/requests?{q}"), Some(&me), None)
            .json()
    };
    let p1 = page("limit=1");
    assert_eq!(
        (
            p1["requests"].as_array().map(Vec::len),
            p1["total"].as_u64()
        ),
        (Some(1), Some(2)),
        "{p1}"
    );
    let p2 = page("limit=1&offset=1");
    assert_eq!(p2["requests"].as_array().map(Vec::len), Some(1), "{p2}");
    assert_ne!(p1["requests"][0]["id"], p2["requests"][0]["id"]);
    assert_eq!(page("offset=9")["requests"], json!([]));
    // B's hash on A's card: refused, nothing applied to either.
    let r = w.decide(&me, ida, json!({"decision":"allow-once","hash":hb}));
    assert_eq!(r.status, 409, "{r:?}");
    assert!(r.json()["message"]
        .as_str()
        .expect("msg")
        .contains("Not applied"));
    assert_eq!(w.pending(&me).len(), 2);
    // Malformed decisions: 400, nothing applied.
    for bad in [
        json!({"decision":"allow-once"}),
        json!({"decision":"yes","hash":ha}),
        json!({"decision":"allow-once","hash":"zz"}),
        json!("allow-once"),
    ] {
        assert_eq!(w.decide(&me, ida, bad.clone()).status, 400, "{bad}");
    }
    assert_eq!(w.pending(&me).len(), 2);
    // 413 on a decision body over 1 MB (and on the login endpoint, before any session).
    let big = format!(
        "{{\"decision\":\"deny\",\"hash\":\"{ha}\",\"reason\":\"{}\"}}",
        "x".repeat(1024 * 1024)
    );
    let r = w.call(
        "POST",
        &format!("/api/requests/{ida}/decision"),
        Some(&me),
        Some(&big),
    );
    assert_eq!(r.status, 413, "{}", r.status);
    let r = w.call("POST", "/api/login", None, Some(&big));
    assert_eq!(r.status, 413, "{}", r.status);
    // Chunked, with no length announced: cut off at 1 MB all the same.
    let mut chunked = Vec::new();
    for _ in 0..20 {
        chunked.extend_from_slice(format!("{:x}\r\n", 64 * 1024).as_bytes());
        chunked.extend_from_slice(&[b'x'; 64 * 1024]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let headers = vec![
        format!("Host: {}", w.host()),
        format!("Origin: {}", w.origin()),
        format!("Cookie: {}", me.cookie),
        format!("X-CSRF-Token: {}", me.csrf),
        "Transfer-Encoding: chunked".into(),
    ];
    let mut s = std::net::TcpStream::connect(("127.0.0.1", w.port)).expect("connect");
    use std::io::{Read, Write};
    let mut req = format!("POST /api/requests/{ida}/decision HTTP/1.1\r\nConnection: close\r\n");
    for h in &headers {
        req.push_str(&format!("{h}\r\n"));
    }
    req.push_str("\r\n");
    let _ = s.write_all(req.as_bytes());
    let _ = s.write_all(&chunked);
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(
        out.starts_with("HTTP/1.1 413"),
        "chunked body over 1 MB: {}",
        out.lines().next().unwrap_or("")
    );
    assert_eq!(w.pending(&me).len(), 2);
    // Allow once: the client gets allow-once.
    let r = w.decide(&me, ida, json!({"decision":"allow-once","hash":ha}));
    assert_eq!(r.status, 200, "{r:?}");
    let reply = first_json(&a.join().expect("client a"));
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    // The same card again: stale.
    let r = w.decide(&me, ida, json!({"decision":"deny","hash":ha}));
    assert_eq!(r.status, 409, "{r:?}");
    assert!(
        r.json()["message"]
            .as_str()
            .expect("m")
            .contains("already approved"),
        "{r:?}"
    );
    // Deny with a reason: the client gets deny, the audit log the reason and the approver.
    let r = w.decide(
        &me,
        idb,
        json!({"decision":"deny","hash":hb,"reason":"not today\u{202e}\u{1b}"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&b.join().expect("client b"))["decision"], "deny");
    let audit = w.audit();
    let line = audit
        .lines()
        .find(|l| l.contains(idb) && l.contains("\"not today\""))
        .unwrap_or_else(|| panic!("no deny record with the reason:\n{audit}"));
    assert!(
        line.contains(&format!("{}@127.0.0.1:", me.identity)),
        "approver missing: {line}"
    );
    // History shows both, with who decided.
    let r = w.call("GET", "/api/requests?state=resolved", Some(&me), None);
    let hist = r.json()["requests"].as_array().cloned().expect("list");
    assert_eq!(hist.len(), 2, "{hist:?}");
    assert!(hist.iter().all(|e| e["decision"]["by"] == "human"));
    let r = w.call(
        "GET",
        "/api/requests?state=resolved&q=sg-web-b",
        Some(&me),
        None,
    );
    assert_eq!(r.json()["requests"].as_array().expect("l").len(), 1);
    // The audit chain verifies through the API.
    let r = w.call("GET", "/api/audit/verify", Some(&me), None);
    assert_eq!(r.json()["ok"], true, "{r:?}");
    // Metrics counted the human decisions.
    let m = w.call("GET", "/metrics", None, None).body;
    assert!(
        m.contains("sanctum_decisions_total{kind=\"deny\",by=\"human\"} 1"),
        "{m}"
    );
    assert!(m.contains("sanctum_decision_latency_seconds_count"), "{m}");
    assert!(m.contains("sanctum_pending_requests 0"), "{m}");
    // Unauthenticated metrics name the door, never the approver.
    assert!(
        m.contains("sanctum_human_decisions_total{via=\"web\"}"),
        "{m}"
    );
    assert!(!m.contains("admin"), "an approver's name in /metrics: {m}");
    // The web door's refusals only with the scrape token (tests/web_abuse.rs has the rest).
    assert!(!m.contains("sanctum_web_refusals_total"), "{m}");
    let scrape_token = "0123456789abcdef0123456789abcdef-web-http";
    support::process::write_secret(&w.world.guard_state.join("web-metrics-token"), scrape_token);
    let m = w
        .raw(
            "GET",
            "/metrics",
            &[
                format!("Host: {}", w.host()),
                format!("Authorization: Bearer {scrape_token}"),
            ],
            None,
        )
        .body;
    assert!(
        m.contains("sanctum_web_refusals_total{reason=\"stale\"} 2"),
        "{m}"
    );
}

/// Pages and API answers carry the security headers, and no secret (socket token, session
/// id, login token) is ever in a page, an API answer or the log after the first line.
#[test]
fn headers_secrets_health_and_notice_line() {
    let w = Web::start(15_000);
    let token = w.link_token();
    let me = w.login();
    let sid = me.cookie.split_once('=').expect("c").1.to_owned();
    let asker = w.ask("req-n", "touch /tmp/sg-web-n");
    let e = w.wait_pending(&me, "req-n");
    let mut bodies = String::new();
    for p in [
        "/",
        "/history",
        "/login",
        "/assets/app.css",
        "/assets/common.js",
        "/assets/inbox.js",
        "/assets/inbox-gate.js",
        "/assets/inbox-queue.js",
        "/assets/card.js",
        "/audit",
        "/assets/audit.js",
        "/api/audit/1",
        "/api/session",
        "/api/requests",
        "/api/requests?state=all",
        "/metrics",
        "/healthz",
        "/readyz",
    ] {
        let r = w.call("GET", p, Some(&me), None);
        assert_eq!(r.status, 200, "{p}: {r:?}");
        for (k, v) in [
            ("content-security-policy", "frame-ancestors 'none'"),
            ("content-security-policy", "script-src 'self'"),
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
            ("x-content-type-options", "nosniff"),
        ] {
            assert!(
                r.header(k).is_some_and(|h| h.contains(v)),
                "{p} lacks {k}: {v}\n{}",
                r.head
            );
        }
        assert!(!r
            .header("content-security-policy")
            .expect("csp")
            .contains("unsafe-inline"));
        bodies.push_str(&r.body);
    }
    let r = w.call(
        "GET",
        &format!("/api/requests/{}", e["id"].as_str().expect("id")),
        Some(&me),
        None,
    );
    bodies.push_str(&r.body);
    for (what, secret) in [
        ("socket token", TOKEN),
        ("session id", sid.as_str()),
        ("login token", token.as_str()),
    ] {
        assert!(!bodies.contains(secret), "{what} served");
    }
    // The page has no inline script or style.
    let page = w.call("GET", "/", Some(&me), None).body;
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "inline code in the page"
    );
    // Ready: socket bound, inbox and audit writable; no push channel configured.
    let r = w.call("GET", "/readyz", None, None).json();
    assert_eq!(
        r,
        json!({"ok":true,"socket":true,"inbox":true,"audit":true,
               "notify":{"ok":true,"channels":[]}})
    );
    // One log line names the waiting request, its time left and its card link.
    let log = w.serve.log();
    let line = log
        .lines()
        .find(|l| l.contains("waiting for a human"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        line.contains("touch /tmp/sg-web-n") && line.contains("s left"),
        "{line}"
    );
    assert!(
        line.contains(&format!("{}/#r={}", w.base, e["id"].as_str().expect("id"))),
        "{line}"
    );
    // The socket token and the session never reach the log; the login token only in the
    // one startup line.
    assert!(!log.contains(TOKEN), "socket token in log");
    assert!(!log.contains(&sid), "session id in log");
    assert_eq!(
        log.matches(&token).count(),
        1,
        "login token logged more than once"
    );
    let r = w.decide(
        &me,
        e["id"].as_str().expect("id"),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200);
    asker.join().expect("asker");
}

/// 500 idle event streams and a slow client that never finishes its headers do not stop the
/// server from answering, within a bound.
#[test]
fn keeps_serving_under_idle_streams_and_slow_clients() {
    use std::io::{Read, Write};
    let w = Web::start(15_000);
    let me = w.login();
    let open = |cookie: &str| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", w.port)).expect("connect");
        let req = format!(
            "GET /api/events HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
            w.host(),
            cookie
        );
        s.write_all(req.as_bytes()).expect("write");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("t");
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).expect("read stream");
        (s, String::from_utf8_lossy(&buf[..n]).into_owned())
    };
    // One session gets its share of the stream slots, not all of them.
    let mut streams = Vec::new();
    for _ in 0..16 {
        let (s, head) = open(&me.cookie);
        assert!(
            head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"),
            "{head}"
        );
        streams.push(s);
    }
    let (_, head) = open(&me.cookie);
    assert!(head.starts_with("HTTP/1.1 429"), "a 17th stream: {head}");
    // Another session still streams; its logout ends its stream at once (no heartbeat wait).
    let other = w.login_new_link();
    let (mut theirs, head) = open(&other.cookie);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let out = Instant::now();
    assert_eq!(
        w.call("POST", "/api/logout", Some(&other), Some("{}"))
            .status,
        200
    );
    let mut got = head;
    while !got.contains("event: signed-out") && out.elapsed() < Duration::from_secs(10) {
        let mut buf = [0u8; 1024];
        let n = theirs.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(got.contains("event: signed-out"), "{got}");
    assert!(
        out.elapsed() < Duration::from_secs(5),
        "the stream outlived the logout by {:?}",
        out.elapsed()
    );
    // Slow clients: half a request line, and headers without an end.
    let mut slow1 = std::net::TcpStream::connect(("127.0.0.1", w.port)).expect("c");
    slow1.write_all(b"GET /api/requ").expect("w");
    let mut slow2 = std::net::TcpStream::connect(("127.0.0.1", w.port)).expect("c");
    slow2.write_all(format!("POST /api/login HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nContent-Length: 100\r\n\r\n{{", w.host(), w.origin()).as_bytes()).expect("w");
    let t = Instant::now();
    let r = w.call("GET", "/api/requests", Some(&me), None);
    assert_eq!(r.status, 200);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "slow answer: {:?}",
        t.elapsed()
    );
    // A request arriving now reaches an idle stream.
    let asker = w.ask("req-s", "touch /tmp/sg-web-s");
    let s = &mut streams[15];
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("t");
    let mut got = String::new();
    let start = Instant::now();
    while !got.contains("event: added") && start.elapsed() < Duration::from_secs(10) {
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap_or(0);
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(
        got.contains("event: added") && got.contains("sg-web-s"),
        "{got}"
    );
    let metrics = w.call("GET", "/metrics", None, None);
    assert_eq!(metrics.status, 200);
    drop(streams);
    let e = w.wait_pending(&me, "req-s");
    w.decide(
        &me,
        e["id"].as_str().expect("id"),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    asker.join().expect("asker");
}

/// With a certificate and key the prompt speaks HTTPS only: the session cookie is Secure
/// and `__Host-` prefixed, HSTS is sent, and plain HTTP on that port gets no page.
#[test]
fn https_with_cert_and_key() {
    let dir = tempfile::tempdir().expect("tmp");
    let (crt, key) = (dir.path().join("web.crt"), dir.path().join("web.key"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl");
    assert!(ok.success());
    let w = Web::start_with(
        15_000,
        &[
            "--web-cert",
            crt.to_str().expect("u"),
            "--web-key",
            key.to_str().expect("u"),
        ],
        "https",
    );
    let link = std::fs::read_to_string(w.link_file()).expect("link");
    assert!(
        link.starts_with(&format!("https://127.0.0.1:{}/login#t=", w.port)),
        "{link}"
    );
    let token = w.link_token();
    let out = std::process::Command::new("curl")
        .args(["-sk", "-D", "-", "-o", "/dev/null", "-H"])
        .arg(format!("Origin: https://127.0.0.1:{}", w.port))
        .args(["-H", "Content-Type: application/json", "--data"])
        .arg(json!({"token": token}).to_string())
        .arg(format!("https://127.0.0.1:{}/api/login", w.port))
        .output()
        .expect("curl");
    let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains("set-cookie: __host-sg_session=") && head.contains("; secure"),
        "{head}"
    );
    assert!(head.contains("strict-transport-security"), "{head}");
    // Plain HTTP on the TLS port: no page.
    let r = w.raw("GET", "/healthz", &[format!("Host: {}", w.host())], None);
    assert_ne!(r.status, 200, "{r:?}");
}

/// With TOTP enrolled, a link alone does not sign in: no code or a wrong code is refused
/// without using the link up; the current code signs in. The seed is shown once, at
/// enrolment, and never served.
#[test]
fn totp_second_factor() {
    let w = Web::start(15_000);
    let dir = w.world.guard_state.to_str().expect("utf8").to_owned();
    let (code, uri, err) = guard_cli(&["web", "totp-enroll", "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(uri.trim().starts_with("otpauth://totp/"), "{uri}");
    let (again, _, err) = guard_cli(&["web", "totp-enroll", "--state-dir", &dir], &[]);
    assert_eq!(again, 2, "second enrolment without --force: {err}");
    let seed = std::fs::read_to_string(w.world.guard_state.join("web-totp")).expect("seed");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(w.world.guard_state.join("web-totp"))
        .expect("m")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let totp = totp_rs::TOTP::from_url(uri.trim()).expect("uri");
    let token = w.link_token();
    let login = |code: Option<&str>| {
        let mut body = json!({"token": token});
        if let Some(c) = code {
            body["totp"] = json!(c);
        }
        w.call("POST", "/api/login", None, Some(&body.to_string()))
    };
    let r = login(None);
    assert_eq!(
        (r.status, r.json()["error"].clone()),
        (401, json!("totp-required"))
    );
    let good = totp.generate_current().expect("code");
    let wrong = format!(
        "{:06}",
        (good.parse::<u32>().expect("n") + 500_000) % 1_000_000
    );
    // Three wrong codes (under the five that burn the link) plus the sign-in stay within
    // the per-address burst; a wrong code answers like a bad link, revealing nothing.
    for bad in [wrong.as_str(), "12345", "abcdef"] {
        let r = login(Some(bad));
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (401, json!("bad-login")),
            "{bad}"
        );
    }
    let r = login(Some(&good));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(!r.body.contains(seed.trim()), "seed served");
    assert!(r.json()["totpEnrolled"] == true);
}

/// `/readyz` and `/metrics` obey the Host check (DNS rebinding cannot read them; only the
/// content-free `/healthz` answers any Host), and a duplicate `Host` header or an
/// absolute-form request target is refused with 400.
#[test]
fn health_host_check_duplicate_host_and_absolute_target() {
    let w = Web::start(15_000);
    let evil = vec!["Host: rebound.example:80".to_owned()];
    for path in ["/readyz", "/metrics"] {
        assert_eq!(w.raw("GET", path, &evil, None).status, 403, "{path}");
        let ours = vec![format!("Host: {}", w.host())];
        assert_eq!(w.raw("GET", path, &ours, None).status, 200, "{path}");
    }
    assert_eq!(w.raw("GET", "/healthz", &evil, None).status, 200);
    let twice = vec![
        format!("Host: {}", w.host()),
        "Host: rebound.example".to_owned(),
    ];
    assert_eq!(w.raw("GET", "/readyz", &twice, None).status, 400);
    let twice_same = vec![format!("Host: {}", w.host()), format!("Host: {}", w.host())];
    assert_eq!(w.raw("GET", "/api/session", &twice_same, None).status, 400);
    let ours = vec![format!("Host: {}", w.host())];
    let absolute = format!("{}/api/session", w.base);
    assert_eq!(w.raw("GET", &absolute, &ours, None).status, 400);
    assert_eq!(w.raw("GET", "/api/session", &ours, None).status, 401);
}
