//! `sanctum-guard node` wiring: the config, the device identity (in `<state_dir>/node`), the
//! decider (the sidecar's socket with its token, or an in-process engine built as `serve`
//! builds it), the invoke handler and the gateway session, until SIGTERM/SIGINT.

use super::config::{Config, ConfigError, Overrides};
use crate::audit::{AuditError, AuditLog};
use crate::engine::{Engine, Judge, JudgeError};
use crate::inbox::{Inbox, InboxError};
use crate::node::client::{self, Gateway};
use crate::node::decider::{Decider, Remote, SocketDecider};
use crate::node::identity::{DeviceIdentity, IdentityError};
use crate::node::invoke::Handler;
use crate::openclaw::store::{Era, Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// Why `node` could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("config: {0}")]
    Config(#[from] ConfigError),
    #[error("token file: {0}")]
    TokenFile(#[from] super::secret_file::SecretFileError),
    #[error("state dir: {0}")]
    StateDir(String),
    #[error("device identity: {0}")]
    Identity(#[from] IdentityError),
    #[error("audit log: {0}")]
    Audit(#[from] AuditError),
    #[error("inbox: {0}")]
    Inbox(#[from] InboxError),
    #[error("OpenClaw approvals store: {0}")]
    Store(#[from] StoreError),
    #[error("policy: {0}")]
    Judge(#[from] JudgeError),
    #[error(
        "no decider after {}s: the approvals document at {} names no socket token, or the \
         socket {} is missing. Start `sanctum-guard serve` first (it writes both), or pass \
         --decider-token-file",
        DECIDER_WAIT.as_secs(), .0.display(), .1.display()
    )]
    NoDecider(PathBuf, PathBuf),
    #[error("signals: {0}")]
    Signal(std::io::Error),
    #[error("{0}")]
    ReadProxy(#[from] crate::readproxy::ReadProxyError),
}

/// The command line of `node`.
pub struct NodeOptions {
    pub gateway_url: String,
    pub token_file: PathBuf,
    pub decider: Option<PathBuf>,
    pub decider_token_file: Option<PathBuf>,
    pub name: String,
    pub ask_timeout: Duration,
    /// Further files and directories no run may read (`--deny-read`).
    pub deny_read: Vec<PathBuf>,
    /// Where the read proxy forwards (`--read-proxy-upstream`).
    pub read_proxy_upstream: Option<std::net::SocketAddr>,
    pub overrides: Overrides,
}

fn read_token(path: &Path) -> Result<String, NodeError> {
    Ok(super::secret_file::read_secret(path)?)
}

/// Longest the node waits at start for `serve` to write its socket token and bind its
/// socket: `serve &` then `node &` start together, and the token lands a moment later.
pub const DECIDER_WAIT: Duration = Duration::from_secs(30);

/// The socket token in OpenClaw's approvals document, once both it and the socket `path`
/// are there (waiting up to [`DECIDER_WAIT`], saying so once).
async fn wait_for_decider(store: &Store, path: &Path) -> Result<String, NodeError> {
    let until = tokio::time::Instant::now() + DECIDER_WAIT;
    let mut said = false;
    loop {
        let token = store
            .read()?
            .and_then(|d| d.socket_token().map(str::to_owned))
            .filter(|t| !t.is_empty());
        match token {
            Some(t) if path.exists() => return Ok(t),
            _ if tokio::time::Instant::now() >= until => {
                return Err(NodeError::NoDecider(store.path(), path.to_owned()))
            }
            _ => {}
        }
        if !said {
            eprintln!(
                "sanctum-guard node: waiting up to {}s for the decider (socket {}, its token in \
                 {}): is `sanctum-guard serve` running?",
                DECIDER_WAIT.as_secs(),
                path.display(),
                store.path().display()
            );
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The decider: `--decider SOCKET` (token from the file, else from OpenClaw's approvals
/// document, as the real clients find it), or the engine in this process.
async fn build_decider(o: &NodeOptions, cfg: &Config) -> Result<Decider, NodeError> {
    let store = Store::open(&cfg.openclaw_state_dir, Era::Sqlite)?;
    match &o.decider {
        Some(path) => {
            let token = match &o.decider_token_file {
                Some(f) => read_token(f)?,
                None => wait_for_decider(&store, path).await?,
            };
            let judge = Judge::load(cfg.judge_config()?, store)?;
            Ok(Decider::Remote(Box::new(Remote {
                socket: SocketDecider {
                    path: path.clone(),
                    token,
                },
                judge,
                state_modes: cfg.state_modes(),
            })))
        }
        None => Ok(Decider::Local(Arc::new(local_engine(cfg, store)?))),
    }
}

/// The in-process engine of laptop mode, built as `serve` builds its own (state dir, audit
/// log, inbox, policy over OpenClaw's document).
pub fn local_engine(cfg: &Config, store: Store) -> Result<Engine, NodeError> {
    super::config::ensure_state_dir(&cfg.state_dir)
        .map_err(|e| NodeError::StateDir(e.to_string()))?;
    let (audit, _) = AuditLog::open(&cfg.audit_path())?;
    let (inbox, _) = Inbox::open(&cfg.inbox_path(), Some(audit.clone()))?;
    let judge = Judge::load(cfg.judge_config()?, store)?;
    Ok(Engine::new(
        cfg.deadlines,
        judge,
        inbox,
        audit,
        cfg.socket.durable_answers,
    )
    .with_state_modes(cfg.state_modes()))
}

/// Runs the node until SIGTERM or SIGINT. Startup lines go to stderr.
pub async fn run(o: NodeOptions) -> Result<(), NodeError> {
    let mut cfg = Config::load(&o.overrides)?;
    // The token files are this process's secrets too: no run may read them.
    cfg.secret_files.push(o.token_file.clone());
    cfg.secret_files
        .extend(o.decider_token_file.iter().cloned());
    cfg.secret_files.extend(o.deny_read.iter().cloned());
    let token = read_token(&o.token_file)?;
    let node_dir = cfg.state_dir.join("node");
    let id = Arc::new(DeviceIdentity::load_or_create(&node_dir)?);
    let decider = Arc::new(build_decider(&o, &cfg).await?);
    eprintln!("sanctum-guard node: node id   {}", id.device_id());
    eprintln!("sanctum-guard node: identity  {}", node_dir.display());
    eprintln!("sanctum-guard node: gateway   {}", o.gateway_url);
    match &o.decider {
        Some(p) => eprintln!("sanctum-guard node: decider   {}", p.display()),
        None => eprintln!(
            "sanctum-guard node: decider   in-process (state dir {})",
            cfg.state_dir.display()
        ),
    }
    // The deployment's (config > policy > OpenClaw's agents.defaults.workspace), never the
    // request's: every plan is resolved against it.
    eprintln!(
        "sanctum-guard node: workspace {}",
        decider.judge().deployment().workspace.display()
    );

    let (tx, rx) = watch::channel(false);
    let mut term = signal(SignalKind::terminate()).map_err(NodeError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(NodeError::Signal)?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        eprintln!("sanctum-guard node: {name}: stopping");
        let _ = tx.send(true);
    });
    start_read_proxy(&o, &cfg, &decider, rx.clone()).await?;
    if let Decider::Local(engine) = decider.as_ref() {
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let e = engine.clone();
                let _ = tokio::task::spawn_blocking(move || e.judge().reload()).await;
            }
        });
    }
    let handler = Arc::new(Handler {
        node_id: id.device_id().to_owned(),
        decider,
        ask_timeout: o.ask_timeout,
        shutdown: rx.clone(),
        run_timer: None,
    });
    let gw = Gateway {
        url: o.gateway_url.clone(),
        token,
        display_name: o.name.clone(),
        node_dir: node_dir.clone(),
    };
    client::run(gw, id, handler, rx).await;
    eprintln!("sanctum-guard node: stopped");
    Ok(())
}

/// The read proxy autonomous HTTP reads reach: audited in the engine's log in laptop mode, in
/// `read-proxy-audit.jsonl` of the node's state dir when the sidecar decides (the node then
/// writes no other log).
async fn start_read_proxy(
    o: &NodeOptions,
    cfg: &Config,
    decider: &Decider,
    rx: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    let audit = match decider {
        Decider::Local(engine) => engine.audit().clone(),
        Decider::Remote(_) => {
            super::config::ensure_state_dir(&cfg.state_dir)
                .map_err(|e| NodeError::StateDir(e.to_string()))?;
            AuditLog::open(&cfg.state_dir.join("read-proxy-audit.jsonl"))?.0
        }
    };
    let opts = crate::readproxy::ReadProxyOptions {
        upstream: o.read_proxy_upstream,
        ..Default::default()
    };
    let proxy = crate::readproxy::ReadProxy::start(opts, audit, rx)?;
    eprintln!(
        "sanctum-guard node: read proxy 127.0.0.1:{}{}",
        proxy.port(),
        o.read_proxy_upstream
            .map(|u| format!(" (forwarding through {u})"))
            .unwrap_or_default()
    );
    decider.judge().attach_read_proxy(proxy);
    Ok(())
}
