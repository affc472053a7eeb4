//! A proxy request head: what it asks for (`CONNECT host:port`, or an absolute-form
//! `METHOD http://host[:port]/path` rewritten to origin form), refused whole when it could be
//! read two ways: a Host header other than the URL's, a second Host, Transfer-Encoding, or a
//! Content-Length that is not one run of digits.

use crate::policy::egress::split_host_port;

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Ask {
    pub(super) method: String,
    pub(super) host: String,
    pub(super) port: u16,
    /// `None` for CONNECT; the request target's path (with its query) otherwise.
    pub(super) path: Option<String>,
    /// `None` for CONNECT; the request body's length otherwise (what is forwarded upstream
    /// after the head; anything the client sends beyond it is not).
    pub(super) body_len: Option<u64>,
    /// `None` for CONNECT; the origin-form head to send upstream otherwise.
    pub(super) forward_head: Option<Vec<u8>>,
}

/// Parses a request head (everything up to the blank line) into what it asks; the error is
/// the status and reason to answer.
pub(super) fn parse_head(head: &[u8]) -> Result<Ask, (u16, &'static str)> {
    let text = std::str::from_utf8(head).map_err(|_| (400, "request head is not UTF-8"))?;
    // Lines end in CRLF only: a bare CR or LF, or another control byte, is where a server
    // could read a header the proxy did not (`X: a\nTransfer-Encoding: chunked`).
    if text
        .split("\r\n")
        .any(|l| l.chars().any(|c| c.is_control() && c != '\t'))
    {
        return Err((
            400,
            "a control character or bare line break in the request head",
        ));
    }
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err((400, "malformed request line"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err((400, "malformed request line"));
    }
    if method == "CONNECT" {
        let (host, port) =
            split_host_port(target).ok_or((400, "CONNECT target is not host:port"))?;
        return Ok(Ask {
            method: method.into(),
            host: host.into(),
            port,
            path: None,
            body_len: None,
            forward_head: None,
        });
    }
    let rest = target.strip_prefix("http://").ok_or((
        400,
        "only CONNECT and absolute http:// requests are proxied",
    ))?;
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err((400, "credentials in the URL are not proxied"));
    }
    let (host, port) = match split_host_port(authority) {
        Some(hp) => hp,
        None if !authority.is_empty() && !authority.contains(':') => (authority, 80),
        None => return Err((400, "bad host in the URL")),
    };
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_owned(),
    };
    let mut out = format!("{method} {path} {version}\r\n");
    let mut hosts = 0;
    let mut body_len: Option<u64> = None;
    for h in lines.filter(|l| !l.is_empty()) {
        // A folded line continues the header above it for some servers and not for others.
        if h.starts_with([' ', '\t']) {
            return Err((400, "folded header lines are not proxied"));
        }
        let (name, value) = h
            .split_once(':')
            .ok_or((400, "a header line without a colon"))?;
        if name.is_empty() || name.contains([' ', '\t']) {
            return Err((400, "a header name with white space"));
        }
        let name = name.to_ascii_lowercase();
        if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
            continue;
        }
        // The server picks its site by Host: one that differs from the judged URL would
        // reach a destination no rule judged (another virtual host on the same address).
        if name == "host" {
            hosts += 1;
            if hosts > 1 || !same_authority(value.trim(), authority, port) {
                return Err((400, "the Host header differs from the URL's host"));
            }
        }
        // Exactly one body, of a length both sides read alike: a second request pipelined
        // or smuggled behind it would reach the same server unjudged.
        if name == "transfer-encoding" {
            return Err((400, "request bodies with Transfer-Encoding are not proxied"));
        }
        if name == "content-length" {
            let v = value.trim();
            if body_len.is_some() || v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err((400, "one Content-Length of digits only"));
            }
            body_len = Some(v.parse().map_err(|_| (400, "Content-Length too large"))?);
        }
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Ask {
        method: method.into(),
        host: host.into(),
        port,
        path: Some(path),
        body_len: Some(body_len.unwrap_or(0)),
        forward_head: Some(out.into_bytes()),
    })
}

/// Whether a Host header names the URL's authority (case and a default port aside).
fn same_authority(header: &str, authority: &str, port: u16) -> bool {
    let norm = |a: &str| {
        let a = a.to_ascii_lowercase();
        match split_host_port(&a) {
            Some((h, p)) => (h.trim_end_matches('.').to_owned(), p),
            None => (a.trim_end_matches('.').to_owned(), 80),
        }
    };
    let (h, p) = norm(header);
    let (ah, _) = norm(authority);
    h == ah && p == port
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_into_what_they_ask() {
        let c = parse_head(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.forward_head),
            ("api.example.com", 443, None)
        );
        let g = parse_head(
            b"POST http://model:8080/v1/chat?x=1 HTTP/1.1\r\nHost: model:8080\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nContent-Length: 2",
        )
        .unwrap();
        assert_eq!((g.host.as_str(), g.port), ("model", 8080));
        assert_eq!(
            String::from_utf8(g.forward_head.unwrap()).unwrap(),
            "POST /v1/chat?x=1 HTTP/1.1\r\nHost: model:8080\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        );
        let h = parse_head(
            b"GET http://A.Example./x HTTP/1.1\r\nHost: a.example:80\r\nContent-Length: 7",
        )
        .unwrap();
        assert_eq!((h.path.as_deref(), h.body_len), (Some("/x"), Some(7)));
        let d = parse_head(b"GET http://example.com HTTP/1.0").unwrap();
        assert_eq!((d.host.as_str(), d.port), ("example.com", 80));
        assert_eq!(
            d.forward_head.unwrap(),
            b"GET / HTTP/1.0\r\nConnection: close\r\n\r\n"
        );
        for bad in [
            &b"GET /relative HTTP/1.1"[..],
            b"GET https://example.com/ HTTP/1.1",
            b"CONNECT example.com HTTP/1.1",
            b"CONNECT example.com:0 HTTP/1.1",
            b"GET http://u:p@example.com/ HTTP/1.1",
            b"GET http://example.com/ HTTP/2",
            b"GET  http://example.com/ HTTP/1.1",
            b"get http://example.com/ HTTP/1.1",
            b"\xff\xfe",
            // The Host header must name the judged URL, once.
            b"GET http://a.example/ HTTP/1.1\r\nHost: internal.example",
            b"GET http://a.example/ HTTP/1.1\r\nHost: a.example:81",
            b"GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: a.example",
            // Lines a server could read differently from the proxy.
            b"GET http://a.example/ HTTP/1.1\r\nX: a\nTransfer-Encoding: chunked",
            b"GET http://a.example/ HTTP/1.1\r\nX: a\rHost: b.example",
            b"GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n b.example",
            b"GET http://a.example/ HTTP/1.1\r\nTransfer-Encoding : chunked",
            b"GET http://a.example/ HTTP/1.1\r\nno colon here",
            b"GET http://a.example/\0 HTTP/1.1",
            // One body of one declared length.
            b"POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked",
            b"POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1",
            b"POST http://a.example/ HTTP/1.1\r\nContent-Length: -1",
        ] {
            assert!(
                parse_head(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
