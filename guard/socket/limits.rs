//! Surviving lowered resource limits (the guard's side). A confined command
//! of the same uid may manage to lower the guard's limits (`prlimit`); the guard must then
//! keep answering, fail closed and say what happened rather than die:
//! - RLIMIT_NOFILE: raised soft → hard at start, so the working headroom is the most the
//!   kernel allows; when descriptors still run out, `accept` sees EMFILE and the server sheds
//!   and denies (see `server`), writing a `guard-limit` record.
//! - RLIMIT_FSIZE: exceeding it sends SIGXFSZ, whose default action kills the process. A
//!   handler is installed instead (tokio's, which never restores the default), so the write
//!   fails with EFBIG: the audit log then reports failure and every later allow becomes a
//!   deny `audit-unavailable` (fail closed).

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use tokio::signal::unix::{signal, SignalKind};

/// What [`prepare`] did, for the startup line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsReport {
    /// RLIMIT_NOFILE (soft, hard) after raising.
    pub nofile: (u64, u64),
    /// Whether SIGXFSZ is caught (false: the handler could not be installed).
    pub sigxfsz_caught: bool,
}

impl std::fmt::Display for LimitsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nofile {}/{}, SIGXFSZ {}",
            self.nofile.0,
            self.nofile.1,
            if self.sigxfsz_caught {
                "caught (EFBIG fails closed)"
            } else {
                "NOT caught"
            }
        )
    }
}

/// Raises RLIMIT_NOFILE's soft limit to its hard limit and catches SIGXFSZ. Call once, in
/// the runtime, before serving.
pub fn prepare() -> LimitsReport {
    let nofile = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => (hard, hard),
            Err(e) => {
                tracing::warn!(error = %e, "could not raise RLIMIT_NOFILE");
                (soft, hard)
            }
        },
        Ok(l) => l,
        Err(_) => (0, 0),
    };
    let sigxfsz_caught = match signal(SignalKind::from_raw(libc::SIGXFSZ)) {
        Ok(mut s) => {
            tokio::spawn(async move {
                while s.recv().await.is_some() {
                    tracing::error!(
                        "SIGXFSZ: a write exceeded RLIMIT_FSIZE (lowered on the guard?); it fails with EFBIG and the guard fails closed"
                    );
                }
            });
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not catch SIGXFSZ");
            false
        }
    };
    LimitsReport {
        nofile,
        sigxfsz_caught,
    }
}
