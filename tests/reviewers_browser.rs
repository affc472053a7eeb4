//! Two-person approval in real headless Chromium: two reviewers, each signed in with their
//! own login link in their own browser, and a viewer in a third. One approval leaves the
//! request pending and both pages show "approved by alice (1 of 2)" (the other page live,
//! from the event stream); the viewer's card has no decision buttons and its vote is
//! refused; the second reviewer's approval releases the request to the agent.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use support::browser::*;
use support::reviewers::{add, two_person_guard};
use support::socket::first_json;

/// The text of the approvals line on the open card of entry `id`, once it contains `want`.
async fn approvals_line(c: &fantoccini::Client, id: &str, want: &str) -> String {
    until(
        c,
        want,
        "const n = document.querySelector('#r-' + arguments[0] + ' [data-field=approvals]'); \
         return !!n && n.textContent.includes(arguments[1])",
        vec![json!(id), json!(want)],
    )
    .await;
    js(
        c,
        "return document.querySelector('#r-' + arguments[0] + ' [data-field=approvals]').textContent",
        vec![json!(id)],
    )
    .await
    .as_str()
    .expect("text")
    .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reviewers_in_two_browsers_release_a_request_together() {
    let (web, _policy) = two_person_guard();
    let state = web.world.guard_state.clone();
    let links = [
        add(&state, "alice", "approver", &[]),
        add(&state, "bob", "approver", &[]),
        add(&state, "val", "viewer", &[]),
    ];
    let d = chromedriver();
    let profiles: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("profile"))
        .collect();
    let mut pages = Vec::new();
    for (p, link) in profiles.iter().zip(&links) {
        let c = browser(&d, p.path()).await;
        sign_in(&c, link).await;
        pages.push(c);
    }
    let [alice, bob, val] = [&pages[0], &pages[1], &pages[2]];
    let who = js(
        bob,
        "return document.getElementById('identity').textContent",
        vec![],
    )
    .await;
    assert!(
        who.as_str()
            .is_some_and(|t| t.starts_with("Signed in as web:bob/") && t.ends_with("(approver)")),
        "{who}"
    );

    let asked = web.ask("rvb-1", "touch /tmp/sg-rvb-1");
    let id = card_id(alice, "sg-rvb-1").await;
    for c in [alice, bob, val] {
        open_card(c, &id).await;
    }
    assert!(
        approvals_line(alice, &id, "needs 2")
            .await
            .contains("none yet"),
        "the card says two are needed before anyone approved"
    );

    // The viewer sees the card, with no decision buttons; a vote sent anyway is refused.
    let buttons = js(
        val,
        "return document.querySelectorAll('#r-' + arguments[0] + ' .actions button').length",
        vec![json!(id)],
    )
    .await;
    assert_eq!(buttons, json!(0));
    let note = js(
        val,
        "return document.querySelector('#r-' + arguments[0] + ' [data-field=viewer]').textContent",
        vec![json!(id)],
    )
    .await;
    assert!(
        note.as_str().is_some_and(|t| t.contains("viewer")),
        "{note}"
    );
    let hash = js(
        val,
        "return document.querySelector('#r-' + arguments[0] + ' [data-field=hash]').textContent",
        vec![json!(id)],
    )
    .await;
    let refused: Value = val
        .execute_async(
            "const [id, h, done] = arguments; SG.api('POST', '/api/requests/' + id + '/decision', \
             {decision: 'allow-once', hash: h}).then(r => done([r.status, r.data]));",
            vec![json!(id), hash],
        )
        .await
        .expect("page api");
    assert_eq!(refused[0], 403, "{refused}");

    // Alice approves: the request stays pending, and both reviewers' pages say who approved.
    click(alice, &format!("#r-{id} button[data-act='allow-once']")).await;
    let mine = approvals_line(alice, &id, "(1 of 2)").await;
    assert_eq!(mine, "approved by alice (1 of 2)");
    let live = approvals_line(bob, &id, "(1 of 2)").await;
    assert_eq!(live, "approved by alice (1 of 2)", "bob's page, live");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!asked.is_finished(), "one approval released the request");
    shot(bob, "reviewers-1-of-2").await;

    // Bob's approval releases it.
    click(bob, &format!("#r-{id} button[data-act='allow-once']")).await;
    let reply = first_json(
        &tokio::task::spawn_blocking(move || asked.join().expect("reply"))
            .await
            .expect("join"),
    );
    assert_eq!(reply["decision"], "allow-once", "{reply}");
    until(
        alice,
        "alice's card shows the approval",
        "const n = document.getElementById('r-' + arguments[0]); return !!n && n.classList.contains('done')",
        vec![json!(id)],
    )
    .await;
    for c in pages {
        c.close().await.expect("close");
    }
}
