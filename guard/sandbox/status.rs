//! What a confined run actually enforced, for `--json-status`, the audit record and `doctor`.

use serde::{Deserialize, Serialize};

/// How much of a layer is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Full,
    Partial,
    None,
}

/// The honest status of one confined run. Built before the spawn from what the kernel offers; the
/// child fails (and nothing runs) if any layer listed here as enforced cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnforcementStatus {
    /// Landlock ABI of the running kernel (0: none).
    pub landlock_abi: u8,
    pub landlock: Level,
    /// Handled Landlock rights (everything not granted by a rule is denied).
    pub fs_rights: Vec<String>,
    pub net_rights: Vec<String>,
    pub scopes: Vec<String>,
    pub seccomp: bool,
    /// Parts of seccomp/exec-child.json in the filter.
    pub seccomp_parts: Vec<String>,
    /// All five capability sets empty (bounding too).
    pub caps_cleared: bool,
    pub no_new_privs: bool,
    pub rlimits: bool,
    /// `none` or `tcp:PORTS`.
    pub network: String,
    /// Features the profile wanted that this kernel lacks (non-empty only in degraded mode).
    pub missing: Vec<String>,
    /// How each per-run limit is enforced (`pids:cgroup`, `tmp:poll`, `memory:rlimit-as`…).
    #[serde(default)]
    pub resources: Vec<String>,
}

impl EnforcementStatus {
    /// The status of a run that never started: nothing enforced, because nothing ran.
    pub fn not_started() -> Self {
        EnforcementStatus {
            landlock_abi: 0,
            landlock: Level::None,
            fs_rights: vec![],
            net_rights: vec![],
            scopes: vec![],
            seccomp: false,
            seccomp_parts: vec![],
            caps_cleared: false,
            no_new_privs: false,
            rlimits: false,
            network: String::new(),
            missing: vec![],
            resources: vec![],
        }
    }

    /// True when every layer is fully enforced.
    pub fn is_full(&self) -> bool {
        self.landlock == Level::Full
            && self.seccomp
            && self.caps_cleared
            && self.no_new_privs
            && self.rlimits
            && self.missing.is_empty()
    }
}
