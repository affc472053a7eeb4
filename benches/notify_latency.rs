//! Push latency: from a socket client sending a gated `request` frame to its notification
//! arriving at local servers that speak ntfy's, Telegram's and the webhook's APIs
//! (tests/support/channels.rs), all three channels on one real `serve`. Measured with the
//! batching window at 0 (every request goes out at once) and at the default 3 s with the
//! requests a window apart (each the first of its burst, which also leaves at once: the
//! window only holds what follows a message). Target p99 <= 1 s for both. Each request is
//! denied through the API afterwards so the inbox stays small.
//! Knobs: `SANCTUM_BENCH_NOTIFY_N` (requests at window 0, default 100), `…_BATCHED_N` (5).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::time::{Duration, Instant};
use support::channels::*;

/// The request's first message at `server` (not an edit or an outcome).
fn arrival(server: &ChannelServer, marker: &str) -> Option<Instant> {
    server
        .hits()
        .into_iter()
        .find(|h| {
            !h.path.ends_with("/editMessageText")
                && h.body["event"] != "resolved"
                && String::from_utf8_lossy(&h.raw).contains(marker)
        })
        .map(|h| h.at)
}

fn run(batch_ms: u64, n: usize) {
    let ntfy = ChannelServer::start(Api::Ntfy { token: None }, 0);
    let tg = ChannelServer::start(
        Api::Telegram {
            token: "1:bench".into(),
            chat: "7".into(),
        },
        0,
    );
    let hook = ChannelServer::start(
        Api::Webhook {
            key: "bench-key-0123456789".into(),
        },
        0,
    );
    let (_t, tg_token) = secret("1:bench");
    let (_k, hook_key) = secret("bench-key-0123456789");
    let w = serve_with(
        30_000,
        &format!(
            "[notify]\nbatch_ms = {batch_ms}\n\
             [[notify.channel]]\nkind = \"ntfy\"\nurl = \"{}\"\ntopic = \"bench\"\n\
             [[notify.channel]]\nkind = \"telegram\"\nurl = \"{}\"\nchat_id = \"7\"\ntoken_file = \"{tg_token}\"\n\
             [[notify.channel]]\nkind = \"webhook\"\nurl = \"{}\"\nsecret_file = \"{hook_key}\"\n",
            ntfy.url, tg.url, hook.url
        ),
    );
    let me = w.login();
    let servers = [("ntfy", &ntfy), ("telegram", &tg), ("webhook", &hook)];
    let mut lat: Vec<Vec<Duration>> = vec![Vec::new(); servers.len()];
    for i in 0..=n {
        let req = format!("bench-{i}");
        let marker = format!("sg-notify-bench-{batch_ms}-{i}");
        if batch_ms > 0 {
            std::thread::sleep(Duration::from_millis(batch_ms + 100));
        }
        let t0 = Instant::now();
        let asker = w.ask(&req, &format!("touch /tmp/{marker}"));
        for (k, (name, s)) in servers.iter().enumerate() {
            let at = support::process::wait_until(name, Duration::from_secs(15), || {
                let a = arrival(s, &marker);
                if a.is_none() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                a
            });
            // The first request warms the connections up.
            if i > 0 {
                lat[k].push(at.saturating_duration_since(t0));
            }
        }
        let e = w.wait_pending(&me, &req);
        let r = w.decide(
            &me,
            e["id"].as_str().unwrap(),
            serde_json::json!({"decision": "deny", "hash": e["requestHash"]}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        asker.join().expect("asker");
    }
    for (k, (name, _)) in servers.iter().enumerate() {
        let l = &mut lat[k];
        l.sort();
        let pct = |p: f64| l[((l.len() as f64 * p).ceil() as usize).saturating_sub(1)];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "notify_latency: batch_ms={batch_ms} {name}: request -> message, n={}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 <= 1000 ms{})",
            l.len(),
            ms(pct(0.50)),
            ms(pct(0.99)),
            ms(l[l.len() - 1]),
            if batch_ms > 0 { ", each request a window after the last" } else { "" }
        );
    }
}

fn main() {
    if let Err(why) = support::tools::cache_ready() {
        println!("notify_latency: skipped: {why}");
        return;
    }
    run(0, support::bench::knob("SANCTUM_BENCH_NOTIFY_N", 100));
    run(
        3000,
        support::bench::knob("SANCTUM_BENCH_NOTIFY_BATCHED_N", 5),
    );
}
