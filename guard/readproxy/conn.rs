//! One client connection of the read proxy: one request head, its credential, its method
//! and destination checked, then either a refusal the agent reads (status and a body saying
//! why) or the upstream response (plain HTTP) or a tunnel (CONNECT to 443).

use super::Shared;
use crate::audit::event::ReadProxyRecord;
use base64::Engine as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// Longest request head accepted.
const MAX_HEAD: usize = 16 * 1024;

pub(super) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            _ = shutdown.changed() => return,
        };
        let (s, peer) = tokio::select! {
            a = listener.accept() => match a {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "read proxy: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = s.set_nodelay(true);
            serve_one(s, peer, &shared).await;
            drop(permit);
        });
    }
}

/// A refusal: the status, and the sentence the agent reads.
type Refuse = (u16, String);

fn refuse(status: u16, why: impl Into<String>) -> Refuse {
    (status, why.into())
}

/// A plain-HTTP request to forward: its origin-form path and the headers kept.
type Forward = (String, Vec<(String, Vec<u8>)>);

/// What the request asks, once its head is read and judged well-formed.
struct Ask {
    run: Option<String>,
    method: String,
    host: String,
    port: u16,
    /// The head to send upstream (plain HTTP), `None` for CONNECT.
    forward: Option<Forward>,
}

/// Reads the head; returns it (with the terminating blank line).
async fn read_head(s: &mut TcpStream) -> Result<Vec<u8>, Refuse> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| refuse(400, format!("connection error: {e}")))?;
        if n == 0 {
            return Err(refuse(400, "connection closed before a request"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            buf.truncate(at + 4);
            return Ok(buf);
        }
        if buf.len() > MAX_HEAD {
            return Err(refuse(431, "request head too large"));
        }
    }
}

/// Splits `host[:port]` of an authority (IPv6 in brackets).
fn host_port(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => {
            let p = &authority[i + 1..];
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (&authority[..i], p.parse::<u16>().ok()?)
        }
        _ => (authority, default?),
    };
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

/// The run a `Proxy-Authorization: Basic` value names, if its credential is live.
fn run_of(shared: &Shared, value: &[u8]) -> Option<String> {
    let v = std::str::from_utf8(value).ok()?.trim();
    let b64 = v
        .strip_prefix("Basic ")
        .or_else(|| v.strip_prefix("basic "))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, token) = text.split_once(':')?;
    shared.run_of(user, token)
}

/// Judges the head's shape: credential, method, target, body. (The destination's address
/// is judged after, by the resolver.)
fn parse(shared: &Shared, head: &[u8], rec: &mut ReadProxyRecord) -> Result<Ask, Refuse> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(refuse(400, "malformed request head")),
    }
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Err(refuse(400, "malformed request line"));
    };
    rec.method = method.to_owned();
    rec.target = target.chars().take(300).collect();
    let auth = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("proxy-authorization"));
    let run = auth.and_then(|h| run_of(shared, h.value));
    rec.request_id.clone_from(&run);
    if run.is_none() {
        return Err(refuse(
            407,
            "no live run credential: only a run the guard started may use this proxy",
        ));
    }
    let has_body = req.headers.iter().any(|h| {
        (h.name.eq_ignore_ascii_case("content-length") && h.value.trim_ascii() != b"0")
            || h.name.eq_ignore_ascii_case("transfer-encoding")
    });
    if method == "CONNECT" {
        let (host, port) = host_port(target, None)
            .ok_or_else(|| refuse(400, "CONNECT target is not host:port"))?;
        if port != 443 {
            return Err(refuse(
                403,
                format!("CONNECT to port {port}: an autonomous read tunnels to port 443 only"),
            ));
        }
        return Ok(Ask {
            run,
            method: method.into(),
            host,
            port,
            forward: None,
        });
    }
    if method != "GET" && method != "HEAD" {
        return Err(refuse(
            405,
            format!("{method}: an autonomous read may only GET or HEAD (HTTPS through CONNECT)"),
        ));
    }
    if has_body {
        return Err(refuse(400, "a read sends no request body"));
    }
    let Some(rest) = target.strip_prefix("http://") else {
        return Err(refuse(
            400,
            "only absolute http:// requests are proxied (HTTPS goes through CONNECT)",
        ));
    };
    let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(refuse(400, "credentials in the URL are not proxied"));
    }
    let (host, port) =
        host_port(authority, Some(80)).ok_or_else(|| refuse(400, "bad host in the URL"))?;
    if port != 80 {
        return Err(refuse(
            403,
            format!("port {port}: an autonomous read reaches plain HTTP on port 80 only"),
        ));
    }
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p if p.starts_with('#') => "/".to_owned(),
        p => p.split('#').next().unwrap_or("/").to_owned(),
    };
    let keep = req
        .headers
        .iter()
        .filter(|h| {
            let n = h.name.to_ascii_lowercase();
            !(n.starts_with("proxy-")
                || n == "connection"
                || n == "keep-alive"
                || n == "te"
                || n == "upgrade")
        })
        .map(|h| (h.name.to_owned(), h.value.to_vec()))
        .collect();
    Ok(Ask {
        run,
        method: method.into(),
        host,
        port,
        forward: Some((path, keep)),
    })
}

