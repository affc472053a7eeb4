//! The socket server: accepts connections, reads exactly one line per connection (to the
//! first `\n`, capped), runs the peer checks, hands the frame to the [`Engine`] and writes its
//! one reply before closing. On shutdown it stops accepting and lets in-flight requests answer
//! `deny` (`guard-shutdown`).
//!
//! A client writes its line right after connecting, so under load the line is usually there
//! when the connection is accepted: it is read, answered and closed without registering the
//! connection with the event loop (two epoll_ctl calls and a loop round trip fewer per
//! request). Only a connection whose line has not fully arrived is handed to tokio.
//!
//! Pre-authentication load: nothing a client does before its line is
//! complete may delay others or grow memory without bound. The [`Budget`] caps connections
//! (in total and per uid) and the bytes buffered for unfinished lines (in total; each line is
//! capped at [`MAX_LINE_BYTES`]). At a cap, the oldest connection still sending its line is
//! shed (answered `overloaded` and closed) to make room: honest clients send their line at
//! once, so the ones shed are the silent and the slow. The accept loop never waits for a
//! slot, so a flood cannot hold honest connections in the listen backlog. Out of descriptors
//! (EMFILE, e.g. a lowered RLIMIT_NOFILE), a reserved descriptor is given up to accept and
//! answer the waiting client with a deny instead of spinning or dying.

use super::auth::Peer;
use super::budget::{Budget, Caps, Refused, Slot};
use super::door::SocketDoor as Engine;
use super::listener::{bind_secure, ListenError, SocketFile};
use super::peer::PeerLink;
use super::wire::{FrameKind, RejectReason, Reply, MAX_LINE_BYTES};
use crate::audit::event::{AuditEvent, GuardLimit, Rlimit};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

/// Socket-level settings (the policy-level ones live in the engine).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub socket_path: PathBuf,
    /// How long a client may take to send its line.
    pub read_timeout: Duration,
    /// Connections served at once (reading or waiting for their answer).
    pub max_connections: usize,
    /// Connections one uid may hold at once.
    pub max_connections_per_uid: usize,
    /// Bytes buffered for lines not yet complete, all connections together.
    pub max_buffered_bytes: usize,
    /// How long in-flight requests get to answer after shutdown starts.
    pub drain_timeout: Duration,
    /// Socket mode 0660 instead of 0600 (see `listener::bind_secure`).
    pub group_connect: bool,
}

