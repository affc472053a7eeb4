//! The audit file itself: the chain head (next seq, prev hash), reading the tail back,
//! crash recovery, the cross-process file lock, the batched, sealed, fsynced append, the
//! head file and size-based rotation.

use super::event::{AuditEvent, BadTail, Rotation, TornTail};
use super::key::AuditKey;
use super::{line_hash, redact, AuditError, Record, Stamp, GENESIS};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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
    pub(super) key: AuditKey,
    /// Rotate once the file reaches this many bytes (0: never).
    pub(super) rotate_bytes: u64,
    /// The head file (last durable seq and hash, sealed), rewritten after each fsync; the
    /// syncer takes it once the log is open.
    pub(super) head: Option<File>,
    /// The file just rotated away, kept open until its lock is released.
    pub(super) retired: Option<File>,
}

/// The head file of the log at `log`: `<stem>.head` next to it.
pub fn head_path(log: &Path) -> PathBuf {
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audit".into());
    log.with_file_name(format!("{stem}.head"))
}

/// The name a full log is rotated to: `<stem>.<last seq, 12 digits>.jsonl`, so names sort
/// in chain order.
pub fn archive_path(log: &Path, last_seq: u64) -> PathBuf {
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audit".into());
    log.with_file_name(format!("{stem}.{last_seq:012}.jsonl"))
}

/// Where a rotation builds the next file before renaming it into place.
pub fn rotating_path(log: &Path) -> PathBuf {
    let mut s = log.as_os_str().to_owned();
    s.push(".rotating");
    PathBuf::from(s)
}

/// The head line: fixed width, so rewriting it in place leaves no stale bytes.
pub fn head_line(key: &AuditKey, seq: u64, hash: &str) -> String {
    let seq = format!("{seq:020}");
    let tag = key.tag("head", format!("{seq}:{hash}").as_bytes());
    format!("{{\"seq\":\"{seq}\",\"hash\":\"{hash}\",\"mac\":\"{tag}\"}}\n")
}

pub(super) fn open_log(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
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

/// The `torn-tail` record: enough to identify what was cut off.
fn torn_tail(fragment: &[u8]) -> AuditEvent {
    let keep = String::from_utf8_lossy(&fragment[..fragment.len().min(TORN_KEEP)]);
    AuditEvent::TornTail(TornTail {
        bytes: fragment.len(),
        sha256: line_hash(fragment),
        text: keep.into_owned(),
    })
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
        let fd = loop {
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
            // Another process may have rotated the file while we waited: follow the name.
            let ours = self.file.metadata().map_err(|e| self.io(e))?.ino();
            match std::fs::metadata(&self.path) {
                Ok(m) if m.ino() == ours => break fd,
                _ => {
                    #[allow(deprecated)]
                    let _ = nix::fcntl::flock(fd, nix::fcntl::FlockArg::Unlock);
                    self.file = open_log(&self.path).map_err(|e| self.io(e))?;
                    self.len = u64::MAX;
                }
            }
        };
        let out = f(self);
        #[allow(deprecated)]
        let _ = nix::fcntl::flock(fd, nix::fcntl::FlockArg::Unlock);
        self.retired = None;
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
            self.append_locked(&torn_tail(fragment))?;
        }
        if let Some((line, why)) = &found.bad_tail {
            self.append_locked(&AuditEvent::BadTail(BadTail {
                line: *line,
                error: why.clone(),
            }))?;
        }
        Ok(())
    }

    /// Whether the last line is sealed with our key (true for an empty file).
    pub(super) fn last_sealed(&mut self) -> Result<bool, AuditError> {
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        match self.read_tail(len)? {
            (Some(line), _) => Ok(self.key.opens(&line)),
            (None, _) => Ok(true),
        }
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

    /// Appends and fsyncs one of the writer's own records (redacted like any record).
    fn append_locked(&mut self, event: &AuditEvent) -> Result<u64, AuditError> {
        let mut fields = event.fields()?;
        redact(&mut fields);
        let seqs = self.append_batch(vec![(event.kind().to_owned(), fields)])?;
        self.sync()?;
        seqs.first()
            .map(|s| s.seq)
            .ok_or_else(|| AuditError::Write("empty batch".into()))
    }

    /// Appends records (fields already redacted) with one `write`; [`Writer::sync`] makes
    /// them durable, so many concurrent callers share an fsync. Call under
    /// [`Writer::with_lock`] after [`Writer::resync`]. On error the in-memory chain head is
    /// left as it was and the next batch re-reads the tail from the file.
    pub(super) fn append_batch(
        &mut self,
        batch: Vec<(String, Value)>,
    ) -> Result<Vec<Stamp>, AuditError> {
        let ts_ms = now_ms();
        let ts = rfc3339(ts_ms);
        let key = self.key.clone();
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
                mac: None,
            };
            let line = key.seal(serde_json::to_vec(&rec)?);
            prev = line_hash(&line);
            out.extend_from_slice(&line);
            out.push(b'\n');
            seqs.push(Stamp {
                seq,
                hash: prev.clone(),
            });
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

    /// fsyncs what was appended (the lock is not needed: it only orders appends), then
    /// rewrites the head file, if this writer still has it, with the chain tip that is now
    /// durable (not fsynced: a stale head only proves less, and it is never ahead of the log).
    pub(super) fn sync(&mut self) -> Result<(), AuditError> {
        self.file.sync_data().map_err(|e| self.io(e))?;
        if let Some(h) = &self.head {
            let line = head_line(&self.key, self.next_seq - 1, &self.prev);
            if let Err(e) = h.write_all_at(line.as_bytes(), 0) {
                tracing::warn!(error = %e, "audit: head file write failed");
            }
        }
        Ok(())
    }

    /// Rotates when the file reached `rotate_bytes`: the next file is built aside, starting
    /// with a `rotation` record that names the archived file and carries its last seq and
    /// hash (its `prev` is that hash: one chain across files); the full file is renamed to
    /// [`archive_path`] and the new one into place. Call under the lock, after a sync.
    pub(super) fn rotate_if_full(&mut self) -> Result<(), AuditError> {
        if self.rotate_bytes == 0 || self.len < self.rotate_bytes || self.next_seq <= 1 {
            return Ok(());
        }
        // The syncer may not have reached the old file's tail yet: the rotation record
        // names its last hash, so that tail must be durable first.
        self.file.sync_data().map_err(|e| self.io(e))?;
        let last = self.next_seq - 1;
        let archive = archive_path(&self.path, last);
        let next = rotating_path(&self.path);
        let _ = std::fs::remove_file(&next);
        let file = open_log(&next).map_err(|e| self.io(e))?;
        let old = std::mem::replace(&mut self.file, file);
        let old_len = std::mem::replace(&mut self.len, 0);
        let name = archive
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rotation = AuditEvent::Rotation(Rotation {
            previous_file: name,
            previous_last_seq: last,
            previous_last_hash: self.prev.clone(),
            previous_bytes: old_len,
        });
        let placed = self
            .append_locked(&rotation)
            .and_then(|_| std::fs::rename(&self.path, &archive).map_err(|e| self.io(e)))
            .and_then(|()| std::fs::rename(&next, &self.path).map_err(|e| self.io(e)));
        if let Err(e) = placed {
            // Keep writing the old file; the next batch re-reads its tail.
            let _ = std::fs::remove_file(&next);
            if std::fs::metadata(&self.path).is_err() {
                let _ = std::fs::rename(&archive, &self.path);
            }
            self.file = old;
            self.len = u64::MAX;
            return Err(e);
        }
        if let Some(dir) = self.path.parent() {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.retired = Some(old);
        Ok(())
    }
}
