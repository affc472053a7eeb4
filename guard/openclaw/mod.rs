//! OpenClaw's data formats: the approvals document (JSON file or SQLite row), its precedence
//! rules, and the `allow-always` entry format. This module owns byte-compatibility with
//! OpenClaw; the policy core only sees the normalised data.
pub mod allow_always;
