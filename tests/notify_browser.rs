//! The card a push notification links to, opened in real headless Chromium at phone width:
//! the link from the message the local ntfy server received opens that request's card for a
//! signed-in reviewer (screenshot target/web-screenshots/notify-card-phone.png), the header
//! names a push channel that fails, and the same link in a browser that is not signed in
//! shows the sign-in panel, never the card's buttons.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::Duration;
use support::browser::*;
use support::channels::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notification_link_opens_the_card_on_a_phone() {
    let ntfy = ChannelServer::start(Api::Ntfy { token: None }, 0);
    let (_d, key) = secret("hook-key-0123456789");
    let w = serve_with(
        30_000,
        &format!(
            "[notify]\nbatch_ms = 0\n[[notify.channel]]\nkind = \"ntfy\"\nurl = \"{}\"\ntopic = \"phone\"\n\
             [[notify.channel]]\nkind = \"webhook\"\nname = \"dead-hook\"\nurl = \"{}\"\nsecret_file = \"{key}\"\nattempts = 1\n",
            ntfy.url,
            dead_url()
        ),
    );
    let _a = w.ask("ph-1", "touch /tmp/sg-notify-phone");
    let hit = tokio::task::spawn_blocking(move || ntfy.wait_hits(1, Duration::from_secs(10)))
        .await
        .expect("hits");
    let link = hit[0].body["actions"][0]["url"]
        .as_str()
        .expect("view url")
        .to_owned();
    let id = link.rsplit_once("#r=").expect("card id").1.to_owned();

    let client = w.client();
    support::process::wait_until("the dead channel failing", Duration::from_secs(15), || {
        (client.call("GET", "/readyz", None, None).json()["notify"]["ok"] == false).then_some(())
    });

    let d = chromedriver();
    // Not signed in: the link shows how to sign in, and no card or button.
    let anon_profile = tempfile::tempdir().expect("profile");
    let anon = browser(&d, anon_profile.path()).await;
    anon.set_window_size(390, 844).await.expect("phone");
    anon.goto(&link).await.expect("goto link");
    until(
        &anon,
        "signed-out panel",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;
    let card = js(
        &anon,
        "return !!document.getElementById('r-' + arguments[0])",
        vec![json!(id)],
    )
    .await;
    assert_eq!(card, json!(false), "a card shows without a session");
    anon.close().await.expect("close");

    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;
    let login = std::fs::read_to_string(w.link_file()).expect("login link");
    sign_in(&c, &login).await;
    c.set_window_size(390, 844).await.expect("phone");
    c.goto(&link).await.expect("goto notification link");
    until(
        &c,
        "the linked card open",
        "const r = document.getElementById('r-' + arguments[0]); \
         return !!r && r.querySelector(\"button[data-act='allow-once']\") !== null",
        vec![json!(id)],
    )
    .await;
    let text = js(
        &c,
        "return document.getElementById('r-' + arguments[0]).textContent",
        vec![json!(id)],
    )
    .await;
    assert!(text.as_str().unwrap().contains("sg-notify-phone"), "{text}");
    let banner = js(
        &c,
        "const b = document.getElementById('banner'); return b.hidden ? '' : b.textContent",
        vec![],
    )
    .await;
    assert!(
        banner.as_str().unwrap().starts_with(
            "Push notifications failing (decisions go on): dead-hook (webhook): connection failed"
        ),
        "{banner}"
    );
    let fits = js(
        &c,
        "return document.documentElement.scrollWidth <= window.innerWidth",
        vec![],
    )
    .await;
    shot(&c, "notify-card-phone.png").await;
    assert_eq!(fits, json!(true), "the card is wider than a phone");
    c.close().await.expect("close");
}
