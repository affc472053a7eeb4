//! The audit log: an append-only, hash-chained JSON Lines file of every request, verdict,
//! decision and exec outcome. This module owns the file format, the single writer, secret
//! redaction (in `redact`) and chain verification.
//!
//! Format: one JSON object per line, keys in this order:
//! `{"seq":N,"ts":"RFC 3339","ts_ms":N,"kind":"...","fields":{...},"prev":"hex"}`.
//! `seq` starts at 1 and equals the line number. `prev` is the hex SHA-256 of the previous
//! line's exact bytes without its trailing `\n` (64 zeros for the first record). An append
//! returns only once its record is written and fsynced (`sync_data`).
//!
//! Writers: one writer thread per log in a process, fed by a channel, so callers never
//! interleave; it also turns each [`AuditEvent`] into its fields and redacts them, off the
//! callers' threads. It group-commits: records queued while an fsync runs go out together
//! in one `write` + one `sync_data` (each still acknowledged only once on disk), which
//! keeps the log from capping the guard at one fsync per decision. Detached records
//! ([`AuditLog::record_detached`], for answers that run nothing) are nobody's wait: under
//! steady load the writer collects them once per [`TICK`] instead of being woken for each,
//! writes them, and has them fsynced within [`SYNC_WINDOW`]. They survive a guard crash once
//! written (the page cache has them) and a power loss once synced. Records acknowledged at
//! their write ([`AuditLog::record_written`]) wake the writer at once like a waited-for one,
//! are answered as soon as they are in the file and fsynced right after. The fsync, the head file
//! and the answers belong to a second thread (`syncer`), so a slow disk delays durability,
//! never the write.
//! Between processes (the server and the `inbox` command line) an exclusive `flock` is held
//! around each batch, and when the file grew under another writer the tail is re-read so the
//! chain stays one chain.
//!
//! Crash recovery: an append returns only after its full line is on disk, so a last line
//! without `\n` was never acknowledged. On open such a torn tail is cut off and recorded in a
//! `torn-tail` record (its length, SHA-256 and up to 4 KiB of its text) chained to the last
//! good record, so the chain continues and the loss is itself in the log. A complete last
//! line that is not a record (edited by hand) is kept as evidence; the chain continues after
//! it with a `bad-tail` record, and `verify` reports that line.
//!
//! Keyed: every line is sealed with an HMAC under the audit key (`key`),
//! so recomputing the hash chain after deleting, editing or reordering records no longer
//! passes `audit verify --key`. After each fsync the syncer rewrites `<stem>.head` with the
//! last durable seq and hash, sealed, so cutting the newest records is caught too. Without
//! the key, verify proves only that the file is internally consistent (anyone who can write
//! it can recompute that), and says so.
//!
//! Rotation: at `rotate_bytes` the file is renamed to `<stem>.<last seq>.jsonl` and a new
//! one starts with a `rotation` record naming it, whose `prev` is its last line's hash and
//! whose `seq` continues: one chain across files, which `verify` checks as a set.

pub mod assertion;
pub mod event;
mod key;
mod lookup;
mod redact;
mod reply;
mod syncer;
pub mod tally;
mod verify;
mod writer;

pub use event::AuditEvent;
pub use key::{default_key_path, unseal, AuditKey, KEY_FILE};
pub use lookup::{log_files, lookup, Break, ChainCheck, Found};
pub use redact::{redact, redact_str};
pub use verify::{verify, verify_bytes, verify_set, SetReport, Verification};
pub use writer::{archive_path, head_path};

use reply::Reply;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use syncer::SyncJob;
/// Held by a test, the fsync never returns (a disk that stalls).
#[cfg(test)]
pub(crate) use syncer::STALL as FSYNC_STALL;
use writer::Writer;

