//! Every event against records the guard wrote before events were typed: `testdata/
//! golden.jsonl` holds one record of each shape, captured from the real socket, node and
//! inbox paths (the integration tests' logs) at the commit before this module existed.
use super::*;
use serde_json::Value;

const GOLDEN: &str = include_str!("testdata/golden.jsonl");

fn golden() -> Vec<Value> {
    GOLDEN
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("golden record"))
        .collect()
}

/// Fields whose values are the guard's request, verdict, decision, run outcome and
/// integrity types (unchanged by typing the events; their shape varies per record).
const TYPED: &[&str] = &["request", "verdict", "decision", "outcome", "integrity"];

/// Whether `mine` has the shape of `want`: the same keys at every level, the same JSON
/// types (a null on either side matches anything: an absent optional value).
fn same_shape(want: &Value, mine: &Value, at: &str) -> Result<(), String> {
    match (want, mine) {
        (Value::Null, _) | (_, Value::Null) => Ok(()),
        (Value::Object(w), Value::Object(m)) => {
            let wk: Vec<_> = w.keys().collect();
            let mk: Vec<_> = m.keys().collect();
            if wk != mk {
                return Err(format!("{at}: keys {mk:?}, readers expect {wk:?}"));
            }
            w.iter().try_for_each(|(k, v)| {
                if TYPED.contains(&k.as_str()) {
                    // Values of the guard's own types, serialised by the same code
                    // before and after: their presence is what a record promises.
                    return Ok(());
                }
                same_shape(v, &m[k], &format!("{at}.{k}"))
            })
        }
        (Value::Array(w), Value::Array(m)) => match (w.first(), m.first()) {
            (Some(w), Some(m)) => same_shape(w, m, &format!("{at}[0]")),
            _ => Ok(()),
        },
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_)) => Ok(()),
        _ => Err(format!("{at}: {mine} where readers expect {want}")),
    }
}

/// A typed value taken from the first golden record that has `field` (so the samples
/// carry real requests, verdicts and decisions).
fn from_golden<T: serde::de::DeserializeOwned>(g: &[Value], kind: &str, field: &str) -> T {
    let v = g
        .iter()
        .filter(|r| r["kind"] == kind)
        .find_map(|r| r["fields"].get(field))
        .unwrap_or_else(|| panic!("no golden {kind} record with {field}"));
    serde_json::from_value(v.clone()).expect(field)
}

