//! Routing and the JSON API (the contract is in the README, "Web prompt"; the request lists
//! are `api_list`). Every request must name an allowed `Host` (DNS rebinding); every
//! state-changing one must also come from the page's own `Origin` and, once signed in, carry
//! the session's CSRF token.

use super::auth::{self, SessionView, Sessions};
use super::http::{error, json, secure, with_type, Resp};
use super::metrics::global as metrics;
use super::signin_guard::SignInGuard;
use super::view::entry_json;
use crate::inbox::Inbox;
use hyper::body::Incoming;
use hyper::header::{
    HeaderName, HeaderValue, AUTHORIZATION, COOKIE, HOST, ORIGIN, SET_COOKIE, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, StatusCode};
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tokio::sync::watch;

/// What every handler shares.
pub struct Shared {
    pub inbox: Inbox,
    /// Shared with the front door, which accepts a signed-in browser's cookie.
    pub sessions: Arc<Sessions>,
    pub signin: SignInGuard,
    /// Where login links and passkeys live (this guard's files, or its fleet's database).
    pub auth: super::auth_at::AuthAt,
    pub state_dir: PathBuf,
    pub audit_path: PathBuf,
    pub socket_path: PathBuf,
    pub https: bool,
    pub hosts: HostRule,
    pub base_url: String,
    pub sse_open: AtomicUsize,
    /// Open event streams per session id (see `events::MAX_STREAMS_PER_SESSION`).
    pub sse_per_session: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    pub shutdown: watch::Receiver<bool>,
    /// The Agent page's gateway connection (none: no gateway configured).
    pub agent: Option<Arc<crate::engine::agent::AgentControl>>,
    /// The engine beside the prompt: a card's run line and grants come from its plan.
    pub engine: Option<Arc<crate::engine::Engine>>,
    /// The push channels' health: a failing one is named, never a reason to be unready.
    pub notify: Arc<crate::notify::Health>,
    /// The passkey relying party (this base URL) and its started ceremonies.
    pub passkeys: Arc<super::passkey::Passkeys>,
    /// When History suggests a bounded grant (`[web] suggest_after`, `suggest_within_days`).
    pub suggest: crate::grants::SuggestRule,
    /// The reviewer accounts and their votes (tables of the inbox database).
    pub reviewers: super::reviewer_gate::Db,
    /// Partial approvals, for the open pages (`approval` events).
    pub votes: tokio::sync::broadcast::Sender<serde_json::Value>,
}

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inbox: Inbox,
        state_dir: PathBuf,
        audit_path: PathBuf,
        socket_path: PathBuf,
        https: bool,
        hosts: HostRule,
        base_url: String,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Shared {
            inbox,
            sessions: Arc::new(Sessions::default()),
            signin: SignInGuard::default(),
            auth: super::auth_at::AuthAt::local(&state_dir),
            state_dir: state_dir.clone(),
            audit_path,
            socket_path,
            https,
            hosts,
            sse_open: AtomicUsize::new(0),
            sse_per_session: std::sync::Mutex::default(),
            shutdown,
            agent: None,
            engine: None,
            notify: Arc::default(),
            passkeys: Arc::new(super::passkey::Passkeys::new(&base_url)),
            suggest: crate::grants::SuggestRule::default(),
            reviewers: Arc::new(super::reviewer_gate::ReviewerDb::new(
                state_dir.join(crate::inbox::DB_FILE),
                None,
            )),
            votes: tokio::sync::broadcast::channel(64).0,
            base_url,
        }
    }

    /// The per-session stream counts (a poisoned lock still counts).
    pub fn streams_per_session(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, usize>> {
        self.sse_per_session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn cookie_name(&self) -> &'static str {
        if self.https {
            "__Host-sg_session"
        } else {
            "sg_session"
        }
    }
}

/// Which `Host` values are this server.
#[derive(Debug, Clone)]
pub struct HostRule {
    exact: Vec<String>,
    /// Listening on every interface: any host name on this port.
    any_on_port: Option<u16>,
}

