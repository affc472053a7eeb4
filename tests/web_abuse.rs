//! The web prompt under load and abuse, against the real `serve` binary: a
//! flood of 1 MB sign-in bodies leaves the guard's memory flat (measured from /proc); junk
//! sign-ins from an address never lock out the person holding a live link and the current
//! code; `/metrics` shows the sign-in series only to the operator's scrape token; and "sign
//! out everywhere" closes the front-door WebSockets opened with the web cookie.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::gateway::{door_link, open, open_with, WsClient};
use support::socket::*;
use support::web::*;
use tokio_tungstenite::tungstenite;

/// A `/proc/<pid>/status` field in KiB (VmRSS now, VmHWM the peak).
fn kib(pid: i32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Sends one `POST /api/login` with a `len`-byte body; the status line's code (0: the server
/// closed before answering, which also counts as not buffered).
fn big_login(port: u16, len: usize, chunked: bool) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let head = if chunked {
        format!(
            "POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
    } else {
        format!(
            "POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             Content-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
        )
    };
    let _ = s.write_all(head.as_bytes());
    let junk = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < len {
        let n = junk.len().min(len - sent);
        let ok = if chunked {
            s.write_all(format!("{n:x}\r\n").as_bytes()).is_ok()
                && s.write_all(&junk[..n]).is_ok()
                && s.write_all(b"\r\n").is_ok()
        } else {
            s.write_all(&junk[..n]).is_ok()
        };
        if !ok {
            break; // The guard answered and closed: the rest is never read.
        }
        sent += n;
    }
    if chunked {
        let _ = s.write_all(b"0\r\n\r\n");
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// 1,000 sign-in bodies of 1 MB (50 at a time, half of them chunked) leave the guard's
/// memory where it was: a sign-in body is capped at 4 KiB and refused (413) before more is
/// read, never buffered.
#[test]
fn a_flood_of_megabyte_sign_in_bodies_leaves_memory_flat() {
    let w = Web::start(15_000);
    let pid = w.serve.pid();
    // Warm up (the first requests allocate the server's steady buffers).
    for _ in 0..20 {
        big_login(w.port, 1024 * 1024, false);
    }
    let before = kib(pid, "VmRSS:");
    let hwm_before = kib(pid, "VmHWM:");
    let start = Instant::now();
    let port = w.port;
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..50)
            .map(|_| {
                s.spawn(move || {
                    // Half announce their length, half are chunked (cut off at the limit).
                    (0..20)
                        .map(|i| big_login(port, 1024 * 1024, i % 2 == 1).0)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    let took = start.elapsed();
    let after = kib(pid, "VmRSS:");
    let hwm_after = kib(pid, "VmHWM:");
    eprintln!(
        "1,000 x 1 MB POST /api/login in {took:?}: RSS {} -> {} MB, peak {} -> {} MB",
        before / 1024,
        after / 1024,
        hwm_before / 1024,
        hwm_after / 1024
    );
    assert_eq!(statuses.len(), 1000);
    assert!(
        statuses.iter().all(|&c| c == 413 || c == 0),
        "a 1 MB sign-in body was not refused: {:?}",
        statuses
            .iter()
            .filter(|&&c| c != 413)
            .take(5)
            .collect::<Vec<_>>()
    );
    assert!(
        after.saturating_sub(before) < 40 * 1024,
        "RSS grew {} MB",
        after.saturating_sub(before) / 1024
    );
    assert!(
        hwm_after.saturating_sub(before) < 40 * 1024,
        "peak RSS grew {} MB",
        hwm_after.saturating_sub(before) / 1024
    );
    // The refusal says what the limit is; a chunked body (no length announced) is cut at it.
    let (code, text) = big_login(w.port, 5000, false);
    assert_eq!(code, 413, "{text}");
    assert!(text.contains("4096-byte limit"), "{text}");
    let (code, text) = big_login(w.port, 64 * 1024, true);
    assert_eq!(code, 413, "chunked: {text}");
    // A real sign-in still works.
    let _me = w.login();
}

/// With TOTP enrolled: junk sign-ins from one address spend its allowance (429), yet the
/// person at that same address with a live link and the current code signs in: the link is
/// checked before the address's limit. A wrong code on a live link is still limited.
#[test]
fn junk_from_an_address_never_locks_out_a_live_link_with_the_current_code() {
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
    let shared = std::net::Ipv4Addr::new(127, 3, 0, 9);
    let link = w.new_link().rsplit_once("#t=").expect("t").1.to_owned();
    // The attacker: junk tokens with codes, as fast as it likes, from the shared address.
    let junk: Vec<u16> = (0..10)
        .map(|i| {
            w.login_from(
                shared,
                &json!({"token": format!("{i}").repeat(43), "totp": now()}),
            )
            .status
        })
        .collect();
    assert!(junk.contains(&429), "junk is not limited: {junk:?}");
    assert_eq!(
        w.login_from(shared, &json!({"token": "J".repeat(43), "totp": now()}))
            .status,
        429,
        "junk still limited"
    );
    // A guess on the live link from the spent address: limited too (and counted on the link).
    let r = w.login_from(shared, &json!({"token": link, "totp": wrong()}));
    assert_eq!(r.status, 429, "{r:?}");
    // The person: same address, live link, current code: signed in.
    let r = w.login_from(shared, &json!({"token": link, "totp": now()}));
    assert_eq!(r.status, 200, "locked out by someone else's junk: {r:?}");
    let me = Login::from_answer(&r);
    assert_eq!(w.call("GET", "/api/session", Some(&me), None).status, 200);
}

/// `/metrics` without a credential: the guard's health series, never the sign-in ones (the
/// web door's refusals by reason tell whether a tried link is live). With the operator's
/// scrape token (`<state dir>/web-metrics-token`) they are there; a wrong token, or any
/// token when none is configured, is refused. `/healthz` and `/readyz` stay open.
#[test]
fn metrics_show_sign_in_series_only_to_the_scrape_token() {
    let w = Web::start(15_000);
    let dir = w.world.guard_state.to_str().expect("utf8").to_owned();
    let (code, uri, err) = guard_cli(&["web", "totp-enroll", "--state-dir", &dir], &[]);
    assert_eq!(code, 0, "{err}");
    let totp = totp_rs::TOTP::from_url(uri.trim()).expect("uri");
    let wrong = format!(
        "{:06}",
        (totp
            .generate_current()
            .expect("code")
            .parse::<u32>()
            .expect("n")
            + 500_000)
            % 1_000_000
    );
    // The probe an attacker would make: a wrong code on a link, then read the counters.
    let link = w.new_link().rsplit_once("#t=").expect("t").1.to_owned();
    let r = w.login_from(
        std::net::Ipv4Addr::new(127, 4, 0, 1),
        &json!({"token": link, "totp": wrong}),
    );
    assert_eq!(r.status, 401, "{r:?}");
    let host = format!("Host: {}", w.host());
    let scrape = |auth: Option<&str>| {
        let mut h = vec![host.clone()];
        h.extend(auth.map(|a| format!("Authorization: {a}")));
        w.raw("GET", "/metrics", &h, None)
    };
    let open_view = scrape(None);
    assert_eq!(open_view.status, 200, "{open_view:?}");
    assert!(
        open_view.body.contains("sanctum_pending_requests"),
        "{}",
        open_view.body
    );
    for secret in ["web_refusals", "bad-totp", "bad-login", "rate-limited"] {
        assert!(
            !open_view.body.contains(secret),
            "{secret} open: {}",
            open_view.body
        );
    }
    // No token configured: presenting one is refused, not silently served less.
    assert_eq!(
        scrape(Some("Bearer anything-at-all-0123456789abcdef0123")).status,
        401
    );
    let token = "3f9c2a7e5b1d4c8f9a6e2b7d1c5f8a3e9b4d7c2a6f1e8b5d";
    let file = w.world.guard_state.join("web-metrics-token");
    support::process::write_secret(&file, &format!("{token}\n"));
    let full = scrape(Some(&format!("Bearer {token}")));
    assert_eq!(full.status, 200, "{full:?}");
    assert!(
        full.body
            .contains("sanctum_web_refusals_total{reason=\"bad-totp\"}"),
        "{}",
        full.body
    );
    assert!(
        full.body.contains("sanctum_pending_requests"),
        "{}",
        full.body
    );
    assert_eq!(full.body.matches("# EOF").count(), 1, "{}", full.body);
    assert!(full.body.trim_end().ends_with("# EOF"), "{}", full.body);
    for bad in [
        format!("Bearer {}", &token[..token.len() - 1]),
        format!("Bearer {token}x"),
        format!("Basic {token}"),
        token.to_owned(),
        "Bearer ".to_owned(),
    ] {
        let r = scrape(Some(&bad));
        assert_eq!(r.status, 401, "{bad}: {r:?}");
        assert!(!r.body.contains("web_refusals"), "{bad}");
    }
    // A token too short to be secret counts as none.
    support::process::write_secret(&file, "short\n");
    assert_eq!(scrape(Some("Bearer short")).status, 401);
    for path in ["/healthz", "/readyz"] {
        let r = w.raw("GET", path, std::slice::from_ref(&host), None);
        assert_eq!(r.status, 200, "{path}: {r:?}");
    }
}

/// A stand-in gateway: a challenge on each connection, `ok` to every request; the ids of
/// the requests it received, in order.
fn stand_in_gateway(listener: std::net::TcpListener, seen: Arc<Mutex<Vec<String>>>) {
    for s in listener.incoming().flatten() {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let Ok(mut ws) = tungstenite::accept(s) else {
                return;
            };
            let challenge =
                r#"{"type":"event","event":"connect.challenge","payload":{"nonce":"n"}}"#;
            if ws.send(tungstenite::Message::text(challenge)).is_err() {
                return;
            }
            while let Ok(m) = ws.read() {
                let Ok(v) = serde_json::from_str::<Value>(m.to_text().unwrap_or("")) else {
                    continue;
                };
                seen.lock()
                    .unwrap()
                    .push(v["id"].as_str().unwrap_or("").to_owned());
                let res =
                    json!({"type":"res","id":v["id"],"ok":true,"payload":{"method":v["method"]}});
                if ws
                    .send(tungstenite::Message::text(res.to_string()))
                    .is_err()
                {
                    return;
                }
            }
        });
    }
}

fn req(id: &str, method: &str) -> String {
    json!({"type":"req","id":id,"method":method,"params":{}}).to_string()
}

/// A client past the challenge and its `connect` (id `<tag>-connect`).
fn connected(mut c: WsClient, tag: &str) -> WsClient {
    c.send_text(&req(&format!("{tag}-connect"), "connect"));
    c.wait(Duration::from_secs(10), |v| {
        v["id"] == format!("{tag}-connect")
    });
    c
}

/// "Sign out everywhere" closes the front-door WebSocket a browser opened with its web
/// cookie, at once (1008 "signed out"), and nothing it sends afterwards reaches the
/// gateway; a door-link client, which no web session opened, keeps relaying.
#[test]
fn signing_out_everywhere_closes_door_sockets_opened_with_the_web_cookie() {
    let world = World::full(TOKEN);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream = format!("ws://{}", listener.local_addr().expect("addr"));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s2 = seen.clone();
    std::thread::spawn(move || stand_in_gateway(listener, s2));
    let token = world.tmp.path().join("gw-token");
    support::process::write_secret(&token, "stand-in-gateway-token");
    let serve = Serve::start(
        &world,
        &[],
        &[
            "--web-listen",
            "127.0.0.1:0",
            "--front-listen",
            "127.0.0.1:0",
            "--gateway-url",
            &upstream,
            "--gateway-token-file",
            token.to_str().expect("utf8"),
            "--allow-unsafe-posture",
        ],
    );
    let port = serve.listen_addr("web prompt").port();
    let front = serve.front_addr();
    let w = Web {
        world,
        serve,
        port,
        base: format!("http://127.0.0.1:{port}"),
    };
    let me = w.login();
    let origin = w.origin();
    let browser = open_with(
        &format!("ws://{front}/"),
        &[("Cookie", &me.cookie), ("Origin", &origin)],
    )
    .expect("the cookie opens the door");
    let mut browser = connected(browser, "b");
    let door = door_link(&w.world.guard_state, &front, "ide");
    let mut ide = connected(open(&door).expect("door link"), "i");
    browser.send_text(&req("b-before", "health"));
    browser.wait(Duration::from_secs(10), |v| v["id"] == "b-before");

    let r = w.call("POST", "/api/sessions/revoke", Some(&me), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    let t0 = Instant::now();
    let closed = loop {
        match browser.read() {
            Some(Err(e)) => break e,
            Some(Ok(v)) => panic!("still relaying after sign-out: {v}"),
            None if t0.elapsed() > Duration::from_secs(5) => {
                panic!("the browser's door socket is still open 5 s after sign out everywhere")
            }
            None => {}
        }
    };
    let took = t0.elapsed();
    eprintln!("closed {took:?} after the revocation: {closed}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        closed.contains("Policy") || closed.contains("1008"),
        "{closed}"
    );
    assert!(closed.contains("signed out"), "{closed}");
    let _ = browser
        .ws
        .send(tungstenite::Message::text(req("b-after", "health")));
    // The door-link client is not a web session: it goes on.
    ide.send_text(&req("i-after", "health"));
    ide.wait(Duration::from_secs(10), |v| v["id"] == "i-after");
    std::thread::sleep(Duration::from_millis(300));
    let got = seen.lock().unwrap().clone();
    assert!(got.contains(&"b-before".to_owned()), "{got:?}");
    assert!(
        !got.contains(&"b-after".to_owned()),
        "relayed after sign-out: {got:?}"
    );
    // And the cookie opens nothing any more.
    assert!(matches!(
        open_with(&format!("ws://{front}/"), &[("Cookie", &me.cookie), ("Origin", &origin)]),
        Err(tungstenite::Error::Http(r)) if r.status() == 401
    ));
}
