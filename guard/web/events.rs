//! Live updates: `GET /api/events` (Server-Sent Events: `added`, `resolved`, `expired`,
//! `approval` (a partial approval of a request that needs several reviewers), and
//! `resync` when this client fell behind and must re-read the list), and the watcher that
//! makes a person notice: one log line per request that waits for a human, and the pending
//! gauge and decision metrics of the inbox's requests.

use super::api::Shared;
use super::http::{secure, Resp};
use super::metrics::global as metrics;
use super::view::{entry_json, resolved_json};
use crate::inbox::{InboxEvent, StateFilter};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// Open event streams beyond this get 503.
pub const MAX_STREAMS: usize = 1000;
/// Open event streams of one session beyond this get 429: one session (a tab per screen,
/// a few reconnects) cannot take every slot.
pub const MAX_STREAMS_PER_SESSION: usize = 16;
const HEARTBEAT: Duration = Duration::from_secs(15);

/// A body fed by a channel; ends when the sender goes.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

fn event(name: &str, data: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// Releases the stream's slots (the server's and its session's) when its task ends.
struct Slot(Arc<Shared>, String);
impl Drop for Slot {
    fn drop(&mut self) {
        self.0.sse_open.fetch_sub(1, Ordering::SeqCst);
        let mut per = self.0.streams_per_session();
        if let Some(n) = per.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                per.remove(&self.1);
            }
        }
    }
}

pub fn stream(sh: Arc<Shared>, sid: String) -> Resp {
    {
        let mut per = sh.streams_per_session();
        let n = per.entry(sid.clone()).or_default();
        if *n >= MAX_STREAMS_PER_SESSION {
            drop(per);
            metrics().web_refusal("sse-session-full");
            return super::http::error(
                StatusCode::TOO_MANY_REQUESTS,
                "busy",
                "too many live connections for this session",
            );
        }
        *n += 1;
    }
    if sh.sse_open.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        sh.sse_open.fetch_sub(1, Ordering::SeqCst);
        let mut per = sh.streams_per_session();
        if let Some(n) = per.get_mut(&sid) {
            *n -= 1;
        }
        drop(per);
        metrics().web_refusal("sse-full");
        return super::http::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "too many live connections",
        );
    }
    let slot = Slot(sh.clone(), sid.clone());
    let mut sub = sh.inbox.subscribe();
    let mut fleet = sh.inbox.subscribe_fleet();
    let mut votes = sh.votes.subscribe();
    let mut ended = sh.sessions.ended();
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let mut shutdown = sh.shutdown.clone();
    let engine = sh.engine.clone();
    tokio::spawn(async move {
        let _slot = slot;
        if tx
            .try_send(Bytes::from_static(b"retry: 2000\n\n: ok\n\n"))
            .is_err()
        {
            return;
        }
        let mut beat = tokio::time::interval(HEARTBEAT);
        beat.tick().await;
        loop {
            let msg = tokio::select! {
                ev = sub.recv() => match frame(ev, engine.as_deref()) {
                    Some(m) => m,
                    None => return,
                },
                // Other guards' requests (a fleet): the same events, the page cannot tell.
                ev = fleet.recv() => match fleet_frame(&_slot.0, ev, engine.as_deref()).await {
                    Some(m) => m,
                    None => return,
                },
                v = votes.recv() => match v {
                    Ok(v) => event("approval", &v),
                    Err(broadcast::error::RecvError::Lagged(_)) => event("resync", &serde_json::json!({})),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = beat.tick() => {
                    // The session, and its reviewer account (a removed account's stream
                    // ends here even if the page makes no call). A fleet's database away
                    // closes the stream without signing out: the page asks again.
                    let alive = match _slot.0.sessions.check(&sid) {
                        Ok(Some(view)) => match super::reviewer_gate::role_of(&_slot.0, &view).await {
                            Ok(_) => true,
                            Err(r) if r.status() == StatusCode::SERVICE_UNAVAILABLE => return,
                            Err(_) => false,
                        },
                        Ok(None) => false,
                        Err(_) => return,
                    };
                    if !alive {
                        let _ = tx.try_send(event("signed-out", &serde_json::json!({})));
                        return;
                    }
                    Bytes::from_static(b": keep-alive\n\n")
                }
                // A session that ends (logout, revocation; in a fleet, on any guard) ends
                // its streams now.
                _ = ended.changed() => {
                    match _slot.0.sessions.check(&sid) {
                        Ok(Some(_)) => continue,
                        Ok(None) => {
                            let _ = tx.try_send(event("signed-out", &serde_json::json!({})));
                            return;
                        }
                        Err(_) => return,
                    }
                }
                _ = tx.closed() => return,
                _ = async { let _ = shutdown.wait_for(|s| *s).await; } => return,
            };
            // A client that does not read is cut off; it reconnects and re-reads the list.
            if tx.try_send(msg).is_err() {
                return;
            }
        }
    });
    let mut r = Response::new(ChannelBody(rx).boxed());
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    let https = sh.https;
    secure(r, https)
}

