//! The inbox in one process: submit, decide, deadlines, races, restart, binding, events.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::audit::{self, AuditLog, Verification};
use sanctum_guard::inbox::{Cancel, Inbox, InboxError, InboxEvent, State, StateFilter};
use sanctum_guard::policy::request::{DecidedBy, DecisionKind};
use std::time::{Duration, Instant};
use support::inbox::*;

fn open(dir: &std::path::Path) -> (Inbox, usize) {
    Inbox::open(&dir.join("inbox.db"), None).unwrap()
}

#[tokio::test]
async fn submit_then_human_approves() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, expired) = open(dir.path());
    assert_eq!(expired, 0);
    let req = exec_request("touch a");
    let ticket = inbox
        .submit(&req, &ask_verdict(ALL), now_ms() + 10_000)
        .await
        .unwrap();
    assert_eq!(ticket.request_hash.len(), 64);
    let pending = inbox.list(StateFilter::Pending).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, ticket.id);
    assert_eq!(pending[0].request, req);
    assert_eq!(pending[0].reasons()[0].code, "write");

    let id = ticket.id.clone();
    let waiter = tokio::spawn(ticket.wait());
    let r = inbox
        .decide(&id, human(DecisionKind::AllowOnce, "alice"), None)
        .await
        .unwrap();
    assert_eq!(r.state, State::Approved);
    let d = tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.kind, DecisionKind::AllowOnce);
    assert_eq!(d.by, DecidedBy::Human("alice".into()));
    let e = inbox.get(&id).unwrap().unwrap();
    assert_eq!(e.state, State::Approved);
    assert_eq!(e.decision.unwrap().kind, DecisionKind::AllowOnce);
    // A second decision is refused: the first one stands.
    let again = inbox
        .decide(&id, human(DecisionKind::Deny, "bob"), None)
        .await;
    assert!(
        matches!(
            again,
            Err(InboxError::AlreadyResolved {
                state: State::Approved,
                ..
            })
        ),
        "{again:?}"
    );
}

#[tokio::test]
async fn human_deny_gives_denied_state() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let t = inbox
        .submit(&exec_request("rm x"), &ask_verdict(ALL), now_ms() + 10_000)
        .await
        .unwrap();
    let mut d = human(DecisionKind::Deny, "alice");
    d.reason = Some("not now".into());
    inbox.decide(&t.id, d, None).await.unwrap();
    let id = t.id.clone();
    let got = t.wait().await;
    assert_eq!(got.kind, DecisionKind::Deny);
    assert_eq!(got.reason.as_deref(), Some("not now"));
    assert_eq!(inbox.get(&id).unwrap().unwrap().state, State::Denied);
}

#[tokio::test]
async fn deadline_answers_fallback_deny_without_anyone_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let start = Instant::now();
    let t = inbox
        .submit(&exec_request("touch b"), &ask_verdict(ALL), now_ms() + 300)
        .await
        .unwrap();
    let id = t.id.clone();
    drop(t); // nobody waits: the timer still resolves the row
    tokio::time::sleep(Duration::from_millis(600)).await;
    let e = inbox.get(&id).unwrap().unwrap();
    assert_eq!(e.state, State::Expired);
    let d = e.decision.unwrap();
    assert_eq!(d.kind, DecisionKind::Deny);
    assert_eq!(d.reason.as_deref(), Some("approval-timeout"));
    assert_eq!(d.by, DecidedBy::Fallback);

    let t = inbox
        .submit(&exec_request("touch c"), &ask_verdict(ALL), now_ms() + 300)
        .await
        .unwrap();
    let d = t.wait().await;
    assert_eq!(d.reason.as_deref(), Some("approval-timeout"));
    assert_eq!(d.by, DecidedBy::Fallback);
    assert!(start.elapsed() < Duration::from_secs(3));
    // A decision after the deadline is refused as expired.
    let late = inbox
        .decide(&id, human(DecisionKind::AllowOnce, "alice"), None)
        .await;
    assert!(
        matches!(
            late,
            Err(InboxError::AlreadyResolved {
                state: State::Expired,
                ..
            })
        ),
        "{late:?}"
    );
}

