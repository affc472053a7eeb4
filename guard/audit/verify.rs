//! Chain verification: walks the log and names the first line where the chain breaks.

use super::{line_hash, AuditError, Record, GENESIS};
use std::fs::File;
use std::path::Path;

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