/// One event of every variant, filled with values of the types the guard records.
fn samples(g: &[Value]) -> Vec<(&'static str, AuditEvent)> {
    let request: Request = from_golden(g, "request", "request");
    let verdict: Verdict = from_golden(g, "request", "verdict");
    let decision: Decision = from_golden(g, "decision", "decision");
    let outcome: Outcome = from_golden(g, "exec-outcome", "outcome");
    let peer = PeerId {
        uid: 1000,
        pid: Some(42),
    };
    vec![
        (
            "startup",
            AuditEvent::Startup(Startup {
                pid: 1,
                socket: "/s".into(),
                state_dir: "/d".into(),
                openclaw_store: "/o".into(),
                policy: "embedded".into(),
                expired_at_start: 0,
                version: "0",
            }),
        ),
        ("shutdown", AuditEvent::Shutdown(Shutdown { pid: 1 })),
        (
            "asked",
            AuditEvent::Asked(Box::new(Asked {
                requester: Requester::Peer(peer),
                inbox_id: "i".into(),
                request_hash: "h".into(),
                deadline_ms: 1,
                request: request.clone(),
                verdict: verdict.clone(),
            })),
        ),
        (
            "asked-local-node",
            AuditEvent::Asked(Box::new(Asked {
                requester: Requester::LocalNode {
                    node: Some("n".into()),
                    run_id: Some("r".into()),
                },
                inbox_id: "i".into(),
                request_hash: "h".into(),
                deadline_ms: 1,
                request: request.clone(),
                verdict: verdict.clone(),
            })),
        ),
        (
            "decided-socket",
            AuditEvent::Decided(Box::new(Decided {
                requester: Requester::Peer(peer),
                request: request.clone(),
                verdict: verdict.clone(),
                decision: decision.clone(),
                grants: vec![],
            })),
        ),
        (
            "decided-local-node",
            AuditEvent::Decided(Box::new(Decided {
                requester: Requester::LocalNode {
                    node: Some("n".into()),
                    run_id: Some("r".into()),
                },
                request: request.clone(),
                verdict: verdict.clone(),
                decision: decision.clone(),
                grants: vec![],
            })),
        ),
        (
            "answered",
            AuditEvent::Answered(Answered {
                inbox_id: "i".into(),
                request_id: "r".into(),
                decision: decision.clone(),
            }),
        ),
        (
            "refused",
            AuditEvent::Refused(Box::new(Refused {
                requester: Requester::Peer(peer),
                request: request.clone(),
                decision: PolicyDeny::new("cwd-relative"),
                message: "m".into(),
            })),
        ),
        (
            "inbox-pending",
            AuditEvent::InboxPending(InboxPending {
                id: "i".into(),
                request_id: "r".into(),
                request_hash: "h".into(),
                created_ms: 1,
                deadline_ms: 2,
            }),
        ),
        (
            "inbox-resolved",
            AuditEvent::InboxResolved(InboxResolved {
                id: "i".into(),
                request_id: "r".into(),
                request_hash: "h".into(),
                state: "approved",
                decision: decision.clone(),
            }),
        ),
        (
            "allow-always",
            AuditEvent::AllowAlways(AllowAlways {
                request_id: "r".into(),
                entries: Some(1),
                error: None,
            }),
        ),
        (
            "ran",
            AuditEvent::Ran(Box::new(Ran {
                id: "r".into(),
                program: "/bin/echo".into(),
                argv: vec!["echo".into()],
                cwd: "/w".into(),
                dropped_env: vec!["LD_PRELOAD".into()],
                integrity: Vec::new(),
                duration_ms: 1,
                output: OutputSummary {
                    bytes: 1,
                    sha256: "s".into(),
                    head: "x".into(),
                    tail: String::new(),
                    truncated: false,
                },
                exit_code: Some(0),
                timed_out: false,
                success: true,
                stdout_bytes: 1,
                stderr_bytes: 0,
                error: None,
                queued_ms: 0,
            })),
        ),
        (
            "not-run-requester-gone",
            AuditEvent::NotRun(NotRun {
                id: "r".into(),
                argv: vec!["echo".into()],
                error: None,
                reason: "requester-gone",
                message: Some("m"),
            }),
        ),
        (
            "not-run-shutdown",
            AuditEvent::NotRun(NotRun {
                id: "r".into(),
                argv: vec!["echo".into()],
                error: None,
                reason: "guard-shutdown",
                message: None,
            }),
        ),
        (
            "not-run-sandbox",
            AuditEvent::NotRun(NotRun {
                id: "r".into(),
                argv: vec!["echo".into()],
                error: Some("e".into()),
                reason: "sandbox-unavailable",
                message: None,
            }),
        ),
        (
            "allow-always-error",
            AuditEvent::AllowAlways(AllowAlways {
                request_id: "r".into(),
                entries: None,
                error: Some("e".into()),
            }),
        ),
        (
            "decided-socket-node",
            AuditEvent::Decided(Box::new(Decided {
                requester: Requester::SocketNode {
                    peer,
                    node_id: Some("n".into()),
                    run_id: Some("r".into()),
                },
                request: request.clone(),
                verdict: verdict.clone(),
                decision: decision.clone(),
                grants: vec![],
            })),
        ),
        (
            "outcome-socket-node",
            AuditEvent::RunOutcome(Box::new(RunOutcome {
                source: Origin::Node,
                peer: Some(peer),
                outcome: outcome.clone(),
            })),
        ),
        (
            "outcome-local-node",
            AuditEvent::RunOutcome(Box::new(RunOutcome {
                source: Origin::Node,
                peer: None,
                outcome,
            })),
        ),
        (
            "rejection",
            AuditEvent::Rejection(Rejection {
                source: Origin::Socket,
                peer,
                id: Some("r".into()),
                reason: "json",
                message: "m".into(),
            }),
        ),
        (
            "rejections",
            AuditEvent::Rejections(Rejections {
                source: Origin::Socket,
                aggregated: true,
                reason: "json",
                count: 2,
                from_ms: 1,
                to_ms: 2,
                peers: vec![peer],
                message: "m".into(),
            }),
        ),
    ]
}

/// Samples of shapes the integration tests' logs never showed (so no golden record):
/// door refusals, runs that did not happen, a failed grant, a node over the socket. Their
/// fields are checked field by field in [`the_unseen_shapes_are_the_old_literals`].
const UNSEEN: &[&str] = &[
    "refused",
    "not-run-requester-gone",
    "not-run-shutdown",
    "not-run-sandbox",
    "allow-always-error",
    "decided-socket-node",
    "outcome-socket-node",
];

#[test]
fn every_event_has_the_shape_the_readers_expect() {
    let g = golden();
    for (label, e) in samples(&g) {
        if UNSEEN.contains(&label) {
            continue;
        }
        let mine = e.fields().expect("fields");
        let same_kind: Vec<&Value> = g.iter().filter(|r| r["kind"] == e.kind()).collect();
        let misses: Vec<String> = same_kind
            .iter()
            .filter_map(|r| same_shape(&r["fields"], &mine, label).err())
            .collect();
        assert!(
            misses.len() < same_kind.len(),
            "{label} ({}) {mine}: {misses:#?}",
            e.kind()
        );
    }
}

