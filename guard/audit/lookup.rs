//! One record found by `seq` in a log and its rotated files, with what the chain says about
//! it: whether every line from the chain's start up to it holds (and the next line names its
//! hash, which is what vouches for the line itself), and whether the sealed head lies at or
//! after it with the chain intact up to there (so it was neither edited nor cut by anyone
//! without the key). A fleet's inbox row names a decision's record by seq and hash; this is
//! how the deciding guard shows what its log holds there (`GET /api/audit/{seq}`,
//! `sanctum-guard audit show`).

use super::key::AuditKey;
use super::verify::{parse_line, Chain};
use super::writer::head_path;
use super::{line_hash, AuditError, GENESIS};
use serde::Serialize;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// A record as the log holds it.
#[derive(Debug, Clone)]
pub struct Found {
    /// The line exactly as logged (without its `\n`): already redacted when written.
    pub line: String,
    /// That line parsed.
    pub record: serde_json::Value,
    /// Hex SHA-256 of the line: the next record's `prev`, and what a fleet row names.
    pub hash: String,
    /// The file it is in.
    pub file: PathBuf,
    pub chain: ChainCheck,
}

/// What the chain says about one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainCheck {
    /// Every line from the chain's first record up to this one holds (seq, `prev`, and with
    /// the key its seal), and the next record, if any, names this line's hash.
    pub intact: bool,
    /// The seq the checked chain starts at: 1, or a rotation record continuing an archive
    /// that is no longer there.
    pub from: u64,
    /// Seals were checked with the audit key; without it the chain proves only that the
    /// files agree with themselves (whoever can write them can recompute it).
    pub keyed: bool,
    /// The sealed head names this record or a later one, and the chain holds up to it.
    pub anchored: bool,
    /// The first break found, when there is one.
    pub broken: Option<Break>,
}

/// Where the chain first fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    /// The file's name (not its path).
    pub file: String,
    /// 1-based line in that file.
    pub line: u64,
    pub what: String,
}

/// The log at `log` and its rotated files (`<stem>.<last seq>.jsonl` beside it), in chain
/// order: the archives by name (their names sort by seq), the live file last.
pub fn log_files(log: &Path) -> Result<Vec<PathBuf>, AuditError> {
    let dir = log.parent().unwrap_or_else(|| Path::new("."));
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rd = std::fs::read_dir(dir).map_err(|source| AuditError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut archives: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(stem.as_str())
                .and_then(|r| r.strip_prefix('.'))
                .and_then(|r| r.strip_suffix(".jsonl"))
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|e| e.path())
        .collect();
    archives.sort();
    archives.push(log.to_owned());
    Ok(archives)
}

/// The sealed head of `log`, if it is there and its seal opens with `key`.
fn sealed_head(log: &Path, key: &AuditKey) -> Option<(u64, String)> {
    #[derive(serde::Deserialize)]
    struct Head {
        seq: String,
        hash: String,
        mac: String,
    }
    let text = std::fs::read_to_string(head_path(log)).ok()?;
    let h: Head = serde_json::from_str(text.trim()).ok()?;
    let sealed = key.check("head", format!("{}:{}", h.seq, h.hash).as_bytes(), &h.mac);
    sealed.then(|| h.seq.parse().ok().map(|s| (s, h.hash)))?
}

/// The walk so far, over every file in chain order.
struct Walk {
    /// Lines walked over all files (an ordinal: seqs can repeat in a damaged log).
    at: u64,
    first_break: Option<(u64, Break)>,
    found: Option<(u64, Found)>,
    /// Whether the line after the found one names its hash (None: no such line parsed).
    next_names: Option<bool>,
    /// Where the head's seq was reached, and whether its hash matched there.
    head_at: Option<(u64, bool)>,
    from: Option<u64>,
}

impl Walk {
    fn fail(&mut self, file: &Path, line: u64, what: String) {
        if self.first_break.is_none() {
            let file = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            self.first_break = Some((self.at, Break { file, line, what }));
        }
    }
}