async fn answer(s: &mut TcpStream, status: u16, why: &str) {
    let text = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("sanctum-guard read proxy: refused: {why}\n");
    let mut msg = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\nX-Sanctum-Refused: {}\r\n",
        body.len(),
        why.replace(['\r', '\n'], " ")
    );
    if status == 407 {
        msg.push_str("Proxy-Authenticate: Basic realm=\"sanctum-guard\"\r\n");
    }
    msg.push_str("\r\n");
    msg.push_str(&body);
    let _ = s.write_all(msg.as_bytes()).await;
    let _ = s.shutdown().await;
}

/// Connects to the first checked address that answers.
async fn connect_checked(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Refuse> {
    let mut last = String::from("no address");
    for a in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = format!("{a}: {e}"),
            Err(_) => last = format!("{a}: connect timed out"),
        }
    }
    Err(refuse(502, format!("cannot connect: {last}")))
}

/// Opens the way to the destination: directly to a checked address, or through the
/// upstream proxy (a CONNECT tunnel there for HTTPS).
async fn open(shared: &Shared, ask: &Ask) -> Result<(TcpStream, String), Refuse> {
    let o = &shared.opts;
    let checked = shared
        .opts
        .resolver
        .resolve(&ask.host, ask.port, o.upstream.is_some())
        .await
        .map_err(|r| refuse(403, r.to_string()))?;
    let Some(up) = o.upstream else {
        let addrs = checked.unwrap_or_default();
        let s = connect_checked(&addrs, o.head_timeout).await?;
        let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        return Ok((s, peer));
    };
    let mut s = connect_checked(&[up], o.head_timeout).await?;
    if ask.forward.is_none() {
        let target = format!("{}:{}", ask.host, ask.port);
        let line = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
        s.write_all(line.as_bytes())
            .await
            .map_err(|e| refuse(502, format!("upstream proxy: {e}")))?;
        let head = tokio::time::timeout(o.head_timeout, read_head(&mut s))
            .await
            .map_err(|_| refuse(502, "upstream proxy did not answer"))?
            .map_err(|(_, why)| refuse(502, format!("upstream proxy: {why}")))?;
        let status = head.get(9..12).unwrap_or_default();
        if status != b"200" {
            let line = String::from_utf8_lossy(&head);
            let first = line.lines().next().unwrap_or_default().to_owned();
            return Err(refuse(502, format!("upstream proxy refused: {first}")));
        }
    }
    Ok((s, format!("via {up}")))
}

async fn serve_one(mut s: TcpStream, peer: SocketAddr, shared: &Shared) {
    if !peer.ip().is_loopback() {
        return;
    }
    let mut rec = ReadProxyRecord {
        request_id: None,
        client: peer.to_string(),
        method: String::new(),
        target: String::new(),
        verdict: "deny",
        reason: String::new(),
        upstream: None,
        suppressed_before: None,
    };
    let o = &shared.opts;
    let judged = match tokio::time::timeout(o.head_timeout, read_head(&mut s)).await {
        Err(_) => Err(refuse(408, "no request head in time")),
        Ok(Err(r)) => Err(r),
        Ok(Ok(_)) if !shared.audit_ok() => Err(refuse(502, "the audit log cannot record requests")),
        Ok(Ok(head)) => match parse(shared, &head, &mut rec) {
            Ok(ask) => match tokio::time::timeout(o.head_timeout * 2, open(shared, &ask)).await {
                Ok(Ok(up)) => Ok((ask, up)),
                Ok(Err(r)) => Err(r),
                Err(_) => Err(refuse(502, "lookup and connect timed out")),
            },
            Err(r) => Err(r),
        },
    };
    let (ask, (mut up, upstream)) = match judged {
        Ok(x) => x,
        Err((status, why)) => {
            rec.reason.clone_from(&why);
            shared.record(rec);
            answer(&mut s, status, &why).await;
            return;
        }
    };
    rec.request_id.clone_from(&ask.run);
    rec.target = format!("{}:{}", ask.host, ask.port);
    rec.verdict = "allow";
    rec.reason = "public address".into();
    rec.upstream = Some(upstream);
    shared.record(rec);
    match &ask.forward {
        None => {
            if s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_ok()
            {
                splice(s, up, o.idle_timeout).await;
            }
        }
        Some((path, headers)) => {
            let line = if o.upstream.is_some() {
                format!("{} http://{}{path} HTTP/1.1\r\n", ask.method, ask.host)
            } else {
                format!("{} {path} HTTP/1.1\r\n", ask.method)
            };
            let mut out = line.into_bytes();
            for (n, v) in headers {
                out.extend_from_slice(n.as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(v);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"Connection: close\r\n\r\n");
            if up.write_all(&out).await.is_err() {
                return;
            }
            // Only the response flows back: nothing more the client sends (a pipelined
            // request, a body) reaches the destination unjudged.
            let mut buf = vec![0u8; 16384];
            loop {
                match tokio::time::timeout(o.idle_timeout, up.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    _ => break,
                }
            }
            let _ = s.shutdown().await;
        }
    }
}

/// Copies both ways until either side closes; a tunnel lives at most five idle timeouts.
async fn splice(mut a: TcpStream, mut b: TcpStream, idle: Duration) {
    let copy = tokio::io::copy_bidirectional(&mut a, &mut b);
    let _ = tokio::time::timeout(idle.max(Duration::from_secs(1)) * 5, copy).await;
}
