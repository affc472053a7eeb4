//! The passkey endpoints. Signed out: `POST /api/passkey-login/start` and `…/finish` (a
//! session like the login link's). Signed in: `GET /api/passkeys`,
//! `POST /api/passkeys/register/start|finish`, `POST /api/passkeys/{id}/remove`, and
//! `POST /api/requests/{id}/passkey` `{decision}`, which starts the assertion a decision in a
//! passkey category must carry (`passkey: {ceremony, credential}` in the decision body).
//! Registrations, removals and signed decisions are audit records (`passkey`).

use super::api::{session_cookie, set_cookie, Shared};
use super::auth::SessionView;
use super::http::{error, json, read_body_max, Resp, MAX_SIGNIN_BODY};
use super::metrics::global as metrics;
use super::passkey::{Bound, PasskeyError, Passkeys};
use super::passkey_store::{self as store, StoreError};
use super::pg_auth::AuthDbError;
use crate::audit::assertion::PasskeyEvent;
use crate::audit::AuditEvent;
use crate::policy::request::DecisionKind;
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;

/// A passkey body: an attestation or assertion is a few KiB at most.
const MAX_PASSKEY_BODY: usize = 16 * 1024;

async fn body_json(req: Request<Incoming>, max: usize) -> Result<Value, Resp> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = read_body_max(req.into_body(), declared, max)
        .await
        .map_err(|e| e.response())?;
    serde_json::from_slice(&body)
        .map_err(|_| error(StatusCode::BAD_REQUEST, "bad-json", "body is not JSON"))
}

fn refused(e: PasskeyError) -> Resp {
    let (status, code) = match &e {
        PasskeyError::Off(_) => (StatusCode::SERVICE_UNAVAILABLE, "passkeys-off"),
        PasskeyError::NoneRegistered => (StatusCode::NOT_FOUND, "no-passkey"),
        // A fleet's database away: no passkey is checked, nothing signed (fail closed).
        PasskeyError::Store(StoreError::Fleet(AuthDbError::Unavailable(_))) => {
            (StatusCode::SERVICE_UNAVAILABLE, "store-unavailable")
        }
        PasskeyError::Store(StoreError::Counter(_)) => (StatusCode::FORBIDDEN, "passkey-refused"),
        PasskeyError::Store(_) | PasskeyError::Random(_) => {
            (StatusCode::INTERNAL_SERVER_ERROR, "passkey-store")
        }
        _ => (StatusCode::FORBIDDEN, "passkey-refused"),
    };
    metrics().web_refusal("passkey");
    tracing::warn!(error = %e, "web: passkey refused");
    error(status, code, &e.to_string())
}

/// Runs a blocking passkey step (file I/O under a lock) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, PasskeyError> + Send + 'static,
) -> Result<T, Resp> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(refused),
        Err(_) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "passkey",
            "internal",
        )),
    }
}

/// Writes a passkey record and waits for it: nothing a passkey did counts unless the log
/// has it. No audit log (a bench without an engine) refuses.
async fn audit(sh: &Shared, ev: PasskeyEvent) -> Result<(), Resp> {
    let Some(engine) = sh.engine.as_ref() else {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no-audit",
            "passkeys need the audit log",
        ));
    };
    engine
        .audit()
        .record(AuditEvent::Passkey(Box::new(ev)))
        .await
        .map(|_| ())
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, "audit", &e.to_string()))
}

/// A credential from the page; a body that is not one is a 400 saying why.
fn parse<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, Box<Resp>> {
    serde_json::from_value(v.clone()).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "bad-credential",
            &format!("credential not understood: {e}"),
        ))
    })
}

/// The signed-out routes (`POST /api/passkey-login/*`).
pub async fn open_route(sh: &Shared, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    let r = match req.uri().path() {
        "/api/passkey-login/start" => sign_in_start(sh).await,
        "/api/passkey-login/finish" => sign_in_finish(sh, req, peer).await,
        _ => Err(error(
            StatusCode::NOT_FOUND,
            "not-found",
            "no such endpoint",
        )),
    };
    r.unwrap_or_else(|e| e)
}

