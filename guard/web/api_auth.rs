//! The sign-in endpoints: `POST /api/login` (one-time link token, plus the TOTP code when a
//! second factor is enrolled; code guesses limited per address and per link), `GET /api/session`,
//! `POST /api/logout`, `POST /api/sessions/revoke` (every session, this one included).

use super::api::{session_cookie, set_cookie, Shared};
use super::auth::{self, SessionView};
use super::http::{error, json, read_body_max, Resp, MAX_SIGNIN_BODY};
use super::login;
use super::metrics::global as metrics;
use super::secret::hash_hex;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, RETRY_AFTER};
use hyper::{Request, StatusCode};
use serde_json::json;
use std::net::SocketAddr;

fn refuse(reason: &'static str, status: StatusCode, message: &str) -> Resp {
    metrics().web_refusal(reason);
    error(status, reason, message)
}

/// `POST /api/login`, step by step: body, second factor (if enrolled), then
/// the link is consumed (one use) and a session created. Each step answers a refusal itself.
pub async fn login(sh: &Shared, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    match signed_in(sh, req, peer).await {
        Ok(r) | Err(r) => r,
    }
}

async fn signed_in(sh: &Shared, req: Request<Incoming>, peer: SocketAddr) -> Result<Resp, Resp> {
    let v = credentials(req).await?;
    let token = v["token"].as_str().unwrap_or("");
    // The link's account decides which second factor applies: its own seed, else the
    // guard-wide one (a guard from before accounts keeps its factor).
    let named = match token_well_formed(token) {
        true => lookup_link(sh, token.to_owned()).await?,
        false => None,
    };
    match second_factor_enrolled(sh, named.clone()).await? {
        Some(totp) => check_code(sh, &totp, token, v["totp"].as_str(), peer).await?,
        None if !token_well_formed(token) => return Err(failed(sh, peer, "malformed-token")),
        None => {}
    }
    let Some(name) = consume_link(sh, token.to_owned()).await? else {
        return Err(failed(sh, peer, "unknown-token"));
    };
    let (id, view, role) = start_session(sh, &name).await.inspect_err(|_| {
        sh.signin.log_refusal(peer, "no-account");
    })?;
    tracing::info!(identity = %view.identity, peer = %peer, "web: signed in");
    Ok(set_cookie(
        session_json(sh, &view, role),
        session_cookie(sh, &id),
    ))
}

/// A session for the reviewer account `name`; refused (401) when no such account exists:
/// a link or passkey of a removed account signs nobody in.
pub async fn start_session(
    sh: &Shared,
    name: &str,
) -> Result<(String, SessionView, crate::reviewers::Role), Resp> {
    let n = name.to_owned();
    let acct =
        super::reviewer_gate::blocking(sh, move |s| crate::reviewers::ReviewerStore::get(s, &n))
            .await?;
    let Some(acct) = acct else {
        return Err(refuse(
            "no-account",
            StatusCode::UNAUTHORIZED,
            "This login belongs to a reviewer account that does not exist (removed?). \
             Ask an admin: sanctum-guard reviewers add NAME --role approver.",
        ));
    };
    let (id, view) = sh
        .sessions
        .create(&acct.name, &acct.id)
        .map_err(session_failed)?;
    Ok((id, view, acct.role))
}

/// A session that could not be made, checked or ended: 503 `store-unavailable` when a
/// fleet's database is away (as the reviewer store answers), else a 500.
pub fn session_failed(e: auth::SessionError) -> Resp {
    match e {
        auth::SessionError::Unavailable(_) => refuse(
            "store-unavailable",
            StatusCode::SERVICE_UNAVAILABLE,
            "Not applied: the fleet database cannot be reached (sessions and sign-in live \
             there). Nothing was decided; this page retries by itself.",
        ),
        other => {
            tracing::error!(error = %other, "web: sessions");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session",
                "session store error",
            )
        }
    }
}

/// A refused sign-in: logged (bounded) with its true reason, answered as a bad link, so
/// the answer never tells a wrong code from a wrong token.
fn failed(sh: &Shared, peer: SocketAddr, reason: &'static str) -> Resp {
    sh.signin.log_refusal(peer, reason);
    bad_link()
}

/// With a second factor enrolled: a code is required, and the link is checked first. A
/// live link with the current, unused code always signs in, whatever else came from its
/// address (junk from a shared address must not lock its person out: the link is 256
/// random bits, so holding one is proof enough to skip the address's limit). Everything
/// else is a guess and spends the address's allowance (429 once spent); a wrong code on a
/// live link also counts against the link, and the last one it survives burns it.
async fn check_code(
    sh: &Shared,
    totp: &totp_rs::TOTP,
    token: &str,
    code: Option<&str>,
    peer: SocketAddr,
) -> Result<(), Resp> {
    let Some(code) = code.filter(|c| !c.is_empty()) else {
        sh.signin.log_refusal(peer, "totp-required");
        return Err(refuse(
            "totp-required",
            StatusCode::UNAUTHORIZED,
            "enter the 6-digit code from your authenticator",
        ));
    };
    let live = token_well_formed(token) && lookup_link(sh, token.to_owned()).await?.is_some();
    if live && auth::totp_ok(totp, code) && sh.signin.claim_code(code) {
        return Ok(());
    }
    if live && sh.signin.code_failed(&hash_hex(token)) {
        let _ = consume_link(sh, token.to_owned()).await?;
        tracing::warn!(peer = %peer.ip(), "web: login link burned after wrong codes");
    }
    if !sh.signin.allow_code_attempt(peer.ip()) {
        sh.signin.log_refusal(peer, "rate-limited");
        return Err(rate_limited());
    }
    if !live {
        return Err(failed(sh, peer, "unknown-token"));
    }
    metrics().web_refusal("bad-totp");
    Err(failed(sh, peer, "bad-totp"))
}

