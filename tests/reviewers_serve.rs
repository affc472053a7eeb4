//! Named reviewers and two-person approval against the real `serve`, through its socket,
//! web API and command line: a `write` request in a category that needs two approvers stays
//! pending after one approval and is released by a second, different reviewer; a viewer,
//! the same reviewer twice, a reviewer linked to the requesting agent and a removed reviewer
//! are refused; a deny ends it; `inbox approve` counts as one approver; every vote is its
//! own audit record naming account and role, and the log still verifies.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::time::Duration;
use support::process::guard_cli;
use support::reviewers::{add, cli, token, two_person_guard};
use support::socket::first_json;
use support::web::{Login, Web};

fn sign_in(web: &Web, link: &str) -> Login {
    Login::from_answer(&web.login_with(&token(link)))
}

fn allow(web: &Web, who: &Login, e: &Value) -> support::web::Resp {
    web.decide(
        who,
        e["id"].as_str().expect("id"),
        json!({"decision": "allow-once", "hash": e["requestHash"]}),
    )
}

/// The audit records of `kind`, as their fields.
fn records(web: &Web, kind: &str) -> Vec<Value> {
    web.audit()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == kind)
        .map(|r| r["fields"].clone())
        .collect()
}

#[test]
fn approvals_required_is_validated() {
    use sanctum_guard::policy::file::parse;
    use sanctum_guard::policy::verdict::Category;
    let p = parse(
        "version = 1\n[approvals]\napprovals_required = { \"run-code\" = 2, \"write\" = 5 }\n",
        "t",
    )
    .expect("valid");
    assert_eq!(p.approvals_required(Category::RunCode), 2);
    assert_eq!(p.approvals_required(Category::Write), 5);
    assert_eq!(p.approvals_required(Category::Delete), 1, "default one");
    for bad in [
        "{ \"run-code\" = 0 }",
        "{ \"run-code\" = 6 }",
        "{ \"run-code\" = -1 }",
        "{ \"run-code\" = \"two\" }",
        "{ \"teleport\" = 2 }",
    ] {
        let e = parse(
            &format!("version = 1\n[approvals]\napprovals_required = {bad}\n"),
            "t",
        );
        assert!(e.is_err(), "{bad} accepted");
    }
    let msg = parse(
        "version = 1\n[approvals]\napprovals_required = { \"write\" = 9 }\n",
        "t",
    )
    .expect_err("9")
    .to_string();
    assert!(msg.contains("1 to 5"), "{msg}");
}

