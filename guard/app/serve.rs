//! `sanctum-guard serve`: wires the config, the audit log, the inbox, OpenClaw's approvals
//! document (token and socket path), the policy and the socket server, prints where each file
//! is (never the token), and stops cleanly on SIGTERM/SIGINT.

use super::config::{Config, ConfigError, Overrides, StoreSettings};
use crate::audit::event::{AuditEvent, Shutdown, Startup};
use crate::audit::{AuditError, AuditLog};
use crate::engine::{Engine, Judge, JudgeError};
use crate::inbox::{Inbox, InboxError};
use crate::openclaw::socket::{ensure_socket, SocketConfig, SocketConfigError};
use crate::openclaw::store::{Era, Store, StoreError};
use crate::socket::door::SocketDoor;
use crate::socket::listener::ListenError;
use crate::socket::server::{Server, ServerOptions};
use std::path::Path;
use std::sync::Arc;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// Why `serve` could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("config: {0}")]
    Config(#[from] ConfigError),
    #[error("state dir: {0}")]
    StateDir(ListenError),
    #[error("socket: {0}")]
    Listen(#[from] ListenError),
    #[error("audit log: {0}")]
    Audit(#[from] AuditError),
    #[error("inbox: {0}")]
    Inbox(#[from] InboxError),
    #[error("{0}")]
    Grants(#[from] crate::grants::GrantError),
    #[error("OpenClaw approvals store: {0}")]
    Store(#[from] StoreError),
    #[error("OpenClaw socket settings: {0}")]
    Socket(#[from] SocketConfigError),
    #[error("policy: {0}")]
    Judge(#[from] JudgeError),
    #[error("{0}")]
    ReadProxy(#[from] crate::readproxy::ReadProxyError),
    #[error("web prompt: {0}")]
    Web(#[from] crate::web::WebError),
    #[error("gateway approver: {0}")]
    Gateway(String),
    #[error("the gateway can act without the guard (start with --allow-unsafe-posture to serve anyway):\n{0}")]
    Posture(String),
    #[error("signals: {0}")]
    Signal(std::io::Error),
    #[error("socket token file: {0}")]
    TokenFile(super::secret_file::SecretFileError),
    #[error("agent filesystem: {0}")]
    AgentFilesystem(#[from] super::fs_snapshot::FsSnapshotError),
    #[error("{0}")]
    Notify(#[from] super::notify::NotifyStartError),
    #[error("workspace {path}: {message}")]
    Workspace {
        path: std::path::PathBuf,
        message: String,
    },
}

/// What `serve` opens before anything listens: the state it keeps and OpenClaw's settings.
struct Sinks {
    /// Entries of the agent's PATH the agent filesystem snapshot does not list.
    agent_path_gaps: Vec<String>,
    audit: AuditLog,
    /// Records already in the audit log, for the startup lines.
    audit_records: u64,
    inbox: Inbox,
    /// Pending entries that expired while the guard was down.
    expired: usize,
    /// OpenClaw's socket path and token.
    sock: SocketConfig,
    judge: Judge,
}

/// Opens the state dir, the audit log, the inbox, OpenClaw's approvals store and socket
/// settings, and the policy, in that order (the log first: the inbox records into it).
fn open_sinks(cfg: &Config) -> Result<Sinks, ServeError> {
    super::config::ensure_state_dir(&cfg.state_dir).map_err(ServeError::StateDir)?;
    let audit_opts = crate::audit::AuditOptions {
        key_path: None,
        rotate_bytes: cfg.audit.rotate_bytes,
    };
    let (audit, report) = AuditLog::open_with(&cfg.audit_path(), &audit_opts)?;
    let (inbox, expired) = match &cfg.store {
        StoreSettings::Embedded => Inbox::open(&cfg.inbox_path(), Some(audit.clone()))?,
        // A fleet's rows outlive a guard's restart: none expire at start.
        StoreSettings::Fleet { url, guard_id } => {
            let db = crate::inbox::pg::parse_url(url)?;
            (Inbox::open_fleet(db, guard_id, Some(audit.clone()))?, 0)
        }
    };
    let store = Store::open(&cfg.openclaw_state_dir, Era::Sqlite)?
        .shared_with_group(cfg.socket.group_connect);
    let token = match &cfg.socket.token_file {
        Some(f) => Some(super::secret_file::read_secret(f).map_err(ServeError::TokenFile)?),
        None => None,
    };
    let sock = ensure_socket(&store, cfg.home.as_deref(), token)?;
    let mut judge_cfg = cfg.judge_config()?;
    let mut agent_path_gaps = Vec::new();
    if let Some(f) = &cfg.agent_filesystem {
        let host = crate::host_facts::HostFacts::shared();
        let agent = super::fs_snapshot::load(f, &judge_cfg.workspace, host)?;
        // A PATH entry the snapshot did not list holds no program the guard can vouch for.
        for d in judge_cfg.agent_path.split(':') {
            let listed = crate::policy::facts::Facts::list_dir(&agent, Path::new(d)).is_some();
            if !listed && !agent_path_gaps.iter().any(|g| g == d) {
                agent_path_gaps.push(d.to_owned());
            }
        }
        judge_cfg.elsewhere = Some(std::sync::Arc::new(agent));
    }
    let judge = Judge::load(judge_cfg, store)?;
    Ok(Sinks {
        agent_path_gaps,
        audit,
        audit_records: report.records,
        inbox,
        expired,
        sock,
        judge,
    })
}

/// Where each file is (never the token), one line each.
fn print_startup(cfg: &Config, s: &Sinks, workspace: &Path, limits: &impl std::fmt::Display) {
    eprintln!("sanctum-guard: config          {}", cfg.origin);
    eprintln!("sanctum-guard: state dir       {}", cfg.state_dir.display());
    match &cfg.store {
        StoreSettings::Embedded => eprintln!(
            "sanctum-guard: inbox           {} ({} pending expired at start)",
            cfg.inbox_path().display(),
            s.expired
        ),
        StoreSettings::Fleet { guard_id, url } => {
            // Said at start: plain text is a choice the operator should see made.
            let channel = match crate::inbox::pg::parse_url(url).map(|d| d.encrypted()) {
                Ok(true) => "TLS, server verified",
                _ => "plain text: sslmode=disable",
            };
            eprintln!(
                "sanctum-guard: inbox           fleet database on PostgreSQL ({channel}), as guard {guard_id}"
            )
        }
    }
    eprintln!(
        "sanctum-guard: audit log       {} ({} records)",
        cfg.audit_path().display(),
        s.audit_records
    );
    eprintln!(
        "sanctum-guard: openclaw store  {} ({})",
        s.judge.store_path().display(),
        s.judge.era_name()
    );
    eprintln!("sanctum-guard: policy          {}", s.judge.policy_origin());
    eprintln!("sanctum-guard: workspace       {}", workspace.display());
    match s.judge.run_as() {
        // Commands judged for the agent's container run there, not here.
        _ if cfg.agent_filesystem.is_some() => {}
        Some(r) => eprintln!(
            "sanctum-guard: runs as         uid {} gid {} (not the guard's: runs cannot change its files)",
            r.uid, r.gid
        ),
        None => eprintln!(
            "sanctum-guard: runs as         the guard's own uid (approved runs can chmod its files; see doctor)"
        ),
    }
    if let Some(f) = &cfg.agent_filesystem {
        eprintln!(
            "sanctum-guard: agent fs        {} (commands are judged for the agent's container; socket exec frames are refused)",
            f.display()
        );
    }
    for d in &s.agent_path_gaps {
        eprintln!("sanctum-guard: WARNING         the agent's PATH entry {d:?} is not in the agent fs snapshot: no program there runs by itself");
    }
    eprintln!("sanctum-guard: socket          {}", s.sock.path.display());
    eprintln!(
        "sanctum-guard: allowed uids    {:?}",
        cfg.socket.allowed_uids
    );
    eprintln!("sanctum-guard: limits          {limits}");
    if let Some(w) = super::doctor::root_warning(nix::unistd::getuid().as_raw()) {
        eprintln!("sanctum-guard: WARNING         {w}");
    }
    eprintln!(
        "sanctum-guard: uncontained     socket `request` frames: the guard answers, OpenClaw runs the command itself, outside the guard's sandbox"
    );
    eprintln!(
        "sanctum-guard: next step       on Linux OpenClaw sends exec to a node: start \
         `sanctum-guard node --gateway-url ws://127.0.0.1:18789 --token-file FILE --decider {}` \
         and approve it (README.md, \"Quick start\")",
        s.sock.path.display()
    );
}

/// Runs the server until SIGTERM or SIGINT. Startup lines go to stderr.
pub async fn serve(overrides: &Overrides) -> Result<(), ServeError> {
    let cfg = Config::load(overrides)?;
    // Survive limits a confined child may lower.
    let limits = crate::socket::limits::prepare();
    let sinks = open_sinks(&cfg)?;
    let workspace = ensure_workspace(&cfg, &sinks.judge.deployment().workspace)?;
    print_startup(&cfg, &sinks, &workspace, &limits);
    let Sinks {
        audit,
        inbox,
        expired,
        sock,
        judge,
        ..
    } = sinks;

    audit
        .record(AuditEvent::Startup(Startup {
            pid: std::process::id(),
            socket: sock.path.clone(),
            state_dir: cfg.state_dir.clone(),
            openclaw_store: judge.store_path(),
            policy: judge.policy_origin().to_owned(),
            expired_at_start: expired,
            version: env!("CARGO_PKG_VERSION"),
        }))
        .await?;

    let socket_path = sock.path.clone();
    let grants: Arc<dyn crate::grants::GrantBackend> = match &cfg.store {
        StoreSettings::Embedded => Arc::new(crate::grants::GrantStore::open(&cfg.inbox_path())?),
        // A fleet's grants live beside its inbox: made on any guard's page, spent by the
        // guard whose agent they cover.
        StoreSettings::Fleet { url, guard_id } => Arc::new(crate::grants::PgGrants::open(
            crate::inbox::pg::parse_url(url)?,
            guard_id,
        )?),
    };
    let engine = Arc::new(
        Engine::new(
            cfg.deadlines,
            judge,
            inbox,
            audit.clone(),
            cfg.socket.durable_answers,
        )
        .with_metrics(crate::web::metrics::global())
        .with_state_modes(cfg.state_modes())
        .with_grants(grants)
        .with_posture(Arc::new(crate::engine::posture::PostureGate::new(
            cfg.gateway.url.is_some(),
            !cfg.gateway.allow_unsafe_posture,
        ))),
    );
    let server = bind_socket(&cfg, sock, engine.clone())?;
    let (tx, rx) = watch::channel(false);
    start_read_proxy(&engine, audit.clone(), rx.clone())?;
    let agent = start_approver(&cfg, engine.clone(), rx.clone())?;
    if agent.is_some() {
        first_posture(engine.posture()).await?;
    }
    let agent =
        agent.map(|rpc| Arc::new(crate::engine::agent::AgentControl::new(rpc, engine.clone())));
    // One set of web sessions: the front door accepts a signed-in browser's cookie. A
    // fleet's live in its database, so they hold on every guard and across restarts.
    let sessions = Arc::new(match engine.inbox().fleet_db() {
        Some(db) => {
            let bad = |e: String| ServeError::Web(crate::web::WebError::Sessions(e));
            let pg = crate::web::pg_auth::PgAuth::open(db).map_err(|e| bad(e.to_string()))?;
            crate::web::auth::Sessions::fleet(Arc::new(pg)).map_err(|e| bad(e.to_string()))?
        }
        None => crate::web::auth::Sessions::default(),
    });
    let notify = Arc::new(crate::notify::Health::in_state_dir(&cfg.state_dir));
    let web = crate::web::start(
        &cfg.web,
        engine.inbox().clone(),
        &cfg.state_dir,
        cfg.audit_path(),
        socket_path,
        rx.clone(),
        agent,
        sessions.clone(),
        Some(engine.clone()),
        notify.clone(),
    )
    .await?;
    // Off the decision path: the notifier only listens to the inbox's events.
    super::notify::start(
        &cfg.notify,
        engine.inbox(),
        web.as_ref().map(|w| w.base_url.as_str()),
        &notify,
    )?;
    // The door admits the web prompt's pages: its origin is the prompt's base URL as bound
    // (a `:0` port resolved, a public origin if one is set), known only once it listens.
    let web_origin = web.map(|w| w.base_url);
    // The fleet's pages link each decision to the deciding guard's record: say where ours is
    // (no web prompt: nowhere).
    if let StoreSettings::Fleet { url, guard_id } = &cfg.store {
        let public = web_origin.as_ref().and(cfg.web.public_url.clone());
        crate::inbox::pg_guards::publish_in_background(
            crate::inbox::pg::parse_url(url)?,
            guard_id.clone(),
            public,
        );
    }
    let door_stopped = start_front(
        &cfg,
        &engine,
        audit.clone(),
        sessions,
        web_origin,
        rx.clone(),
    )
    .await?;
    // OpenClaw may change its document while we run (a new allowlist entry, a new policy).
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            let e = engine.clone();
            let _ = tokio::task::spawn_blocking(move || e.judge().reload()).await;
        }
    });

    let mut term = signal(SignalKind::terminate()).map_err(ServeError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(ServeError::Signal)?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        eprintln!("sanctum-guard: {name}: stopping");
        let _ = tx.send(true);
    });
    eprintln!("sanctum-guard: serving");
    server.run(rx).await;
    if let Some(stopped) = door_stopped {
        // The door sends each client its close (1001) before its runtime goes.
        let _ = tokio::time::timeout(FRONT_STOP, stopped).await;
    }
    audit
        .record(AuditEvent::Shutdown(Shutdown {
            pid: std::process::id(),
        }))
        .await?;
    eprintln!("sanctum-guard: stopped");
    Ok(())
}

/// The approvals socket: its door over `engine`, bound with the config's connection limits.
fn bind_socket(
    cfg: &Config,
    sock: SocketConfig,
    engine: Arc<Engine>,
) -> Result<Server, ServeError> {
    let mut opts = ServerOptions::new(sock.path.clone());
    opts.read_timeout = cfg.socket.read_timeout;
    opts.max_connections = cfg.socket.max_connections;
    opts.max_connections_per_uid = cfg.socket.max_connections_per_uid;
    opts.max_buffered_bytes = cfg.socket.max_buffered_bytes;
    opts.group_connect = cfg.socket.group_connect;
    let door = Arc::new(SocketDoor::new(
        sock.token,
        &cfg.socket,
        engine,
        &cfg.state_dir,
    )?);
    Ok(Server::bind(opts, door)?)
}

/// The deployment's workspace must be a directory. OpenClaw's own default
/// (`<openclaw_state_dir>/workspace`) is created (0700) when missing, as OpenClaw would; a
/// workspace a config or policy names must already exist.
fn ensure_workspace(cfg: &Config, ws: &std::path::Path) -> Result<std::path::PathBuf, ServeError> {
    use std::os::unix::fs::DirBuilderExt;
    let err = |message: String| ServeError::Workspace {
        path: ws.to_path_buf(),
        message,
    };
    if !ws.exists() && ws == cfg.openclaw_state_dir.join("workspace") {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(ws)
            .map_err(|e| err(e.to_string()))?;
    }
    let real = ws.canonicalize().map_err(|e| err(e.to_string()))?;
    if !real.is_dir() {
        return Err(err("not a directory".into()));
    }
    Ok(real)
}

/// How long `serve` waits at start for the first posture check before serving with the gate
/// shut (every decision a deny until the approver has checked). Nothing listening at the
/// gateway url ends the wait at once (a deployment may start the guard first).
const POSTURE_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Waits for the approver's first posture check: findings stop `serve` (unless overridden);
/// a gateway not reached in time leaves the gate shut, said on stderr.
async fn first_posture(gate: &crate::engine::posture::PostureGate) -> Result<(), ServeError> {
    use crate::engine::posture::PostureState;
    let start = std::time::Instant::now();
    loop {
        match gate.state() {
            PostureState::Unsafe { findings } if gate.enforced() => {
                let list = findings
                    .iter()
                    .map(|f| format!("  {}: {}", f.code, f.detail))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(ServeError::Posture(list));
            }
            PostureState::Unchecked { why } => {
                if start.elapsed() >= POSTURE_WAIT || gate.unreachable() {
                    eprintln!("sanctum-guard: WARNING         gateway posture not checked yet ({why}): every decision is a deny until it is");
                    return Ok(());
                }
            }
            _ => return Ok(()),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The gateway approver, when the config names a gateway: its own device key in
/// `<state_dir>/gateway/`, the token read once at start (an unreadable or empty file stops
/// `serve`: a guard that silently is no approver would leave the gateway without one).
/// Returns the connection the web prompt's Agent page calls through.
fn start_approver(
    cfg: &Config,
    engine: Arc<Engine>,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<Arc<crate::gateway::rpc::Rpc>>, ServeError> {
    let (Some(url), Some(token_file)) = (&cfg.gateway.url, &cfg.gateway.token_file) else {
        return Ok(None);
    };
    let token = super::secret_file::read_secret(token_file)
        .map_err(|e| ServeError::Gateway(e.to_string()))?;
    let identity =
        crate::openclaw::identity::DeviceIdentity::load_or_create(&cfg.state_dir.join("gateway"))
            .map_err(|e| ServeError::Gateway(e.to_string()))?;
    eprintln!(
        "sanctum-guard: gateway         {url} (approver device {})",
        identity.device_id()
    );
    let rpc = Arc::new(crate::gateway::rpc::Rpc::default());
    let approver = Arc::new(crate::gateway::approver::Approver {
        url: url.clone(),
        token,
        ask_timeout_ms: cfg.gateway.ask_timeout_ms,
        margin_ms: cfg.deadlines.margin_ms,
        identity: Arc::new(identity),
        rpc: rpc.clone(),
        status_path: cfg.state_dir.join(crate::gateway::approver::STATUS_FILE),
        posture: Arc::new(crate::gateway::posture_check::PostureCheck {
            gate: engine.posture().clone(),
            expect: crate::openclaw::posture::Expect {
                gateway_host: url_host(url),
            },
            path: cfg
                .state_dir
                .join(crate::gateway::posture_check::POSTURE_FILE),
        }),
        engine,
    });
    tokio::spawn(crate::gateway::approver::run(approver, shutdown));
    Ok(Some(rpc))
}

/// Longest a stopping guard waits for its front door to finish (the door itself gives its
/// clients 2 s to get their close frame).
const FRONT_STOP: std::time::Duration = std::time::Duration::from_secs(3);

/// The front door, when the config gives it an address: it forwards to the gateway url and
/// judges every frame with the policy's `[gateway]` tables. What says the door has stopped.
async fn start_front(
    cfg: &Config,
    engine: &Engine,
    audit: AuditLog,
    sessions: Arc<crate::web::auth::Sessions>,
    web_origin: Option<String>,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<tokio::sync::oneshot::Receiver<()>>, ServeError> {
    let Some(listen) = cfg.front.listen else {
        return Ok(None);
    };
    let Some(upstream) = cfg.gateway.url.clone() else {
        return Err(ServeError::Config(ConfigError::FrontWithoutGateway));
    };
    let mut origins = cfg.front.allowed_origins.clone();
    origins.extend(web_origin);
    let settings = crate::gateway::front::FrontSettings {
        upstream,
        max_frame_bytes: cfg.front.max_frame_bytes,
        max_connections: cfg.front.max_connections,
        rate_per_sec: cfg.front.rate_per_sec,
        rate_burst: cfg.front.rate_burst,
        allowed_origins: origins,
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| ServeError::Gateway(format!("front door {listen}: {e}")))?;
    // The bound address: with port 0 the kernel chose it, and this line says which.
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Gateway(format!("front door {listen}: {e}")))?;
    eprintln!(
        "sanctum-guard: front door      ws://{bound}/door/<link> -> {}",
        settings.upstream
    );
    let front = std::sync::Arc::new(
        crate::gateway::front::Front::new(
            settings,
            cfg.state_dir.clone(),
            engine.judge().gateway_tables().clone(),
            audit,
        )
        .with_sessions(crate::gateway::browser::BrowserSessions::new(
            Arc::new({
                let sessions = sessions.clone();
                move |id: &str| sessions.get(id).map(|s| s.identity)
            }),
            Arc::new({
                let sessions = sessions.clone();
                move |id: &str| sessions.alive(id)
            }),
            sessions.ended(),
        )),
    );
    // The door is a data path whose load grows with its clients: it runs on a runtime of
    // its own with two workers (as nginx runs two), so a burst of frames neither waits for
    // nor delays the decisions on the main loop.
    let listener = listener
        .into_std()
        .map_err(|e| ServeError::Gateway(format!("front door {listen}: {e}")))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("front-door")
        .enable_all()
        .build()
        .map_err(|e| ServeError::Gateway(format!("front door runtime: {e}")))?;
    let (stopped, door_stopped) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("front-door".into())
        .spawn(move || {
            rt.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => crate::gateway::front::serve(front, l, shutdown).await,
                    Err(e) => tracing::error!(error = %e, "front door listener"),
                }
            });
            let _ = stopped.send(());
        })
        .map_err(|e| ServeError::Gateway(format!("front door thread: {e}")))?;
    Ok(Some(door_stopped))
}

/// The host of the gateway's url (the brackets of an IPv6 literal removed); None without a
/// scheme or a host.
fn url_host(url: &str) -> Option<String> {
    let uri: tokio_tungstenite::tungstenite::http::Uri = url.parse().ok()?;
    uri.scheme()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| host.to_owned())
}

/// The read proxy the runs this guard spawns reach (none when the judged commands run in
/// another container: the node there starts its own).
fn start_read_proxy(
    engine: &Engine,
    audit: AuditLog,
    rx: watch::Receiver<bool>,
) -> Result<(), ServeError> {
    if engine.judge().runs_elsewhere() {
        return Ok(());
    }
    let proxy = crate::readproxy::ReadProxy::start(Default::default(), audit, rx)?;
    eprintln!("sanctum-guard: read proxy      127.0.0.1:{}", proxy.port());
    engine.judge().attach_read_proxy(proxy);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::url_host;

    #[test]
    fn the_gateway_host_is_taken_from_its_url() {
        let cases = [
            ("ws://127.0.0.1:18789", Some("127.0.0.1")),
            ("ws://172.30.75.4:18789/", Some("172.30.75.4")),
            ("wss://gw.internal/path?x=1", Some("gw.internal")),
            ("ws://[::1]:18789", Some("::1")),
            ("ws://user:pw@10.0.0.2:1/", Some("10.0.0.2")),
            ("ws://:18789", None),
            ("127.0.0.1:18789", None),
        ];
        for (url, want) in cases {
            assert_eq!(url_host(url).as_deref(), want, "{url}");
        }
    }
}
