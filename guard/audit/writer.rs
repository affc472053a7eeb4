//! The audit file itself: the chain head (next seq, prev hash), reading the tail back,
//! crash recovery, the cross-process file lock and the batched, fsynced append.

use super::{line_hash, redact, AuditError, Record, GENESIS};
use serde_json::Value;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// How much of a torn tail is kept, as text, in the `torn-tail` record.
const TORN_KEEP: usize = 4096;

/// The last complete line (without `\n`) and the torn bytes after it, if any.
type Tail = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What re-reading the tail found.
#[derive(Debug, Default)]
pub(super) struct Recovery {
    pub(super) torn: Option<Vec<u8>>,
    /// (line number, parse error) of a last line that is not a record.
    pub(super) bad_tail: Option<(u64, String)>,
}

#[derive(Debug)]
pub(super) struct Writer {
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// File length after our last append; if the file is longer, another process appended.
    pub(super) len: u64,
    pub(super) next_seq: u64,
    pub(super) prev: String,
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

impl Writer {
    pub(super) fn io(&self, source: std::io::Error) -> AuditError {
        AuditError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Runs `f` holding an exclusive `flock` on the file (other processes' appends wait).
    pub(super) fn with_lock<T>(
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
    pub(super) fn resync(&mut self, recover: bool) -> Result<Recovery, AuditError> {
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
    pub(super) fn record_recovery(&mut self, found: &Recovery) -> Result<(), AuditError> {
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
        let seqs = self.append_batch(vec![(kind.to_owned(), fields)])?;
        self.sync()?;
        seqs.first()
            .copied()
            .ok_or_else(|| AuditError::Write("empty batch".into()))
    }

    /// Appends records (fields already redacted) with one `write`; [`Writer::sync`] makes
    /// them durable, so many concurrent callers share an fsync. Call under
    /// [`Writer::with_lock`] after [`Writer::resync`]. On error the in-memory chain head is
    /// left as it was and the next batch re-reads the tail from the file.
    pub(super) fn append_batch(
        &mut self,
        batch: Vec<(String, Value)>,
    ) -> Result<Vec<u64>, AuditError> {
        let ts_ms = now_ms();
        let ts = rfc3339(ts_ms);
        let (mut seq, mut prev) = (self.next_seq, self.prev.clone());
        let mut out = Vec::new();
        let mut seqs = Vec::with_capacity(batch.len());
        for (kind, fields) in batch {
            let rec = Record {
                seq,
                ts: ts.clone(),
                ts_ms,
                kind,
                fields,
                prev,
            };
            let line = serde_json::to_vec(&rec)?;
            prev = line_hash(&line);
            out.extend_from_slice(&line);
            out.push(b'\n');
            seqs.push(seq);
            seq += 1;
        }
        if let Err(e) = self.file.write_all(&out) {
            self.len = u64::MAX;
            return Err(self.io(e));
        }
        self.len += out.len() as u64;
        self.next_seq = seq;
        self.prev = prev;
        Ok(seqs)
    }

    /// fsyncs what was appended (the lock is not needed: it only orders appends).
    pub(super) fn sync(&mut self) -> Result<(), AuditError> {
        self.file.sync_data().map_err(|e| self.io(e))
    }
}
