//! The audit syncer: fsyncs what the writer thread wrote, rewrites the head file and answers
//! the callers, on a thread of its own. A written record already survives a guard crash (the
//! page cache has it); only a power loss needs the fsync. So a slow disk must not hold back
//! the next write: with one thread doing both, a 200 ms fsync left the answers given in
//! those 200 ms unwritten, and a `kill -9` then lost them.

use super::{AuditError, Reply, Stamp};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::mpsc;

/// Records written to `file`, to be made durable.
pub(super) struct SyncJob {
    /// The file the records went to (its own handle: the writer may rotate meanwhile).
    pub(super) file: File,
    /// The sealed head line naming the newest of them.
    pub(super) head: String,
    /// Who waits for them, with each record's seq and hash.
    pub(super) replies: Vec<(Reply, Stamp)>,
}

/// Starts the syncer; it ends once the sender is dropped and every job is done.
pub(super) fn spawn(head: Option<File>) -> std::io::Result<mpsc::Sender<SyncJob>> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("audit-syncer".into())
        .spawn(move || run(head, rx))?;
    Ok(tx)
}

/// Unit tests hold this to stand for a disk whose fsync does not return.
#[cfg(test)]
pub(crate) static STALL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(head: Option<File>, rx: mpsc::Receiver<SyncJob>) {
    while let Ok(first) = rx.recv() {
        #[cfg(test)]
        drop(STALL.lock());
        // Everything queued meanwhile shares this round's fsync.
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        let res = sync_files(&jobs);
        match &res {
            Ok(()) => {
                if let (Some(h), Some(last)) = (&head, jobs.last()) {
                    if let Err(e) = h.write_all_at(last.head.as_bytes(), 0) {
                        tracing::warn!(error = %e, "audit: head file write failed");
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "audit: fsync failed"),
        }
        for job in jobs {
            for (reply, stamp) in job.replies {
                reply.send(match &res {
                    Ok(()) => Ok(stamp),
                    Err(e) => Err(AuditError::Write(e.to_string())),
                });
            }
        }
    }
}

/// fsyncs each file the jobs wrote to, once (a rotation between jobs leaves two).
fn sync_files(jobs: &[SyncJob]) -> std::io::Result<()> {
    let ino = |f: &File| f.metadata().map(|m| (m.dev(), m.ino())).ok();
    let mut done: Vec<(u64, u64)> = Vec::new();
    for job in jobs.iter().rev() {
        let id = ino(&job.file);
        if id.is_some_and(|id| done.contains(&id)) {
            continue;
        }
        job.file.sync_data()?;
        if let Some(id) = id {
            done.push(id);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::audit::{AuditLog, Verification};
    use serde_json::json;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn lines(path: &std::path::Path) -> usize {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// While no fsync returns, detached records are still written (a `kill -9` keeps them),
    /// a waited-for record is not acknowledged, and once the disk answers both are done.
    #[test]
    fn a_stalled_fsync_does_not_hold_back_the_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (log, _) = AuditLog::open(&path).unwrap();
        let ok = Arc::new(AtomicBool::new(true));
        let stall = super::STALL.lock().unwrap();
        for i in 0..200 {
            log.record_detached_raw("decision", Box::new(move || json!({ "i": i })), &ok);
            if i % 50 == 0 {
                // Long enough for the writer to hand a batch to the (stalled) syncer.
                std::thread::sleep(super::super::SYNC_WINDOW * 2);
            }
        }
        let t = Instant::now();
        while lines(&path) < 200 {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "writes waited for the fsync"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let waited = {
            let log = log.clone();
            std::thread::spawn(move || log.append_raw("request", json!({ "after": true })))
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(!waited.is_finished(), "acknowledged before its fsync");
        assert_eq!(
            lines(&path),
            201,
            "the waited-for record is written, not yet synced"
        );
        drop(stall);
        assert_eq!(waited.join().unwrap().unwrap(), 201);
        assert!(ok.load(Ordering::Relaxed));
        assert_eq!(
            crate::audit::verify(&path).unwrap(),
            Verification::Ok { records: 201 }
        );
    }

    /// A record acknowledged at its write is answered while the fsync stalls (the line is
    /// in the file, so a `kill -9` keeps it) and its flag stays set once the disk answers.
    #[test]
    fn a_written_record_is_answered_before_its_fsync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (log, _) = AuditLog::open(&path).unwrap();
        let ok = Arc::new(AtomicBool::new(true));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let event = || {
            crate::audit::AuditEvent::Egress(Box::new(crate::audit::event::EgressRecord {
                phase: "decided",
                client: "127.0.0.1:5000".into(),
                method: "CONNECT".into(),
                target: "example.com:443".into(),
                verdict: "allow",
                reason: "allowed by test".into(),
                upstream: None,
                bytes_up: None,
                bytes_down: None,
                duration_ms: None,
            }))
        };
        let stall = super::STALL.lock().unwrap();
        for n in 1..=3 {
            let seq = rt
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(5), log.record_written(event(), &ok))
                        .await
                })
                .expect("answered while the fsync stalls")
                .unwrap();
            assert_eq!(seq, n);
            assert_eq!(lines(&path), n as usize, "answered before it was written");
        }
        drop(stall);
        log.append_raw("request", json!({ "after": true })).unwrap();
        assert!(ok.load(Ordering::Relaxed));
        assert_eq!(
            crate::audit::verify(&path).unwrap(),
            Verification::Ok { records: 4 }
        );
    }
}
