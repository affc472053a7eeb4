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
        if self
            .tx
            .send(req(&id, call.method(), call.params()))
            .is_err()
        {
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

impl AgentLink for Rpc {
    fn call(&self, call: AgentCall) -> LinkFuture<'_> {
        Box::pin(self.request(call))
    }
}
