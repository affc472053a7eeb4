//! How the writer answers whoever queued a record: when it is on disk (fsynced), when it is
//! written (in the file, the page cache holding it: a crash of the process loses nothing, only
//! a crash of the machine before the next fsync could), or never (detached).

use super::{AuditError, Stamp};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

#[derive(Debug)]
pub(super) enum Reply {
    Blocking(mpsc::SyncSender<Result<Stamp, AuditError>>),
    Async(tokio::sync::oneshot::Sender<Result<Stamp, AuditError>>),
    /// Answered once the record is written; the fsync follows at once (grouped with others)
    /// and, if it fails, clears the flag.
    Written(
        tokio::sync::oneshot::Sender<Result<Stamp, AuditError>>,
        Arc<AtomicBool>,
    ),
    /// Nobody waits; a failure (of the write or of the later fsync) clears this flag.
    Detached(Arc<AtomicBool>),
}

impl Reply {
    pub(super) fn send(self, r: Result<Stamp, AuditError>) {
        // A caller that stopped waiting does not stop the others.
        match self {
            Reply::Blocking(tx) => {
                let _ = tx.send(r);
            }
            Reply::Async(tx) => {
                let _ = tx.send(r);
            }
            Reply::Written(tx, ok) => {
                if r.is_err() {
                    ok.store(false, Ordering::Relaxed);
                }
                let _ = tx.send(r);
            }
            Reply::Detached(ok) => {
                if r.is_err() {
                    ok.store(false, Ordering::Relaxed);
                }
            }
        }
    }

    /// Called once the record `stamp` names is written: a `Written` caller hears it now and
    /// only its flag waits for the fsync; the others are unchanged.
    pub(super) fn written(self, stamp: &Stamp) -> Reply {
        match self {
            Reply::Written(tx, ok) => {
                let _ = tx.send(Ok(stamp.clone()));
                Reply::Detached(ok)
            }
            other => other,
        }
    }
}
