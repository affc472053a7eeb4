//! Passkeys in real headless Chromium with its virtual authenticator (chromedriver's WebAuthn
//! commands) against the real `serve`, served under `localhost` (WebAuthn needs a name, and
//! `http://localhost` is a secure context): a signed-in person adds a passkey, signs in with
//! it alone (no link, no code), allows a request of a passkey category with a fresh
//! assertion bound to it, cannot reuse an assertion over another request's hash nor one
//! whose credential was removed, and `audit verify` checks every signed decision from the
//! log; the log's signed records, tampered, fail it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use support::browser::*;
use support::guard::{Serve, World};
use support::process::{free_port, guard_cli};
use support::socket::*;
use support::tools::NEW;
use support::web::TOKEN;

/// Runs `SG.api(method, path, body)` in the page (its session and CSRF token): status, data.
async fn page_api(c: &fantoccini::Client, method: &str, path: &str, body: Value) -> (u16, Value) {
    let v = c
        .execute_async(
            "const [m, p, b, done] = arguments; SG.api(m, p, b).then(r => done([r.status, r.data]));",
            vec![json!(method), json!(path), body],
        )
        .await
        .expect("page api");
    (v[0].as_u64().expect("status") as u16, v[1].clone())
}

/// The assertion the page's passkey script makes for a decision of inbox entry `id`.
async fn assertion_for(c: &fantoccini::Client, id: &str, kind: &str) -> Value {
    c.execute_async(
        "const [id, k, done] = arguments; SGPasskey.forDecision(id, k).then(done, e => done({error: String(e)}));",
        vec![json!(id), json!(kind)],
    )
    .await
    .expect("assertion")
}

/// The passkey records of the audit log, in order.
fn passkey_records(audit: &str) -> Vec<Value> {
    audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "passkey")
        .map(|r| r["fields"].clone())
        .collect()
}

