//! Chain verification: walks one log file, or a set of rotated files, and names the first
//! line where the chain breaks. With the key, every line must also carry a valid seal and
//! the chain must reach the head file's seq and hash (so a cut of the newest records shows).

use super::key::AuditKey;
use super::writer::head_path;
use super::{line_hash, AuditError, Record, GENESIS};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The result of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    Ok {
        records: u64,
    },
    /// The first line (1-based) where the chain does not hold.
    Broken {
        line: u64,
        /// What is wrong: `prev` mismatch, bad seq, not JSON, torn line, bad seal.
        what: String,
        expected: String,
        found: String,
    },
}

/// What one file's walk found.
#[derive(Debug, Clone)]
struct FileWalk {
    path: PathBuf,
    records: u64,
    first: Option<(u64, String, Option<String>)>,
    /// (seq, hash) of the last line.
    last: Option<(u64, String)>,
    /// (seq, hash) of every line, only kept when a head must be found.
    hashes: Vec<(u64, String)>,
    broken: Option<Verification>,
}

/// Checks the whole chain of the log at `path` without a key: every line is a record, `seq`
/// counts on by one, and `prev` is the hash of the line before. The first record is either
/// the genesis (seq 1) or a `rotation` record continuing an earlier file.
pub fn verify(path: &Path) -> Result<Verification, AuditError> {
    let w = walk(path, None, false)?;
    Ok(w.broken.unwrap_or(Verification::Ok { records: w.records }))
}

/// [`verify`] over bytes already read.
pub fn verify_bytes(data: &[u8]) -> Verification {
    match walk_reader(Path::new("<bytes>"), data, None, false) {
        Ok(w) => w.broken.unwrap_or(Verification::Ok { records: w.records }),
        // Reading a slice cannot fail.
        Err(e) => broken(0, e.to_string(), "", ""),
    }
}

fn broken(line: u64, what: impl Into<String>, expected: &str, found: &str) -> Verification {
    Verification::Broken {
        line,
        what: what.into(),
        expected: expected.into(),
        found: found.into(),
    }
}

fn walk(path: &Path, key: Option<&AuditKey>, keep: bool) -> Result<FileWalk, AuditError> {
    let io = |source| AuditError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    walk_reader(path, std::io::BufReader::new(file), key, keep).map_err(io)
}

/// Walks the lines of one file: each must be a whole record ([`parse_line`]) that continues
/// the chain ([`Chain::check`]); the first that does not is where the walk stops.
fn walk_reader(
    path: &Path,
    mut r: impl std::io::BufRead,
    key: Option<&AuditKey>,
    keep: bool,
) -> std::io::Result<FileWalk> {
    let mut out = FileWalk {
        path: path.to_owned(),
        records: 0,
        first: None,
        last: None,
        hashes: Vec::new(),
        broken: None,
    };
    let mut chain = Chain {
        prev: GENESIS.to_owned(),
        seq: 0,
    };
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    // Passkeys registered so far: each signed decision is checked against them.
    let mut passkeys = super::assertion::Registry::default();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)? == 0 {
            out.records = line_no;
            return Ok(out);
        }
        line_no += 1;
        let checked = parse_line(&buf).and_then(|(line, rec)| {
            chain.check(line_no, line, &rec, key)?;
            passkeys
                .observe(&rec.kind, &rec.fields)
                .map_err(|e| fail(format!("passkey: {e}"), "a valid passkey record", &rec.kind))?;
            Ok((line, rec))
        });
        let (line, rec) = match checked {
            Ok(ok) => ok,
            Err(Failure {
                what,
                expected,
                found,
            }) => {
                out.broken = Some(broken(line_no, what, &expected, &found));
                return Ok(out);
            }
        };
        chain.seq = rec.seq;
        chain.prev = line_hash(line);
        if line_no == 1 {
            let from = rec
                .fields
                .get("previousFile")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            out.first = Some((rec.seq, rec.prev.clone(), from));
        }
        if keep {
            out.hashes.push((chain.seq, chain.prev.clone()));
        }
        out.last = Some((chain.seq, chain.prev.clone()));
    }
}

/// Why a line breaks the chain (its line number is added by the walk).
pub(super) struct Failure {
    pub(super) what: String,
    expected: String,
    found: String,
}

fn fail(what: impl Into<String>, expected: &str, found: &str) -> Failure {
    Failure {
        what: what.into(),
        expected: expected.into(),
        found: found.into(),
    }
}

