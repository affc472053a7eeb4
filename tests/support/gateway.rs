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