/// The `prev` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The audit log's file name inside the state dir.
pub const AUDIT_FILE: &str = "audit.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("audit log {path}: lock: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("audit record could not be encoded: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("audit write failed: {0}")]
    Write(String),
    #[error("audit writer has stopped")]
    Closed,
    #[error("audit key {path}: {why}")]
    Key { path: PathBuf, why: String },
}

/// One record as written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub seq: u64,
    /// RFC 3339, UTC, milliseconds.
    pub ts: String,
    /// Epoch milliseconds.
    pub ts_ms: u64,
    /// [`AuditEvent::kind`]: `request`, `decision`, `pending`, `exec`, `rejection`, `startup`,
    /// `torn-tail`... (older logs and tools may hold others).
    pub kind: String,
    pub fields: Value,
    pub prev: String,
    /// HMAC of the line without this field (see `key`); absent in records written before
    /// the log was keyed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// Where a record landed: its `seq` and the hash of its line (what the next record's `prev`
/// names), so a reference to it elsewhere (a fleet's inbox row) can be checked against the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub seq: u64,
    pub hash: String,
}

/// How to open the log.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// The key file; default `audit.key` next to the log (created if missing).
    pub key_path: Option<PathBuf>,
    /// Rotate at this size in bytes; 0 = never.
    pub rotate_bytes: u64,
}

/// What opening the log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Records in the file after recovery (including any `torn-tail` record written).
    pub records: u64,
    /// Length in bytes of a torn last line that was cut off and recorded, if there was one.
    pub torn_tail_bytes: Option<usize>,
    /// Line number of a last line that is complete but not a record (kept, and recorded in a
    /// `bad-tail` record; `verify` reports it).
    pub bad_tail_line: Option<u64>,
}

/// The hash-chained log. Clone it freely: all clones feed one writer thread, which stops
/// when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct AuditLog {
    tx: mpsc::Sender<Job>,
    /// The writer thread, unparked for records somebody waits for.
    writer: std::thread::Thread,
    path: PathBuf,
}

/// Most records one batch carries.
const MAX_BATCH: usize = 1024;

/// Longest a detached record stays written but not fsynced.
pub const SYNC_WINDOW: Duration = Duration::from_millis(10);

/// Longest a detached record waits in memory, under steady load, before it is written.
pub const TICK: Duration = Duration::from_micros(200);

#[derive(Debug)]
struct Job {
    kind: &'static str,
    body: Body,
    reply: Reply,
}

/// The fields of a record that is not an [`AuditEvent`], built on the writer thread (tests
/// of the writer and tools use these; the guard records only events).
pub type FieldsFn = Box<dyn FnOnce() -> Value + Send>;

/// What a job carries: turned into the record's fields on the writer thread, so the
/// caller's (event-loop) thread does not pay for turning typed values into JSON.
enum Body {
    Event(AuditEvent),
    Raw(Value),
    RawLater(FieldsFn),
}

impl Body {
    fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Body::Event(e) => e.fields(),
            Body::Raw(v) => Ok(v),
            Body::RawLater(f) => Ok(f()),
        }
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Event(e) => e.fmt(f),
            Body::Raw(v) => v.fmt(f),
            Body::RawLater(_) => f.write_str("<built on the writer thread>"),
        }
    }
}

/// Hex SHA-256 of a line's bytes (without its `\n`).
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

impl AuditLog {
    /// Opens the log at `path` with the default key and no rotation.
    pub fn open(path: &Path) -> Result<(AuditLog, OpenReport), AuditError> {
        Self::open_with(path, &AuditOptions::default())
    }

