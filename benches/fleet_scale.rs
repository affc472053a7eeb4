//! Fleet mode on one real PostgreSQL server with three real `serve` processes: decisions per
//! second when reviewers on all three guards decide at once (each its own rows, over the web
//! API), and request -> card latency on another guard's page (a gated `request` on guard A
//! until its `added` event reaches an SSE client signed in on guard B), p50/p99, with 1,000
//! and 10,000 requests pending in the shared table.
// Bench code: a panic is the failure report, and benches may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::time::{Duration, Instant};
use support::postgres::Postgres;
use support::web::{Events, Login, Web};

/// Request -> card samples per pending level.
const N: usize = 100;
/// Decisions per guard in the throughput round.
const DECISIONS: usize = 300;

fn guard(pg: &Postgres, name: &str) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(600_000, &store, &[], "http")
}

/// The `added` event of request `req_id` on the page's stream.
fn wait_added(s: &mut Events, req_id: &str) -> serde_json::Value {
    s.next(
        "added",
        &format!("\"requestId\":\"{req_id}\""),
        Duration::from_secs(10),
    )
}
/// Tops the shared table up to `n` pending rows of a guard that is not running (copies of
/// `model`'s row): the load every query and poll of the fleet sees.
fn fill(pg: &Postgres, model: &str, n: i64) {
    let mut db = pg.client();
    let have: i64 = db
        .query_one(
            "SELECT COUNT(*) FROM sanctum_inbox WHERE state = 'pending'",
            &[],
        )
        .unwrap()
        .get(0);
    db.execute(
        "INSERT INTO sanctum_inbox (id, guard_id, agent_id, request_json, verdict_json,
             request_hash, created_ms, deadline_ms, state)
         SELECT gen_random_uuid()::text, 'filler', agent_id, request_json, verdict_json,
             request_hash, created_ms, deadline_ms, 'pending'
         FROM sanctum_inbox, generate_series(1, $2::bigint) WHERE id = $1",
        &[&model, &(n - have).max(0)],
    )
    .unwrap();
}

fn pct(lat: &mut [Duration], p: f64) -> f64 {
    lat.sort();
    lat[((lat.len() as f64 * p).ceil() as usize).saturating_sub(1)].as_secs_f64() * 1000.0
}

fn main() {
    if let Err(why) = support::tools::cache_ready() {
        println!("fleet_scale: skipped: {why}");
        return;
    }
    let pg = Postgres::start();
    let fleet: Vec<Web> = ["guard-a", "guard-b", "guard-c"]
        .iter()
        .map(|n| guard(&pg, n))
        .collect();
    let logins: Vec<Login> = fleet.iter().map(Web::login).collect();
    let (a, b) = (&fleet[0], &fleet[1]);
    let mut sse = b.event_stream(&logins[1]);
    // One real request: the model of the filler rows.
    let first = a.ask("model", "touch /tmp/sg-fleet-bench-model");
    let model = wait_added(&mut sse, "model");
    let model_id = model["id"].as_str().unwrap().to_owned();

    // Decisions per second: each guard's reviewer decides its own share of filler rows.
    fill(&pg, &model_id, 3 * DECISIONS as i64 + 1);
    let ids: Vec<String> = pg
        .client()
        .query(
            "SELECT id FROM sanctum_inbox WHERE guard_id = 'filler' LIMIT $1",
            &[&(3 * DECISIONS as i64)],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let hash = model["requestHash"].clone();
    let t0 = Instant::now();
    let workers: Vec<_> = (0..3)
        .map(|g| {
            let (client, login) = (fleet[g].client(), logins[g].clone());
            let mine: Vec<String> = ids.iter().skip(g).step_by(3).cloned().collect();
            let hash = hash.clone();
            std::thread::spawn(move || {
                for id in mine {
                    let r = client.decide(
                        &login,
                        &id,
                        serde_json::json!({"decision":"deny","hash":hash}),
                    );
                    assert_eq!(r.status, 200, "{r:?}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let dt = t0.elapsed();
    println!(
        "fleet_scale: {} decisions across 3 guards on one PostgreSQL in {:.2} s: {:.0} decisions/s",
        ids.len(),
        dt.as_secs_f64(),
        ids.len() as f64 / dt.as_secs_f64()
    );

    for pending in [1_000i64, 10_000] {
        fill(&pg, &model_id, pending);
        let mut lat = Vec::with_capacity(N);
        for i in 0..=N {
            let id = format!("bench-{pending}-{i}");
            let t0 = Instant::now();
            let asker = a.ask(&id, &format!("touch /tmp/sg-fleet-bench-{i}"));
            let ev = wait_added(&mut sse, &id);
            if i > 0 {
                lat.push(t0.elapsed());
            }
            let r = b.decide(
                &logins[1],
                ev["id"].as_str().unwrap(),
                serde_json::json!({"decision":"deny","hash":ev["requestHash"]}),
            );
            assert_eq!(r.status, 200, "{r:?}");
            asker.join().unwrap();
        }
        println!(
            "fleet_scale: request on guard A -> card event on guard B's page, {pending} pending, n={N}: p50 {:.2} ms, p99 {:.2} ms",
            pct(&mut lat, 0.50),
            pct(&mut lat, 0.99)
        );
    }
    let r = a.decide(
        &logins[0],
        &model_id,
        serde_json::json!({"decision":"deny","hash":hash}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    first.join().unwrap();
}
