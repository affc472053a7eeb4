//! Doors to the OpenClaw gateway. `approver`: the guard's own operator connection, which
//! answers every `exec.approval.requested` / `plugin.approval.requested` with the engine's
//! decision; `approval` turns those events into engine requests and decisions into resolve
//! frames. The gateway-protocol pieces shared with the node host (device identity, handshake)
//! live in `crate::openclaw`.

pub mod approval;
pub mod approver;
