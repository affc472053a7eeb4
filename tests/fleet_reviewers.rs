//! Reviewer accounts and two-person approval in fleet mode: real `serve` processes sharing
//! one real PostgreSQL server, each requiring two approvers for `write`. An account added
//! once (`reviewers add` with the fleet's config) signs in on every guard; two reviewers,
//! each on a different guard's page, complete one request; the reviewer linked to the
//! requesting agent is refused there too; a deny by either ends it; and of two completing
//! votes cast at once on two guards, exactly one decides.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use support::postgres::Postgres;
use support::reviewers::token;
use support::socket::first_json;
use support::web::{Login, Web};

fn guard(pg: &Postgres, name: &str, policy: &std::path::Path) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(
        120_000,
        &store,
        &["--policy", policy.to_str().unwrap()],
        "http",
    )
}

/// The command line on `w`'s state dir, with `w`'s config (so it finds the fleet).
fn cli(w: &Web, args: &[&str]) -> (i32, String, String) {
    w.cli_configured(args)
}

/// Adds `name` through guard `on`'s command line; returns nothing (the link is `on`'s).
fn add(on: &Web, name: &str, role: &str, identities: &[&str]) {
    let mut args = vec!["reviewers", "add", name, "--role", role];
    for i in identities {
        args.extend(["--identity", i]);
    }
    let (code, out, err) = cli(on, &args);
    assert_eq!(code, 0, "add {name}: {out}{err}");
}

/// Signs `name` in on `w` with a link `w`'s own command line issues.
fn sign_in(w: &Web, name: &str) -> Login {
    let (code, out, err) = cli(w, &["web", "login-link", "--name", name]);
    assert_eq!(code, 0, "login-link {name}: {out}{err}");
    Login::from_answer(&w.login_with(&token(out.trim())))
}

fn vote(w: &Web, who: &Login, e: &Value, kind: &str) -> support::web::Resp {
    w.decide(
        who,
        e["id"].as_str().unwrap(),
        json!({"decision": kind, "hash": e["requestHash"]}),
    )
}

#[test]
fn two_reviewers_on_two_guards_complete_one_request() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[approvals]\napprovals_required = { \"write\" = 2 }\n",
    )
    .unwrap();
    let a = guard(&pg, "guard-a", &policy);
    let b = guard(&pg, "guard-b", &policy);

    // Accounts are added once, on A; they exist on B.
    add(&a, "alice", "approver", &[]);
    add(&a, "bob", "approver", &[]);
    add(&a, "dave", "approver", &[]);
    add(&a, "carol", "approver", &["agent:main"]);
    let (code, out, err) = cli(&b, &["reviewers", "list"]);
    assert_eq!(code, 0, "{err}");
    for n in ["admin", "alice", "bob", "carol", "dave"] {
        assert!(out.lines().any(|l| l.starts_with(n)), "{n} on B: {out}");
    }
    let rows: i64 = pg
        .client()
        .query_one("SELECT COUNT(*) FROM sanctum_reviewers", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 5, "one admin for the fleet, not one per guard");
    let alice = sign_in(&a, "alice");
    let dave = sign_in(&a, "dave");
    let bob = sign_in(&b, "bob");
    let carol = sign_in(&b, "carol");

    // A's agent asks; alice approves on A, carol (linked to the agent) is refused on B, bob
    // completes it on B; A's agent is answered.
    let asked = a.ask("fr-1", "touch /tmp/sg-fr-1");
    let e = a.wait_pending(&alice, "fr-1");
    assert_eq!(e["approvalsRequired"], 2, "{e}");
    let r = vote(&a, &alice, &e, "allow-once");
    assert_eq!(r.status, 202, "{r:?}");
    let on_b = b.wait_pending(&bob, "fr-1");
    assert_eq!(
        on_b["approvals"],
        json!(["alice"]),
        "B sees A's vote: {on_b}"
    );
    let r = vote(&b, &carol, &e, "allow-once");
    assert_eq!(
        (r.status, r.json()["error"].clone()),
        (403, json!("own-request"))
    );
    // Sessions are the fleet's: alice's session from A works on B, and her approval there
    // is still her one approval.
    let r = vote(&b, &alice, &e, "allow-once");
    assert_eq!(
        (r.status, r.json()["error"].clone()),
        (403, json!("already-approved")),
        "alice twice, through B: {r:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!asked.is_finished(), "one approval released it");
    let r = vote(&b, &bob, &e, "allow-once");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["state"], "approved");
    let reply = first_json(&asked.join().unwrap());
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    // Each vote is in the audit log of the guard whose page took it.
    let voted = |w: &Web, who: &str| {
        w.audit().lines().any(|l| {
            l.contains("\"kind\":\"approval\"") && l.contains(&format!("\"account\":\"{who}\""))
        })
    };
    assert!(voted(&a, "alice") && !voted(&a, "bob"));
    assert!(voted(&b, "bob") && !voted(&b, "alice"));

    // A deny by either ends it.
    let asked = a.ask("fr-2", "touch /tmp/sg-fr-2");
    let e = b.wait_pending(&bob, "fr-2");
    assert_eq!(vote(&b, &bob, &e, "allow-once").status, 202);
    let r = vote(&a, &alice, &e, "deny");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&asked.join().unwrap())["decision"], "deny");

    // The terminal's vote counts in the fleet's tables as a page's does: one `inbox approve`
    // of a two-person request is one approval, never the decision (a guard-local table
    // would count it as enough).
    let asked = a.ask("fr-cli", "touch /tmp/sg-fr-cli");
    let e = a.wait_pending(&alice, "fr-cli");
    let id = e["id"].as_str().unwrap().to_owned();
    let (code, out, err) = cli(&b, &["inbox", "approve", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 of 2"), "a partial approval: {out}{err}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!asked.is_finished(), "one terminal approval released it");
    let r = vote(&a, &alice, &e, "allow-once");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&asked.join().unwrap())["decision"], "allow-once");

    // Two completing votes at once on two guards: exactly one decision.
    for round in 0..4 {
        let req = format!("fr-race-{round}");
        let asked = b.ask(&req, &format!("touch /tmp/sg-{req}"));
        let e = a.wait_pending(&alice, &req);
        assert_eq!(vote(&a, &alice, &e, "allow-once").status, 202);
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = [(a.client(), dave.clone()), (b.client(), bob.clone())]
            .into_iter()
            .map(|(client, who)| {
                let (e, barrier) = (e.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let r = client.decide(
                        &who,
                        e["id"].as_str().unwrap(),
                        json!({"decision": "allow-once", "hash": e["requestHash"]}),
                    );
                    (r.status, r.body)
                })
            })
            .collect();
        let mut out: Vec<(u16, String)> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        out.sort();
        assert_eq!(out[0].0, 200, "round {round}: {out:?}");
        assert_eq!(out[1].0, 409, "round {round}: {out:?}");
        assert!(out[1].1.contains("already"), "{out:?}");
        assert_eq!(first_json(&asked.join().unwrap())["decision"], "allow-once");
    }
}

