//! The audit log: an append-only, hash-chained JSON Lines file of every request, verdict,
//! decision and exec outcome. This module owns the file format, the single writer, secret
//! redaction (in `redact`) and chain verification.
//!
//! Format: one JSON object per line, keys in this order:
//! `{"seq":N,"ts":"RFC 3339","ts_ms":N,"kind":"...","fields":{...},"prev":"hex"}`.
//! `seq` starts at 1 and equals the line number. `prev` is the hex SHA-256 of the previous
//! line's exact bytes without its trailing `\n` (64 zeros for the first record). Every append
//! is written as one `write` of the whole line and fsynced (`sync_data`) before it returns.
//!
//! Writers: one per process (a mutex), and between processes (the server and the `inbox`
//! command line) an exclusive `flock` on the file around each append; when the file grew
//! under another writer the tail is re-read so the chain stays one chain.
//!
//! Crash recovery: an append returns only after its full line is on disk, so a last line
//! without `\n` was never acknowledged. On open such a torn tail is cut off and recorded in a
//! `torn-tail` record (its length, SHA-256 and up to 4 KiB of its text) chained to the last
//! good record, so the chain continues and the loss is itself in the log.

mod redact;

pub use redact::{redact, redact_str};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The `prev` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The audit log's file name inside the state dir.
pub const AUDIT_FILE: &str = "audit.jsonl";

/// How much of a torn tail is kept, as text, in the `torn-tail` record.
const TORN_KEEP: usize = 4096;

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
    #[error("audit log {path}: last record (line {line}) is not a valid record: {why}")]
    BadTail {
        path: PathBuf,
        line: u64,
        why: String,
    },
    #[error("audit record could not be encoded: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("audit writer poisoned by a panic")]
    Poisoned,
    #[error("audit writer task failed: {0}")]
    Join(String),
}

/// One record as written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub seq: u64,
    /// RFC 3339, UTC, milliseconds.
    pub ts: String,
    /// Epoch milliseconds.
    pub ts_ms: u64,
    /// `request`, `verdict`, `decision`, `pending`, `exec`, `rejection`, `startup`, `torn-tail`...
    pub kind: String,
    pub fields: Value,
    pub prev: String,
}

/// What opening the log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Records in the file after recovery (including any `torn-tail` record written).
    pub records: u64,
    /// Length in bytes of a torn last line that was cut off and recorded, if there was one.
    pub torn_tail_bytes: Option<usize>,
}

/// The result of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    Ok {
        records: u64,
    },
    /// The first line (1-based) where the chain does not hold.
    Broken {
        line: u64,
        /// What is wrong: `prev` mismatch, bad seq, not JSON, torn line.
        what: String,
        expected: String,
        found: String,
    },
}

/// The hash-chained log. Clone it freely: all clones share one writer.
#[derive(Clone, Debug)]
pub struct AuditLog {
    inner: Arc<Mutex<Writer>>,
}

#[derive(Debug)]
struct Writer {
    path: PathBuf,
    file: File,
    /// File length after our last append; if the file is longer, another process appended.
    len: u64,
    next_seq: u64,
    prev: String,
}

