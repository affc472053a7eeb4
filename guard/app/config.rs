//! Deployment configuration of `serve`: one TOML file plus `SANCTUM_*` environment variables
//! over an embedded default that works on a laptop. Precedence: command-line flag >
//! environment > file > embedded default. This module owns where the guard's files live.

use crate::policy::decide::DecideContext;
use crate::policy::file::{Policy, PolicyError};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The embedded default; every key is optional and documented here.
pub const DEFAULT_CONFIG: &str = r#"# sanctum-guard deployment config (all keys optional).
# state_dir = "/var/lib/sanctum-guard"   # inbox.db, audit.jsonl; default $XDG_STATE_HOME/sanctum-guard
#                                        # or ~/.local/state/sanctum-guard (env SANCTUM_STATE_DIR)
# openclaw_state_dir = "/home/node/.openclaw"  # default $OPENCLAW_STATE_DIR, else ~/.openclaw
#                                        # (env SANCTUM_OPENCLAW_STATE)
# policy = "/etc/sanctum/policy.toml"    # default: the embedded policy (env SANCTUM_POLICY)
# workspace = "/workspace"               # the only tree an approved run may write (env
#                                        # SANCTUM_WORKSPACE); default: the policy's `workspace`,
#                                        # else OpenClaw's agents.defaults.workspace from
#                                        # openclaw.json, else <openclaw_state_dir>/workspace

[socket]
# UIDs that may connect (SO_PEERCRED); empty = only the guard's own UID.
allowed_uids = []                        # env SANCTUM_SOCKET_ALLOWED_UIDS="1000,1001"
# Per peer (UID, PID) token bucket.
rate_per_sec = 500                       # env SANCTUM_SOCKET_RATE_PER_SEC
rate_burst = 2000                        # env SANCTUM_SOCKET_RATE_BURST
# |now - ts| window of `exec` frames, and how long a client may take to send its line.
ttl_ms = 10000
read_timeout_ms = 5000
max_connections = 4096
# Pre-authentication budget (socket helper, issue 9 item 6): connections one UID may hold,
# and bytes all unfinished request lines may hold together; at a cap the oldest connection
# still sending its line is shed (answered `overloaded`).
max_connections_per_uid = 4096
max_buffered_bytes = 16777216
# false: a policy answer to a `request` frame (which runs nothing) and a rejection are sent
# before their audit record is fsynced (written within 0.2 ms, fsynced within 10 ms).
# true: every answer waits for its record's fsync (closes that window; costs an fsync of
# latency per answer and caps throughput near clients / fsync time).
durable_answers = false

[audit]
# (socket helper, issue 9 item 9) Rotate audit.jsonl when it reaches this size; the new file
# starts by naming the previous file's last hash. 0 = never rotate.
rotate_bytes = 67108864

[deadlines]
# The clients' own timeouts: 15 s for `request`, 20 s (or timeoutMs + 5 s) for `exec`.
request_ms = 15000
exec_ms = 20000
# The fallback deny is sent this long before the client would give up.
margin_ms = 1500

[web]
# The web prompt (README "Web prompt"). "off" disables it.
listen = "127.0.0.1:8484"                # env SANCTUM_WEB_LISTEN; flag --web-listen
# cert = "/etc/sanctum/web.crt"          # PEM; with key: HTTPS (env SANCTUM_WEB_CERT; --web-cert)
# key = "/etc/sanctum/web.key"           # PEM (env SANCTUM_WEB_KEY; --web-key)
# public_origin = "https://guard.example:8443"  # when people reach it by another name
#                                        # (env SANCTUM_WEB_PUBLIC_ORIGIN)
"#;

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
    #[error("web listen address {0:?}: expected IP:PORT or \"off\"")]
    WebListen(String),
    #[error("no home directory: set HOME, or {0}")]
    NoHome(&'static str),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    state_dir: Option<PathBuf>,
    openclaw_state_dir: Option<PathBuf>,
    policy: Option<PathBuf>,
    workspace: Option<PathBuf>,
    #[serde(default)]
    socket: SocketSection,
    #[serde(default)]
    deadlines: DeadlineSection,
    #[serde(default)]
    audit: AuditSection,
    #[serde(default)]
    web: WebSection,
}

