//! Provider routes: requests addressed to the proxy itself at `/providers/<name>/...` (origin
//! form, absolute form naming the address the client reached, or inside a CONNECT tunnel to
//! that address). Each is served as HTTP/1.1
//! (hyper, keep-alive), checked against its route's method and path list and the egress deny
//! rules, stripped of every credential header the agent sent, given the route's key, and sent
//! over TLS, with the upstream's name verified, to the one address the route's upstream
//! resolves to and may reach. The answer streams back frame by frame (SSE is never buffered).
//! The key lives in this process only: it is never logged, audited or echoed.

use super::proxy::Options;
use super::route_tls::{connect_tls, Replay};
use crate::audit::event::EgressRecord;
use crate::audit::tally::Tally;
use crate::audit::{AuditEvent, AuditLog};
use crate::policy::egress::{canonical_ip, HostPattern};
use crate::policy::egress::{split_host_port, DestHost, Destination};
use crate::policy::egress_routes::{split_route_target, ProviderRoute, RouteRefusal, ROUTE_PREFIX};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpStream;

type Body = BoxBody<Bytes, hyper::Error>;

/// Why the routes could not be set up (a start-up error).
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("route {route}: CA file {path}: {why}")]
    CaFile {
        route: String,
        path: String,
        why: String,
    },
    #[error("route {route}: TLS: {why}")]
    Tls { route: String, why: String },
}

/// One route as the proxy serves it.
struct Live {
    spec: ProviderRoute,
    /// The header value holding the key, or why there is none (then the route refuses).
    key: Result<HeaderValue, String>,
    tls: tokio_rustls::TlsConnector,
}

/// The proxy's provider routes.
pub struct Routes {
    live: Vec<Live>,
    denials: Tally<(IpAddr, &'static str)>,
}

/// Headers never forwarded upstream: hop-by-hop ones, and every way a client could send a
/// credential (the route's own header is dropped too, then set to the key).
const DROP_UP: [&str; 16] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "host",
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
];
/// Hop-by-hop headers of the answer (hyper frames the body again).
const DROP_DOWN: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

impl Routes {
    /// No routes: no request is claimed.
    pub fn none() -> Routes {
        Routes {
            live: Vec::new(),
            denials: Tally::default(),
        }
    }

