//! The socket server: accepts connections, reads exactly one line per connection (to the
//! first `\n`, capped), runs the peer checks, hands the frame to the [`Engine`] and writes its
//! one reply before closing. On shutdown it stops accepting and lets in-flight requests answer
//! `deny` (`guard-shutdown`).

use super::auth::Peer;
use super::engine::Engine;
use super::listener::{bind_secure, ListenError, SocketFile};
use super::wire::{FrameKind, RejectReason, Reply, MAX_LINE_BYTES};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
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
    listener: UnixListener,
    _file: SocketFile,
    opts: ServerOptions,
    engine: Arc<Engine>,
}

impl Server {
    /// Binds the socket (dir 0700, socket 0600). Must be called inside a tokio runtime.
    pub fn bind(opts: ServerOptions, engine: Arc<Engine>) -> Result<Self, ListenError> {
        let std = bind_secure(&opts.socket_path)?;
        let file = SocketFile::new(&opts.socket_path);
        let listener = UnixListener::from_std(std).map_err(|source| ListenError::Io {
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
                a = self.listener.accept() => a,
                _ = shutdown.changed() => break,
            };
            // Reap finished tasks so the set stays small under load.
            while tasks.try_join_next().is_some() {}
            match accepted {
                Ok((stream, _)) => {
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

/// What reading the one request line produced.
enum LineRead {
    Line(Vec<u8>),
    Reject(RejectReason),
    /// The client vanished or stalled; nobody is left to answer.
    Gone,
}

async fn read_line(stream: &mut UnixStream, timeout: Duration) -> LineRead {
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 8192];
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) => return LineRead::Gone,
            // Still connected but silent: it gets an explicit rejection, not silence.
            Err(_) => return LineRead::Reject(RejectReason::ReadTimeout),
        };
        if n == 0 {
            return LineRead::Reject(RejectReason::Eof);
        }
        let data = &chunk[..n];
        if let Some(pos) = data.iter().position(|b| *b == b'\n') {
            if buf.len() + pos > MAX_LINE_BYTES {
                return LineRead::Reject(RejectReason::TooLarge);
            }
            buf.extend_from_slice(&data[..pos]);
            return LineRead::Line(buf);
        }
        if buf.len() + n > MAX_LINE_BYTES {
            return LineRead::Reject(RejectReason::TooLarge);
        }
        buf.extend_from_slice(data);
    }
}

async fn handle_connection(
    mut stream: UnixStream,
    engine: Arc<Engine>,
    timeout: Duration,
    shutdown: watch::Receiver<bool>,
) {
    let peer = match stream.peer_cred() {
        Ok(c) => Peer {
            uid: c.uid(),
            pid: c.pid(),
        },
        // No credentials: treat as a foreign peer (fail closed).
        Err(_) => Peer {
            uid: u32::MAX,
            pid: None,
        },
    };
    let reply = match read_line(&mut stream, timeout).await {
        LineRead::Gone => {
            engine.audit_rejection(
                &peer,
                None,
                RejectReason::Eof,
                "connection reset while reading",
            );
            return;
        }
        LineRead::Reject(reason) => {
            let message = match reason {
                RejectReason::TooLarge => "request line exceeds 256000 bytes",
                RejectReason::ReadTimeout => "no complete request line in time",
                _ => "connection closed before a newline",
            };
            engine.audit_rejection(&peer, None, reason, message);
            Reply::reject(None, FrameKind::Unknown, reason, message)
        }
        LineRead::Line(line) => engine.respond(&peer, &line, shutdown).await,
    };
    let bytes = reply.to_bytes();
    // Write the reply before closing: the client returns null on a close without one.
    if let Err(e) = stream.write_all(&bytes).await {
        tracing::debug!(error = %e, "socket: client left before the reply");
        return;
    }
    let _ = stream.shutdown().await;
}
