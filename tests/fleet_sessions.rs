//! A fleet's sign-in state in its PostgreSQL database: real `serve` processes sharing one
//! real PostgreSQL server. A session made on guard A holds after A restarts and on guard B;
//! ending it on A (revocation, or `reviewers remove` on the command line) ends B's open
//! event stream at once (NOTIFY, not B's heartbeat); an expired row is refused and pruned;
//! last-seen is written coarsely; only hashes are at rest. A login link made by A's command
//! line signs in on B once and then nowhere, and of two guards redeeming one link at the
//! same moment exactly one wins. With the database away, sign-in and every change answer
//! 503 `store-unavailable`, and both work again by themselves when it returns.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::postgres::Postgres;
use support::reviewers::token;
use support::web::{Events, Login, Web};

fn guard(pg: &Postgres, name: &str) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(120_000, &store, &[], "http")
}

/// The command line on `w`'s state dir, with `w`'s config (so it finds the fleet).
fn cli(w: &Web, args: &[&str]) -> (i32, String, String) {
    w.cli_configured(args)
}

/// A link for `name` from `w`'s command line: its token.
fn link(w: &Web, name: &str) -> String {
    let (code, out, err) = cli(w, &["web", "login-link", "--name", name]);
    assert_eq!(code, 0, "login-link {name}: {out}{err}");
    token(out.trim())
}

/// How long until `s` says `signed-out` (panics after `within`).
fn signed_out_within(s: &mut Events, within: Duration) -> Duration {
    let t = Instant::now();
    s.next("signed-out", "", within);
    t.elapsed()
}

fn session_status(w: &Web, who: &Login) -> u16 {
    w.call("GET", "/api/session", Some(who), None).status
}

