//! The layers of the deployment config: flag > environment > file > embedded default, one
//! key at a time, with typed errors that name the variable or key.

use super::{
    parse, AuditSection, AuditSettings, ConfigError, DeadlineSection, Deadlines, FileConfig,
    Overrides, SocketSection, SocketSettings, WebSection,
};
use std::path::PathBuf;
use std::time::Duration;

/// The config file the flag or `SANCTUM_CONFIG` names, if any.
pub(super) fn config_file(o: &Overrides, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    o.config.clone().or_else(|| {
        env("SANCTUM_CONFIG")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    })
}

/// The config file named by the flag or `SANCTUM_CONFIG`, or an empty layer.
pub(super) fn file_layer(
    o: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(FileConfig, String), ConfigError> {
    let Some(p) = config_file(o, env) else {
        return Ok((FileConfig::default(), "embedded default".to_owned()));
    };
    let text = std::fs::read_to_string(&p).map_err(|source| ConfigError::Read {
        path: p.clone(),
        source,
    })?;
    let origin = p.display().to_string();
    Ok((parse(&text, &origin)?, origin))
}

/// The environment as the config reads it: typed, with the variable named in every error.
pub(super) struct Env<'a>(pub(super) &'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    pub(super) fn text(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|s| !s.is_empty())
    }

    pub(super) fn path(&self, name: &str) -> Option<PathBuf> {
        self.text(name).map(PathBuf::from)
    }

    pub(super) fn parsed<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        self.text(name)
            .map(|v| {
                v.trim().parse::<T>().map_err(|e| ConfigError::Env {
                    name: name.into(),
                    message: e.to_string(),
                })
            })
            .transpose()
    }

    pub(super) fn num(&self, name: &str) -> Result<Option<u64>, ConfigError> {
        self.parsed(name)
    }
}

/// Precedence for one key: environment, then the file, then the embedded default, which
/// has every key (a missing one is a build mistake, caught by a test, never a silent value).
pub(super) fn pick<T>(
    env: Option<T>,
    file: Option<T>,
    default: Option<T>,
    key: &'static str,
) -> Result<T, ConfigError> {
    env.or(file)
        .or(default)
        .ok_or(ConfigError::MissingDefault(key))
}

/// `$HOME`, for the defaults that live under it; `NoHome` when it is unset.
fn home(env: &Env) -> Result<PathBuf, ConfigError> {
    env.path("HOME")
        .ok_or(ConfigError::NoHome("pass --state-dir and --openclaw-state"))
}

/// The guard's own state dir: flag, `SANCTUM_STATE_DIR`, file, then the XDG state home
/// (`$XDG_STATE_HOME/sanctum-guard`, else `~/.local/state/sanctum-guard`).
pub(super) fn state_dir(
    o: &Overrides,
    env: &Env,
    file: &FileConfig,
) -> Result<PathBuf, ConfigError> {
    let named = o
        .state_dir
        .clone()
        .or_else(|| env.path("SANCTUM_STATE_DIR"))
        .or(file.state_dir.clone());
    Ok(match named {
        Some(p) => p,
        None => match env.path("XDG_STATE_HOME") {
            Some(x) => x.join("sanctum-guard"),
            None => home(env)?.join(".local/state/sanctum-guard"),
        },
    })
}

/// OpenClaw's state dir: flag, `SANCTUM_OPENCLAW_STATE`, file, OpenClaw's own
/// `OPENCLAW_STATE_DIR`, then OpenClaw's default `~/.openclaw`.
pub(super) fn openclaw_state_dir(
    o: &Overrides,
    env: &Env,
    file: &FileConfig,
) -> Result<PathBuf, ConfigError> {
    let named = o
        .openclaw_state
        .clone()
        .or_else(|| env.path("SANCTUM_OPENCLAW_STATE"))
        .or(file.openclaw_state_dir.clone())
        .or_else(|| env.path("OPENCLAW_STATE_DIR"));
    Ok(match named {
        Some(p) => p,
        None => home(env)?.join(".openclaw"),
    })
}

/// The workspace the config names (flag, `SANCTUM_WORKSPACE`, file), which must be absolute;
/// None leaves the choice to [`super::Config::workspace`].
pub(super) fn workspace(
    o: &Overrides,
    env: &Env,
    file: &FileConfig,
) -> Result<Option<PathBuf>, ConfigError> {
    let workspace = o
        .workspace
        .clone()
        .or_else(|| env.path("SANCTUM_WORKSPACE"))
        .or(file.workspace.clone());
    absolute("workspace", workspace)
}

/// `p`, which must be absolute when given (a relative one would depend on the cwd).
pub(super) fn absolute(name: &str, p: Option<PathBuf>) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(w) = p.as_ref().filter(|w| !w.is_absolute()) {
        return Err(ConfigError::Env {
            name: name.into(),
            message: format!("{} is not an absolute path", w.display()),
        });
    }
    Ok(p)
}

/// `[deadlines]`; only the margin has an environment variable.
pub(super) fn deadlines(
    env: &Env,
    file: &DeadlineSection,
    d: &DeadlineSection,
) -> Result<Deadlines, ConfigError> {
    Ok(Deadlines {
        request_ms: pick(None, file.request_ms, d.request_ms, "deadlines.request_ms")?,
        exec_ms: pick(None, file.exec_ms, d.exec_ms, "deadlines.exec_ms")?,
        margin_ms: pick(
            env.num("SANCTUM_DEADLINE_MARGIN_MS")?,
            file.margin_ms,
            d.margin_ms,
            "deadlines.margin_ms",
        )?,
    })
}

