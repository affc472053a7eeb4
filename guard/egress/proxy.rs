//! The forward proxy itself: one HTTP request head per connection (`head`), either `CONNECT host:port`
//! (a tunnel, for HTTPS) or an absolute-form `METHOD http://host[:port]/path` (plain HTTP,
//! forwarded in origin form with `Connection: close`). The egress rules judge it (a deny rule
//! wins; an unlisted destination is refused); an allowed one must resolve to an address its
//! rule may reach (`rules::may_reach`); anything else is answered 4xx/5xx with the reason and
//! nothing is connected. Each allowed connection and each closed tunnel is an audit
//! record: the allow is written to the log (the page cache has it: a crash of the proxy loses
//! none) before a byte reaches the destination, and fsynced at once, grouped with the others
//! under way, without the connection waiting for the disk (an fsync took ~4 ms here, more than
//! the whole budget for what the proxy may add); if an fsync fails the proxy allows nothing
//! more. Denials are counted per client address and reason (`audit::tally`): the first of a
//! window in full, the rest as one count, so no client can grow the log faster than that.

use super::head::parse_head;
use super::overlay::{Judged, LiveRules};
use super::rules::{dest_host, may_reach, OwnNets};
use crate::audit::event::{EgressCounted, EgressRecord};
use crate::audit::tally::{Tally, WINDOW};
use crate::audit::{AuditEvent, AuditLog};
use crate::policy::egress::{Destination, EgressRule};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Longest request head accepted (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;

/// How the proxy runs.
pub struct Options {
    /// The policy's rules, then the overlay "always" answers grow.
    pub rules: LiveRules,
    /// How to ask a person about a destination no rule covers (`None`: refused at once).
    pub asker: Option<super::ask::Asker>,
    /// The proxy's own networks, which a name reaches only through an `internal` rule.
    pub own: OwnNets,
    /// Connections served at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Time to send the request head, and to connect upstream.
    pub head_timeout: Duration,
    /// A tunnel with no byte either way for this long is closed.
    pub idle_timeout: Duration,
    /// Provider routes: requests to the proxy itself at `/providers/<name>/` (`route`).
    pub routes: super::route::Routes,
    /// A refused CONNECT is answered inside the tunnel (`tunnel_refusal`), for clients that
    /// drop a refused CONNECT's body.
    pub refuse_in_tunnel: bool,
    /// An allowed connection waits until its record is fsynced, not only written.
    pub durable_connections: bool,
}

/// Reads the request head; returns it and any bytes that followed it.
async fn read_head(s: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), (u16, &'static str)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|_| (400, "connection error"))?;
        if n == 0 {
            return Err((400, "connection closed before a request"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            let rest = buf.split_off(at + 4);
            buf.truncate(at);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err((431, "request head too large"));
        }
    }
}

pub(super) async fn answer(s: &mut TcpStream, status: u16, reason: &str) {
    let text = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("sanctum-guard egress: {reason}\n");
    let msg = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.write_all(msg.as_bytes()).await;
    let _ = s.shutdown().await;
}

/// Answers the refusal of a well-formed request `ask`: inside the tunnel for a CONNECT when
/// the proxy is told to, else as the CONNECT's or request's own answer.
async fn refuse(
    mut s: TcpStream,
    opts: &Options,
    ask: &super::head::Ask,
    early: Vec<u8>,
    status: u16,
    why: &str,
) {
    if opts.refuse_in_tunnel && ask.forward_head.is_none() {
        return super::tunnel_refusal::refuse_inside(s, early, status, why, opts.head_timeout)
            .await;
    }
    answer(&mut s, status, why).await;
}

/// Resolves and connects to an address `rule` may reach; the stream and that address.
async fn connect(
    rule: &EgressRule,
    own: &OwnNets,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<(TcpStream, SocketAddr), String> {
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => return Err(format!("cannot resolve {host}: {e}")),
            Err(_) => return Err(format!("resolving {host} timed out")),
        };
    let mut refused = Vec::new();
    let allowed: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| match may_reach(rule, a.ip(), own) {
            Ok(()) => true,
            Err(why) => {
                refused.push(why);
                false
            }
        })
        .collect();
    if allowed.is_empty() {
        return Err(format!(
            "{host} resolves to no address its rule may reach: {}",
            if refused.is_empty() {
                "no address".to_owned()
            } else {
                refused.join("; ")
            }
        ));
    }
    let mut last = String::new();
    for a in allowed {
        match tokio::time::timeout(timeout, TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok((s, a)),
            Ok(Err(e)) => last = format!("{a}: {e}"),
            Err(_) => last = format!("{a}: connect timed out"),
        }
    }
    Err(last)
}

/// Copies both ways until either side closes or nothing moves for `idle`; bytes up, down.
/// With `up_limit`, at most that many bytes go from `a` to `b`; after them nothing more of
/// `a` is read (the answer still flows back).
async fn splice(
    mut a: TcpStream,
    mut b: TcpStream,
    idle: Duration,
    up_limit: Option<u64>,
) -> (u64, u64) {
    let (mut ar, mut aw) = a.split();
    let (mut br, mut bw) = b.split();
    let (mut up, mut down) = (0u64, 0u64);
    let mut x = [0u8; 16384];
    let mut y = [0u8; 16384];
    let room = |up: u64| {
        up_limit.map_or(usize::MAX, |l| {
            usize::try_from(l - up).unwrap_or(usize::MAX)
        })
    };
    loop {
        let open_up = room(up) > 0;
        tokio::select! {
            r = tokio::time::timeout(idle, ar.read(&mut x)), if open_up => match r {
                Ok(Ok(n)) if n > 0 => {
                    let n = n.min(room(up));
                    if bw.write_all(&x[..n]).await.is_err() { break; }
                    up += n as u64;
                }
                _ => break,
            },
            r = tokio::time::timeout(idle, br.read(&mut y)) => match r {
                Ok(Ok(n)) if n > 0 => { if aw.write_all(&y[..n]).await.is_err() { break; } down += n as u64; }
                _ => break,
            },
        }
    }
    (up, down)
}

/// The proxy's audit log and its count of denials.
struct Records {
    audit: AuditLog,
    denials: Tally<(IpAddr, &'static str)>,
    /// Cleared when a record the proxy did not wait to see fsynced could not be made durable:
    /// from then on nothing is allowed (fail closed).
    durable: Arc<AtomicBool>,
}

impl Records {
    async fn deny(&self, rec: EgressRecord, why: &'static str) {
        note_denial(&self.denials, &self.audit, rec, why).await;
    }

    async fn flush(&self, all: bool) {
        flush_denials(&self.denials, &self.audit, all).await;
    }
}

/// Audits a denial (`why`: its kind, the count's key): in full when it is the first of its
/// client and kind in the window, else only counted. The proxy and its routes share it.
pub(super) async fn note_denial(
    denials: &Tally<(IpAddr, &'static str)>,
    audit: &AuditLog,
    rec: EgressRecord,
    why: &'static str,
) {
    let message = format!("{} {}: {}", rec.method, rec.target, rec.reason);
    let ip = rec
        .client
        .parse::<SocketAddr>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    if denials.note((ip, why), &message) {
        let _ = audit.record(AuditEvent::Egress(Box::new(rec))).await;
    }
}

/// Writes the denial counts of the windows that ended (all of them with `all`).
pub(super) async fn flush_denials(
    denials: &Tally<(IpAddr, &'static str)>,
    audit: &AuditLog,
    all: bool,
) {
    let due = denials.take_due(all, |(ip, why)| (ip.to_string(), (*why).to_owned()));
    for counted in due {
        let e = AuditEvent::EgressRefusals(EgressCounted {
            phase: "denied",
            counted,
        });
        let _ = audit.record(e).await;
    }
}

/// Serves one client connection, auditing what it decided: a refusal's record is written
/// (or counted) before the client hears it, an allow's before a byte reaches the destination.
async fn serve_one(mut s: TcpStream, peer: SocketAddr, opts: Arc<Options>, records: Arc<Records>) {
    let audit = &records.audit;
    let mut rec = super::undecided(peer, String::new(), String::new());
    let started = Instant::now();
    let head = match tokio::time::timeout(opts.head_timeout, read_head(&mut s)).await {
        Ok(h) => h,
        Err(_) => Err((408, "no request head in time")),
    };
    let head = match head {
        // The local address (a syscall) only matters when there are routes to claim.
        Ok((h, rest)) if !opts.routes.is_empty() && opts.routes.claims(&h, s.local_addr().ok()) => {
            let audit = records.audit.clone();
            return super::route::serve(s, peer, h, rest, opts, audit).await;
        }
        other => other,
    };
    let parsed = head.and_then(|(h, rest)| parse_head(&h).map(|a| (a, rest)));
    let (ask, mut rest) = match parsed {
        Ok(x) => x,
        Err((status, why)) => {
            rec.reason = why.into();
            records.deny(rec, "bad-request").await;
            answer(&mut s, status, why).await;
            return;
        }
    };
    rec.method.clone_from(&ask.method);
    rec.target = format!("{}:{}", ask.host, ask.port);
    let host = match dest_host(&ask.host) {
        Ok(h) => h,
        Err(why) => {
            rec.reason = format!("bad host {:?}: {why}", ask.host);
            let why = rec.reason.clone();
            records.deny(rec, "bad-request").await;
            answer(&mut s, 400, &why).await;
            return;
        }
    };
    let dest = Destination {
        host,
        port: ask.port,
        plain: ask.path.clone().map(|p| (ask.method.clone(), p)),
    };
    let judged = opts.rules.judge(&dest);
    let rule = match judged {
        Judged::Allow(r) => r,
        Judged::Deny(r) => {
            rec.reason = format!("denied by {}", r.origin);
            let why = rec.reason.clone();
            records.deny(rec, "denied").await;
            refuse(s, &opts, &ask, rest, 403, &why).await;
            return;
        }
        Judged::Unlisted => {
            let q = super::ask::Query {
                host: &dest.host,
                port: ask.port,
                method: &ask.method,
                path: ask.path.as_deref(),
                client: peer,
            };
            let mut early = Vec::new();
            let resolved = super::unlisted::resolve_while_connected(
                &opts, audit, &mut rec, &q, &s, &mut early,
            )
            .await;
            rest.extend_from_slice(&early);
            match resolved {
                Ok(r) => r,
                Err(refused) if refused.gone => return,
                Err(refused) => {
                    let why = rec.reason.clone();
                    if refused.counted {
                        records.deny(rec, "not-allowed").await;
                    }
                    refuse(s, &opts, &ask, rest, 403, &why).await;
                    return;
                }
            }
        }
    };
    let (up, upstream) =
        match connect(&rule, &opts.own, &ask.host, ask.port, opts.head_timeout).await {
            Ok(u) => u,
            Err(why) => {
                rec.reason = why.clone();
                records.deny(rec, "upstream-failed").await;
                refuse(s, &opts, &ask, rest, 502, &why).await;
                return;
            }
        };
    rec.verdict = "allow";
    rec.reason = format!("allowed by {}", rule.origin);
    rec.upstream = Some(upstream.to_string());
    // The decision is in the log before a byte reaches the destination; its fsync is under
    // way (or, when told, done), and an earlier one that failed stops every allow.
    let event = AuditEvent::Egress(Box::new(rec.clone()));
    let recorded = records.durable.load(Ordering::Relaxed)
        && if opts.durable_connections {
            audit.record(event).await.is_ok()
        } else {
            audit.record_written(event, &records.durable).await.is_ok()
        };
    if !recorded {
        answer(&mut s, 502, "the audit log cannot record this connection").await;
        return;
    }
    let mut up = up;
    let first = match &ask.forward_head {
        None => {
            s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(head) => up.write_all(head).await,
    };
    // A plain request's body: what Content-Length said, and not a byte more.
    let mut up_limit = ask.body_len;
    if let Some(limit) = up_limit.as_mut() {
        rest.truncate(usize::try_from(*limit).unwrap_or(usize::MAX));
        *limit -= rest.len() as u64;
    }
    if first.is_err() || (!rest.is_empty() && up.write_all(&rest).await.is_err()) {
        return;
    }
    let (u, d) = splice(s, up, opts.idle_timeout, up_limit).await;
    rec.phase = "closed";
    rec.bytes_up = Some(u + rest.len() as u64);
    rec.bytes_down = Some(d);
    rec.duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    // What was decided is already recorded; this only reports the traffic, so nothing waits.
    audit.record_detached(AuditEvent::Egress(Box::new(rec)), &records.durable);
}

/// Accepts until `shutdown` turns true.
pub async fn run(
    listener: TcpListener,
    opts: Options,
    audit: AuditLog,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(opts.max_connections.max(1)));
    let opts = Arc::new(opts);
    let records = Arc::new(Records {
        audit,
        denials: Tally::default(),
        durable: Arc::new(AtomicBool::new(true)),
    });
    let mut tick = tokio::time::interval(WINDOW);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return records.flush(true).await },
            _ = tick.tick() => { records.flush(false).await; continue }
            _ = shutdown.changed() => return records.flush(true).await,
        };
        let (s, peer) = tokio::select! {
            a = listener.accept() => match a {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "egress: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tick.tick() => { records.flush(false).await; continue }
            _ = shutdown.changed() => return records.flush(true).await,
        };
        let (opts, records) = (opts.clone(), records.clone());
        tokio::spawn(async move {
            serve_one(s, peer, opts, records).await;
            drop(permit);
        });
    }
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
