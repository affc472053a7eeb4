//! `GET /api/audit/{seq}`: one record of this guard's audit log for any signed-in reviewer
//! (a fleet's pages link a decision here from any guard). The answer holds the record as
//! logged (redacted when it was written), its line's hash and what the chain says about it
//! (`audit::lookup`); nothing else is read, so nothing the log does not already hold is
//! shown.

use super::api::Shared;
use super::http::{error, json, Resp};
use crate::audit::{default_key_path, lookup, AuditError, AuditKey, Found};
use hyper::StatusCode;
use serde_json::json;
use std::path::Path;

/// The record `seq` of the log at `log`, checked with its key when the key is beside it.
fn find(log: &Path, seq: u64) -> Result<Option<Found>, AuditError> {
    let key_path = default_key_path(log);
    let key = match key_path.exists() {
        true => Some(AuditKey::load(&key_path)?),
        false => None,
    };
    lookup(log, key.as_ref(), seq)
}

pub async fn record(sh: &Shared, seq: &str) -> Resp {
    let missing = || {
        error(
            StatusCode::NOT_FOUND,
            "unknown-record",
            "no such audit record",
        )
    };
    let Ok(seq) = seq.parse::<u64>() else {
        return missing();
    };
    let log = sh.audit_path.clone();
    match tokio::task::spawn_blocking(move || find(&log, seq)).await {
        Ok(Ok(Some(f))) => json(
            StatusCode::OK,
            &json!({"seq": seq, "record": f.record, "line": f.line, "hash": f.hash,
                    "chain": f.chain}),
        ),
        Ok(Ok(None)) => missing(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, "audit", &e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "audit", &e.to_string()),
    }
}
