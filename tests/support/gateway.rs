//! A raw gateway WebSocket client for the gateway tests: an operator with a fresh device
//! identity (signed `connect` as the guard's approver sends it), raw frames, calls.

use serde_json::{json, Value};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::stream::MaybeTlsStream;
use tokio_tungstenite::tungstenite::{self, Message, WebSocket};

/// A new door link named `name`, made with the guard's CLI on the state dir `state`: the
/// `ws://` URL of the front door listening on `front` (`HOST:PORT`) for it.
pub fn door_link(state: &std::path::Path, front: &str, name: &str) -> String {
    let state = state.to_str().expect("utf8 state dir");
    let (code, path, err) = super::process::guard_cli(
        &["front", "link", "--name", name, "--state-dir", state],
        &[],
    );
    assert_eq!(code, 0, "front link {name}: {err}");
    format!("ws://{front}{}", path.trim())
}

/// One client connection.
pub struct WsClient {
    pub ws: WebSocket<MaybeTlsStream<TcpStream>>,
    n: u64,
}

/// Opens `url` (read timeout 1 s per read), without sending anything.
pub fn open(url: &str) -> Result<WsClient, tungstenite::Error> {
    open_with(url, &[])
}

/// [`open`] with extra request headers (a browser's `Cookie` and `Origin`).
pub fn open_with(url: &str, headers: &[(&str, &str)]) -> Result<WsClient, tungstenite::Error> {
    let mut req = tungstenite::client::IntoClientRequest::into_client_request(url)?;
    for (k, v) in headers {
        let name = tungstenite::http::HeaderName::from_bytes(k.as_bytes()).expect("header name");
        req.headers_mut()
            .insert(name, v.parse().expect("header value"));
    }
    let (ws, _) = tungstenite::connect(req)?;
    if let MaybeTlsStream::Plain(s) = ws.get_ref() {
        s.set_read_timeout(Some(Duration::from_secs(1)))
            .expect("timeout");
    }
    Ok(WsClient { ws, n: 0 })
}

impl WsClient {
    /// Opens `url` and connects as an admin operator with a new device; the hello payload.
    pub fn operator(url: &str, token: &str) -> (WsClient, Value) {
        Self::operator_with(url, &[], token)
    }

    /// [`WsClient::operator`] with extra request headers.
    /// A gateway still starting answers `UNAVAILABLE` (retryable): tried again for up to 60 s.
    pub fn operator_with(url: &str, headers: &[(&str, &str)], token: &str) -> (WsClient, Value) {
        let start = Instant::now();
        loop {
            let (c, hello) = Self::operator_once(url, headers, token);
            let starting =
                hello["error"]["code"] == "UNAVAILABLE" && hello["error"]["retryable"] == true;
            if starting && start.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
            assert_eq!(hello["ok"], true, "connect: {hello}");
            return (c, hello);
        }
    }

    fn operator_once(url: &str, headers: &[(&str, &str)], token: &str) -> (WsClient, Value) {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("random");
        Self::operator_as(url, headers, token, seed)
    }

    /// Opens `url` and connects as an admin operator with the device of `seed`; the hello
    /// payload, whatever it says (a remote device's first connect: `NOT_PAIRED`).
    pub fn operator_as(
        url: &str,
        headers: &[(&str, &str)],
        token: &str,
        seed: [u8; 32],
    ) -> (WsClient, Value) {
        let mut c = open_with(url, headers).expect("open");
        let challenge = c.wait(Duration::from_secs(20), |v| {
            v["event"] == "connect.challenge"
        });
        let nonce = challenge["payload"]["nonce"]
            .as_str()
            .expect("nonce")
            .to_owned();
        let id = sanctum_guard::openclaw::identity::DeviceIdentity::from_seed(seed);
        let frame = sanctum_guard::gateway::approver::operator_connect(&id, token, &nonce);
        c.send_text(&frame);
        let hello = c.wait(Duration::from_secs(30), |v| v["id"] == "connect");
        (c, hello)
    }

    /// Reads until the peer closes the connection; the close as text.
    pub fn close_reason(&mut self) -> String {
        for _ in 0..60 {
            if let Some(Err(e)) = self.read() {
                return e;
            }
        }
        panic!("no close");
    }

    pub fn send_text(&mut self, text: &str) {
        self.ws.send(Message::text(text)).expect("send");
    }

    /// The next message (JSON text, or a description of anything else); `None` on timeout.
    pub fn read(&mut self) -> Option<Result<Value, String>> {
        match self.ws.read() {
            Ok(Message::Text(t)) => {
                Some(serde_json::from_str(t.as_str()).map_err(|e| e.to_string()))
            }
            Ok(Message::Close(f)) => Some(Err(format!("close {f:?}"))),
            Ok(other) => Some(Err(format!("{other:?}"))),
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                None
            }
            Err(e) => Some(Err(format!("error {e}"))),
        }
    }

    /// Waits for a JSON message `pred` accepts (others are skipped).
    pub fn wait(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        while start.elapsed() < timeout {
            match self.read() {
                Some(Ok(v)) if pred(&v) => return v,
                Some(Err(e)) if e.starts_with("close") || e.starts_with("error") => {
                    panic!("connection ended: {e}")
                }
                _ => {}
            }
        }
        panic!("timed out waiting for a frame");
    }

    /// Sends a request; its response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.n += 1;
        let id = format!("t{}", self.n);
        self.send_text(&json!({"type":"req","id":id,"method":method,"params":params}).to_string());
        self.wait(Duration::from_secs(60), |v| {
            v["type"] == "res" && v["id"] == id.as_str()
        })
    }
}

