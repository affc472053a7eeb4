//! `sanctum-guard sandbox -- CMD…`: one confined command with inherited stdio, for humans and
//! container entrypoints. Exit code: the command's, 128+signal when killed, 125 when the
//! sandbox could not be set up, 126/127 when the command could not be executed.

use super::integrity::{self, Integrity, IntegrityEvent, ScanLimits};
use super::launch::{ChildStdio, SpawnError};
use super::profile::{DenyList, NetworkSpec, ProfileSpec};
use super::spawn::prepare;
use super::SandboxError;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::mpsc;

/// Exit code when confinement could not be set up.
pub const EXIT_SETUP: i32 = 125;

/// Options of the `sandbox` subcommand.
#[derive(Debug, Clone)]
pub struct SandboxArgs {
    /// The profiles to choose from: the built-ins, or a policy file's (which include them).
    pub profiles: BTreeMap<String, ProfileSpec>,
    pub profile: String,
    pub workspace: Option<PathBuf>,
    pub network: Option<NetworkSpec>,
    pub json_status: bool,
    pub timeout_secs: Option<u64>,
    pub argv: Vec<String>,
    /// Variables set over the inherited ones: what a real run of the profile gets (the
    /// guard's git neutralisation for a run nobody approved).
    pub env_overrides: BTreeMap<String, String>,
    /// The deployment's deny list and the agent's home, as a real run has them; `None`:
    /// standalone (no deployment secrets, `{home}` is the caller's HOME).
    pub deployment: Option<(DenyList, PathBuf)>,
}

fn setup_failed(e: &SandboxError, json: bool) -> i32 {
    if json {
        let v = serde_json::json!({ "sandbox_status": null, "error": e.to_string() });
        eprintln!("{v}");
    }
    eprintln!("sanctum-guard sandbox: {e}");
    EXIT_SETUP
}

/// Runs the command and returns the process exit code.
pub fn sandbox_main(args: SandboxArgs) -> i32 {
    let Some(spec) = args.profiles.get(&args.profile).cloned() else {
        let known: Vec<&str> = args.profiles.keys().map(String::as_str).collect();
        let e = SandboxError::Profile(format!(
            "unknown profile {:?} (known: {})",
            args.profile,
            known.join(", ")
        ));
        return setup_failed(&e, args.json_status);
    };
    let mut spec = spec;
    if let Some(n) = args.network.clone() {
        spec.network = n;
    }
    if let Some(t) = args.timeout_secs {
        spec.timeout_secs = t;
    }
    let workspace = match args
        .workspace
        .clone()
        .map(Ok)
        .unwrap_or_else(std::env::current_dir)
    {
        Ok(w) => w,
        Err(e) => return setup_failed(&SandboxError::Io(e), args.json_status),
    };
    let resolved = match &args.deployment {
        Some((deny, home)) => spec.resolve_with(&workspace, home, deny),
        None => spec.resolve(&workspace),
    };
    let resolved = match resolved {
        Ok(r) => r,
        Err(e) => return setup_failed(&e, args.json_status),
    };
    let prepared = match prepare(&resolved) {
        Ok(p) => p,
        Err(e) => return setup_failed(&e, args.json_status),
    };
    if args.json_status {
        let v = serde_json::json!({ "sandbox_status": prepared.status });
        eprintln!("{v}");
    }
    // The guard's own settings are set whatever the profile's allow-list passes through.
    let mut env = prepared.env(&BTreeMap::new());
    env.extend(args.env_overrides.clone());
    let cwd = std::env::current_dir().unwrap_or_else(|_| resolved.workspace.clone());
    let check = if integrity::needed(&resolved.workspace, &resolved.write) {
        match Integrity::before(&resolved.workspace, ScanLimits::default()) {
            Ok(c) => Some(c),
            Err(e) => return setup_failed(&e, args.json_status),
        }
    } else {
        None
    };
    let code = run_child(&args, &prepared, &env, &cwd, resolved.timeout);
    if let Some(check) = check {
        report_integrity(&check.after(), args.json_status);
    }
    code
}

/// Prints what the integrity check found, one line per event (JSON with --json-status).
fn report_integrity(events: &[IntegrityEvent], json: bool) {
    for e in events {
        if json {
            eprintln!("{}", serde_json::json!({ "integrity": e }));
        } else {
            eprintln!(
                "sanctum-guard sandbox: integrity: {}: {:?}, {:?} ({})",
                e.path.display(),
                e.change,
                e.action,
                e.detail
            );
        }
    }
}

fn run_child(
    args: &SandboxArgs,
    prepared: &super::spawn::Prepared,
    env: &BTreeMap<String, String>,
    cwd: &std::path::Path,
    timeout: std::time::Duration,
) -> i32 {
    let mut child = match prepared.spawn(&args.argv, cwd, env, ChildStdio::inherit()) {
        Ok(c) => c,
        Err(SpawnError::Sandbox(setup)) => return setup_failed(&setup, args.json_status),
        Err(SpawnError::Exec(exec_err)) => {
            eprintln!("sanctum-guard sandbox: {}: {exec_err}", args.argv[0]);
            return if exec_err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    // The leader stays unreaped until the watchdog is joined, so `pgid` names our group.
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(timeout) == Err(mpsc::RecvTimeoutError::Timeout) {
            eprintln!(
                "sanctum-guard sandbox: timed out after {timeout:?}, killing the process group"
            );
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    });
    let exited = child.exited_blocking();
    let _ = done_tx.send(());
    let _ = watchdog.join();
    // Background processes the command left behind die with it.
    match exited.and_then(|()| child.finish()) {
        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
        Err(e) => setup_failed(&SandboxError::Io(e), args.json_status),
    }
}