async fn sign_in_start(sh: &Shared) -> Result<Resp, Resp> {
    let (pk, dir) = (sh.passkeys.clone(), sh.auth.clone());
    let (ceremony, options) = blocking(move || pk.start_sign_in(&dir)).await?;
    Ok(json(
        StatusCode::OK,
        &json!({"ceremony": ceremony, "options": options}),
    ))
}

async fn sign_in_finish(
    sh: &Shared,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Result<Resp, Resp> {
    let v = body_json(req, MAX_SIGNIN_BODY.max(MAX_PASSKEY_BODY)).await?;
    if !sh.signin.allow_code_attempt(peer.ip()) {
        sh.signin.log_refusal(peer, "rate-limited");
        return Err(error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "too many sign-in attempts; wait a minute",
        ));
    }
    let cred = parse(&v["credential"]).map_err(|r| *r)?;
    let ceremony = v["ceremony"].as_str().unwrap_or("").to_owned();
    let (pk, dir) = (sh.passkeys.clone(), sh.auth.clone());
    let s = blocking(move || pk.finish_sign_in(&dir, &ceremony, &cred))
        .await
        .inspect_err(|_| sh.signin.log_refusal(peer, "passkey"))?;
    let (id, view, role) = super::api_auth::start_session(sh, &s.name).await?;
    tracing::info!(identity = %view.identity, peer = %peer, "web: signed in with a passkey");
    Ok(set_cookie(
        super::api_auth::session_json(sh, &view, role),
        session_cookie(sh, &id),
    ))
}

/// The signed-in routes.
pub async fn route(
    sh: &Shared,
    req: Request<Incoming>,
    segs: &[&str],
    session: &SessionView,
    peer: SocketAddr,
) -> Resp {
    let by = format!("{}@{peer}", session.identity);
    let r = match (req.method().clone(), segs) {
        (Method::GET, ["passkeys"]) => list(sh).await,
        (Method::POST, ["passkeys", "register", "start"]) => register_start(sh, session).await,
        (Method::POST, ["passkeys", "register", "finish"]) => register_finish(sh, req, &by).await,
        (Method::POST, ["passkeys", id, "remove"]) => remove(sh, id, &by).await,
        (Method::POST, ["requests", id, "passkey"]) => decision_start(sh, req, id).await,
        _ => Err(error(
            StatusCode::NOT_FOUND,
            "not-found",
            "no such endpoint",
        )),
    };
    r.unwrap_or_else(|e| e)
}

async fn list(sh: &Shared) -> Result<Resp, Resp> {
    let dir = sh.auth.clone();
    let all = blocking(move || store::list(&dir).map_err(PasskeyError::from)).await?;
    let items: Vec<Value> = all
        .iter()
        .map(|s| json!({"id": s.id, "name": s.name, "createdMs": s.created_ms}))
        .collect();
    Ok(json(
        StatusCode::OK,
        &json!({"available": sh.passkeys.available(), "passkeys": items}),
    ))
}

async fn register_start(sh: &Shared, session: &SessionView) -> Result<Resp, Resp> {
    let (pk, dir, name) = (
        sh.passkeys.clone(),
        sh.auth.clone(),
        session.account.clone(),
    );
    let (ceremony, options) = blocking(move || pk.start_register(&dir, &name)).await?;
    Ok(json(
        StatusCode::OK,
        &json!({"ceremony": ceremony, "options": options}),
    ))
}

async fn register_finish(sh: &Shared, req: Request<Incoming>, by: &str) -> Result<Resp, Resp> {
    let v = body_json(req, MAX_PASSKEY_BODY).await?;
    let cred = parse(&v["credential"]).map_err(|r| *r)?;
    let ceremony = v["ceremony"].as_str().unwrap_or("").to_owned();
    let (pk, dir) = (sh.passkeys.clone(), sh.auth.clone());
    let s = blocking(move || pk.finish_register(&dir, &ceremony, &cred)).await?;
    audit(sh, Passkeys::registered_event(&s, by)).await?;
    tracing::info!(credential = %s.id, by = %by, "web: passkey registered");
    Ok(json(StatusCode::OK, &json!({"id": s.id, "name": s.name})))
}

