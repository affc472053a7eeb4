//! No unauthenticated input to the web prompt grows the audit log: a flood of bad sign-ins,
//! API calls and decisions without a session, and forged decisions (10 s) leaves the log as
//! it was (the web prompt audits only what a signed-in person decides, through the inbox),
//! and a request still gets its decision afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::time::{Duration, Instant};
use support::web::*;

#[test]
fn a_flood_of_unauthenticated_requests_writes_no_audit_record() {
    let w = Web::start(60_000);
    // The start-up probe's record (an empty connection to the socket) is written first.
    support::process::wait_until("the probe's record", Duration::from_secs(10), || {
        w.audit().contains("\"reason\":\"eof\"").then_some(())
    });
    let before = std::fs::metadata(w.world.audit_path())
        .expect("audit")
        .len();
    let start = Instant::now();
    let mut n = 0u64;
    let body = br#"{"decision":"allow-once","hash":"x"}"#;
    while start.elapsed() < Duration::from_secs(10) {
        let r = match n % 4 {
            0 => w.login_with("not-a-login-token"),
            1 => w.raw("GET", "/api/requests", &[], None),
            2 => w.raw("POST", "/api/requests/x/decide", &[], Some(body)),
            _ => w.raw(
                "GET",
                "/api/events",
                &["Cookie: sg_session=forged".into()],
                None,
            ),
        };
        assert!(r.status >= 400, "{} {}", r.status, r.body);
        n += 1;
    }
    let grew = std::fs::metadata(w.world.audit_path())
        .expect("audit")
        .len()
        - before;
    eprintln!("{n} unauthenticated requests in 10 s: the audit log grew {grew} bytes");
    assert!(n > 100, "a flood: {n}");
    assert_eq!(grew, 0, "{}", w.audit());
    let r = support::socket::raw_exchange(
        &w.world.socket(),
        support::socket::request_line(&w.world.token, "after", "ls").as_bytes(),
        true,
    );
    assert_eq!(
        support::socket::first_json(&r)["decision"],
        "allow-once",
        "{r}"
    );
}
