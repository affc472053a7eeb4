//! Web prompt latency: from a socket client sending a gated `request` frame to its `added`
//! event arriving on an SSE connection of a signed-in client (what makes the card appear),
//! p50/p99 over 200 requests against the real `serve`. Target: p99 <= 100 ms.
//! Each request is then denied through the API so the inbox stays small.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::web::Web;

const N: usize = 200;

/// Reads SSE events until one `added` event names `req_id`.
fn wait_added(s: &mut TcpStream, buf: &mut String, req_id: &str) -> serde_json::Value {
    let needle = format!("\"requestId\":\"{req_id}\"");
    loop {
        while let Some(end) = buf.find("\n\n") {
            let ev: String = buf.drain(..end + 2).collect();
            if ev.contains("event: added") && ev.contains(&needle) {
                let data = ev
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("data line");
                return serde_json::from_str(data).expect("event json");
            }
        }
        let mut chunk = [0u8; 16384];
        let n = s.read(&mut chunk).expect("sse read");
        assert!(n > 0, "event stream closed");
        buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
}

fn main() {
    if let Err(why) = support::tools::cache_ready() {
        println!("web_latency: skipped: {why}");
        return;
    }
    let w = Web::start(15_000);
    let me = w.login();
    let mut sse = TcpStream::connect(("127.0.0.1", w.port)).expect("connect");
    sse.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let req = format!(
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
        w.host(),
        me.cookie
    );
    sse.write_all(req.as_bytes()).expect("write");
    let mut buf = String::new();
    // Warm up once (first SQLite writes, first page of the audit log).
    let mut lat = Vec::with_capacity(N);
    for i in 0..=N {
        let id = format!("bench-{i}");
        let t0 = Instant::now();
        let asker = w.ask(&id, &format!("touch /tmp/sg-web-bench-{i}"));
        let ev = wait_added(&mut sse, &mut buf, &id);
        let dt = t0.elapsed();
        if i > 0 {
            lat.push(dt);
        }
        let r = w.decide(
            &me,
            ev["id"].as_str().expect("id"),
            serde_json::json!({"decision":"deny","hash":ev["requestHash"]}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        asker.join().expect("asker");
    }
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p).ceil() as usize).saturating_sub(1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "web_latency: socket request -> SSE `added`, n={}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 <= 100 ms)",
        lat.len(),
        ms(pct(0.50)),
        ms(pct(0.90)),
        ms(pct(0.99)),
        ms(lat[lat.len() - 1])
    );
}
