//! What the read proxy adds to an HTTP read: N sequential GETs to a loopback server, direct
//! and through the proxy (credential, lookup in a hosts file, address check, connect,
//! audit record), each on a new connection as curl makes it. Prints p50/p99 of both and
//! the difference; the budget is 1 ms at p99.
//! `cargo bench --bench read_proxy` (N from SANCTUM_BENCH_N, default 2000). As root: the
//! server takes port 80 of 127.0.0.90.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use base64::Engine as _;
use sanctum_guard::audit::AuditLog;
use sanctum_guard::readproxy::{ReadProxy, ReadProxyOptions, ResolverOptions};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BODY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";

async fn get(addr: &str, req: &[u8]) -> Duration {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(req).await.unwrap();
    let mut v = Vec::new();
    s.read_to_end(&mut v).await.unwrap();
    assert!(v.ends_with(b"hello"), "{}", String::from_utf8_lossy(&v));
    t.elapsed()
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

fn main() {
    let n: usize = std::env::var("SANCTUM_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let server = TcpListener::bind("127.0.0.90:80").await.expect("bind 127.0.0.90:80 (root)");
        tokio::spawn(async move {
            while let Ok((mut s, _)) = server.accept().await {
                tokio::spawn(async move {
                    let _ = s.set_nodelay(true);
                    let mut buf = [0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await { Ok(k) if k > 0 => got.extend_from_slice(&buf[..k]), _ => return }
                    }
                    let _ = s.write_all(BODY).await;
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hosts"), "127.0.0.90 bench.test\n").unwrap();
        let (audit, _) = AuditLog::open(&dir.path().join("audit.jsonl")).unwrap();
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let opts = ReadProxyOptions {
            resolver: ResolverOptions {
                hosts_file: dir.path().join("hosts"),
                dns: false,
                treat_as_public: vec!["127.0.0.90".parse().unwrap()],
                timeout: Duration::from_secs(2),
            },
            ..Default::default()
        };
        let proxy = ReadProxy::start(opts, audit, rx).unwrap();
        let pass = proxy.admit("bench").unwrap();
        let url = pass.env()[0].1.clone();
        let cred = url.trim_start_matches("http://").split('@').next().unwrap().to_owned();
        let auth = base64::engine::general_purpose::STANDARD.encode(cred);
        let direct_req = b"GET /x HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n".to_vec();
        let proxy_req = format!("GET http://bench.test/x HTTP/1.1\r\nHost: bench.test\r\nProxy-Authorization: Basic {auth}\r\n\r\n").into_bytes();
        let proxy_addr = format!("127.0.0.1:{}", proxy.port());
        for _ in 0..200 {
            get("127.0.0.90:80", &direct_req).await;
            get(&proxy_addr, &proxy_req).await;
        }
        let (mut d, mut p) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            d.push(get("127.0.0.90:80", &direct_req).await);
            p.push(get(&proxy_addr, &proxy_req).await);
        }
        let (d50, d99, p50, p99) = (pct(&mut d, 0.5), pct(&mut d, 0.99), pct(&mut p, 0.5), pct(&mut p, 0.99));
        println!("read_proxy: N={n} GET on loopback, new connection each");
        println!("  direct      p50 {:>8.1} us  p99 {:>8.1} us", d50.as_secs_f64() * 1e6, d99.as_secs_f64() * 1e6);
        println!("  via proxy   p50 {:>8.1} us  p99 {:>8.1} us", p50.as_secs_f64() * 1e6, p99.as_secs_f64() * 1e6);
        println!("  added       p50 {:>8.1} us  p99 {:>8.1} us (budget 1000 us)",
            (p50.as_secs_f64() - d50.as_secs_f64()) * 1e6, (p99.as_secs_f64() - d99.as_secs_f64()) * 1e6);
        drop(pass);
    });
}
