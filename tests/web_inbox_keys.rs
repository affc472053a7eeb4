//! Nothing is approved unseen, in real headless Chromium against the real
//! `serve` and real socket clients, with real key events (WebDriver actions on whatever has
//! the focus) and a real double click. Each row of the attack table is one way a reviewer's
//! keys reached a request they never saw: a key right after the card appeared, a search that
//! hid it, a card that changed under the key, focus elsewhere, Allow kept disabled by the
//! card, a burst of presses, and auto-advance after a decision. The inbox must never open a
//! request by itself, and the `A` and bulk-deny confirmations name the commands.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use fantoccini::actions::{InputSource, KeyAction, KeyActions, MouseActions, PointerAction};
use fantoccini::{Client, Locator};
use serde_json::json;
use std::time::{Duration, Instant};
use support::browser::*;
use support::socket::*;
use support::web::*;

/// Presses `keys` on whatever has the focus, `gap` apart: real key events, as a person types.
async fn press(c: &Client, keys: &str, gap: Duration) {
    let mut seq = KeyActions::new("keyboard".into());
    for (i, k) in keys.chars().enumerate() {
        if i > 0 {
            seq = seq.pause(gap);
        }
        seq = seq
            .then(KeyAction::Down { value: k })
            .then(KeyAction::Up { value: k });
    }
    // A key that opens a confirmation leaves the actions call with an open dialog.
    let _ = c.perform_actions(seq).await;
}