/// Guards with different policies: A asks two approvers for `write`, B (no rule) one. A's
/// request is never completed by one vote on B's lenient page nor on B's terminal: the count
/// is the rule of the guard whose agent asked, as A published it. And B's own request,
/// decided on A's page, needs A's stricter count (the stricter of the two guards' rules).
#[test]
fn a_lenient_guards_page_counts_the_strict_owners_rule() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let strict = dir.path().join("strict.toml");
    std::fs::write(
        &strict,
        "version = 1\n[approvals]\napprovals_required = { \"write\" = 2 }\n",
    )
    .unwrap();
    let lenient = dir.path().join("lenient.toml");
    std::fs::write(&lenient, "version = 1\n").unwrap();
    let a = guard(&pg, "guard-a", &strict);
    let b = guard(&pg, "guard-b", &lenient);
    let published = |g: &str| -> i32 {
        pg.client()
            .query_one(
                "SELECT required FROM sanctum_guard_approvals WHERE guard = $1 AND category = 'write'",
                &[&g],
            )
            .unwrap()
            .get(0)
    };
    assert_eq!((published("guard-a"), published("guard-b")), (2, 1));
    add(&a, "alice", "approver", &[]);
    add(&a, "bob", "approver", &[]);
    let alice = sign_in(&b, "alice");
    let bob = sign_in(&b, "bob");

    // A's request on B's page: it needs two from the first look (the arrival on B's open
    // page and B's list), and alice's vote is one of two.
    let mut page = b.event_stream(&alice);
    let asked = a.ask("fs-1", "touch /tmp/sg-fs-1");
    let arrival = page.next("added", "fs-1", Duration::from_secs(20));
    assert_eq!(arrival["approvalsRequired"], 2, "{arrival}");
    let e = b.wait_pending(&alice, "fs-1");
    assert_eq!(e["approvalsRequired"], 2, "{e}");
    let r = vote(&b, &alice, &e, "allow-once");
    assert_eq!(
        r.status, 202,
        "one vote on a lenient page decided it: {r:?}"
    );
    assert_eq!(r.json()["approvalsRequired"], 2, "{r:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !asked.is_finished(),
        "one approval on B released A's request"
    );
    let r = vote(&b, &bob, &e, "allow-once");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&asked.join().unwrap())["decision"], "allow-once");

    // A's request on B's terminal: one approval of two.
    let asked = a.ask("fs-cli", "touch /tmp/sg-fs-cli");
    let e = b.wait_pending(&alice, "fs-cli");
    let id = e["id"].as_str().unwrap().to_owned();
    let (code, out, err) = cli(&b, &["inbox", "approve", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 of 2"), "a partial approval: {out}{err}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !asked.is_finished(),
        "one terminal approval on B released A's request"
    );
    assert_eq!(vote(&b, &bob, &e, "allow-once").status, 200);
    assert_eq!(first_json(&asked.join().unwrap())["decision"], "allow-once");

    // B's request on A's strict page: A's rule applies there too.
    let alice_a = sign_in(&a, "alice");
    let asked = b.ask("fs-b", "touch /tmp/sg-fs-b");
    let e = a.wait_pending(&alice_a, "fs-b");
    assert_eq!(vote(&a, &alice_a, &e, "allow-once").status, 202);
    assert!(!asked.is_finished());
    // On B's own page, B's rule (1) and its own are met by another vote.
    assert_eq!(vote(&b, &bob, &e, "allow-once").status, 200);
    assert_eq!(first_json(&asked.join().unwrap())["decision"], "allow-once");
}
