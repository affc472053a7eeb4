//! The inbox's layout (compact view, the queue beside the open card), in real headless Chromium
//! against the real `serve`: compact view keeps the command (shell text or argv) and its cwd
//! and offers Allow always only in the full card; on a phone (390×844) the first Allow button
//! of an opened request is on the first screen; a 20-pending desktop inbox (1280×800) shows at
//! least 6 requests without scrolling beside the open card. Geometry is measured with
//! getBoundingClientRect against innerHeight; screenshots go to target/web-screenshots/.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::Client;
use serde_json::json;
use std::time::Duration;
use support::browser::*;
use support::socket::*;
use support::web::*;

async fn signed_in(w: &Web, d: &Driver, profile: &std::path::Path) -> Client {
    let c = browser(d, profile).await;
    sign_in(&c, &w.new_link()).await;
    c
}

/// [what is shown of the open card]: the visible text of its command block, whether a
/// visible element says its cwd, and whether an Allow always button is visible.
const SHOWN: &str = "const n = document.getElementById('r-' + arguments[0]); \
    const vis = (e) => !!e && e.offsetParent !== null && e.getBoundingClientRect().height > 0; \
    const what = [...n.querySelectorAll('.what pre.cmd, .what ol.argv')].filter(vis).map(e => e.innerText).join(' '); \
    const cwd = [...n.querySelectorAll('dd')].some(e => vis(e) && e.textContent === '/usr'); \
    const always = [...n.querySelectorAll('button[data-act=allow-always]')].some(vis); \
    return [what, cwd, always];";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_view_keeps_command_and_cwd_and_allow_always_only_in_the_full_card() {
    let w = Web::start(120_000);
    let me = w.login();
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = signed_in(&w, &d, profile.path()).await;
    // An argv request (socket `exec`, no shell text) and a shell-text one.
    let sock = w.world.socket();
    let rj =
        json!({"command": ["touch", "/tmp/sg-compact-argv"], "rawCommand": null, "cwd": "/usr",
        "timeoutMs": 120_000, "needsScreenRecording": false, "agentId": "main",
        "sessionKey": "agent:main:main", "approvalDecision": null})
        .to_string();
    let _argv = std::thread::spawn(move || send_exec(&sock, TOKEN, &rj));
    let _shell = w.ask("compact-shell", "touch /tmp/sg-compact-shell");
    let ida = card_id(&c, "sg-compact-argv").await;
    let ids = card_id(&c, "sg-compact-shell").await;
    click(&c, "#compact").await;
    for (id, what) in [(&ida, "argv"), (&ids, "shell text")] {
        click(&c, &format!("#q-{id}")).await;
        let shown = js(&c, SHOWN, vec![json!(id)]).await;
        let text = shown[0].as_str().unwrap_or("");
        assert!(
            text.contains("touch") && text.contains("/tmp/sg-compact-"),
            "compact view hides the {what} command: {shown}"
        );
        assert_eq!(
            shown[1],
            json!(true),
            "compact view hides the cwd ({what}): {shown}"
        );
        assert_eq!(
            shown[2],
            json!(false),
            "compact view offers Allow always ({what})"
        );
    }
    shot(&c, "inbox-compact.png").await;
    // `A` has no button to go through in compact view: it stores nothing.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let before = w.pending(&me).len();
    let a = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: 'A' })
        .then(KeyAction::Up { value: 'A' });
    let _ = c.perform_actions(a).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        c.get_alert_text().await.is_err(),
        "A asked to store a grant in compact view"
    );
    assert_eq!(w.pending(&me).len(), before, "A decided in compact view");
    // The full card offers it where the request does.
    click(&c, "#compact").await;
    let shown = js(&c, SHOWN, vec![json!(ids)]).await;
    assert_eq!(
        shown[2],
        json!(true),
        "the full card lost Allow always: {shown}"
    );
    c.close().await.expect("close");
}

/// How many queue rows lie wholly inside the viewport, the page's scroll offset, and the
/// open card's Allow once button's top and bottom against innerHeight.
const GEOMETRY: &str = "const h = window.innerHeight; \
    const rows = [...document.querySelectorAll('li.qrow:not([hidden])')].filter(n => { \
      const r = n.getBoundingClientRect(); return r.top >= 0 && r.bottom <= h; }).length; \
    const b = document.querySelector('li.card button[data-act=allow-once]'); \
    const r = b ? b.getBoundingClientRect() : null; \
    return {rows, scrollY: window.scrollY, innerHeight: h, allowTop: r && r.top, allowBottom: r && r.bottom, \
      wide: document.documentElement.scrollWidth > window.innerWidth + 1};";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_shows_the_first_allow_and_desktop_shows_six_requests_without_scrolling() {
    let w = Web::start(300_000);
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = signed_in(&w, &d, profile.path()).await;
    let mut clients = Vec::new();
    for i in 0..20 {
        clients.push(w.ask(&format!("lay-{i}"), &format!("touch /tmp/sg-layout-{i:02}")));
        // One at a time, so the deadlines keep this order.
        card_id(&c, &format!("sg-layout-{i:02}")).await;
    }

    // Desktop, 1280×800: the dense queue beside the open card.
    c.set_window_size(1280, 800).await.expect("desktop");
    js(&c, "window.scrollTo(0, 0); return true", vec![]).await;
    let first = card_id(&c, "sg-layout-00").await;
    click(&c, &format!("#q-{first}")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let g = js(&c, GEOMETRY, vec![]).await;
    eprintln!("web_inbox_layout: desktop 1280x800 with 20 pending: {g}");
    shot(&c, "inbox-desktop-20-pending.png").await;
    assert_eq!(g["scrollY"], json!(0), "{g}");
    assert!(
        g["rows"].as_u64().unwrap_or(0) >= 6,
        "fewer than 6 requests on the first screen: {g}"
    );

    // Phone, 390×844: a fresh page; the first request opened; its Allow on the first screen.
    c.set_window_size(390, 844).await.expect("phone");
    c.refresh().await.expect("reload");
    until_live(&c, "live inbox on the phone").await;
    let first = card_id(&c, "sg-layout-00").await;
    js(&c, "window.scrollTo(0, 0); return true", vec![]).await;
    c.find(fantoccini::Locator::Css(&format!("#q-{first}")))
        .await
        .expect("row")
        .click()
        .await
        .expect("tap");
    until(
        &c,
        "the card open",
        "return !!document.querySelector('li.card')",
        vec![],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let g = js(&c, GEOMETRY, vec![]).await;
    eprintln!("web_inbox_layout: phone 390x844: {g}");
    shot(&c, "inbox-phone-first-allow.png").await;
    assert_eq!(g["scrollY"], json!(0), "the page scrolled: {g}");
    assert_eq!(g["wide"], json!(false), "page wider than a phone: {g}");
    let (top, bottom) = (
        g["allowTop"].as_f64().unwrap_or(-1.0),
        g["allowBottom"].as_f64().unwrap_or(1e9),
    );
    assert!(
        top >= 0.0 && bottom <= g["innerHeight"].as_f64().unwrap_or(0.0),
        "the first Allow is not on the phone's first screen: {g}"
    );
    c.close().await.expect("close");
    drop(clients);
}