#[tokio::test]
async fn decision_past_deadline_before_timer_is_expired() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    // Deadline already past at submit: the timer fires at once, but a decision racing it
    // must never approve.
    let t = inbox
        .submit(
            &exec_request("touch d"),
            &ask_verdict(ALL),
            now_ms().saturating_sub(1),
        )
        .await
        .unwrap();
    let r = inbox
        .decide(&t.id, human(DecisionKind::AllowOnce, "alice"), None)
        .await;
    assert!(
        matches!(
            r,
            Err(InboxError::Expired(_))
                | Err(InboxError::AlreadyResolved {
                    state: State::Expired,
                    ..
                })
        ),
        "{r:?}"
    );
    let d = t.wait().await;
    assert_eq!(d.kind, DecisionKind::Deny);
    assert_eq!(d.reason.as_deref(), Some("approval-timeout"));
}

/// A human decision racing the deadline: exactly one resolution wins, the ticket gets that
/// one, and the row agrees with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_racing_deadline_first_write_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let mut outcomes = (0, 0);
    for i in 0..20 {
        let deadline = now_ms() + 50;
        let t = inbox
            .submit(
                &exec_request(&format!("touch r{i}")),
                &ask_verdict(ALL),
                deadline,
            )
            .await
            .unwrap();
        let id = t.id.clone();
        let left = deadline.saturating_sub(now_ms());
        tokio::time::sleep(Duration::from_millis(left)).await;
        let r = inbox
            .decide(&id, human(DecisionKind::AllowOnce, "alice"), None)
            .await;
        let got = t.wait().await;
        let row = inbox.get(&id).unwrap().unwrap();
        match r {
            Ok(res) => {
                outcomes.0 += 1;
                assert_eq!(res.state, State::Approved);
                assert_eq!(got.kind, DecisionKind::AllowOnce);
                assert_eq!(row.state, State::Approved);
            }
            Err(_) => {
                outcomes.1 += 1;
                assert_eq!(got.kind, DecisionKind::Deny);
                assert_eq!(got.reason.as_deref(), Some("approval-timeout"));
                assert_eq!(row.state, State::Expired);
            }
        }
        assert_eq!(row.decision.unwrap(), got);
    }
    assert_eq!(outcomes.0 + outcomes.1, 20);
}

#[tokio::test]
async fn pending_rows_expire_on_reopen_never_approved() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let (log, _) = AuditLog::open(&dir.path().join("audit.jsonl")).unwrap();
    {
        let (inbox, _) = Inbox::open(&db, Some(log.clone())).unwrap();
        for i in 0..3 {
            inbox
                .submit(
                    &exec_request(&format!("touch p{i}")),
                    &ask_verdict(ALL),
                    now_ms() + 60_000,
                )
                .await
                .unwrap();
        }
        // A second server on the same database is refused while the first one serves.
        assert!(matches!(Inbox::open(&db, None), Err(InboxError::Busy(_))));
    }
    let (inbox, expired) = Inbox::open(&db, Some(log)).unwrap();
    assert_eq!(expired, 3);
    let all = inbox.list(StateFilter::All).unwrap();
    assert_eq!(all.len(), 3);
    for e in all {
        assert_eq!(e.state, State::Expired);
        let d = e.decision.unwrap();
        assert_eq!(d.kind, DecisionKind::Deny);
        assert_eq!(d.reason.as_deref(), Some("guard-restart"));
    }
    // 3 pending + 3 decision records, one chain.
    assert_eq!(
        audit::verify(&dir.path().join("audit.jsonl")).unwrap(),
        Verification::Ok { records: 6 }
    );
}

