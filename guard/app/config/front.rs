//! `[front]`: the front door every human client passes (off unless a listen address is set:
//! flag `--front-listen` > `SANCTUM_FRONT_LISTEN` > file). It forwards to `[gateway] url`.

use super::layers::Env;
use super::{ConfigError, Overrides};
use serde::Deserialize;
use std::net::SocketAddr;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FrontSection {
    listen: Option<String>,
    max_frame_bytes: Option<usize>,
    max_connections: Option<usize>,
    rate_per_sec: Option<u32>,
    rate_burst: Option<u32>,
    allowed_origins: Option<Vec<String>>,
}

/// The front door's settings after precedence; `listen: None` = no front door.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontConfig {
    pub listen: Option<SocketAddr>,
    pub max_frame_bytes: usize,
    pub max_connections: usize,
    pub rate_per_sec: u32,
    pub rate_burst: u32,
    /// Origins besides the web prompt's own that a browser client may come from.
    pub allowed_origins: Vec<String>,
}

pub(super) fn settings(
    o: &Overrides,
    env: &Env,
    file: &FrontSection,
) -> Result<FrontConfig, ConfigError> {
    let text = o
        .front_listen
        .clone()
        .or_else(|| env.text("SANCTUM_FRONT_LISTEN"))
        .or(file.listen.clone());
    let listen = match text.as_deref().map(str::trim) {
        None | Some("off") => None,
        Some(t) => Some(t.parse().map_err(|_| ConfigError::FrontListen(t.into()))?),
    };
    Ok(FrontConfig {
        listen,
        max_frame_bytes: file.max_frame_bytes.unwrap_or(1 << 20),
        max_connections: file.max_connections.unwrap_or(256),
        rate_per_sec: file.rate_per_sec.unwrap_or(100),
        rate_burst: file.rate_burst.unwrap_or(400),
        allowed_origins: file.allowed_origins.clone().unwrap_or_default(),
    })
}