#[test]
fn every_golden_record_is_some_event() {
    let g = golden();
    let mine: Vec<(&str, Value)> = samples(&g)
        .iter()
        .map(|(_, e)| (e.kind(), e.fields().expect("fields")))
        .collect();
    for r in &g {
        let found = mine
            .iter()
            .any(|(k, f)| r["kind"] == *k && same_shape(&r["fields"], f, k).is_ok());
        assert!(found, "no event writes {r}");
    }
}

/// The shapes no golden record shows, against the JSON literals the guard used to build
/// them (taken from the call sites this module replaced).
#[test]
fn the_unseen_shapes_are_the_old_literals() {
    let g = golden();
    let request: Value = g
        .iter()
        .find_map(|r| r["fields"].get("request").cloned())
        .expect("a request");
    let outcome = g
        .iter()
        .find_map(|r| r["fields"].get("outcome").cloned())
        .expect("an outcome");
    let peer = serde_json::json!({"uid":1000,"pid":42});
    let old = |label: &str| -> Value {
        match label {
            "refused" => serde_json::json!({"requester":peer,"request":request,
                "decision":{"kind":"deny","reason":"cwd-relative","by":"policy"},
                "message":"m"}),
            "not-run-requester-gone" => serde_json::json!({"id":"r","argv":["echo"],
                "reason":"requester-gone","message":"m"}),
            "not-run-shutdown" => serde_json::json!({"id":"r","argv":["echo"],
                "reason":"guard-shutdown"}),
            "not-run-sandbox" => serde_json::json!({"id":"r","argv":["echo"],"error":"e",
                "reason":"sandbox-unavailable"}),
            "allow-always-error" => serde_json::json!({"requestId":"r","error":"e"}),
            "decided-socket-node" => {
                let mut d = g
                    .iter()
                    .find(|r| r["kind"] == "decision" && r["fields"].get("verdict").is_some())
                    .expect("a decision")["fields"]
                    .clone();
                d["requester"] = serde_json::json!({"peer":peer,"nodeId":"n","runId":"r"});
                d
            }
            "outcome-socket-node" => {
                serde_json::json!({"source":"node","peer":peer,"outcome":outcome})
            }
            other => panic!("no old literal for {other}"),
        }
    };
    let samples = samples(&g);
    for label in UNSEEN {
        let (_, e) = samples.iter().find(|(l, _)| l == label).expect("a sample");
        let mine = e.fields().expect("fields");
        if let Err(why) = same_shape(&old(label), &mine, label) {
            panic!("{why}");
        }
    }
    // The refusal's decision is spelled out in full, as the door wrote it.
    let refused = &samples
        .iter()
        .find(|(l, _)| *l == "refused")
        .expect("refused")
        .1;
    assert_eq!(
        refused.fields().expect("fields")["decision"],
        serde_json::json!({"kind":"deny","reason":"cwd-relative","by":"policy"})
    );
}

#[test]
fn shapes_differ_when_a_field_is_renamed_or_missing() {
    let want = serde_json::json!({"a":{"b":1,"c":"x"},"d":[{"e":true}]});
    assert!(same_shape(&want, &want, "").is_ok());
    for bad in [
        serde_json::json!({"a":{"b":1,"C":"x"},"d":[{"e":true}]}),
        serde_json::json!({"a":{"b":1},"d":[{"e":true}]}),
        serde_json::json!({"a":{"b":"1","c":"x"},"d":[{"e":true}]}),
        serde_json::json!({"a":{"b":1,"c":"x"},"d":[{"f":true}]}),
    ] {
        assert!(same_shape(&want, &bad, "").is_err(), "{bad}");
    }
}

/// Typed events go through the same redaction as any record: a secret in an argv, a
/// message or an error never reaches the file.
#[test]
fn events_are_redacted_on_the_way_to_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("audit.jsonl");
    let (log, _) = crate::audit::AuditLog::open(&path).expect("open");
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    log.append(AuditEvent::NotRun(NotRun {
        id: "r".into(),
        argv: vec!["gh".into(), "--token".into(), secret.into()],
        error: Some(format!("Authorization: Bearer {secret}")),
        reason: "sandbox-unavailable",
        message: None,
    }))
    .expect("append");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(!text.contains(secret), "{text}");
    let rec: Value = serde_json::from_str(text.lines().last().expect("a line")).expect("json");
    assert_eq!(rec["kind"], "exec");
    assert_eq!(rec["fields"]["argv"][2], crate::audit::redact::REDACTED);
}
