//! Fleet mode: each guard keeps its own audit log, and any guard's page links a decision to
//! the deciding guard's record of it. Two real `serve` processes on one real PostgreSQL
//! server: a request of agent A decided on guard B's page shows, on guard A's History API,
//! a link to B's page of the record (B published its `[web] public_url`), and B serves that
//! record (`GET /api/audit/{seq}`) with the hash the row names; a changed line makes the
//! chain check (API and `audit show`) say so. A row written behind the guards' backs never
//! makes the page link anywhere the guards table does not say.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::os::unix::fs::FileExt;
use std::time::Duration;
use support::postgres::Postgres;
use support::process::{guard_cli, wait_until};
use support::socket::*;
use support::web::*;

/// What `serve` says at start when its `public_url` names a host its page refuses.
const REFUSED_URL: &str = "is not an address this page answers to";

fn store(pg: &Postgres, name: &str) -> String {
    format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url())
}

/// A guard of the fleet that published where its page is: started, then restarted on the
/// same port with `[web] public_url` naming it (the port is only known once it listens).
fn published_guard(pg: &Postgres, name: &str) -> Web {
    let mut w = Web::start_configured(30_000, &store(pg, name), &[], "http");
    w.world.write_config(&format!(
        "[deadlines]\nrequest_ms = 30000\n{}[web]\npublic_url = \"{}\"\n",
        store(pg, name),
        w.base
    ));
    w.restart();
    w
}

/// The resolved row of request `id` as `w`'s page lists it.
fn resolved_row(w: &Web, login: &Login, id: &str) -> Value {
    let r = w.call("GET", "/api/requests?state=resolved", Some(login), None);
    r.json()["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {}", r.body))
}

/// `audit show SEQ` on `w`'s state dir: (exit code, stdout, stderr).
fn audit_show(w: &Web, seq: u64) -> (i32, String, String) {
    let dir = w.world.guard_state.to_str().unwrap().to_owned();
    guard_cli(
        &["audit", "show", &seq.to_string(), "--state-dir", &dir],
        &[],
    )
}

