//! An egress card in real headless Chromium against the real `serve`, the real egress proxy
//! and a loopback upstream: the card shows the destination, the rule "allow always" would
//! store (before anything is stored) and an "Allow for 10 min" button; clicking it lets the
//! waiting connection through. Screenshot in target/web-screenshots/.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::Duration;
use support::browser::*;
use support::egress::*;
use support::web::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_egress_card_renders_its_rule_and_allow_for_lets_the_connection_through() {
    let w = Web::start(60_000);
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;
    c.set_window_size(1280, 800).await.expect("desktop");
    let link = std::fs::read_to_string(w.link_file()).expect("link");
    sign_in(&c, &link).await;

    let (e, _st) = start_asking(&w.world, TOKEN);
    let (up, seen) = upstream();
    let rx = through_later(
        e.port,
        format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n"),
        b"ping",
    );

    let id = card_id(&c, &format!("connect://127.0.0.1:{up}")).await;
    open_card(&c, &id).await;
    let text = |css: &'static str| {
        let c = c.clone();
        let id = id.clone();
        async move {
            js(&c, "const e = document.querySelector('#r-' + arguments[0] + ' ' + arguments[1]); return e ? e.textContent : null",
               vec![json!(id), json!(css)]).await.as_str().unwrap_or_default().to_owned()
        }
    };
    assert_eq!(
        text("dd[data-field=egress-target]").await,
        format!("127.0.0.1:{up}")
    );
    assert_eq!(
        text("dd[data-field=egress-rule]").await,
        format!(r#"{{ action = "allow", host = "127.0.0.1", ports = [{up}], scheme = "https" }}"#)
    );
    assert!(text("dd[data-field=egress-request]")
        .await
        .contains("CONNECT tunnel"));
    assert_eq!(text("button[data-act=allow-for]").await, "Allow for 10 min");
    shot(&c, "egress-card.png").await;
    assert!(
        rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "answered unseen"
    );

    click(&c, &format!("#r-{id} button[data-act=allow-for]")).await;
    let got = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(got.ends_with("pong"), "{got}");
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");
    c.close().await.ok();
}