/// `[audit]`.
pub(super) fn audit_settings(
    file: &AuditSection,
    d: &AuditSection,
) -> Result<AuditSettings, ConfigError> {
    Ok(AuditSettings {
        rotate_bytes: pick(
            None,
            file.rotate_bytes,
            d.rotate_bytes,
            "audit.rotate_bytes",
        )?,
    })
}

pub(super) fn socket_settings(
    env: &Env,
    file: &SocketSection,
    d: &SocketSection,
) -> Result<SocketSettings, ConfigError> {
    let uids_env = env
        .text("SANCTUM_SOCKET_ALLOWED_UIDS")
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
    let mut allowed_uids = pick(
        uids_env,
        file.allowed_uids.clone(),
        d.allowed_uids.clone(),
        "socket.allowed_uids",
    )?;
    if allowed_uids.is_empty() {
        allowed_uids.push(nix::unistd::geteuid().as_raw());
    }
    Ok(SocketSettings {
        allowed_uids,
        rate_per_sec: pick(
            env.parsed("SANCTUM_SOCKET_RATE_PER_SEC")?,
            file.rate_per_sec,
            d.rate_per_sec,
            "socket.rate_per_sec",
        )?,
        rate_burst: pick(
            env.parsed("SANCTUM_SOCKET_RATE_BURST")?,
            file.rate_burst,
            d.rate_burst,
            "socket.rate_burst",
        )?,
        ttl_ms: pick(None, file.ttl_ms, d.ttl_ms, "socket.ttl_ms")?,
        read_timeout: Duration::from_millis(pick(
            None,
            file.read_timeout_ms,
            d.read_timeout_ms,
            "socket.read_timeout_ms",
        )?),
        max_connections: pick(
            None,
            file.max_connections,
            d.max_connections,
            "socket.max_connections",
        )?,
        max_connections_per_uid: pick(
            None,
            file.max_connections_per_uid,
            d.max_connections_per_uid,
            "socket.max_connections_per_uid",
        )?,
        max_buffered_bytes: pick(
            None,
            file.max_buffered_bytes,
            d.max_buffered_bytes,
            "socket.max_buffered_bytes",
        )?,
        durable_answers: pick(
            None,
            file.durable_answers,
            d.durable_answers,
            "socket.durable_answers",
        )?,
        group_connect: pick(
            None,
            file.group_connect,
            d.group_connect,
            "socket.group_connect",
        )?,
        token_file: file.token_file.clone(),
    })
}

pub(super) fn web_settings(
    o: &Overrides,
    env: &Env,
    file: &WebSection,
    d: &WebSection,
) -> Result<crate::web::WebSettings, ConfigError> {
    let explicit = o
        .web_listen
        .clone()
        .or_else(|| env.text("SANCTUM_WEB_LISTEN"))
        .or(file.listen.clone());
    let listen_text = pick(explicit.clone(), None, d.listen.clone(), "web.listen")?;
    let listen = match listen_text.trim() {
        "off" => None,
        t => Some(t.parse().map_err(|_| ConfigError::WebListen(t.into()))?),
    };
    Ok(crate::web::WebSettings {
        listen,
        explicit: explicit.is_some(),
        cert: o
            .web_cert
            .clone()
            .or_else(|| env.path("SANCTUM_WEB_CERT"))
            .or(file.cert.clone()),
        key: o
            .web_key
            .clone()
            .or_else(|| env.path("SANCTUM_WEB_KEY"))
            .or(file.key.clone()),
        public_origin: env
            .text("SANCTUM_WEB_PUBLIC_ORIGIN")
            .or(file.public_origin.clone()),
        public_url: env
            .text("SANCTUM_WEB_PUBLIC_URL")
            .or(file.public_url.clone())
            .map(|u| crate::inbox::pg_guards::public_url(&u))
            .transpose()?,
        suggest: suggest_rule(file, d)?,
    })
}

/// `[web] suggest_after` (0 or 2..=1000 approvals; 0 turns suggestions off) and
/// `suggest_within_days` (1..=90): when History offers a grant for a repeated shape. One
/// approval is no pattern, and a window past a quarter would suggest from stale habits.
fn suggest_rule(
    file: &WebSection,
    d: &WebSection,
) -> Result<crate::grants::SuggestRule, ConfigError> {
    let default = crate::grants::SuggestRule::default();
    let after = file
        .suggest_after
        .or(d.suggest_after)
        .unwrap_or(default.min_approvals);
    if after == 1 || after > 1000 {
        return Err(ConfigError::Suggest {
            key: "suggest_after",
            message: format!("{after}: 0 (off) or 2 to 1000 approvals"),
        });
    }
    let days = file.suggest_within_days.or(d.suggest_within_days);
    let window_ms = match days {
        None => default.window_ms,
        Some(n @ 1..=90) => n * 24 * 3600 * 1000,
        Some(n) => {
            return Err(ConfigError::Suggest {
                key: "suggest_within_days",
                message: format!("{n}: 1 to 90 days"),
            })
        }
    };
    Ok(crate::grants::SuggestRule {
        min_approvals: after,
        window_ms,
        ..default
    })
}
