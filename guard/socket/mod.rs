//! OpenClaw's exec-approvals socket: wire frames (`wire`), client authentication (`auth`),
//! safe creation of the socket file (`listener`) and the server that answers every
//! connection with exactly one reply (`server`, `engine`).
pub mod auth;
pub mod listener;
pub mod wire;