async fn remove(sh: &Shared, id: &str, by: &str) -> Result<Resp, Resp> {
    let (dir, id) = (sh.auth.clone(), id.to_owned());
    let gone = blocking(move || store::remove(&dir, &id).map_err(PasskeyError::from)).await?;
    let Some(s) = gone else {
        return Err(error(
            StatusCode::NOT_FOUND,
            "unknown-passkey",
            "no such passkey",
        ));
    };
    audit(
        sh,
        PasskeyEvent::Removed {
            credential_id: s.id.clone(),
            by: by.to_owned(),
        },
    )
    .await?;
    Ok(json(StatusCode::OK, &json!({"removed": s.id})))
}

async fn decision_start(sh: &Shared, req: Request<Incoming>, id: &str) -> Result<Resp, Resp> {
    let v = body_json(req, MAX_PASSKEY_BODY).await?;
    let Some(kind) = v["decision"].as_str().and_then(DecisionKind::parse) else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "bad-decision",
            "decision is required",
        ));
    };
    let entry = match sh.inbox.get(id) {
        Ok(Some(e)) => e,
        Ok(None) => {
            return Err(error(
                StatusCode::NOT_FOUND,
                "unknown-id",
                "no such request",
            ))
        }
        Err(e) => {
            return Err(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "inbox",
                &e.to_string(),
            ))
        }
    };
    let (pk, dir) = (sh.passkeys.clone(), sh.auth.clone());
    let (id, hash, decision) = (entry.id, entry.request_hash, kind_name(kind));
    let (ceremony, options) =
        blocking(move || pk.start_decision(&dir, &id, &hash, &decision)).await?;
    Ok(json(
        StatusCode::OK,
        &json!({"ceremony": ceremony, "options": options}),
    ))
}

fn kind_name(k: DecisionKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{k:?}"))
}

/// For the decision API: an allow of a request whose category the policy marks needs the
/// assertion started for exactly this request, hash and decision. Returns the credential
/// id that signed (None: no passkey needed), after its record is in the audit log.
pub async fn check_decision(
    sh: &Shared,
    id: &str,
    hash: &str,
    kind: DecisionKind,
    body: &Value,
    by: &str,
    account: &str,
) -> Result<Option<String>, Resp> {
    if kind == DecisionKind::Deny {
        return Ok(None);
    }
    let category = match sh.inbox.get(id) {
        Ok(Some(e)) => e.verdict.category,
        // Unknown ids and store errors are answered by the decision itself.
        _ => return Ok(None),
    };
    let needed = sh
        .engine
        .as_ref()
        .is_some_and(|e| e.judge().needs_passkey(category));
    if !needed {
        return Ok(None);
    }
    let p = &body["passkey"];
    if !p.is_object() {
        metrics().web_refusal("passkey");
        return Err(error(
            StatusCode::FORBIDDEN,
            "passkey-required",
            "Not applied: this category needs your passkey to allow (deny needs none).",
        ));
    }
    let cred = parse(&p["credential"]).map_err(|r| *r)?;
    let want = Bound {
        inbox_id: id.to_owned(),
        request_hash: hash.to_owned(),
        decision: kind_name(kind),
        nonce: String::new(),
    };
    let ceremony = p["ceremony"].as_str().unwrap_or("").to_owned();
    let (pk, dir, who) = (sh.passkeys.clone(), sh.auth.clone(), by.to_owned());
    let acct = account.to_owned();
    let ev =
        blocking(move || pk.finish_decision(&dir, &ceremony, &want, &cred, &who, &acct)).await?;
    let cred_id = match &ev {
        PasskeyEvent::Signed { credential_id, .. } => credential_id.clone(),
        _ => String::new(),
    };
    audit(sh, ev).await?;
    Ok(Some(cred_id))
}
