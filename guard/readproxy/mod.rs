//! The read proxy: the only network an autonomous HTTP read has. Such a run may TCP-connect
//! to one port alone (Landlock), the port this proxy listens on at 127.0.0.1, and its
//! environment names the proxy with a credential issued for that run only
//! (`http://RUN:TOKEN@127.0.0.1:PORT`), so every request is tied to the request id that let
//! the run start and anyone without a live credential is refused.
//!
//! The proxy reads plain HTTP `GET`/`HEAD` without a body (absolute form) and HTTPS as
//! `CONNECT host:443`; it resolves the name itself (hosts file first), refuses every address
//! that is not public unicast (`addr`), and connects to the very address it checked. Each
//! request is audited with the run's request id; refusals past a small rate are counted and
//! written as one summary record a second, so a flood cannot grow the log fast.
//!
//! Same port, other services: Landlock's TCP rules name a port, not an address. The port is
//! one the kernel handed the guard (bound before any run starts, held for the guard's life),
//! and the guard listens on it at both 127.0.0.1 and ::1, so no wildcard listener and no
//! other loopback-v6 listener can share it on this host. What the port rule alone does not
//! stop (SECURITY.md): a service bound to that same port number on another specific address
//! (127.0.0.2, a LAN address, another host). The port is random per guard start.

pub mod addr;
mod conn;
pub mod resolve;

use crate::audit::event::ReadProxyRecord;
use crate::audit::{AuditEvent, AuditLog};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

pub use resolve::ResolverOptions;

/// How the read proxy runs.
#[derive(Debug, Clone)]
pub struct ReadProxyOptions {
    /// 0: a port the kernel picks (every deployment); tests and benches may fix one.
    pub port: u16,
    pub resolver: ResolverOptions,
    /// Forward through this HTTP proxy (compose: the `egress` service, the agent
    /// container's only way out) instead of connecting directly; the upstream then applies
    /// its own allow-list as well.
    pub upstream: Option<SocketAddr>,
    pub max_connections: usize,
    /// Time for the request head, the lookup and the connect.
    pub head_timeout: Duration,
    /// A connection with no byte either way for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for ReadProxyOptions {
    fn default() -> Self {
        ReadProxyOptions {
            port: 0,
            resolver: ResolverOptions::default(),
            upstream: None,
            max_connections: 64,
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReadProxyError {
    #[error("read proxy: listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("read proxy: no randomness for run credentials: {0}")]
    Random(String),
}

/// A run's live credential.
struct Run {
    token: String,
    request_id: String,
}

/// Refusal records written in the current second, and those only counted.
#[derive(Default)]
struct Limiter {
    second: u64,
    written: u32,
    suppressed: u64,
}

/// Refusal records a second before they are only counted.
const REFUSALS_PER_SECOND: u32 = 20;

struct Shared {
    runs: Mutex<HashMap<String, Run>>,
    opts: ReadProxyOptions,
    audit: AuditLog,
    limiter: Mutex<Limiter>,
    started: std::time::Instant,
    /// Cleared when a record could not be written or synced: every request is then refused.
    audit_ok: Arc<std::sync::atomic::AtomicBool>,
}

/// The running proxy; clones share it.
#[derive(Clone)]
pub struct ReadProxy {
    shared: Arc<Shared>,
    port: u16,
}

impl std::fmt::Debug for ReadProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReadProxy(127.0.0.1:{})", self.port)
    }
}

fn random_hex(n: usize) -> Result<String, ReadProxyError> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(|e| ReadProxyError::Random(e.to_string()))?;
    Ok(hex::encode(b))
}

/// Binds 127.0.0.1:port and [::1]:same port (see the module doc); the v6 bind may fail where
/// the host has no IPv6 loopback, which leaves nothing on ::1 to share the port with either.
fn bind(port: u16) -> Result<(TcpListener, Option<TcpListener>), ReadProxyError> {
    let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let l4 = std::net::TcpListener::bind(v4)
        .map_err(|source| ReadProxyError::Listen { addr: v4, source })?;
    let listen = |l: std::net::TcpListener, addr| {
        l.set_nonblocking(true)
            .and_then(|()| TcpListener::from_std(l))
            .map_err(|source| ReadProxyError::Listen { addr, source })
    };
    let bound = l4
        .local_addr()
        .map_err(|source| ReadProxyError::Listen { addr: v4, source })?;
    let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, bound.port()));
    let l6 = match std::net::TcpListener::bind(v6) {
        Ok(l) => Some(listen(l, v6)?),
        Err(e) => {
            tracing::warn!(error = %e, "read proxy: no listener on [::1]");
            None
        }
    };
    Ok((listen(l4, bound)?, l6))
}

