//! `sanctum-guard passkeys list|remove`: the web prompt's registered passkeys. A removal
//! edits the shared passkey file (the running `serve` reads it on every use, so it takes
//! effect at once) and writes its audit record, so `audit verify` refuses any later
//! decision signed with that key.

use clap::Subcommand;
use sanctum_guard::audit::{self, assertion::PasskeyEvent, AuditEvent, AuditLog};
use sanctum_guard::web::passkey_store;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum PasskeysCmd {
    /// List the registered passkeys: id, who registered it, when (exit 0; 2 on error).
    List,
    /// Remove a passkey by id (or a unique prefix of 8+ hex digits); exit 0, 1 when no
    /// passkey matched, 2 on error.
    Remove { id: String },
}

pub fn run(cmd: PasskeysCmd, state_dir: Option<PathBuf>) -> ExitCode {
    let dir = match super::state_dir_of(state_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("passkeys: {e}");
            return ExitCode::from(2);
        }
    };
    // The fleet's passkeys when the config names one.
    let at = match super::reviewers::auth_at(&dir) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("passkeys: {e}");
            return ExitCode::from(2);
        }
    };
    match cmd {
        PasskeysCmd::List => match passkey_store::list(&at) {
            Ok(all) if all.is_empty() => {
                println!("no passkey registered (add one from the web prompt's header)");
                ExitCode::SUCCESS
            }
            Ok(all) => {
                for s in all {
                    println!("{}  {}  created_ms={}", s.id, s.name, s.created_ms);
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        PasskeysCmd::Remove { id } => {
            // The log first: a removal the log cannot record is not made.
            let log = match AuditLog::open(&dir.join(audit::AUDIT_FILE)) {
                Ok((log, _)) => log,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            match passkey_store::remove(&at, &id) {
                Ok(Some(s)) => {
                    let ev = PasskeyEvent::Removed {
                        credential_id: s.id.clone(),
                        by: "cli".into(),
                    };
                    if let Err(e) = log.append(AuditEvent::Passkey(Box::new(ev))) {
                        eprintln!("error: removed {}, but the audit record failed: {e}", s.id);
                        return ExitCode::from(2);
                    }
                    println!("removed {} ({})", s.id, s.name);
                    ExitCode::SUCCESS
                }
                Ok(None) => {
                    eprintln!("no passkey matches {id:?} (see: sanctum-guard passkeys list)");
                    ExitCode::from(1)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
