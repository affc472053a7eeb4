//! Fleet mode: three real `serve` processes (three guards, three agents) sharing one real
//! PostgreSQL server (`[store] url`). A decision is one conditional update: concurrent
//! deciders on different guards, exactly one wins; the guard whose agent asked answers it,
//! whichever guard's page decided.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use support::postgres::Postgres;
use support::socket::*;
use support::web::*;

/// A guard of the fleet: its own world, socket and web prompt, the shared database.
fn guard(pg: &Postgres, name: &str, request_ms: u64) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(request_ms, &store, &[], "http")
}

/// Three guards, gated requests filed on each; for every request all three guards' pages
/// decide at once (allow-once on one, deny on the others, released by one barrier).
/// Exactly one decision wins (200), the others are refused as already decided (409), the
/// asking agent gets the winner's answer from its own guard, and each guard's audit log
/// holds exactly the decisions its page won.
#[test]
fn one_winner_across_three_guards() {
    let pg = Postgres::start();
    let fleet: Vec<Web> = ["guard-a", "guard-b", "guard-c"]
        .iter()
        .map(|n| guard(&pg, n, 30_000))
        .collect();
    let logins: Vec<Login> = fleet.iter().map(Web::login).collect();
    let mut wins = [0usize; 3];
    for round in 0..6 {
        let asker = round % 3;
        let req_id = format!("fleet-{round}");
        let client = fleet[asker].ask(&req_id, &format!("touch /tmp/sg-fleet-{round}"));
        // Every guard's page lists the request, whichever guard filed it.
        let entries: Vec<_> = (0..3)
            .map(|g| fleet[g].wait_pending(&logins[g], &req_id))
            .collect();
        let id = entries[0]["id"].as_str().unwrap().to_owned();
        let hash = entries[0]["requestHash"].as_str().unwrap().to_owned();
        assert!(
            entries.iter().all(|e| e["id"] == id.as_str()),
            "{entries:?}"
        );
        let barrier = Arc::new(Barrier::new(3));
        let deciders: Vec<_> = (0..3)
            .map(|g| {
                let (client, login, id, hash) = (
                    fleet[g].client(),
                    logins[g].clone(),
                    id.clone(),
                    hash.clone(),
                );
                let barrier = barrier.clone();
                let kind = if g == (round + 1) % 3 {
                    "allow-once"
                } else {
                    "deny"
                };
                std::thread::spawn(move || {
                    barrier.wait();
                    let r = client.decide(&login, &id, json!({"decision": kind, "hash": hash}));
                    (r.status, kind, r.body)
                })
            })
            .collect();
        let results: Vec<_> = deciders.into_iter().map(|d| d.join().unwrap()).collect();
        let winners: Vec<usize> = (0..3).filter(|&g| results[g].0 == 200).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        for (g, (status, _, body)) in results.iter().enumerate() {
            if !winners.contains(&g) {
                assert_eq!(*status, 409, "round {round} guard {g}: {body}");
                assert!(body.contains("already"), "{body}");
            }
        }
        let winner = winners[0];
        wins[winner] += 1;
        // The agent hears the winning decision from its own guard.
        let reply = first_json(&client.join().unwrap());
        let want = results[winner].1;
        assert_eq!(reply["decision"], want, "round {round}: {reply}");
        // The decision is recorded by the guard whose page won, and by no other.
        let needle = format!("\"id\":\"{id}\",");
        // Every guard's page names that guard and the record's seq in its log.
        let record: serde_json::Value = serde_json::from_str(
            fleet[winner]
                .audit()
                .lines()
                .find(|l| {
                    l.contains("\"decision\"") && l.contains(&needle) && l.contains("\"state\"")
                })
                .unwrap(),
        )
        .unwrap();
        for (g, w) in fleet.iter().enumerate() {
            let r = w.call(
                "GET",
                "/api/requests?state=resolved",
                Some(&logins[g]),
                None,
            );
            let row = r.json()["requests"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == id.as_str())
                .cloned()
                .unwrap_or_else(|| panic!("{id} not on guard {g}: {}", r.body));
            let names = ["guard-a", "guard-b", "guard-c"];
            assert_eq!(row["decidedAt"]["guard"], names[winner], "{row}");
            assert_eq!(
                row["decidedAt"]["auditSeq"], record["seq"],
                "{row} vs {record}"
            );
        }
        for (g, w) in fleet.iter().enumerate() {
            let resolved = w
                .audit()
                .lines()
                .filter(|l| l.contains("\"decision\"") && l.contains(&needle))
                .filter(|l| l.contains("\"state\""))
                .count();
            assert_eq!(
                resolved,
                usize::from(g == winner),
                "guard {g} audit: {}",
                w.audit()
            );
        }
    }
    eprintln!("wins per guard: {wins:?}");
    let rows: i64 = pg
        .client()
        .query_one(
            "SELECT COUNT(*) FROM sanctum_inbox WHERE state IN ('approved','denied')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(rows, 6);
}

/// The guard whose agent asked answers it, whichever guard decided: a decision on guard B's
/// page releases the request waiting on guard A (heard through LISTEN/NOTIFY, well within
/// the poll fallback's reach). A guard that crashes and restarts neither expires its pending
/// row at start (a lone guard would: `guard-restart`) nor forgets it: the row expires at
/// its own deadline, with the fallback's `approval-timeout`.
#[test]
fn the_owner_answers_and_a_restarted_guard_keeps_deadlines() {
    let pg = Postgres::start();
    let mut a = guard(&pg, "guard-a", 6_000);
    let b = guard(&pg, "guard-b", 6_000);
    let (la, lb) = (a.login(), b.login());
    let client = a.ask("own-1", "touch /tmp/sg-fleet-own-1");
    let e = b.wait_pending(&lb, "own-1");
    let start = std::time::Instant::now();
    let r = b.decide(
        &lb,
        e["id"].as_str().unwrap(),
        json!({"decision":"allow-once","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let reply = first_json(&client.join().unwrap());
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    let heard = start.elapsed();
    assert!(heard < Duration::from_secs(2), "released after {heard:?}");
    eprintln!("decision on B reached A's agent in {heard:?}");

    // A crash (no goodbye) with a request pending on A.
    let pending = a.ask("own-2", "touch /tmp/sg-fleet-own-2");
    let e = a.wait_pending(&la, "own-2");
    let id = e["id"].as_str().unwrap().to_owned();
    let deadline = e["deadlineMs"].as_u64().unwrap();
    a.serve.child.kill9();
    let _ = pending.join();
    let cfg = a.world.tmp.path().join("guard.toml");
    let listen = format!("127.0.0.1:{}", a.port);
    a.serve = support::guard::Serve::start(
        &a.world,
        &[],
        &["--config", cfg.to_str().unwrap(), "--web-listen", &listen],
    );
    let row = |pg: &Postgres| -> (String, Option<i64>, Option<String>) {
        let r = pg
            .client()
            .query_one(
                "SELECT state, resolved_ms, decision_json FROM sanctum_inbox WHERE id = $1",
                &[&id],
            )
            .unwrap();
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!(row(&pg).0, "pending", "restart must not expire a fleet row");
    support::process::wait_until("the deadline expiry", Duration::from_secs(15), || {
        (row(&pg).0 != "pending").then_some(())
    });
    let (state, resolved, decision) = row(&pg);
    assert_eq!(state, "expired");
    assert!(decision.unwrap().contains("approval-timeout"));
    let resolved = resolved.unwrap() as u64;
    assert!(
        resolved >= deadline && resolved < deadline + 2_000,
        "expired at {resolved}, deadline {deadline}"
    );
}

/// `sanctum-guard inbox` on the command line of a fleet guard acts on the shared store: it
/// lists the request guard A's agent filed, its approve (on guard B's terminal) is the same
/// conditional update as a page's and releases the agent waiting on A, the decision is in
/// B's audit log (the record a page's decision writes) and not in A's, and a second approve
/// from A's terminal is refused as already decided (exit 1), changing nothing.
#[test]
fn the_command_line_decides_on_the_shared_store() {
    let pg = Postgres::start();
    let a = guard(&pg, "guard-a", 30_000);
    let b = guard(&pg, "guard-b", 30_000);
    let cli = |w: &Web, args: &[&str]| {
        let cfg = w.world.tmp.path().join("guard.toml");
        let mut all = vec!["inbox"];
        all.extend_from_slice(args);
        all.extend([
            "--config",
            cfg.to_str().unwrap(),
            "--state-dir",
            w.world.guard_state.to_str().unwrap(),
        ]);
        support::process::guard_cli(&all, &[])
    };
    let client = a.ask("cli-1", "touch /tmp/sg-fleet-cli-1");
    // B's terminal lists the fleet's pending requests, A's among them.
    let entry =
        support::process::wait_until("A's request on B's CLI", Duration::from_secs(20), || {
            let (code, out, err) = cli(&b, &["list", "--json"]);
            assert_eq!(code, 0, "{err}");
            let list: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
            list.into_iter().find(|e| e["request"]["id"] == "cli-1")
        });
    let id = entry["id"].as_str().unwrap().to_owned();
    let hash = entry["request_hash"].as_str().unwrap().to_owned();
    let (code, out, err) = cli(&b, &["approve", &id, "--hash", &hash]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("approved"), "{out}");
    let reply = first_json(&client.join().unwrap());
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    let needle = format!("\"id\":\"{id}\",");
    let decided = |w: &Web| {
        w.audit()
            .lines()
            .filter(|l| {
                l.contains("\"decision\"") && l.contains(&needle) && l.contains("\"state\"")
            })
            .count()
    };
    assert_eq!(decided(&b), 1, "B's audit: {}", b.audit());
    assert_eq!(decided(&a), 0, "A's audit: {}", a.audit());
    // The loser: A's terminal, too late.
    let (code, out, err) = cli(&a, &["approve", &id, "--hash", &hash]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("already approved"), "{err}");
    assert_eq!(decided(&a), 0, "A's audit: {}", a.audit());
    let state: String = pg
        .client()
        .query_one("SELECT state FROM sanctum_inbox WHERE id = $1", &[&id])
        .unwrap()
        .get(0);
    assert_eq!(state, "approved");
}
