//! A syscall recorder for the policy oracle: runs shell text under a real shell (the
//! scene's: bash or dash) in a throwaway confinement and records what the processes really did — every program executed, every path
//! opened for reading, every write-like call (attempted, even when the kernel refused it),
//! every connect. The oracle tests compare this with what `policy::decide` claimed.
//!
//! It traces with ptrace syscall stops and reads arguments from the tracee's memory, so a
//! program's own spelling of a path cannot hide it; relative paths are resolved against the
//! tracee's cwd or dirfd at the time of the stop, and a successful open is named by the fd the
//! kernel returned. Bash builtins are not executed: their effects show in these records.
//!
//! The confinement only keeps a harmful command from hurting the machine: a new network
//! namespace with loopback only (and a listener that counts connections), the `nobody` user
//! when started as root, no_new_privs, Landlock allowing writes only to the scene's private tmp
//! and `/dev/null`, signals and abstract sockets scoped to the run, rlimits, a deadline.

mod child;
mod net;
mod record;
mod syscalls;
mod tracer;

pub use record::{Connect, Exec, Record, WriteOp};

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Why the recorder could not run a command. Every variant means "nothing was recorded".
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("network namespace: {0} (the recorder needs root or CAP_SYS_ADMIN)")]
    Netns(nix::Error),
    #[error("landlock: {0}")]
    Landlock(String),
    #[error("spawn: {0}")]
    Spawn(std::io::Error),
    #[error("ptrace: {0}")]
    Ptrace(nix::Error),
    #[error("the tracee's first stop was {0}")]
    FirstStop(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("the recorder thread is gone")]
    Gone,
}

/// Where one command runs: a scratch HOME and workspace, a private tmp it may write.
#[derive(Debug, Clone)]
pub struct Scene {
    pub home: PathBuf,
    pub workspace: PathBuf,
    /// The only directory the command may write (Landlock), also its `TMPDIR`.
    pub tmp: PathBuf,
    /// `PATH` of the command.
    pub path: String,
    /// Wall-clock limit; past it every traced process is killed.
    pub timeout: Duration,
    /// Further variables, set after the fixed ones (the guard's git settings for an
    /// autonomous run, or values a labeller tries).
    pub env: Vec<(String, String)>,
    /// The shell that runs the text (`-c`): bash, or `/bin/sh` (dash on Debian, what
    /// OpenClaw's node runs), so the oracle sees what the shell that runs it does.
    pub shell: PathBuf,
}

struct Job {
    scene: Scene,
    command: String,
    reply: mpsc::Sender<Result<Record, TraceError>>,
}

/// A tracer thread living in its own network namespace; commands are sent to it in turn,
/// since ptrace requests must come from the thread that traces.
pub struct Recorder {
    jobs: mpsc::Sender<Job>,
    port: u16,
    accepted: Arc<AtomicU64>,
}

impl Recorder {
    /// Starts the tracer thread: a new network namespace for it (and so for every command it
    /// runs), loopback up, a TCP listener on 127.0.0.1 counting connections.
    pub fn start() -> Result<Recorder, TraceError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<u16, TraceError>>();
        let accepted = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&accepted);
        std::thread::Builder::new()
            .name("oracle-tracer".into())
            .spawn(move || {
                let port = match net::private_loopback(counter) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(port));
                for job in rx {
                    let out = tracer::run(&job.scene, &job.command);
                    let _ = job.reply.send(out);
                }
            })?;
        let port = ready_rx.recv().map_err(|_| TraceError::Gone)??;
        Ok(Recorder {
            jobs,
            port,
            accepted,
        })
    }

    /// The port of the listener on 127.0.0.1 inside the recorder's namespace.
    pub fn listener_port(&self) -> u16 {
        self.port
    }

    /// Connections the listener has accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Runs `command` with the scene's shell (`-c`) in `scene` and returns what it did.
    pub fn run(&self, scene: &Scene, command: &str) -> Result<Record, TraceError> {
        let (reply, rx) = mpsc::channel();
        self.jobs
            .send(Job {
                scene: scene.clone(),
                command: command.to_string(),
                reply,
            })
            .map_err(|_| TraceError::Gone)?;
        rx.recv().map_err(|_| TraceError::Gone)?
    }
}
