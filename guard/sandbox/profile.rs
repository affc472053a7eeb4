//! Sandbox profiles as they appear in the policy file (`[profiles.<name>]`). A profile says
//! what a confined process may read, write and connect to, and its resource limits.

use serde::{Deserialize, Serialize};

/// Network access of a confined process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkSpec {
    /// No sockets beyond unix socketpairs.
    None,
    /// TCP connect to these ports only.
    Ports(Vec<u16>),
}

/// One named profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Paths that may be read and executed. `{workspace}` expands to the workspace.
    pub read: Vec<String>,
    /// Paths that may be written. `{workspace}` and `{tmp}` (a private temp dir) expand.
    pub write: Vec<String>,
    /// Paths under a writable root that stay read-only (e.g. `{workspace}/.git/hooks`).
    pub protected: Vec<String>,
    pub network: NetworkSpec,
}