#[tokio::test]
async fn decision_bound_to_request_hash() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let t = inbox
        .submit(
            &exec_request("touch h"),
            &ask_verdict(ALL),
            now_ms() + 10_000,
        )
        .await
        .unwrap();
    // The hash of a different request (what another card showed) is refused.
    let other = sanctum_guard::inbox::request_hash(&exec_request("touch other")).unwrap();
    let r = inbox
        .decide(&t.id, human(DecisionKind::AllowOnce, "alice"), Some(&other))
        .await;
    assert!(matches!(r, Err(InboxError::HashMismatch { .. })), "{r:?}");
    assert_eq!(inbox.get(&t.id).unwrap().unwrap().state, State::Pending);
    let hash = t.request_hash.clone();
    let r = inbox
        .decide(&t.id, human(DecisionKind::AllowOnce, "alice"), Some(&hash))
        .await
        .unwrap();
    assert_eq!(r.state, State::Approved);
}

#[tokio::test]
async fn decision_not_offered_is_refused_deny_always_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let offered = [DecisionKind::AllowOnce, DecisionKind::Deny];
    let t = inbox
        .submit(
            &exec_request("touch o"),
            &ask_verdict(&offered),
            now_ms() + 10_000,
        )
        .await
        .unwrap();
    let r = inbox
        .decide(&t.id, human(DecisionKind::AllowAlways, "alice"), None)
        .await;
    assert!(
        matches!(
            r,
            Err(InboxError::NotOffered {
                kind: DecisionKind::AllowAlways,
                ..
            })
        ),
        "{r:?}"
    );
    // OpenClaw's own allowedDecisions narrows the offer too.
    let mut req = exec_request("touch o2");
    req.openclaw.allowed_decisions = Some(vec![DecisionKind::Deny]);
    let t2 = inbox
        .submit(&req, &ask_verdict(ALL), now_ms() + 10_000)
        .await
        .unwrap();
    let r = inbox
        .decide(&t2.id, human(DecisionKind::AllowOnce, "alice"), None)
        .await;
    assert!(matches!(r, Err(InboxError::NotOffered { .. })), "{r:?}");
    let r = inbox
        .decide(&t2.id, human(DecisionKind::Deny, "alice"), None)
        .await
        .unwrap();
    assert_eq!(r.state, State::Denied);
    let r = inbox
        .decide("no-such-id", human(DecisionKind::Deny, "a"), None)
        .await;
    assert!(matches!(r, Err(InboxError::UnknownId(_))), "{r:?}");
}

