//! `run`: one confined command with captured, capped output and a timeout that kills its whole
//! process group. This is what the approvals socket's exec path calls.

use super::integrity::{self, Integrity, IntegrityEvent, ScanLimits};
use super::launch::{ChildIo, ChildStdio, SpawnError};
use super::profile::ResolvedProfile;
use super::spawn::{prepare, Prepared};
use super::status::EnforcementStatus;
use super::SandboxError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// One command to run confined.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The exact file to execute; `None` looks argv[0] up like execvp.
    pub program: Option<PathBuf>,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The request's overrides (filtered by the profile's allow-list).
    pub env: BTreeMap<String, String>,
    /// Whether the guard's own variables (allow-listed) are the base of the environment.
    /// An exec plan builds the whole environment itself and says `false`.
    pub inherit_env: bool,
    pub timeout: Duration,
    /// Combined stdout+stderr bytes kept (200_000 for OpenClaw).
    pub output_cap: usize,
    pub profile: ResolvedProfile,
}

/// The result, shaped like OpenClaw's `system.run` result plus the enforcement status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// None when killed by a signal or not started.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub error: Option<String>,
    pub enforcement: EnforcementStatus,
    /// The signal that killed the command, if any (the CLI exits 128+signal).
    #[serde(default)]
    pub signal: Option<i32>,
    /// What the run changed in the workspace's git hooks/config or agent config, and what
    /// the guard did about it (see `integrity`). Empty when nothing changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrity: Vec<IntegrityEvent>,
    /// How long the run waited for a slot (its profile's `limits.concurrent`), in ms.
    #[serde(default)]
    pub queued_ms: u64,
}

/// The error of a run whose output was withheld because a secret appeared in the workspace
/// while it ran.
pub const WORKSPACE_CHANGED: &str = "a secret appeared in the workspace while this run read \
    it (a file the run may have read was not judged when it started): its output is \
    withheld; run it again";

/// The error of a run whose output was withheld because a name it could read may have named
/// a file nobody judged, and names another by the time the run ended (a link toggled in and
/// out by a process outside the guard).
pub const WORKSPACE_CHURNED: &str = "a file this run could read appeared in the workspace \
    and was removed, replaced or moved away before the run ended, so it was never judged: its \
    output is withheld; run it again";

/// Appended when output was cut, as OpenClaw's node host does.
pub const TRUNCATED_MARK: &str = "\n... (truncated)";
/// How long to wait for the pipes to close after the process group was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Reads both pipes to EOF, keeping the first `cap` bytes combined. At the cap it says so on
/// `full` and stops reading: what comes after is never kept, and reading it would let one
/// `yes` burn the guard's CPU until the timeout (the run is killed instead).
async fn collect<A, B>(
    mut out: A,
    mut err: B,
    cap: usize,
    full: tokio::sync::oneshot::Sender<()>,
) -> (Vec<u8>, Vec<u8>, bool)
where
    A: tokio::io::AsyncRead + Unpin,
    B: tokio::io::AsyncRead + Unpin,
{
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let (mut bo, mut be) = ([0u8; 8192], [0u8; 8192]);
    let (mut out_done, mut err_done, mut truncated) = (false, false, false);
    while !(out_done && err_done) {
        let (n, to_out) = tokio::select! {
            r = out.read(&mut bo), if !out_done => (r.unwrap_or(0), true),
            r = err.read(&mut be), if !err_done => (r.unwrap_or(0), false),
        };
        if n == 0 {
            if to_out {
                out_done = true
            } else {
                err_done = true
            }
            continue;
        }
        let room = cap.saturating_sub(o.len() + e.len());
        let take = n.min(room);
        if to_out {
            o.extend_from_slice(&bo[..take]);
        } else {
            e.extend_from_slice(&be[..take]);
        }
        if take < n {
            truncated = true;
            break;
        }
    }
    if truncated {
        let _ = full.send(());
    }
    (o, e, truncated)
}

/// How a run ended, from the guard's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Exited,
    TimedOut,
    OutputCap,
    TmpFull,
}

/// How often the private tmp's size is measured.
const TMP_POLL: Duration = Duration::from_millis(100);

/// Resolves once the tree under `dir` holds more than `max` bytes (allocated blocks).
async fn tmp_over(dir: PathBuf, max: u64) {
    loop {
        tokio::time::sleep(TMP_POLL).await;
        let d = dir.clone();
        // A measurement that cannot be made counts as over (fail closed).
        let used = tokio::task::spawn_blocking(move || tree_bytes(&d))
            .await
            .unwrap_or(u64::MAX);
        if used > max {
            return;
        }
    }
}

