//! The egress proxy's provider routes, run for real: `sanctum-guard egress` on loopback in
//! front of local HTTPS upstreams whose certificates a test CA (made here with rcgen) signed,
//! trusted through each route's `ca_file`. The upstream sees the route's key and never the
//! agent's own credential headers; two routes carry two keys in two headers; a certificate
//! for another name is refused before a byte of the request leaves; a method or path off the
//! route's list is refused and never reaches the upstream; an SSE answer arrives chunk by chunk
//! (the first before the upstream has finished); a route whose key file cannot be read
//! refuses; and no key is in the proxy's audit log or its output.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use sanctum_test_support as support;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use support::egress::*;
use support::process::*;
use tokio_rustls::rustls;

const KEY_A: &str = "sk-route-alpha-7f3e1c";
const KEY_B: &str = "sk-route-beta-2b9d44";

/// A test CA; `leaf(names)` issues a server certificate and key (PEM) for those names.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new() -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let pem = p.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(p, key),
        }
    }

    fn leaf(&self, names: &[&str]) -> (String, String) {
        let p = CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
            .unwrap();
        let key = KeyPair::generate().unwrap();
        (
            p.signed_by(&key, &self.issuer).unwrap().pem(),
            key.serialize_pem(),
        )
    }
}

/// What an upstream saw of one request: its head (lower-cased header names) and body.
struct Seen {
    head: String,
}

/// A local HTTPS provider: answers `ok <path>`, or on `/v1/stream` an SSE answer whose second
/// event waits until the test sends on the returned release channel.
fn provider(ca: &Ca, names: &[&str]) -> (u16, mpsc::Receiver<Seen>, mpsc::Sender<()>) {
    let (cert, key) = ca.leaf(names);
    let certs = rustls_pemfile::certs(&mut cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls_pemfile::private_key(&mut key.as_bytes())
        .unwrap()
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release = Arc::new(Mutex::new(release_rx));
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            let (tx, cfg, release) = (tx.clone(), cfg.clone(), release.clone());
            std::thread::spawn(move || {
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let conn = rustls::ServerConnection::new(cfg).unwrap();
                let mut s = rustls::StreamOwned::new(conn, c);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let at = loop {
                    match s.read(&mut chunk) {
                        Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                        _ => return,
                    }
                    if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..at]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                let _ = tx.send(Seen { head: head.clone() });
                if path == "/v1/stream" {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
                    let chunk = |t: &str| format!("{:x}\r\n{t}\r\n", t.len());
                    let _ = s.write_all(chunk("data: one-1111\n\n").as_bytes());
                    let _ = s.flush();
                    let _ = release
                        .lock()
                        .unwrap()
                        .recv_timeout(Duration::from_secs(20));
                    let _ =
                        s.write_all(format!("{}0\r\n\r\n", chunk("data: two-2222\n\n")).as_bytes());
                } else {
                    let body = format!("ok {path}");
                    let _ = s.write_all(
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
                            .as_bytes(),
                    );
                }
                let _ = s.flush();
                s.conn.send_close_notify();
                let _ = s.flush();
            });
        }
    });
    (port, rx, release_tx)
}

struct Proxy {
    port: u16,
    state: tempfile::TempDir,
    output: Arc<Mutex<String>>,
    _e: Egress,
}

fn start(policy: &Path) -> Proxy {
    let state = tempfile::tempdir().unwrap();
    let e = start_egress(
        &state.path().join("egress"),
        &["--policy", policy.to_str().unwrap()],
    );
    Proxy {
        port: e.port,
        output: e.output.clone(),
        _e: e,
        state,
    }
}

