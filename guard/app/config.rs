//! Deployment configuration of `serve`: one TOML file plus `SANCTUM_*` environment variables
//! over an embedded default that works on a laptop. Precedence: command-line flag >
//! environment > file > embedded default. This module owns where the guard's files live.

use crate::engine::{Deadlines, JudgeConfig, JudgeError};
use crate::policy::decide::DecideContext;
use crate::policy::file::{Policy, PolicyError};
use crate::socket::SocketSettings;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The embedded default; every key is optional and documented here.
pub const DEFAULT_CONFIG: &str = include_str!("default-config.toml");

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: {source}")]
    Parse {
        origin: String,
        source: Box<toml::de::Error>,
    },
    #[error("environment variable {name}: {message}")]
    Env { name: String, message: String },
    #[error("web.{key}: {message}")]
    Suggest { key: &'static str, message: String },
    #[error("front listen address {0:?}: expected IP:PORT or \"off\"")]
    FrontListen(String),
    #[error("the front door needs a gateway url to forward to")]
    FrontWithoutGateway,
    #[error("gateway url {0:?}: expected ws://HOST:PORT or wss://HOST:PORT")]
    GatewayUrl(String),
    #[error("a gateway url needs a token file (--gateway-token-file, SANCTUM_GATEWAY_TOKEN_FILE, [gateway] token_file)")]
    GatewayToken,
    #[error("web listen address {0:?}: expected IP:PORT or \"off\"")]
    WebListen(String),
    #[error("[web] public_url {0}")]
    PublicUrl(#[from] crate::inbox::pg_guards::PublicUrlError),
    #[error("no home directory: set HOME, or {0}")]
    NoHome(&'static str),
    #[error("the embedded default config has no {0} (a build mistake)")]
    MissingDefault(&'static str),
    #[error("{0}")]
    RunAs(String),
    #[error(transparent)]
    Notify(#[from] crate::notify::NotifyConfigError),
    #[error("store.{0}")]
    Store(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    state_dir: Option<PathBuf>,
    openclaw_state_dir: Option<PathBuf>,
    policy: Option<PathBuf>,
    workspace: Option<PathBuf>,
    agent_filesystem: Option<PathBuf>,
    run_as: Option<String>,
    #[serde(default)]
    socket: SocketSection,
    #[serde(default)]
    deadlines: DeadlineSection,
    #[serde(default)]
    audit: AuditSection,
    #[serde(default)]
    web: WebSection,
    #[serde(default)]
    gateway: gateway::GatewaySection,
    #[serde(default)]
    front: front::FrontSection,
    #[serde(default)]
    notify: crate::notify::NotifySection,
    #[serde(default)]
    store: store::StoreSection,
}

/// `[audit]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditSection {
    rotate_bytes: Option<u64>,
}

/// Audit log settings after precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditSettings {
    /// Rotate at this size (bytes); 0 = never.
    pub rotate_bytes: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebSection {
    listen: Option<String>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    public_origin: Option<String>,
    /// Where other guards of a fleet link to this page (published in the fleet's database).
    public_url: Option<String>,
    /// History suggests a bounded grant for a shape approved this many times (0: never).
    suggest_after: Option<usize>,
    /// ... within this many days.
    suggest_within_days: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SocketSection {
    allowed_uids: Option<Vec<u32>>,
    rate_per_sec: Option<u32>,
    rate_burst: Option<u32>,
    ttl_ms: Option<u64>,
    read_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_uid: Option<usize>,
    max_buffered_bytes: Option<usize>,
    durable_answers: Option<bool>,
    group_connect: Option<bool>,
    token_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadlineSection {
    request_ms: Option<u64>,
    exec_ms: Option<u64>,
    margin_ms: Option<u64>,
}

/// The effective configuration of `serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The guard's own files: inbox.db, audit.jsonl.
    pub state_dir: PathBuf,
    /// OpenClaw's state dir (approvals document, default socket path).
    pub openclaw_state_dir: PathBuf,
    /// A policy file; `None` = the embedded policy.
    pub policy: Option<PathBuf>,
    /// The deployment's writable workspace, when the config names one (see [`Config::workspace`]).
    pub workspace: Option<PathBuf>,
    /// The snapshot of the agent container's filesystem (`sanctum-guard fs-snapshot`), when
    /// the judged commands run there rather than beside the guard (compose).
    pub agent_filesystem: Option<PathBuf>,
    /// The uid and gid every run takes (a guard running as root); None: the guard's own.
    pub run_as: Option<crate::sandbox::RunAs>,
    /// `$HOME` of the guard's environment (expands `~` in OpenClaw's stored paths).
    pub home: Option<PathBuf>,
    pub socket: SocketSettings,
    pub deadlines: Deadlines,
    pub audit: AuditSettings,
    pub web: crate::web::WebSettings,
    pub gateway: GatewaySettings,
    pub front: FrontConfig,
    /// `[notify]`: push channels (none by default).
    pub notify: crate::notify::NotifySettings,
    /// `[store]`: the embedded inbox database or a fleet's PostgreSQL.
    pub store: StoreSettings,
    /// Which file was read, for the startup lines.
    pub origin: String,
    /// The config file read, if any.
    pub config_file: Option<PathBuf>,
    /// Further files of this process no run may read (the node's token files).
    pub secret_files: Vec<PathBuf>,
}

/// Command-line overrides (`serve` flags).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub openclaw_state: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    /// `--web-listen ADDR|off`, `--web-cert`, `--web-key`.
    pub web_listen: Option<String>,
    pub web_cert: Option<PathBuf>,
    pub web_key: Option<PathBuf>,
    /// `--gateway-url`, `--gateway-token-file`: the approver connection.
    pub gateway_url: Option<String>,
    pub gateway_token_file: Option<PathBuf>,
    /// `--front-listen ADDR|off`: the front door.
    pub front_listen: Option<String>,
    /// `--allow-unsafe-posture`: report the gateway's posture findings, do not deny on them.
    pub allow_unsafe_posture: bool,
}

impl Config {
    /// Loads with the real process environment: the one place the guard reads it.
    #[allow(clippy::disallowed_methods)]
    pub fn load(o: &Overrides) -> Result<Config, ConfigError> {
        Self::load_with(o, &|k| std::env::var(k).ok())
    }

    /// Loads with `env` as the environment (tests pass a map).
    pub fn load_with(
        o: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let default = parse(DEFAULT_CONFIG, "embedded default")?;
        let (file, origin) = layers::file_layer(o, env)?;
        let env = layers::Env(env);
        Ok(Config {
            state_dir: layers::state_dir(o, &env, &file)?,
            openclaw_state_dir: layers::openclaw_state_dir(o, &env, &file)?,
            policy: o
                .policy
                .clone()
                .or_else(|| env.path("SANCTUM_POLICY"))
                .or(file.policy.clone()),
            workspace: layers::workspace(o, &env, &file)?,
            agent_filesystem: layers::absolute("agent_filesystem", file.agent_filesystem.clone())?,
            run_as: env
                .text("SANCTUM_RUN_AS")
                .or(file.run_as.clone())
                .map(|t| crate::sandbox::RunAs::parse(&t))
                .transpose()
                .map_err(|e| ConfigError::RunAs(e.to_string()))?,
            home: env.path("HOME").filter(|h| h.is_absolute()),
            socket: layers::socket_settings(&env, &file.socket, &default.socket)?,
            deadlines: layers::deadlines(&env, &file.deadlines, &default.deadlines)?,
            audit: layers::audit_settings(&file.audit, &default.audit)?,
            web: layers::web_settings(o, &env, &file.web, &default.web)?,
            gateway: gateway::settings(o, &env, &file.gateway)?,
            front: front::settings(o, &env, &file.front)?,
            notify: file.notify.settings()?,
            store: store::settings(&env, &file.store)?,
            origin,
            config_file: layers::config_file(o, env.0),
            secret_files: Vec::new(),
        })
    }

    /// Every file this process was given or keeps that no run may read, from this
    /// configuration: the state dir (inbox, audit log, key and head, node identity, web
    /// sign-in files), the config and policy files, the web TLS files, the notification
    /// channels' secrets, and `secret_files`.
    /// Relative paths are made absolute against the current directory, as the process
    /// itself opens them.
    pub fn own_files(&self) -> Vec<PathBuf> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let mut out = vec![self.state_dir.clone()];
        out.extend(self.config_file.iter().cloned());
        out.extend(self.policy.iter().cloned());
        out.extend(self.web.cert.iter().cloned());
        out.extend(self.web.key.iter().cloned());
        out.extend(self.secret_files.iter().cloned());
        let notify = self.notify.channels.iter();
        out.extend(notify.filter_map(|c| c.secret_file.clone()));
        out.into_iter()
            .map(|p| if p.is_absolute() { p } else { cwd.join(p) })
            .map(|p| crate::policy::paths::lexical_clean(&p))
            .collect()
    }

    pub fn inbox_path(&self) -> PathBuf {
        self.state_dir.join("inbox.db")
    }

    pub fn audit_path(&self) -> PathBuf {
        self.state_dir.join("audit.jsonl")
    }

    /// The guard's own state as the engine keeps it after approved runs and `doctor` checks
    /// it: the state dir, with the agent's filesystem snapshot readable by others (as
    /// `fs-snapshot` writes it) when it lies there.
    pub fn state_modes(&self) -> crate::engine::state_modes::StateModes {
        crate::engine::state_modes::StateModes::new(
            self.state_dir.clone(),
            self.agent_filesystem.iter().cloned().collect(),
        )
    }

    /// The judge's share: the policy (file or embedded, completed for this host), the state
    /// dirs and the workspace.
    pub fn judge_config(&self) -> Result<JudgeConfig, JudgeError> {
        let policy = load_policy(self.policy.as_deref())?;
        let workspace = self.workspace(policy.workspace());
        // `load_policy` completed both for this host.
        let agent_home = policy
            .agent_home()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        let agent_path = policy.agent_path().unwrap_or(DEFAULT_AGENT_PATH).to_owned();
        Ok(JudgeConfig {
            policy,
            state_dir: self.state_dir.clone(),
            own_files: self.own_files(),
            openclaw_state_dir: self.openclaw_state_dir.clone(),
            workspace,
            agent_home,
            agent_path,
            elsewhere: None,
            run_as: self.run_as,
        })
    }

    /// The writable workspace of approved runs, never chosen by a request: this config's
    /// `workspace`, else the policy's, else OpenClaw's `agents.defaults.workspace` (from
    /// `openclaw.json` in its state dir), else `<openclaw_state_dir>/workspace`, OpenClaw's
    /// own default.
    pub fn workspace(&self, policy_workspace: Option<&Path>) -> PathBuf {
        if let Some(w) = self
            .workspace
            .as_ref()
            .or(policy_workspace.map(|p| p.to_path_buf()).as_ref())
        {
            return w.clone();
        }
        let oc = self.openclaw_state_dir.join("openclaw.json");
        if let Some(w) = openclaw_workspace(&oc) {
            return w;
        }
        self.openclaw_state_dir.join("workspace")
    }
}

/// `agents.defaults.workspace` of OpenClaw's config, when the file is plain JSON and names an
/// absolute path. (OpenClaw also accepts JSON5; such a file is not read and the default holds.)
fn openclaw_workspace(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let v: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(file = %file.display(), error = %e, "OpenClaw config is not plain JSON; its workspace is not read");
            return None;
        }
    };
    let w = v.pointer("/agents/defaults/workspace")?.as_str()?;
    let p = PathBuf::from(w);
    p.is_absolute().then_some(p)
}

fn parse(text: &str, origin: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        origin: origin.into(),
        source: Box::new(e),
    })
}

