//! What one traced command did.

use std::path::PathBuf;

/// One program image that replaced a process (`execve` that succeeded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// `/proc/<pid>/exe` after the exec: the real binary (for a script, its interpreter).
    pub exe: PathBuf,
    /// `/proc/<pid>/cmdline` after the exec.
    pub argv: Vec<String>,
}

/// A call that changes the filesystem, attempted: it counts even when the kernel refused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOp {
    /// The syscall (`openat`, `unlinkat`, `rename`, …).
    pub call: &'static str,
    pub path: PathBuf,
    /// Whether the kernel let it happen.
    pub ok: bool,
}

/// A `connect` (or `sendto` with an address) on an IP or unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// `inet`, `inet6`, `unix` or `other(N)`.
    pub family: String,
    /// `addr:port` or the unix path.
    pub address: String,
    pub ok: bool,
}

/// Everything one command did, in order of the stops.
#[derive(Debug, Clone, Default)]
pub struct Record {
    pub execs: Vec<Exec>,
    /// Files and directories opened for reading (successfully), by their real path.
    pub reads: Vec<PathBuf>,
    pub writes: Vec<WriteOp>,
    pub connects: Vec<Connect>,
    /// Exit code of bash, or `128 + signal`.
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// Stdout and stderr, merged, capped.
    pub output: Vec<u8>,
}
