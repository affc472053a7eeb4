//! The approver connection's outgoing side: resolve frames (queued, so a decision made while
//! the gateway was away is sent on reconnect) and the Agent page's calls (sent only while
//! connected, each answered by its `res` frame or failed after a timeout). Implements the
//! engine's [`AgentLink`].

use crate::engine::agent::{AgentCall, AgentError, AgentLink, LinkFuture};
use crate::openclaw::ws::req;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How long an Agent-page call waits for the gateway.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Rpc {
    tx: mpsc::UnboundedSender<String>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    seq: AtomicU64,
    calls: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    connected: AtomicBool,
}

impl Default for Rpc {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Rpc {
            tx,
            rx: Mutex::new(Some(rx)),
            seq: AtomicU64::new(0),
            calls: Mutex::new(HashMap::new()),
            connected: AtomicBool::new(false),
        }
    }
}

impl Rpc {
    /// The frames to write; the one connection loop takes it once.
    pub(super) fn take_rx(&self) -> Option<mpsc::UnboundedReceiver<String>> {
        self.rx.lock().ok().and_then(|mut r| r.take())
    }

    /// Queues a request whose answer nobody waits for.
    pub(super) fn send(&self, method: &str, params: Value) {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let _ = self.tx.send(req(&format!("g{n}"), method, params));
    }

    /// Connected or not; going down fails every call still waiting.
    pub(super) fn set_connected(&self, up: bool) {
        self.connected.store(up, Ordering::SeqCst);
        if !up {
            if let Ok(mut c) = self.calls.lock() {
                c.clear();
            }
        }
    }

    /// After a session ended: the Agent page's calls still queued were already failed, so they
    /// are dropped (a task must never start later, unseen); resolve frames stay queued.
    pub(super) fn drop_stale_calls(&self, rx: &mut mpsc::UnboundedReceiver<String>) {
        let mut keep = Vec::new();
        while let Ok(f) = rx.try_recv() {
            if !is_call(&f) {
                keep.push(f);
            }
        }
        for f in keep {
            let _ = self.tx.send(f);
        }
    }

    /// Hands a `res` frame to its waiting call; false when no call waits for it.
    pub(super) fn answer(&self, v: &Value) -> bool {
        let Some(id) = v["id"].as_str() else {
            return false;
        };
        let tx = self.calls.lock().ok().and_then(|mut c| c.remove(id));
        match tx {
            Some(tx) => {
                let _ = tx.send(v.clone());
                true
            }
            None => false,
        }
    }

    async fn request(&self, call: AgentCall) -> Result<Value, AgentError> {
        self.call_method(call.method(), call.params()).await
    }

    /// Calls `method` on the gateway and waits (up to [`CALL_TIMEOUT`]) for its payload.
    /// Only while connected; a call cut off by a dropped connection is never sent later.
    pub(super) async fn call_method(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, AgentError> {
        if !self.connected.load(Ordering::SeqCst) {
            return Err(AgentError::Unavailable(
                "the guard is not connected to the gateway".into(),
            ));
        }
        let id = format!("a{}", self.seq.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if let Ok(mut c) = self.calls.lock() {
            c.insert(id.clone(), tx);
        }
        if self.tx.send(req(&id, method, params)).is_err() {
            self.forget(&id);
            return Err(AgentError::Unavailable("the connection is closed".into()));
        }
        let res = match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(v)) => v,
            Ok(Err(_)) => {
                return Err(AgentError::Unavailable(
                    "the gateway connection dropped".into(),
                ))
            }
            Err(_) => {
                self.forget(&id);
                return Err(AgentError::Timeout);
            }
        };
        if res["ok"] == true {
            Ok(res["payload"].clone())
        } else {
            let e = &res["error"];
            Err(AgentError::Gateway(format!(
                "{}: {}",
                e["code"].as_str().unwrap_or("ERROR"),
                e["message"].as_str().unwrap_or("no message")
            )))
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(mut c) = self.calls.lock() {
            c.remove(id);
        }
    }
}

/// A frame of the Agent page (ids `a<n>`; resolves are `g<n>`).
fn is_call(frame: &str) -> bool {
    serde_json::from_str::<Value>(frame)
        .ok()
        .and_then(|v| v["id"].as_str().map(|i| i.starts_with('a')))
        .unwrap_or(false)
}

impl AgentLink for Rpc {
    fn call(&self, call: AgentCall) -> LinkFuture<'_> {
        Box::pin(self.request(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    #[tokio::test]
    async fn calls_fail_when_the_connection_drops_and_are_never_sent_later() {
        let rpc = Arc::new(Rpc::default());
        let mut rx = rpc.take_rx().expect("rx");
        let down = rpc
            .call(AgentCall::Abort {
                session_key: "k".into(),
            })
            .await;
        assert!(matches!(down, Err(AgentError::Unavailable(_))), "{down:?}");
        rpc.set_connected(true);
        let r2 = rpc.clone();
        let call = tokio::spawn(async move {
            r2.call(AgentCall::Abort {
                session_key: "k".into(),
            })
            .await
        });
        rpc.send("exec.approval.resolve", json!({"id":"x","decision":"deny"}));
        while rpc.calls.lock().map(|c| c.is_empty()).unwrap_or(true) {
            tokio::task::yield_now().await;
        }
        rpc.set_connected(false);
        let r = call.await.expect("join");
        assert!(matches!(r, Err(AgentError::Unavailable(_))), "{r:?}");
        rpc.drop_stale_calls(&mut rx);
        let left: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].contains("exec.approval.resolve"), "{left:?}");
    }

    #[tokio::test]
    async fn an_answer_reaches_its_call_and_a_gateway_error_is_an_error() {
        let rpc = Arc::new(Rpc::default());
        let mut rx = rpc.take_rx().expect("rx");
        rpc.set_connected(true);
        let r2 = rpc.clone();
        let call = tokio::spawn(async move { r2.call(AgentCall::ListSessions { limit: 1 }).await });
        let frame: Value = serde_json::from_str(&rx.recv().await.expect("frame")).expect("json");
        assert_eq!(frame["method"], "sessions.list");
        assert!(!rpc.answer(&json!({"type":"res","id":"other","ok":true})));
        let id = frame["id"].clone();
        assert!(rpc.answer(&json!({"type":"res","id":id,"ok":false,
            "error":{"code":"FORBIDDEN","message":"no"}})));
        let r = call.await.expect("join");
        assert!(
            matches!(&r, Err(AgentError::Gateway(m)) if m == "FORBIDDEN: no"),
            "{r:?}"
        );
    }
}
