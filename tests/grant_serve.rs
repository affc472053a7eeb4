//! Bounded grants against the real `serve`: a grant made on a card through the web API
//! answers a later request of its shape with no prompt (the reply comes at once and the
//! audit log's decision names the grant), its uses are counted, a revoke from the command
//! line (another process, the same database) makes the next request ask again, and an
//! expired grant covers nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use support::socket::*;
use support::web::*;

/// A `request` frame of agent `main`, session `agent:main:main`, run in `cwd`.
fn line(id: &str, command: &str, cwd: &Path) -> String {
    json!({"type":"request","token":TOKEN,"id":id,
        "request":{"command":command,"cwd":cwd,"agentId":"main","sessionKey":"agent:main:main",
                   "security":"allowlist","ask":"on-miss"}})
    .to_string()
        + "\n"
}

fn ask(w: &Web, id: &str, command: &str, cwd: &Path) -> std::thread::JoinHandle<String> {
    let sock = w.world.socket();
    let l = line(id, command, cwd);
    std::thread::spawn(move || raw_exchange(&sock, l.as_bytes(), false))
}

/// The decision of a request the guard answers by itself, and how long it took.
fn answered_at_once(w: &Web, id: &str, command: &str, cwd: &Path) -> Value {
    let t = Instant::now();
    let reply = first_json(&ask(w, id, command, cwd).join().unwrap());
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "{id}: {command} waited {:?} (asked a person?): {reply}",
        t.elapsed()
    );
    reply
}

/// Asserts `command` waits for a person, then denies it from the web.
fn asked(w: &Web, login: &Login, id: &str, command: &str, cwd: &Path) {
    let h = ask(w, id, command, cwd);
    let e = w.wait_pending(login, id);
    let r = w.decide(
        login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&h.join().unwrap())["decision"], "deny");
}