#[test]
fn a_session_outlives_its_guard_and_ends_on_every_guard() {
    let pg = Postgres::start();
    let mut a = guard(&pg, "guard-a");
    let b = guard(&pg, "guard-b");
    let me = Login::from_answer(&a.login_with(&link(&a, "admin")));
    let sid = me.cookie.split_once('=').unwrap().1.to_owned();

    // At rest: the session id's hash, never the id.
    let mut db = pg.client();
    let rows = db
        .query("SELECT hash, identity, csrf FROM sanctum_web_sessions", &[])
        .unwrap();
    assert_eq!(rows.len(), 1);
    let hash: String = rows[0].get(0);
    assert_ne!(hash, sid);
    assert!(rows.iter().all(|r| !format!("{r:?}").contains(&sid)));

    // A restarts: the session holds there, and on B (one fleet, one sign-in).
    a.restart();
    assert_eq!(session_status(&a, &me), 200, "after A's restart");
    assert_eq!(session_status(&b, &me), 200, "on B");

    // Last-seen is written coarsely: two reads a moment apart leave it as it was.
    let seen = |db: &mut postgres::Client| -> String {
        db.query_one(
            "SELECT last_seen::text FROM sanctum_web_sessions WHERE hash = $1",
            &[&hash],
        )
        .unwrap()
        .get(0)
    };
    let before = seen(&mut db);
    assert_eq!(session_status(&b, &me), 200);
    assert_eq!(
        seen(&mut db),
        before,
        "a read a moment later writes nothing"
    );

    // Revocation on A ends B's open stream at once (B's heartbeat is 15 s away).
    let mut on_b = b.event_stream(&me);
    let r = a.call("POST", "/api/sessions/revoke", Some(&me), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    let took = signed_out_within(&mut on_b, Duration::from_secs(5));
    println!("revocation on A -> signed-out on B's stream: {took:?}");
    assert_eq!(session_status(&b, &me), 401);
    assert_eq!(session_status(&a, &me), 401);

    // `reviewers remove` on A's command line ends bob's session on B's page the same way.
    let (code, out, err) = cli(&a, &["reviewers", "add", "bob", "--role", "approver"]);
    assert_eq!(code, 0, "{out}{err}");
    let bob = Login::from_answer(&b.login_with(&link(&a, "bob")));
    let mut bobs = b.event_stream(&bob);
    let (code, out, err) = cli(&a, &["reviewers", "remove", "bob"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 session(s) ended on every guard"), "{out}");
    signed_out_within(&mut bobs, Duration::from_secs(5));
    assert_eq!(session_status(&b, &bob), 401);

    // An expired row is refused, and gone once seen.
    let late = Login::from_answer(&b.login_with(&link(&b, "admin")));
    let n = db
        .execute(
            "UPDATE sanctum_web_sessions SET expires = now() - interval '1 second'",
            &[],
        )
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(session_status(&a, &late), 401);
    let left: i64 = db
        .query_one("SELECT COUNT(*) FROM sanctum_web_sessions", &[])
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "the expired row is pruned");
}

#[test]
fn a_login_link_works_once_across_the_fleet() {
    let pg = Postgres::start();
    let a = guard(&pg, "guard-a");
    let b = guard(&pg, "guard-b");

    // Made by A's command line, used on B; then it works nowhere.
    let t = link(&a, "admin");
    let mut db = pg.client();
    let at_rest: Vec<String> = db
        .query("SELECT hash FROM sanctum_login_links", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!at_rest.is_empty() && at_rest.iter().all(|h| !h.contains(&t)));
    let on_b = Login::from_answer(&b.login_with(&t));
    assert!(on_b.identity.starts_with("web:admin/"), "{}", on_b.identity);
    for w in [&a, &b] {
        let r = w.login_with(&t);
        assert_eq!(r.status, 401, "used twice: {r:?}");
        assert!(r.body.contains("bad-login"), "{}", r.body);
    }

    // Two guards redeem one link at the same moment: exactly one session starts.
    for round in 0..8 {
        let t = link(if round % 2 == 0 { &a } else { &b }, "admin");
        let go = Arc::new(Barrier::new(2));
        let ports = [a.client(), b.client()];
        let answers: Vec<u16> = std::thread::scope(|s| {
            let hs: Vec<_> = ports
                .iter()
                .map(|c| {
                    let (go, t) = (go.clone(), t.clone());
                    s.spawn(move || {
                        go.wait();
                        c.login_with(&t).status
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = answers.clone();
        sorted.sort();
        assert_eq!(sorted, vec![200, 401], "round {round}: {answers:?}");
    }
}

#[test]
fn database_away_sign_in_and_sessions_fail_closed_then_recover() {
    let pg = Postgres::start();
    let a = guard(&pg, "guard-a");
    let me = Login::from_answer(&a.login_with(&link(&a, "admin")));
    assert_eq!(session_status(&a, &me), 200);
    let spare = link(&a, "admin");
    let stranger = Login {
        cookie: "sg_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
        csrf: "x".into(),
        identity: String::new(),
    };

    pg.stop();
    // No sign-in, no change, no session the guard never confirmed: 503 store-unavailable.
    let r = a.login_with(&spare);
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.body.contains("store-unavailable"), "{}", r.body);
    for (who, method, path) in [
        (&me, "POST", "/api/logout"),
        (&me, "POST", "/api/sessions/revoke"),
        (&stranger, "GET", "/api/session"),
    ] {
        let r = a.call(method, path, Some(who), Some("{}"));
        assert_eq!(r.status, 503, "{method} {path}: {r:?}");
        assert!(r.body.contains("store-unavailable"), "{}", r.body);
    }
    // The one allowance is the reviewer store's: a read of a session this guard confirmed,
    // so the page can say the database is away.
    assert_eq!(session_status(&a, &me), 200);

    pg.start_again();
    // Back: the spare link (unused: nothing was consumed while away) signs in, and the
    // session's changes apply again.
    let t = Instant::now();
    let r = loop {
        let r = a.login_with(&spare);
        if r.status != 503 || t.elapsed() > Duration::from_secs(20) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(r.status, 200, "{r:?}");
    println!(
        "sign-in back after the database returned: {:?}",
        t.elapsed()
    );
    let r = a.call("POST", "/api/logout", Some(&me), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(session_status(&a, &me), 401);
}
