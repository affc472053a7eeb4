//! The node's invoke handler in this process, over the real engine (policy, inbox, audit) and
//! the real sandbox, on temp dirs: what `sanctum-guard node` does with one
//! `node.invoke.request`, minus the WebSocket.
use sanctum_guard::app::config::{Config, Overrides};
use sanctum_guard::app::node::local_engine;
use sanctum_guard::engine::Engine;
use sanctum_guard::engine::Judge;
use sanctum_guard::node::decider::{Decider, Remote, SocketDecider};
use sanctum_guard::node::invoke::{Handler, Send};
use sanctum_guard::node::protocol::InvokeRequest;
use sanctum_guard::openclaw::store::{Era, Store};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// One in-process node: temp dirs, the real engine, the invoke handler over it.
pub struct InProc {
    pub tmp: tempfile::TempDir,
    pub workspace: PathBuf,
    pub engine: Arc<Engine>,
    pub handler: Arc<Handler>,
    _shutdown: watch::Sender<bool>,
}

/// Frames the handler sent: `(method, params)`.
pub type Sent = Arc<Mutex<Vec<(String, Value)>>>;

impl InProc {
    /// Local mode: the handler decides with its own engine.
    pub fn new() -> InProc {
        Self::with(None)
    }

    /// Local mode on an existing `workspace`; a gated request is denied after `ask_timeout`
    /// (nobody answers here).
    pub fn at(workspace: PathBuf, ask_timeout: Duration) -> InProc {
        let mut n = Self::build(None, Some(workspace));
        let h = Arc::get_mut(&mut n.handler).expect("handler not shared yet");
        h.ask_timeout = ask_timeout;
        n
    }

    /// Deployment mode: the decider is whatever listens on `socket` (token `t`).
    pub fn remote(socket: PathBuf) -> InProc {
        Self::with(Some((socket, "t".into())))
    }

    /// Deployment mode against a real `serve`: its socket and its token.
    pub fn remote_with_token(socket: PathBuf, token: &str) -> InProc {
        Self::with(Some((socket, token.into())))
    }

    /// Builds the engine on temp dirs and a handler with the local or remote decider.
    fn with(socket: Option<(PathBuf, String)>) -> InProc {
        Self::build(socket, None)
    }

    fn build(socket: Option<(PathBuf, String)>, workspace: Option<PathBuf>) -> InProc {
        let tmp = tempfile::Builder::new()
            .prefix("sg-node-")
            .tempdir()
            .expect("tmp");
        let workspace = workspace.unwrap_or_else(|| {
            let ws = tmp.path().join("ws");
            std::fs::create_dir_all(ws.join("sub")).expect("ws");
            ws
        });
        let cfg = Config::load(&Overrides {
            state_dir: Some(tmp.path().join("guard")),
            openclaw_state: Some(tmp.path().join("oc")),
            workspace: Some(workspace.clone()),
            ..Default::default()
        })
        .expect("config");
        let store = Store::open(tmp.path().join("oc"), Era::Sqlite).expect("store");
        let engine = Arc::new(local_engine(&cfg, store).expect("engine"));
        let decider = match socket {
            None => Decider::Local(engine.clone()),
            Some((path, token)) => {
                let store = Store::open(tmp.path().join("oc"), Era::Sqlite).expect("store");
                Decider::Remote(Box::new(Remote {
                    socket: SocketDecider { path, token },
                    judge: Judge::load(cfg.judge_config().expect("judge config"), store)
                        .expect("judge"),
                    state_modes: cfg.state_modes(),
                }))
            }
        };
        let (tx, rx) = watch::channel(false);
        let handler = Arc::new(Handler {
            node_id: "node-under-test".into(),
            decider: Arc::new(decider),
            ask_timeout: Duration::from_secs(600),
            shutdown: rx,
            run_timer: None,
        });
        InProc {
            tmp,
            workspace,
            engine,
            handler,
            _shutdown: tx,
        }
    }

    /// One invoke; returns every frame sent for it (events, then the result).
    pub async fn invoke(
        &self,
        command: &str,
        params: &Value,
        timeout_ms: u64,
    ) -> Vec<(String, Value)> {
        let sent: Sent = Arc::new(Mutex::new(Vec::new()));
        let s = sent.clone();
        let send: Send = Box::new(move |m: &str, p: Value| {
            s.lock().expect("lock").push((m.to_owned(), p));
        });
        let inv = InvokeRequest {
            id: uuid::Uuid::new_v4().to_string(),
            node_id: Some("node-under-test".into()),
            command: command.into(),
            params_json: Some(params.to_string()),
            timeout_ms: Some(timeout_ms),
        };
        self.handler.handle(inv, &send).await;
        let v = sent.lock().expect("lock").clone();
        v
    }
}

/// The `node.invoke.result` params among the frames.
pub fn result_of(frames: &[(String, Value)]) -> Value {
    frames
        .iter()
        .find(|(m, _)| m == "node.invoke.result")
        .map(|(_, p)| p.clone())
        .expect("a node.invoke.result")
}

/// The decoded `payloadJSON` of a successful result.
pub fn payload_of(result: &Value) -> Value {
    serde_json::from_str(result["payloadJSON"].as_str().expect("payloadJSON")).expect("json")
}

/// `(event name, decoded payload)` of the `node.event` frames.
pub fn events_of(frames: &[(String, Value)]) -> Vec<(String, Value)> {
    frames
        .iter()
        .filter(|(m, _)| m == "node.event")
        .map(|(_, p)| {
            (
                p["event"].as_str().unwrap_or_default().to_owned(),
                serde_json::from_str(p["payloadJSON"].as_str().unwrap_or("null")).expect("json"),
            )
        })
        .collect()
}
