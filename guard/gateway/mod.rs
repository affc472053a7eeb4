//! Doors to the OpenClaw gateway. `approver`: the guard's own operator connection, which
//! answers every `exec.approval.requested` / `plugin.approval.requested` with the engine's
//! decision; `approval` turns those events into engine requests and decisions into resolve
//! frames. `front`: the front door every human client (ACP, IDEs, chat pages) passes; door
//! `links` authenticate clients at its own upgrade (`handshake`; `pending` budgets the
//! upgrades not yet checked), `client_leg` reads their
//! frames for the policy's method filter and passes judged ones up as received, and `relay`
//! passes the gateway's frames down as received, over `upstream`'s connection. The
//! gateway-protocol pieces shared with the node host (device identity, handshake) live in
//! `crate::openclaw`.

pub mod approval;
pub mod approver;
pub mod browser;
mod bucket;
mod client_leg;
pub mod front;
mod handshake;
pub mod links;
mod pending;
pub mod posture_check;
pub mod relay;
pub mod rpc;
pub mod upstream;
