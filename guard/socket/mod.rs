//! OpenClaw's exec-approvals socket: wire frames (`wire`), client authentication (`auth`) and
//! the server that answers every connection with exactly one reply (`server`).
pub mod auth;
pub mod wire;
