//! The inbox tab at 10,000 pending requests, in real headless Chromium against the real
//! `serve`: 10,000 `request` frames held open on its approvals socket, the tab signed in with
//! a login link shows the first page of cards and the true total, opens History and comes
//! back, and receives live events (decisions made elsewhere, clients that go away, new
//! requests). The queue is virtualised (only the rows near the viewport exist), every request
//! is reachable by paging and by the guard's search, and a decision by click or key shows
//! its outcome within 200 ms. Then the tab's renderer process is measured from /proc (RSS,
//! Pss) with its JS heap and DOM size, and must stay under 300 MB.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use support::browser::*;
use support::socket::*;
use support::web::*;

const PENDING: usize = 10_000;
/// The tab's budget. Asserted on the renderer's RSS: all the kernel holds resident for it,
/// Chromium's code shared with the other processes included (Pss and the private pages are
/// smaller), so the strictest of the three; the JS heap alone would miss the DOM, layout and
/// paint of the cards (a few MB of heap against some 200 MB resident).
const TAB_BUDGET_KIB: u64 = 300 * 1024;
/// A decision at 10,000 pending, from the click or key to the card showing the outcome.
const DECIDE_BUDGET_MS: f64 = 200.0;
/// The page's elements: a virtualised queue holds a few dozen rows whatever the total.
const DOM_BUDGET: u64 = 3000;

