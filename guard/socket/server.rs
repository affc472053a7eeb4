//! The socket server: accepts connections, reads exactly one line per connection (to the
//! first `\n`, capped), runs the peer checks, hands the frame to the [`Engine`] and writes its
//! one reply before closing. On shutdown it stops accepting and lets in-flight requests answer
//! `deny` (`guard-shutdown`).
//!
//! A client writes its line right after connecting, so under load the line is usually there
//! when the connection is accepted: it is read, answered and closed without registering the
//! connection with the event loop (two epoll_ctl calls and a loop round trip fewer per
//! request). Only a connection whose line has not fully arrived is handed to tokio.

use super::auth::Peer;
use super::door::SocketDoor as Engine;
use super::listener::{bind_secure, ListenError, SocketFile};
use super::wire::{FrameKind, RejectReason, Reply, MAX_LINE_BYTES};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// Socket-level settings (the policy-level ones live in the engine).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub socket_path: PathBuf,
    /// How long a client may take to send its line.
    pub read_timeout: Duration,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// How long in-flight requests get to answer after shutdown starts.
    pub drain_timeout: Duration,
}

impl ServerOptions {
    pub fn new(socket_path: PathBuf) -> Self {
        ServerOptions {
            socket_path,
            read_timeout: Duration::from_secs(5),
            max_connections: 4096,
            drain_timeout: Duration::from_secs(3),
        }
    }
}

/// A bound, not yet serving socket.
pub struct Server {
    /// Non-blocking; accepted connections start as plain std streams.
    listener: AsyncFd<StdListener>,
    _file: SocketFile,
    opts: ServerOptions,
    engine: Arc<Engine>,
}

impl Server {
    /// Binds the socket (dir 0700, socket 0600). Must be called inside a tokio runtime.
    pub fn bind(opts: ServerOptions, engine: Arc<Engine>) -> Result<Self, ListenError> {
        let std = bind_secure(&opts.socket_path)?;
        let file = SocketFile::new(&opts.socket_path);
        // `AsyncFd::new` is deprecated because an arbitrary `AsRawFd` type could change or
        // close its descriptor while registered; a std `UnixListener` owns its descriptor for
        // its whole life (the condition `AsyncFd::register` states), so the safe call is sound.
        #[allow(deprecated)]
        let listener = AsyncFd::new(std).map_err(|source| ListenError::Io {
            what: "register listener",
            path: opts.socket_path.clone(),
            source,
        })?;
        Ok(Server {
            listener,
            _file: file,
            opts,
            engine,
        })
    }

