//! `POST /api/requests/{id}/decision` `{decision, reason?, hash}`: a person's decision, sent to
//! [`Inbox::decide`](crate::inbox::Inbox::decide) bound to the request hash the card showed,
//! as `web:<name>/<session>@<address>`. A stale card (already decided, expired, or the hash of
//! another request) is refused with 409 and a sentence saying nothing was applied.

use super::api::Shared;
use super::auth::SessionView;
use super::http::{error, json, read_body, Resp};
use super::metrics::global as metrics;
use crate::inbox::InboxError;
use crate::policy::request::{DecidedBy, Decision, DecisionKind};
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;
use hyper::{Request, StatusCode};
use std::net::SocketAddr;

/// Control characters out of a person's free text; at most 500 characters.
fn clean_reason(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() && !super::assets::is_bidi(*c))
        .take(500)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// `POST /api/requests/{id}/decision` `{decision, reason?, hash}`.
pub async fn decide(
    sh: &Shared,
    req: Request<Incoming>,
    id: &str,
    session: &SessionView,
    peer: SocketAddr,
) -> Resp {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = match read_body(req.into_body(), declared).await {
        Ok(b) => b,
        Err(e) => return e.response(),
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "bad-json", "body is not JSON");
    };
    let Some(kind) = v["decision"].as_str().and_then(DecisionKind::parse) else {
        return error(
            StatusCode::BAD_REQUEST,
            "bad-decision",
            "decision is allow-once, allow-for (egress), allow-always or deny",
        );
    };
    let hash = v["hash"].as_str().unwrap_or("");
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return error(
            StatusCode::BAD_REQUEST,
            "bad-hash",
            "hash (the request hash the page showed) is required",
        );
    }
    let reason = v["reason"]
        .as_str()
        .map(clean_reason)
        .filter(|r| !r.is_empty());
    let reason = match kind {
        DecisionKind::Deny => Some(reason.unwrap_or_else(|| "user-denied".into())),
        _ => reason,
    };
    let by = format!("{}@{peer}", session.identity);
    // An allow in a passkey category carries its signed assertion; it is checked and
    // recorded before the decision is applied.
    if let Err(r) = super::passkey_api::check_decision(sh, id, hash, kind, &v, &by).await {
        return r;
    }
    let d = Decision {
        kind,
        reason,
        by: DecidedBy::Human(by),
        at_ms: crate::engine::decision::now_ms(),
    };
    match sh.inbox.decide(id, d, Some(hash)).await {
        Ok(r) => json(StatusCode::OK, &super::view::resolved_json(&r)),
        Err(e) => decide_error(e),
    }
}

fn decide_error(e: InboxError) -> Resp {
    let stale = |code: &'static str, msg: String| {
        metrics().web_refusal("stale");
        error(StatusCode::CONFLICT, code, &msg)
    };
    match e {
        InboxError::UnknownId(_) => error(StatusCode::NOT_FOUND, "unknown-id", "no such request"),
        InboxError::AlreadyResolved { state, .. } => stale(
            "stale",
            format!("Not applied: this request is already {state}. Nothing else was decided."),
        ),
        InboxError::Expired(_) => stale(
            "stale",
            "Not applied: this request expired before your decision (the agent was told approval-timeout).".into(),
        ),
        InboxError::HashMismatch { .. } => stale(
            "stale",
            "Not applied: the request is not the one this card showed (hash mismatch). Reload.".into(),
        ),
        e @ InboxError::NotOffered { .. } => {
            error(StatusCode::UNPROCESSABLE_ENTITY, "not-offered", &e.to_string())
        }
        e => error(StatusCode::INTERNAL_SERVER_ERROR, "inbox", &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_lose_control_and_bidi_characters() {
        assert_eq!(clean_reason(" no\u{202e}pe\u{1b}[31m\n "), "nope[31m");
        assert_eq!(clean_reason(&"x".repeat(600)).len(), 500);
    }
}