    /// Opens (creating, mode 0600) the log at `path`, resumes the chain from its last
    /// record (recovering a torn or bad tail, see the module doc) and starts its writer. A
    /// log whose last record is not sealed (written before keying) is rotated at once, so
    /// the keyed chain starts in a file of its own.
    pub fn open_with(
        path: &Path,
        opts: &AuditOptions,
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        let io = |source| AuditError::Io {
            path: path.to_owned(),
            source,
        };
        let key_path = opts
            .key_path
            .clone()
            .unwrap_or_else(|| default_key_path(path));
        let key = AuditKey::load_or_create(&key_path)?;
        // A rotation interrupted between its two renames left the next file aside.
        let aside = writer::rotating_path(path);
        if !path.exists() && aside.exists() {
            std::fs::rename(&aside, path).map_err(io)?;
        }
        let file = writer::open_log(path).map_err(io)?;
        let head = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(head_path(path))
            .ok();
        let mut w = Writer {
            path: path.to_owned(),
            file,
            len: 0,
            next_seq: 1,
            prev: GENESIS.to_owned(),
            key,
            rotate_bytes: opts.rotate_bytes,
            head,
            retired: None,
        };
        let found = w.with_lock(|w| {
            let found = w.resync(true)?;
            w.record_recovery(&found)?;
            if w.len > 0 && !w.last_sealed()? {
                let keep = std::mem::replace(&mut w.rotate_bytes, 1);
                let r = w.rotate_if_full();
                w.rotate_bytes = keep;
                r?;
            }
            Ok(found)
        })?;
        let report = OpenReport {
            records: w.next_seq - 1,
            torn_tail_bytes: found.torn.map(|f| f.len()),
            bad_tail_line: found.bad_tail.map(|(line, _)| line),
        };
        // From here on the syncer alone rewrites the head, so it never goes backwards.
        let syncer = syncer::spawn(w.head.take()).map_err(io)?;
        let (tx, rx) = mpsc::channel();
        let writer = std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || run_writer(w, rx, syncer))
            .map_err(io)?
            .thread()
            .clone();
        Ok((
            AuditLog {
                tx,
                writer,
                path: path.to_owned(),
            },
            report,
        ))
    }

    /// Appends one event (redacted) and returns its `seq` once it is on disk. Blocks until
    /// then: from async code use [`AuditLog::record`].
    pub fn append(&self, event: AuditEvent) -> Result<u64, AuditError> {
        self.append_body(event.kind(), Body::Event(event))
            .map(|s| s.seq)
    }

    /// [`AuditLog::append`] that also returns the hash of the record's line.
    pub fn append_stamped(&self, event: AuditEvent) -> Result<Stamp, AuditError> {
        self.append_body(event.kind(), Body::Event(event))
    }

    /// [`AuditLog::append`] for async callers: waits for the fsync without blocking a
    /// runtime thread.
    pub async fn record(&self, event: AuditEvent) -> Result<u64, AuditError> {
        self.record_body(event.kind(), Body::Event(event))
            .await
            .map(|s| s.seq)
    }

    /// [`AuditLog::record`] answered once the record is written rather than fsynced: the
    /// fsync follows at once, grouped with whatever else is queued, and a failure of it
    /// clears `ok` (the caller then allows nothing more: fail closed). For decisions whose
    /// caller cannot wait for a slow disk's fsync before acting (the egress proxy's
    /// connections): a crash of the process loses none of them, a crash of the machine only
    /// those of the fsync under way.
    pub async fn record_written(
        &self,
        event: AuditEvent,
        ok: &Arc<AtomicBool>,
    ) -> Result<u64, AuditError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(
            event.kind(),
            Body::Event(event),
            Reply::Written(tx, Arc::clone(ok)),
        )?;
        self.writer.unpark();
        rx.await.map_err(|_| AuditError::Closed)?.map(|s| s.seq)
    }

    /// Queues an event without waiting: serialised with the next batch on the writer thread,
    /// fsynced within [`SYNC_WINDOW`]. If writing or syncing it fails, `ok` is cleared (the
    /// caller then refuses to allow anything: fail closed); a closed log clears it at once.
    pub fn record_detached(&self, event: AuditEvent, ok: &Arc<AtomicBool>) {
        self.detach_body(event.kind(), Body::Event(event), ok);
    }

    /// [`AuditLog::append`] of a record that is not an [`AuditEvent`] (tests of the writer,
    /// tools). `fields` are redacted like an event's.
    pub fn append_raw(&self, kind: &'static str, fields: Value) -> Result<u64, AuditError> {
        self.append_body(kind, Body::Raw(fields)).map(|s| s.seq)
    }

    /// [`AuditLog::record`] of a record that is not an [`AuditEvent`].
    pub async fn record_raw(&self, kind: &'static str, fields: Value) -> Result<u64, AuditError> {
        self.record_body(kind, Body::Raw(fields))
            .await
            .map(|s| s.seq)
    }

    /// [`AuditLog::record_detached`] of a record that is not an [`AuditEvent`], its fields
    /// built on the writer thread.
    pub fn record_detached_raw(&self, kind: &'static str, fields: FieldsFn, ok: &Arc<AtomicBool>) {
        self.detach_body(kind, Body::RawLater(fields), ok);
    }

    fn append_body(&self, kind: &'static str, body: Body) -> Result<Stamp, AuditError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(kind, body, Reply::Blocking(tx))?;
        self.writer.unpark();
        rx.recv().map_err(|_| AuditError::Closed)?
    }

    async fn record_body(&self, kind: &'static str, body: Body) -> Result<Stamp, AuditError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(kind, body, Reply::Async(tx))?;
        self.writer.unpark();
        rx.await.map_err(|_| AuditError::Closed)?
    }

    fn detach_body(&self, kind: &'static str, body: Body, ok: &Arc<AtomicBool>) {
        if self
            .submit(kind, body, Reply::Detached(Arc::clone(ok)))
            .is_err()
        {
            ok.store(false, Ordering::Relaxed);
        }
    }

    fn submit(&self, kind: &'static str, body: Body, reply: Reply) -> Result<(), AuditError> {
        self.tx
            .send(Job { kind, body, reply })
            .map_err(|_| AuditError::Closed)
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Replies whose records are written but not yet handed to the syncer.
#[derive(Default)]
struct Unsynced {
    replies: Vec<(Reply, Stamp)>,
    since: Option<Instant>,
}

impl Unsynced {
    /// Hands what was written to the syncer (which fsyncs it and answers everyone), then
    /// rotates a full file.
    fn sync(&mut self, w: &mut Writer, syncer: &mpsc::Sender<SyncJob>) {
        self.since = None;
        let replies = std::mem::take(&mut self.replies);
        hand_over(w, syncer, replies);
        if w.rotate_bytes > 0 && w.len >= w.rotate_bytes && w.len != u64::MAX {
            let before = w.next_seq;
            let r = w.with_lock(|w| {
                let found = w.resync(false)?;
                w.record_recovery(&found)?;
                w.rotate_if_full()
            });
            match r {
                Err(e) => {
                    tracing::error!(error = %e, "audit: rotation failed; still writing the full file")
                }
                // The rotation record is durable already; this moves the head onto it.
                Ok(()) if w.next_seq != before => hand_over(w, syncer, Vec::new()),
                Ok(()) => {}
            }
        }
    }
}

/// Sends the records written so far to the syncer. Without a handle for it (descriptors
/// exhausted) or a syncer, fsyncs here instead: slower, never skipped.
fn hand_over(w: &mut Writer, syncer: &mpsc::Sender<SyncJob>, replies: Vec<(Reply, Stamp)>) {
    let head = writer::head_line(&w.key, w.next_seq.saturating_sub(1), &w.prev);
    let job = match w.file.try_clone() {
        Ok(file) => SyncJob {
            file,
            head,
            replies,
        },
        Err(e) => {
            tracing::warn!(error = %e, "audit: no handle for the syncer; fsyncing inline");
            return answer(w.sync(), replies);
        }
    };
    if let Err(mpsc::SendError(job)) = syncer.send(job) {
        answer(w.sync(), job.replies);
    }
}

fn answer(res: Result<(), AuditError>, replies: Vec<(Reply, Stamp)>) {
    if let Err(e) = &res {
        tracing::error!(error = %e, "audit: fsync failed");
    }
    for (reply, stamp) in replies {
        reply.send(match &res {
            Ok(()) => Ok(stamp),
            Err(e) => Err(AuditError::Write(e.to_string())),
        });
    }
}

/// A batch ready to write: its records (fields serialised and redacted), their callers, and
/// whether any caller waits.
struct Batch {
    records: Vec<(String, Value)>,
    replies: Vec<Reply>,
    waited: bool,
}

/// Encodes `jobs` on the writer thread; a job whose fields cannot be encoded is answered at
/// once. None when nothing is left to write.
fn encode(jobs: Vec<Job>) -> Option<Batch> {
    let mut replies = Vec::with_capacity(jobs.len());
    let mut waited = false;
    let mut batch: Vec<(String, Value)> = Vec::with_capacity(jobs.len());
    for j in jobs {
        waited |= !matches!(j.reply, Reply::Detached(_));
        match j.body.into_value() {
            Ok(mut fields) => {
                redact(&mut fields);
                replies.push(j.reply);
                batch.push((j.kind.to_owned(), fields));
            }
            // Not written, and its caller learns so (a detached one clears `ok`).
            Err(e) => j.reply.send(Err(AuditError::Encode(e))),
        }
    }
    (!batch.is_empty()).then_some(Batch {
        records: batch,
        replies,
        waited,
    })
}

/// The writer thread: takes what is queued (up to [`MAX_BATCH`]), redacts it, writes it as
/// one batch and hands it to the syncer, which fsyncs it and answers each caller; a batch of
/// detached records is handed over within [`SYNC_WINDOW`] (or with the next waited-for
/// record). Ends, after a last hand-over, when every [`AuditLog`] clone is gone.
fn run_writer(mut w: Writer, rx: mpsc::Receiver<Job>, syncer: mpsc::Sender<SyncJob>) {
    let mut unsynced = Unsynced::default();
    // True while detached records keep arriving: then the writer takes them once per TICK
    // instead of being woken for each (a waited-for record unparks it at once).
    let mut ticking = false;
    loop {
        let first = if ticking {
            std::thread::park_timeout(TICK);
            match rx.try_recv() {
                Ok(j) => j,
                Err(mpsc::TryRecvError::Disconnected) => break,
                Err(mpsc::TryRecvError::Empty) => {
                    ticking = false;
                    if unsynced.since.is_some_and(|t| t.elapsed() >= SYNC_WINDOW) {
                        unsynced.sync(&mut w, &syncer);
                    }
                    continue;
                }
            }
        } else {
            let got = match unsynced.since {
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                Some(t) => rx.recv_timeout(SYNC_WINDOW.saturating_sub(t.elapsed())),
            };
            match got {
                Ok(j) => j,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    unsynced.sync(&mut w, &syncer);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let Some(Batch {
            records,
            replies,
            waited,
        }) = encode(jobs)
        else {
            continue;
        };
        let res = w.with_lock(|w| {
            let found = w.resync(false)?;
            w.record_recovery(&found)?;
            w.append_batch(records)
        });
        match res {
            Ok(seqs) => {
                let written = replies
                    .into_iter()
                    .zip(seqs)
                    .map(|(r, s)| (r.written(&s), s));
                unsynced.replies.extend(written);
                let since = *unsynced.since.get_or_insert_with(Instant::now);
                if waited || since.elapsed() >= SYNC_WINDOW {
                    unsynced.sync(&mut w, &syncer);
                }
                ticking = !waited;
            }
            Err(e) => {
                tracing::error!(error = %e, "audit: append failed");
                let msg = e.to_string();
                for reply in replies {
                    reply.send(Err(AuditError::Write(msg.clone())));
                }
            }
        }
    }
    if unsynced.since.is_some() {
        unsynced.sync(&mut w, &syncer);
    }
}
