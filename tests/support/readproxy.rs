//! A small network lab on loopback for the read proxy: a "public" web server (plain HTTP on
//! port 80 and HTTPS on 443 with a certificate the test trusts) on an address the proxy is
//! told to take as public, internal listeners that count every connection, and the proxy
//! itself with a test hosts file and no DNS. Ports 80/443 need root (the suites run as root).

use sanctum_guard::audit::AuditLog;
use sanctum_guard::readproxy::{ReadProxy, ReadProxyOptions, ResolverOptions};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A listener that accepts and counts connections, answering a marker.
pub struct Internal {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Internal {
    pub async fn start(addr: &str) -> Internal {
        let l = TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                h.fetch_add(1, Ordering::SeqCst);
                let _ = s
                    .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 15\r\n\r\nINTERNAL-SECRET")
                    .await;
            }
        });
        Internal {
            addr: addr.parse().unwrap(),
            hits,
        }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// The response of the public server to `path`: `/redirect?to=URL` redirects there.
fn respond(head: &str) -> String {
    let path = head.split(' ').nth(1).unwrap_or("/");
    if let Some(to) = path.strip_prefix("/redirect?to=") {
        return format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    }
    let body = "public-ok\n";
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn serve_http<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut s: S) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk).await {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let _ = s.write_all(respond(&head).as_bytes()).await;
    let _ = s.shutdown().await;
}

/// The "public" server on `ip`:80 and `ip`:443 (certificate for `name`); returns the CA
/// file a client trusts.
pub async fn public_server(ip: &str, name: &str, dir: &Path) -> PathBuf {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args([
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            &format!("subjectAltName=DNS:{name}"),
        ])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let certs: Vec<_> = rustls_pemfile::certs(&mut &std::fs::read(&cert).unwrap()[..])
        .collect::<Result<_, _>>()
        .unwrap();
    let k = rustls_pemfile::private_key(&mut &std::fs::read(&key).unwrap()[..])
        .unwrap()
        .unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let cfg = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, k)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let plain = TcpListener::bind(format!("{ip}:80")).await.unwrap();
    let tls = TcpListener::bind(format!("{ip}:443")).await.unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = plain.accept().await {
            tokio::spawn(serve_http(s));
        }
    });
    tokio::spawn(async move {
        while let Ok((s, _)) = tls.accept().await {
            let a = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(t) = a.accept(s).await {
                    serve_http(t).await;
                }
            });
        }
    });
    cert
}

/// The proxy with `hosts` as its hosts file, no DNS, `public` taken as public; its audit
/// log is `dir/audit.jsonl`.
pub fn proxy(dir: &Path, hosts: &str, public: &[&str]) -> (ReadProxy, PathBuf) {
    let hosts_file = dir.join("hosts");
    std::fs::write(&hosts_file, hosts).unwrap();
    let log = dir.join("audit.jsonl");
    let (audit, _) = AuditLog::open(&log).unwrap();
    let opts = ReadProxyOptions {
        resolver: ResolverOptions {
            hosts_file,
            dns: false,
            treat_as_public: public
                .iter()
                .map(|p| p.parse::<IpAddr>().unwrap())
                .collect(),
            timeout: Duration::from_secs(2),
        },
        ..Default::default()
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    // The sender lives as long as the test: leak it so the proxy never sees a shutdown.
    std::mem::forget(_tx);
    (ReadProxy::start(opts, audit, rx).unwrap(), log)
}

/// The read-proxy records of the audit log, as JSON.
pub fn records(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "read-proxy")
        .collect()
}
