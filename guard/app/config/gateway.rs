//! `[gateway]`: the guard's own connection to the OpenClaw gateway (the approver). Off unless
//! a URL is given: flag `--gateway-url` > `SANCTUM_GATEWAY_URL` > file; likewise the token
//! file (`--gateway-token-file`, `SANCTUM_GATEWAY_TOKEN_FILE`).

use super::layers::Env;
use super::{ConfigError, Overrides};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GatewaySection {
    url: Option<String>,
    token_file: Option<PathBuf>,
    ask_timeout_ms: Option<u64>,
}

/// The approver's settings after precedence; `url: None` = no approver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewaySettings {
    pub url: Option<String>,
    pub token_file: Option<PathBuf>,
    /// The longest a gateway approval waits for a person (the gateway's own deadline may
    /// come first).
    pub ask_timeout_ms: u64,
    /// Flag only (never from a file or the environment): a posture finding is a warning
    /// instead of a refusal.
    pub allow_unsafe_posture: bool,
}

/// Ten minutes: a person at the web prompt, well within the gateway's 30 min.
const DEFAULT_ASK_TIMEOUT_MS: u64 = 600_000;

pub(super) fn settings(
    o: &Overrides,
    env: &Env,
    file: &GatewaySection,
) -> Result<GatewaySettings, ConfigError> {
    let url = o
        .gateway_url
        .clone()
        .or_else(|| env.text("SANCTUM_GATEWAY_URL"))
        .or(file.url.clone());
    if let Some(u) = &url {
        if !(u.starts_with("ws://") || u.starts_with("wss://")) {
            return Err(ConfigError::GatewayUrl(u.clone()));
        }
    }
    let token_file = o
        .gateway_token_file
        .clone()
        .or_else(|| env.path("SANCTUM_GATEWAY_TOKEN_FILE"))
        .or(file.token_file.clone());
    if url.is_some() && token_file.is_none() {
        return Err(ConfigError::GatewayToken);
    }
    Ok(GatewaySettings {
        url,
        token_file,
        ask_timeout_ms: env
            .num("SANCTUM_GATEWAY_ASK_TIMEOUT_MS")?
            .or(file.ask_timeout_ms)
            .unwrap_or(DEFAULT_ASK_TIMEOUT_MS),
        allow_unsafe_posture: o.allow_unsafe_posture,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Config, ConfigError, Overrides};

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn off_by_default_flag_beats_env_and_a_url_needs_a_token_file() {
        let home = env_of(&[("HOME", "/h")]);
        let c = Config::load_with(&Overrides::default(), &home).expect("default");
        assert_eq!(c.gateway.url, None);
        let env = env_of(&[
            ("HOME", "/h"),
            ("SANCTUM_GATEWAY_URL", "ws://127.0.0.1:1"),
            ("SANCTUM_GATEWAY_TOKEN_FILE", "/t"),
        ]);
        let c = Config::load_with(&Overrides::default(), &env).expect("env");
        assert_eq!(c.gateway.url.as_deref(), Some("ws://127.0.0.1:1"));
        let o = Overrides {
            gateway_url: Some("ws://127.0.0.1:2".into()),
            ..Default::default()
        };
        let c = Config::load_with(&o, &env).expect("flag");
        assert_eq!(c.gateway.url.as_deref(), Some("ws://127.0.0.1:2"));
        assert!(matches!(
            Config::load_with(&o, &home),
            Err(ConfigError::GatewayToken)
        ));
        let bad = Overrides {
            gateway_url: Some("http://x".into()),
            gateway_token_file: Some("/t".into()),
            ..Default::default()
        };
        assert!(matches!(
            Config::load_with(&bad, &home),
            Err(ConfigError::GatewayUrl(_))
        ));
    }
}