/// A complete line (without its `\n`) and the record it holds.
pub(super) fn parse_line(buf: &[u8]) -> Result<(&[u8], Record), Failure> {
    let Some(line) = buf.strip_suffix(b"\n") else {
        return Err(fail(
            "torn line (no newline): a write interrupted by a crash",
            "a complete line",
            &format!("{} bytes", buf.len()),
        ));
    };
    match serde_json::from_slice(line) {
        Ok(rec) => Ok((line, rec)),
        Err(e) => {
            let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
            Err(fail(format!("not a record: {e}"), "a JSON record", &shown))
        }
    }
}

/// The chain so far: the hash of the last line and its seq.
pub(super) struct Chain {
    pub(super) prev: String,
    pub(super) seq: u64,
}

impl Chain {
    /// Whether `rec` (line `line_no`, bytes `line`) continues the chain: a first line that is
    /// not the genesis must be a rotation record naming its `prev` (the chain then starts
    /// there); every record's `prev` is the last line's hash, its seq the next one, and with
    /// a key its seal opens.
    pub(super) fn check(
        &mut self,
        line_no: u64,
        line: &[u8],
        rec: &Record,
        key: Option<&AuditKey>,
    ) -> Result<(), Failure> {
        if line_no == 1 && rec.prev != GENESIS {
            // A continuation: only a rotation record may start a file mid-chain.
            let named = rec.fields.get("previousLastHash").and_then(|v| v.as_str());
            if rec.kind != "rotation" || named != Some(rec.prev.as_str()) {
                return Err(fail(
                    "prev of the first record is not the genesis hash, and it is not a rotation record naming that hash",
                    GENESIS,
                    &rec.prev,
                ));
            }
            self.prev = rec.prev.clone();
            self.seq = rec.seq.saturating_sub(1);
        }
        if rec.prev != self.prev {
            return Err(fail(
                format!("prev is not the SHA-256 of line {}", line_no - 1),
                &self.prev,
                &rec.prev,
            ));
        }
        if rec.seq != self.seq + 1 {
            return Err(fail(
                "seq out of order",
                &(self.seq + 1).to_string(),
                &rec.seq.to_string(),
            ));
        }
        if let Some(k) = key {
            if rec.mac.is_none() || !k.opens(line) {
                return Err(fail(
                    "record not sealed by the key (edited, forged, or written without the key)",
                    "a valid mac",
                    rec.mac.as_deref().unwrap_or("no mac"),
                ));
            }
        }
        Ok(())
    }
}

/// The result of [`verify_set`].
#[derive(Debug, Clone)]
pub struct SetReport {
    pub verification: Verification,
    /// The file the first break is in.
    pub broken_file: Option<PathBuf>,
    /// The key used, if any.
    pub key: Option<PathBuf>,
    /// The head file checked, if any.
    pub head: Option<PathBuf>,
    pub files: usize,
    pub notes: Vec<String>,
}

impl SetReport {
    /// The text `audit verify` prints.
    pub fn render(&self) -> String {
        let mut out = match (&self.verification, &self.broken_file) {
            (Verification::Ok { records }, _) => {
                format!("OK {records} records in {} file(s)", self.files)
            }
            (
                Verification::Broken {
                    line,
                    what,
                    expected,
                    found,
                },
                file,
            ) => format!(
                "BROKEN {}line {line}: {what}\n  expected: {expected}\n  found:    {found}",
                file.as_ref()
                    .map(|f| format!("{} ", f.display()))
                    .unwrap_or_default()
            ),
        };
        let proves = match (&self.key, &self.head, self.is_ok()) {
            (Some(k), _, false) => format!(
                "keyed with {}: the chain does not hold at the break above; what follows it, and whether records were cut off, is not proven",
                k.display()
            ),
            (Some(k), Some(h), true) => format!(
                "keyed with {}: every record is sealed by that key, and the chain reaches the sealed head {} (nothing was deleted, edited, reordered or cut off by anyone without the key)",
                k.display(),
                h.display()
            ),
            (Some(k), None, true) => format!(
                "keyed with {}: every record is sealed by that key (no head file: a cut of the newest records would not show)",
                k.display()
            ),
            (None, _, _) => "NOT keyed (no --key and no key next to the log): this proves only that the files are internally consistent; anyone who can write them can recompute the chain".into(),
        };
        out.push_str(&format!("\n  {proves}"));
        for n in &self.notes {
            out.push_str(&format!("\n  note: {n}"));
        }
        out
    }

    pub fn is_ok(&self) -> bool {
        matches!(self.verification, Verification::Ok { .. })
    }

    /// Whether a sealed head names the newest record (so a cut of the tail would show).
    pub fn is_anchored(&self) -> bool {
        self.is_ok() && self.key.is_some() && self.head.is_some()
    }