#[test]
fn a_decision_links_to_the_deciding_guards_record() {
    let pg = Postgres::start();
    let a = Web::start_configured(30_000, &store(&pg, "guard-a"), &[], "http");
    let b = published_guard(&pg, "guard-b");
    wait_until(
        "guard-b's address published",
        Duration::from_secs(20),
        || {
            let row = pg
                .client()
                .query_opt(
                    "SELECT public_url FROM sanctum_guards WHERE name = 'guard-b'",
                    &[],
                )
                .unwrap()?;
            row.get::<_, Option<String>>(0).filter(|u| *u == b.base)
        },
    );
    assert!(!b.serve.log().contains(REFUSED_URL), "{}", b.serve.log());
    let (la, lb) = (a.login(), b.login());

    // Agent A's request, decided on B's page.
    let client = a.ask("link-1", "touch /tmp/sg-fleet-link-1");
    let e = b.wait_pending(&lb, "link-1");
    let id = e["id"].as_str().unwrap().to_owned();
    let r = b.decide(
        &lb,
        &id,
        json!({"decision": "allow-once", "hash": e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        first_json(&client.join().unwrap())["decision"],
        "allow-once"
    );

    // A's page links the decision to B's record: the address B published, the row's seq
    // and hash.
    let row = resolved_row(&a, &la, &id);
    let at = &row["decidedAt"];
    assert_eq!(at["guard"], "guard-b", "{row}");
    let seq = at["auditSeq"].as_u64().unwrap();
    let hash = at["auditHash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 64, "{at}");
    assert_eq!(
        at["link"],
        format!("{}/audit?seq={seq}&hash={hash}", b.base),
        "{at}"
    );

    // B serves that record, whose line has the row's hash, and its chain vouches for it.
    let rec = b.call("GET", &format!("/api/audit/{seq}"), Some(&lb), None);
    assert_eq!(rec.status, 200, "{rec:?}");
    let rec = rec.json();
    assert_eq!(rec["hash"], hash.as_str(), "{rec}");
    let line = rec["line"].as_str().unwrap();
    assert_eq!(hex::encode(Sha256::digest(line.as_bytes())), hash);
    assert!(b.audit().lines().any(|l| l == line), "the line is B's own");
    assert_eq!(rec["record"]["kind"], "decision");
    assert_eq!(rec["record"]["fields"]["id"], id.as_str());
    assert_eq!(
        rec["chain"],
        json!({"intact": true, "from": 1, "keyed": true, "anchored": true, "broken": null}),
        "{rec}"
    );
    // The page the link opens, and the same record on the command line.
    let page = b.call(
        "GET",
        &format!("/audit?seq={seq}&hash={hash}"),
        Some(&lb),
        None,
    );
    assert_eq!(page.status, 200);
    assert!(page.body.contains("/assets/audit.js"), "{}", page.body);
    let (code, out, err) = audit_show(&b, seq);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&hash) && out.contains("anchored by the sealed head"),
        "{out}"
    );
    // The record is B's alone: A's log has none at that seq with that hash.
    let on_a = a.call("GET", &format!("/api/audit/{seq}"), Some(&la), None);
    assert!(on_a.status == 404 || on_a.json()["hash"] != hash.as_str());

    // Refusals: not signed in (401, like every API); no such record, or not a number (404).
    let anon = b.call("GET", &format!("/api/audit/{seq}"), None, None);
    assert_eq!(anon.status, 401, "{anon:?}");
    for missing in ["999999", "abc", "-1", "1.5"] {
        let r = b.call("GET", &format!("/api/audit/{missing}"), Some(&lb), None);
        assert_eq!(r.status, 404, "{missing}: {r:?}");
    }
    let (code, _, err) = audit_show(&b, 999_999);
    assert_eq!(code, 3, "{err}");

    // A row written behind the guards' backs cannot make the page link elsewhere: the link
    // is built from the guards table, whose URLs are checked again as they are read.
    let mut db = pg.client();
    let attempts: [(&str, &str, Option<&str>); 4] = [
        // Another guard name, not in the table: text only.
        ("guard-evil", &hash, None),
        // A hash that is not hex is not passed on in the link.
        ("guard-b", "\"><script>alert(1)</script>", Some("")),
        // A table entry that is no https or loopback origin: no link.
        ("guard-js", &hash, None),
        ("guard-plain", &hash, None),
    ];
    db.execute(
        "INSERT INTO sanctum_guards (name, public_url, updated_ms) VALUES
         ('guard-js', 'javascript:alert(1)', 0), ('guard-plain', 'http://evil.example', 0)",
        &[],
    )
    .unwrap();
    for (guard, forged_hash, want) in attempts {
        db.execute(
            "UPDATE sanctum_inbox SET decided_guard = $2, decided_hash = $3 WHERE id = $1",
            &[&id, &guard, &forged_hash],
        )
        .unwrap();
        let at = resolved_row(&a, &la, &id)["decidedAt"].clone();
        assert_eq!(at["guard"], guard);
        match want {
            None => assert!(at["link"].is_null(), "{guard}: {at}"),
            Some(_) => assert_eq!(
                at["link"],
                format!("{}/audit?seq={seq}", b.base),
                "{guard}: {at}"
            ),
        }
    }
    db.execute(
        "UPDATE sanctum_inbox SET decided_guard = 'guard-b', decided_hash = $2 WHERE id = $1",
        &[&id, &hash],
    )
    .unwrap();

    // A changed line: the record B serves no longer has the row's hash, and the chain says
    // where it breaks (its seal no longer opens), on the API and on the command line.
    let log = b.world.audit_path();
    let text = std::fs::read_to_string(&log).unwrap();
    let offset = text.find(line).unwrap() + line.find("allow-once").unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    f.write_all_at(b"allow-twce", offset as u64).unwrap();
    let rec = b
        .call("GET", &format!("/api/audit/{seq}"), Some(&lb), None)
        .json();
    assert_ne!(rec["hash"], hash.as_str(), "{rec}");
    assert_eq!(rec["chain"]["intact"], false, "{rec}");
    assert_eq!(rec["chain"]["anchored"], false, "{rec}");
    let what = rec["chain"]["broken"]["what"].as_str().unwrap();
    assert!(what.contains("not sealed"), "{rec}");
    let (code, out, err) = audit_show(&b, seq);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("BROKEN"), "{out}");
}

/// A `public_url` the page itself would refuse (another name than its listen address or
/// `public_origin`) is said at start: every link the fleet builds to it would be a 403.
#[test]
fn a_public_url_the_page_refuses_is_warned_at_start() {
    let w = Web::start_configured(
        30_000,
        "[web]\npublic_url = \"https://elsewhere.example:8484\"\n",
        &[],
        "http",
    );
    assert!(w.serve.log().contains(REFUSED_URL), "{}", w.serve.log());
}
