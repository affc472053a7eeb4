//! Confinement for every process the guard runs for the agent: Landlock, seccomp, capability
//! drops, rlimits, an environment allow-list, and a spawn with output caps and timeouts.
//! All `unsafe` code of the project lives in this module tree.

mod canon;
pub mod cgroup;
pub mod child;
pub mod cli;
pub mod env;
pub mod identity;
pub mod integrity;
pub mod kernel;
mod landlock_base_check;
pub mod landlock_cache;
mod landlock_roots;
pub mod landlock_rules;
pub mod launch;
pub mod process;
pub mod profile;
mod profile_paths;
pub mod reaper;
pub mod resources;
pub mod run;
pub mod seccomp;
pub mod spawn;
mod spawner;
pub mod status;
pub mod tmpdir;
pub mod trace;
mod ws_churn;
pub mod ws_content;
mod ws_fanotify;
pub mod ws_secrets;
mod ws_walk;

pub use identity::RunAs;
pub use integrity::{IntegrityEvent, ScanLimits};
pub use launch::{ChildIo, ChildStdio, SpawnError};
pub use process::ConfinedChild;
pub use profile::{builtin_profiles, DenyList, Limits, NetworkSpec, ProfileSpec, ResolvedProfile};
pub use run::{run, run_prepared, RunOutcome, RunSpec};
pub use spawn::{prepare, Prepared};
pub use status::{EnforcementStatus, Level};

/// Why a confined process could not be set up. Every variant means "did not run".
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("profile: {0}")]
    Profile(String),
    /// A `run_as` identity that cannot be taken (its text says which and why).
    #[error("{0}")]
    RunAs(String),
    #[error("landlock: {0}")]
    Landlock(String),
    #[error("kernel lacks {missing} required by the profile (Landlock ABI {abi}); set allow_degraded to run anyway")]
    Unsupported { missing: String, abi: u8 },
    #[error("seccomp: {0}")]
    Seccomp(String),
    #[error("confinement failed in the child at {stage}: {source}")]
    Confinement {
        stage: &'static str,
        source: std::io::Error,
    },
    #[error("empty argv")]
    EmptyArgv,
    #[error("invalid command: {0}")]
    Command(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}
