//! Bounded grants in real headless Chromium against the real `serve`: a card shows the exact
//! prefix a grant will store (narrowed to what was asked), "Allow + grant" makes it, a later
//! request of that shape runs with no prompt, and Revoke on the Grants page makes the next
//! one ask again. Screenshots go to target/web-screenshots/.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::browser::*;
use support::socket::*;
use support::web::*;

fn ask(w: &Web, id: &str, command: &str, cwd: &Path) -> std::thread::JoinHandle<String> {
    let sock = w.world.socket();
    let l = json!({"type":"request","token":TOKEN,"id":id,
        "request":{"command":command,"cwd":cwd,"agentId":"main","sessionKey":"agent:main:main",
                   "security":"allowlist","ask":"on-miss"}})
    .to_string()
        + "\n";
    std::thread::spawn(move || raw_exchange(&sock, l.as_bytes(), false))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_grant_is_made_on_the_card_and_revoked_on_the_grants_page() {
    let w = Web::start(60_000);
    let ws = w.world.oc_state.join("workspace");
    let d = chromedriver();
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&d, profile.path()).await;
    let link = std::fs::read_to_string(w.link_file()).unwrap();
    sign_in(&c, &link).await;

    let h = ask(&w, "gb1", "make test --keep-going", &ws);
    let id = card_id(&c, "make test --keep-going").await;
    open_card(&c, &id).await;
    // Open "Allow + grant…" and choose the prefix scope: the card shows the pattern it will store.
    click(&c, &format!("#r-{id} details.bounded > summary")).await;
    js(&c, "const s = document.querySelector('#r-' + arguments[0] + ' select.grant-scope'); s.value = 'prefix'; \
            s.dispatchEvent(new Event('change')); return true", vec![json!(id)]).await;
    let shown = js(&c, "return document.querySelector('#r-' + arguments[0] + ' [data-field=grant-pattern]').textContent", vec![json!(id)]).await;
    assert_eq!(shown, json!("make test *"));
    let wh = js(&c, "return document.querySelector('#r-' + arguments[0] + ' [data-field=grant-where]').textContent", vec![json!(id)]).await;
    assert!(wh.as_str().unwrap().contains(ws.to_str().unwrap()), "{wh}");
    shot(&c, "grants-card.png").await;
    click(&c, &format!("#r-{id} button[data-act=allow-grant]")).await;
    let reply = first_json(
        &tokio::task::spawn_blocking(move || h.join().unwrap())
            .await
            .unwrap(),
    );
    assert_eq!(reply["decision"], "allow-once", "{reply}");

    // A later request of that shape: no prompt.
    let t = Instant::now();
    let h = ask(&w, "gb2", "make test -j2", &ws);
    let reply = first_json(
        &tokio::task::spawn_blocking(move || h.join().unwrap())
            .await
            .unwrap(),
    );
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    assert!(t.elapsed() < Duration::from_secs(3));

    // The Grants page lists it; Revoke ends it at once.
    c.goto(&format!("{}/grants", w.base)).await.unwrap();
    until(&c, "the grant listed", "return [...document.querySelectorAll('#rows li')].some(n => n.textContent.includes('make test *'))", vec![]).await;
    let from = js(
        &c,
        "return document.querySelector('#rows li [data-field=from]').textContent",
        vec![],
    )
    .await;
    assert_eq!(
        from,
        json!(id),
        "the grant links the request it was made on"
    );
    shot(&c, "grants-page.png").await;
    click(&c, "#rows li button[data-grant]").await;
    until(&c, "the list empty", "return document.querySelectorAll('#rows li').length === 0 && !document.getElementById('empty').hidden", vec![]).await;

    // The next request of that shape waits for a person again.
    let login = w.login_new_link();
    let h = ask(&w, "gb3", "make test -j2", &ws);
    let e = tokio::task::block_in_place(|| w.wait_pending(&login, "gb3"));
    let r = w.decide(
        &login,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let reply = first_json(
        &tokio::task::spawn_blocking(move || h.join().unwrap())
            .await
            .unwrap(),
    );
    assert_eq!(reply["decision"], "deny");
    c.close().await.unwrap();
}