impl ServerOptions {
    pub fn new(socket_path: PathBuf) -> Self {
        ServerOptions {
            socket_path,
            read_timeout: Duration::from_secs(5),
            max_connections: 4096,
            max_connections_per_uid: 4096,
            max_buffered_bytes: 16 * 1024 * 1024,
            drain_timeout: Duration::from_secs(3),
            group_connect: false,
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

/// Descriptor exhaustion seen since the last `guard-limit` record, and when that was.
struct LoadReport {
    emfile: u64,
    since: Instant,
}

impl Server {
    /// Binds the socket (checked dir, socket 0600 or 0660). Must be called inside a tokio runtime.
    pub fn bind(opts: ServerOptions, engine: Arc<Engine>) -> Result<Self, ListenError> {
        let std = bind_secure(&opts.socket_path, opts.group_connect)?;
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
        let budget = Budget::new(Caps {
            total: self.opts.max_connections,
            per_uid: self.opts.max_connections_per_uid,
            bytes: self.opts.max_buffered_bytes,
        });
        // Given up to accept one connection when descriptors run out (see the module doc).
        let mut reserve = std::fs::File::open("/dev/null").ok();
        let mut report = LoadReport {
            emfile: 0,
            since: Instant::now(),
        };
        let flusher = self.spawn_rejection_flusher();
        let mut tasks = JoinSet::new();
        loop {
            let accepted = tokio::select! {
                a = accept(&self.listener) => a,
                _ = shutdown.changed() => break,
            };
            // Reap finished tasks so the set stays small under load.
            while tasks.try_join_next().is_some() {}
            match accepted {
                Ok(stream) => self.admit(stream, &budget, &mut tasks, &shutdown).await,
                Err(e) if is_out_of_fds(&e) => {
                    report.emfile += 1;
                    self.free_a_descriptor(&budget, &mut reserve).await;
                    self.report_load(&mut report).await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        drop(reserve);
        self.drain(tasks).await;
        flusher.abort();
        self.report_load(&mut report).await;
        self.engine.flush_rejections(true).await;
    }

    /// Writes the rejection aggregates of each window as it ends.
    fn spawn_rejection_flusher(&self) -> tokio::task::JoinHandle<()> {
        let engine = self.engine.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(super::rejections::WINDOW);
            loop {
                tick.tick().await;
                engine.flush_rejections(false).await;
            }
        })
    }

    /// Serves an accepted connection in its own task, or refuses it when the budget is full.
    async fn admit(
        &self,
        stream: StdStream,
        budget: &Arc<Budget>,
        tasks: &mut JoinSet<()>,
        shutdown: &watch::Receiver<bool>,
    ) {
        let peer = peer_of(&stream);
        let (slot, shed) = match budget.admit(peer.uid) {
            Ok(s) => s,
            Err(Refused::Full) => {
                refuse_now(stream, &self.engine, &peer).await;
                return;
            }
        };
        let engine = self.engine.clone();
        let timeout = self.opts.read_timeout;
        let stop = shutdown.clone();
        tasks.spawn(async move {
            let conn = Admitted { slot, shed };
            handle_connection(stream, peer, conn, engine, timeout, stop).await;
        });
    }

    /// Out of descriptors: frees one (a slow reader first, else the reserve) and answers the
    /// waiting client rather than leave it in the backlog.
    async fn free_a_descriptor(&self, budget: &Arc<Budget>, reserve: &mut Option<std::fs::File>) {
        if budget.shed_one() {
            return;
        }
        *reserve = None;
        if let Ok(stream) = accept_now(&self.listener) {
            let peer = peer_of(&stream);
            refuse_now(stream, &self.engine, &peer).await;
        }
        *reserve = reserve
            .take()
            .or_else(|| std::fs::File::open("/dev/null").ok());
    }

    /// Lets in-flight connections finish (up to the drain timeout), then aborts the rest.
    async fn drain(&self, mut tasks: JoinSet<()>) {
        while tasks.try_join_next().is_some() {}
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

    /// One `guard-limit` record per window for descriptor exhaustion (the shed connections
    /// themselves are counted in the `overloaded` rejection aggregate).
    async fn report_load(&self, r: &mut LoadReport) {
        if r.emfile > 0 && r.since.elapsed() >= super::rejections::WINDOW {
            let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map(|(soft, hard)| Rlimit { soft, hard })
                .ok();
            tracing::error!(
                count = r.emfile,
                "socket: out of file descriptors (EMFILE); clients denied"
            );
            let event = AuditEvent::GuardLimit(GuardLimit {
                what: "accept",
                error: "EMFILE: too many open files",
                count: r.emfile,
                rlimit_nofile: nofile,
                action: "oldest readers shed; waiting clients denied",
            });
            self.engine.engine().record(event).await;
            r.emfile = 0;
            r.since = Instant::now();
        }
    }
}

fn is_out_of_fds(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

/// The peer's credentials (SO_PEERCRED); unknown credentials are a foreign peer (fail closed).
fn peer_of(stream: &StdStream) -> Peer {
    match nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials) {
        Ok(c) => Peer {
            uid: c.uid(),
            pid: Some(c.pid()),
        },
        Err(_) => Peer {
            uid: u32::MAX,
            pid: None,
        },
    }
}

/// Answers `overloaded` without reading and closes (best effort: never waits).
async fn refuse_now(mut stream: StdStream, engine: &Engine, peer: &Peer) {
    let msg = "guard overloaded: too many connections";
    engine
        .audit_rejection(peer, None, RejectReason::Overloaded, msg)
        .await;
    let reply = Reply::reject(None, FrameKind::Unknown, RejectReason::Overloaded, msg);
    let _ = stream.write(&reply.to_bytes());
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

/// One accept without waiting.
fn accept_now(listener: &AsyncFd<StdListener>) -> std::io::Result<StdStream> {
    let (stream, _) = listener.get_ref().accept()?;
    stream.set_nonblocking(true)?;
    Ok(stream)
}

/// What reading the one request line produced.
enum LineRead {
    Line(Vec<u8>),
    Reject(RejectReason),
    /// The client vanished or stalled; nobody is left to answer.
    Gone,
}

/// Adds one read's bytes to `buf`: the line once its `\n` arrived, a rejection when it is too
/// long, the client closed first (`data` empty) or the budget shed it, else None (read more).
fn absorb(buf: &mut Vec<u8>, data: &[u8], slot: &Slot) -> Option<LineRead> {
    if data.is_empty() {
        return Some(LineRead::Reject(RejectReason::Eof));
    }
    if let Some(pos) = memchr::memchr(b'\n', data) {
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
    if !slot.buffer(buf.capacity()) {
        return Some(LineRead::Reject(RejectReason::Overloaded));
    }
    None
}

/// Most bytes one read takes.
const READ_CHUNK: usize = 8192;

/// A connection's share of the budget and the signal that it was shed.
struct Admitted {
    slot: Slot,
    shed: oneshot::Receiver<()>,
}

/// Reads what has already arrived, without waiting: None when the line is not complete yet.
fn read_line_now(stream: &mut StdStream, buf: &mut Vec<u8>, slot: &Slot) -> Option<LineRead> {
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(n) => {
                if let Some(done) = absorb(buf, &chunk[..n], slot) {
                    return Some(done);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(_) => return Some(LineRead::Gone),
        }
    }
}

/// Reads the rest of the line (after `buf`), waiting up to `deadline` unless shed first.
async fn read_line(
    stream: &mut UnixStream,
    buf: &mut Vec<u8>,
    deadline: tokio::time::Instant,
    adm: &mut Admitted,
) -> LineRead {
    let Admitted { slot, shed } = adm;
    loop {
        // Wait for data before allocating for it: a silent connection holds no buffer.
        tokio::select! {
            r = tokio::time::timeout_at(deadline, stream.readable()) => match r {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return LineRead::Gone,
                // Still connected but silent: it gets an explicit rejection, not silence.
                Err(_) => return LineRead::Reject(RejectReason::ReadTimeout),
            },
            _ = &mut *shed => return LineRead::Reject(RejectReason::Overloaded),
        }
        let start = buf.len();
        buf.reserve(READ_CHUNK.min(MAX_LINE_BYTES + 1 - start.min(MAX_LINE_BYTES)));
        if !slot.buffer(buf.capacity()) {
            return LineRead::Reject(RejectReason::Overloaded);
        }
        match stream.try_read_buf(buf) {
            Ok(0) => return LineRead::Reject(RejectReason::Eof),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return LineRead::Gone,
        }
        if let Some(pos) = memchr::memchr(b'\n', &buf[start..]) {
            buf.truncate(start + pos);
            if buf.len() > MAX_LINE_BYTES {
                return LineRead::Reject(RejectReason::TooLarge);
            }
            return LineRead::Line(std::mem::take(buf));
        }
        if buf.len() > MAX_LINE_BYTES {
            return LineRead::Reject(RejectReason::TooLarge);
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
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Plain(s) => s.as_fd(),
            Conn::Async(s) => s.as_fd(),
        }
    }

    /// The line, and the connection to answer on (None only if registering it with the
    /// event loop failed: then the line is `Gone` too).
    async fn read_line(self, timeout: Duration, adm: &mut Admitted) -> (Option<Conn>, LineRead) {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut buf = Vec::new();
        if adm.shed.try_recv().is_ok() {
            // Shed before it was ever read (the flood was ahead of this task).
            return (Some(self), LineRead::Reject(RejectReason::Overloaded));
        }
        let mut stream = match self {
            Conn::Plain(mut s) => match read_line_now(&mut s, &mut buf, &adm.slot) {
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
        let got = read_line(&mut stream, &mut buf, deadline, adm).await;
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
    peer: Peer,
    mut adm: Admitted,
    engine: Arc<Engine>,
    timeout: Duration,
    shutdown: watch::Receiver<bool>,
) {
    let (conn, line) = Conn::Plain(stream).read_line(timeout, &mut adm).await;
    adm.slot.line_done();
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
                RejectReason::Overloaded => {
                    "shed under load: too many connections or buffered bytes (oldest first)"
                }
                _ => "connection closed before a newline",
            };
            engine.audit_rejection(&peer, None, reason, message).await;
            Reply::reject(None, FrameKind::Unknown, reason, message)
        }
        LineRead::Line(line) => {
            let link = match &conn {
                Some(c) => PeerLink::new(c.fd()),
                None => PeerLink::detached(),
            };
            engine.respond(&peer, &line, shutdown, link).await
        }
    };
    let bytes = reply.to_bytes();
    let Some(conn) = conn else { return };
    // Write the reply before closing: the client returns null on a close without one. The
    // drop that follows closes the socket, which is the client's end of reply (no separate
    // shutdown(2): nothing else holds the descriptor).
    if let Err(e) = conn.write_all(&bytes).await {
        tracing::debug!(error = %e, "socket: client left before the reply");
    }
    drop(adm);
}