/// A masked client frame with the length in `form` bytes (0: the shortest form; 2 or 8 for
/// the 16- and 64-bit forms whatever the length), under a fixed mask.
pub fn masked_frame(fin: bool, opcode: u8, payload: &[u8], form: usize) -> Vec<u8> {
    const MASK: [u8; 4] = [0x5a, 0x13, 0xc4, 0x7e];
    let n = payload.len();
    let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
    match (form, n) {
        (0, 0..=125) => f.push(0x80 | n as u8),
        (0, 126..=0xFFFF) | (2, _) => f.extend([0x80 | 126, (n >> 8) as u8, n as u8]),
        _ => f.extend([[0x80 | 127].as_slice(), &(n as u64).to_be_bytes()].concat()),
    }
    f.extend_from_slice(&MASK);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i & 3]));
    f
}

/// One client frame as a gateway received it: its bytes, FIN, opcode and unmasked payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenFrame {
    pub raw: Vec<u8>,
    pub fin: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

/// The whole masked frames at the start of `raw` (a cut last frame is left out).
pub fn masked_frames(mut raw: &[u8]) -> Vec<SeenFrame> {
    let mut out = Vec::new();
    while raw.len() >= 2 {
        let (fin, opcode) = (raw[0] & 0x80 != 0, raw[0] & 0x0F);
        assert!(raw[1] & 0x80 != 0, "a client frame is masked");
        let (at, n) = match raw[1] & 0x7F {
            126 if raw.len() >= 4 => (4, u16::from_be_bytes([raw[2], raw[3]]) as usize),
            127 if raw.len() >= 10 => (
                10,
                u64::from_be_bytes(raw[2..10].try_into().unwrap()) as usize,
            ),
            126 | 127 => break,
            n => (2, n as usize),
        };
        if raw.len() < at + 4 + n {
            break;
        }
        let mask = &raw[at..at + 4];
        let payload = raw[at + 4..at + 4 + n]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i & 3])
            .collect();
        let (frame, rest) = raw.split_at(at + 4 + n);
        out.push(SeenFrame {
            raw: frame.to_vec(),
            fin,
            opcode,
            payload,
        });
        raw = rest;
    }
    out
}

/// A WebSocket client of raw bytes, for what no library client sends: its own frames (masked
/// or not, broken on purpose), and bytes pipelined behind its upgrade request.
pub struct RawClient {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl RawClient {
    /// Upgrades at `url` (`ws://HOST:PORT/PATH`), writing `pipelined` in the same write as
    /// the request; panics unless the answer is 101. Reads time out after 2 s.
    pub fn open(url: &str, pipelined: &[u8]) -> RawClient {
        use std::io::{Read, Write};
        let rest = url.strip_prefix("ws://").expect("ws url");
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let mut s = TcpStream::connect(host).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        );
        s.write_all(&[req.as_bytes(), pipelined].concat())
            .expect("write");
        let mut buf = Vec::new();
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = s.read(&mut chunk).expect("upgrade response");
            assert!(n > 0, "closed during the upgrade");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(
            head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            "{head}"
        );
        RawClient {
            s,
            buf: buf[end..].to_vec(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        // A peer that already closed may refuse the write: what it sent is read next.
        let _ = self.s.write_all(bytes);
    }

    /// The next server frame: its opcode and payload (None: the connection ended, or no
    /// frame came within the read timeout). A server frame must not be masked.
    pub fn next(&mut self) -> Option<(u8, Vec<u8>)> {
        use std::io::Read;
        loop {
            if self.buf.len() >= 2 {
                assert_eq!(self.buf[1] & 0x80, 0, "a server frame is unmasked");
                let (at, n) = match self.buf[1] & 0x7F {
                    126 if self.buf.len() >= 4 => {
                        (4, u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize)
                    }
                    127 if self.buf.len() >= 10 => (
                        10,
                        u64::from_be_bytes(self.buf[2..10].try_into().unwrap()) as usize,
                    ),
                    126 | 127 => (usize::MAX / 2, 0),
                    n => (2, n as usize),
                };
                if self.buf.len() >= at + n {
                    let op = self.buf[0] & 0x0F;
                    let payload = self.buf[at..at + n].to_vec();
                    self.buf.drain(..at + n);
                    return Some((op, payload));
                }
            }
            let mut chunk = [0u8; 8192];
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next text message, as JSON (other frames skipped); panics if none comes.
    pub fn text(&mut self) -> Value {
        loop {
            match self.next() {
                Some((1, p)) => return serde_json::from_slice(&p).expect("json"),
                Some((8, p)) => panic!("closed: {p:?}"),
                Some(_) => {}
                None => panic!("no text message"),
            }
        }
    }

    /// Reads until the door's close frame; its code (None: the connection ended without one).
    pub fn close_code(&mut self) -> Option<u16> {
        loop {
            match self.next()? {
                (8, p) if p.len() >= 2 => return Some(u16::from_be_bytes([p[0], p[1]])),
                (8, _) => return Some(1005),
                _ => {}
            }
        }
    }
}
