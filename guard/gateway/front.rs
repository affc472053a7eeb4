//! The front door: a WebSocket proxy in front of the gateway that every human client (ACP,
//! an IDE, a chat page) passes. A client is authenticated before the upgrade (a door link's
//! secret path, or a signed-in browser's web-prompt cookie sent with the web prompt's own
//! `Origin`, for as long as that session lives (`browser`); else 401); an `Origin`, when
//! sent, must be one the guard serves, and is not passed on (the upstream connection is the
//! guard's own, so `Host` is the upstream's). The gateway's challenge and the client's
//! `connect` pass byte for byte (the device signature covers them); every later client frame
//! passes the pure method filter and is forwarded as received or refused in the gateway's
//! own error shape, audited with who was refused.
//! Both legs are frame-level, nothing is decoded and re-encoded: the client's frames are read
//! by `client_leg` and go up as the client's own masked bytes once judged; the gateway's pass
//! down as received (`relay`), except approval events, which are the guard's to answer. The
//! upgrade is the door's own (`handshake`), so a first frame pipelined behind it is kept.
//! Bad input closes that client only: oversized frames 1009, binary 1003, a protocol error
//! 1002, text that is not UTF-8 1007, a flood or a frame left unfinished 1008, an unreachable
//! upstream 1011; invalid JSON gets an error. A connection slot is taken only once the
//! credential is checked (past the cap: 503); an upgrade request not finished in time, or
//! shed for a newer one over its peer's budget (`pending`), is dropped. Refused upgrades are
//! counted per peer and reason (`audit::tally`): anyone can cause them, and a record each
//! would let a flood fill the disk the audit log needs.

use super::browser::BrowserSessions;
use super::bucket::Bucket;
use super::client_leg::{close_frame, server_frame, ClientError, ClientFrames, FromClient};
use super::handshake::{self, Refusal};
use super::links;
use super::pending::Pending;
use super::relay::{Incoming, OP_CLOSE, OP_PONG, OP_TEXT};
use super::upstream::{self, Upward};
use crate::audit::event::{AuditEvent, FrontRefusal};
use crate::audit::tally::Tally;
use crate::audit::AuditLog;
use crate::policy::gateway_filter::{
    judge_frame, ClientFrame, FrameError, FrameVerdict, GatewayTables,
};
use serde_json::{json, Value};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::http::StatusCode;

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

/// The running door's shared state.
pub struct Front {
    pub settings: FrontSettings,
    pub state_dir: PathBuf,
    pub tables: GatewayTables,
    pub audit: AuditLog,
    /// The web prompt's sessions (none: no browser may use its cookie here).
    sessions: Option<BrowserSessions>,
    conns: AtomicUsize,
    /// Upgrades whose request has not arrived whole.
    pending: Pending,
    /// Refused upgrades, counted per peer address and reason.
    refusals: Tally<(IpAddr, &'static str)>,
    /// Refusals answered (or being answered) but not yet counted: a stop waits for them, so
    /// every refusal a client was told of is in the audit log.
    refusing: AtomicUsize,
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
            pending: Pending::default(),
            refusals: Tally::default(),
            refusing: AtomicUsize::new(0),
        }
    }

    /// Accepts the web prompt's session cookie as a credential too.
    pub fn with_sessions(mut self, sessions: BrowserSessions) -> Self {
        self.sessions = Some(sessions);
        self
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

    /// Audits a refused upgrade: in full when it is the first of its peer and reason in the
    /// window, else only counted.
    async fn refuse_upgrade(&self, who: &str, peer: SocketAddr, reason: &'static str, msg: &str) {
        if self.refusals.note((peer.ip(), reason), msg) {
            self.refuse(who, peer, None, reason, msg).await;
        }
    }

    /// Writes the counts of the refusal windows that ended (all of them with `all`).
    async fn flush_refusals(&self, all: bool) {
        let due = self
            .refusals
            .take_due(all, |(ip, r)| (ip.to_string(), (*r).to_owned()));
        for c in due {
            if let Err(e) = self.audit.record(AuditEvent::FrontRefusals(c)).await {
                tracing::error!(error = %e, "front-door refusal count not audited");
            }
        }
    }

    /// A connection slot, if the door is not full.
    fn take_slot(&self) -> Option<Slot<'_>> {
        let max = self.settings.max_connections;
        self.conns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(&self.conns))
    }

    /// A refusal in flight, until its slot is dropped (after it is counted).
    fn refusal(&self) -> Slot<'_> {
        self.refusing.fetch_add(1, Ordering::Relaxed);
        Slot(&self.refusing)
    }

    /// Waits (up to `deadline`) for every client to end and every refusal to be counted:
    /// after `shutdown`, each client is sent its close (1001) by its own task, and a runtime
    /// dropped before that would cancel the task with the close unsent (or the count unsaved).
    async fn drained(&self, deadline: Duration) {
        let until = tokio::time::Instant::now() + deadline;
        let busy =
            || self.conns.load(Ordering::Relaxed) > 0 || self.refusing.load(Ordering::Relaxed) > 0;
        while busy() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Longest the door waits, once stopping, for its clients to get their close frame (1001).
const DRAIN: Duration = Duration::from_secs(2);

/// Accepts clients until `shutdown`.
pub async fn serve(front: Arc<Front>, listener: TcpListener, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(crate::audit::tally::WINDOW);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => front.flush_refusals(false).await,
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
            _ = shutdown.changed() => {
                front.drained(DRAIN).await;
                return front.flush_refusals(true).await;
            }
        }
    }
}