/// One inbox event as a stream frame; None when the inbox is gone.
fn frame(
    ev: Result<InboxEvent, broadcast::error::RecvError>,
    engine: Option<&crate::engine::Engine>,
) -> Option<Bytes> {
    Some(match ev {
        Ok(InboxEvent::Added(e)) => event("added", &entry_json(&e, None, engine)),
        Ok(InboxEvent::Resolved(r)) => event("resolved", &resolved_json(&r)),
        Ok(InboxEvent::Expired(r)) => event("expired", &resolved_json(&r)),
        Err(broadcast::error::RecvError::Lagged(_)) => event("resync", &serde_json::json!({})),
        Err(broadcast::error::RecvError::Closed) => return None,
    })
}

/// A fleet event as a stream frame: an arrival shows its own guard's approval count
/// (`owners_rules`). None when the inbox is gone or the database cannot say (the page
/// reconnects and re-reads the list).
async fn fleet_frame(
    sh: &Shared,
    ev: Result<InboxEvent, broadcast::error::RecvError>,
    engine: Option<&crate::engine::Engine>,
) -> Option<Bytes> {
    if let Ok(InboxEvent::Added(e)) = &ev {
        let mut items = [entry_json(e, None, engine)];
        super::reviewer_gate::owners_rules(sh, &mut items)
            .await
            .ok()?;
        return Some(event("added", &items[0]));
    }
    frame(ev, engine)
}

/// Escapes control and bidi characters so a log line shows what the request says.
fn visible(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if out.chars().count() >= max {
            out.push('…');
            break;
        }
        if c.is_control() || super::assets::is_bidi(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// Watches the inbox for the whole serve: log lines and metrics.
pub fn spawn_watcher(sh: Arc<Shared>) {
    let mut sub = sh.inbox.subscribe();
    tokio::spawn(async move {
        let mut received: HashMap<String, u64> = HashMap::new();
        loop {
            match sub.recv().await {
                Ok(InboxEvent::Added(e)) => {
                    metrics().pending.inc();
                    received.insert(e.id.clone(), e.request.received_at_ms);
                    let left = e
                        .deadline_ms
                        .saturating_sub(crate::engine::decision::now_ms())
                        / 1000;
                    let summary = visible(&crate::audit::redact_str(&e.summary()), 100);
                    // One id: the card's, the URL's and the one `inbox approve` takes.
                    tracing::warn!(
                        "waiting for a human: {summary} ({left} s left) {}/#r={} id={} \
                         (or: sanctum-guard inbox approve {} / inbox deny {})",
                        sh.base_url,
                        e.id,
                        e.id,
                        e.id,
                        e.id
                    );
                }
                Ok(InboxEvent::Resolved(r)) | Ok(InboxEvent::Expired(r)) => {
                    metrics().pending.dec();
                    let at = received.remove(&r.id);
                    metrics().decision(&r.decision, at);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let n = sh
                        .inbox
                        .list(StateFilter::Pending)
                        .map(|l| l.len())
                        .unwrap_or(0);
                    metrics().pending.set(n as i64);
                    received.clear();
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}
