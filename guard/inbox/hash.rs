//! The request hash: SHA-256 over a canonical JSON of exactly what a human is shown (the
//! action and who asks), so a decision binds to those bytes and nothing else.
//!
//! Canonical JSON here: object keys sorted by their UTF-8 bytes, no whitespace, strings and
//! numbers as serde_json writes them. The document hashed is `{"action":…,"who":…}`.

use crate::policy::request::Request;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Writes `v` canonically (sorted keys, compact) whatever serde_json's map order is.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                if let Some(val) = map.get(*k) {
                    write_canonical(val, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Lowercase hex SHA-256 of the canonical `{"action","who"}` of `req`.
pub fn request_hash(req: &Request) -> Result<String, serde_json::Error> {
    let doc = serde_json::json!({
        "action": serde_json::to_value(&req.action)?,
        "who": serde_json::to_value(&req.who)?,
    });
    Ok(hex::encode(Sha256::digest(canonical_json(&doc).as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::request::{Action, ExecAction, OpenClawAsk, Source, Who};

    fn req(argv: &[&str], cwd: &str) -> Request {
        Request {
            id: "frame-1".into(),
            who: Who {
                agent_id: "main".into(),
                session_key: None,
                source: Source::SocketExec,
            },
            action: Action::Exec(ExecAction {
                argv: argv.iter().map(|s| s.to_string()).collect(),
                cwd: Some(cwd.into()),
                ..ExecAction::default()
            }),
            received_at_ms: 1,
            deadline_ms: None,
            openclaw: OpenClawAsk::default(),
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_without_whitespace() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"z": [1, {"y": 2, "x": 3}], "c": "s"}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"c":"s","z":[1,{"x":3,"y":2}]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":"s","z":[1,{"x":3,"y":2}]},"b":1}"#
        );
    }

    #[test]
    fn hash_binds_what_is_shown_and_nothing_else() {
        let base = request_hash(&req(&["rm", "a"], "/w")).unwrap();
        assert_eq!(base.len(), 64);
        // What the human sees changes the hash...
        assert_ne!(base, request_hash(&req(&["rm", "b"], "/w")).unwrap());
        assert_ne!(base, request_hash(&req(&["rm", "a"], "/")).unwrap());
        let mut other_agent = req(&["rm", "a"], "/w");
        other_agent.who.agent_id = "ops".into();
        assert_ne!(base, request_hash(&other_agent).unwrap());
        // ...transport details do not.
        let mut later = req(&["rm", "a"], "/w");
        later.id = "frame-2".into();
        later.received_at_ms = 99;
        assert_eq!(base, request_hash(&later).unwrap());
        // It is SHA-256 of the canonical document.
        let doc = serde_json::json!({
            "action": serde_json::to_value(&later.action).unwrap(),
            "who": serde_json::to_value(&later.who).unwrap(),
        });
        assert_eq!(base, hex::encode(Sha256::digest(canonical_json(&doc))));
    }
}