/// The log with line `n` (0-based) replaced by `f` of its record, and every later line's
/// `prev` recomputed (seals dropped): a forger who rewrites the chain. What remains to
/// catch the change is the passkey check.
fn rechained(audit: &str, n: usize, f: impl Fn(&mut Value)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut prev: Option<String> = None;
    for (i, l) in audit.lines().enumerate() {
        let mut r: Value = serde_json::from_str(l).expect("record");
        if i == n {
            f(&mut r);
        }
        r.as_object_mut().expect("object").remove("mac");
        if let Some(p) = &prev {
            r["prev"] = json!(p);
        }
        let line = r.to_string();
        prev = Some(sanctum_guard::audit::line_hash(line.as_bytes()));
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

fn broken_what(v: sanctum_guard::audit::Verification) -> String {
    match v {
        sanctum_guard::audit::Verification::Broken { what, .. } => what,
        ok => panic!("tampered log verified: {ok:?}"),
    }
}

#[test]
fn the_passkey_policy_key_parses_and_defaults_to_none() {
    use sanctum_guard::policy::file::parse;
    use sanctum_guard::policy::verdict::Category;
    let none = parse("version = 1\n", "t").expect("default");
    assert!(!none.needs_passkey(Category::RunCode), "default: none");
    let some = parse(
        "version = 1\n[approvals]\npasskey_categories = [\"run-code\", \"http-write\", \"config-change\"]\n",
        "t",
    )
    .expect("suggested set");
    assert!(some.needs_passkey(Category::RunCode) && some.needs_passkey(Category::ConfigChange));
    assert!(!some.needs_passkey(Category::Write));
    for bad in [
        "passkey_categories = [\"teleport\"]",
        "passkey_category = []",
    ] {
        assert!(
            parse(&format!("version = 1\n[approvals]\n{bad}\n"), "t").is_err(),
            "{bad}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passkeys_in_chromium_sign_in_and_sign_decisions() {
    let world = World::new(NEW, TOKEN, &[]);
    let port = free_port();
    let origin = format!("http://localhost:{port}");
    let cfg = world.write_config(&format!(
        "[deadlines]\nrequest_ms = 120000\n[web]\npublic_origin = \"{origin}\"\n"
    ));
    let policy = world.write_policy("version = 1\n[approvals]\npasskey_categories = [\"write\"]\n");
    let listen = format!("127.0.0.1:{port}");
    let _serve = Serve::start(
        &world,
        &[],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--policy",
            policy.to_str().expect("utf8"),
            "--web-listen",
            &listen,
        ],
    );
    let state = world.guard_state.to_str().expect("utf8").to_owned();
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;
    let auth = virtual_authenticator(&d, &c).await;

    // Signed in with the one-time link (served under localhost), a person adds a passkey.
    let link = std::fs::read_to_string(world.guard_state.join("web-login-link")).expect("link");
    assert!(
        link.starts_with(&origin),
        "the link uses the public origin: {link}"
    );
    sign_in(&c, &link).await;
    click(&c, "#passkey-add").await;
    until(
        &c,
        "the passkey added",
        "return document.getElementById('passkey-msg').textContent.includes('Passkey added')",
        vec![],
    )
    .await;
    assert_eq!(authenticator_credentials(&d, &c, &auth).await.len(), 1);
    let (code, out, err) = guard_cli(&["passkeys", "list", "--state-dir", &state], &[]);
    assert_eq!(code, 0, "{err}");
    let cred_id = out.split_whitespace().next().expect("an id").to_owned();
    let audit = std::fs::read_to_string(world.audit_path()).expect("audit");
    let recs = passkey_records(&audit);
    assert_eq!(recs[0]["action"], "registered");
    assert_eq!(recs[0]["credentialId"], json!(cred_id));
    assert_eq!(recs[0]["rpId"], "localhost");

    // Signed out, the passkey alone signs in again: no link (the only one is used), no code.
    let who = "return document.getElementById('identity').textContent";
    let first = js(&c, who, vec![]).await;
    click(&c, "#logout").await;
    until(
        &c,
        "signed out",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;
    click(&c, "#signed-out button.passkey-signin").await;
    // A new session of the same person (the link's name), made by the passkey alone.
    until(
        &c,
        "a new session after the passkey sign-in",
        "const t = document.getElementById('identity').textContent; \
         return t.startsWith('Signed in as') && t !== arguments[0]",
        vec![first.clone()],
    )
    .await;
    until_live(&c, "live inbox after a passkey sign-in").await;
    let second = js(&c, who, vec![]).await;
    let second = second.as_str().expect("identity");
    assert!(second.starts_with("Signed in as web:admin/"), "{second}");
    assert_ne!(json!(second), first, "a new session");

    // A `write` request: Allow once on its card asks the passkey, and the allow goes through.
    let a = {
        let sock = world.socket();
        let line = request_line(TOKEN, "pk-1", "touch /tmp/sg-pk-allow");
        std::thread::spawn(move || raw_exchange(&sock, line.as_bytes(), false))
    };
    let ida = card_id(&c, "sg-pk-allow").await;
    open_card(&c, &ida).await;
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    click(&c, &format!("#r-{ida} button[data-act='allow-once']")).await;
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "allow-once");

    // Two more requests: an allow without an assertion is refused; a deny needs none.
    let ask = |id: &'static str, cmd: &'static str| {
        let sock = world.socket();
        let line = request_line(TOKEN, id, cmd);
        std::thread::spawn(move || raw_exchange(&sock, line.as_bytes(), false))
    };
    let b = ask("pk-2", "touch /tmp/sg-pk-b");
    let cc = ask("pk-3", "touch /tmp/sg-pk-c");
    let idb = card_id(&c, "sg-pk-b").await;
    let idc = card_id(&c, "sg-pk-c").await;
    let hash_of = |id: String| {
        let c = &c;
        async move {
            let (_, e) = page_api(c, "GET", &format!("/api/requests/{id}"), json!(null)).await;
            e["requestHash"].as_str().expect("hash").to_owned()
        }
    };
    let (hb, hc) = (hash_of(idb.clone()).await, hash_of(idc.clone()).await);
    let decide = |id: &str| format!("/api/requests/{id}/decision");
    let (st, v) = page_api(
        &c,
        "POST",
        &decide(&idc),
        json!({"decision": "allow-once", "hash": hc}),
    )
    .await;
    assert_eq!(
        (st, v["error"].as_str()),
        (403, Some("passkey-required")),
        "{v}"
    );

    // An assertion captured for B, sent with C's decision: refused (it binds B's hash).
    let for_b = assertion_for(&c, &idb, "allow-once").await;
    assert!(for_b["credential"].is_object(), "{for_b}");
    let (st, v) = page_api(
        &c,
        "POST",
        &decide(&idc),
        json!({"decision": "allow-once", "hash": hc, "passkey": for_b}),
    )
    .await;
    assert_eq!(st, 403, "another request's assertion: {v}");
    // C's own ceremony with B's signed response: the challenge is not C's binding.
    let for_c = assertion_for(&c, &idc, "allow-once").await;
    let mut mixed = for_c.clone();
    mixed["credential"] = for_b["credential"].clone();
    let (st, v) = page_api(
        &c,
        "POST",
        &decide(&idc),
        json!({"decision": "allow-once", "hash": hc, "passkey": mixed}),
    )
    .await;
    assert_eq!(st, 403, "B's signature on C's ceremony: {v}");
    // B's assertion replayed for B itself: its ceremony was spent by the refusal.
    let (st, _) = page_api(
        &c,
        "POST",
        &decide(&idb),
        json!({"decision": "allow-once", "hash": hb, "passkey": for_b}),
    )
    .await;
    assert_eq!(st, 403, "a ceremony is single use");
    let (st, v) = page_api(
        &c,
        "POST",
        &decide(&idc),
        json!({"decision": "deny", "hash": hc}),
    )
    .await;
    assert_eq!(st, 200, "deny needs no passkey: {v}");
    assert_eq!(first_json(&cc.join().expect("c"))["decision"], "deny");

    // A fresh assertion for B, then its credential removed from the command line: refused
    // at once, and a passkey sign-in no longer works.
    let fresh = assertion_for(&c, &idb, "allow-once").await;
    let (code, _, err) = guard_cli(
        &["passkeys", "remove", &cred_id, "--state-dir", &state],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let (st, v) = page_api(
        &c,
        "POST",
        &decide(&idb),
        json!({"decision": "allow-once", "hash": hb, "passkey": fresh}),
    )
    .await;
    assert_eq!(st, 403, "a removed credential: {v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("not registered"),
        "{v}"
    );
    let (st, v) = page_api(
        &c,
        "POST",
        &decide(&idb),
        json!({"decision": "deny", "hash": hb}),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    b.join().expect("b");

    // The log proves the allow: `audit verify` passes, and its signed record names A.
    let (code, out, err) = guard_cli(
        &[
            "audit",
            "verify",
            "--state-dir",
            &state,
            "--allow-unanchored",
        ],
        &[],
    );
    assert_eq!(code, 0, "audit verify: {out}{err}");
    let audit = std::fs::read_to_string(world.audit_path()).expect("audit");
    let recs = passkey_records(&audit);
    let actions: Vec<&str> = recs
        .iter()
        .map(|r| r["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(actions, ["registered", "signed", "removed"], "{recs:?}");
    assert_eq!(recs[1]["inboxId"], json!(ida));
    assert!(
        sanctum_guard::audit::verify_bytes(audit.as_bytes())
            == sanctum_guard::audit::Verification::Ok {
                records: audit.lines().count() as u64
            }
    );

    // Tampered and re-chained, the signed record fails verify: a changed signature, the
    // decision moved to another request, the key removed before it.
    let lines: Vec<&str> = audit.lines().collect();
    let signed_at = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"passkey\"") && l.contains("\"action\":\"signed\""))
        .expect("signed line");
    let flip = rechained(&audit, signed_at, |r| {
        let s = r["fields"]["signature"].as_str().expect("sig").to_owned();
        let last = if s.ends_with('0') { '1' } else { '0' };
        r["fields"]["signature"] = json!(format!("{}{last}", &s[..s.len() - 1]));
    });
    assert!(broken_what(sanctum_guard::audit::verify_bytes(&flip)).contains("signature"));
    let moved = rechained(&audit, signed_at, |r| {
        r["fields"]["inboxId"] = json!(idb.clone());
        r["fields"]["requestHash"] = json!(hb.clone());
    });
    assert!(broken_what(sanctum_guard::audit::verify_bytes(&moved)).contains("challenge"));
    let removed_first = rechained(&audit, signed_at - 1, |r| {
        r["kind"] = json!("passkey");
        r["fields"] = json!({"action": "removed", "credentialId": cred_id, "by": "forger"});
    });
    assert!(broken_what(sanctum_guard::audit::verify_bytes(&removed_first)).contains("removed"));
    shot(&c, "passkeys-signed-in.png").await;
}
