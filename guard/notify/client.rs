//! The one HTTP client of the notifier: hyper over rustls (ring) with the webpki roots, so a
//! real service's certificate and host name are verified; plain `http://` for a local relay.
//! Bounded in time; errors never carry the URL (a Telegram URL holds the bot token).

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::time::Duration;
use tokio_rustls::rustls;

/// One attempt, connect to last byte.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A service's answer beyond this is cut (only Telegram's is read).
const MAX_ANSWER: usize = 64 * 1024;

/// Why one attempt failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SendError {
    #[error("HTTP {0}")]
    Status(u16),
    #[error("connection failed: {0}")]
    Connect(String),
    #[error("no answer in {0} s")]
    Timeout(u64),
    #[error("unexpected answer: {0}")]
    Answer(String),
    #[error("TLS setup: {0}")]
    Tls(String),
}

impl SendError {
    /// Worth another attempt: the service or the path to it may come back.
    pub fn retryable(&self) -> bool {
        match self {
            SendError::Status(s) => *s >= 500 || *s == 429 || *s == 408,
            SendError::Connect(_) | SendError::Timeout(_) => true,
            SendError::Answer(_) | SendError::Tls(_) => false,
        }
    }
}

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

#[derive(Clone)]
pub struct HttpClient(Client<Https, Full<Bytes>>);

impl HttpClient {
    pub fn new() -> Result<HttpClient, SendError> {
        let provider = rustls::crypto::ring::default_provider();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| SendError::Tls(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(HttpClient(
            Client::builder(TokioExecutor::new()).build(https),
        ))
    }

    /// POSTs `body` as JSON with `headers`; the answer's body on a 2xx.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Bytes, SendError> {
        let mut req = hyper::Request::post(url).header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, v.as_str());
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| SendError::Answer("a request that cannot be built".into()))?;
        let exchange = async {
            let resp = self
                .0
                .request(req)
                .await
                .map_err(|e| SendError::Connect(connect_reason(&e)))?;
            let status = resp.status().as_u16();
            let body = Limited::new(resp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            if (200..300).contains(&status) {
                Ok(body)
            } else {
                Err(SendError::Status(status))
            }
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| SendError::Timeout(TIMEOUT.as_secs()))?
    }
}

/// The innermost cause (refused, reset, certificate), never the URL.
fn connect_reason(e: &hyper_util::client::legacy::Error) -> String {
    let mut src: &dyn std::error::Error = e;
    while let Some(s) = src.source() {
        src = s;
    }
    src.to_string()
}