/// Opens one socket connection per command, each with its `request` frame, kept open (a
/// client that goes away cancels its request).
fn hold(sock: &std::path::Path, ids: std::ops::Range<usize>, tag: &str) -> Vec<UnixStream> {
    ids.map(|i| {
        let t0 = Instant::now();
        let mut s = loop {
            match UnixStream::connect(sock) {
                Ok(s) => break s,
                // The listen backlog is full for a moment while serve catches up.
                Err(e) => {
                    assert!(t0.elapsed() < Duration::from_secs(30), "connect {i}: {e}");
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        };
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

/// The pending list's first entries and the true total, as the API gives them.
fn pending_page(w: &Web, login: &Login, limit: usize) -> (Vec<Value>, u64) {
    let r = w.call(
        "GET",
        &format!("/api/requests?state=pending&limit={limit}"),
        Some(login),
        None,
    );
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    (
        v["requests"].as_array().cloned().unwrap_or_default(),
        v["total"].as_u64().unwrap_or(0),
    )
}

/// The largest renderer of this test's Chromium and the JS heap, printed; the renderer's
/// figures. Chromium does not say which renderer draws which tab, but the largest one bounds
/// the tab's: the inbox tab is the only page, the others are spares and Chromium's own UI.
async fn measure(c: &fantoccini::Client, when: &str) -> RendererMem {
    let all = renderers();
    let largest = *all
        .iter()
        .max_by_key(|r| r.rss_kib)
        .unwrap_or_else(|| panic!("no Chromium renderer process found ({when})"));
    let heap = js(
        c,
        "return [performance.memory.usedJSHeapSize, performance.memory.totalJSHeapSize, \
         document.getElementsByTagName('*').length]",
        vec![],
    )
    .await;
    let mb = |k: Option<u64>| {
        k.map(|k| format!("{:.1} MB", k as f64 / 1024.0))
            .unwrap_or_else(|| "unavailable".into())
    };
    eprintln!(
        "web_scale_browser: {when}: largest renderer pid {} RSS {}, Pss {}, private {} ; JS heap \
         used {:.1} MB of {:.1} MB ; {} DOM elements ; all renderers (pid, RSS MB, kind): {:?}",
        largest.pid,
        mb(Some(largest.rss_kib)),
        mb(largest.pss_kib),
        mb(largest.private_kib),
        heap[0].as_f64().unwrap_or(0.0) / 1048576.0,
        heap[1].as_f64().unwrap_or(0.0) / 1048576.0,
        heap[2],
        all.iter()
            .map(|r| (r.pid, r.rss_kib / 1024, if r.ui { "ui" } else { "page" }))
            .collect::<Vec<_>>()
    );
    largest
}

/// Types `text` into the search box (the guard searches every pending request).
async fn search(c: &fantoccini::Client, text: &str) {
    js(
        c,
        "const s = document.getElementById('search'); s.value = arguments[0]; \
         s.dispatchEvent(new Event('input', {bubbles: true})); return true",
        vec![json!(text)],
    )
    .await;
}

enum Decide {
    Click,
    Key,
}

/// Opens the request showing `needle`, reads it, decides Allow once by a real click or the
/// `a` key, and returns the milliseconds from that input event to the card showing APPROVED
/// (both taken by the page's own clock).
async fn decide_timed(c: &fantoccini::Client, needle: &str, how: Decide) -> f64 {
    search(c, needle).await;
    let find = "const r = [...document.querySelectorAll('li.qrow.pending:not([hidden])')] \
        .find(n => n.querySelector('.qcmd').textContent.endsWith('/tmp/' + arguments[0]));";
    until(
        c,
        needle,
        &format!("{find} return !!r;"),
        vec![json!(needle)],
    )
    .await;
    let id = js(
        c,
        &format!("{find} return r.getAttribute('data-id');"),
        vec![json!(needle)],
    )
    .await;
    let id = id.as_str().expect("id").to_owned();
    click(c, &format!("#q-{id}")).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    js(
        c,
        "const n = document.getElementById('r-' + arguments[0]); window.__t = {}; \
         const on = (e) => { if (!window.__t.input) window.__t.input = performance.now(); }; \
         document.addEventListener('click', on, true); document.addEventListener('keydown', on, true); \
         new MutationObserver((_, mo) => { if (n.querySelector('.badge.state').textContent === 'APPROVED') { \
           window.__t.done = performance.now(); mo.disconnect(); } }) \
           .observe(n, {subtree: true, childList: true, characterData: true}); return true",
        vec![json!(id)],
    )
    .await;
    match how {
        Decide::Click => click(c, &format!("#r-{id} button[data-act='allow-once']")).await,
        Decide::Key => {
            use fantoccini::actions::{InputSource, KeyAction, KeyActions};
            let a = KeyActions::new("keyboard".into())
                .then(KeyAction::Down { value: 'a' })
                .then(KeyAction::Up { value: 'a' });
            c.perform_actions(a).await.expect("a");
        }
    }
    until(
        c,
        "the outcome on the card",
        "return !!(window.__t && window.__t.done)",
        vec![],
    )
    .await;
    let t = js(c, "return window.__t.done - window.__t.input", vec![]).await;
    search(c, "").await;
    t.as_f64().expect("ms")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_tab_at_10000_pending_stays_under_300_mb() {
    raise_nofile();
    let world = World::new(NEW, TOKEN, &[]);
    let port = free_port();
    // Room for 10,000 waiting clients of one peer, no rate limit in the way of filling, and
    // deadlines beyond the test.
    let cfg = world.write_config(
        "[socket]\nmax_connections = 12000\nmax_connections_per_uid = 12000\n\
         rate_per_sec = 10000000\nrate_burst = 10000000\n[deadlines]\nrequest_ms = 900000\n",
    );
    let listen = format!("127.0.0.1:{port}");
    let serve = Serve::start(
        &world,
        &[],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--web-listen",
            &listen,
        ],
    );
    let w = Web {
        world,
        serve,
        port,
        base: format!("http://{listen}"),
    };
    let api = w.login();

    let t0 = Instant::now();
    let mut held = hold(&w.world.socket(), 0..PENDING, "sg-scale");
    let mut slow = 0;
    wait_until("10,000 pending", Duration::from_secs(600), || {
        // While serve judges the flood on two shared cores, an answer may take longer than
        // the client's 20 s: counted and printed, then asked again.
        let r = w.call(
            "GET",
            "/api/requests?state=pending&limit=1",
            Some(&api),
            None,
        );
        if r.status != 200 {
            slow += 1;
            return None;
        }
        (r.json()["total"].as_u64().unwrap_or(0) as usize >= PENDING).then_some(())
    });
    eprintln!(
        "web_scale_browser: {PENDING} pending in {:.1} s ({slow} list requests unanswered meanwhile)",
        t0.elapsed().as_secs_f64()
    );
    let (first, total) = pending_page(&w, &api, 500);
    assert_eq!(total as usize, PENDING);

    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    // Precise figures for performance.memory (without it Chromium rounds them).
    let c = browser_with(&d, profile.path(), &["--enable-precise-memory-info"]).await;
    c.goto(&w.new_link()).await.expect("goto link");
    measure(&c, "the sign-in page (for comparison)").await;
    click(&c, "#signin").await;
    until_live(&c, "live inbox").await;
    // The first page of cards and the true total, not the page's length.
    let shows_total = "return document.querySelectorAll('li.qrow.pending').length > 0 && \
        document.getElementById('more-text').textContent.includes('of ' + arguments[0] + ' pending')";
    until(
        &c,
        "10,000 pending shown",
        shows_total,
        vec![json!(PENDING)],
    )
    .await;
    let shown = js(
        &c,
        "return [document.querySelectorAll('li.qrow.pending:not([hidden])').length, \
         document.getElementById('more-text').textContent]",
        vec![],
    )
    .await;
    eprintln!("web_scale_browser: the tab shows {shown}");
    assert!(shown[0].as_u64().unwrap_or(0) > 0, "no cards: {shown}");
    // The badge and the title count every pending request, not the cards of the page.
    let counted = "return [document.getElementById('pending-count').textContent, document.title]";
    let count = js(&c, counted, vec![]).await;
    assert_eq!(count[0], json!(PENDING.to_string()), "{count}");
    assert!(
        count[1]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!("({PENDING})"))),
        "{count}"
    );
    let loaded = measure(&c, "10,000 pending loaded").await;

    // History, then back to the inbox.
    c.goto(&format!("{}/history", w.base))
        .await
        .expect("history");
    until(
        &c,
        "History",
        "return !document.getElementById('history').hidden",
        vec![],
    )
    .await;
    c.back().await.expect("back");
    until(&c, "the inbox again", shows_total, vec![json!(PENDING)]).await;
    until_live(&c, "live again").await;

    // Live events while the tab is open: 20 decisions made elsewhere, 10 clients that go away,
    // 10 new requests.
    let decided: Vec<String> = first
        .iter()
        .take(20)
        .map(|e| {
            let id = e["id"].as_str().expect("id").to_owned();
            let r = w.decide(
                &api,
                &id,
                json!({"decision": "deny", "hash": e["requestHash"], "reason": "scale test"}),
            );
            assert_eq!(r.status, 200, "{r:?}");
            id
        })
        .collect();
    let gone_cmds: Vec<String> = (100..110).map(|i| format!("sg-scale-{i}")).collect();
    for s in held.drain(100..110) {
        drop(s);
    }
    let _added = hold(&w.world.socket(), 0..10, "sg-live-add");
    js(&c, "window.scrollTo(0, 0); return true", vec![]).await;
    let done_by =
        "return arguments[0].every(id => { const n = document.getElementById('q-' + id); \
        return !!n && !n.classList.contains('pending'); })";
    until(&c, "decided cards", done_by, vec![json!(decided)]).await;
    // The cancelled ones are some 100 rows down: scrolled past, their rows are made (and
    // recycled again), each showing its outcome.
    let gone_done = "const want = arguments[0]; return (async () => { const q = document.getElementById('queue'); const seen = new Set(); \
        const top = q.getBoundingClientRect().top + window.scrollY; \
        for (let y = 0; y < 400 * 34; y += 400) { window.scrollTo(0, top + y); \
          await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); \
          for (const n of document.querySelectorAll('li.qrow.done:not([hidden]) .qcmd')) seen.add(n.textContent); } \
        window.scrollTo(0, 0); \
        return want.every(t => seen.has('touch /tmp/' + t)); })();";
    until(&c, "cancelled cards", gone_done, vec![json!(gone_cmds)]).await;
    js(&c, "window.scrollTo(0, 0); return true", vec![]).await;
    // 20 decided and 10 gone among the shown cards, 10 new: the count follows.
    let live_total = (PENDING - 20 - 10 + 10).to_string();
    until(
        &c,
        "the live count",
        "return document.getElementById('pending-count').textContent === arguments[0]",
        vec![json!(live_total)],
    )
    .await;
    // New requests land beyond the first page: the guard's search finds them.
    search(&c, "sg-live-add").await;
    until(
        &c,
        "live-added requests found by search",
        "return [...document.querySelectorAll('li.qrow.pending:not([hidden])')].filter(n => n.textContent.includes('sg-live-add')).length === 10",
        vec![],
    )
    .await;
    // And so does one of the last of the 10,000.
    search(&c, "sg-scale-9998").await;
    until(
        &c,
        "the 9,999th request found by search",
        "const r = [...document.querySelectorAll('li.qrow.pending:not([hidden])')]; \
         return r.length === 1 && r[0].textContent.includes('/tmp/sg-scale-9998')",
        vec![],
    )
    .await;
    search(&c, "").await;
    until(
        &c,
        "the full queue again",
        shows_total,
        vec![json!(live_total)],
    )
    .await;
    // Paging reaches every page: the next one starts at 1,001.
    click(&c, "#next-btn").await;
    until(
        &c,
        "the second page",
        "return document.getElementById('more-text').textContent.startsWith('Showing 1001–2000 of ')",
        vec![],
    )
    .await;
    click(&c, "#prev-btn").await;
    until(
        &c,
        "the first page again",
        "return document.getElementById('more-text').textContent.startsWith('Showing 1–')",
        vec![],
    )
    .await;
    // Scrolled through the whole page of 1,000, the page holds only the rows near the
    // viewport.
    js(
        &c,
        "return new Promise(async (done) => { for (let y = 0; y < 34 * 1000; y += 3000) { window.scrollTo(0, y); \
         await new Promise(r => requestAnimationFrame(r)); } window.scrollTo(0, 0); done(true); })",
        vec![],
    )
    .await;

    // Deciding at 10,000 pending: a real click on Allow once, then the `a` key.
    let click_ms = decide_timed(&c, "sg-scale-300", Decide::Click).await;
    let key_ms = decide_timed(&c, "sg-scale-301", Decide::Key).await;
    eprintln!(
        "web_scale_browser: decided at {PENDING} pending: click {click_ms:.0} ms, key {key_ms:.0} ms (budget {DECIDE_BUDGET_MS} ms)"
    );

    // Let the tab settle (countdowns tick every 250 ms) before the last figure.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let settled = measure(
        &c,
        "after History, live events, search, paging and decisions",
    )
    .await;
    shot(&c, "inbox-10000-pending.png").await;
    let dom = js(
        &c,
        "return document.getElementsByTagName('*').length",
        vec![],
    )
    .await;
    assert!(
        dom.as_u64().unwrap_or(u64::MAX) < DOM_BUDGET,
        "{dom} elements: the queue is not virtualised"
    );
    for (what, ms) in [("click", click_ms), ("key", key_ms)] {
        assert!(
            ms <= DECIDE_BUDGET_MS,
            "a decision by {what} took {ms:.0} ms at {PENDING} pending"
        );
    }

    for (when, m) in [("loaded", loaded), ("settled", settled)] {
        assert!(
            m.rss_kib < TAB_BUDGET_KIB,
            "the largest renderer (the tab's or above it) holds {} KiB resident ({when}), over the 300 MB budget",
            m.rss_kib
        );
    }
    drop(held);
}