/// The state dir as a 0700 directory (created if missing).
pub fn ensure_state_dir(dir: &Path) -> Result<(), crate::socket::listener::ListenError> {
    crate::socket::listener::secure_dir(dir)
}

/// The agent's PATH when neither the policy nor the environment names one.
pub const DEFAULT_AGENT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Reads a policy file (or takes the embedded default) and completes it for this host:
/// the policy core only parses text and never reads the environment.
pub fn load_policy(file: Option<&Path>) -> Result<Policy, PolicyError> {
    let policy = match file {
        Some(path) => {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
                origin: origin.clone(),
                source,
            })?;
            crate::policy::file::parse(&text, &origin)?
        }
        None => crate::policy::file::embedded_default(),
    };
    host_policy(&policy)
}

/// `policy` with the agent's home and PATH filled in where the file leaves them out: the
/// home from `$HOME`, else the passwd entry, else `/root`; PATH from `$PATH`, else
/// [`DEFAULT_AGENT_PATH`]. The one owner of these defaults.
#[allow(clippy::disallowed_methods)] // the config owns the environment
pub fn host_policy(policy: &Policy) -> Result<Policy, PolicyError> {
    let home = match policy.agent_home() {
        Some(h) => h.to_path_buf(),
        None => default_agent_home(),
    };
    let path = match policy.agent_path() {
        Some(p) => p.to_string(),
        None => std::env::var("PATH")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_AGENT_PATH.to_string()),
    };
    // The sensitive list also covers the home's real path: resolve it on this host.
    let _facts = crate::host_facts::scope();
    Ok(policy.with_agent_home(&home)?.with_agent_path(&path))
}

/// The agent's home when the policy does not say: `$HOME`, else the passwd entry, else `/root`.
#[allow(clippy::disallowed_methods)] // the config owns the environment
fn default_agent_home() -> PathBuf {
    if let Some(h) = std::env::var_os("HOME").filter(|h| Path::new(h).is_absolute()) {
        return PathBuf::from(h);
    }
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// The decide context `policy explain` uses: the host policy's home and PATH on this host's
/// filesystem, no OpenClaw constraints.
pub fn explain_context(policy: &Policy, cwd: &Path) -> DecideContext {
    let home = policy
        .agent_home()
        .map(Path::to_path_buf)
        .unwrap_or_else(default_agent_home);
    let path = policy.agent_path().unwrap_or(DEFAULT_AGENT_PATH);
    DecideContext::standalone(&home, path, cwd)
}

mod front;
mod gateway;
mod layers;
mod store;
pub use front::FrontConfig;
pub use gateway::GatewaySettings;
pub use store::StoreSettings;
#[cfg(test)]
mod tests;
