//! The front door: a WebSocket proxy in front of the gateway that every human client (ACP,
//! an IDE, a chat page) passes. A client is authenticated before the upgrade (a door link's
//! secret path, or a signed-in browser's web-prompt cookie sent with the web prompt's own
//! `Origin`; else 401); an `Origin`, when sent, must be one the guard serves, and is not
//! passed on (the upstream connection is the guard's own, so `Host` is the upstream's). The
//! gateway's challenge and the client's `connect` pass byte for byte (the device signature
//! covers them); every later client frame passes the pure method filter and is forwarded as
//! received or refused in the gateway's own error shape, audited with who was refused.
//! The gateway's frames pass down as received (`relay`), except approval events, which are
//! the guard's to answer. Bad input closes that client only: oversized frames 1009, binary
//! 1003, a flood 1008, an unreachable upstream 1011; invalid JSON gets an error; past the
//! connection cap the upgrade is refused (503).

use super::bucket::Bucket;
use super::links;
use super::relay::{Incoming, OP_CLOSE, OP_PONG, OP_TEXT};
use super::upstream::{self, Upward};
use crate::audit::event::{AuditEvent, FrontRefusal};
use crate::audit::AuditLog;
use crate::policy::gateway_filter::{
    judge_frame, ClientFrame, FrameError, FrameVerdict, GatewayTables,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

/// The door's limits and where it forwards to.
#[derive(Debug, Clone)]
pub struct FrontSettings {
    pub upstream: String,
    /// Largest frame or message a client may send (bytes).
    pub max_frame_bytes: usize,
    pub max_connections: usize,
    /// Per-connection token bucket: frames per second, and the burst.
    pub rate_per_sec: u32,
    pub rate_burst: u32,
    /// Origins a browser client may come from (the web prompt's, and any configured).
    pub allowed_origins: Vec<String>,
}

/// The identity of a live web-prompt session, by its cookie value.
pub type SessionLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The running door's shared state.
pub struct Front {
    pub settings: FrontSettings,
    pub state_dir: PathBuf,
    pub tables: GatewayTables,
    pub audit: AuditLog,
    /// Who a web-prompt session id belongs to (none: no browser may use its cookie here).
    /// A function, so that this door does not import the web door; the wiring supplies it.
    sessions: Option<SessionLookup>,
    conns: AtomicUsize,
}

impl Front {
    pub fn new(
        settings: FrontSettings,
        state_dir: PathBuf,
        tables: GatewayTables,
        audit: AuditLog,
    ) -> Self {
        Front {
            settings,
            state_dir,
            tables,
            audit,
            sessions: None,
            conns: AtomicUsize::new(0),
        }
    }

    /// Accepts the web prompt's session cookie as a credential too.
    pub fn with_sessions(mut self, sessions: SessionLookup) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The signed-in browser behind the request's cookie (either cookie name of the web
    /// prompt: cookies are not bound to a port, so the web prompt's reaches the door).
    fn browser(&self, req: &Request) -> Option<String> {
        let sessions = self.sessions.as_ref()?;
        req.headers()
            .get_all("cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .filter(|(k, _)| *k == "sg_session" || *k == "__Host-sg_session")
            .find_map(|(_, id)| sessions(id))
    }

    async fn refuse(
        &self,
        who: &str,
        peer: SocketAddr,
        method: Option<&str>,
        reason: &str,
        message: &str,
    ) {
        let e = AuditEvent::FrontRefusal(FrontRefusal {
            who: who.to_owned(),
            peer: peer.to_string(),
            method: method.map(str::to_owned),
            reason: reason.to_owned(),
            message: message.to_owned(),
        });
        if let Err(e) = self.audit.record(e).await {
            tracing::error!(error = %e, "front-door refusal not audited");
        }
    }
}

/// Accepts clients until `shutdown`.
pub async fn serve(front: Arc<Front>, listener: TcpListener, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            a = listener.accept() => match a {
                Ok((stream, peer)) => {
                    let f = front.clone();
                    let sd = shutdown.clone();
                    tokio::spawn(async move { client(f, stream, peer, sd).await });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "front door accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// How much one socket read asks for. tungstenite zero-fills this much before every read
/// (128 KiB by default: a third of the door's time went to that memset); most gateway frames
/// are under 2 KiB, and a larger one still arrives whole over several reads.
const READ_CHUNK: usize = 2 * 1024;

/// Releases a connection slot when the client ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A refused upgrade: its status and body.
type Refusal = (StatusCode, &'static str);

fn http_error((status, body): Refusal) -> ErrorResponse {
    let mut r = ErrorResponse::new(Some(body.to_owned()));
    *r.status_mut() = status;
    r
}

/// Why the upgrade was refused (for the audit log).
#[derive(Default)]
struct Gate {
    who: Option<String>,
    refused: Option<(&'static str, String)>,
}

/// The pre-upgrade checks: the connection cap, the door link, the Origin.
fn check_upgrade(
    front: &Front,
    req: &Request,
    full: bool,
    gate: &Mutex<Gate>,
) -> Result<(), Refusal> {
    let mut g = gate.lock().unwrap_or_else(|p| p.into_inner());
    if full {
        g.refused = Some(("too-many-connections", "the front door is full".into()));
        return Err((StatusCode::SERVICE_UNAVAILABLE, "too many connections\n"));
    }
    let name =
        links::secret_in_path(req.uri().path()).and_then(|s| links::verify(&front.state_dir, s));
    let origin = req.headers().get("origin");
    // A cookie is sent by the browser whatever page opened the socket: it counts only with
    // an Origin, which the check below holds to the web prompt's (no cross-site hijacking).
    let name = name.or_else(|| origin.and_then(|_| front.browser(req)));
    let Some(name) = name else {
        g.refused = Some((
            "unauthenticated",
            "no valid door link or web-prompt session".into(),
        ));
        return Err((
            StatusCode::UNAUTHORIZED,
            "a door link or a web-prompt sign-in is required\n",
        ));
    };
    g.who = Some(name);
    if let Some(origin) = origin {
        let o = origin.to_str().unwrap_or("");
        if !front.settings.allowed_origins.iter().any(|a| a == o) {
            g.refused = Some(("origin-refused", format!("origin {o:?} is not allowed")));
            return Err((StatusCode::FORBIDDEN, "origin not allowed\n"));
        }
    }
    Ok(())
}

fn close(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }))
}

/// One client: the upgrade checks, the upstream connection, then both directions.
#[allow(clippy::result_large_err)] // the handshake callback's error type is tungstenite's
async fn client(
    front: Arc<Front>,
    stream: TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    // Frames are forwarded one by one as they are judged; Nagle would hold a small one back.
    let _ = stream.set_nodelay(true);
    let n = front.conns.fetch_add(1, Ordering::Relaxed);
    let _slot = Slot(&front.conns);
    let full = n >= front.settings.max_connections;
    let cfg = WebSocketConfig::default()
        .read_buffer_size(READ_CHUNK)
        .max_message_size(Some(front.settings.max_frame_bytes))
        .max_frame_size(Some(front.settings.max_frame_bytes));
    let gate = Mutex::new(Gate::default());
    let accepted = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        |req: &Request, resp: Response| {
            check_upgrade(&front, req, full, &gate)
                .map(|()| resp)
                .map_err(http_error)
        },
        Some(cfg),
    )
    .await;
    let (who, refused) = {
        let g = gate.lock().unwrap_or_else(|p| p.into_inner());
        (g.who.clone(), g.refused.clone())
    };
    let who_name = who.clone().unwrap_or_else(|| "unauthenticated".into());
    if let Some((reason, message)) = refused {
        front.refuse(&who_name, peer, None, reason, &message).await;
        return;
    }
    let Ok(mut down) = accepted else { return };
    let max = front.settings.max_frame_bytes;
    let (mut up, mut frames) = match upstream::connect(&front.settings.upstream, max, UPGRADE).await
    {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("upstream unavailable: {e}");
            front
                .refuse(&who_name, peer, None, "upstream-down", &msg)
                .await;
            let _ = down.send(close(CloseCode::Error, &msg)).await;
            return;
        }
    };
    // One task owns both sockets whole (no split halves, no locks): each select arm reads one
    // socket, and its body writes whole frames, done before the next read (no interleaving).
    let mut bucket = Bucket::new(front.settings.rate_per_sec, front.settings.rate_burst);
    let mut connected = false;
    let mut shutdown = shutdown;
    let mut to_gateway = Upward::new();
    loop {
        tokio::select! {
            m = down.next() => {
                let step = match m {
                    None => Step::End(None),
                    Some(Err(e)) => Step::End(Some(error_close(&e))),
                    Some(Ok(m)) => {
                        if !bucket.take() {
                            front.refuse(&who_name, peer, None, "rate-limited", "too many frames").await;
                            Step::End(Some(close(CloseCode::Policy, "rate limit exceeded")))
                        } else {
                            from_client(&front, &who_name, peer, m, &mut connected).await
                        }
                    }
                };
                match step {
                    Step::Up(t) => if to_gateway.send(&mut up, OP_TEXT, t.as_str().as_bytes()).await.is_err() { break },
                    Step::Down(m) => if down.send(m).await.is_err() { break },
                    Step::None => {}
                    Step::End(c) => {
                        let _ = to_gateway.send(&mut up, OP_CLOSE, &[]).await;
                        if let Some(c) = c {
                            if down.send(c).await.is_ok() {
                                linger(&mut down).await;
                            }
                        }
                        break;
                    }
                }
            }
            f = frames.next(&mut up) => {
                match f {
                    Ok(Some(Incoming::Data(raw))) => if pass_down(&mut down, raw).await.is_err() { break },
                    Ok(Some(Incoming::Ping(p))) => if to_gateway.send(&mut up, OP_PONG, p).await.is_err() { break },
                    Ok(Some(Incoming::Close { raw, payload })) => {
                        let _ = pass_down(&mut down, raw).await;
                        let _ = to_gateway.send(&mut up, OP_CLOSE, payload.get(..2).unwrap_or(&[])).await;
                        break;
                    }
                    Err(e) => {
                        let _ = down.send(close(CloseCode::Error, &format!("upstream: {e}"))).await;
                        break;
                    }
                    Ok(None) => { let _ = down.send(close(CloseCode::Error, "upstream closed")).await; break }
                }
            }
            _ = shutdown.changed() => {
                let _ = down.send(close(CloseCode::Away, "guard stopping")).await;
                break;
            }
        }
    }
}

/// Writes a gateway frame to the client as received. tungstenite's own writes (the door's
/// responses, its pongs to the client's pings) are flushed whole first, so this lands on a
/// frame boundary.
async fn pass_down(down: &mut WebSocketStream<TcpStream>, raw: &[u8]) -> Result<(), ()> {
    down.flush().await.map_err(|_| ())?;
    down.get_mut().write_all(raw).await.map_err(|_| ())
}

/// Longest the door waits for the gateway's upgrade (then: 1011 to the client).
const UPGRADE: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest the door waits for a refused client to answer its close frame.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// After the door's close frame: drops what the client still sends until it answers the
/// close (or [`LINGER`] passes). Closing the socket with the client's frames unread makes
/// the kernel send a reset, which can destroy the close frame before the client reads why.
async fn linger<S>(rx: &mut S)
where
    S: futures_util::Stream<Item = Result<Message, WsError>> + Unpin,
{
    let drain = async { while let Some(Ok(_)) = rx.next().await {} };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// What one client message leads to.
enum Step {
    /// A judged text message, for the gateway.
    Up(Utf8Bytes),
    Down(Message),
    None,
    End(Option<Message>),
}

/// The close for a read error: oversized 1009, anything else a protocol error.
fn error_close(e: &WsError) -> Message {
    match e {
        WsError::Capacity(_) => close(CloseCode::Size, "frame too large"),
        _ => close(CloseCode::Protocol, "protocol error"),
    }
}

/// The error response the gateway itself would send.
fn error_res(id: &Value, code: &str, message: &str) -> Message {
    Message::text(
        json!({"type":"res","id":id,"ok":false,"error":{"code":code,"message":message}})
            .to_string(),
    )
}

/// One client message: the first must be `connect` (passed byte for byte); later ones are
/// filtered; binary is refused (1003).
async fn from_client(
    front: &Front,
    who: &str,
    peer: SocketAddr,
    m: Message,
    connected: &mut bool,
) -> Step {
    let text = match m {
        Message::Text(t) => t,
        Message::Binary(_) => {
            front
                .refuse(
                    who,
                    peer,
                    None,
                    "binary-frame",
                    "binary frames are not accepted",
                )
                .await;
            return Step::End(Some(close(
                CloseCode::Unsupported,
                "binary frames are not accepted",
            )));
        }
        Message::Close(_) => return Step::End(None),
        _ => return Step::None,
    };
    let frame = match ClientFrame::parse(text.as_str()) {
        Ok(f) => f,
        Err(e) => {
            let reason = match e {
                FrameError::NotJson => "invalid-json",
                FrameError::Shape(_) => "not-a-request",
            };
            front.refuse(who, peer, None, reason, &e.to_string()).await;
            return Step::Down(error_res(
                &Value::Null,
                "INVALID_REQUEST",
                &format!("sanctum-guard: {e}"),
            ));
        }
    };
    if !*connected {
        if frame.is_connect() {
            *connected = true;
            return Step::Up(text.clone());
        }
        front
            .refuse(
                who,
                peer,
                frame.method.as_deref(),
                "not-connected",
                "the first frame must be connect",
            )
            .await;
        return Step::Down(error_res(
            &frame.id_value(),
            "INVALID_REQUEST",
            "sanctum-guard: connect first",
        ));
    }
    match judge_frame(&front.tables, &frame) {
        FrameVerdict::Forward => Step::Up(text.clone()),
        FrameVerdict::Refuse {
            code,
            reason,
            message,
        } => {
            front
                .refuse(who, peer, frame.method.as_deref(), reason, &message)
                .await;
            Step::Down(error_res(&frame.id_value(), code, &message))
        }
    }
}
