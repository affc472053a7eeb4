//! OpenClaw's data formats: the approvals document (JSON file or SQLite row), its precedence
//! rules, the socket path and token stored in it, and the `allow-always` entry format. This
//! module owns byte-compatibility with OpenClaw; the policy core only sees the normalised data.
pub mod allow_always;
pub mod document;
mod json_file;
pub mod normalize;
pub mod resolve;
pub mod schema;
pub mod socket;
mod sqlite;
pub mod store;
