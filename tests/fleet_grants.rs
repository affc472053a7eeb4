//! Grants in fleet mode: real `serve` processes sharing one real PostgreSQL server. A grant
//! made on guard B's page while deciding guard A's request covers A's next request of that
//! shape (answered at once, no card), never B's own agent's (both agents are `main`: the
//! grant binds the guard whose agent asked); a revoke on any guard ends it everywhere; a
//! database that goes away makes grants cover nothing. A grant's last use is spent by
//! exactly one of several connections racing for it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::grants::{GrantBackend, PgGrants};
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::postgres::Postgres;
use support::socket::*;
use support::web::*;

fn guard(pg: &Postgres, name: &str) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(20_000, &store, &[], "http")
}

/// The decision of a request its guard answers by itself (no person: at once).
fn answered_at_once(w: &Web, id: &str, command: &str) -> Value {
    let t = Instant::now();
    let reply = first_json(&w.ask(id, command).join().unwrap());
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "{id}: {command} waited {:?} (asked a person?): {reply}",
        t.elapsed()
    );
    reply
}

/// Asserts `command` waits for a person on `w`, then denies it from `w`'s page.
fn asked(w: &Web, login: &Login, id: &str, command: &str) {
    let h = w.ask(id, command);
    let e = w.wait_pending(login, id);
    let r = w.decide(
        login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&h.join().unwrap())["decision"], "deny");
}

#[test]
fn a_grant_made_on_another_guard_covers_the_asking_guard_only_and_revokes_everywhere() {
    let pg = Postgres::start();
    let a = guard(&pg, "guard-a");
    let b = guard(&pg, "guard-b");
    let (la, lb) = (a.login(), b.login());

    // A's agent asks; B's page approves it with a 5-use grant.
    let h = a.ask("fg-1", "make test");
    let e = b.wait_pending(&lb, "fg-1");
    let r = b.decide(
        &lb,
        e["id"].as_str().unwrap(),
        json!({"decision":"allow-once","hash":e["requestHash"],"grant":{"scope":"uses","n":5}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let g = r.json()["grant"].clone();
    let gid = g["id"].as_str().expect("grant stored").to_owned();
    assert_eq!(g["guard"], "guard-a", "bound to the asking guard: {g}");
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-once");

    // A's next request of that shape: no card, the grant named in A's audit log.
    let reply = answered_at_once(&a, "fg-2", "make test");
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    let spent = format!("\"grants\":[\"{gid}\"]");
    assert!(
        a.audit().lines().any(|l| l.contains(&spent)),
        "A records the use"
    );
    // B's own agent (also `main`, same command, same cwd) is asked: not its grant.
    asked(&b, &lb, "fg-b1", "make test");
    assert!(!b.audit().lines().any(|l| l.contains(&spent)));

    // Every guard's Grants page lists it.
    for (w, l) in [(&a, &la), (&b, &lb)] {
        let list = w.call("GET", "/api/grants", Some(l), None).json();
        let ids: Vec<&str> = list["grants"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|g| g["id"].as_str())
            .collect();
        assert_eq!(ids, [gid.as_str()], "{list}");
    }

    // The command line of either guard lists the fleet's grants.
    let cfg = a.world.tmp.path().join("guard.toml");
    let st = a.world.guard_state.to_str().unwrap().to_owned();
    let (code, out, err) = support::process::guard_cli(
        &["grants", "list", "--json", "--state-dir", &st],
        &[("SANCTUM_CONFIG", cfg.to_str().unwrap())],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&gid),
        "A's command line lists B's grant: {out}"
    );

    // Revoked on B: A's next one is asked again.
    let r = b.call(
        "POST",
        &format!("/api/grants/{gid}/revoke"),
        Some(&lb),
        Some("{}"),
    );
    assert_eq!(r.status, 200, "{r:?}");
    asked(&a, &la, "fg-3", "make test");
    let r = a.call(
        "POST",
        &format!("/api/grants/{gid}/revoke"),
        Some(&la),
        Some("{}"),
    );
    assert_eq!(r.status, 409, "revoked once, on any guard: {r:?}");

    // A fresh grant, then the database goes: the grant covers nothing (denied
    // store-unavailable at once, never allowed); back, it covers again.
    let h = a.ask("fg-4", "make check");
    let e = a.wait_pending(&la, "fg-4");
    let r = a.decide(
        &la,
        e["id"].as_str().unwrap(),
        json!({"decision":"allow-once","hash":e["requestHash"],"grant":{"scope":"uses","n":5}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-once");
    pg.stop();
    let reply = answered_at_once(&a, "fg-5", "make check");
    assert_eq!(reply["decision"], "deny", "{reply}");
    assert!(
        a.audit().contains("store-unavailable"),
        "the reason is recorded"
    );
    pg.start_again();
    support::process::wait_until("grants back", Duration::from_secs(20), || {
        let reply = first_json(&a.ask("fg-6", "make check").join().unwrap());
        (reply["decision"] == "allow-once").then_some(())
    });
}

/// Eight connections (eight guards' worth of spenders) race for the last use of a grant:
/// exactly one spends it; the grant is then used up for every one of them.
#[test]
fn the_last_use_of_a_grant_goes_to_exactly_one_spender() {
    let pg = Postgres::start();
    let url = pg.url();
    let cfg = || sanctum_guard::inbox::pg::parse_url(&url).unwrap();
    let spec: sanctum_guard::grants::GrantSpec = serde_json::from_value(json!({
        "scope": "uses", "agent_id": "main", "session_key": null, "expires_ms": null,
        "uses": 1, "cwd": "/usr", "workspace": null, "env": [], "shapes": [],
        "profile": null, "category": "write"
    }))
    .unwrap();
    for round in 0..5 {
        let maker = PgGrants::open(cfg(), "guard-a").unwrap();
        let now = sanctum_guard::inbox::now_ms();
        let g = maker
            .insert(&spec, "test", "e1", "r1", Some("guard-a"), now)
            .unwrap();
        let spenders: Vec<PgGrants> = (0..8)
            .map(|_| PgGrants::open(cfg(), "guard-a").unwrap())
            .collect();
        // Connected before the race: the race is the UPDATE, not the connect.
        for s in &spenders {
            assert!(s.get(&g.id).unwrap().is_some());
        }
        let barrier = Arc::new(Barrier::new(spenders.len()));
        let wins: usize = spenders
            .into_iter()
            .map(|s| {
                let (id, barrier) = (g.id.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    s.spend(&[id], sanctum_guard::inbox::now_ms()).unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum();
        assert_eq!(wins, 1, "round {round}");
        assert!(maker
            .spendable(sanctum_guard::inbox::now_ms())
            .unwrap()
            .is_empty());
        // Another guard never spends it, live or not.
        let b = PgGrants::open(cfg(), "guard-b").unwrap();
        let g2 = maker
            .insert(&spec, "test", "e2", "r2", Some("guard-a"), now)
            .unwrap();
        assert!(!b
            .spend(std::slice::from_ref(&g2.id), sanctum_guard::inbox::now_ms())
            .unwrap());
        assert!(maker
            .spend(&[g2.id], sanctum_guard::inbox::now_ms())
            .unwrap());
    }
}