/// Sends one request (closing after it) and returns the whole answer.
fn ask(p: &Proxy, head: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(
        format!(
            "{head}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn write_key(dir: &Path, name: &str, key: &str) -> String {
    let f = dir.join(name);
    write_secret(&f, &format!("{key}\n"));
    f.to_string_lossy().into_owned()
}

#[test]
fn routes_add_their_own_key_verify_the_provider_and_pass_only_their_api() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let (port_a, seen_a, release_a) = provider(&ca, &["127.0.0.1"]);
    let (port_b, seen_b, _rb) = provider(&ca, &["127.0.0.1"]);
    // A certificate for another name, served on the address the route names.
    let (port_c, seen_c, _rc) = provider(&ca, &["provider.test", "127.0.0.2"]);
    let key_a = write_key(dir.path(), "alpha.key", KEY_A);
    let key_b = write_key(dir.path(), "beta.key", KEY_B);
    let ca = ca_file.display();
    let missing = dir.path().join("absent.key");
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            r#"version = 1
[[egress.routes]]
name = "alpha"
upstream = "https://127.0.0.1:{port_a}"
key_file = "{key_a}"
ca_file = "{ca}"
allow = ["POST /v1/chat/completions", "GET /v1/models", "POST /v1/stream"]
[[egress.routes]]
name = "beta"
upstream = "https://127.0.0.1:{port_b}/api"
key_file = "{key_b}"
header = "x-api-key: {{key}}"
ca_file = "{ca}"
allow = ["POST /v1/messages"]
[[egress.routes]]
name = "wrongname"
upstream = "https://127.0.0.1:{port_c}"
key_file = "{key_a}"
ca_file = "{ca}"
allow = ["GET /v1/models"]
[[egress.routes]]
name = "nokey"
upstream = "https://127.0.0.1:{port_a}"
key_file = "{}"
ca_file = "{ca}"
allow = ["GET /v1/models"]
"#,
            missing.display()
        ),
    )
    .unwrap();
    let p = start(&policy);
    let wait = |rx: &mpsc::Receiver<Seen>| {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a request upstream")
    };

    // The agent's credential headers are dropped; the route's key is what arrives.
    let a = ask(
        &p,
        "POST /providers/alpha/v1/chat/completions HTTP/1.1\r\nhost: egress\r\nauthorization: Bearer agent-own-key\r\nx-api-key: agent-x\r\ncookie: c=1",
        "{}",
    );
    assert!(
        a.starts_with("HTTP/1.1 200") && a.ends_with("ok /v1/chat/completions"),
        "{a}"
    );
    let h = wait(&seen_a).head.to_ascii_lowercase();
    assert!(h.starts_with("post /v1/chat/completions http/1.1"), "{h}");
    assert!(
        h.contains(&format!(
            "authorization: bearer {}",
            KEY_A.to_ascii_lowercase()
        )),
        "{h}"
    );
    assert!(
        !h.contains("agent-own-key") && !h.contains("agent-x") && !h.contains("cookie"),
        "{h}"
    );
    assert!(h.contains(&format!("host: 127.0.0.1:{port_a}")), "{h}");
    // Absolute form naming the proxy's own address (what a client behind a proxy setting sends).
    let a = ask(
        &p,
        &format!(
            "GET http://127.0.0.1:{}/providers/alpha/v1/models HTTP/1.1\r\nhost: 127.0.0.1:{}",
            p.port, p.port
        ),
        "",
    );
    assert!(a.ends_with("ok /v1/models"), "{a}");
    assert!(wait(&seen_a).head.contains(KEY_A));
    // Inside a CONNECT tunnel to the proxy itself (what OpenClaw's proxy client sends even for
    // plain HTTP).
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("CONNECT 127.0.0.1:{0} HTTP/1.1\r\nhost: 127.0.0.1:{0}\r\n\r\nGET /providers/alpha/v1/models HTTP/1.1\r\nhost: 127.0.0.1:{0}\r\nconnection: close\r\n\r\n", p.port).as_bytes())
        .unwrap();
    let mut tunnelled = String::new();
    let _ = s.read_to_string(&mut tunnelled);
    assert!(
        tunnelled.starts_with("HTTP/1.1 200 Connection established")
            && tunnelled.ends_with("ok /v1/models"),
        "{tunnelled}"
    );
    assert!(wait(&seen_a).head.contains(KEY_A));
    // A second route, its own key in its own header, under its base path.
    let b = ask(
        &p,
        "POST /providers/beta/v1/messages HTTP/1.1\r\nauthorization: Bearer agent",
        "{}",
    );
    assert!(b.ends_with("ok /api/v1/messages"), "{b}");
    let h = wait(&seen_b).head.to_ascii_lowercase();
    assert!(h.contains(&format!("x-api-key: {KEY_B}")), "{h}");
    assert!(
        !h.contains("authorization") && !h.contains(&KEY_A.to_ascii_lowercase()),
        "{h}"
    );

    // Off the list: refused with the reason, and nothing reaches the provider.
    let refused: [(&str, &str, &str); 7] = [
        (
            "DELETE /providers/alpha/v1/models HTTP/1.1",
            "403",
            "does not allow DELETE /v1/models",
        ),
        (
            "POST /providers/alpha/v1/files HTTP/1.1",
            "403",
            "it allows: POST /v1/chat/completions",
        ),
        (
            "GET /providers/alpha/v1/models/../../admin HTTP/1.1",
            "403",
            "read two ways",
        ),
        (
            "GET /providers/alpha/v1/models%2f..%2fx HTTP/1.1",
            "403",
            "read two ways",
        ),
        (
            "POST /providers/beta/v1/chat/completions HTTP/1.1",
            "403",
            "route beta does not allow",
        ),
        (
            "GET /providers/nosuch/v1/models HTTP/1.1",
            "404",
            "no provider route named \"nosuch\"",
        ),
        (
            "GET /providers/nokey/v1/models HTTP/1.1",
            "503",
            "route nokey has no key",
        ),
    ];
    for (line, status, why) in refused {
        let r = ask(&p, line, "");
        assert!(
            r.starts_with(&format!("HTTP/1.1 {status}")) && r.contains(why),
            "{line}: {r}"
        );
    }
    // A later request on a kept-alive route connection is for the routes only.
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /providers/alpha/v1/models HTTP/1.1\r\nhost: x\r\n\r\nGET http://127.0.0.1:9/v1/models HTTP/1.1\r\nhost: 127.0.0.1:9\r\nconnection: close\r\n\r\n").unwrap();
    let mut both = String::new();
    let _ = s.read_to_string(&mut both);
    assert!(
        both.contains("ok /v1/models")
            && both.contains("HTTP/1.1 400")
            && both.contains("route requests only"),
        "{both}"
    );
    assert!(wait(&seen_a).head.contains(KEY_A));
    assert!(
        seen_a.try_recv().is_err(),
        "a refused request reached the provider"
    );
    assert!(
        seen_b.try_recv().is_err(),
        "a refused request reached the provider"
    );

    // A certificate that does not name the upstream: refused, the request never sent.
    let c = ask(&p, "GET /providers/wrongname/v1/models HTTP/1.1", "");
    assert!(
        c.starts_with("HTTP/1.1 502") && c.contains("certificate"),
        "{c}"
    );
    assert!(
        seen_c.recv_timeout(Duration::from_millis(500)).is_err(),
        "sent over a bad certificate"
    );

    // SSE passes chunk by chunk: the first event arrives while the provider still holds back
    // the second.
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t = Instant::now();
    s.write_all(b"POST /providers/alpha/v1/stream HTTP/1.1\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).contains("data: one-1111") {
        let n = s
            .read(&mut buf)
            .expect("the first event before the provider finished");
        assert!(
            n > 0,
            "closed before the first event: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    let first = t.elapsed();
    assert!(!String::from_utf8_lossy(&got).contains("two-2222"));
    release_a.send(()).unwrap();
    let _ = s.read_to_end(&mut got);
    assert!(
        String::from_utf8_lossy(&got).contains("data: two-2222"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    eprintln!(
        "egress_routes: first SSE event through the route in {:.1} ms",
        first.as_secs_f64() * 1000.0
    );

    // Audited, each allow with its route, and no key anywhere the proxy writes.
    let log = std::fs::read_to_string(p.state.path().join("egress/egress-audit.jsonl")).unwrap();
    assert!(
        log.contains("allowed by route alpha") && log.contains("allowed by route beta"),
        "{log}"
    );
    assert!(
        log.contains("does not allow DELETE") && log.contains("certificate"),
        "{log}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let out = p.output.lock().unwrap().clone();
    assert!(
        out.contains("route /providers/alpha/") && out.contains("NO KEY"),
        "{out}"
    );
    for key in [KEY_A, KEY_B] {
        assert!(!log.contains(key), "a key in the audit log");
        assert!(!out.contains(key), "a key in the proxy's output");
    }
    let (code, rules, _) = guard_cli(
        &["egress", "rules", "--policy", &policy.to_string_lossy()],
        &[],
    );
    assert_eq!(code, 0);
    assert!(
        rules.contains("route /providers/beta/ -> https://127.0.0.1") && !rules.contains(KEY_B),
        "{rules}"
    );
}
