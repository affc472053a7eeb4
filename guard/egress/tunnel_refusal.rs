//! A refused CONNECT told inside the tunnel (`--refuse-in-tunnel`). Some clients drop the body
//! of a refused CONNECT: undici's ProxyAgent, which OpenClaw's `web_fetch` uses and which
//! tunnels even `http://` URLs, reports only "Proxy response (403) !== 200", so the agent
//! never reads why. With this on, such a CONNECT is answered `200` and the refusal is given
//! to whatever the client sends first inside: a plain HTTP request gets the same status and
//! reason as an HTTP answer; a TLS client gets a fatal `access_denied` alert (the proxy holds
//! no certificate for the host, so it cannot say more); anything else is closed. No upstream
//! is ever connected: the decision and its audit record are the same as without it.

use super::proxy::answer;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// TLS alert record: fatal (2), access_denied (49), in a TLS 1.2 record (what a TLS 1.3
/// client also accepts before the handshake ends).
const ACCESS_DENIED: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49];

/// What the client sent first inside the tunnel.
#[derive(Debug, PartialEq, Eq)]
enum Inside {
    Tls,
    Http,
    Other,
}

/// Reads what `head` begins with: a TLS handshake record, an HTTP request line, or other.
fn inside(head: &[u8]) -> Inside {
    if head.first() == Some(&0x16) {
        return Inside::Tls;
    }
    let method = head.split(|b| *b == b' ').next().unwrap_or_default();
    if !method.is_empty() && method.len() <= 16 && method.iter().all(u8::is_ascii_uppercase) {
        Inside::Http
    } else {
        Inside::Other
    }
}

/// Answers a refused CONNECT `200`, then gives `status` and `why` inside (see the module).
/// `early` holds what the client already sent after its CONNECT head.
pub async fn refuse_inside(
    mut s: TcpStream,
    early: Vec<u8>,
    status: u16,
    why: &str,
    wait: Duration,
) {
    if s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let mut head = early;
    let mut chunk = [0u8; 2048];
    // Enough to tell a TLS record from a request line; the HTTP head itself is not needed.
    while head.first() != Some(&0x16) && head.len() < 16 && !head.contains(&b'\n') {
        match tokio::time::timeout(wait, s.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
    match inside(&head) {
        Inside::Http => answer(&mut s, status, why).await,
        Inside::Tls => {
            let _ = s.write_all(&ACCESS_DENIED).await;
            let _ = s.shutdown().await;
        }
        Inside::Other => {
            let _ = s.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_tell_tls_from_a_request_line() {
        for (bytes, want) in [
            (&b"\x16\x03\x01\x02\x00"[..], Inside::Tls),
            (b"GET / HTTP/1.1\r\n", Inside::Http),
            (b"POST /x HTTP/1.1\r\n", Inside::Http),
            (b"get / HTTP/1.1\r\n", Inside::Other),
            (b"\x00\x01binary", Inside::Other),
            (b"", Inside::Other),
        ] {
            assert_eq!(inside(bytes), want, "{bytes:?}");
        }
    }
}
