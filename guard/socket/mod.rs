//! Door: OpenClaw's exec-approvals socket. Wire frames (`wire`), client authentication
//! (`auth`), safe creation of the socket file (`listener`), the server that answers every
//! connection with exactly one reply (`server`) and the adapter to the engine (`door`,
//! `decision`).
pub mod auth;
pub mod decision;
pub mod door;
pub mod listener;
pub mod outcome;
pub mod reply;
pub mod server;
pub mod wire;
