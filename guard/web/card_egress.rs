//! An egress card's facts (`egress` in a request's JSON): the destination as the proxy read
//! it (host:port, and for plain HTTP the method and path), the exact rule "allow always"
//! stores and how long "allow for" lasts (both as the guard's own reasons state them, the
//! text the socket door stores and grants by), and what the agent did just before: its last
//! few decisions from the guard's audit log, so a person sees why it reaches out.

use crate::engine::Engine;
use crate::inbox::{action_summary, Entry};
use crate::policy::request::{Action, Request, Source};
use serde_json::{json, Value};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Decisions shown from before the ask.
pub const RECENT: usize = 5;
/// How much of the audit log's tail is read for them.
const TAIL: u64 = 256 * 1024;

/// `null` for anything but an egress request.
pub fn egress_json(eng: Option<&Engine>, e: &Entry) -> Value {
    if e.request.who.source != Source::Egress {
        return Value::Null;
    }
    let Action::Http { method, url } = &e.request.action else {
        return Value::Null;
    };
    let reason = |code: &str| {
        e.verdict
            .reasons
            .iter()
            .find(|r| r.code == code)
            .map(|r| r.message.to_string())
    };
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (target, path) = match rest.find('/') {
        Some(at) => (&rest[..at], Some(&rest[at..])),
        None => (rest, None),
    };
    let grant = reason("egress-grant");
    // The reason reads "for 10 min: a grant of …": the button says the first part.
    let label = grant
        .as_deref()
        .and_then(|g| g.split(':').next())
        .map(|g| format!("Allow {g}"));
    let recent = eng
        .map(|eng| recent(eng.audit().path(), e.created_ms))
        .unwrap_or_default();
    json!({
        "target": target,
        "tunnel": scheme == "connect",
        "method": method,
        "path": path,
        "rule": reason("egress-rule"),
        "grant": grant,
        "grantLabel": label,
        "recent": recent,
    })
}

/// The agent's last [`RECENT`] decisions before `before_ms` (not egress asks themselves),
/// oldest first: when, what, and how it was answered.
pub fn recent(audit: &Path, before_ms: u64) -> Vec<Value> {
    let Ok(mut f) = std::fs::File::open(audit) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.take(TAIL).read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut out: Vec<Value> = Vec::new();
    for line in text.lines().skip(usize::from(start > 0)) {
        if !line.contains("\"kind\":\"decision\"") && !line.contains("\"kind\":\"request\"") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let at = v["ts_ms"].as_u64().unwrap_or(0);
        if at > before_ms {
            break;
        }
        let d = &v["fields"]["decision"];
        let answer = format!(
            "{} ({})",
            d["kind"].as_str().unwrap_or("?"),
            d["by"]["by"].as_str().unwrap_or("?")
        );
        // A person's answer names its request by id only: it completes the asked line.
        if let Some(rid) = v["fields"]["request_id"].as_str() {
            if let Some(item) = out.iter_mut().rev().find(|i| i["id"] == rid) {
                item["answer"] = json!(answer);
            }
            continue;
        }
        let Ok(req) = serde_json::from_value::<Request>(v["fields"]["request"].clone()) else {
            continue;
        };
        if req.who.source == Source::Egress {
            continue;
        }
        let answer = match v["kind"].as_str() {
            Some("request") => "asked a person".to_owned(),
            _ => answer,
        };
        out.push(json!({"atMs": at, "id": req.id, "what": action_summary(&req.action), "answer": answer}));
    }
    let skip = out.len().saturating_sub(RECENT);
    out.split_off(skip)
}
