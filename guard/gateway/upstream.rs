//! The front door's connection to the gateway: the WebSocket upgrade, done here so that the
//! bytes the gateway sends right behind its 101 (its challenge event, often in the same
//! segment) stay with the door's frame reader; tungstenite keeps those in its own buffer.
//! The request is tungstenite's (key, headers); the response is checked as RFC 6455 asks,
//! and one that names an extension or subprotocol is refused: none is asked for, and the
//! relay passes frames as they are, so it could not honour one.

use super::relay::GatewayFrames;
use bytes::BytesMut;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite;
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::{client::generate_request, derive_accept_key};

/// Largest upgrade response the door reads.
const MAX_RESPONSE: usize = 16 * 1024;

/// Why the gateway could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{0}")]
    Request(#[from] tungstenite::Error),
    #[error("only ws:// gateway urls are supported, not {0:?}")]
    Scheme(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("bad upgrade response: {0}")]
    Http(#[from] httparse::Error),
    #[error("upgrade response over {MAX_RESPONSE} bytes or cut short")]
    ResponseSize,
    #[error("the gateway answered HTTP {0}, not 101")]
    Status(u16),
    #[error("the upgrade response lacks {0}")]
    Missing(&'static str),
    #[error("the gateway offered {0}, which the door does not ask for")]
    Unasked(&'static str),
    #[error("no upgrade from the gateway within {0:?}")]
    TimedOut(Duration),
}

/// Connects and upgrades to `url` within `within` (a gateway that never answers must not
/// hold the client, and its connection slot, forever); the socket, and a reader holding what
/// came after the response, whose frames are limited to `max` bytes.
pub async fn connect(
    url: &str,
    max: usize,
    within: Duration,
) -> Result<(TcpStream, GatewayFrames), UpstreamError> {
    tokio::time::timeout(within, upgrade(url, max))
        .await
        .unwrap_or(Err(UpstreamError::TimedOut(within)))
}

async fn upgrade(url: &str, max: usize) -> Result<(TcpStream, GatewayFrames), UpstreamError> {
    let req = url.into_client_request()?;
    let uri = req.uri().clone();
    if uri.scheme_str() != Some("ws") {
        return Err(UpstreamError::Scheme(
            uri.scheme_str().unwrap_or("").to_owned(),
        ));
    }
    let host = uri.host().unwrap_or("");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut io = TcpStream::connect((host, uri.port_u16().unwrap_or(80))).await?;
    // Each frame is a whole request or event, sent as soon as judged: no Nagle delay.
    io.set_nodelay(true)?;
    let (request, key) = generate_request(req)?;
    io.write_all(&request).await?;
    let accept = derive_accept_key(key.as_bytes());
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        if buf.len() >= MAX_RESPONSE || io.read_buf(&mut buf).await? == 0 {
            return Err(UpstreamError::ResponseSize);
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(n) = resp.parse(&buf)? {
            check(&resp, &accept)?;
            let _ = buf.split_to(n);
            return Ok((io, GatewayFrames::new(buf, max)));
        }
    }
}

/// RFC 6455 4.1's checks of the server's answer, and no extension or subprotocol.
fn check(resp: &httparse::Response<'_, '_>, accept: &str) -> Result<(), UpstreamError> {
    let code = resp.code.unwrap_or(0);
    if code != 101 {
        return Err(UpstreamError::Status(code));
    }
    let header = |name: &'static str| {
        resp.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .filter_map(|h| std::str::from_utf8(h.value).ok())
    };
    if !header("upgrade").any(|v| v.trim().eq_ignore_ascii_case("websocket")) {
        return Err(UpstreamError::Missing("Upgrade: websocket"));
    }
    let upgrade = |v: &str| {
        v.split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
    };
    if !header("connection").any(upgrade) {
        return Err(UpstreamError::Missing("Connection: Upgrade"));
    }
    if !header("sec-websocket-accept").any(|v| v.trim() == accept) {
        return Err(UpstreamError::Missing("the right Sec-WebSocket-Accept"));
    }
    if header("sec-websocket-extensions").next().is_some() {
        return Err(UpstreamError::Unasked("an extension"));
    }
    if header("sec-websocket-protocol").next().is_some() {
        return Err(UpstreamError::Unasked("a subprotocol"));
    }
    Ok(())
}

/// The door's frames to the gateway: masked (the door is a client there), each with a fresh
/// random mask, drawn from the OS 64 at a time so most frames cost no system call.
pub struct Upward {
    pool: [u8; 256],
    at: usize,
    out: Vec<u8>,
}

impl Upward {
    pub fn new() -> Self {
        Upward {
            pool: [0; 256],
            at: 256,
            out: Vec::with_capacity(4096),
        }
    }

    fn mask(&mut self) -> std::io::Result<[u8; 4]> {
        if self.at >= self.pool.len() {
            getrandom::fill(&mut self.pool).map_err(|e| std::io::Error::other(e.to_string()))?;
            self.at = 0;
        }
        let m = &self.pool[self.at..self.at + 4];
        self.at += 4;
        Ok([m[0], m[1], m[2], m[3]])
    }

    /// Writes one whole frame (FIN set) of `payload` to the gateway.
    pub async fn send(
        &mut self,
        up: &mut TcpStream,
        opcode: u8,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let mask = self.mask()?;
        masked_frame(&mut self.out, opcode, payload, mask);
        up.write_all(&self.out).await
    }
}

impl Default for Upward {
    fn default() -> Self {
        Self::new()
    }
}

/// Replaces `out` with one whole masked frame (FIN set) of `payload`.
fn masked_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.clear();
    out.push(0x80 | opcode);
    let n = payload.len();
    if n < 126 {
        out.push(0x80 | n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        out.push(0x80 | 126);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    super::relay::apply_mask(&mut out[start..], mask);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(response: &str) -> Result<(), String> {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        assert!(resp
            .parse(response.as_bytes())
            .expect("parse")
            .is_complete());
        check(&resp, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=").map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn a_gateway_that_never_answers_the_upgrade_times_out() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("ws://{}", l.local_addr().expect("addr"));
        let held = tokio::spawn(async move { l.accept().await });
        let within = Duration::from_millis(200);
        let r = connect(&url, 1024, within).await;
        assert!(
            matches!(r, Err(UpstreamError::TimedOut(_))),
            "{:?}",
            r.err()
        );
        drop(held);
    }

    #[test]
    fn only_a_plain_websocket_upgrade_is_accepted() {
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                  Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n";
        assert_eq!(checked(&format!("{ok}\r\n")), Ok(()));
        let cases = [
            ("HTTP/1.1 200 OK\r\n\r\n".to_owned(), "HTTP 200"),
            (ok.replace("websocket", "h2c") + "\r\n", "Upgrade"),
            (
                ok.replace("Connection: Upgrade", "Connection: close") + "\r\n",
                "Connection",
            ),
            (ok.replace("s3pP", "AAAA") + "\r\n", "Accept"),
            (
                format!("{ok}Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n"),
                "extension",
            ),
            (
                format!("{ok}Sec-WebSocket-Protocol: x\r\n\r\n"),
                "subprotocol",
            ),
        ];
        for (resp, want) in cases {
            let e = checked(&resp).expect_err(want);
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn masked_frames_unmask_to_the_payload() {
        let mut out = Vec::new();
        for n in [0, 5, 7, 8, 13, 125, 126, 65535, 65536] {
            let payload: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let mask = [0x12, 0x34, 0x56, 0x78];
            masked_frame(&mut out, 0x1, &payload, mask);
            let len = match n {
                0..=125 => 2,
                126..=65535 => 4,
                _ => 10,
            };
            assert_eq!(out[0], 0x81);
            assert_eq!(out[1] & 0x80, 0x80, "mask bit");
            assert_eq!(&out[len..len + 4], &mask);
            let got: Vec<u8> = out[len + 4..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i & 3])
                .collect();
            assert_eq!(got, payload, "{n}");
        }
        let mut up = Upward::new();
        let drawn: Vec<[u8; 4]> = (0..100).map(|_| up.mask().expect("random")).collect();
        assert!(drawn.windows(2).any(|w| w[0] != w[1]), "masks vary");
    }
}
