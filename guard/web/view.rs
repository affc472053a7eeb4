//! What the API shows of an inbox entry: the request as the person must judge it (environment
//! values only as `EnvShown` parts, secret-looking parts hidden), the verdict's reasons, the
//! decisions offered, who runs it once approved and the grants allow-always stores
//! (`card_facts`), the state, who decided, and the run's outcome when the audit log has one.
//! This is the JSON contract documented in the README ("Web prompt").

use crate::inbox::{Entry, Resolved, State};
use crate::policy::request::{DecidedBy, Decision, DecisionKind, Request, Source};
use crate::policy::verdict::Verdict;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the audit log's tail the history reads for run outcomes.
const AUDIT_TAIL: u64 = 8 * 1024 * 1024;

/// A decision's record on the deciding guard, with a link to that guard's page of it when
/// the guard published where its page is (the URL comes from the fleet's guards table,
/// checked there; the row adds only the seq and a hash that must be hex to be passed on).
fn audit_ref(r: &crate::inbox::AuditRef) -> Value {
    let hash = r
        .hash
        .as_deref()
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let link = r.url.as_ref().map(|u| match hash {
        Some(h) => format!("{u}/audit?seq={}&hash={h}", r.seq),
        None => format!("{u}/audit?seq={}", r.seq),
    });
    json!({"guard": r.guard, "auditSeq": r.seq, "auditHash": r.hash, "link": link})
}

pub fn source_name(s: Source) -> &'static str {
    match s {
        Source::SocketRequest | Source::SocketExec => "socket",
        Source::Gateway => "gateway",
        Source::Plugin => "plugin",
        Source::Cli => "cli",
        Source::Node => "node",
        Source::Egress => "egress",
    }
}

pub fn decision_json(d: &Decision) -> Value {
    let (by, name) = match &d.by {
        DecidedBy::Policy => ("policy", None),
        DecidedBy::Human(n) => ("human", Some(n.as_str())),
        DecidedBy::Fallback => ("fallback", None),
    };
    json!({"kind": d.kind.as_str(), "reason": d.reason, "by": by, "name": name, "atMs": d.at_ms})
}

/// `eng` is the engine whose plan the run line describes (`None` only where no engine runs
/// beside the web prompt: the card then says it cannot tell who runs it).
pub fn entry_json(e: &Entry, run: Option<&Value>, eng: Option<&crate::engine::Engine>) -> Value {
    json!({
        "id": e.id,
        "state": e.state.as_str(),
        "summary": e.summary(),
        "requestHash": e.request_hash,
        "createdMs": e.created_ms,
        "deadlineMs": e.deadline_ms,
        "resolvedMs": e.resolved_ms,
        "source": source_name(e.request.who.source),
        "sourceDetail": e.request.who.source,
        "agentId": e.request.who.agent_id,
        // In a fleet: the guard whose agent asked (it answers the agent).
        "guard": e.guard,
        // In a fleet: the guard that decided it and its audit record (`seq` in that guard's
        // log, the line's hash), where the decision is recorded.
        "decidedAt": e.decided_at.as_ref().map(audit_ref),
        "sessionKey": e.request.who.session_key,
        "requestId": e.request.id,
        "action": e.request.action,
        // Words that read as something else (lookalike or mixed-script program names, paths).
        "confusables": serde_json::to_value(&e.request.action)
            .map(|a| super::confusable::warnings(&a))
            .unwrap_or_default(),
        "category": e.verdict.category,
        "reasons": e.verdict.reasons,
        // The programs the analysis resolved for each segment of shell text (a request that
        // is only text carries no resolved path of its own).
        "programs": e.verdict.segments.iter().filter_map(|s| s.resolved_path.clone()).collect::<Vec<_>>(),
        "offered": e.offered().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "decision": e.decision.as_ref().map(decision_json),
        "run": run,
        // Who runs it once approved, how confined, and the grants allow-always stores.
        "runs": super::card_facts::runs_json(eng, e),
        "grants": super::card_facts::grants_json(e),
        // The bounded grants a person may make with Allow once (the patterns each stores).
        "bounded": super::grants_page::bounded_json(eng, e),
        "egress": super::card_egress::egress_json(eng, e),
        // How many different reviewers must approve (the list adds who approved so far).
        "approvalsRequired": eng.map_or(1, |g| g.judge().approvals_required(e.verdict.category)),
    })
}

pub fn resolved_json(r: &Resolved) -> Value {
    json!({"id": r.id, "state": r.state.as_str(), "decision": decision_json(&r.decision)})
}

