//! The web prompt in real headless Chromium against the real `serve`: a write
//! with plain newlines and tabs raises no hidden-character warning, while a zero-width space
//! or a carriage return does; and History searches and pages on the server, so a decision
//! older than the newest 1,000 is found by its search box, with the total shown and
//! next/previous paging.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use fantoccini::Locator;
use serde_json::json;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;
use support::browser::*;
use support::socket::*;
use support::web::*;

/// Requests `tag-<i>` for `ids`, each held open on its own connection until it expires.
fn hold(sock: &std::path::Path, ids: std::ops::Range<usize>, tag: &str) -> Vec<UnixStream> {
    ids.map(|i| {
        let mut s = UnixStream::connect(sock).expect("connect");
        let line = request_line(
            TOKEN,
            &format!("{tag}-{i}"),
            &format!("touch /tmp/{tag}-{i}"),
        );
        s.write_all(line.as_bytes()).expect("frame");
        s
    })
    .collect()
}

/// How many resolved decisions the API counts.
fn resolved_total(w: &Web, login: &Login) -> u64 {
    let r = w.call(
        "GET",
        "/api/requests?state=resolved&limit=1",
        Some(login),
        None,
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["total"].as_u64().expect("total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newlines_are_not_hidden_and_history_searches_every_decision() {
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;

    // 1. Plain newlines and tabs in a write are text, not hidden characters; a zero-width
    // space and a carriage return still warn.
    let w = Web::start(60_000);
    sign_in(&c, &std::fs::read_to_string(w.link_file()).expect("link")).await;
    let _nl = w.ask(
        "hb-nl",
        "cat > /tmp/sg-hb-nl.txt <<'EOF'\nfirst line\n\tindented line\nEOF",
    );
    let _zw = w.ask("hb-zw", "echo sg-hb-zw\u{200b}x > /tmp/sg-hb-zw");
    let _cr = w.ask("hb-cr", "echo sg-hb-cr\rx > /tmp/sg-hb-cr");
    let nl = card_id(&c, "sg-hb-nl").await;
    let zw = card_id(&c, "sg-hb-zw").await;
    let cr = card_id(&c, "sg-hb-cr").await;
    let mut warned = Vec::new();
    for id in [&nl, &zw, &cr] {
        open_card(&c, id).await;
        warned.push(
            js(
                &c,
                "return !!document.querySelector('#r-' + arguments[0] + ' p.warn')",
                vec![json!(id)],
            )
            .await,
        );
    }
    assert_eq!(
        warned,
        vec![json!(false), json!(true), json!(true)],
        "hidden-character warnings for [newlines and tabs, U+200B, CR]"
    );
    open_card(&c, &zw).await;
    let zw_text = js(
        &c,
        "return document.querySelector('#r-' + arguments[0] + ' pre.cmd').textContent",
        vec![json!(zw)],
    )
    .await;
    assert!(
        zw_text.as_str().unwrap_or("").contains("⟨U+200B⟩"),
        "{zw_text}"
    );
    drop(w);

    // 2. History with more than 1,000 decisions: the oldest is found by searching.
    let world = World::new(NEW, TOKEN, &[]);
    let cfg = world.write_config(
        "[socket]\nmax_connections = 2000\nmax_connections_per_uid = 2000\n\
         rate_per_sec = 10000000\nrate_burst = 10000000\n[deadlines]\nrequest_ms = 1500\n",
    );
    let serve = Serve::start(
        &world,
        &[],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--web-listen",
            "127.0.0.1:0",
        ],
    );
    let port = serve.listen_addr("web prompt").port();
    let w = Web {
        world,
        serve,
        port,
        base: format!("http://127.0.0.1:{port}"),
    };
    let api = w.login();
    // The needle first, alone: it is the oldest decision, beyond the newest 1,000.
    let needle = hold(&w.world.socket(), 0..1, "sg-hb-needle");
    wait_until("the needle expired", Duration::from_secs(30), || {
        (resolved_total(&w, &api) >= 1).then_some(())
    });
    drop(needle);
    const MORE: usize = 1_050;
    for batch in (0..MORE).step_by(350) {
        let held = hold(&w.world.socket(), batch..batch + 350, "sg-hb-fill");
        wait_until("a batch expired", Duration::from_secs(60), || {
            (resolved_total(&w, &api) > (batch + 350) as u64).then_some(())
        });
        drop(held);
    }
    let total = resolved_total(&w, &api);
    assert!(total > 1_000, "{total}");

    sign_in(&c, &w.new_link()).await;
    c.goto(&format!("{}/history", w.base))
        .await
        .expect("history");
    until(
        &c,
        "the first page and the total",
        "const t = document.getElementById('count'); return !!t && t.textContent.includes('of ' + arguments[0]) \
         && document.querySelectorAll('#rows li.row').length === 50",
        vec![json!(total)],
    )
    .await;
    let first_page = js(
        &c,
        "return document.getElementById('rows').textContent",
        vec![],
    )
    .await;
    assert!(
        !first_page.as_str().unwrap_or("").contains("sg-hb-needle"),
        "the needle is not among the newest"
    );
    // Paging: older, then newer again.
    click(&c, "#next").await;
    until(
        &c,
        "the second page",
        "return document.getElementById('count').textContent.startsWith('Showing 51–100 of ')",
        vec![],
    )
    .await;
    click(&c, "#prev").await;
    until(
        &c,
        "the first page again",
        "return document.getElementById('count').textContent.startsWith('Showing 1–50 of ')",
        vec![],
    )
    .await;
    // The search goes to the server: the oldest decision, 1,000+ back, is found.
    let f = c.find(Locator::Css("#f-text")).await.expect("search box");
    f.send_keys("sg-hb-needle").await.expect("type");
    until(
        &c,
        "the needle found",
        "const rows = document.querySelectorAll('#rows li.row'); \
         return rows.length === 1 && rows[0].textContent.includes('sg-hb-needle-0') \
         && document.getElementById('count').textContent.includes('of 1')",
        vec![],
    )
    .await;
    let searched = js(
        &c,
        "return performance.getEntriesByType('resource').some(r => r.name.includes('q=sg-hb-needle'))",
        vec![],
    )
    .await;
    assert_eq!(searched, json!(true), "the search did not ask the server");
    shot(&c, "history-search.png").await;
    c.close().await.expect("close");
}
