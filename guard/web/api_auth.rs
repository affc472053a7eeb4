//! The sign-in endpoints: `POST /api/login` (one-time link token, plus the TOTP code when a
//! second factor is enrolled; rate-limited per address and overall), `GET /api/session`,
//! `POST /api/logout`, `POST /api/sessions/revoke` (every session, this one included).

use super::api::{session_cookie, set_cookie, Shared};
use super::auth::{self, SessionView};
use super::http::{error, json, read_body, Resp};
use super::login;
use super::metrics::global as metrics;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, RETRY_AFTER};
use hyper::{Request, StatusCode};
use serde_json::json;
use std::net::SocketAddr;

fn refuse(reason: &'static str, status: StatusCode, message: &str) -> Resp {
    metrics().web_refusal(reason);
    error(status, reason, message)
}

pub async fn login(sh: &Shared, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    if !sh.limiter.allow(peer.ip()) {
        let mut r = refuse(
            "rate-limited",
            StatusCode::TOO_MANY_REQUESTS,
            "too many login attempts; wait a minute",
        );
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("12"));
        return r;
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = match read_body(req.into_body(), declared).await {
        Ok(b) => b,
        Err(e) => return e.response(),
    };
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let token = v["token"].as_str().unwrap_or("");
    let bad_link = || {
        refuse(
            "bad-login",
            StatusCode::UNAUTHORIZED,
            "This login link does not work: it was already used, has expired, or was copied \
             incompletely. Run `sanctum-guard web login-link` for a new one.",
        )
    };
    if token.len() != 43
        || !token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return bad_link();
    }
    let dir = sh.state_dir.clone();
    let totp = match tokio::task::spawn_blocking(move || auth::totp_for(&dir)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "web: TOTP seed unreadable; refusing logins");
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "totp",
                "second factor unavailable",
            );
        }
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "totp", "internal"),
    };
    if let Some(t) = totp {
        match v["totp"].as_str() {
            None | Some("") => {
                return refuse(
                    "totp-required",
                    StatusCode::UNAUTHORIZED,
                    "enter the 6-digit code from your authenticator",
                )
            }
            Some(code) if !auth::totp_ok(&t, code) => {
                return refuse(
                    "bad-totp",
                    StatusCode::UNAUTHORIZED,
                    "wrong authenticator code",
                )
            }
            Some(_) => {}
        }
    }
    let dir = sh.state_dir.clone();
    let token = token.to_owned();
    let name = match tokio::task::spawn_blocking(move || login::consume(&dir, &token)).await {
        Ok(Ok(Some(n))) => n,
        Ok(Ok(None)) => return bad_link(),
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, "login", &e.to_string()),
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "login", "internal"),
    };
    let (id, view) = match sh.sessions.create(&name) {
        Ok(x) => x,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "session", &e),
    };
    tracing::info!(identity = %view.identity, peer = %peer, "web: signed in");
    set_cookie(session_json(sh, &view), session_cookie(sh, &id))
}

pub fn session_json(sh: &Shared, s: &SessionView) -> Resp {
    let totp = sh.state_dir.join(auth::TOTP_FILE).exists();
    json(
        StatusCode::OK,
        &json!({"identity": s.identity, "csrf": s.csrf, "expiresInS": s.expires_in.as_secs(),
                "totpEnrolled": totp, "baseUrl": sh.base_url}),
    )
}

pub fn logout(sh: &Shared, sid: &str) -> Resp {
    sh.sessions.remove(sid);
    set_cookie(
        json(StatusCode::OK, &json!({"ok": true})),
        session_cookie(sh, ""),
    )
}

pub fn revoke_all(sh: &Shared) -> Resp {
    let n = sh.sessions.revoke_all();
    tracing::info!(sessions = n, "web: every session revoked");
    set_cookie(
        json(StatusCode::OK, &json!({"ok": true, "revoked": n})),
        session_cookie(sh, ""),
    )
}
