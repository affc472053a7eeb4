//! The web prompt's listener: binds, loads TLS, writes the login link and the base URL into
//! the state dir, and serves each connection with hyper under timeouts and a cap.

use super::api::{self, Shared};
use super::{login, WebSettings};
use crate::inbox::Inbox;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

/// Open connections beyond this wait in the kernel's backlog.
const MAX_CONNECTIONS: usize = 2048;
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const TLS_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("web listen {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("web TLS: {0}")]
    Tls(String),
    #[error("web login link: {0}")]
    Login(#[from] login::LoginError),
    #[error("reviewer accounts: {0}")]
    Reviewers(crate::reviewers::ReviewerError),
    #[error("web sessions: {0}")]
    Sessions(String),
    #[error("web: --web-cert and --web-key go together")]
    HalfTls,
}

/// The running web prompt.
#[derive(Debug, Clone)]
pub struct WebHandle {
    pub base_url: String,
    pub addr: SocketAddr,
}

fn load_tls(cert: &Path, key: &Path) -> Result<TlsAcceptor, WebError> {
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let read =
        |p: &Path| std::fs::read(p).map_err(|e| WebError::Tls(format!("{}: {e}", p.display())));
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &read(cert)?[..])
        .collect::<Result<_, _>>()
        .map_err(|e| WebError::Tls(format!("{}: {e}", cert.display())))?;
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &read(key)?[..])
        .map_err(|e| WebError::Tls(format!("{}: {e}", key.display())))?
        .ok_or_else(|| WebError::Tls(format!("{}: no private key", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| WebError::Tls(e.to_string()))?;
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

/// Starts the web prompt (None when it is off, or when the default address is taken).
/// Everything it shares with the rest of `serve` is passed in, hence the many arguments;
/// `engine` (None in a bench without one) describes each card's run and grants; `notify`
/// is the push channels' health, named in `/readyz`.
#[allow(clippy::too_many_arguments)]
pub async fn start(
    settings: &WebSettings,
    inbox: Inbox,
    state_dir: &Path,
    audit_path: PathBuf,
    socket_path: PathBuf,
    shutdown: watch::Receiver<bool>,
    agent: Option<Arc<crate::engine::agent::AgentControl>>,
    sessions: Arc<super::auth::Sessions>,
    engine: Option<Arc<crate::engine::Engine>>,
    notify: Arc<crate::notify::Health>,
) -> Result<Option<WebHandle>, WebError> {
    let Some(addr) = settings.listen else {
        eprintln!("sanctum-guard: web prompt      off");
        return Ok(None);
    };
    let tls = match (&settings.cert, &settings.key) {
        (Some(c), Some(k)) => Some(load_tls(c, k)?),
        (None, None) => None,
        _ => return Err(WebError::HalfTls),
    };
    let listener = match TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(source) if !settings.explicit => {
            eprintln!("sanctum-guard: warning: web prompt not started: {addr}: {source} (choose another with --web-listen)");
            return Ok(None);
        }
        Err(source) => return Err(WebError::Bind { addr, source }),
    };
    let bound = listener
        .local_addr()
        .map_err(|source| WebError::Bind { addr, source })?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let base_url = match &settings.public_origin {
        Some(o) => o.trim_end_matches('/').to_owned(),
        None if bound.ip().is_unspecified() => format!("{scheme}://127.0.0.1:{}", bound.port()),
        None => format!("{scheme}://{bound}"),
    };
    let hosts = api::allowed_hosts(bound, settings.public_origin.as_deref());
    // Other guards' pages link here: a link to a name this page refuses would only 403.
    if let Some(u) = settings.public_url.as_deref() {
        if !hosts.allows(u.split_once("://").map_or(u, |(_, h)| h)) {
            eprintln!("sanctum-guard: WARNING         [web] public_url {u} is not an address this page answers to (its listen address, or public_origin): the fleet's links to it will be refused");
        }
    }
    let mut shared = Shared::new(
        inbox,
        state_dir.to_owned(),
        audit_path,
        socket_path,
        tls.is_some(),
        hosts,
        base_url.clone(),
        shutdown.clone(),
    );
    shared.agent = agent;
    shared.engine = engine;
    shared.notify = notify;
    if let Some(db) = sessions.fleet_db() {
        shared.auth = super::auth_at::AuthAt::fleet(state_dir, db);
    }
    shared.sessions = sessions;
    shared.suggest = settings.suggest;
    let first_admin = accounts(&mut shared)?;
    let shared = Arc::new(shared);
    login::write_private(&state_dir.join(login::URL_FILE), &format!("{base_url}\n"))?;
    eprintln!("sanctum-guard: web prompt      {base_url}");
    match login::new_link(&shared.auth, &base_url, &first_admin) {
        Ok(link) => eprintln!(
            "sanctum-guard: web login link  {link}  (one-time; also in {}; new one: sanctum-guard web login-link)",
            state_dir.join(login::LINK_FILE).display()
        ),
        // A fleet's database away at start: the guard serves (and refuses sign-ins) until it
        // answers; a link is then one `web login-link` away.
        Err(login::LoginError::Fleet(super::pg_auth::AuthDbError::Unavailable(e))) => {
            tracing::warn!(error = %e, "web: no start link: fleet database away (run `sanctum-guard web login-link` once it answers)")
        }
        Err(e) => return Err(e.into()),
    }
    super::events::spawn_watcher(shared.clone());
    tokio::spawn(accept_loop(listener, tls, shared, shutdown));
    Ok(Some(WebHandle {
        base_url,
        addr: bound,
    }))
}

/// Opens the reviewer accounts with the audit log, creates the default admin when the state
/// dir has no account (an existing single-reviewer guard keeps working), and publishes the
/// policy's approval counts for `inbox approve` in other processes. Returns the admin the
/// start link is for.
fn accounts(shared: &mut Shared) -> Result<String, WebError> {
    use crate::reviewers::{sqlite::ensure_admin, Role};
    let audit = shared.engine.as_ref().map(|e| e.audit().clone());
    use super::reviewer_gate::{Location, ReviewerDb};
    // A fleet's accounts and votes are its database's: one account signs in on any guard.
    let at = match shared.inbox.fleet_db() {
        Some(c) => Location::Fleet(Box::new(c)),
        None => Location::Sqlite(shared.state_dir.join(crate::inbox::DB_FILE)),
    };
    let fleet = matches!(at, Location::Fleet(_));
    let db = Arc::new(ReviewerDb::at(at, audit));
    let rules = shared
        .engine
        .as_ref()
        .map(|e| e.judge().approvals_rules())
        .unwrap_or_default();
    let me = shared.inbox.fleet_guard().unwrap_or_default();
    let setup = move |s: &mut dyn crate::reviewers::ReviewerStore| {
        if ensure_admin(s)? {
            tracing::info!("reviewers: no account yet; created admin");
        }
        s.set_required(&me, &rules)?;
        Ok(s.list()?
            .into_iter()
            .find(|r| r.role == Role::Admin)
            .map(|r| r.name))
    };
    let admin = match db.with(setup.clone()) {
        Ok(admin) => admin,
        // A fleet's database away at start is what it is at any other time: the guard serves
        // and fails closed (sign-ins and decisions answer 503 store-unavailable) until it
        // returns; the accounts and the approval counts are set up then, in the background.
        Err(crate::reviewers::ReviewerError::Unavailable(e)) if fleet => {
            tracing::warn!(error = %e, "reviewer accounts: fleet database away at start; set up once it answers");
            let db = db.clone();
            std::thread::spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_secs(2));
                match db.with(setup.clone()) {
                    Ok(_) => {
                        tracing::info!("reviewer accounts: fleet database answered; set up");
                        break;
                    }
                    Err(crate::reviewers::ReviewerError::Unavailable(_)) => continue,
                    Err(e) => {
                        tracing::error!(error = %e, "reviewer accounts: set-up refused");
                        break;
                    }
                }
            });
            None
        }
        Err(e) => return Err(WebError::Reviewers(e)),
    };
    shared.reviewers = db;
    Ok(admin.unwrap_or_else(|| crate::reviewers::DEFAULT_ADMIN.to_owned()))
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "web: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = async { let _ = shutdown.wait_for(|s| *s).await; } => return,
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                Some(acc) => {
                    if let Ok(Ok(s)) = tokio::time::timeout(TLS_TIMEOUT, acc.accept(stream)).await {
                        serve_conn(TokioIo::new(s), peer, shared).await
                    }
                }
                None => serve_conn(TokioIo::new(stream), peer, shared).await,
            }
        });
    }
}

async fn serve_conn<I>(io: I, peer: SocketAddr, shared: Arc<Shared>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(api::handle(shared, req, peer).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(64 * 1024)
        .serve_connection(io, svc);
    let _ = conn.await;
}
