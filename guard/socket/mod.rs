//! Door: OpenClaw's exec-approvals socket. Wire frames (`wire`), client authentication
//! (`auth`), safe creation of the socket file (`listener`), the server that answers every
//! connection with exactly one reply under a connection and memory budget (`server`), the
//! requester-gone probe (`peer`), rejection aggregation (`rejections`) and the adapter to the
//! engine (`door`, `decision`).
pub mod auth;
pub mod budget;
pub mod decision;
pub mod door;
pub mod limits;
pub mod listener;
pub mod outcome;
pub mod peer;
pub mod rejections;
pub mod reply;
pub mod server;
pub mod tool;
pub mod wire;