fn rate_limited() -> Resp {
    let mut r = refuse(
        "rate-limited",
        StatusCode::TOO_MANY_REQUESTS,
        "too many login attempts; wait a minute",
    );
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("12"));
    r
}

fn bad_link() -> Resp {
    refuse(
        "bad-login",
        StatusCode::UNAUTHORIZED,
        "This login link does not work: it was already used, has expired, or was copied \
         incompletely. Run `sanctum-guard web login-link` for a new one.",
    )
}

/// The request body as JSON (a body that is not JSON reads as empty: no token), at most
/// [`MAX_SIGNIN_BODY`] bytes: nobody is signed in yet.
async fn credentials(req: Request<Incoming>) -> Result<serde_json::Value, Resp> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = read_body_max(req.into_body(), declared, MAX_SIGNIN_BODY)
        .await
        .map_err(|e| e.response())?;
    Ok(serde_json::from_slice(&body).unwrap_or_default())
}

/// A link token is 32 random bytes in unpadded base64url: 43 characters of that alphabet.
fn token_well_formed(token: &str) -> bool {
    token.len() == 43
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The second factor a sign-in as `account` needs: the account's own seed, else the
/// guard-wide one, else none. An unreadable seed refuses every login (fail closed).
async fn second_factor_enrolled(
    sh: &Shared,
    account: Option<String>,
) -> Result<Option<totp_rs::TOTP>, Resp> {
    if let Some(name) = account {
        let seed = super::reviewer_gate::blocking(sh, move |s| {
            crate::reviewers::ReviewerStore::totp_seed(s, &name)
        })
        .await?;
        if let Some(seed) = seed {
            return auth::totp_from_seed(&seed).map(Some).map_err(|e| {
                tracing::error!(error = %e, "web: a reviewer's TOTP seed is unreadable");
                error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "totp",
                    "second factor unavailable",
                )
            });
        }
    }
    let dir = sh.state_dir.clone();
    match tokio::task::spawn_blocking(move || auth::totp_for(&dir)).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "web: TOTP seed unreadable; refusing logins");
            Err(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "totp",
                "second factor unavailable",
            ))
        }
        Err(_) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, "totp", "internal")),
    }
}

/// The identity a live link names, without using it up.
async fn lookup_link(sh: &Shared, token: String) -> Result<Option<String>, Resp> {
    on_link(sh, token, login::lookup).await
}

/// Uses up the link token; the identity it was issued to (None: no live link).
async fn consume_link(sh: &Shared, token: String) -> Result<Option<String>, Resp> {
    on_link(sh, token, login::consume).await
}

/// Runs `f` (a look-up in the link file) off the async threads; an error is a 500.
async fn on_link(
    sh: &Shared,
    token: String,
    f: fn(&super::auth_at::AuthAt, &str) -> Result<Option<String>, login::LoginError>,
) -> Result<Option<String>, Resp> {
    let at = sh.auth.clone();
    match tokio::task::spawn_blocking(move || f(&at, &token)).await {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(login::LoginError::Fleet(crate::web::pg_auth::AuthDbError::Unavailable(_)))) => Err(
            session_failed(auth::SessionError::Unavailable(String::new())),
        ),
        Ok(Err(e)) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "login",
            &e.to_string(),
        )),
        Err(_) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "login",
            "internal",
        )),
    }
}

pub fn session_json(sh: &Shared, s: &SessionView, role: crate::reviewers::Role) -> Resp {
    let totp = sh.state_dir.join(auth::TOTP_FILE).exists();
    json(
        StatusCode::OK,
        &json!({"identity": s.identity, "csrf": s.csrf, "expiresInS": s.expires_in.as_secs(),
                // The page shows decision buttons only to a role that may decide.
                "account": s.account, "role": role.as_str(), "canDecide": role.can_decide(),
                "totpEnrolled": totp, "baseUrl": sh.base_url,
                // Push channels whose last delivery failed: the page header names them.
                "notifyFailing": sh.notify.failing()}),
    )
}

pub fn logout(sh: &Shared, sid: &str) -> Resp {
    if let Err(e) = sh.sessions.remove(sid) {
        return session_failed(e);
    }
    set_cookie(
        json(StatusCode::OK, &json!({"ok": true})),
        session_cookie(sh, ""),
    )
}

pub fn revoke_all(sh: &Shared) -> Resp {
    let n = match sh.sessions.revoke_all() {
        Ok(n) => n,
        Err(e) => return session_failed(e),
    };
    tracing::info!(sessions = n, "web: every session revoked");
    set_cookie(
        json(StatusCode::OK, &json!({"ok": true, "revoked": n})),
        session_cookie(sh, ""),
    )
}