/// Releases a connection slot when the client ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Who passed the upgrade checks and their slot, or why the upgrade was refused.
#[derive(Default)]
struct Gate<'a> {
    who: Option<String>,
    /// The web-prompt session (its cookie value) the client came in with, if it did.
    session: Option<String>,
    slot: Option<Slot<'a>>,
    /// Why the upgrade was refused, and the refusal's place among those a stop waits for.
    refused: Option<(&'static str, String, Slot<'a>)>,
}

/// The pre-upgrade checks: the door link, the Origin, then a connection slot (so a client
/// that is not let in never holds one).
fn check_upgrade<'a>(front: &'a Front, req: &Request, g: &mut Gate<'a>) -> Result<(), Refusal> {
    let name =
        links::secret_in_path(req.uri().path()).and_then(|s| links::verify(&front.state_dir, s));
    let origin = req.headers().get("origin");
    // A cookie is sent by the browser whatever page opened the socket: it counts only with
    // an Origin, which the check below holds to the web prompt's (no cross-site hijacking).
    let name = name.or_else(|| {
        let (who, session) = origin.and(front.sessions.as_ref())?.admit(req)?;
        g.session = Some(session);
        Some(who)
    });
    let Some(name) = name else {
        g.refused = Some((
            "unauthenticated",
            "no valid door link or web-prompt session".into(),
            front.refusal(),
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
            g.refused = Some((
                "origin-refused",
                format!("origin {o:?} is not allowed"),
                front.refusal(),
            ));
            return Err((StatusCode::FORBIDDEN, "origin not allowed\n"));
        }
    }
    g.slot = front.take_slot();
    if g.slot.is_none() {
        g.refused = Some((
            "too-many-connections",
            "the front door is full".into(),
            front.refusal(),
        ));
        return Err((StatusCode::SERVICE_UNAVAILABLE, "too many connections\n"));
    }
    Ok(())
}

/// The door's writes to its client: whole server frames (unmasked), one write each.
struct Down {
    out: Vec<u8>,
}

impl Down {
    async fn frame(&mut self, io: &mut TcpStream, opcode: u8, payload: &[u8]) -> io::Result<()> {
        server_frame(&mut self.out, opcode, payload);
        io.write_all(&self.out).await
    }

    async fn close(&mut self, io: &mut TcpStream, code: u16, reason: &str) -> io::Result<()> {
        close_frame(&mut self.out, code, reason);
        io.write_all(&self.out).await
    }
}

