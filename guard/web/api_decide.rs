//! `POST /api/requests/{id}/decision` `{decision, reason?, hash}`: a person's decision, sent to
//! [`Inbox::decide`](crate::inbox::Inbox::decide) bound to the request hash the card showed,
//! as `web:<account>/<session>@<address>`, cast as that reviewer account's vote. A stale card
//! (already decided, expired, or the hash of another request) is refused with 409 and a
//! sentence saying nothing was applied; a vote the account may not give with 403; an
//! approval that leaves the request waiting for more approvers is answered 202.

use super::api::Shared;
use super::auth::SessionView;
use super::http::{error, json, read_body, Resp};
use super::metrics::global as metrics;
use crate::inbox::InboxError;
use crate::policy::request::DecisionKind;
use crate::reviewers::vote::Cast;
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;
use hyper::{Request, StatusCode};
use serde_json::json;
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
            "decision is allow-once (with an optional grant), allow-for (egress), allow-always or deny",
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
    // A bounded grant rides on an allow-once, checked before anything is decided.
    let grant = match grant_of(sh, &v, kind, id) {
        Ok(g) => g,
        Err(resp) => return *resp,
    };
    let by = format!("{}@{peer}", session.identity);
    // An allow in a passkey category carries its signed assertion; it is checked and
    // recorded before the decision is applied.
    if let Err(r) =
        super::passkey_api::check_decision(sh, id, hash, kind, &v, &by, &session.account).await
    {
        return r;
    }
    // The vote of the session's account: refused, waiting for more approvers, or the
    // decision to apply.
    let entry = match pending(sh, id, hash, kind) {
        Ok(e) => e,
        Err(r) => return *r,
    };
    if grant.is_some()
        && super::reviewer_gate::required(sh, &entry)
            .await
            .unwrap_or(2)
            > 1
    {
        return error(
            StatusCode::BAD_REQUEST,
            "bad-grant",
            "this category needs several approvers: approve once (a grant is one person's)",
        );
    }
    let d = match super::reviewer_gate::cast(sh, entry, session, by.clone(), kind, reason).await {
        Ok(Cast::Decide(d)) => d,
        Ok(Cast::Partial { approvers, need }) => {
            let body = super::reviewer_gate::partial_json(id, &approvers, need);
            let _ = sh.votes.send(body.clone());
            tracing::info!(id, approvers = %approvers.join(","), need, "web: partial approval");
            return json(StatusCode::ACCEPTED, &body);
        }
        Err(r) => return r,
    };
    let r = match sh.inbox.decide(id, d, Some(hash)).await {
        Ok(r) => r,
        Err(e) => return decide_error(e),
    };
    let mut out = super::view::resolved_json(&r);
    if let Some((entry, spec)) = grant {
        out["grant"] = match super::grants_page::store(sh, &entry, spec, &by).await {
            Ok(g) => super::grants_page::grant_json(&g),
            Err(e) => json!({"error": format!("allowed once; the grant was not stored: {e}")}),
        };
    }
    json(StatusCode::OK, &out)
}

/// The entry `id`, still pending and showing `hash`; else the answer a stale card gets.
fn pending(
    sh: &Shared,
    id: &str,
    hash: &str,
    kind: DecisionKind,
) -> Result<crate::inbox::Entry, Box<Resp>> {
    let e = match sh.inbox.get(id) {
        Ok(Some(e)) => e,
        Ok(None) => return Err(Box::new(decide_error(InboxError::UnknownId(id.to_owned())))),
        Err(e) => return Err(Box::new(decide_error(e))),
    };
    let refusal = if e.state != crate::inbox::State::Pending {
        InboxError::AlreadyResolved {
            id: id.to_owned(),
            state: e.state,
        }
    } else if e.request_hash != hash {
        InboxError::HashMismatch {
            id: id.to_owned(),
            expected: hash.to_owned(),
            actual: e.request_hash,
        }
    } else if !e.offers(kind) {
        InboxError::NotOffered {
            id: id.to_owned(),
            kind,
            offered: e.offered(),
        }
    } else {
        return Ok(e);
    };
    Err(Box::new(decide_error(refusal)))
}

/// The grant a decision body asks for (`grant: {scope, n?}`), checked against the entry:
/// only with allow-once, and only what `grants::propose` would store.
fn grant_of(
    sh: &Shared,
    v: &serde_json::Value,
    kind: DecisionKind,
    id: &str,
) -> Result<Option<(crate::inbox::Entry, crate::grants::GrantSpec)>, Box<Resp>> {
    if v["grant"].is_null() {
        return Ok(None);
    }
    if kind != DecisionKind::AllowOnce {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "bad-grant",
            "a grant goes with allow-once",
        )));
    }
    let ask = super::grants_page::parse_ask(&v["grant"])?;
    let entry = match sh.inbox.get(id) {
        Ok(Some(e)) => e,
        Ok(None) => {
            return Err(Box::new(error(
                StatusCode::NOT_FOUND,
                "unknown-id",
                "no such request",
            )))
        }
        Err(e) => return Err(Box::new(decide_error(e))),
    };
    let spec = super::grants_page::check(sh, &entry, ask)?;
    Ok(Some((entry, spec)))
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
        // The shared database is away: nothing was decided (fail closed), say so.
        InboxError::StoreUnavailable(_) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unavailable",
            "Not applied: the inbox database cannot be reached. Nothing was decided.",
        ),
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
