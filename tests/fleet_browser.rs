//! The fleet's review desk in real headless Chromium: three real `serve` processes on one real
//! PostgreSQL server; a reviewer signed in on guard B's page sees, live, the requests of the
//! agents behind guards A and C (each row naming its agent and guard), narrows the list to
//! one agent, and approves on B a request that guard C then answers to its agent; History
//! links that decision to B's page of its audit record, which vouches for it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::path::PathBuf;
use support::browser::*;
use support::postgres::Postgres;
use support::socket::*;
use support::web::*;

fn guard(pg: &Postgres, name: &str) -> Web {
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    Web::start_configured(30_000, &store, &[], "http")
}

/// [`guard`] restarted on its port with `[web] public_url` naming it, so the fleet's pages
/// link its decisions to its audit records.
fn published(pg: &Postgres, name: &str) -> Web {
    let mut w = guard(pg, name);
    let store = format!("[store]\nurl = \"{}\"\nguard_id = \"{name}\"\n", pg.url());
    w.world.write_config(&format!(
        "[deadlines]\nrequest_ms = 30000\n{store}[web]\npublic_url = \"{}\"\n",
        w.base
    ));
    w.restart();
    w
}

/// A gated `request` frame from agent `agent` on `w`'s socket, on a thread: its reply.
fn ask_as(w: &Web, agent: &str, id: &str, cmd: &str) -> std::thread::JoinHandle<String> {
    let sock: PathBuf = w.world.socket();
    let line = request_line(TOKEN, id, cmd)
        .replace("\"agentId\":\"main\"", &format!("\"agentId\":\"{agent}\""))
        .replace("agent:main:main", &format!("agent:{agent}:main"));
    std::thread::spawn(move || raw_exchange(&sock, line.as_bytes(), false))
}

/// Whether a shown queue row contains the text.
const ROW_SHOWN: &str = "return [...document.querySelectorAll('li.qrow:not([hidden])')]\
    .some(n => n.textContent.includes(arguments[0]))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_page_for_the_whole_fleet() {
    let pg = Postgres::start();
    let a = guard(&pg, "guard-a");
    let b = published(&pg, "guard-b");
    let c = guard(&pg, "guard-c");
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let br = browser(&d, profile.path()).await;
    let link = std::fs::read_to_string(b.link_file()).expect("link");
    sign_in(&br, &link).await;

    // Asked on A and C after B's page is open: both arrive live on B's page.
    let alpha = ask_as(&a, "alpha", "fb-alpha", "touch /tmp/sg-fleet-alpha");
    let gamma = ask_as(&c, "gamma", "fb-gamma", "touch /tmp/sg-fleet-gamma");
    let ida = card_id(&br, "sg-fleet-alpha").await;
    let idg = card_id(&br, "sg-fleet-gamma").await;
    let row = |id: &str| format!("return document.getElementById('q-{id}').textContent");
    let ra = js(&br, &row(&ida), vec![]).await;
    let rg = js(&br, &row(&idg), vec![]).await;
    assert!(ra.as_str().unwrap().contains("alpha @ guard-a"), "{ra}");
    assert!(rg.as_str().unwrap().contains("gamma @ guard-c"), "{rg}");
    shot(&br, "fleet-inbox.png").await;

    // Narrowed to agent gamma: alpha's row goes, gamma's stays (and the guard agrees).
    js(
        &br,
        "const f = document.getElementById('agent-filter'); f.value = 'gamma'; \
         f.dispatchEvent(new Event('input'))",
        vec![],
    )
    .await;
    until(
        &br,
        "alpha hidden",
        &format!(
            "{}; return !shown",
            ROW_SHOWN.replace("return ", "const shown = ")
        ),
        vec![json!("sg-fleet-alpha")],
    )
    .await;
    until(&br, "gamma shown", ROW_SHOWN, vec![json!("sg-fleet-gamma")]).await;
    let lb = b.login_new_link();
    let r = b.call(
        "GET",
        "/api/requests?state=pending&agent=gamma",
        Some(&lb),
        None,
    );
    let listed = r.json()["requests"].as_array().cloned().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["guard"], "guard-c");

    // Approved on B's page: guard C answers its agent.
    open_card(&br, &idg).await;
    click(&br, &format!("#r-{idg} button[data-act='allow-once']")).await;
    assert_eq!(first_json(&gamma.join().unwrap())["decision"], "allow-once");
    // History on B names where that decision is recorded: B's audit log, the record's seq,
    // as a link to B's page of that record (B published its address).
    let line = b
        .audit()
        .lines()
        .find(|l| l.contains(&format!("\"id\":\"{idg}\",")) && l.contains("\"state\""))
        .map(str::to_owned)
        .expect("B's record of the decision");
    let seq = serde_json::from_str::<serde_json::Value>(&line).expect("record")["seq"].clone();
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(line.as_bytes()))
    };
    br.goto(&format!("{}/history", b.base))
        .await
        .expect("history");
    let want = format!("audit record #{seq} on guard-b");
    until(
        &br,
        "the decision's audit reference",
        "const r = document.querySelector(`li[data-id='${arguments[0]}'] [data-field='audit-ref']`); \
         return !!r && r.textContent === arguments[1]",
        vec![json!(idg), json!(want)],
    )
    .await;
    let href = format!("{}/audit?seq={seq}&hash={hash}", b.base);
    until(
        &br,
        "the reference is a link to the deciding guard's record",
        "const a = document.querySelector(`li[data-id='${arguments[0]}'] [data-field='audit-ref'] a`); \
         return !!a && a.href === arguments[1]",
        vec![json!(idg), json!(href)],
    )
    .await;
    shot(&br, "fleet-history-audit-ref.png").await;
    // The link opens B's page of the record, which says the log holds it as the row says.
    br.goto(&href).await.expect("audit page");
    until(
        &br,
        "the record vouched for",
        "return document.getElementById('verdict').getAttribute('data-ok') === 'true'",
        vec![],
    )
    .await;
    let shown = js(
        &br,
        "return document.getElementById('hash').textContent",
        vec![],
    )
    .await;
    assert_eq!(shown, json!(hash));
    shot(&br, "fleet-audit-record.png").await;
    br.goto(&b.base).await.expect("inbox");
    // Alpha is still pending, untouched; deny it from B's API to end the test quickly.
    let e = b.wait_pending(&lb, "fb-alpha");
    let r = b.decide(
        &lb,
        e["id"].as_str().unwrap(),
        json!({"decision":"deny","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_json(&alpha.join().unwrap())["decision"], "deny");

    // The database goes away: the page says so (new requests are being denied), and stops
    // saying so once it is back.
    pg.stop();
    br.refresh().await.expect("reload");
    let banner = "const b = document.getElementById('banner'); \
        return !b.hidden && b.textContent.includes('store-unavailable')";
    until(&br, "the store-unavailable banner", banner, vec![]).await;
    shot(&br, "fleet-store-unavailable.png").await;
    pg.start_again();
    until(
        &br,
        "the banner gone",
        "return document.getElementById('banner').hidden",
        vec![],
    )
    .await;
    br.close().await.expect("close");
}
