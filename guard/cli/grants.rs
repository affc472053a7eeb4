//! `sanctum-guard grants list|revoke ID`: the bounded grants of a (running or stopped)
//! guard, in the same inbox database `inbox list` reads; a revoke takes effect at once
//! (the serving guard reads the table on every check) and is on the audit log.

use clap::{Args, Subcommand};
use sanctum_guard::audit::event::{AuditEvent, GrantRecord};
use sanctum_guard::audit::{self, AuditLog};
use sanctum_guard::grants::{Grant, GrantBackend, GrantError, GrantStore, PgGrants};
use sanctum_guard::inbox;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GrantsArgs {
    #[command(subcommand)]
    cmd: GrantsCmd,
    /// The guard's state dir (holds inbox.db and audit.jsonl).
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum GrantsCmd {
    /// Every live grant: its scope, patterns, expiry, uses left, who made it and on which
    /// request. Exit 0, or 2 on error.
    List,
    /// Revoke a grant now: the next request it covered is asked. Exit 0, 1 when the id is
    /// unknown or already revoked, 2 on error.
    Revoke {
        /// The grant id (`grants list` shows it).
        id: String,
    },
}

fn when(ms: Option<u64>) -> String {
    match ms {
        None => "never".into(),
        Some(ms) => {
            let left = ms.saturating_sub(inbox::now_ms()) / 1000;
            format!("in {}m{:02}s", left / 60, left % 60)
        }
    }
}

fn line(g: &Grant) -> String {
    let pats: Vec<String> = g.spec.shapes.iter().map(|s| s.pattern()).collect();
    let at = match (&g.spec.workspace, &g.spec.cwd) {
        (Some(ws), _) => format!("inside {ws}"),
        (None, Some(c)) => format!("in {c}"),
        _ => String::new(),
    };
    let session = g
        .spec
        .session_key
        .as_deref()
        .map(|k| format!(" session {k}"))
        .unwrap_or_default();
    let uses = g
        .uses_left
        .map(|u| u.to_string())
        .unwrap_or_else(|| "unlimited".into());
    format!(
        "{}  {}  {}  {at}{session}  expires {}  uses left {uses}  by {}  request {}",
        g.id,
        g.spec.scope.as_str(),
        pats.join(" ; "),
        when(g.expires_ms),
        g.made_by,
        g.inbox_id
    )
}

pub fn run(a: GrantsArgs) -> ExitCode {
    let (dir, store) = match open(a.state_dir.clone()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let store = store.as_ref();
    match a.cmd {
        GrantsCmd::List => match store.live(inbox::now_ms()) {
            Ok(gs) if a.json => {
                println!("{}", serde_json::to_string_pretty(&gs).unwrap_or_default());
                ExitCode::SUCCESS
            }
            Ok(gs) if gs.is_empty() => {
                println!("no live grants");
                ExitCode::SUCCESS
            }
            Ok(gs) => {
                gs.iter().for_each(|g| println!("{}", line(g)));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        GrantsCmd::Revoke { id } => revoke(store, &dir, &id),
    }
}

/// The state dir and the grants its guard spends: the inbox database there, or the fleet's
/// PostgreSQL database when the config has `[store] url` (then the list is the fleet's, and
/// a revoke here ends a grant on every guard).
fn open(
    state_dir: Option<std::path::PathBuf>,
) -> Result<(std::path::PathBuf, Box<dyn GrantBackend>), String> {
    use sanctum_guard::app::config::{Config, Overrides, StoreSettings};
    let overrides = Overrides {
        state_dir,
        ..Default::default()
    };
    let cfg = Config::load(&overrides).map_err(|e| format!("grants: {e}"))?;
    let dir = cfg.state_dir;
    let store: Box<dyn GrantBackend> = match cfg.store {
        StoreSettings::Embedded => {
            let db = dir.join(inbox::DB_FILE);
            if !db.exists() {
                return Err(format!("no inbox at {}", db.display()));
            }
            Box::new(GrantStore::open(&db).map_err(|e| e.to_string())?)
        }
        StoreSettings::Fleet { url, guard_id } => {
            let db = inbox::pg::parse_url(&url).map_err(|e| e.to_string())?;
            Box::new(PgGrants::open(db, &guard_id).map_err(|e| e.to_string())?)
        }
    };
    Ok((dir, store))
}

fn revoke(store: &dyn GrantBackend, dir: &std::path::Path, id: &str) -> ExitCode {
    let audit = match AuditLog::open(&dir.join(audit::AUDIT_FILE)) {
        Ok((log, _)) => log,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let by = inbox::cli_identity();
    match store.revoke(id, &by, inbox::now_ms()) {
        Ok(g) => {
            let rec = AuditEvent::Grant(GrantRecord {
                action: "revoked",
                id: g.id.clone(),
                by,
                inbox_id: g.inbox_id.clone(),
                scope: g.spec.scope.as_str(),
                patterns: g.spec.shapes.iter().map(|s| s.pattern()).collect(),
                expires_ms: g.expires_ms,
                uses: g.uses_left,
            });
            if let Err(e) = audit.append(rec) {
                eprintln!("warning: revoked, but the audit record failed: {e}");
            }
            println!("revoked {}", g.id);
            ExitCode::SUCCESS
        }
        Err(e @ (GrantError::UnknownId(_) | GrantError::AlreadyRevoked(_))) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
