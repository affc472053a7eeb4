//! The web prompt at 10,000 pending requests: the real inbox (SQLite) and the real web server
//! in this process, 10,000 gated requests submitted, then p50/p99 of what a reviewer's page
//! does: the pending list (first page and a 5,000 page), a decision, History and `/readyz`.
//! Target (issue): list, decide and History under 100 ms p99 on the server.
// Bench code: a panic is the failure report, and benches may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::inbox::{Inbox, DB_FILE};
use sanctum_guard::web::{auth::Sessions, login, WebSettings};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::inbox::{ask_verdict, exec_request, now_ms, ALL};
use support::process::free_port;

const PENDING: usize = 10_000;

/// One HTTP/1.1 exchange (Connection: close): status and body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
) -> (u16, String) {
    let (status, _, body) = exchange(port, method, path, headers, body);
    (status, body)
}

/// One HTTP/1.1 exchange (Connection: close): status, header block and body.
fn exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body.unwrap_or(""));
    s.write_all(req.as_bytes()).expect("write");
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("read");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_owned(), body.to_owned())
}

/// p50 and p99 (ms) of `n` runs of `f`.
fn measure(n: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    let mut ms: Vec<f64> = (0..n)
        .map(|i| {
            let t0 = Instant::now();
            f(i);
            t0.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
    (at(0.50), at(0.99))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("guard");
    std::fs::create_dir_all(&state).expect("state");
    let (inbox, _) = Inbox::open(&state.join(DB_FILE), None).expect("inbox");
    let verdict = ask_verdict(ALL);
    let deadline = now_ms() + 3_600_000;
    let t0 = Instant::now();
    let tickets = rt.block_on(async {
        let mut t = Vec::with_capacity(PENDING);
        for i in 0..PENDING {
            let req = exec_request(&format!("touch /tmp/scale-{i}"));
            t.push(
                inbox
                    .submit(&req, &verdict, deadline)
                    .await
                    .expect("submit"),
            );
        }
        t
    });
    let submit = t0.elapsed();

    let port = free_port();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let settings = WebSettings {
        listen: Some(format!("127.0.0.1:{port}").parse().expect("addr")),
        explicit: true,
        cert: None,
        key: None,
        public_origin: None,
        public_url: None,
        suggest: Default::default(),
    };
    rt.block_on(sanctum_guard::web::start(
        &settings,
        inbox.clone(),
        &state,
        state.join("audit.jsonl"),
        state.join("no-socket"),
        rx,
        None,
        Arc::new(Sessions::default()),
        None,
        Arc::default(),
    ))
    .expect("web");
    // Sign in with the link serve wrote: the cookie from the answer's header, the CSRF token
    // from its body.
    let link = std::fs::read_to_string(state.join(login::LINK_FILE)).expect("link");
    let token = link.trim().rsplit_once("#t=").expect("token").1.to_owned();
    let origin = format!("Origin: http://127.0.0.1:{port}");
    let body = json!({ "token": token }).to_string();
    let (status, head, answer) = exchange(
        port,
        "POST",
        "/api/login",
        std::slice::from_ref(&origin),
        Some(&body),
    );
    assert_eq!(status, 200, "{answer}");
    let set = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("set-cookie")
                .then(|| v.trim().to_owned())
        })
        .expect("set-cookie");
    let v: Value = serde_json::from_str(&answer).expect("login json");
    let auth = vec![
        format!("Cookie: {}", set.split(';').next().expect("cookie")),
        format!("X-CSRF-Token: {}", v["csrf"].as_str().expect("csrf")),
    ];

    let list = measure(50, |_| {
        let (s, b) = http(port, "GET", "/api/requests?state=pending", &auth, None);
        assert_eq!(s, 200, "{b}");
    });
    let big = measure(10, |_| {
        let (s, _) = http(
            port,
            "GET",
            "/api/requests?state=pending&limit=5000",
            &auth,
            None,
        );
        assert_eq!(s, 200);
    });
    let (_, first) = http(
        port,
        "GET",
        "/api/requests?state=pending&limit=100",
        &auth,
        None,
    );
    let first: Value = serde_json::from_str(&first).expect("list");
    let ids: Vec<(String, String)> = first["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|e| {
            (
                e["id"].as_str().expect("id").to_owned(),
                e["requestHash"].as_str().expect("h").to_owned(),
            )
        })
        .collect();
    let mut with_origin = auth.clone();
    with_origin.push(origin.clone());
    let decide = measure(50, |i| {
        let (id, hash) = &ids[i];
        let body = json!({"decision":"deny","hash":hash}).to_string();
        let (s, b) = http(
            port,
            "POST",
            &format!("/api/requests/{id}/decision"),
            &with_origin,
            Some(&body),
        );
        assert_eq!(s, 200, "{b}");
    });
    let history = measure(20, |_| {
        let (s, _) = http(
            port,
            "GET",
            "/api/requests?state=resolved&limit=1000",
            &auth,
            None,
        );
        assert_eq!(s, 200);
    });
    let ready = measure(50, |_| {
        // 503 here (no socket is bound in this bench): the time of the answer is the figure.
        let (s, _) = http(port, "GET", "/readyz", &[], None);
        assert!(s == 200 || s == 503, "{s}");
    });
    println!(
        "inbox_scale: {PENDING} pending (submitted in {:.1} s)",
        submit.as_secs_f64()
    );
    for (name, (p50, p99)) in [
        ("list (first 500)", list),
        ("list (5000)", big),
        ("decide", decide),
        ("history (1000)", history),
        ("readyz", ready),
    ] {
        println!("  {name:<18} p50 {p50:>7.1} ms   p99 {p99:>7.1} ms");
    }
    drop(tickets);
}