impl ReadProxy {
    /// Binds and serves until `shutdown` turns true; must be called inside a Tokio runtime.
    pub fn start(
        opts: ReadProxyOptions,
        audit: AuditLog,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Result<ReadProxy, ReadProxyError> {
        let (l4, l6) = bind(opts.port)?;
        let port = l4
            .local_addr()
            .map_err(|source| ReadProxyError::Listen {
                addr: SocketAddr::from((Ipv4Addr::LOCALHOST, opts.port)),
                source,
            })?
            .port();
        let shared = Arc::new(Shared {
            runs: Mutex::new(HashMap::new()),
            opts,
            audit,
            limiter: Mutex::new(Limiter::default()),
            started: std::time::Instant::now(),
            audit_ok: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        });
        let slots = Arc::new(tokio::sync::Semaphore::new(
            shared.opts.max_connections.max(1),
        ));
        tokio::spawn(conn::accept_loop(
            l4,
            shared.clone(),
            slots.clone(),
            shutdown.clone(),
        ));
        if let Some(l6) = l6 {
            tokio::spawn(conn::accept_loop(
                l6,
                shared.clone(),
                slots,
                shutdown.clone(),
            ));
        }
        tokio::spawn(flush_summaries(shared.clone(), shutdown));
        Ok(ReadProxy { shared, port })
    }

    /// The port every run's Landlock rule allows.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Issues the credential of one run, valid until the pass is dropped.
    pub fn admit(&self, request_id: &str) -> Result<RunPass, ReadProxyError> {
        let user = format!("run-{}", random_hex(8)?);
        let token = random_hex(16)?;
        let url = format!("http://{user}:{token}@127.0.0.1:{}", self.port);
        if let Ok(mut runs) = self.shared.runs.lock() {
            runs.insert(
                user.clone(),
                Run {
                    token,
                    request_id: request_id.to_owned(),
                },
            );
        }
        Ok(RunPass {
            shared: self.shared.clone(),
            user,
            url,
            port: self.port,
        })
    }
}

/// One run's credential; dropping it (the run ended) revokes it.
pub struct RunPass {
    shared: Arc<Shared>,
    user: String,
    url: String,
    port: u16,
}

/// Variables that would send a client elsewhere or around the proxy: removed from the run.
pub const CLEARED_ENV: [&str; 4] = ["ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"];

impl RunPass {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The proxy variables every common client reads (curl, wget, git, Python, Node).
    pub fn env(&self) -> Vec<(String, String)> {
        ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
            .iter()
            .map(|k| (k.to_string(), self.url.clone()))
            .collect()
    }
}

impl Drop for RunPass {
    fn drop(&mut self) {
        if let Ok(mut runs) = self.shared.runs.lock() {
            runs.remove(&self.user);
        }
    }
}

impl Shared {
    /// The request id of the run whose credential `user:token` is, if it is live.
    fn run_of(&self, user: &str, token: &str) -> Option<String> {
        let runs = self.runs.lock().ok()?;
        let run = runs.get(user)?;
        let same: bool =
            subtle::ConstantTimeEq::ct_eq(run.token.as_bytes(), token.as_bytes()).into();
        same.then(|| run.request_id.clone())
    }

    /// Whether records still reach the disk (else nothing is allowed: fail closed).
    fn audit_ok(&self) -> bool {
        self.audit_ok.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Queues `rec` (an allow, or a refusal within the rate) or only counts it. Queued, not
    /// awaited: the run that makes the request was recorded and fsynced before it started,
    /// and the writer syncs this within its window (an fsync per request would cost
    /// milliseconds); a failed write clears `audit_ok` and stops every later request.
    fn record(&self, mut rec: ReadProxyRecord) {
        if rec.verdict == "deny" {
            let second = self.started.elapsed().as_secs();
            let take = match self.limiter.lock() {
                Ok(mut l) => {
                    if l.second != second {
                        l.second = second;
                        l.written = 0;
                    }
                    if l.written < REFUSALS_PER_SECOND {
                        l.written += 1;
                        Some(std::mem::take(&mut l.suppressed))
                    } else {
                        l.suppressed += 1;
                        None
                    }
                }
                Err(_) => Some(0),
            };
            let Some(before) = take else { return };
            rec.suppressed_before = (before > 0).then_some(before);
        }
        self.audit
            .record_detached(AuditEvent::ReadProxy(Box::new(rec)), &self.audit_ok);
    }
}

/// Once a second, the refusals only counted become one summary record.
async fn flush_summaries(shared: Arc<Shared>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let stop = tokio::select! {
            _ = tick.tick() => false,
            _ = shutdown.changed() => true,
        };
        let n = shared
            .limiter
            .lock()
            .map(|mut l| std::mem::take(&mut l.suppressed))
            .unwrap_or(0);
        if n > 0 {
            let rec = ReadProxyRecord {
                request_id: None,
                client: String::new(),
                method: String::new(),
                target: String::new(),
                verdict: "deny",
                reason: format!("{n} more refusals in the last second, not recorded one by one"),
                upstream: None,
                suppressed_before: Some(n),
            };
            let _ = shared
                .audit
                .record(AuditEvent::ReadProxy(Box::new(rec)))
                .await;
        }
        if stop {
            return;
        }
    }
}

/// Points a resolved `network = "read-proxy"` profile at the proxy: TCP connect to its port
/// alone, the proxy variables set to the run's credential, and the variables that would
/// route around it removed.
pub fn confine(
    profile: &mut crate::sandbox::ResolvedProfile,
    env: &mut std::collections::BTreeMap<String, String>,
    pass: &RunPass,
) {
    profile.network = crate::sandbox::NetworkSpec::Ports(vec![pass.port()]);
    for k in CLEARED_ENV {
        env.remove(k);
    }
    env.extend(pass.env());
}
