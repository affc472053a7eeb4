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
