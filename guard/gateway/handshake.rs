//! The front door's side of a client's WebSocket upgrade (RFC 6455 4.2), done here rather
//! than by tungstenite so that bytes a client sends right behind its request (a pipelined
//! first frame) stay with the door's frame reader: tungstenite would keep them in its own
//! buffer. The request must arrive whole within a deadline (a client that never finishes it
//! does not hold a connection slot) and is held to a size. A request that is not a WebSocket
//! upgrade gets 400; one the door's checks refuse gets their status. No extension or
//! subprotocol is ever agreed: the door passes frames as they are.

use bytes::BytesMut;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::http::{self, StatusCode};

/// Largest upgrade request the door reads.
const MAX_REQUEST: usize = 16 * 1024;

/// A refused upgrade: its status and body.
pub type Refusal = (StatusCode, &'static str);

/// Why a client was not upgraded.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("no whole upgrade request within {0:?}")]
    TimedOut(Duration),
    #[error("upgrade request over {MAX_REQUEST} bytes")]
    TooLarge,
    #[error("connection ended inside the upgrade request")]
    Truncated,
    #[error("bad upgrade request: {0}")]
    Bad(String),
    #[error("refused: {}", .0 .0)]
    Refused(Refusal),
}

/// Reads the upgrade request from `io` within `within`, runs `check` on it and answers: 101,
/// or the refusal. Returns the bytes read past the request (the client's first frames).
pub async fn accept(
    io: &mut TcpStream,
    within: Duration,
    check: impl FnOnce(&Request) -> Result<(), Refusal>,
) -> Result<BytesMut, HandshakeError> {
    let (req, rest) = tokio::time::timeout(within, read_request(io))
        .await
        .unwrap_or(Err(HandshakeError::TimedOut(within)))?;
    let key = match upgrade_key(&req) {
        Ok(k) => k,
        Err(e) => {
            respond(io, (StatusCode::BAD_REQUEST, "not a websocket upgrade\n")).await?;
            return Err(e);
        }
    };
    if let Err(refusal) = check(&req) {
        respond(io, refusal).await?;
        return Err(HandshakeError::Refused(refusal));
    }
    let accept = derive_accept_key(key.as_bytes());
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    io.write_all(head.as_bytes()).await?;
    Ok(rest)
}

async fn read_request(io: &mut TcpStream) -> Result<(Request, BytesMut), HandshakeError> {
    let mut buf = BytesMut::with_capacity(2048);
    loop {
        if buf.len() >= MAX_REQUEST {
            return Err(HandshakeError::TooLarge);
        }
        if io.read_buf(&mut buf).await? == 0 {
            return Err(HandshakeError::Truncated);
        }
        if let Some((req, n)) = parse(&buf)? {
            let _ = buf.split_to(n);
            return Ok((req, buf));
        }
    }
}

/// The request at the start of `buf` and its length (None: not all here yet).
fn parse(buf: &[u8]) -> Result<Option<(Request, usize)>, HandshakeError> {
    let bad = |e: &dyn std::fmt::Display| HandshakeError::Bad(e.to_string());
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Request::new(&mut headers);
    let n = match r.parse(buf).map_err(|e| bad(&e))? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Ok(None),
    };
    let version = match r.version {
        Some(1) => http::Version::HTTP_11,
        _ => return Err(HandshakeError::Bad("not HTTP/1.1".into())),
    };
    let mut req = http::Request::builder()
        .method(r.method.unwrap_or(""))
        .uri(r.path.unwrap_or(""))
        .version(version);
    for h in r.headers.iter() {
        req = req.header(h.name, h.value);
    }
    let req = req.body(()).map_err(|e| bad(&e))?;
    Ok(Some((req, n)))
}

/// RFC 6455 4.2.1's checks of the request; its `Sec-WebSocket-Key`.
fn upgrade_key(req: &Request) -> Result<String, HandshakeError> {
    let bad = |what: &str| Err(HandshakeError::Bad(what.into()));
    if req.method() != http::Method::GET {
        return bad("not GET");
    }
    let has = |name: &str, token: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !has("connection", "upgrade") {
        return bad("no Connection: Upgrade");
    }
    if !has("upgrade", "websocket") {
        return bad("no Upgrade: websocket");
    }
    if !has("sec-websocket-version", "13") {
        return bad("not WebSocket version 13");
    }
    match req
        .headers()
        .get("sec-websocket-key")
        .and_then(|k| k.to_str().ok())
    {
        Some(k) if !k.is_empty() => Ok(k.to_owned()),
        _ => bad("no Sec-WebSocket-Key"),
    }
}