/// Bytes allocated under `dir` (links not followed). A directory the guard cannot list
/// (a run's `mkdir -m 300` under a non-root guard) counts as over any limit: what it holds
/// cannot be measured, so it is not taken for nothing. One removed meanwhile counts nothing.
fn tree_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total: u64 = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return u64::MAX,
        };
        for e in rd.flatten() {
            if let Ok(m) = e.metadata() {
                total = total.saturating_add(m.blocks() * 512);
                if m.is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
    total
}

/// Runs `spec.argv` confined by `spec.profile`. `Err` means the sandbox could not be set up
/// and nothing ran; a command that could not be executed is an `Ok` outcome with `error`.
pub async fn run(spec: RunSpec) -> Result<RunOutcome, SandboxError> {
    let prepared = prepare(&spec.profile)?;
    run_prepared(&prepared, &spec).await
}

/// [`run`] with a plan already prepared (from `spec.profile`, whose confinement it applies).
/// A run that may write the workspace is wrapped in the integrity check.
pub async fn run_prepared(prepared: &Prepared, spec: &RunSpec) -> Result<RunOutcome, SandboxError> {
    let p = &spec.profile;
    if !integrity::needed(&p.workspace, &p.write) {
        return run_confined(prepared, spec).await;
    }
    let ws = p.workspace.clone();
    let check = tokio::task::spawn_blocking(move || Integrity::before(&ws, ScanLimits::default()))
        .await
        .map_err(|e| SandboxError::Io(std::io::Error::other(e)))??;
    let outcome = run_confined(prepared, spec).await;
    // Restore even when the run failed half-way: it may have written before failing.
    let events = tokio::task::spawn_blocking(move || check.after())
        .await
        .map_err(|e| SandboxError::Io(std::io::Error::other(e)))?;
    let mut outcome = outcome?;
    outcome.integrity = events;
    Ok(outcome)
}

async fn run_confined(prepared: &Prepared, spec: &RunSpec) -> Result<RunOutcome, SandboxError> {
    let env = if spec.inherit_env {
        prepared.env(&spec.env)
    } else {
        prepared.env_exact(&spec.env)
    };
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let stdio = ChildStdio {
        stdin: ChildIo::Null,
        stdout: ChildIo::Fd(out_w),
        stderr: ChildIo::Fd(err_w),
    };
    let status = prepared.status.clone();
    // The write ends are closed here once the child has its copies, so EOF means it is done.
    let mut child =
        match prepared.spawn_program(spec.program.as_deref(), &spec.argv, &spec.cwd, &env, stdio) {
            Ok(c) => c,
            Err(SpawnError::Sandbox(e)) => return Err(e),
            Err(SpawnError::Exec(e)) => {
                return Ok(RunOutcome {
                    exit_code: None,
                    timed_out: false,
                    success: false,
                    stdout: String::new(),
                    stderr: String::new(),
                    error: Some(format!("exec {}: {e}", spec.argv[0])),
                    enforcement: status,
                    signal: None,
                    integrity: Vec::new(),
                    queued_ms: 0,
                });
            }
        };
    let out = pipe::Receiver::from_owned_fd(out_r)?;
    let err = pipe::Receiver::from_owned_fd(err_r)?;
    let (full_tx, full_rx) = tokio::sync::oneshot::channel();
    let collector = tokio::spawn(collect(out, err, spec.output_cap, full_tx));
    let timeout = spec.timeout.min(spec.profile.timeout);
    let tmp_limit = match (&spec.profile.tmp, prepared.tmp_poll()) {
        (Some(t), true) => Some((t.path().to_path_buf(), spec.profile.limits.tmp_mb << 20)),
        _ => None,
    };
    let tmp_watch = async move {
        match tmp_limit {
            Some((dir, max)) => tmp_over(dir, max).await,
            None => std::future::pending().await,
        }
    };
    // In this order when several are ready: the collector says "full" before it closes the
    // pipes, so a command that then dies of SIGPIPE (`yes`) still ends as stopped at the cap.
    let stop = tokio::select! {
        biased;
        Ok(()) = full_rx => Stop::OutputCap,
        () = tmp_watch => Stop::TmpFull,
        r = child.exited() => { r?; Stop::Exited }
        _ = tokio::time::sleep(timeout) => Stop::TimedOut,
    };
    if stop != Stop::Exited {
        prepared.kill_cgroup();
        child.kill_group();
        child.exited().await?;
    }
    let timed_out = stop == Stop::TimedOut;
    // Background processes the command left behind die with it (before the leader is
    // reaped, so the group id still names only them).
    let exit = child.finish()?;
    let (o, e, truncated) = match tokio::time::timeout(DRAIN_GRACE, collector).await {
        Ok(Ok(r)) => r,
        _ => (Vec::new(), b"output lost".to_vec(), true),
    };
    let mut stdout = String::from_utf8_lossy(&o).into_owned();
    let mut stderr = String::from_utf8_lossy(&e).into_owned();
    if truncated {
        if stderr.is_empty() {
            stdout.push_str(TRUNCATED_MARK);
        } else {
            stderr.push_str(TRUNCATED_MARK);
        }
    }
    if let Some(why) = withheld_because(prepared).await {
        return Ok(RunOutcome {
            exit_code: None,
            timed_out,
            success: false,
            stdout: String::new(),
            stderr: String::new(),
            error: Some(why),
            enforcement: status,
            signal: None,
            integrity: Vec::new(),
            queued_ms: 0,
        });
    }
    let exit_code = if timed_out { None } else { exit.code() };
    Ok(RunOutcome {
        exit_code,
        timed_out,
        success: !timed_out && exit_code == Some(0),
        stdout,
        stderr,
        error: match stop {
            Stop::Exited => None,
            Stop::TimedOut => Some(format!("timed out after {timeout:?}")),
            Stop::OutputCap => Some(format!(
                "output passed the cap of {} bytes: the run was stopped",
                spec.output_cap
            )),
            Stop::TmpFull => Some(format!(
                "the private tmp passed its {} MiB: the run was stopped",
                spec.profile.limits.tmp_mb
            )),
        },
        enforcement: status,
        signal: exit.signal(),
        integrity: Vec::new(),
        queued_ms: 0,
    })
}

/// After a run granted from a workspace scan (the autonomous profiles): why its output
/// cannot be trusted to hold no secret, if so. A directory the scan found no secret in is
/// granted whole, and a granted file is granted by inode, so a hard link to a secret made in
/// such a directory by a process outside the guard, or a granted file rewritten into a
/// secret, was readable to the run; its output and exit status are then withheld. Only when
/// the workspace changed at all is it scanned again (content verdicts are remembered, so
/// only changed files are read): a secret there now is `WORKSPACE_CHANGED`. A name that may
/// have named an unjudged file and names another by now (a link toggled in and out: the
/// watches' record, `ws_secrets::Judged::hidden_change`) is `WORKSPACE_CHURNED`, with what
/// the watches saw in parentheses (names in the workspace, which the run could list). Ordinary
/// churn (build files, an editor's atomic save) withholds nothing. Not seen: a granted file
/// rewritten into a secret and back within the run. A check that cannot be made withholds.
async fn withheld_because(prepared: &Prepared) -> Option<String> {
    let p = prepared.profile();
    let scan = p.scan.clone()?;
    let ws = p.workspace.clone();
    tokio::task::spawn_blocking(move || {
        if let Some(why) = scan.hidden_change() {
            return Some(format!("{WORKSPACE_CHURNED} ({why})"));
        }
        if scan.unchanged() {
            return None;
        }
        let appeared = match super::ws_secrets::scan(&ws) {
            Ok(now) => now.secrets().iter().any(|s| !scan.secrets().contains(s)),
            Err(_) => true,
        };
        // A name put back after the first read of the watches and before the rescan listed
        // it (the link gone by then) is in the watches' record now.
        if let Some(why) = scan.hidden_change() {
            return Some(format!("{WORKSPACE_CHURNED} ({why})"));
        }
        appeared.then(|| WORKSPACE_CHANGED.to_string())
    })
    .await
    .unwrap_or_else(|_| Some(WORKSPACE_CHANGED.to_string()))
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| SandboxError::Io(e.into()))
}

#[cfg(test)]
mod tests {
    use super::tree_bytes;

    #[test]
    fn a_tmp_that_cannot_be_listed_counts_as_over() {
        let t = tempfile::tempdir().expect("tmp");
        std::fs::write(t.path().join("f"), vec![1u8; 64 * 1024]).expect("f");
        let used = tree_bytes(t.path());
        assert!((64 * 1024..u64::MAX).contains(&used), "{used}");
        // Gone meanwhile: nothing to count.
        assert_eq!(tree_bytes(&t.path().join("gone")), 0);
        // Not listable (here ENOTDIR; a non-root guard gets EACCES on `mkdir -m 300`).
        assert_eq!(tree_bytes(&t.path().join("f")), u64::MAX);
    }
}