impl HostRule {
    pub(super) fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if self.exact.contains(&host) {
            return true;
        }
        self.any_on_port.is_some_and(|p| {
            host.rsplit_once(':')
                .is_some_and(|(h, port)| !h.is_empty() && port == p.to_string())
        })
    }
}

pub fn allowed_hosts(bound: SocketAddr, public_origin: Option<&str>) -> HostRule {
    let port = bound.port();
    let mut exact = vec![bound.to_string()];
    if bound.ip().is_loopback() || bound.ip().is_unspecified() {
        exact.extend([
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ]);
    }
    if let Some(o) = public_origin {
        if let Some(h) = o.split("://").nth(1) {
            exact.push(h.trim_end_matches('/').to_ascii_lowercase());
        }
    }
    HostRule {
        exact,
        any_on_port: bound.ip().is_unspecified().then_some(port),
    }
}

fn refuse(reason: &'static str, status: StatusCode, message: &str) -> Resp {
    metrics().web_refusal(reason);
    error(status, reason, message)
}

fn header(req: &Request<Incoming>, name: hyper::header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn cookie(req: &Request<Incoming>, name: &str) -> Option<String> {
    req.headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// The request's live session: `Ok(None)` when it has none; `Err` when a fleet's database
/// cannot confirm it (a read may still use what this guard last confirmed).
fn session_of(
    sh: &Shared,
    req: &Request<Incoming>,
    read: bool,
) -> Result<Option<(String, SessionView)>, auth::SessionError> {
    let Some(id) = cookie(req, sh.cookie_name()) else {
        return Ok(None);
    };
    Ok(sh.sessions.check_for(&id, read)?.map(|v| (id, v)))
}

/// The page's own origin sent this (and, when the browser says so, same-origin).
fn origin_ok(sh: &Shared, req: &Request<Incoming>) -> bool {
    let scheme = if sh.https { "https" } else { "http" };
    let host = header(req, HOST).unwrap_or("");
    let site_ok =
        header(req, HeaderName::from_static("sec-fetch-site")).is_none_or(|s| s == "same-origin");
    site_ok
        && header(req, ORIGIN)
            .is_some_and(|o| o.eq_ignore_ascii_case(&format!("{scheme}://{host}")))
}

pub async fn handle(sh: Arc<Shared>, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    let https = sh.https;
    secure(route(sh, req, peer).await, https)
}

async fn route(sh: Arc<Shared>, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    // An absolute-form target or a second Host header lets a proxy and this server
    // disagree on which host was asked for: refuse both before anything reads either.
    if req.uri().authority().is_some() || req.headers().get_all(HOST).iter().count() > 1 {
        return refuse(
            "bad-target",
            StatusCode::BAD_REQUEST,
            "ambiguous request target",
        );
    }
    if method == Method::GET && path == "/healthz" {
        return json(StatusCode::OK, &json!({"ok": true}));
    }
    if !header(&req, HOST).is_some_and(|h| sh.hosts.allows(h)) {
        return refuse("host", StatusCode::FORBIDDEN, "unknown Host header");
    }
    match (method.clone(), path.as_str()) {
        (Method::GET, "/readyz") => return readyz(&sh),
        (Method::GET, "/metrics") => return scrape(&sh, &req),
        _ => {}
    }
    if method == Method::GET || method == Method::HEAD {
        if let Some(r) = super::assets::page(&path) {
            return r;
        }
    }
    if !path.starts_with("/api/") {
        return error(StatusCode::NOT_FOUND, "not-found", "no such page");
    }
    let changes = !matches!(method, Method::GET | Method::HEAD);
    if changes && !origin_ok(&sh, &req) {
        return refuse(
            "origin",
            StatusCode::FORBIDDEN,
            "cross-origin request refused",
        );
    }
    if (method.clone(), path.as_str()) == (Method::POST, "/api/login") {
        return super::api_auth::login(&sh, req, peer).await;
    }
    if method == Method::POST && path.starts_with("/api/passkey-login/") {
        return super::passkey_api::open_route(&sh, req, peer).await;
    }
    let found = match session_of(&sh, &req, !changes) {
        Ok(f) => f,
        Err(e) => return super::api_auth::session_failed(e),
    };
    let Some((sid, session)) = found else {
        return refuse(
            "unauthenticated",
            StatusCode::UNAUTHORIZED,
            "not signed in: open a login link (sanctum-guard web login-link)",
        );
    };
    if changes
        && !auth::csrf_ok(
            &session,
            header(&req, HeaderName::from_static("x-csrf-token")),
        )
    {
        return refuse("csrf", StatusCode::FORBIDDEN, "missing or wrong CSRF token");
    }
    // Every signed-in call is its account's: a removed account's session ends here.
    let read = matches!(method, Method::GET | Method::HEAD);
    let role = match super::reviewer_gate::role_for(&sh, &session, read).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let segs: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
    if let Some(r) = super::reviewer_gate::role_refusal(role, &method, &segs) {
        return r;
    }
    match (method, segs.as_slice()) {
        (Method::GET, ["session"]) => super::api_auth::session_json(&sh, &session, role),
        (Method::POST, ["logout"]) => super::api_auth::logout(&sh, &sid),
        (Method::POST, ["sessions", "revoke"]) => super::api_auth::revoke_all(&sh),
        (Method::GET, ["requests"]) => {
            super::api_list::list(&sh, req.uri().query().unwrap_or("")).await
        }
        (Method::GET, ["requests", id]) => one(&sh, id).await,
        (Method::POST, ["requests", id, "decision"]) => {
            let id = id.to_string();
            super::api_decide::decide(&sh, req, &id, &session, peer).await
        }
        (_, ["passkeys", ..]) | (Method::POST, ["requests", _, "passkey"]) => {
            super::passkey_api::route(&sh, req, &segs, &session, peer).await
        }
        (Method::GET, ["events"]) => super::events::stream(sh.clone(), sid),
        (Method::GET, ["grants"]) => super::grants_page::list(&sh).await,
        (Method::GET, ["grants", "suggestions"]) => super::grants_page::suggestions_json(&sh),
        (Method::POST, ["grants", "suggestions", id, "accept"]) => {
            super::grants_page::accept(&sh, id, &session).await
        }
        (Method::POST, ["grants", id, "revoke"]) => {
            super::grants_page::revoke(&sh, id, &session).await
        }
        (Method::GET, ["audit", "verify"]) => verify(&sh).await,
        (Method::GET, ["audit", seq]) => super::api_audit::record(&sh, seq).await,
        (_, ["agent", ..]) => super::agent::route(&sh, req, &segs, &session, peer).await,
        (_, ["session" | "logout" | "requests" | "events" | "login" | "grants"]) => error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method",
            "method not allowed",
        ),
        _ => error(StatusCode::NOT_FOUND, "not-found", "no such endpoint"),
    }
}

/// `GET /metrics`: the open series to anyone; with the operator's bearer token, the
/// sign-in series too (see `metrics`); a wrong token is refused, not served less.
fn scrape(sh: &Shared, req: &Request<Incoming>) -> Resp {
    use super::metrics::{scrape_access, Scrape};
    let full = match scrape_access(&sh.state_dir, header(req, AUTHORIZATION)) {
        Scrape::Open => false,
        Scrape::Full => true,
        Scrape::Refused => {
            let mut r = refuse(
                "metrics-token",
                StatusCode::UNAUTHORIZED,
                "wrong or unconfigured metrics scrape token",
            );
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    };
    with_type(
        StatusCode::OK,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        metrics().render(full),
    )
}

fn readyz(sh: &Shared) -> Resp {
    use nix::unistd::{access, AccessFlags};
    use std::os::unix::fs::FileTypeExt;
    let socket = std::fs::metadata(&sh.socket_path).is_ok_and(|m| m.file_type().is_socket());
    let db = sh.state_dir.join(crate::inbox::DB_FILE);
    // O(1): the store answers a constant query, whatever the number of pending requests.
    // A fleet keeps no inbox file in the state dir: its database is the inbox.
    let inbox = sh.inbox.healthy()
        && (sh.inbox.fleet_db().is_some() || access(&db, AccessFlags::W_OK).is_ok());
    let audit = access(&sh.audit_path, AccessFlags::W_OK).is_ok();
    let ok = socket && inbox && audit;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // A failing push channel is named here but never makes the guard unready: decisions
    // do not wait for it.
    json(
        status,
        &json!({"ok": ok, "socket": socket, "inbox": inbox, "audit": audit,
                "notify": sh.notify.json()}),
    )
}

pub(super) fn query_param(q: &str, key: &str) -> Option<String> {
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_decode(v))
}

pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push(h * 16 + l);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn one(sh: &Shared, id: &str) -> Resp {
    match sh.inbox.get(id) {
        Ok(Some(e)) => {
            let mut items = [entry_json(&e, None, sh.engine.as_deref())];
            if let Err(r) = super::reviewer_gate::add_votes(sh, &mut items).await {
                return r;
            }
            let [v] = items;
            json(StatusCode::OK, &v)
        }
        Ok(None) => error(StatusCode::NOT_FOUND, "unknown-id", "no such request"),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "inbox", &e.to_string()),
    }
}

