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
//! good record, so the chain continues and the loss is itself in the log. A complete last
//! line that is not a record (edited by hand) is kept as evidence; the chain continues after
//! it with a `bad-tail` record, and `verify` reports that line.
//!
//! Limits: a hash chain proves order and completeness up to its last record; an edit of the
//! very last line, or a cut of the newest records, leaves a valid shorter chain. Ship the log
//! (or its latest `prev`) somewhere the agent cannot write to close that gap.

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
    /// Line number of a last line that is complete but not a record (kept, and recorded in a
    /// `bad-tail` record; `verify` reports it).
    pub bad_tail_line: Option<u64>,
}

/// The last complete line (without `\n`) and the torn bytes after it, if any.
type Tail = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What re-reading the tail found.
#[derive(Debug, Default)]
struct Recovery {
    torn: Option<Vec<u8>>,
    /// (line number, parse error) of a last line that is not a record.
    bad_tail: Option<(u64, String)>,
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
        let found = w.with_lock(|w| {
            let found = w.resync(true)?;
            w.record_recovery(&found)?;
            Ok(found)
        })?;
        let report = OpenReport {
            records: w.next_seq - 1,
            torn_tail_bytes: found.torn.map(|f| f.len()),
            bad_tail_line: found.bad_tail.map(|(line, _)| line),
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
            let found = w.resync(false)?;
            w.record_recovery(&found)?;
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
    /// `recover`), cutting off a torn last line (only possible after a writer crashed, since
    /// appends hold the lock). Returns what was found so the caller records it.
    fn resync(&mut self, recover: bool) -> Result<Recovery, AuditError> {
        let mut found = Recovery::default();
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        if len == self.len && !recover {
            return Ok(found);
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
        found.torn = torn;
        match tail {
            None => {
                self.next_seq = 1;
                self.prev = GENESIS.to_owned();
            }
            Some(bytes) => {
                match serde_json::from_slice::<Record>(&bytes) {
                    Ok(rec) => self.next_seq = rec.seq + 1,
                    Err(e) => {
                        // Not a record (edited by hand?): keep it as evidence, chain after it,
                        // and number from the line count. `verify` reports the bad line.
                        let lines = self.count_lines()?;
                        self.next_seq = lines + 1;
                        found.bad_tail = Some((lines, e.to_string()));
                    }
                }
                self.prev = line_hash(&bytes);
            }
        }
        Ok(found)
    }

    /// Records what [`Writer::resync`] found, chained like any record.
    fn record_recovery(&mut self, found: &Recovery) -> Result<(), AuditError> {
        if let Some(fragment) = &found.torn {
            self.append_locked("torn-tail", torn_fields(fragment))?;
        }
        if let Some((line, why)) = &found.bad_tail {
            let fields = serde_json::json!({ "line": line, "error": why });
            self.append_locked("bad-tail", fields)?;
        }
        Ok(())
    }

    fn count_lines(&mut self) -> Result<u64, AuditError> {
        self.file.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        let mut n = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let got = self.file.read(&mut buf).map_err(|e| self.io(e))?;
            if got == 0 {
                return Ok(n);
            }
            n += buf[..got].iter().filter(|&&b| b == b'\n').count() as u64;
        }
    }

    /// Reads the last complete line and any torn bytes after it. Reads backwards in chunks
    /// so opening a large log stays cheap.
    fn read_tail(&mut self, len: u64) -> Result<Tail, AuditError> {
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
            if start == 0 {
                break;
            }
            if let Some(nl) = buf.iter().rposition(|&b| b == b'\n') {
                if buf[..nl].contains(&b'\n') {
                    break;
                }
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
        Ok((Some(buf[line_start..nl].to_vec()), torn))
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
/// and `prev` is the hash of the line before. Returns the first break. Streams the file.
pub fn verify(path: &Path) -> Result<Verification, AuditError> {
    let io = |source| AuditError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    verify_reader(std::io::BufReader::new(file)).map_err(io)
}

/// [`verify`] over bytes already read.
pub fn verify_bytes(data: &[u8]) -> Verification {
    match verify_reader(data) {
        Ok(v) => v,
        // Reading a slice cannot fail.
        Err(e) => Verification::Broken {
            line: 0,
            what: e.to_string(),
            expected: String::new(),
            found: String::new(),
        },
    }
}

fn verify_reader(mut r: impl std::io::BufRead) -> std::io::Result<Verification> {
    let mut prev = GENESIS.to_owned();
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)? == 0 {
            return Ok(Verification::Ok { records: line_no });
        }
        line_no += 1;
        let Some(line) = buf.strip_suffix(b"\n") else {
            return Ok(Verification::Broken {
                line: line_no,
                what: "torn line (no newline): a write interrupted by a crash".into(),
                expected: "a complete line".into(),
                found: format!("{} bytes", buf.len()),
            });
        };
        let rec: Record = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Verification::Broken {
                    line: line_no,
                    what: format!("not a record: {e}"),
                    expected: "a JSON record".into(),
                    found: String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned(),
                })
            }
        };
        if rec.prev != prev {
            return Ok(Verification::Broken {
                line: line_no,
                what: if line_no == 1 {
                    "prev of the first record is not the genesis hash".into()
                } else {
                    format!("prev is not the SHA-256 of line {}", line_no - 1)
                },
                expected: prev,
                found: rec.prev,
            });
        }
        if rec.seq != line_no {
            return Ok(Verification::Broken {
                line: line_no,
                what: "seq out of order".into(),
                expected: line_no.to_string(),
                found: rec.seq.to_string(),
            });
        }
        prev = line_hash(line);
    }
}