/// How many decisions people have made, as the API says (a request whose test client gave
/// up waiting is cancelled by the fallback, and is not counted).
fn human_decisions(w: &Web, me: &Login) -> u64 {
    let r = w.call(
        "GET",
        "/api/requests?state=resolved&by=human&limit=1",
        Some(me),
        None,
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["total"].as_u64().expect("total")
}

/// One attack: a request, what happens to its card, the keys, and whether a decision may
/// follow (only the controls decide).
struct Case {
    attack: &'static str,
    cmd: &'static str,
    /// Open the card (click its row) first; an arrival is never opened for the reviewer.
    open: bool,
    wait_before_ms: u64,
    /// Script run on the page after that wait (arguments[0]: the inbox id), "" for none.
    then: &'static str,
    wait_after_ms: u64,
    keys: &'static str,
    gap_ms: u64,
    decided: bool,
}

const SEARCH_ELSEWHERE: &str = "const s = document.getElementById('search'); \
    s.value = 'sg-key-nothing-matches'; s.dispatchEvent(new Event('input', {bubbles: true})); \
    return true";
const DISABLE_ALLOW: &str = "document.querySelector('#r-' + arguments[0] + \
    ' button[data-act=allow-once]').disabled = true; return true";
const BLUR: &str = "document.activeElement.blur(); return true";
const CHANGE: &str = "document.querySelector('#r-' + arguments[0] + ' .what') \
    .appendChild(document.createElement('span')).textContent = ' (more)'; return true";

/// Pushes the card's content far below its pane's visible part (the pane scrolls on its own).
const AWAY: &str =
    "document.querySelector('#r-' + arguments[0] + ' .card-head').style.marginBottom = '4000px'; \
    return true";

const CASES: &[Case] = &[
    Case {
        attack: "a request arriving in an empty inbox, a 0.34 s later",
        cmd: "touch /tmp/sg-key-arrival",
        open: false,
        wait_before_ms: 340,
        then: "",
        wait_after_ms: 0,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "a at once after opening the card (not read yet)",
        cmd: "touch /tmp/sg-key-fresh",
        open: true,
        wait_before_ms: 0,
        then: "",
        wait_after_ms: 0,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "D at once after opening the card",
        cmd: "touch /tmp/sg-key-deny-fresh",
        open: true,
        wait_before_ms: 0,
        then: "",
        wait_after_ms: 0,
        keys: "D",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "a search hid the open card (as `rm -rf build dist` was), then a",
        cmd: "touch /tmp/sg-key-build /tmp/sg-key-dist",
        open: true,
        wait_before_ms: 600,
        then: SEARCH_ELSEWHERE,
        wait_after_ms: 100,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "the card keeps Allow disabled (something that runs is not shown)",
        cmd: "touch /tmp/sg-key-gated",
        open: true,
        wait_before_ms: 0,
        then: DISABLE_ALLOW,
        wait_after_ms: 700,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "the focus left the card",
        cmd: "touch /tmp/sg-key-blur",
        open: true,
        wait_before_ms: 600,
        then: BLUR,
        wait_after_ms: 0,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "the card's command is out of view (it moved away, then stayed)",
        cmd: "touch /tmp/sg-key-away",
        open: true,
        wait_before_ms: 0,
        then: AWAY,
        wait_after_ms: 700,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "the card changed just before the key",
        cmd: "touch /tmp/sg-key-changed",
        open: true,
        wait_before_ms: 600,
        then: CHANGE,
        wait_after_ms: 50,
        keys: "a",
        gap_ms: 0,
        decided: false,
    },
    Case {
        attack: "a too early, then a again 200 ms later (debounced)",
        cmd: "touch /tmp/sg-key-twice",
        open: true,
        wait_before_ms: 300,
        then: "",
        wait_after_ms: 0,
        keys: "aa",
        gap_ms: 200,
        decided: false,
    },
    Case {
        attack: "k opens another card, a 150 ms later",
        cmd: "touch /tmp/sg-key-move",
        open: true,
        wait_before_ms: 600,
        then: "",
        wait_after_ms: 0,
        keys: "ka",
        gap_ms: 150,
        decided: false,
    },
    Case {
        attack: "control: a 600 ms after opening decides",
        cmd: "touch /tmp/sg-key-read",
        open: true,
        wait_before_ms: 600,
        then: "",
        wait_after_ms: 0,
        keys: "a",
        gap_ms: 0,
        decided: true,
    },
    Case {
        attack: "after a decision, four a 150 ms apart (auto-advance)",
        cmd: "touch /tmp/sg-key-burst",
        open: true,
        wait_before_ms: 600,
        then: "",
        wait_after_ms: 0,
        keys: "aaaaa",
        gap_ms: 150,
        decided: true,
    },
    Case {
        attack: "after a decision, four a 350 ms apart (auto-advance)",
        cmd: "touch /tmp/sg-key-slow",
        open: true,
        wait_before_ms: 600,
        then: "",
        wait_after_ms: 0,
        keys: "aaaaa",
        gap_ms: 350,
        decided: true,
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_act_only_on_a_card_seen_focused_and_steady() {
    let w = Web::start(300_000);
    let me = w.login();
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;
    c.goto(&w.new_link()).await.expect("goto link");
    click(&c, "#signin").await;
    until_live(&c, "live inbox").await;

    let mut clients = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let before = human_decisions(&w, &me);
        clients.push(w.ask(&format!("key-{i}"), case.cmd));
        let needle = case.cmd.rsplit('/').next().expect("name");
        let id = card_id(&c, needle).await;
        let opened = "return !!document.querySelector('li.card') || !!document.querySelector('li.qrow.open')";
        if case.open {
            click(&c, &format!("#q-{id}")).await;
        } else {
            assert_eq!(
                js(&c, opened, vec![]).await,
                json!(false),
                "{}: an arrival was opened",
                case.attack
            );
        }
        tokio::time::sleep(Duration::from_millis(case.wait_before_ms)).await;
        if !case.then.is_empty() {
            js(&c, case.then, vec![json!(id)]).await;
        }
        tokio::time::sleep(Duration::from_millis(case.wait_after_ms)).await;
        press(&c, case.keys, Duration::from_millis(case.gap_ms)).await;
        // Whatever the keys did has reached the guard well within this.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let after = human_decisions(&w, &me);
        let want = before + u64::from(case.decided);
        assert_eq!(
            after,
            want,
            "{}: {} decisions made, expected {want}",
            case.attack,
            after - before
        );
        if case.decided {
            // The decided card stays open with its outcome; nothing else is selected.
            let state = js(
                &c,
                "return [document.querySelectorAll('li.card.selected').length, \
                document.getElementById('r-' + arguments[0]).textContent.includes('APPROVED')]",
                vec![json!(id)],
            )
            .await;
            assert_eq!(state, json!([0, true]), "{}", case.attack);
        }
        // The search of one case does not hide the next one's request.
        js(
            &c,
            "const s = document.getElementById('search'); if (s.value) { s.value = ''; \
            s.dispatchEvent(new Event('input', {bubbles: true})); } return true",
            vec![],
        )
        .await;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    // `A` asks first and the question names the command; dismissing it decides nothing.
    let _al = w.ask("key-always", "touch /tmp/sg-key-always");
    let ida = card_id(&c, "sg-key-always").await;
    click(&c, &format!("#q-{ida}")).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let before = human_decisions(&w, &me);
    press(&c, "A", Duration::ZERO).await;
    let asked = c.get_alert_text().await.expect("A asks for confirmation");
    assert!(
        asked.contains("Allow always") && asked.contains("touch /tmp/sg-key-always"),
        "{asked}"
    );
    c.dismiss_alert().await.expect("dismiss");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(human_decisions(&w, &me), before, "a dismissed A decided");

    // Bulk deny names what it denies.
    let b1 = w.ask("key-bulk1", "touch /tmp/sg-key-bulk-one");
    let b2 = w.ask("key-bulk2", "touch /tmp/sg-key-bulk-two");
    for n in ["sg-key-bulk-one", "sg-key-bulk-two"] {
        let id = card_id(&c, n).await;
        click(&c, &format!("#q-{id} input.pick")).await;
    }
    click(&c, "#bulk-deny").await;
    let asked = c.get_alert_text().await.expect("bulk deny asks first");
    assert!(
        asked.contains("Deny 2 selected")
            && asked.contains("touch /tmp/sg-key-bulk-one")
            && asked.contains("touch /tmp/sg-key-bulk-two"),
        "{asked}"
    );
    c.accept_alert().await.expect("accept");
    assert_eq!(first_json(&b1.join().expect("b1"))["decision"], "deny");
    assert_eq!(first_json(&b2.join().expect("b2"))["decision"], "deny");
    shot(&c, "inbox-keys.png").await;
    c.close().await.expect("close");
    drop(clients);
}

/// A real double click on Allow once: one decision reaches the guard and the card says
/// APPROVED (what the guard recorded), never "NOT APPLIED".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_click_decides_once_and_shows_what_the_guard_recorded() {
    let w = Web::start(120_000);
    let d = chromedriver();
    let profile = tempfile::tempdir().expect("profile");
    let c = browser(&d, profile.path()).await;
    c.goto(&w.new_link()).await.expect("goto link");
    click(&c, "#signin").await;
    until_live(&c, "live inbox").await;
    let a = w.ask("dbl-1", "touch /tmp/sg-dbl-click");
    let id = card_id(&c, "sg-dbl-click").await;
    click(&c, &format!("#q-{id}")).await;
    let btn = c
        .find(Locator::Css(&format!(
            "#r-{id} button[data-act='allow-once']"
        )))
        .await
        .expect("allow button");
    let dbl = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement {
            element: btn,
            duration: None,
            x: 0.0,
            y: 0.0,
        })
        .then(PointerAction::Down {
            button: fantoccini::actions::MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: fantoccini::actions::MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Down {
            button: fantoccini::actions::MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: fantoccini::actions::MOUSE_BUTTON_LEFT,
        });
    c.perform_actions(dbl).await.expect("double click");
    assert_eq!(first_json(&a.join().expect("a"))["decision"], "allow-once");
    until(
        &c,
        "the card to say what the guard recorded",
        "const n = document.getElementById('r-' + arguments[0]); \
         return !!n && n.querySelector('.badge.state').textContent === 'APPROVED' && \
         n.querySelector('.card-status').textContent.startsWith('APPROVED by')",
        vec![json!(id)],
    )
    .await;
    // Let a second answer (if one had been sent) arrive, then check nothing contradicts.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(1500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = js(
        &c,
        "const n = document.getElementById('r-' + arguments[0]); \
         return [n.textContent.includes('NOT APPLIED'), \
           performance.getEntriesByType('resource').filter(r => r.name.endsWith('/decision')).length]",
        vec![json!(id)],
    )
    .await;
    assert_eq!(
        seen,
        json!([false, 1]),
        "a contradicting message, or two decisions sent"
    );
    let decisions = w
        .audit()
        .lines()
        .filter(|l| l.contains(&id) && l.contains("allow-once"))
        .count();
    assert!(decisions >= 1, "no decision in the audit log");
    c.close().await.expect("close");
}
