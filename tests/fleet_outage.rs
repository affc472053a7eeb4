//! Fleet mode when the shared database goes away under load: two real `serve` processes on
//! one real PostgreSQL server, agents asking on guard A, a reviewer deciding on guard B's
//! page, and the server stopped and started again in the middle. Every guard fails closed
//! (new requests denied `store-unavailable`, seen by the agent and in the audit log; /readyz
//! not ready; the page says why) and recovers by itself: no run without a recorded
//! approval, no decision that does not reach its agent.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::postgres::Postgres;
use support::process::wait_until;
use support::socket::*;
use support::web::*;

fn guard(pg: &Postgres, name: &str) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(20_000, &store, &[], "http")
}

fn ready(w: &Web) -> (u16, Value) {
    let r = w.call("GET", "/readyz", None, None);
    (r.status, r.json())
}

#[test]
fn database_loss_fails_closed_and_recovers_under_load() {
    let pg = Postgres::start();
    let a = Arc::new(guard(&pg, "guard-a"));
    let b = Arc::new(guard(&pg, "guard-b"));
    let lb = b.login();
    let stop = Arc::new(AtomicBool::new(false));
    // The agents: three askers on guard A, one request at a time each.
    let replies: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let askers: Vec<_> = (0..3)
        .map(|t| {
            let (a, stop, replies) = (a.clone(), stop.clone(), replies.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let id = format!("load-{t}-{i}");
                    let reply = a.ask(&id, &format!("touch /tmp/sg-fleet-{t}-{i}")).join();
                    replies.lock().unwrap().push((id, reply.unwrap()));
                    i += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    // The reviewer on guard B: allow-once and deny in turn, retried until the page answers.
    let decided: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let refused = Arc::new(Mutex::new(0usize));
    let reviewer = {
        let (b, stop, decided, refused, lb) = (
            b.clone(),
            stop.clone(),
            decided.clone(),
            refused.clone(),
            lb.clone(),
        );
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(Ordering::SeqCst) {
                let r = b.call("GET", "/api/requests?state=pending", Some(&lb), None);
                if r.status != 200 {
                    assert_eq!(r.status, 503, "{r:?}");
                    assert!(r.body.contains("store-unavailable"), "{}", r.body);
                    *refused.lock().unwrap() += 1;
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                for e in r.json()["requests"].as_array().cloned().unwrap_or_default() {
                    let kind = if n % 2 == 0 { "allow-once" } else { "deny" };
                    let body = json!({"decision": kind, "hash": e["requestHash"]});
                    let d = b.decide(&lb, e["id"].as_str().unwrap(), body);
                    match d.status {
                        200 => {
                            n += 1;
                            let req = e["requestId"].as_str().unwrap().to_owned();
                            decided.lock().unwrap().insert(req, kind.to_owned());
                        }
                        409 | 503 => {}
                        s => panic!("decision {s}: {}", d.body),
                    }
                }
                std::thread::sleep(Duration::from_millis(30));
            }
        })
    };
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(ready(&a).0, 200);

    pg.stop();
    let down = Instant::now();
    // The agent is denied (the socket's frame carries no reason: the audit log says why);
    // readiness drops.
    let reply = a
        .ask("during-outage", "touch /tmp/sg-fleet-outage")
        .join()
        .unwrap();
    let v = first_json(&reply);
    assert_eq!(v["decision"], "deny", "{reply}");
    let audit = support::guard::audit_file_with(&a.world.audit_path(), &["store-unavailable"]);
    assert!(
        audit
            .lines()
            .any(|l| l.contains("during-outage") && l.contains("\"reason\":\"store-unavailable\"")),
        "{audit}"
    );
    let (status, body) = ready(&a);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["inbox"], false, "{body}");
    std::thread::sleep(Duration::from_secs(2).saturating_sub(down.elapsed()));

    pg.start_again();
    let back = Instant::now();
    wait_until("guard A ready again", Duration::from_secs(20), || {
        (ready(&a).0 == 200).then_some(())
    });
    eprintln!(
        "guard A ready {:?} after the database returned",
        back.elapsed()
    );
    // Requests flow again for a while after recovery.
    std::thread::sleep(Duration::from_secs(4));
    stop.store(true, Ordering::SeqCst);
    for t in askers {
        t.join().unwrap();
    }
    reviewer.join().unwrap();

    let replies = replies.lock().unwrap().clone();
    let decided = decided.lock().unwrap().clone();
    let mut db = pg.client();
    let mut unavailable = 0;
    let mut allowed = 0;
    for (req, reply) in &replies {
        let v = first_json(reply);
        let rows = db
            .query(
                "SELECT state FROM sanctum_inbox WHERE request_json::jsonb->>'id' = $1",
                &[req],
            )
            .unwrap();
        let state: Option<String> = rows.first().map(|r| r.get(0));
        if v["decision"] == "allow-once" {
            allowed += 1;
            // No unapproved run: every allow has its approved row.
            assert_eq!(state.as_deref(), Some("approved"), "{req}: {reply}");
        }
        if state.is_none() {
            // Never filed: denied at the door while the database was away.
            assert_eq!(v["decision"], "deny", "{req}: {reply}");
            unavailable += 1;
        }
        // No lost decision: what the reviewer decided is what the agent heard.
        if let Some(kind) = decided.get(req) {
            assert_eq!(v["decision"], kind.as_str(), "{req}: {reply}");
        }
    }
    // Every decision the page confirmed reached an agent.
    for req in decided.keys() {
        assert!(
            replies.iter().any(|(r, _)| r == req),
            "{req} never answered"
        );
    }
    eprintln!(
        "{} replies, {allowed} allowed, {unavailable} store-unavailable, {} decided on B, {} page refusals",
        replies.len(),
        decided.len(),
        refused.lock().unwrap()
    );
    assert!(allowed > 0 && decided.len() >= 4, "{replies:?}");
}