/// Hex SHA-256 of a line's bytes (without its `\n`).
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn rfc3339(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// The fields of a `torn-tail` record: enough to identify what was cut off.
fn torn_fields(fragment: &[u8]) -> Value {
    let keep = String::from_utf8_lossy(&fragment[..fragment.len().min(TORN_KEEP)]);
    let mut fields = serde_json::json!({
        "bytes": fragment.len(),
        "sha256": line_hash(fragment),
        "text": keep,
    });
    redact(&mut fields);
    fields
}

impl AuditLog {
    /// Opens (creating, mode 0600) the log at `path` and resumes the chain from its last
    /// record; a torn last line is cut off and recorded (see the module doc).
    pub fn open(path: &Path) -> Result<(AuditLog, OpenReport), AuditError> {
        let io = |source| AuditError::Io {
            path: path.to_owned(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        let mut w = Writer {
            path: path.to_owned(),
            file,
            len: 0,
            next_seq: 1,
            prev: GENESIS.to_owned(),
        };
        let torn = w.with_lock(|w| {
            let torn = w.resync(true)?;
            if let Some(fragment) = &torn {
                w.append_locked("torn-tail", torn_fields(fragment))?;
            }
            Ok(torn)
        })?;
        let report = OpenReport {
            records: w.next_seq - 1,
            torn_tail_bytes: torn.map(|f| f.len()),
        };
        Ok((
            AuditLog {
                inner: Arc::new(Mutex::new(w)),
            },
            report,
        ))
    }

    /// Appends one record (redacting `fields` first) and returns its `seq` once it is on
    /// disk. Blocks for the fsync: from async code use [`AuditLog::record`].
    pub fn append(&self, kind: &str, mut fields: Value) -> Result<u64, AuditError> {
        redact(&mut fields);
        let mut w = self.inner.lock().map_err(|_| AuditError::Poisoned)?;
        w.with_lock(|w| {
            if let Some(fragment) = w.resync(false)? {
                w.append_locked("torn-tail", torn_fields(&fragment))?;
            }
            w.append_locked(kind, fields)
        })
    }

    /// [`AuditLog::append`] on the blocking pool, for async callers.
    pub async fn record(&self, kind: &str, fields: Value) -> Result<u64, AuditError> {
        let this = self.clone();
        let kind = kind.to_owned();
        tokio::task::spawn_blocking(move || this.append(&kind, fields))
            .await
            .map_err(|e| AuditError::Join(e.to_string()))?
    }

    /// The log's path.
    pub fn path(&self) -> Result<PathBuf, AuditError> {
        Ok(self
            .inner
            .lock()
            .map_err(|_| AuditError::Poisoned)?
            .path
            .clone())
    }
}

impl Writer {
    fn io(&self, source: std::io::Error) -> AuditError {
        AuditError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Runs `f` holding an exclusive `flock` on the file (other processes' appends wait).
    fn with_lock<T>(
        &mut self,
        f: impl FnOnce(&mut Writer) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        use std::os::fd::AsRawFd;
        let fd = self.file.as_raw_fd();
        // flock(2) through nix's plain call: the lock belongs to the open file description
        // we keep, and is released by the unlock below or when the file closes.
        #[allow(deprecated)]
        nix::fcntl::flock(fd, nix::fcntl::FlockArg::LockExclusive).map_err(|source| {
            AuditError::Lock {
                path: self.path.clone(),
                source,
            }
        })?;
        let out = f(self);
        #[allow(deprecated)]
        let _ = nix::fcntl::flock(fd, nix::fcntl::FlockArg::Unlock);
        out
    }

    /// Re-reads the tail when the file is not the length we last left it (or always, when
    /// `recover`). A torn last line (only possible after a writer crashed, since appends hold
    /// the lock) is cut off the file and returned so the caller records it.
    fn resync(&mut self, recover: bool) -> Result<Option<Vec<u8>>, AuditError> {
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        if len == self.len && !recover {
            return Ok(None);
        }
        let (tail, torn) = self.read_tail(len)?;
        if let Some(fragment) = &torn {
            let good = len - fragment.len() as u64;
            self.file.set_len(good).map_err(|e| self.io(e))?;
            self.file.sync_data().map_err(|e| self.io(e))?;
            self.len = good;
        } else {
            self.len = len;
        }
        match tail {
            None => {
                self.next_seq = 1;
                self.prev = GENESIS.to_owned();
            }
            Some((line_no, bytes)) => {
                let rec: Record =
                    serde_json::from_slice(&bytes).map_err(|e| AuditError::BadTail {
                        path: self.path.clone(),
                        line: line_no,
                        why: e.to_string(),
                    })?;
                self.next_seq = rec.seq + 1;
                self.prev = line_hash(&bytes);
            }
        }
        Ok(torn)
    }

    /// Reads the last complete line (with its 1-based number, from its `seq`) and any torn
    /// bytes after it. Reads backwards in chunks so opening a large log stays cheap.
    #[allow(clippy::type_complexity)]
    fn read_tail(
        &mut self,
        len: u64,
    ) -> Result<(Option<(u64, Vec<u8>)>, Option<Vec<u8>>), AuditError> {
        let mut buf: Vec<u8> = Vec::new();
        let mut start = len;
        let chunk = 64 * 1024u64;
        // Read until the buffer holds the last complete line and the bytes after it.
        loop {
            let from = start.saturating_sub(chunk);
            let mut part = vec![0u8; (start - from) as usize];
            self.file
                .seek(SeekFrom::Start(from))
                .map_err(|e| self.io(e))?;
            self.file.read_exact(&mut part).map_err(|e| self.io(e))?;
            part.extend_from_slice(&buf);
            buf = part;
            start = from;
            let last_nl = buf.iter().rposition(|&b| b == b'\n');
            if let Some(nl) = last_nl {
                let before = &buf[..nl];
                if before.iter().rposition(|&b| b == b'\n').is_some() || start == 0 {
                    break;
                }
            }
            if start == 0 {
                break;
            }
        }
        let Some(nl) = buf.iter().rposition(|&b| b == b'\n') else {
            // No complete line at all: everything is a torn fragment (or the file is empty).
            return Ok((None, (!buf.is_empty()).then_some(buf)));
        };
        let torn = (nl + 1 < buf.len()).then(|| buf[nl + 1..].to_vec());
        let line_start = buf[..nl]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let line = buf[line_start..nl].to_vec();
        let line_no = serde_json::from_slice::<Record>(&line)
            .map(|r| r.seq)
            .unwrap_or(0);
        Ok((Some((line_no, line)), torn))
    }

    fn append_locked(&mut self, kind: &str, fields: Value) -> Result<u64, AuditError> {
        let ts_ms = now_ms();
        let rec = Record {
            seq: self.next_seq,
            ts: rfc3339(ts_ms),
            ts_ms,
            kind: kind.to_owned(),
            fields,
            prev: self.prev.clone(),
        };
        let line = serde_json::to_vec(&rec)?;
        let mut out = Vec::with_capacity(line.len() + 1);
        out.extend_from_slice(&line);
        out.push(b'\n');
        self.file.write_all(&out).map_err(|e| self.io(e))?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        self.len += out.len() as u64;
        self.prev = line_hash(&line);
        self.next_seq += 1;
        Ok(rec.seq)
    }
}

/// Checks the whole chain of the log at `path`: every line is a record, `seq` counts from 1,
/// and `prev` is the hash of the line before. Returns the first break.
pub fn verify(path: &Path) -> Result<Verification, AuditError> {
    let data = std::fs::read(path).map_err(|source| AuditError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(verify_bytes(&data))
}

/// [`verify`] over bytes already read.
pub fn verify_bytes(data: &[u8]) -> Verification {
    let mut prev = GENESIS.to_owned();
    let mut line_no = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        line_no += 1;
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            return Verification::Broken {
                line: line_no,
                what: "torn line (no newline): a write interrupted by a crash".into(),
                expected: "a complete line".into(),
                found: format!("{} bytes", rest.len()),
            };
        };
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        let rec: Record = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                return Verification::Broken {
                    line: line_no,
                    what: format!("not a record: {e}"),
                    expected: "a JSON record".into(),
                    found: String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned(),
                }
            }
        };
        if rec.prev != prev {
            return Verification::Broken {
                line: line_no,
                what: if line_no == 1 {
                    "prev of the first record is not the genesis hash".into()
                } else {
                    format!("prev is not the SHA-256 of line {}", line_no - 1)
                },
                expected: prev,
                found: rec.prev,
            };
        }
        if rec.seq != line_no {
            return Verification::Broken {
                line: line_no,
                what: "seq out of order".into(),
                expected: line_no.to_string(),
                found: rec.seq.to_string(),
            };
        }
        prev = line_hash(line);
    }
    Verification::Ok { records: line_no }
}