#[test]
fn two_reviewers_release_a_write_only_together() {
    let (web, _policy) = two_person_guard();
    let state = web.world.guard_state.clone();
    // An upgraded (account-less) state dir: serve made the admin the start link signs in.
    let (code, out, _) = cli(&state, &["list"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("admin ") && out.contains("admin"), "{out}");
    let admin = web.login();
    assert!(admin.identity.starts_with("web:admin/"), "{admin:?}");

    let alice = sign_in(&web, &add(&state, "alice", "approver", &[]));
    let bob = sign_in(&web, &add(&state, "bob", "admin", &[]));
    let val = sign_in(&web, &add(&state, "val", "viewer", &[]));
    // Carol is the person behind the requesting agent: linked to it, she cannot approve.
    let carol = sign_in(&web, &add(&state, "carol", "approver", &["agent:main"]));
    let s = web.call("GET", "/api/session", Some(&val), None).json();
    assert_eq!(
        (s["role"].as_str(), s["canDecide"].as_bool()),
        (Some("viewer"), Some(false))
    );
    // Names outside the grammar and unknown roles are refused with a reason.
    for (name, role) in [("Alice", "approver"), ("x y", "approver"), ("zed", "root")] {
        let (code, _, err) = cli(&state, &["add", name, "--role", role]);
        assert_eq!(code, 1, "{name} {role}: {err}");
        assert!(
            err.contains("not allowed") || err.contains("unknown role"),
            "{err}"
        );
    }

    let asked = web.ask("rv-1", "touch /tmp/sg-rv-1");
    let e = web.wait_pending(&alice, "rv-1");
    assert_eq!(e["approvalsRequired"], 2, "{e}");

    // Refused votes decide nothing.
    for (who, code) in [(&val, "role"), (&carol, "own-request")] {
        let r = allow(&web, who, &e);
        assert_eq!(r.status, 403, "{r:?}");
        assert_eq!(r.json()["error"], code, "{r:?}");
    }
    let r = allow(&web, &alice, &e);
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(
        r.json()["message"],
        "approved by alice (1 of 2); waiting for another reviewer"
    );
    let r = allow(&web, &alice, &e);
    assert_eq!(
        (r.status, r.json()["error"].clone()),
        (403, json!("already-approved"))
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!asked.is_finished(), "one approval released it");
    let listed = web.wait_pending(&bob, "rv-1");
    assert_eq!(listed["approvals"], json!(["alice"]), "{listed}");

    let r = allow(&web, &bob, &e);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["state"], "approved");
    let reply = first_json(&asked.join().expect("reply"));
    assert_eq!(reply["decision"], "allow-once", "{reply}");

    // Each vote is its own record naming the account and its role; the decision names both.
    let votes = records(&web, "approval");
    let who: Vec<(String, String)> = votes
        .iter()
        .map(|v| {
            (
                v["account"].as_str().unwrap().into(),
                v["role"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            ("alice".into(), "approver".into()),
            ("bob".into(), "admin".into())
        ]
    );
    let decided = records(&web, "decision");
    let by = decided
        .iter()
        .find_map(|d| d["decision"]["by"]["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{decided:?}"));
    assert!(by.contains("web:alice/") && by.contains("web:bob/"), "{by}");

    // A deny by anyone ends it at once, after one approval.
    let asked = web.ask("rv-2", "touch /tmp/sg-rv-2");
    let e = web.wait_pending(&alice, "rv-2");
    assert_eq!(allow(&web, &alice, &e).status, 202);
    let r = web.decide(
        &carol,
        e["id"].as_str().unwrap(),
        json!({"decision": "deny", "hash": e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        first_json(&asked.join().expect("reply"))["decision"],
        "deny"
    );

    // The command line counts as one approver under its own identity.
    let asked = web.ask("rv-3", "touch /tmp/sg-rv-3");
    let e = web.wait_pending(&alice, "rv-3");
    let id = e["id"].as_str().unwrap();
    let st = state.to_str().unwrap();
    let (code, out, err) = guard_cli(&["inbox", "approve", id, "--state-dir", st], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(1 of 2)"), "{out}");
    let (code, _, err) = guard_cli(&["inbox", "approve", id, "--state-dir", st], &[]);
    assert_eq!(code, 1, "the same terminal twice: {err}");
    assert!(err.contains("already approved"), "{err}");
    assert_eq!(allow(&web, &alice, &e).status, 200);
    assert_eq!(
        first_json(&asked.join().expect("reply"))["decision"],
        "allow-once"
    );

    // A removed reviewer: its approval stops counting, its session and links end at once.
    let spare = add(&state, "dave", "approver", &[]);
    let asked = web.ask("rv-4", "touch /tmp/sg-rv-4");
    let e = web.wait_pending(&alice, "rv-4");
    assert_eq!(allow(&web, &alice, &e).status, 202);
    let (code, out, err) = cli(&state, &["remove", "alice"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed alice"), "{out}");
    let r = web.call("GET", "/api/requests?state=pending", Some(&alice), None);
    assert_eq!(r.status, 401, "a removed reviewer's session ended: {r:?}");
    let r = allow(&web, &bob, &e);
    assert_eq!(r.status, 202, "alice's approval no longer counts: {r:?}");
    assert_eq!(r.json()["approvals"], json!(["bob"]));
    let (code, _, _) = cli(&state, &["remove", "dave"]);
    assert_eq!(code, 0);
    assert_eq!(
        web.login_with(&token(&spare)).status,
        401,
        "a removed reviewer's link"
    );
    // Re-adding the name makes a new account: the old session stays dead.
    add(&state, "alice", "approver", &[]);
    let r = web.call("GET", "/api/session", Some(&alice), None);
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(allow(&web, &admin, &e).status, 200);
    assert_eq!(
        first_json(&asked.join().expect("reply"))["decision"],
        "allow-once"
    );

    // Role changes take effect at the next request; links only for accounts.
    let (code, _, err) = cli(&state, &["role", "carol", "viewer"]);
    assert_eq!(code, 0, "{err}");
    let r = web.call("GET", "/api/session", Some(&carol), None).json();
    assert_eq!(r["role"], "viewer");
    let (code, _, err) = guard_cli(
        &["web", "login-link", "--name", "nobody", "--state-dir", st],
        &[],
    );
    assert_eq!(code, 2);
    assert!(err.contains("no reviewer account"), "{err}");

    let (code, out, err) = guard_cli(
        &["audit", "verify", web.world.audit_path().to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "audit verify: {out}{err}");
}