/// `[audit]` (socket helper, issue 9 item 9).
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
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadlineSection {
    request_ms: Option<u64>,
    exec_ms: Option<u64>,
    margin_ms: Option<u64>,
}

/// Socket settings after precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketSettings {
    pub allowed_uids: Vec<u32>,
    pub rate_per_sec: u32,
    pub rate_burst: u32,
    pub ttl_ms: u64,
    pub read_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_uid: usize,
    pub max_buffered_bytes: usize,
    /// Every answer waits for its audit record's fsync (see [`DEFAULT_CONFIG`]).
    pub durable_answers: bool,
}

/// The clients' deadlines and the safety margin before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    pub request_ms: u64,
    pub exec_ms: u64,
    pub margin_ms: u64,
}

impl Deadlines {
    /// When the fallback must answer a `request` received at `now_ms`.
    pub fn request_deadline(&self, now_ms: u64) -> u64 {
        now_ms + self.request_ms.saturating_sub(self.margin_ms)
    }

    /// When the fallback must answer an `exec` received at `now_ms`: the 2026.9.6 node host
    /// waits 20 s; newer ones `timeoutMs + 5 s`. The shorter of both is safe for either.
    pub fn exec_deadline(&self, now_ms: u64, timeout_ms: Option<u64>) -> u64 {
        let client = match timeout_ms {
            Some(t) if t > 0 => self.exec_ms.min(t.saturating_add(5_000)),
            _ => self.exec_ms,
        };
        now_ms + client.saturating_sub(self.margin_ms)
    }
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
    /// `$HOME` of the guard's environment (expands `~` in OpenClaw's stored paths).
    pub home: Option<PathBuf>,
    pub socket: SocketSettings,
    pub deadlines: Deadlines,
    pub audit: AuditSettings,
    pub web: crate::web::WebSettings,
    /// Which file was read, for the startup lines.
    pub origin: String,
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
        let (file, origin) = match o.config.as_ref().map(PathBuf::from).or_else(|| {
            env("SANCTUM_CONFIG")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        }) {
            Some(p) => {
                let text = std::fs::read_to_string(&p).map_err(|source| ConfigError::Read {
                    path: p.clone(),
                    source,
                })?;
                (
                    parse(&text, &p.display().to_string())?,
                    p.display().to_string(),
                )
            }
            None => (FileConfig::default(), "embedded default".to_owned()),
        };
        let home = || {
            env("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .ok_or(ConfigError::NoHome("pass --state-dir and --openclaw-state"))
        };
        let env_path = |k: &str| env(k).filter(|s| !s.is_empty()).map(PathBuf::from);

        let state_dir = match o
            .state_dir
            .clone()
            .or_else(|| env_path("SANCTUM_STATE_DIR"))
            .or(file.state_dir)
        {
            Some(p) => p,
            None => match env_path("XDG_STATE_HOME") {
                Some(x) => x.join("sanctum-guard"),
                None => home()?.join(".local/state/sanctum-guard"),
            },
        };
        let openclaw_state_dir = match o
            .openclaw_state
            .clone()
            .or_else(|| env_path("SANCTUM_OPENCLAW_STATE"))
            .or(file.openclaw_state_dir)
            .or_else(|| env_path("OPENCLAW_STATE_DIR"))
        {
            Some(p) => p,
            None => home()?.join(".openclaw"),
        };
        let policy = o
            .policy
            .clone()
            .or_else(|| env_path("SANCTUM_POLICY"))
            .or(file.policy);
        let workspace = o
            .workspace
            .clone()
            .or_else(|| env_path("SANCTUM_WORKSPACE"))
            .or(file.workspace);
        if let Some(w) = &workspace {
            if !w.is_absolute() {
                return Err(ConfigError::Env {
                    name: "workspace".into(),
                    message: format!("{} is not an absolute path", w.display()),
                });
            }
        }

        let num = |name: &str| -> Result<Option<u64>, ConfigError> {
            env(name)
                .map(|v| {
                    v.trim().parse::<u64>().map_err(|e| ConfigError::Env {
                        name: name.into(),
                        message: e.to_string(),
                    })
                })
                .transpose()
        };
        let small = |name: &str| -> Result<Option<u32>, ConfigError> {
            num(name)?
                .map(|v| {
                    u32::try_from(v).map_err(|e| ConfigError::Env {
                        name: name.into(),
                        message: e.to_string(),
                    })
                })
                .transpose()
        };
        let uids_env = env("SANCTUM_SOCKET_ALLOWED_UIDS")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| {
                        s.parse::<u32>().map_err(|e| ConfigError::Env {
                            name: "SANCTUM_SOCKET_ALLOWED_UIDS".into(),
                            message: e.to_string(),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let mut allowed_uids = uids_env
            .or(file.socket.allowed_uids)
            .or(default.socket.allowed_uids.clone())
            .unwrap_or_default();
        if allowed_uids.is_empty() {
            allowed_uids.push(nix::unistd::geteuid().as_raw());
        }
        let d = &default;
        let socket = SocketSettings {
            allowed_uids,
            rate_per_sec: small("SANCTUM_SOCKET_RATE_PER_SEC")?
                .or(file.socket.rate_per_sec)
                .or(d.socket.rate_per_sec)
                .unwrap_or(500),
            rate_burst: small("SANCTUM_SOCKET_RATE_BURST")?
                .or(file.socket.rate_burst)
                .or(d.socket.rate_burst)
                .unwrap_or(2000),
            ttl_ms: file.socket.ttl_ms.or(d.socket.ttl_ms).unwrap_or(10_000),
            read_timeout: Duration::from_millis(
                file.socket
                    .read_timeout_ms
                    .or(d.socket.read_timeout_ms)
                    .unwrap_or(5_000),
            ),
            max_connections: file
                .socket
                .max_connections
                .or(d.socket.max_connections)
                .unwrap_or(4096),
            max_connections_per_uid: file
                .socket
                .max_connections_per_uid
                .or(d.socket.max_connections_per_uid)
                .unwrap_or(4096),
            max_buffered_bytes: file
                .socket
                .max_buffered_bytes
                .or(d.socket.max_buffered_bytes)
                .unwrap_or(16 * 1024 * 1024),
            durable_answers: file
                .socket
                .durable_answers
                .or(d.socket.durable_answers)
                .unwrap_or(false),
        };
        let deadlines = Deadlines {
            request_ms: file
                .deadlines
                .request_ms
                .or(d.deadlines.request_ms)
                .unwrap_or(15_000),
            exec_ms: file
                .deadlines
                .exec_ms
                .or(d.deadlines.exec_ms)
                .unwrap_or(20_000),
            margin_ms: num("SANCTUM_DEADLINE_MARGIN_MS")?
                .or(file.deadlines.margin_ms)
                .or(d.deadlines.margin_ms)
                .unwrap_or(1_500),
        };
        let audit = AuditSettings {
            rotate_bytes: file
                .audit
                .rotate_bytes
                .or(d.audit.rotate_bytes)
                .unwrap_or(64 * 1024 * 1024),
        };
        let explicit = o
            .web_listen
            .clone()
            .or_else(|| env("SANCTUM_WEB_LISTEN"))
            .or(file.web.listen);
        let listen_text = explicit
            .clone()
            .or(d.web.listen.clone())
            .unwrap_or_else(|| crate::web::DEFAULT_LISTEN.into());
        let listen = match listen_text.trim() {
            "off" => None,
            t => Some(t.parse().map_err(|_| ConfigError::WebListen(t.into()))?),
        };
        let web = crate::web::WebSettings {
            listen,
            explicit: explicit.is_some(),
            cert: o
                .web_cert
                .clone()
                .or_else(|| env_path("SANCTUM_WEB_CERT"))
                .or(file.web.cert),
            key: o
                .web_key
                .clone()
                .or_else(|| env_path("SANCTUM_WEB_KEY"))
                .or(file.web.key),
            public_origin: env("SANCTUM_WEB_PUBLIC_ORIGIN")
                .filter(|s| !s.is_empty())
                .or(file.web.public_origin),
        };
        Ok(Config {
            state_dir,
            openclaw_state_dir,
            policy,
            workspace,
            home: env("HOME")
                .filter(|h| h.starts_with('/'))
                .map(PathBuf::from),
            socket,
            deadlines,
            audit,
            web,
            origin,
        })
    }

    pub fn inbox_path(&self) -> PathBuf {
        self.state_dir.join("inbox.db")
    }

    pub fn audit_path(&self) -> PathBuf {
        self.state_dir.join("audit.jsonl")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn laptop_default() {
        let c = Config::load_with(&Overrides::default(), &env_of(&[("HOME", "/home/u")]))
            .expect("default");
        assert_eq!(
            c.state_dir,
            PathBuf::from("/home/u/.local/state/sanctum-guard")
        );
        assert_eq!(c.openclaw_state_dir, PathBuf::from("/home/u/.openclaw"));
        assert_eq!(c.socket.allowed_uids, vec![nix::unistd::geteuid().as_raw()]);
        assert_eq!(c.deadlines.request_deadline(0), 13_500);
        assert_eq!(c.deadlines.exec_deadline(0, Some(5_000)), 8_500);
        assert_eq!(c.deadlines.exec_deadline(0, None), 18_500);
        assert_eq!(c.policy, None);
    }

    #[test]
    fn precedence_flag_env_file() {
        let t = tempfile::tempdir().expect("tmp");
        let f = t.path().join("c.toml");
        std::fs::write(
            &f,
            "state_dir = \"/from/file\"\nopenclaw_state_dir = \"/oc/file\"\n[socket]\nallowed_uids = [7]\nrate_per_sec = 9\n",
        )
        .expect("write");
        let env = env_of(&[
            ("HOME", "/h"),
            ("XDG_STATE_HOME", "/xdg"),
            ("OPENCLAW_STATE_DIR", "/oc/env"),
            ("SANCTUM_SOCKET_RATE_PER_SEC", "11"),
        ]);
        let mut o = Overrides {
            config: Some(f.clone()),
            ..Default::default()
        };
        let c = Config::load_with(&o, &env).expect("file");
        assert_eq!(c.state_dir, PathBuf::from("/from/file"));
        // The config file's key beats OpenClaw's own env var; the flag beats both.
        assert_eq!(c.openclaw_state_dir, PathBuf::from("/oc/file"));
        assert_eq!(c.socket.allowed_uids, vec![7]);
        assert_eq!(c.socket.rate_per_sec, 11);
        o.state_dir = Some("/flag".into());
        o.openclaw_state = Some("/oc/flag".into());
        let c = Config::load_with(&o, &env).expect("flags");
        assert_eq!(c.state_dir, PathBuf::from("/flag"));
        assert_eq!(c.openclaw_state_dir, PathBuf::from("/oc/flag"));
        let c = Config::load_with(&Overrides::default(), &env).expect("env");
        assert_eq!(c.state_dir, PathBuf::from("/xdg/sanctum-guard"));
        assert_eq!(c.openclaw_state_dir, PathBuf::from("/oc/env"));
    }

    #[test]
    fn bad_input_is_an_error() {
        let t = tempfile::tempdir().expect("tmp");
        let f = t.path().join("c.toml");
        std::fs::write(&f, "[socket]\nbogus = 1\n").expect("write");
        let o = Overrides {
            config: Some(f),
            ..Default::default()
        };
        assert!(matches!(
            Config::load_with(&o, &env_of(&[("HOME", "/h")])),
            Err(ConfigError::Parse { .. })
        ));
        let e = Config::load_with(
            &Overrides::default(),
            &env_of(&[("HOME", "/h"), ("SANCTUM_SOCKET_ALLOWED_UIDS", "x")]),
        );
        assert!(matches!(e, Err(ConfigError::Env { .. })));
    }
}
