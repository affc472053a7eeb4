//! Response helpers of the web door: every response carries the security headers (strict
//! CSP with no inline script or style, no framing, no referrer, no sniffing, no caching of
//! API data); JSON errors have one shape `{"error": code, "message": sentence}`.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::time::Duration;

pub type Body = BoxBody<Bytes, Infallible>;
pub type Resp = Response<Body>;

/// Request bodies of a signed-in session larger than this get 413.
pub const MAX_BODY: usize = 1024 * 1024;
/// Request bodies before sign-in larger than this get 413. A sign-in body is a 43-character
/// token and a 6-digit code: anyone can send one, so it must not cost the guard more than
/// a few KiB each (1,000 bodies of 1 MB once grew the guard by 1.2 GB).
pub const MAX_SIGNIN_BODY: usize = 4 * 1024;
/// A body must arrive within this (slow clients cannot hold a handler).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

pub fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).boxed()
}

/// Adds the headers every response carries.
pub fn secure(mut r: Resp, https: bool) -> Resp {
    let h = r.headers_mut();
    let set = |h: &mut hyper::HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(h, "content-security-policy", CSP);
    set(h, "x-frame-options", "DENY");
    set(h, "referrer-policy", "no-referrer");
    set(h, "x-content-type-options", "nosniff");
    set(h, "cross-origin-opener-policy", "same-origin");
    set(h, "cross-origin-resource-policy", "same-origin");
    set(
        h,
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    );
    if !h.contains_key(CACHE_CONTROL) {
        set(h, "cache-control", "no-store");
    }
    if https {
        set(h, "strict-transport-security", "max-age=31536000");
    }
    r
}

pub fn with_type(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Resp {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

pub fn json(status: StatusCode, v: &serde_json::Value) -> Resp {
    with_type(status, "application/json", v.to_string())
}

pub fn error(status: StatusCode, code: &str, message: &str) -> Resp {
    json(
        status,
        &serde_json::json!({"error": code, "message": message}),
    )
}

/// Why a body could not be read.
pub enum BodyError {
    /// Over the limit (bytes) of its endpoint.
    TooLarge(usize),
    Slow,
    Broken,
}

impl BodyError {
    pub fn response(&self) -> Resp {
        match self {
            BodyError::TooLarge(limit) => error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                &format!("request body over the {limit}-byte limit of this endpoint"),
            ),
            BodyError::Slow => error(
                StatusCode::REQUEST_TIMEOUT,
                "slow-body",
                "request body did not arrive in time",
            ),
            BodyError::Broken => error(StatusCode::BAD_REQUEST, "bad-body", "unreadable body"),
        }
    }
}

/// Reads the whole body, at most [`MAX_BODY`] bytes, within [`BODY_TIMEOUT`].
pub async fn read_body(body: Incoming, declared: Option<u64>) -> Result<Bytes, BodyError> {
    read_body_max(body, declared, MAX_BODY).await
}

/// Reads the whole body, at most `max` bytes, within [`BODY_TIMEOUT`]. A declared length
/// over `max` is refused before a byte is read; an undeclared (chunked) one stops at `max`:
/// never more than `max` is buffered, and the rest is never read (the connection closes).
pub async fn read_body_max(
    body: Incoming,
    declared: Option<u64>,
    max: usize,
) -> Result<Bytes, BodyError> {
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge(max));
    }
    let collect = Limited::new(body, max).collect();
    match tokio::time::timeout(BODY_TIMEOUT, collect).await {
        Err(_) => Err(BodyError::Slow),
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge(max)),
        Ok(Err(_)) => Err(BodyError::Broken),
    }
}