/// Run outcomes by request id, from the audit log's tail: the `exec` records of runs the
/// guard made itself, and the `exec-outcome` records a node reported for its runs. With
/// `decided`, also the guard's own decisions from the same tail: a
/// request the policy answered by itself (an autonomous `ls`, a blocked `curl … | sh`) never
/// enters the inbox, so History shows its `decision` record (decided `by: policy`) as an
/// entry, newest last: its request's id, state approved or denied, the verdict's reasons.
pub fn audit_history(audit: &Path, decided: bool) -> (HashMap<String, Value>, Vec<Entry>) {
    let mut out = HashMap::new();
    let mut own = Vec::new();
    let Ok(mut f) = std::fs::File::open(audit) else {
        return (out, own);
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(AUDIT_TAIL);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return (out, own);
    }
    let mut buf = Vec::new();
    if f.take(AUDIT_TAIL).read_to_end(&mut buf).is_err() {
        return (out, own);
    }
    let text = String::from_utf8_lossy(&buf);
    for line in text.lines().skip(usize::from(start > 0)) {
        let kind = record_kind(line);
        if decided && kind == Some("decision") && line.contains("\"by\":\"policy\"") {
            own.extend(policy_entry(line));
            continue;
        }
        let node_run = kind == Some("exec-outcome");
        if !node_run && kind != Some("exec") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if node_run {
            let o = &v["fields"]["outcome"];
            let Some(id) = o["requestId"].as_str() else {
                continue;
            };
            out.insert(
                id.to_owned(),
                json!({"exitCode": o["exitCode"], "timedOut": o["timedOut"], "success": o["success"],
                       "error": o["error"], "finishedMs": v["ts_ms"], "durationMs": o["durationMs"],
                       "outputSha256": o["outputSha256"], "nodeId": o["nodeId"]}),
            );
            continue;
        }
        let f = &v["fields"];
        let Some(id) = f["id"].as_str() else { continue };
        out.insert(
            id.to_owned(),
            json!({"exitCode": f["exitCode"], "timedOut": f["timedOut"], "success": f["success"],
                   "stdoutBytes": f["stdoutBytes"], "stderrBytes": f["stderrBytes"],
                   "error": f["error"], "reason": f["reason"], "finishedMs": v["ts_ms"],
                   "durationMs": f["durationMs"], "output": f["output"]}),
        );
    }
    (out, own)
}

/// A `decision` record the policy made by itself, as an entry (None for any other shape:
/// a person's answer, an inbox resolution, a refusal without a verdict).
fn policy_entry(line: &str) -> Option<Entry> {
    let v: Value = serde_json::from_str(line).ok()?;
    let f = &v["fields"];
    let decision: Decision = serde_json::from_value(f.get("decision")?.clone()).ok()?;
    if decision.by != DecidedBy::Policy {
        return None;
    }
    let request: Request = serde_json::from_value(f.get("request")?.clone()).ok()?;
    let verdict: Verdict = serde_json::from_value(f.get("verdict")?.clone()).ok()?;
    let state = match decision.kind {
        DecisionKind::Deny => State::Denied,
        _ => State::Approved,
    };
    Some(Entry {
        id: request.id.clone(),
        request_hash: crate::inbox::request_hash(&request).unwrap_or_default(),
        created_ms: request.received_at_ms,
        deadline_ms: request.received_at_ms,
        resolved_ms: Some(decision.at_ms),
        state,
        decision: Some(decision),
        request,
        verdict,
        guard: None,
        decided_at: None,
    })
}

/// The record's own kind: the first `"kind":"…"` of the line, since a record is written
/// `{"seq":N,"ts":"…","ts_ms":N,"kind":"…","fields":{…}}`. A kind quoted inside the fields (every
/// request record holds `"action":{"kind":"exec",…}`) is not the record's: at 10,000 pending
/// those records fill the tail, and parsing each made every History load cost tens of ms.
fn record_kind(line: &str) -> Option<&str> {
    const KEY: &str = "\"kind\":\"";
    let rest = &line[line.find(KEY)? + KEY.len()..];
    rest.split('"').next()
}

#[cfg(test)]
mod tests {
    use super::{audit_history, record_kind};

    #[test]
    fn the_record_kind_is_the_first_and_a_quoted_exec_is_no_run() {
        for (line, want) in [
            (
                r#"{"seq":1,"ts":"t","ts_ms":1,"kind":"exec","fields":{"id":"a"}}"#,
                Some("exec"),
            ),
            (
                r#"{"seq":2,"ts":"t","ts_ms":1,"kind":"request","fields":{"action":{"kind":"exec"}}}"#,
                Some("request"),
            ),
            (
                r#"{"seq":3,"ts":"t","ts_ms":1,"kind":"exec-outcome","fields":{}}"#,
                Some("exec-outcome"),
            ),
            ("torn", None),
        ] {
            assert_eq!(record_kind(line), want, "{line}");
        }
        // A request record that quotes an exec action (and names an id) is not a run outcome.
        let dir = tempfile::tempdir().expect("tmp");
        let log = dir.path().join("audit.jsonl");
        std::fs::write(
            &log,
            concat!(
                r#"{"seq":1,"ts":"t","ts_ms":1,"kind":"request","fields":{"id":"q","action":{"kind":"exec"}}}"#,
                "\n",
                r#"{"seq":2,"ts":"t","ts_ms":2,"kind":"exec","fields":{"id":"r","exitCode":0}}"#,
                "\n"
            ),
        )
        .expect("log");
        let (runs, _) = audit_history(&log, false);
        assert_eq!(runs.keys().collect::<Vec<_>>(), ["r"], "{runs:?}");
        assert_eq!(runs["r"]["exitCode"], 0);
    }
}