    /// Serves until `shutdown` becomes true, then drains in-flight connections (their waits
    /// end with `guard-shutdown`) and removes the socket file.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let limit = Arc::new(Semaphore::new(self.opts.max_connections.max(1)));
        let mut tasks = JoinSet::new();
        loop {
            let permit = tokio::select! {
                p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                _ = shutdown.changed() => break,
            };
            let accepted = tokio::select! {
                a = accept(&self.listener) => a,
                _ = shutdown.changed() => break,
            };
            // Reap finished tasks so the set stays small under load.
            while tasks.try_join_next().is_some() {}
            match accepted {
                Ok(stream) => {
                    let engine = self.engine.clone();
                    let timeout = self.opts.read_timeout;
                    let stop = shutdown.clone();
                    tasks.spawn(async move {
                        handle_connection(stream, engine, timeout, stop).await;
                        drop(permit);
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        tracing::info!(in_flight = tasks.len(), "socket: stopped accepting");
        let drain = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(self.opts.drain_timeout, drain)
            .await
            .is_err()
        {
            tracing::warn!("socket: in-flight requests did not finish in time; aborting them");
            tasks.abort_all();
        }
    }
}

/// Accepts one connection, non-blocking.
async fn accept(listener: &AsyncFd<StdListener>) -> std::io::Result<StdStream> {
    loop {
        let mut ready = listener.readable().await?;
        match ready.try_io(|l| l.get_ref().accept()) {
            Ok(accepted) => {
                let (stream, _) = accepted?;
                stream.set_nonblocking(true)?;
                return Ok(stream);
            }
            // Another accept took it (readiness was cleared): wait again.
            Err(_would_block) => continue,
        }
    }
}

/// What reading the one request line produced.
enum LineRead {
    Line(Vec<u8>),
    Reject(RejectReason),
    /// The client vanished or stalled; nobody is left to answer.
    Gone,
}

/// Adds one read's bytes to `buf`: the line once its `\n` arrived, a rejection when it is too
/// long or the client closed first (`data` empty), else None (read more).
fn absorb(buf: &mut Vec<u8>, data: &[u8]) -> Option<LineRead> {
    if data.is_empty() {
        return Some(LineRead::Reject(RejectReason::Eof));
    }
    if let Some(pos) = data.iter().position(|b| *b == b'\n') {
        if buf.len() + pos > MAX_LINE_BYTES {
            return Some(LineRead::Reject(RejectReason::TooLarge));
        }
        buf.extend_from_slice(&data[..pos]);
        return Some(LineRead::Line(std::mem::take(buf)));
    }
    if buf.len() + data.len() > MAX_LINE_BYTES {
        return Some(LineRead::Reject(RejectReason::TooLarge));
    }
    buf.extend_from_slice(data);
    None
}

/// Reads what has already arrived, without waiting: None when the line is not complete yet.
fn read_line_now(stream: &mut StdStream, buf: &mut Vec<u8>) -> Option<LineRead> {
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(n) => {
                if let Some(done) = absorb(buf, &chunk[..n]) {
                    return Some(done);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(_) => return Some(LineRead::Gone),
        }
    }
}

/// Reads the rest of the line (after `buf`), waiting up to `deadline`.
async fn read_line(
    stream: &mut UnixStream,
    buf: &mut Vec<u8>,
    deadline: tokio::time::Instant,
) -> LineRead {
    let mut chunk = [0u8; 8192];
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) => return LineRead::Gone,
            // Still connected but silent: it gets an explicit rejection, not silence.
            Err(_) => return LineRead::Reject(RejectReason::ReadTimeout),
        };
        if let Some(done) = absorb(buf, &chunk[..n]) {
            return done;
        }
    }
}

/// A connection: still a plain non-blocking stream, or registered with tokio once it had to
/// wait.
enum Conn {
    Plain(StdStream),
    Async(UnixStream),
}

impl Conn {
    /// The line, and the connection to answer on (None only if registering it with the
    /// event loop failed: then the line is `Gone` too).
    async fn read_line(self, timeout: Duration) -> (Option<Conn>, LineRead) {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut buf = Vec::new();
        let mut stream = match self {
            Conn::Plain(mut s) => match read_line_now(&mut s, &mut buf) {
                Some(done) => return (Some(Conn::Plain(s)), done),
                None => match UnixStream::from_std(s) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "socket: registering a connection failed");
                        return (None, LineRead::Gone);
                    }
                },
            },
            Conn::Async(s) => s,
        };
        let got = read_line(&mut stream, &mut buf, deadline).await;
        (Some(Conn::Async(stream)), got)
    }

    async fn write_all(self, bytes: &[u8]) -> std::io::Result<()> {
        let (mut stream, rest) = match self {
            Conn::Async(s) => (s, bytes),
            Conn::Plain(mut s) => {
                let mut sent = 0;
                while sent < bytes.len() {
                    match s.write(&bytes[sent..]) {
                        Ok(n) => sent += n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                if sent == bytes.len() {
                    return Ok(());
                }
                (UnixStream::from_std(s)?, &bytes[sent..])
            }
        };
        stream.write_all(rest).await
    }
}

async fn handle_connection(
    stream: StdStream,
    engine: Arc<Engine>,
    timeout: Duration,
    shutdown: watch::Receiver<bool>,
) {
    let peer =
        match nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials) {
            Ok(c) => Peer {
                uid: c.uid(),
                pid: Some(c.pid()),
            },
            // No credentials: treat as a foreign peer (fail closed).
            Err(_) => Peer {
                uid: u32::MAX,
                pid: None,
            },
        };
    let (conn, line) = Conn::Plain(stream).read_line(timeout).await;
    let reply = match line {
        LineRead::Gone => {
            engine
                .audit_rejection(
                    &peer,
                    None,
                    RejectReason::Eof,
                    "connection reset while reading",
                )
                .await;
            return;
        }
        LineRead::Reject(reason) => {
            let message = match reason {
                RejectReason::TooLarge => "request line exceeds 256000 bytes",
                RejectReason::ReadTimeout => "no complete request line in time",
                _ => "connection closed before a newline",
            };
            engine.audit_rejection(&peer, None, reason, message).await;
            Reply::reject(None, FrameKind::Unknown, reason, message)
        }
        LineRead::Line(line) => engine.respond(&peer, &line, shutdown).await,
    };
    let bytes = reply.to_bytes();
    let Some(conn) = conn else { return };
    // Write the reply before closing: the client returns null on a close without one. The
    // drop that follows closes the socket, which is the client's end of reply (no separate
    // shutdown(2): nothing else holds the descriptor).
    if let Err(e) = conn.write_all(&bytes).await {
        tracing::debug!(error = %e, "socket: client left before the reply");
    }
}