async fn verify(sh: &Shared) -> Resp {
    let path = sh.audit_path.clone();
    let res = tokio::task::spawn_blocking(move || crate::audit::verify(&path)).await;
    match res {
        Ok(Ok(crate::audit::Verification::Ok { records })) => {
            json(StatusCode::OK, &json!({"ok": true, "records": records}))
        }
        Ok(Ok(crate::audit::Verification::Broken { line, what, .. })) => json(
            StatusCode::OK,
            &json!({"ok": false, "line": line, "what": what}),
        ),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, "audit", &e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "audit", &e.to_string()),
    }
}

/// A `Set-Cookie` for the session (empty id = clear it).
pub fn session_cookie(sh: &Shared, id: &str) -> HeaderValue {
    let age = if id.is_empty() {
        0
    } else {
        auth::ABSOLUTE_TTL.as_secs()
    };
    let secure = if sh.https { "; Secure" } else { "" };
    let v = format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={age}{secure}",
        sh.cookie_name()
    );
    HeaderValue::from_str(&v).unwrap_or(HeaderValue::from_static("x=; Max-Age=0"))
}

pub fn set_cookie(mut r: Resp, v: HeaderValue) -> Resp {
    r.headers_mut().insert(SET_COOKIE, v);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_rule_accepts_only_this_server() {
        let loopback = allowed_hosts("127.0.0.1:8484".parse().expect("addr"), None);
        for (host, ok) in [
            ("127.0.0.1:8484", true),
            ("localhost:8484", true),
            ("LOCALHOST:8484", true),
            ("[::1]:8484", true),
            ("127.0.0.1", false),
            ("127.0.0.1:8485", false),
            ("evil.example:8484", false),
            ("127.0.0.1:8484.evil.example", false),
            ("", false),
        ] {
            assert_eq!(loopback.allows(host), ok, "{host}");
        }
        let any = allowed_hosts(
            "0.0.0.0:8484".parse().expect("addr"),
            Some("https://g.example:443"),
        );
        assert!(any.allows("10.0.0.5:8484") && any.allows("g.example:443"));
        assert!(!any.allows("10.0.0.5:80") && !any.allows(":8484"));
    }

    #[test]
    fn percent_decoding_never_panics() {
        for (q, want) in [
            ("a%20b", "a b"),
            ("a+b", "a b"),
            ("%", "%"),
            ("%4", "%4"),
            ("%zz", "%zz"),
            ("%e2%80%ae", "\u{202e}"),
            ("é%", "é%"),
        ] {
            assert_eq!(percent_decode(q), want, "{q}");
        }
    }
}
