//! The web prompt in real headless Chromium (Debian `chromium` + `chromium-driver`, driven
//! over WebDriver with fantoccini) against the real `serve` and real socket clients: sign in
//! with the one-time link, a request appears live, Allow once reaches the client, Deny with
//! a reason reaches the audit log, an expired card changes state, XSS payloads, bidi and
//! control characters stay inert visible text, keyboard shortcuts, history with the audit
//! check, logout. Screenshots at desktop and phone width go to target/web-screenshots/.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use fantoccini::Locator;
use serde_json::json;
use std::time::{Duration, Instant};
use support::browser::*;
use support::socket::*;
use support::web::*;

/// Keys act on a card only after it has been on screen unchanged this long.
const READ: Duration = Duration::from_millis(700);

/// Visible one-line fields whose placeholder is wider than the room inside them (measured in
/// the field's own font): `[]` when every placeholder fits.
const PLACEHOLDERS_CUT: &str = "const g = document.createElement('canvas').getContext('2d'); \
    return [...document.querySelectorAll('input[placeholder]')] \
      .filter(i => i.offsetParent !== null) \
      .map(i => { const s = getComputedStyle(i); g.font = s.font; \
        return { field: i.id || i.getAttribute('aria-label'), text: g.measureText(i.placeholder).width, \
                 room: i.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight) }; }) \
      .filter(x => x.text > x.room + 1);";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_prompt_in_chromium() {
    // Long enough for the steps below on a loaded machine; the expiry step waits it out.
    let mut w = Web::start(25_000);
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;

    // Signed out: the inbox says how to sign in.
    c.goto(&w.base).await.expect("goto");
    until(
        &c,
        "signed-out panel",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;

    // Sign in with the one-time link; the token leaves the address bar.
    let link = std::fs::read_to_string(w.link_file()).expect("link");
    c.goto(link.trim()).await.expect("goto link");
    assert_eq!(js(&c, "return location.hash", vec![]).await, json!(""));
    // No TOTP enrolled: the code field is not shown.
    let totp = js(
        &c,
        "return getComputedStyle(document.getElementById('totp-row')).display",
        vec![],
    )
    .await;
    assert_eq!(totp, json!("none"), "the TOTP field shows without TOTP");
    click(&c, "#signin").await;
    until_live(&c, "live inbox").await;
    // The link is used up: a second browser cannot use it.
    assert_eq!(
        w.login_with(link.trim().rsplit_once("#t=").expect("t").1)
            .status,
        401
    );

    // A request from a real socket client appears live; Allow once reaches the client.
    let a = w.ask("br-1", "touch /tmp/sg-web-allow");
    let ida = card_id(&c, "sg-web-allow").await;
    open_card(&c, &ida).await;
    click(&c, &format!("#r-{ida} button[data-act='allow-once']")).await;
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "allow-once");
    until(
        &c,
        "approved card",
        "return document.getElementById('r-' + arguments[0]).textContent.includes('APPROVED')",
        vec![json!(ida)],
    )
    .await;

    // Hostile text stays inert: script tags, attribute breakout, bidi override, ESC.
    let xss = "echo '<script>window.__pwned=1</script>' \"\\\"><img src=x onerror=window.__pwned=2>\" > /tmp/sg-web-xss\u{202e}txt.sh";
    let ctl = "touch /tmp/sg-web-ctl\u{1b}[31mred";
    // One at a time, so their deadlines are in this order whatever the load.
    let x = w.ask("br-xss", xss);
    let idx = card_id(&c, "sg-web-xss").await;
    let k = w.ask("br-ctl", ctl);
    let idk = card_id(&c, "sg-web-ctl").await;
    let n = w.ask("br-npm", "npm install --save left-pad@1.3.0");
    let _idn = card_id(&c, "left-pad").await;
    let p = w.ask("br-plain", "touch /tmp/sg-web-plain");
    let idp = card_id(&c, "sg-web-plain").await;
    open_card(&c, &idx).await;
    let cmd = js(
        &c,
        "return document.querySelector('#r-' + arguments[0] + ' pre.cmd').textContent",
        vec![json!(idx)],
    )
    .await;
    let cmd = cmd.as_str().expect("text");
    assert!(cmd.contains("<script>window.__pwned=1</script>"), "{cmd}");
    assert!(
        cmd.contains("\"><img src=x onerror=window.__pwned=2>"),
        "{cmd}"
    );
    assert!(
        cmd.contains("⟨U+202E⟩") && !cmd.contains('\u{202e}'),
        "bidi not made visible: {cmd}"
    );
    let inert = js(&c, "return [window.__pwned === undefined, document.querySelectorAll('img[src=\"x\"]').length, document.scripts.length, document.querySelectorAll('li.card script').length]", vec![]).await;
    assert_eq!(inert, json!([true, 0, 6, 0]), "payload became markup");
    open_card(&c, &idk).await;
    let ctl_text = js(
        &c,
        "return document.querySelector('#r-' + arguments[0] + ' pre.cmd').textContent",
        vec![json!(idk)],
    )
    .await;
    assert!(
        ctl_text.as_str().expect("t").contains("⟨ESC⟩"),
        "{ctl_text}"
    );
    // Unanalysable text offers no allow-always, nor a redirection (a grant could never cover
    // it, so the same command would keep asking); a plain write does.
    let always = "return document.querySelectorAll('#r-' + arguments[0] + ' button[data-act=allow-always]').length";
    assert_eq!(js(&c, always, vec![json!(idk)]).await, json!(0));
    // The key legend names A only while the selected request offers Allow always, and A asks
    // for confirmation: dismissing it stores nothing and leaves the request pending.
    let legend = "return !document.getElementById('key-always').hidden";
    assert_eq!(
        js(&c, legend, vec![]).await,
        json!(false),
        "A named for a request without allow-always"
    );
    open_card(&c, &idx).await;
    assert_eq!(js(&c, always, vec![json!(idx)]).await, json!(0));
    open_card(&c, &idp).await;
    assert_eq!(js(&c, always, vec![json!(idp)]).await, json!(1));
    let xcard = c
        .find(Locator::Css(&format!("#r-{idp}")))
        .await
        .expect("plain card");
    assert_eq!(
        js(&c, legend, vec![]).await,
        json!(true),
        "A not named where offered"
    );
    tokio::time::sleep(READ).await;
    xcard.send_keys("A").await.expect("A");
    let asked = c.get_alert_text().await.expect("A asks for confirmation");
    assert!(
        asked.contains("Allow always") && asked.contains("sg-web-plain"),
        "{asked}"
    );
    c.dismiss_alert().await.expect("dismiss");
    let still = js(
        &c,
        "return document.getElementById('r-' + arguments[0]).classList.contains('pending')",
        vec![json!(idp)],
    )
    .await;
    assert_eq!(still, json!(true), "a dismissed A decided the request");
    click(&c, &format!("#r-{idp} button[data-act='deny']")).await;
    assert_eq!(first_json(&p.join().expect("p"))["decision"], "deny");
    // Oldest deadline first.
    let order = js(&c, "return [...document.querySelectorAll('li.qrow.pending:not([hidden])')].sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top).map(n => n.getAttribute('data-id'))", vec![]).await;
    assert_eq!(order.as_array().expect("order")[0], json!(idx), "{order}");
    shot(&c, "inbox-desktop.png").await;
    c.set_window_size(390, 844).await.expect("phone");
    let phone_fits = js(
        &c,
        "return document.documentElement.scrollWidth <= window.innerWidth + 1",
        vec![],
    )
    .await;
    shot(&c, "inbox-phone.png").await;
    assert_eq!(phone_fits, json!(true), "page wider than a phone");
    let cut = js(&c, PLACEHOLDERS_CUT, vec![]).await;
    assert_eq!(cut, json!([]), "placeholders cut at phone width");
    c.set_window_size(1280, 1000).await.expect("desktop");

    // Deny with a reason: typed in the card, sent with the Deny button.
    open_card(&c, &idx).await;
    let reason = c
        .find(Locator::Css(&format!("#r-{idx} input.reason")))
        .await
        .expect("reason");
    reason
        .send_keys("looks like an injection attempt: a A d D j k")
        .await
        .expect("type");
    click(&c, &format!("#r-{idx} button[data-act='deny']")).await;
    assert_eq!(first_json(&x.join().expect("x"))["decision"], "deny");
    let audit = w.audit();
    assert!(
        audit.lines().any(|l| l.contains(&idx)
            && l.contains("looks like an injection attempt: a A d D j k")
            && l.contains("web:admin/")),
        "reason or approver missing from the audit log"
    );

    // Keyboard: open the control-character card, read it, D denies it.
    open_card(&c, &idk).await;
    let card = c
        .find(Locator::Css(&format!("#r-{idk}")))
        .await
        .expect("card");
    tokio::time::sleep(READ).await;
    card.send_keys("D").await.expect("key");
    assert_eq!(first_json(&k.join().expect("k"))["decision"], "deny");
    // The client hears the decision before the page has the guard's answer: wait for the
    // card to show it, then nothing else is selected.
    until(
        &c,
        "denied card",
        "return document.getElementById('r-' + arguments[0]).classList.contains('done')",
        vec![json!(idk)],
    )
    .await;
    // Nothing moves on by itself; j (past the 300 ms debounce) opens the npm one, and `a`
    // (once it was read) allows it.
    let sel = js(
        &c,
        "return document.querySelectorAll('li.card.selected').length",
        vec![],
    )
    .await;
    assert_eq!(sel, json!(0), "a decision selected the next request");
    tokio::time::sleep(READ).await;
    card.send_keys("j").await.expect("j");
    let sel = js(&c, "const s = document.querySelector('li.card.selected'); return s && s.textContent.includes('left-pad')", vec![]).await;
    let why = js(&c, "return [document.getElementById('key-note').textContent, document.activeElement && document.activeElement.outerHTML.slice(0, 200), [...document.querySelectorAll('li.qrow')].map(n => n.getAttribute('data-id') + ':' + n.className)]", vec![]).await;
    assert_eq!(sel, json!(true), "j opened no left-pad card: {why}");
    let selected = c
        .find(Locator::Css("li.card.selected"))
        .await
        .expect("selected");
    tokio::time::sleep(READ).await;
    selected.send_keys("a").await.expect("a");
    assert_eq!(first_json(&n.join().expect("n"))["decision"], "allow-once");

    // Every invisible or format character is marked, a plain newline raises no warning (it
    // shows; tests/web_history_browser.rs has the rest), and a lookalike program name's
    // character is named with its code point and script.
    let hid = "touch /tmp/sg-web-hid\u{3164}\u{2800}\u{ad}\u{34f}\u{180e}\u{2028}\u{fe0f}\u{e0041}\u{115f}\u{ffa0}x";
    let _h = w.ask("br-hid", hid);
    let idh = card_id(&c, "sg-web-hid").await;
    let _l = w.ask("br-look", "\u{0441}at /tmp/sg-web-look");
    let idl = card_id(&c, "sg-web-look").await;
    let _nl = w.ask("br-nl", "echo a\ntouch /tmp/sg-web-nl");
    let idn2 = card_id(&c, "sg-web-nl").await;
    open_card(&c, &idh).await;
    let text = js(
        &c,
        "return document.querySelector('#r-' + arguments[0] + ' pre.cmd').textContent",
        vec![json!(idh)],
    )
    .await;
    let text = text.as_str().expect("text");
    for m in [
        "U+3164", "U+2800", "U+00AD", "U+034F", "U+180E", "U+2028", "U+FE0F", "U+E0041", "U+115F",
        "U+FFA0",
    ] {
        assert!(text.contains(&format!("⟨{m}⟩")), "{m} not marked: {text}");
    }
    assert!(
        !text.contains(['\u{3164}', '\u{2800}', '\u{ad}', '\u{2028}']),
        "raw hidden characters: {text}"
    );
    // A plain newline is no hidden character (idn2 holds only newlines and tabs).
    for (id, want) in [(&idh, true), (&idn2, false), (&idl, false)] {
        open_card(&c, id).await;
        let warned = js(
            &c,
            "return !!document.querySelector('#r-' + arguments[0] + ' p.warn')",
            vec![json!(id)],
        )
        .await;
        assert_eq!(warned, json!(want), "the hidden-characters line of {id}");
    }
    let look = js(
        &c,
        "const u = document.querySelector('#r-' + arguments[0] + ' ul.confusables'); return u ? u.textContent : ''",
        vec![json!(idl)],
    )
    .await;
    assert!(
        look.as_str()
            .unwrap_or("")
            .contains("U+0441 CYRILLIC SMALL LETTER ES (Cyrillic) in `\u{0441}at`"),
        "lookalike not named: {look}"
    );

    // A long command collapses behind an expander; the card says when it was asked and
    // what Allow always would store; search, compact view and bulk deny.
    let long_cmd = format!(
        "touch {}",
        (0..400)
            .map(|i| format!("/tmp/sg-web-bulk-{i:04}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let b1 = w.ask("br-bulk1", &long_cmd);
    let idb1 = card_id(&c, "sg-web-bulk-0000").await;
    let b2 = w.ask("br-bulk2", "touch /tmp/sg-web-bulk-two");
    let idb2 = card_id(&c, "sg-web-bulk-two").await;
    open_card(&c, &idb1).await;
    let more = js(&c, "const d = document.querySelector('#r-' + arguments[0] + ' details.more-text summary'); return d ? d.textContent : ''", vec![json!(idb1)]).await;
    assert!(
        more.as_str().unwrap_or("").starts_with("Show all "),
        "{more}"
    );
    let height = js(
        &c,
        "return document.getElementById('r-' + arguments[0]).offsetHeight",
        vec![json!(idb1)],
    )
    .await;
    let parts = js(
        &c,
        "return [...document.getElementById('r-' + arguments[0]).querySelectorAll(':scope > *, .what > *, dl.kv > *')].map(n => n.className + ':' + n.offsetHeight).join(' ')",
        vec![json!(idb1)],
    )
    .await;
    assert!(
        height.as_f64().unwrap_or(1e9) < 1500.0,
        "card height {height}: {parts}"
    );
    open_card(&c, &idb2).await;
    let fields = js(&c, "const n = document.getElementById('r-' + arguments[0]); const prog = [...n.querySelectorAll('dt')].find(d => d.textContent === 'program'); return [!!n.querySelector('[data-field=asked]'), !!n.querySelector('[data-field=stores]'), !!prog && prog.nextElementSibling.textContent.includes('/touch')]", vec![json!(idb2)]).await;
    assert_eq!(
        fields,
        json!([true, true, true]),
        "asked at, stores, program"
    );
    let search = c.find(Locator::Css("#search")).await.expect("search");
    search.send_keys("sg-web-bulk").await.expect("type");
    until(
        &c,
        "search to leave the two bulk cards",
        "const v = [...document.querySelectorAll('li.qrow.pending')].filter(n => !n.hidden); return v.length === 2 && v.every(n => n.textContent.includes('sg-web-bulk'))",
        vec![],
    )
    .await;
    click(&c, "#compact").await;
    let kv = js(
        &c,
        "return getComputedStyle(document.querySelector('#r-' + arguments[0] + ' .reasons')).display",
        vec![json!(idb2)],
    )
    .await;
    assert_eq!(kv, json!("none"), "compact view still shows the details");
    click(&c, "#compact").await;
    for id in [&idb1, &idb2] {
        click(&c, &format!("#q-{id} input.pick")).await;
    }
    click(&c, "#bulk-deny").await;
    let asked = c.get_alert_text().await.expect("bulk deny asks first");
    assert!(asked.contains("Deny 2 selected"), "{asked}");
    c.accept_alert().await.expect("accept");
    assert_eq!(first_json(&b1.join().expect("b1"))["decision"], "deny");
    assert_eq!(first_json(&b2.join().expect("b2"))["decision"], "deny");
    search.clear().await.expect("clear");
    js(&c, "document.getElementById('search').dispatchEvent(new Event('input', {bubbles: true})); return true", vec![]).await;

    // Allow always says so, and what it stored, on the card (and in History below).
    let al = w.ask("br-always", "touch /tmp/sg-web-always");
    let idal = card_id(&c, "sg-web-always").await;
    open_card(&c, &idal).await;
    click(&c, &format!("#r-{idal} button[data-act='allow-always']")).await;
    assert_eq!(
        first_json(&al.join().expect("al"))["decision"],
        "allow-always"
    );
    until(
        &c,
        "the stored grant named on the card",
        "return document.querySelector('#r-' + arguments[0] + ' .card-status').textContent.includes('allowed ALWAYS: stored 1 allowlist entry: touch /tmp/sg-web-always')",
        vec![json!(idal)],
    )
    .await;

    // A `#r=ID` link (the log line's) selects and focuses that card; buttons name the command.
    // A request of its own, so its deadline is far off however slow the steps above were.
    let _li = w.ask("br-link", "touch /tmp/sg-web-link");
    let idl = card_id(&c, "sg-web-link").await;
    c.goto(&format!("{}/#r={idl}", w.base))
        .await
        .expect("goto #r=");
    until(
        &c,
        "the linked card selected",
        "const n = document.getElementById('r-' + arguments[0]); return !!n && n.classList.contains('selected') && document.activeElement === n",
        vec![json!(idl)],
    )
    .await;
    let label = js(
        &c,
        "return document.querySelector('#r-' + arguments[0] + ' button[data-act=deny]').getAttribute('aria-label')",
        vec![json!(idl)],
    )
    .await;
    assert!(
        label.as_str().unwrap_or("").starts_with("Deny: ")
            && label.as_str().unwrap_or("").contains("sg-web-link"),
        "{label}"
    );

    // Nobody answers: the card changes state when the deadline passes.
    let e = w.ask("br-exp", "touch /tmp/sg-web-expire");
    let ide = card_id(&c, "sg-web-expire").await;
    let start = Instant::now();
    let mut expired = false;
    while start.elapsed() < Duration::from_secs(40) && !expired {
        let t = js(
            &c,
            "const n = document.getElementById('q-' + arguments[0]); return n ? n.textContent : ''",
            vec![json!(ide)],
        )
        .await;
        expired = t.as_str().unwrap_or("").contains("EXPIRED");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(expired, "expired card did not change state");
    open_card(&c, &ide).await;
    let disabled = js(&c, "return [...document.querySelectorAll('#r-' + arguments[0] + ' button')].every(b => b.disabled)", vec![json!(ide)]).await;
    assert_eq!(disabled, json!(true));
    assert_eq!(first_json(&e.join().expect("e"))["decision"], "deny");

    // The guard restarts: the open tab finds its session gone and says so (no endless
    // "reconnecting…").
    w.restart();
    until(
        &c,
        "the page to say it is signed out after a restart",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;
    // Signed in again with a new link, History below works as before.
    let link = w.new_link();
    c.goto(&link).await.expect("goto new link");
    click(&c, "#signin").await;
    until_live(&c, "live inbox again").await;

    // History: who decided, why; filters; the audit chain check.
    c.goto(&format!("{}/history", w.base))
        .await
        .expect("history");
    until(
        &c,
        "history rows",
        "return document.querySelectorAll('li.row').length >= 5",
        vec![],
    )
    .await;
    let text = js(
        &c,
        "return document.getElementById('rows').textContent",
        vec![],
    )
    .await;
    let text = text.as_str().expect("t");
    assert!(
        text.contains("allowed ALWAYS: stored 1 allowlist entry: touch /tmp/sg-web-always"),
        "History does not say what Allow always stored: {text}"
    );
    assert!(
        text.contains("looks like an injection attempt")
            && text.contains("web:admin/")
            && text.contains("approval-timeout"),
        "{text}"
    );
    // Commands read as themselves, and every door has a source filter.
    let plain = js(&c, "return [...document.querySelectorAll('#rows pre.cmd')].every(p => !p.textContent.startsWith('exec '))", vec![]).await;
    assert_eq!(plain, json!(true), "an `exec ` prefix in History");
    let sources = js(
        &c,
        "return [...document.getElementById('f-source').options].map(o => o.value)",
        vec![],
    )
    .await;
    for s in ["node", "socket", "gateway", "plugin", "cli"] {
        assert!(
            sources.to_string().contains(&format!("\"{s}\"")),
            "{sources}"
        );
    }
    // A decision made now appears on top, fetched on its own: no reload of the whole list.
    let reloads = "return performance.getEntriesByType('resource').filter(r => r.name.includes('state=resolved')).length";
    let before = js(&c, reloads, vec![]).await;
    let other = w.login_new_link();
    let live = w.ask("br-live", "touch /tmp/sg-web-live");
    let e = w.wait_pending(&other, "br-live");
    w.decide(
        &other,
        e["id"].as_str().expect("id"),
        json!({"decision":"deny","hash":e["requestHash"],"reason":"live row"}),
    );
    assert_eq!(first_json(&live.join().expect("live"))["decision"], "deny");
    until(
        &c,
        "the new decision on top of History",
        "const r = document.querySelector('#rows li.row'); return !!r && r.textContent.includes('sg-web-live')",
        vec![],
    )
    .await;
    assert_eq!(
        js(&c, reloads, vec![]).await,
        before,
        "History reloaded everything for one event"
    );
    let f = c.find(Locator::Css("#f-text")).await.expect("filter");
    f.send_keys("left-pad").await.expect("type");
    until(
        &c,
        "filtered",
        "return document.querySelectorAll('li.row').length === 1",
        vec![],
    )
    .await;
    f.clear().await.expect("clear");
    js(&c, "document.getElementById('f-text').dispatchEvent(new Event('input', {bubbles: true})); return true", vec![]).await;
    click(&c, "#verify").await;
    until(
        &c,
        "chain verified",
        "return document.getElementById('verify-result').textContent.includes('Chain intact')",
        vec![],
    )
    .await;
    shot(&c, "history-desktop.png").await;
    c.set_window_size(390, 844).await.expect("phone");
    let cut = js(&c, PLACEHOLDERS_CUT, vec![]).await;
    assert_eq!(cut, json!([]), "History placeholders cut at phone width");
    shot(&c, "history-phone.png").await;
    c.set_window_size(1280, 1000).await.expect("desktop");

    // Logout: the page says so and the old session is dead.
    click(&c, "#logout").await;
    until(
        &c,
        "signed out",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;
    let s = c
        .execute_async(
            "const done = arguments[0]; fetch('/api/session').then(r => done(r.status));",
            vec![],
        )
        .await
        .expect("fetch");
    assert_eq!(s, json!(401));
    c.close().await.expect("close");
}