async fn respond(io: &mut TcpStream, (status, body): Refusal) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nConnection: close\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    io.write_all(head.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPGRADE: &str = "GET /door/x HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\n\
        Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

    #[test]
    fn a_websocket_upgrade_is_recognised_and_others_are_not() {
        let (req, n) = parse(UPGRADE.as_bytes()).expect("parse").expect("whole");
        assert_eq!(n, UPGRADE.len());
        assert_eq!(req.uri().path(), "/door/x");
        assert_eq!(
            upgrade_key(&req).expect("upgrade"),
            "dGhlIHNhbXBsZSBub25jZQ=="
        );
        assert!(parse(&UPGRADE.as_bytes()[..30]).expect("partial").is_none());
        let cases = [
            (UPGRADE.replace("GET", "POST"), "not GET"),
            (
                UPGRADE.replace("keep-alive, Upgrade", "close"),
                "Connection",
            ),
            (
                UPGRADE.replace("Upgrade: websocket", "Upgrade: h2c"),
                "Upgrade",
            ),
            (UPGRADE.replace("Version: 13", "Version: 8"), "version"),
            (UPGRADE.replace("Sec-WebSocket-Key", "X-Key"), "Key"),
        ];
        for (text, want) in cases {
            let (req, _) = parse(text.as_bytes()).expect("parse").expect("whole");
            let e = upgrade_key(&req).expect_err(want).to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        let e = parse(b"GET / HTTP/1.0\r\n\r\n")
            .expect_err("1.0")
            .to_string();
        assert!(e.contains("HTTP/1.1"), "{e}");
    }

    /// What the door answers `request` (pipelined with `behind`) with `check`, and what
    /// `accept` returned.
    async fn answer(
        request: &str,
        behind: &[u8],
        check: impl FnOnce(&Request) -> Result<(), Refusal>,
    ) -> (String, Result<BytesMut, HandshakeError>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let mut c = TcpStream::connect(l.local_addr().expect("addr"))
            .await
            .expect("connect");
        c.write_all(&[request.as_bytes(), behind].concat())
            .await
            .expect("write");
        let (mut s, _) = l.accept().await.expect("accept");
        let r = accept(&mut s, Duration::from_secs(5), check).await;
        drop(s);
        let mut got = String::new();
        c.read_to_string(&mut got).await.expect("read");
        (got, r)
    }

    /// 101 with the key's accept value, the pipelined bytes kept; a refusal's status; 400
    /// for a request that is not an upgrade.
    #[tokio::test]
    async fn the_door_answers_the_upgrade_itself() {
        let (got, r) = answer(UPGRADE, b"\x81\x80frame", |_| Ok(())).await;
        assert!(got.starts_with("HTTP/1.1 101 "), "{got}");
        assert!(got.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert_eq!(&r.expect("upgraded")[..], b"\x81\x80frame");
        let (got, r) = answer(UPGRADE, b"", |_| {
            Err((StatusCode::UNAUTHORIZED, "a door link is required\n"))
        })
        .await;
        assert!(got.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\na door link is required\n"), "{got}");
        assert!(matches!(r, Err(HandshakeError::Refused(_))));
        let plain = "GET /door/x HTTP/1.1\r\nHost: h\r\n\r\n";
        let (got, r) = answer(plain, b"", |_| panic!("not checked")).await;
        assert!(got.starts_with("HTTP/1.1 400 "), "{got}");
        assert!(matches!(r, Err(HandshakeError::Bad(_))));
    }

    /// A client that never finishes its request is dropped at the deadline, with no answer.
    #[tokio::test]
    async fn a_request_never_finished_times_out() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let mut c = TcpStream::connect(l.local_addr().expect("addr"))
            .await
            .expect("connect");
        c.write_all(&UPGRADE.as_bytes()[..40]).await.expect("write");
        let (mut s, _) = l.accept().await.expect("accept");
        let r = accept(&mut s, Duration::from_millis(200), |_| Ok(())).await;
        assert!(matches!(r, Err(HandshakeError::TimedOut(_))), "{r:?}");
    }
}
