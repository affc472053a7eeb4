//! Door: OpenClaw's exec-approvals socket. Wire frames (`wire`), client authentication
//! (`auth`), safe creation of the socket file (`listener`), the server that answers every
//! connection with exactly one reply under a connection and memory budget (`server`), the
//! requester-gone probe (`peer`), rejection aggregation (`rejections`) and the adapter to the
//! engine (`door`, `decision`).
pub mod auth;
pub mod budget;
pub mod decision;
pub mod door;
pub mod egress_ask;
pub mod limits;
pub mod listener;
pub mod outcome;
pub mod peer;
pub mod rejections;
pub mod reply;
pub mod server;
pub mod tool;
pub mod wire;

use std::time::Duration;

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
    /// Every answer waits for its audit record's fsync (`[socket] durable_answers` of the
    /// deployment config).
    pub durable_answers: bool,
    /// The socket is 0660 (its directory's group may connect) instead of 0600: the compose
    /// layout, where the node host runs as another uid in another container.
    pub group_connect: bool,
    /// The deployment's socket token, instead of the one OpenClaw's document holds or the
    /// guard generates (written into the document so both agree).
    pub token_file: Option<std::path::PathBuf>,
}