    /// [`Self::render`] for an intact chain that no sealed head anchors: a failure, since the
    /// newest records could have been cut off without a trace.
    pub fn render_unanchored(&self) -> String {
        let records = match self.verification {
            Verification::Ok { records } => records,
            Verification::Broken { .. } => return self.render(),
        };
        let rest = self.render();
        let rest = rest.split_once('\n').map_or("", |(_, r)| r);
        format!(
            "UNANCHORED {records} records in {} file(s): no sealed head names the newest record, so records cut off the end would not show; pass --allow-unanchored to accept that\n{rest}",
            self.files
        )
    }
}

/// Verifies a set of log files (one file, or the rotated files of one log in any order) as
/// one chain: each file alone, then each file's first record continuing the previous file's
/// last. With `key`, every record must be sealed, and the head file next to the newest file
/// (if it exists there) must be sealed and name a record of the chain.
pub fn verify_set(files: &[PathBuf], key: Option<&AuditKey>) -> Result<SetReport, AuditError> {
    let mut walks = Vec::new();
    for f in files {
        walks.push(walk(f, key, key.is_some())?);
    }
    walks.sort_by_key(|w| w.first.as_ref().map(|f| f.0).unwrap_or(u64::MAX));
    let mut rep = SetReport {
        verification: Verification::Ok { records: 0 },
        broken_file: None,
        key: key.map(|k| k.path().to_owned()),
        head: None,
        files: files.len(),
        notes: Vec::new(),
    };
    let mut total = 0;
    let mut prev_last: Option<&(u64, String)> = None;
    for (i, w) in walks.iter().enumerate() {
        if let Some(b) = &w.broken {
            rep.verification = b.clone();
            rep.broken_file = Some(w.path.clone());
            return Ok(rep);
        }
        total += w.records;
        let Some((first_seq, first_prev, from)) = &w.first else {
            continue;
        };
        match prev_last {
            Some((seq, hash)) if first_prev != hash || *first_seq != seq + 1 => {
                rep.verification = broken(
                    1,
                    "this file does not continue the previous file of the set (a file is missing, or was replaced)",
                    &format!("seq {} after {hash}", seq + 1),
                    &format!("seq {first_seq} after {first_prev}"),
                );
                rep.broken_file = Some(w.path.clone());
                return Ok(rep);
            }
            None if i == 0 && first_prev != GENESIS => rep.notes.push(format!(
                "the chain starts at seq {first_seq}, continuing {} (not in the set, not checked)",
                from.as_deref().unwrap_or("an earlier file")
            )),
            _ => {}
        }
        prev_last = w.last.as_ref();
    }
    rep.verification = Verification::Ok { records: total };
    if let (Some(k), Some(newest)) = (key, walks.last()) {
        check_head(k, newest, &walks, &mut rep);
    }
    Ok(rep)
}

/// Checks the head file of the newest file of the set, when there is one.
fn check_head(key: &AuditKey, newest: &FileWalk, walks: &[FileWalk], rep: &mut SetReport) {
    let hp = head_path(&newest.path);
    let Ok(text) = std::fs::read_to_string(&hp) else {
        return;
    };
    rep.head = Some(hp.clone());
    #[derive(serde::Deserialize)]
    struct Head {
        seq: String,
        hash: String,
        mac: String,
    }
    let fail = |rep: &mut SetReport, what: String, expected: String, found: String| {
        rep.verification = broken(0, what, &expected, &found);
        rep.broken_file = Some(hp.clone());
    };
    let head: Head = match serde_json::from_str(text.trim()) {
        Ok(h) => h,
        Err(e) => {
            return fail(
                rep,
                format!("head file unreadable: {e}"),
                "a head".into(),
                text,
            )
        }
    };
    if !key.check(
        "head",
        format!("{}:{}", head.seq, head.hash).as_bytes(),
        &head.mac,
    ) {
        return fail(
            rep,
            "head file not sealed by the key".into(),
            "a valid mac".into(),
            head.mac,
        );
    }
    let Ok(seq) = head.seq.parse::<u64>() else {
        return fail(
            rep,
            "head seq is not a number".into(),
            "digits".into(),
            head.seq,
        );
    };
    let last = newest.last.as_ref().map(|l| l.0).unwrap_or(0);
    if seq > last {
        return fail(
            rep,
            format!("the log ends before the head: records after seq {last} were cut off"),
            format!("at least seq {seq}"),
            format!("last seq {last}"),
        );
    }
    let found = walks
        .iter()
        .flat_map(|w| w.hashes.iter())
        .find(|(s, _)| *s == seq);
    match found {
        Some((_, h)) if *h == head.hash => {}
        Some((_, h)) => fail(
            rep,
            format!("record seq {seq} is not the one the head names (replaced)"),
            head.hash,
            h.clone(),
        ),
        None => rep.notes.push(format!(
            "head names seq {seq}, in a file not in the set (not checked)"
        )),
    }
}
