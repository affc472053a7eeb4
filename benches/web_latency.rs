//! Web prompt latency: from a socket client sending a gated `request` frame to its `added`
//! event arriving on an SSE connection of a signed-in client (what makes the card appear),
//! p50/p99 over 200 requests against the real `serve`. Target: p99 <= 100 ms.
//! Each request is then denied through the API so the inbox stays small.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::time::{Duration, Instant};
use support::web::{Events, Web};

const N: usize = 200;

/// The `added` event of request `req_id` on the page's stream.
fn wait_added(s: &mut Events, req_id: &str) -> serde_json::Value {
    s.next(
        "added",
        &format!("\"requestId\":\"{req_id}\""),
        Duration::from_secs(10),
    )
}
fn main() {
    if let Err(why) = support::tools::cache_ready() {
        println!("web_latency: skipped: {why}");
        return;
    }
    let w = Web::start(15_000);
    let me = w.login();
    let mut sse = w.event_stream(&me);
    // Warm up once (first SQLite writes, first page of the audit log).
    let mut lat = Vec::with_capacity(N);
    for i in 0..=N {
        let id = format!("bench-{i}");
        let t0 = Instant::now();
        let asker = w.ask(&id, &format!("touch /tmp/sg-web-bench-{i}"));
        let ev = wait_added(&mut sse, &id);
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