/// Finds record `seq` in the log at `log` (and its rotations) and checks the chain around
/// it, with the key when one is given. None when no line holds that seq.
pub fn lookup(log: &Path, key: Option<&AuditKey>, seq: u64) -> Result<Option<Found>, AuditError> {
    // The head first: the files only grow after it was read, so it names a line in them.
    let head = key.and_then(|k| sealed_head(log, k));
    let mut w = Walk {
        at: 0,
        first_break: None,
        found: None,
        next_names: None,
        head_at: None,
        from: None,
    };
    let mut last: Option<(u64, String)> = None;
    for file in log_files(log)? {
        let f = match std::fs::File::open(&file) {
            Ok(f) => f,
            // Rotated away between the listing and here: the next listing has it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(AuditError::Io { path: file, source }),
        };
        let io = |source| AuditError::Io {
            path: file.clone(),
            source,
        };
        let mut r = std::io::BufReader::new(f);
        let mut chain = Chain {
            prev: GENESIS.to_owned(),
            seq: 0,
        };
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf).map_err(io)? == 0 || !buf.ends_with(b"\n") {
                // The end, or a line still being written: not a record yet.
                break;
            }
            line_no += 1;
            w.at += 1;
            let (line, rec) = match parse_line(&buf) {
                Ok(x) => x,
                Err(f) => {
                    w.fail(&file, line_no, f.what);
                    continue;
                }
            };
            if line_no == 1 {
                w.from.get_or_insert(rec.seq);
                if let Some((s, h)) = &last {
                    if rec.prev != *h || rec.seq != s + 1 {
                        w.fail(
                            &file,
                            1,
                            "this file does not continue the previous one".into(),
                        );
                    }
                }
            }
            if let Err(f) = chain.check(line_no, line, &rec, key) {
                w.fail(&file, line_no, f.what);
            }
            if let Some((at, f)) = &w.found {
                if *at + 1 == w.at {
                    w.next_names = Some(rec.prev == f.hash);
                }
            }
            chain.seq = rec.seq;
            chain.prev = line_hash(line);
            if rec.seq == seq && w.found.is_none() {
                let record = serde_json::from_slice(line)?;
                let found = Found {
                    line: String::from_utf8_lossy(line).into_owned(),
                    record,
                    hash: chain.prev.clone(),
                    file: file.clone(),
                    chain: unchecked(),
                };
                w.found = Some((w.at, found));
            }
            if let Some((hs, hh)) = &head {
                if rec.seq == *hs && w.head_at.is_none() {
                    w.head_at = Some((w.at, *hh == chain.prev));
                }
            }
        }
        if line_no > 0 {
            last = Some((chain.seq, chain.prev.clone()));
        }
    }
    if let Some((hs, _)) = &head {
        let what = match w.head_at {
            None => Some(format!(
                "the log ends before the sealed head's seq {hs}: records were cut off"
            )),
            Some((_, false)) => Some(format!(
                "record seq {hs} is not the one the sealed head names (replaced)"
            )),
            Some((_, true)) => None,
        };
        if let (Some(what), None) = (what, &w.first_break) {
            let file = head_path(log)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            w.first_break = Some((
                u64::MAX,
                Break {
                    file,
                    line: 0,
                    what,
                },
            ));
        }
    }
    let Some((at, mut found)) = w.found else {
        return Ok(None);
    };
    let clean_through = |pos: u64| w.first_break.as_ref().is_none_or(|(b, _)| *b > pos);
    // The next line's seal or seq failing says nothing about this one; its `prev` does.
    let next_ok = w.next_names.unwrap_or_else(|| clean_through(at + 1));
    let intact = clean_through(at) && next_ok;
    let anchored = match w.head_at {
        Some((h, true)) if h >= at => intact && clean_through(h),
        _ => false,
    };
    found.chain = ChainCheck {
        intact,
        from: w.from.unwrap_or(1),
        keyed: key.is_some(),
        anchored,
        broken: w.first_break.map(|(_, b)| b),
    };
    Ok(Some(found))
}

fn unchecked() -> ChainCheck {
    ChainCheck {
        intact: false,
        from: 0,
        keyed: false,
        anchored: false,
        broken: None,
    }
}

#[cfg(test)]
#[path = "lookup_tests.rs"]
mod tests;
