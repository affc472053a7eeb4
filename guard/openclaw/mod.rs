//! OpenClaw's data formats: the approvals document (JSON file or SQLite row), its precedence
//! rules, the socket path and token stored in it, and the `allow-always` entry format. This
//! module owns byte-compatibility with OpenClaw; the policy core only sees the normalised data.
//! Also the gateway-protocol pieces every gateway client shares (the node host, the approver,
//! the front door): the Ed25519 device identity and the WebSocket handshake helpers.
pub mod allow_always;
pub mod document;
pub mod identity;
mod json_file;
pub mod normalize;
pub mod posture;
pub mod reconnect;
pub mod resolve;
pub mod schema;
pub mod socket;
mod sqlite;
pub mod store;
pub mod ws;
