//! `sanctum-guard health`: asks a running guard's web endpoint (by default `/readyz`) whether
//! it is ready, for container health checks in an image that has no shell and no curl.
//! Plain HTTP on a loopback or container address only; the status line is the answer.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Why the probe could not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("{0:?} is not an http://HOST:PORT/PATH URL")]
    Url(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}: no HTTP status line in the answer")]
    Answer(String),
}

/// The HTTP status the guard answered to `GET url`.
pub fn probe(url: &str, timeout: Duration) -> Result<u16, HealthError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| HealthError::Url(url.into()))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    if authority.is_empty() || !authority.contains(':') || path.contains([' ', '\r', '\n']) {
        return Err(HealthError::Url(url.into()));
    }
    let io = |e| HealthError::Io(url.into(), e);
    let addr = authority
        .to_socket_addrs()
        .map_err(io)?
        .next()
        .ok_or_else(|| HealthError::Url(url.into()))?;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(io)?;
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    // One write: a request split over several segments is legal but needlessly slow to parse.
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).map_err(io)?;
    // The status line may arrive in pieces: read until it is whole (or 64 bytes, or EOF).
    let mut head = Vec::with_capacity(64);
    let mut chunk = [0u8; 64];
    while head.len() < 64 && !head.contains(&b'\n') {
        let n = s.read(&mut chunk).map_err(io)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = std::str::from_utf8(&head).unwrap_or_default();
    line.strip_prefix("HTTP/1.1 ")
        .or_else(|| line.strip_prefix("HTTP/1.0 "))
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| HealthError::Answer(url.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_plain_http_url() {
        for u in [
            "https://127.0.0.1:1/",
            "127.0.0.1:1",
            "http:///x",
            "http://h/x",
            "http://h:1/a b",
        ] {
            assert!(
                matches!(probe(u, Duration::from_secs(1)), Err(HealthError::Url(_))),
                "{u}"
            );
        }
    }

    #[test]
    fn reads_the_status_of_a_real_answer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            // Read the whole request head, however the kernel splits it.
            let mut got = Vec::new();
            let mut buf = [0u8; 256];
            while !got.ends_with(b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0, "EOF before the end of the request head");
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got.starts_with(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:"));
            // The answer in two writes: the probe must join them.
            c.write_all(b"HTTP/1.1 5").unwrap();
            c.flush().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            c.write_all(b"03 Service Unavailable\r\n\r\n").unwrap();
        });
        let url = format!("http://127.0.0.1:{port}/readyz");
        assert_eq!(probe(&url, Duration::from_secs(5)).unwrap(), 503);
        t.join().unwrap();
    }
}