/// Approves the pending request `id` once with `grant`; returns the stored grant.
fn approve_with_grant(w: &Web, login: &Login, e: &Value, grant: Value) -> Value {
    let r = w.decide(
        login,
        e["id"].as_str().unwrap(),
        json!({"decision":"allow-once","hash":e["requestHash"],"grant":grant}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    assert_eq!(v["decision"]["kind"], "allow-once", "{v}");
    assert!(v["grant"]["id"].is_string(), "{v}");
    v["grant"].clone()
}

fn cli(w: &Web, args: &[&str]) -> (i32, String, String) {
    let dir = w.world.guard_state.to_str().unwrap().to_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--state-dir", &dir]);
    support::process::guard_cli(&all, &[])
}

#[test]
fn a_grant_answers_its_shape_counts_uses_and_is_revoked_at_once() {
    let w = Web::start(20_000);
    let login = w.login();
    let usr = Path::new("/usr");
    let ws = w.world.oc_state.join("workspace");
    assert!(ws.is_dir(), "the default workspace {}", ws.display());

    // A card offers the scopes this request can have (no prefix outside the workspace).
    let h = ask(&w, "u1", "make test", usr);
    let e = w.wait_pending(&login, "u1");
    let scopes: Vec<&str> = e["bounded"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["session", "minutes", "uses"], "{}", e["bounded"]);
    let g = approve_with_grant(&w, &login, &e, json!({"scope":"uses","n":2}));
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-once");
    assert_eq!(g["patterns"], json!(["make test"]));
    let gid = g["id"].as_str().unwrap().to_owned();

    // Two uses, no prompt; then asked again.
    assert_eq!(
        answered_at_once(&w, "u2", "make test", usr)["decision"],
        "allow-once"
    );
    // Another shape is never covered, and spends nothing.
    asked(&w, &login, "u-other", "make test && make install", usr);
    assert_eq!(
        answered_at_once(&w, "u3", "make test", usr)["decision"],
        "allow-once"
    );
    asked(&w, &login, "u4", "make test", usr);
    let audit = w.audit();
    let uses = audit
        .lines()
        .filter(|l| l.contains("\"decision\"") && l.contains(&format!("\"grants\":[\"{gid}\"]")))
        .count();
    assert_eq!(uses, 2, "each use is a decision record naming the grant");
    assert!(audit
        .lines()
        .any(|l| l.contains("\"kind\":\"grant\"") && l.contains(&gid) && l.contains("\"made\"")));

    // A prefix grant in the workspace, narrowed to what was asked.
    let h = ask(&w, "p1", "make test --keep-going", &ws);
    let e = w.wait_pending(&login, "p1");
    let prefix = e["bounded"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["scope"] == "prefix")
        .cloned()
        .unwrap();
    assert_eq!(prefix["patterns"], json!(["make test *"]), "{prefix}");
    let g = approve_with_grant(&w, &login, &e, json!({"scope":"prefix"}));
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-once");
    let pid = g["id"].as_str().unwrap().to_owned();
    assert_eq!(
        answered_at_once(&w, "p2", "make test -j2", &ws)["decision"],
        "allow-once"
    );
    asked(&w, &login, "p-out", "make test -j2", usr);
    asked(&w, &login, "p-more", "make test -j2; make install", &ws);

    // Listed by the command line; revoked there; the next one is asked.
    let (code, out, err) = cli(&w, &["grants", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [pid.as_str()], "the used-up grant is not live: {out}");
    let (code, _, err) = cli(&w, &["grants", "revoke", &pid]);
    assert_eq!(code, 0, "{err}");
    asked(&w, &login, "p3", "make test -j2", &ws);
    let (code, _, _) = cli(&w, &["grants", "revoke", &pid]);
    assert_eq!(code, 1, "revoking twice");
    assert!(w.audit().lines().any(|l| l.contains("\"kind\":\"grant\"")
        && l.contains(&pid)
        && l.contains("\"revoked\"")));
    let r = w.client().call("GET", "/api/grants", Some(&login), None);
    assert_eq!(r.json()["grants"], json!([]), "{}", r.body);
}

/// A grant past its expiry covers nothing: one written to the same database (as the web
/// prompt writes them) lives 1.5 s.
#[test]
fn an_expired_grant_covers_nothing() {
    let w = Web::start(20_000);
    let login = w.login();
    let usr = Path::new("/usr");
    let h = ask(&w, "e1", "make check", usr);
    let e = w.wait_pending(&login, "e1");
    let g = approve_with_grant(&w, &login, &e, json!({"scope":"minutes","n":1}));
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-once");
    let store =
        sanctum_guard::grants::GrantStore::open(&w.world.guard_state.join("inbox.db")).unwrap();
    let made = store.get(g["id"].as_str().unwrap()).unwrap().unwrap();
    let mut spec = made.spec.clone();
    let now = sanctum_guard::inbox::now_ms();
    spec.expires_ms = Some(now + 1_500);
    let short = store
        .insert(&spec, "test", &made.inbox_id, &made.request_id, now)
        .unwrap();
    store.revoke(&made.id, "test", now).unwrap();
    assert_eq!(
        answered_at_once(&w, "e2", "make check", usr)["decision"],
        "allow-once"
    );
    std::thread::sleep(Duration::from_millis(1_600));
    asked(&w, &login, "e3", "make check", usr);
    assert!(w.audit().contains(&short.id));
}

/// History suggests a grant for a shape people approved five times (exactly that shape),
/// and accepting it answers the next one with no prompt.
#[test]
fn five_approvals_of_one_shape_are_suggested_and_accepted() {
    let w = Web::start(20_000);
    let login = w.login();
    let usr = Path::new("/usr");
    let sugg = |w: &Web| {
        w.client()
            .call("GET", "/api/grants/suggestions", Some(&login), None)
            .json()["suggestions"]
            .clone()
    };
    for i in 0..5 {
        assert_eq!(sugg(&w), json!([]), "after {i} approvals");
        approve_once(&w, &login, &format!("s{i}"), "make dist", usr);
    }
    let s = sugg(&w);
    assert_eq!(s.as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s[0]["patterns"], json!(["make dist"]), "{s}");
    assert_eq!(s[0]["approvals"], 5);
    let path = format!(
        "/api/grants/suggestions/{}/accept",
        s[0]["inboxId"].as_str().unwrap()
    );
    let r = w.client().call("POST", &path, Some(&login), Some("{}"));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        answered_at_once(&w, "s5", "make dist", usr)["decision"],
        "allow-once"
    );
    asked(&w, &login, "s6", "make dist --jobs 2", usr);
    assert_eq!(
        sugg(&w),
        json!([]),
        "a covered shape is not suggested again"
    );
}

/// `[web] suggest_after` reaches History: with 2, the second approval of a shape is
/// suggested (the first is not), with 0 nothing ever is.
#[test]
fn the_suggestion_threshold_is_the_configured_one() {
    let usr = Path::new("/usr");
    for (after, approvals, want) in [(2, 1, 0), (2, 2, 1), (0, 3, 0)] {
        let w = Web::start_configured(
            20_000,
            &format!("[web]\nsuggest_after = {after}\n"),
            &[],
            "http",
        );
        let login = w.login();
        for i in 0..approvals {
            approve_once(&w, &login, &format!("t{i}"), "make dist", usr);
        }
        let s = w
            .client()
            .call("GET", "/api/grants/suggestions", Some(&login), None)
            .json()["suggestions"]
            .clone();
        assert_eq!(
            s.as_array().map_or(0, Vec::len),
            want,
            "suggest_after {after}, {approvals} approvals: {s}"
        );
    }
}

/// Asks `command` as request `id` and allows it once through the web API, as a person would.
fn approve_once(w: &Web, login: &Login, id: &str, command: &str, cwd: &Path) {
    let h = ask(w, id, command, cwd);
    let e = w.wait_pending(login, id);
    let r = w.decide(
        login,
        e["id"].as_str().unwrap(),
        json!({"decision":"allow-once","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&h.join().unwrap())["decision"], "allow-once");
}