/// One client: the upgrade checks, the upstream connection, then both directions.
async fn client(
    front: Arc<Front>,
    mut down: TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    // Frames are forwarded one by one as they are judged; Nagle would hold a small one back.
    let _ = down.set_nodelay(true);
    let mut gate = Gate::default();
    let ticket = front.pending.enter(peer.ip());
    let accepted = tokio::select! {
        a = handshake::accept(&mut down, HANDSHAKE, |req| check_upgrade(&front, req, &mut gate)) => a,
        _ = ticket.shed.notified() => return,
    };
    drop(ticket);
    let _slot = gate.slot.take();
    let who = gate.who.unwrap_or_else(|| "unauthenticated".into());
    if let Some((reason, message, _counting)) = gate.refused {
        front.refuse_upgrade(&who, peer, reason, &message).await;
        return;
    }
    let Ok(already) = accepted else { return };
    let max = front.settings.max_frame_bytes;
    let mut to_client = Down { out: Vec::new() };
    let (mut up, mut frames) = match upstream::connect(&front.settings.upstream, max, UPGRADE).await
    {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("upstream unavailable: {e}");
            front.refuse(&who, peer, None, "upstream-down", &msg).await;
            let _ = to_client.close(&mut down, 1011, &msg).await;
            return;
        }
    };
    // One task owns both sockets whole (no split halves, no locks): each select arm reads one
    // socket, and its body writes whole frames, done before the next read (no interleaving).
    let mut bucket = Bucket::new(front.settings.rate_per_sec, front.settings.rate_burst);
    let mut connected = false;
    let mut shutdown = shutdown;
    // Made once: a fresh `changed()` each turn of the loop would join and leave the watch's
    // waiter list (a lock, twice) for every frame.
    let stop = shutdown.changed();
    tokio::pin!(stop);
    let mut to_gateway = Upward::new();
    let mut from = ClientFrames::new(already, max, FRAME_DEADLINE);
    let signed_out = super::browser::session_end(front.sessions.as_ref(), gate.session.as_deref());
    tokio::pin!(signed_out);
    loop {
        tokio::select! {
            m = from.next(&mut down) => {
                let step = match m {
                    Ok(None) | Err(ClientError::Io(_) | ClientError::Truncated) => Step::End(None),
                    Err(e) => {
                        if matches!(e, ClientError::Binary) {
                            front.refuse(&who, peer, None, "binary-frame", &e.to_string()).await;
                        }
                        let code = e.close_code().unwrap_or(1002);
                        Step::End(Some((code, e.to_string())))
                    }
                    Ok(Some(_)) if !bucket.take() => {
                        front.refuse(&who, peer, None, "rate-limited", "too many frames").await;
                        Step::End(Some((1008, "rate limit exceeded".into())))
                    }
                    Ok(Some(FromClient::Message { raw, text })) => {
                        match judge(&front, &who, peer, text, &mut connected).await {
                            None => match up.write_all(raw).await {
                                Ok(()) => Step::Next,
                                Err(_) => Step::Gone,
                            },
                            Some(answer) => match to_client.frame(&mut down, OP_TEXT, answer.as_bytes()).await {
                                Ok(()) => Step::Next,
                                Err(_) => Step::Gone,
                            },
                        }
                    }
                    Ok(Some(FromClient::Ping(p))) => match to_client.frame(&mut down, OP_PONG, p).await {
                        Ok(()) => Step::Next,
                        Err(_) => Step::Gone,
                    },
                    Ok(Some(FromClient::Pong)) => Step::Next,
                    Ok(Some(FromClient::Close(code))) => {
                        // The close handshake: the door answers with the client's code.
                        let _ = to_gateway.send(&mut up, OP_CLOSE, &[]).await;
                        let _ = match code {
                            Some(c) => to_client.close(&mut down, c, "").await,
                            None => to_client.frame(&mut down, OP_CLOSE, &[]).await,
                        };
                        break;
                    }
                };
                match step {
                    Step::Next => {}
                    Step::Gone => break,
                    Step::End(c) => {
                        let _ = to_gateway.send(&mut up, OP_CLOSE, &[]).await;
                        if let Some((code, reason)) = c {
                            if to_client.close(&mut down, code, &reason).await.is_ok() {
                                linger(&mut down).await;
                            }
                        }
                        break;
                    }
                }
            }
            f = frames.next(&mut up) => {
                match f {
                    Ok(Some(Incoming::Data(raw))) => if down.write_all(raw).await.is_err() { break },
                    Ok(Some(Incoming::Ping(p))) => if to_gateway.send(&mut up, OP_PONG, p).await.is_err() { break },
                    Ok(Some(Incoming::Close { raw, payload })) => {
                        let _ = down.write_all(raw).await;
                        let _ = to_gateway.send(&mut up, OP_CLOSE, payload.get(..2).unwrap_or(&[])).await;
                        break;
                    }
                    Err(e) => {
                        let _ = to_client.close(&mut down, 1011, &format!("upstream: {e}")).await;
                        break;
                    }
                    Ok(None) => { let _ = to_client.close(&mut down, 1011, "upstream closed").await; break }
                }
            }
            _ = &mut signed_out => {
                front.refuse(&who, peer, None, "signed-out", "its web-prompt session ended").await;
                let _ = to_gateway.send(&mut up, OP_CLOSE, &[]).await;
                if to_client.close(&mut down, 1008, "signed out").await.is_ok() {
                    linger(&mut down).await;
                }
                break;
            }
            _ = &mut stop => {
                let _ = to_client.close(&mut down, 1001, "guard stopping").await;
                break;
            }
        }
    }
}