#[tokio::test]
async fn events_added_resolved_expired() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let mut rx = inbox.subscribe();
    let t1 = inbox
        .submit(
            &exec_request("touch e1"),
            &ask_verdict(ALL),
            now_ms() + 10_000,
        )
        .await
        .unwrap();
    let t2 = inbox
        .submit(&exec_request("touch e2"), &ask_verdict(ALL), now_ms() + 200)
        .await
        .unwrap();
    let t3 = inbox
        .submit(
            &exec_request("touch e3"),
            &ask_verdict(ALL),
            now_ms() + 10_000,
        )
        .await
        .unwrap();
    inbox
        .decide(&t1.id, human(DecisionKind::AllowOnce, "alice"), None)
        .await
        .unwrap();
    let gone = inbox.cancel(&t3.id, Cancel::ClientGone).unwrap().unwrap();
    assert_eq!(gone.state, State::Expired);
    assert_eq!(gone.decision.reason.as_deref(), Some("client-gone"));
    assert!(inbox.cancel(&t3.id, Cancel::ClientGone).unwrap().is_none());
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let ev = tokio::time::timeout(Duration::from_secs(3), rx.recv())
            .await
            .expect("event in time")
            .unwrap();
        seen.push(ev);
    }
    let added: Vec<&str> = seen
        .iter()
        .filter_map(|e| match e {
            InboxEvent::Added(en) => Some(en.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(added, [t1.id.as_str(), t2.id.as_str(), t3.id.as_str()]);
    assert!(seen.iter().any(
        |e| matches!(e, InboxEvent::Resolved(r) if r.id == t1.id && r.state == State::Approved)
    ));
    assert!(
        seen.iter().any(|e| matches!(e, InboxEvent::Expired(r) if r.id == t2.id && r.decision.reason.as_deref() == Some("approval-timeout"))),
        "{seen:?}"
    );
    // Exactly one event per resolution, even when the poller races this process's own write.
    assert!(
        tokio::time::timeout(Duration::from_millis(400), rx.recv())
            .await
            .is_err(),
        "a duplicate event"
    );
    assert!(seen
        .iter()
        .any(|e| matches!(e, InboxEvent::Expired(r) if r.id == t3.id)));
    assert_eq!(t3.wait().await.reason.as_deref(), Some("client-gone"));
}

#[tokio::test]
async fn resolved_elsewhere_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = open(dir.path());
    let t = inbox
        .submit(
            &exec_request("touch re"),
            &ask_verdict(ALL),
            now_ms() + 10_000,
        )
        .await
        .unwrap();
    let r = inbox
        .cancel(&t.id, Cancel::ResolvedElsewhere("gateway".into()))
        .unwrap()
        .unwrap();
    assert_eq!(r.state, State::ResolvedElsewhere);
    let d = t.wait().await;
    assert_eq!(d.kind, DecisionKind::Deny);
    assert!(d.reason.unwrap().contains("gateway"));
}

#[test]
fn database_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state/inbox.db");
    let _ = Inbox::open(&db, None).unwrap();
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dmode = std::fs::metadata(db.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dmode, 0o700);
    for ext in ["inbox.db-wal", "inbox.db-shm"] {
        let p = dir.path().join("state").join(ext);
        if p.exists() {
            let m = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(m & 0o077, 0, "{ext} mode {m:o}");
        }
    }
}

/// A database created before the `cancelled` state existed (its CHECK refused it) is
/// migrated on open, rows kept, and a requester-gone cancel then works and shows.
#[tokio::test]
async fn an_old_database_is_migrated_and_requester_gone_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE requests (id TEXT PRIMARY KEY, request_json TEXT NOT NULL,
               verdict_json TEXT NOT NULL, request_hash TEXT NOT NULL, created_ms INTEGER NOT NULL,
               deadline_ms INTEGER NOT NULL, state TEXT NOT NULL CHECK (state IN
               ('pending','approved','denied','expired','resolved-elsewhere')),
               decision_json TEXT, resolved_ms INTEGER);
             CREATE INDEX requests_state ON requests(state, created_ms);",
        )
        .unwrap();
    }
    let (inbox, _) = open(dir.path());
    let ticket = inbox
        .submit(
            &exec_request("touch a"),
            &ask_verdict(ALL),
            now_ms() + 10_000,
        )
        .await
        .unwrap();
    let id = ticket.id.clone();
    let r = inbox.cancel(&id, Cancel::RequesterGone).unwrap().unwrap();
    assert_eq!(r.state, State::Cancelled);
    assert_eq!(r.decision.kind, DecisionKind::Deny);
    assert_eq!(r.decision.reason.as_deref(), Some("requester-gone"));
    let d = ticket.wait().await;
    assert_eq!(d.reason.as_deref(), Some("requester-gone"));
    let e = inbox.get(&id).unwrap().unwrap();
    let line = e.list_line(now_ms());
    assert!(line.contains("cancelled: requester-gone"), "{line}");
    assert!(
        inbox
            .decide(&id, human(DecisionKind::AllowOnce, "late"), None)
            .await
            .is_err(),
        "a cancelled request cannot be approved"
    );
    // A pending entry shows its countdown; a resolved one does not.
    let t2 = inbox
        .submit(
            &exec_request("touch b"),
            &ask_verdict(ALL),
            now_ms() + 9_500,
        )
        .await
        .unwrap();
    let p = inbox.get(&t2.id).unwrap().unwrap();
    assert!(
        p.list_line(now_ms()).contains("pending     9s"),
        "{}",
        p.list_line(now_ms())
    );
}
