//! `sanctum-guard node`: a native OpenClaw node host. With `tools.exec.host = "node"` bound to
//! it, OpenClaw sends every agent exec here (no fallback, no per-call override). Each
//! `system.run` — the agent's or an operator's raw `node.invoke` alike; the caller's
//! `approved` flag is never trusted — is decided by the guard's engine (the sidecar over the
//! approvals socket, or in-process), run confined, and reported in OpenClaw's shapes.
//!
//! `identity` (Ed25519 device key, v3 proof), `protocol` (frames), `client` (the gateway
//! session, pairing, backoff), `invoke` (the four commands), `decider` (sidecar or in-process).
//! What a node asks and how its run ended are the engine's words (`engine::ask`).

pub mod client;
pub mod decider;
pub mod doctor;
pub mod identity;
pub mod invoke;
pub mod protocol;
