//! `sanctum-guard audit verify|show`: check the guard's hash-chained log, or print one
//! record of it with what the chain says about it (a fleet row names a decision's record by
//! seq and hash; this is where to check it on the deciding guard).

use clap::Subcommand;
use sanctum_guard::app::config::{Config, Overrides};
use sanctum_guard::audit;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum AuditCmd {
    /// Check the hash chain of a log, or of its rotated files together: OK and the record
    /// count (exit 0), the first broken link (exit 1), or a usage/IO error (exit 2). Says
    /// what was proven: with the key, that nobody without it changed or cut the log. A
    /// chain no sealed head anchors (head deleted, or no key) fails: its tail could be cut.
    Verify {
        /// The log and its rotated files; none: the state dir's audit.jsonl and its rotations.
        files: Vec<PathBuf>,
        /// Whose audit log to verify when no file is given (default: serve's state dir).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// The audit key; default: audit.key next to the first file (if present).
        #[arg(long)]
        key: Option<PathBuf>,
        /// Accept a chain without a sealed head (exit 0): a cut of its newest records would
        /// not show.
        #[arg(long)]
        allow_unanchored: bool,
    },
    /// Print one record (by seq) of the guard's log and its rotations, with its line's hash
    /// (what a fleet row's `decidedAt` names) and whether the chain vouches for it: intact
    /// up to it and anchored by the sealed head. Exit 0 vouched for, 1 not (a break, or no
    /// sealed head at or after it), 2 usage/IO error, 3 no such record.
    Show {
        seq: u64,
        /// Whose log (default: serve's state dir, or the one `--config` names).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// The guard's config file (its state dir).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The audit key; default: audit.key next to the log (if present).
        #[arg(long)]
        key: Option<PathBuf>,
        /// Print one JSON object (seq, file, hash, record, line, chain).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: AuditCmd) -> ExitCode {
    match cmd {
        AuditCmd::Verify {
            files,
            state_dir,
            key,
            allow_unanchored,
        } => verify(files, state_dir, key, allow_unanchored),
        AuditCmd::Show {
            seq,
            state_dir,
            config,
            key,
            json,
        } => show(seq, state_dir, config, key, json),
    }
}

fn verify(
    files: Vec<PathBuf>,
    state_dir: Option<PathBuf>,
    key: Option<PathBuf>,
    allow_unanchored: bool,
) -> ExitCode {
    let files = if files.is_empty() {
        match state_dir_log(state_dir) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        files
    };
    let key = match key {
        Some(k) => Some(audit::AuditKey::load(&k)),
        None => {
            let d = audit::default_key_path(&files[0]);
            d.exists().then(|| audit::AuditKey::load(&d))
        }
    };
    let key = match key.transpose() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match audit::verify_set(&files, key.as_ref()) {
        Ok(r) if r.is_ok() && !r.is_anchored() && !allow_unanchored => {
            println!("{}", r.render_unanchored());
            ExitCode::from(1)
        }
        Ok(r) => {
            println!("{}", r.render());
            if r.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The state dir's audit log and its rotated files (`audit.<seq>.jsonl`), named on stderr so
/// the reader knows which log was proven.
fn state_dir_log(explicit: Option<PathBuf>) -> Result<Vec<PathBuf>, String> {
    let dir = super::state_dir_of(explicit).map_err(|e| e.to_string())?;
    let current = dir.join(audit::AUDIT_FILE);
    if !current.exists() {
        return Err(format!(
            "no audit log at {} (give the log file to verify, or --state-dir)",
            current.display()
        ));
    }
    let mut files = audit::log_files(&current).map_err(|e| e.to_string())?;
    // The live file first: its key and head are the ones next to it.
    files.rotate_right(1);
    eprintln!(
        "audit verify: the state dir's log, {} ({} file(s))",
        files[0].display(),
        files.len()
    );
    Ok(files)
}

/// `audit show SEQ`.
fn show(
    seq: u64,
    state_dir: Option<PathBuf>,
    config: Option<PathBuf>,
    key: Option<PathBuf>,
    json: bool,
) -> ExitCode {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let overrides = Overrides {
        config,
        state_dir,
        ..Default::default()
    };
    let log = match Config::load(&overrides) {
        Ok(c) => c.audit_path(),
        Err(e) => return fail(e.to_string()),
    };
    if !log.exists() {
        return fail(format!("no audit log at {}", log.display()));
    }
    let key_path = key.unwrap_or_else(|| audit::default_key_path(&log));
    let key = match key_path.exists() {
        true => match audit::AuditKey::load(&key_path) {
            Ok(k) => Some(k),
            Err(e) => return fail(e.to_string()),
        },
        false => None,
    };
    let found = match audit::lookup(&log, key.as_ref(), seq) {
        Ok(Some(f)) => f,
        Ok(None) => {
            eprintln!("no record #{seq} in {} or its rotations", log.display());
            return ExitCode::from(3);
        }
        Err(e) => return fail(e.to_string()),
    };
    let c = &found.chain;
    let vouched = c.intact && c.anchored;
    if json {
        let v = serde_json::json!({"seq": seq, "file": found.file, "hash": found.hash,
            "record": found.record, "line": found.line, "chain": c});
        println!("{v}");
    } else {
        println!("record #{seq} in {}", found.file.display());
        println!("  hash:  {}", found.hash);
        let intact = match c.intact {
            true => format!("intact from seq {} up to it", c.from),
            false => "BROKEN before or at it".into(),
        };
        let keyed = match c.keyed {
            true => format!("sealed with {}", key_path.display()),
            false => "NOT keyed (proves only that the files agree with themselves)".into(),
        };
        let anchored = match c.anchored {
            true => "anchored by the sealed head",
            false => "UNANCHORED: no intact chain from it to a sealed head",
        };
        println!("  chain: {intact}; {keyed}; {anchored}");
        if let Some(b) = &c.broken {
            println!("  first break: {} line {}: {}", b.file, b.line, b.what);
        }
        println!("{}", found.line);
    }
    if vouched {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