    /// The routes with their keys (or why a key could not be read: that route refuses,
    /// the others serve).
    pub fn new(routes: Vec<(ProviderRoute, Result<String, String>)>) -> Result<Routes, RouteError> {
        let mut live = Vec::new();
        for (spec, key) in routes {
            let tls = super::route_tls::connector(&spec)?;
            let key = key.and_then(|k| {
                let mut v = HeaderValue::from_str(&spec.header_with(&k))
                    .map_err(|_| "the key holds characters a header cannot carry".to_owned())?;
                v.set_sensitive(true);
                Ok(v)
            });
            live.push(Live { spec, key, tls });
        }
        Ok(Routes {
            live,
            denials: Tally::default(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// One line per route for the proxy's start-up output: where it leads and whether its
    /// key was read (never the key).
    pub fn describe(&self) -> Vec<String> {
        self.live
            .iter()
            .map(|l| {
                let state = match &l.key {
                    Ok(_) => "key loaded".to_owned(),
                    Err(why) => format!("NO KEY, every request refused: {why}"),
                };
                format!(
                    "{}  ({state})",
                    crate::policy::egress_routes::describe_route(&l.spec)
                )
            })
            .collect()
    }

    /// Whether a request head is for a route: its target is `/providers/...`, in origin form
    /// or in absolute form naming `local`, the address the client reached.
    pub fn claims(&self, head: &[u8], local: Option<SocketAddr>) -> bool {
        if self.live.is_empty() {
            return false;
        }
        let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
        let Some(target) = line.split(|b| *b == b' ').nth(1) else {
            return false;
        };
        let Ok(target) = std::str::from_utf8(target) else {
            return false;
        };
        // A client that tunnels even plain HTTP asks for a tunnel to the proxy itself first.
        if line.starts_with(b"CONNECT ") {
            return local.is_some_and(|l| is_own(target, l));
        }
        if target.starts_with(ROUTE_PREFIX) {
            return true;
        }
        let Some(rest) = target.strip_prefix("http://") else {
            return false;
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        path.starts_with(ROUTE_PREFIX) && local.is_some_and(|l| is_own(authority, l))
    }

    /// Audits a refusal (the first of its client and kind in a window in full, the rest
    /// counted) and answers it with `status` and the reason.
    async fn refuse(
        &self,
        audit: &AuditLog,
        mut rec: EgressRecord,
        kind: &'static str,
        status: StatusCode,
        why: String,
    ) -> Response<Body> {
        rec.reason = why.clone();
        super::proxy::note_denial(&self.denials, audit, rec, kind).await;
        super::proxy::flush_denials(&self.denials, audit, false).await;
        text(status, &why)
    }
}

/// Whether `authority` (`host:port`) is the address `local` itself.
fn is_own(authority: &str, local: SocketAddr) -> bool {
    split_host_port(authority).is_some_and(|(h, p)| {
        p == local.port()
            && h.parse::<IpAddr>()
                .is_ok_and(|ip| canonical_ip(ip) == canonical_ip(local.ip()))
    })
}

fn text(status: StatusCode, why: &str) -> Response<Body> {
    let body = Full::new(Bytes::from(format!("sanctum-guard egress: {why}\n")))
        .map_err(|never| match never {})
        .boxed();
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("text/plain"));
    r
}

/// Serves a client connection whose first request head (`head`, without its blank line)
/// a route claimed, with `rest` the bytes read after it.
pub(super) async fn serve(
    s: TcpStream,
    peer: SocketAddr,
    head: Vec<u8>,
    rest: Vec<u8>,
    opts: Arc<Options>,
    audit: AuditLog,
) {
    let local = s.local_addr().ok();
    let mut s = s;
    // A tunnel to the proxy itself: the route requests come inside it.
    let replay = if head.starts_with(b"CONNECT ") {
        use tokio::io::AsyncWriteExt;
        if s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        rest
    } else {
        let mut replay = head;
        replay.extend_from_slice(b"\r\n\r\n");
        replay.extend_from_slice(&rest);
        replay
    };
    let io = TokioIo::new(Replay::new(replay, s));
    let (opts, audit) = (&opts, &audit);
    let svc = hyper::service::service_fn(move |req| async move {
        Ok::<_, Infallible>(handle(req, peer, local, opts, audit).await)
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(opts.head_timeout)
        .serve_connection(io, svc)
        .await;
}

async fn handle(
    req: Request<Incoming>,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    opts: &Options,
    audit: &AuditLog,
) -> Response<Body> {
    let routes = &opts.routes;
    let method = req.method().as_str().to_owned();
    let target = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    // The query stays out of the log: it is the agent's, and says nothing of the route.
    let path = target.split('?').next().unwrap_or_default().to_owned();
    let rec = super::undecided(peer, method.clone(), path);
    let refuse = |rec, kind, status, why| routes.refuse(audit, rec, kind, status, why);
    // A later request on a kept-alive connection is judged on its own: it must also be for
    // the proxy itself, never a way around the egress rules.
    if let Some(auth) = req.uri().authority() {
        if req.uri().scheme_str() != Some("http")
            || !local.is_some_and(|l| is_own(auth.as_str(), l))
        {
            let why = "a connection to a provider route carries route requests only".to_owned();
            return refuse(rec, "bad-request", StatusCode::BAD_REQUEST, why).await;
        }
    }
    let (name, path) = match split_route_target(&target) {
        Ok(x) => x,
        Err(e) => return refuse(rec, "no-route", StatusCode::NOT_FOUND, e.to_string()).await,
    };
    let Some(live) = routes.live.iter().find(|l| l.spec.name == name) else {
        let why = RouteRefusal::NoSuchRoute(name.to_owned()).to_string();
        return refuse(rec, "no-route", StatusCode::NOT_FOUND, why).await;
    };
    let spec = &live.spec;
    let key = match &live.key {
        Ok(k) => k.clone(),
        Err(why) => {
            let why = format!("route {name} has no key: {why}");
            return refuse(rec, "no-key", StatusCode::SERVICE_UNAVAILABLE, why).await;
        }
    };
    let up_path = match spec.permits(&method, path) {
        Ok(p) => p,
        Err(e) => return refuse(rec, "not-allowed", StatusCode::FORBIDDEN, e.to_string()).await,
    };
    let port = spec.upstream.ports.first().copied().unwrap_or(443);
    let host = match &spec.upstream.host {
        HostPattern::Ip(ip) => DestHost::Ip(*ip),
        HostPattern::Exact(n) | HostPattern::Below(n) => DestHost::Name(n.clone()),
    };
    let dest = Destination {
        host,
        port,
        plain: Some((method.clone(), up_path.clone())),
    };
    // Deny rules (the overlay's too) apply to a route's upstream as to any destination.
    if let super::overlay::Judged::Deny(r) = opts.rules.judge(&dest) {
        let why = format!("denied by {}", r.origin);
        return refuse(rec, "denied", StatusCode::FORBIDDEN, why).await;
    }
    let sender = match connect_tls(spec, &live.tls, &opts.own, opts.head_timeout).await {
        Ok(s) => s,
        Err(why) => {
            let why = format!("route {name}: {why}");
            return refuse(rec, "upstream-failed", StatusCode::BAD_GATEWAY, why).await;
        }
    };
    let (mut sender, upstream) = sender;
    let mut rec = rec;
    rec.verdict = "allow";
    rec.reason = format!("allowed by route {name} ({})", spec.origin);
    rec.upstream = Some(upstream.to_string());
    // The decision is on disk before a byte reaches the provider.
    if audit
        .record(AuditEvent::Egress(Box::new(rec)))
        .await
        .is_err()
    {
        return text(
            StatusCode::BAD_GATEWAY,
            "the audit log cannot record this request",
        );
    }
    let (parts, body) = req.into_parts();
    let mut up = Request::new(body);
    *up.method_mut() = parts.method;
    *up.uri_mut() = match up_path.parse() {
        Ok(u) => u,
        Err(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "the path is not a valid request target",
            )
        }
    };
    *up.headers_mut() = forwarded(&parts.headers, &DROP_UP, Some(&spec.header_name));
    let authority = if port == 443 {
        host_for_header(&spec.tls_name)
    } else {
        format!("{}:{port}", host_for_header(&spec.tls_name))
    };
    if let Ok(h) = HeaderValue::from_str(&authority) {
        up.headers_mut().insert(HOST, h);
    }
    if let Ok(n) = HeaderName::from_bytes(spec.header_name.as_bytes()) {
        up.headers_mut().insert(n, key);
    }
    let answer = match tokio::time::timeout(opts.idle_timeout, sender.send_request(up)).await {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            return text(
                StatusCode::BAD_GATEWAY,
                &format!("route {name}: upstream: {e}"),
            )
        }
        Err(_) => {
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                &format!("route {name}: no answer in time"),
            )
        }
    };
    let (parts, body) = answer.into_parts();
    let mut down = Response::new(body.boxed());
    *down.status_mut() = parts.status;
    *down.headers_mut() = forwarded(&parts.headers, &DROP_DOWN, None);
    down
}

fn host_for_header(h: &str) -> String {
    if h.contains(':') {
        format!("[{h}]")
    } else {
        h.to_owned()
    }
}

/// `headers` without `drop`, `also`, and whatever the Connection header names.
fn forwarded(headers: &HeaderMap, drop: &[&str], also: Option<&str>) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::new();
    for (n, v) in headers {
        let n_str = n.as_str();
        if drop.contains(&n_str) || also == Some(n_str) || named.iter().any(|x| x == n_str) {
            continue;
        }
        out.append(n.clone(), v.clone());
    }
    out
}
