//! A provider route's way to its upstream: the trust store (Mozilla's roots, plus the route's
//! own CA file when it names one), the connection to an address the route's upstream may reach
//! (as an egress rule of its host: a name never reaches loopback or link-local, nor a private
//! address unless the route is `internal`), the TLS handshake with the upstream's name
//! verified, and the HTTP/1.1 client on it. Also the replay of a request head the proxy read
//! before it knew the request was a route's.

use super::route::RouteError;
use super::rules::{may_reach, OwnNets};
use crate::policy::egress_routes::ProviderRoute;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls_pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// The TLS client of one route.
pub(super) fn connector(spec: &ProviderRoute) -> Result<tokio_rustls::TlsConnector, RouteError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &spec.ca_file {
        let bad = |why: String| RouteError::CaFile {
            route: spec.name.clone(),
            path: path.clone(),
            why,
        };
        let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &pem[..])
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no certificate in it".into()));
        }
        for c in certs {
            roots.add(c).map_err(|e| bad(e.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| RouteError::Tls {
            route: spec.name.clone(),
            why: e.to_string(),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(cfg)))
}

/// Resolves the route's upstream, connects to the first address it may reach, verifies the
/// upstream's certificate for its name and starts HTTP/1.1 on it; the error says why not.
pub(super) async fn connect_tls(
    spec: &ProviderRoute,
    tls: &tokio_rustls::TlsConnector,
    own: &OwnNets,
    timeout: Duration,
) -> Result<(SendRequest<Incoming>, SocketAddr), String> {
    let port = spec.upstream.ports.first().copied().unwrap_or(443);
    let host = spec.tls_name.as_str();
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => return Err(format!("cannot resolve {host}: {e}")),
            Err(_) => return Err(format!("resolving {host} timed out")),
        };
    let mut last = format!("{host} resolves to no address");
    for a in addrs {
        if let Err(why) = may_reach(&spec.upstream, a.ip(), own) {
            last = why;
            continue;
        }
        let tcp = match tokio::time::timeout(timeout, TcpStream::connect(a)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                last = format!("{a}: {e}");
                continue;
            }
            Err(_) => {
                last = format!("{a}: connect timed out");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let name = ServerName::try_from(host.to_owned()).map_err(|e| format!("{host}: {e}"))?;
        let stream = match tokio::time::timeout(timeout, tls.connect(name, tcp)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("TLS with {host} ({a}): {e}")),
            Err(_) => return Err(format!("TLS with {host} ({a}) timed out")),
        };
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("{host}: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        return Ok((sender, a));
    }
    Err(last)
}

/// A client connection whose first bytes were already read: they are read again first.
pub(super) struct Replay {
    first: Vec<u8>,
    at: usize,
    inner: TcpStream,
}

impl Replay {
    pub(super) fn new(first: Vec<u8>, inner: TcpStream) -> Replay {
        Replay {
            first,
            at: 0,
            inner,
        }
    }
}

impl AsyncRead for Replay {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at < self.first.len() {
            let n = buf.remaining().min(self.first.len() - self.at);
            let from = self.at;
            buf.put_slice(&self.first[from..from + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Replay {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