/// Longest a client may take over its upgrade request (then it is dropped, its slot freed).
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Longest a client may take over one frame, or one fragmented message, once begun (1008).
const FRAME_DEADLINE: Duration = Duration::from_secs(30);

/// Longest the door waits for the gateway's upgrade (then: 1011 to the client).
const UPGRADE: Duration = Duration::from_secs(10);

/// Longest the door waits for a refused client to go after its close frame.
const LINGER: Duration = Duration::from_secs(2);

/// After the door's close frame: ends its side of the connection, then drops what the
/// client still sends until it closes its side too (or [`LINGER`] passes). Closing the socket
/// with the client's bytes unread makes the kernel send a reset, which can destroy the close
/// frame before the client reads why.
async fn linger(io: &mut TcpStream) {
    let _ = io.shutdown().await;
    let drain = async {
        let mut sink = [0u8; 8192];
        while matches!(io.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// What one client frame leads to.
enum Step {
    Next,
    /// A socket is gone: stop.
    Gone,
    /// Close the client (with this code and reason) and the gateway.
    End(Option<(u16, String)>),
}

/// The error response the gateway itself would send.
fn error_res(id: &Value, code: &str, message: &str) -> String {
    json!({"type":"res","id":id,"ok":false,"error":{"code":code,"message":message}}).to_string()
}

/// One client text message: the first must be `connect` (passed byte for byte); later ones
/// are filtered. None: forward it as received; else the door's answer to the client.
async fn judge(
    front: &Front,
    who: &str,
    peer: SocketAddr,
    text: &str,
    connected: &mut bool,
) -> Option<String> {
    let frame = match ClientFrame::parse(text) {
        Ok(f) => f,
        Err(e) => {
            let reason = match e {
                FrameError::NotJson => "invalid-json",
                FrameError::Shape(_) => "not-a-request",
            };
            front.refuse(who, peer, None, reason, &e.to_string()).await;
            return Some(error_res(
                &Value::Null,
                "INVALID_REQUEST",
                &format!("sanctum-guard: {e}"),
            ));
        }
    };
    if !*connected {
        if frame.is_connect() {
            *connected = true;
            return None;
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
        return Some(error_res(
            &frame.id_value(),
            "INVALID_REQUEST",
            "sanctum-guard: connect first",
        ));
    }
    match judge_frame(&front.tables, &frame) {
        FrameVerdict::Forward => None,
        FrameVerdict::Refuse {
            code,
            reason,
            message,
        } => {
            front
                .refuse(who, peer, frame.method.as_deref(), reason, &message)
                .await;
            Some(error_res(&frame.id_value(), code, &message))
        }
    }
}
