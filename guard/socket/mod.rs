//! OpenClaw's exec-approvals socket: wire frames (`wire`), client authentication (`auth`),
//! safe creation of the socket file (`listener`) and the server that answers every
//! connection with exactly one reply (`server`, `engine`).
pub mod auth;
pub mod decision;
pub mod engine;
pub mod listener;
pub mod oracle;
pub mod reply;
pub mod serve;
pub mod server;
pub mod wire;
