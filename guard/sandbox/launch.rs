//! The spawn itself: `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)`, the way posix_spawn
//! starts a process, with our confinement between clone and exec.
//!
//! Why not fork: a fork copies the guard's page tables and marks its memory copy-on-write,
//! about 0.1 ms here, only for the child to throw them away at exec. A CLONE_VM child runs on
//! the parent's memory instead, with its own stack (a buffer in the launching frame; the
//! cloning thread is suspended until the child execs or exits), its own fd table,
//! credentials, signal handlers and rlimits. The rules that makes necessary:
//! - everything the child reads is built before the clone ([`ExecArgs`], the plan);
//! - the child writes no memory but its stack and the [`Report`] atomics;
//! - all signals are blocked around the clone, and the child resets every handler to the
//!   default before unblocking, so no handler of the guard ever runs in the child;
//! - the child never returns: it execs or `_exit`s.
//!
//! With a seccomp filter the clone itself runs on the filter's spawner thread (`spawner`),
//! which already carries the filter: the child inherits it instead of compiling it.

use super::child::{self, ChildPlan, Failure, Stage};
use super::process::ConfinedChild;
use super::SandboxError;
use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

/// Directories searched for a bare program name when the child's environment has no PATH.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What one of the child's fds 0–2 is.
#[derive(Debug)]
pub enum ChildIo {
    /// The guard's own fd, as is.
    Inherit,
    /// `/dev/null`.
    Null,
    /// This fd (for example a pipe's write end); the guard's copy is closed after the spawn.
    Fd(OwnedFd),
}

/// The child's stdin, stdout and stderr.
#[derive(Debug)]
pub struct ChildStdio {
    pub stdin: ChildIo,
    pub stdout: ChildIo,
    pub stderr: ChildIo,
}

impl ChildStdio {
    pub fn inherit() -> Self {
        ChildStdio {
            stdin: ChildIo::Inherit,
            stdout: ChildIo::Inherit,
            stderr: ChildIo::Inherit,
        }
    }

    pub fn null() -> Self {
        ChildStdio {
            stdin: ChildIo::Null,
            stdout: ChildIo::Null,
            stderr: ChildIo::Null,
        }
    }
}

/// Why a spawn failed. Either way nothing ran.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The sandbox could not be set up (the CLI exits 125).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The sandbox held but the command could not start: not found, not executable (also
    /// under Landlock), or its working directory could not be entered.
    #[error("{0}")]
    Exec(std::io::Error),
}

/// The command as the child's syscalls need it: NUL-terminated strings and pointer arrays.
#[derive(Debug)]
pub struct ExecArgs {
    /// Paths to try in order: the program itself when it names a path, else one per PATH
    /// directory (as execvp does; empty entries, which would mean the cwd, are skipped).
    candidates: Vec<CString>,
    cwd: CString,
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
}

fn c_string(bytes: &[u8], what: &str) -> Result<CString, SandboxError> {
    CString::new(bytes).map_err(|_| SandboxError::Command(format!("{what} contains a NUL byte")))
}

fn null_terminated(v: &[CString]) -> Vec<*const libc::c_char> {
    v.iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

impl ExecArgs {
    /// `program`, when given, is the exact file executed (argv[0] is passed as it is, for
    /// programs that read their name); else argv[0] is looked up like execvp does.
    pub fn new(
        program: Option<&Path>,
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<Self, SandboxError> {
        let prog = argv.first().ok_or(SandboxError::EmptyArgv)?;
        if prog.is_empty() {
            return Err(SandboxError::Command("empty program name".into()));
        }
        let candidates = if let Some(file) = program {
            if !file.is_absolute() {
                return Err(SandboxError::Command(format!(
                    "program {} is not an absolute path",
                    file.display()
                )));
            }
            vec![c_string(OsStr::as_bytes(file.as_os_str()), "program")?]
        } else if prog.contains('/') {
            vec![c_string(prog.as_bytes(), "program")?]
        } else {
            let path = env.get("PATH").map_or(DEFAULT_PATH, String::as_str);
            path.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| {
                    c_string(
                        format!("{}/{prog}", d.trim_end_matches('/')).as_bytes(),
                        "PATH",
                    )
                })
                .collect::<Result<_, _>>()?
        };
        let c_argv = argv
            .iter()
            .map(|a| c_string(a.as_bytes(), "argument"))
            .collect::<Result<Vec<_>, _>>()?;
        let c_envp = env
            .iter()
            .map(|(k, v)| {
                if k.is_empty() || k.contains('=') {
                    return Err(SandboxError::Command(format!(
                        "invalid environment variable name {k:?}"
                    )));
                }
                c_string(format!("{k}={v}").as_bytes(), "environment")
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExecArgs {
            candidates,
            cwd: c_string(OsStr::as_bytes(cwd.as_os_str()), "working directory")?,
            argv_ptrs: null_terminated(&c_argv),
            envp_ptrs: null_terminated(&c_envp),
            _argv: c_argv,
            _envp: c_envp,
        })
    }
}

/// What the child writes back through the shared memory before it `_exit`s. `stage` is an
/// index into [`Stage::ALL`], or -1 while nothing failed.
#[derive(Debug)]
struct Report {
    stage: AtomicI32,
    errno: AtomicI32,
}

/// Everything the child reads, in the parent's memory for the duration of the clone.
struct ChildArgs<'a> {
    plan: &'a ChildPlan,
    exec: &'a ExecArgs,
    /// Source fd for each of 0, 1, 2, or -1 to keep the guard's.
    stdio: [RawFd; 3],
    report: Report,
}

/// The child's stack: plenty for `child_main` and the plan's syscalls (musl's posix_spawn
/// makes do with about 5 KiB), in the suspended parent's frame.
#[repr(C, align(16))]
struct ChildStack([std::mem::MaybeUninit<u8>; 32 * 1024]);

/// An fd the child may dup2 onto 0–2 without clobbering another source: moved above 2.
fn above_stdio(fd: OwnedFd) -> Result<OwnedFd, SandboxError> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let high = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))
        .map_err(|e| SandboxError::Io(e.into()))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(high) })
}

/// Opens what the child's fds should be; the returned owners keep them open until after the
/// clone.
fn stdio_fds(stdio: ChildStdio) -> Result<([RawFd; 3], Vec<OwnedFd>), SandboxError> {
    let mut raw = [-1; 3];
    let mut keep = Vec::new();
    for (slot, io) in [stdio.stdin, stdio.stdout, stdio.stderr]
        .into_iter()
        .enumerate()
    {
        let fd = match io {
            ChildIo::Inherit => continue,
            ChildIo::Fd(fd) => fd,
            ChildIo::Null => std::fs::OpenOptions::new()
                .read(slot == 0)
                .write(slot != 0)
                .open("/dev/null")?
                .into(),
        };
        let fd = above_stdio(fd)?;
        raw[slot] = fd.as_raw_fd();
        keep.push(fd);
    }
    Ok((raw, keep))
}

/// Spawns `exec` confined by `plan`. Returns once the child has exec'd (or failed).
pub fn launch(
    plan: &ChildPlan,
    exec: &ExecArgs,
    stdio: ChildStdio,
) -> Result<ConfinedChild, SpawnError> {
    let (stdio, _keep) = stdio_fds(stdio)?;
    let args = ChildArgs {
        plan,
        exec,
        stdio,
        report: Report {
            stage: AtomicI32::new(-1),
            errno: AtomicI32::new(0),
        },
    };
    super::reaper::enable().map_err(SandboxError::Io)?;
    // A sweep must not see this leader before it is registered (in `ConfinedChild::new`).
    let gate = super::reaper::spawning();
    let mut stack = ChildStack([std::mem::MaybeUninit::uninit(); 32 * 1024]);
    // SAFETY: one past the end of the buffer, 16-aligned (its size is a multiple of 16): the
    // initial stack pointer of a stack that grows down.
    let stack_top = unsafe { stack.0.as_mut_ptr().add(stack.0.len()) };
    let mut pidfd: libc::c_int = -1;
    let target = CloneTarget {
        args: &args,
        stack_top: stack_top.cast(),
        pidfd: &mut pidfd,
    };
    // With a filter, the clone runs on the thread that carries it (`spawner`).
    let (pid, clone_err) = match &plan.seccomp {
        Some(filter) => super::spawner::run_on(&filter.prog, move || target.clone_child())?,
        None => target.clone_child(),
    };
    if pid < 0 {
        return Err(SandboxError::Io(std::io::Error::new(
            clone_err.kind(),
            format!("clone: {clone_err}"),
        ))
        .into());
    }
    let child = ConfinedChild::new(
        pid,
        // SAFETY: CLONE_PIDFD stored a new fd that nothing else owns.
        unsafe { OwnedFd::from_raw_fd(pidfd) },
        plan.seccomp.is_some(),
    );
    drop(gate);
    let Ok(index) = usize::try_from(args.report.stage.load(Ordering::Acquire)) else {
        return Ok(child);
    };
    // The child has exited: reap it now rather than leave a zombie. A stage number we do
    // not know still means the child failed before exec: a confinement failure.
    drop(child);
    let stage = Stage::ALL.get(index).copied().unwrap_or(Stage::Signals);
    Err(failure(
        Failure {
            stage,
            errno: args.report.errno.load(Ordering::Acquire),
        },
        &exec.cwd,
    ))
}

/// Where the child starts, in the launching thread's frame (see [`CloneTarget::clone_child`]).
struct CloneTarget<'a> {
    args: &'a ChildArgs<'a>,
    stack_top: *mut libc::c_void,
    pidfd: &'a mut libc::c_int,
}

// SAFETY: a `CloneTarget` is used on one thread at a time: built by `launch`, moved to a
// spawner thread and used there while `launch` waits for it (`spawner::run_on`). The child
// reads `args` and writes only its `Report` atomics and its own stack.
unsafe impl Send for CloneTarget<'_> {}

impl CloneTarget<'_> {
    /// The clone itself, with every signal blocked around it, on the calling thread (whose
    /// seccomp filter the child inherits). Returns the pid (negative on failure) and errno.
    fn clone_child(self) -> (libc::c_int, std::io::Error) {
        // SAFETY: sigset_t is plain data, valid when zeroed.
        let mut old_mask: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: sigset_t is plain data, valid when zeroed.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: sigfillset and pthread_sigmask write only the sets passed. `child_main`
        // honours the CLONE_VM rules of the module doc; `args`, the stack and `pidfd` outlive
        // the child's use of them because CLONE_VFORK suspends this thread until the child
        // has exec'd or exited, and `launch` waits for this thread. The mask is restored
        // whatever clone returned.
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old_mask);
            let pid = libc::clone(
                child_main,
                self.stack_top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                (self.args as *const ChildArgs).cast_mut().cast(),
                self.pidfd as *mut libc::c_int,
            );
            let clone_err = std::io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut());
            (pid, clone_err)
        }
    }
}

fn failure(f: Failure, cwd: &CString) -> SpawnError {
    let os = std::io::Error::from_raw_os_error(f.errno);
    match f.stage {
        Stage::Exec => SpawnError::Exec(os),
        Stage::Chdir => SpawnError::Exec(std::io::Error::new(
            os.kind(),
            format!("working directory {}: {os}", cwd.to_string_lossy()),
        )),
        stage => SpawnError::Sandbox(SandboxError::Confinement {
            stage: stage.name(),
            source: os,
        }),
    }
}

/// Signal numbers the kernel knows (1..=64 on Linux).
const NSIG: libc::c_int = 65;

/// The kernel's `struct sigaction` for rt_sigaction (x86_64 and arm64 share this layout).
#[repr(C)]
struct KernelSigaction {
    handler: usize,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// Sets every caught signal back to its default action: the handlers are the guard's and
/// would run on its memory. Ignored signals stay ignored across exec, except SIGPIPE, which
/// the Rust runtime ignores for itself and commands expect at its default.
///
/// # Safety
/// Child only, with every signal blocked.
unsafe fn reset_signal_handlers() -> Result<(), Failure> {
    let default = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    for sig in 1..NSIG {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut old = KernelSigaction {
            handler: 0,
            flags: 0,
            restorer: 0,
            mask: 0,
        };
        // SAFETY: raw rt_sigaction with valid pointers to structs of the kernel's layout and
        // size 8 for the mask; it changes only this process's handler table (no CLONE_SIGHAND).
        unsafe {
            child::check(
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig,
                    std::ptr::null::<KernelSigaction>(),
                    &mut old as *mut KernelSigaction,
                    8usize,
                ),
                Stage::Signals,
            )?;
            let keep = old.handler == libc::SIG_DFL
                || (old.handler == libc::SIG_IGN && sig != libc::SIGPIPE);
            if !keep {
                child::check(
                    libc::syscall(
                        libc::SYS_rt_sigaction,
                        sig,
                        &default as *const KernelSigaction,
                        std::ptr::null_mut::<KernelSigaction>(),
                        8usize,
                    ),
                    Stage::Signals,
                )?;
            }
        }
    }
    Ok(())
}

/// Everything before exec, in order: handlers, stdio, cwd, the plan, then the signal mask
/// the command starts with (empty).
///
/// # Safety
/// Child only.
unsafe fn setup(args: &ChildArgs) -> Result<(), Failure> {
    // SAFETY: raw syscalls on integers and on strings the parent built; see the module doc.
    unsafe {
        reset_signal_handlers()?;
        for (target, &src) in args.stdio.iter().enumerate() {
            if src >= 0 {
                child::check(libc::dup2(src, target as RawFd).into(), Stage::Stdio)?;
            }
        }
        child::check(libc::chdir(args.exec.cwd.as_ptr()).into(), Stage::Chdir)?;
        args.plan.apply()?;
        let empty: u64 = 0;
        child::check(
            libc::syscall(
                libc::SYS_rt_sigprocmask,
                libc::SIG_SETMASK,
                &empty as *const u64,
                std::ptr::null_mut::<u64>(),
                8usize,
            ),
            Stage::Signals,
        )?;
    }
    Ok(())
}

/// Tries each candidate path like execvp: a missing file moves on to the next directory, a
/// permission error is remembered (and reported if nothing else runs), anything else stops.
///
/// # Safety
/// Child only; returns only when nothing could be executed.
unsafe fn exec(e: &ExecArgs) -> Failure {
    let mut denied = false;
    for path in &e.candidates {
        // SAFETY: NUL-terminated strings and NULL-terminated pointer arrays owned by `e`.
        unsafe { libc::execve(path.as_ptr(), e.argv_ptrs.as_ptr(), e.envp_ptrs.as_ptr()) };
        match child::errno() {
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            errno => {
                return Failure {
                    stage: Stage::Exec,
                    errno,
                }
            }
        }
    }
    Failure {
        stage: Stage::Exec,
        errno: if denied { libc::EACCES } else { libc::ENOENT },
    }
}

/// The child's entry point (called by glibc's clone on the child stack).
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` the suspended parent keeps alive (see `launch`).
    let args = unsafe { &*(arg as *const ChildArgs) };
    // SAFETY: we are the child between clone and exec.
    let failure = match unsafe { setup(args) } {
        // SAFETY: still the child between clone and exec; `args.exec` points into the
        // suspended parent's frame, alive until we exec or exit.
        Ok(()) => unsafe { exec(args.exec) },
        Err(f) => f,
    };
    args.report.errno.store(failure.errno, Ordering::Relaxed);
    // `Stage::ALL` lists the stages in declaration order, so the discriminant is the index.
    args.report
        .stage
        .store(i32::from(failure.stage as u8), Ordering::Release);
    // SAFETY: _exit ends this process only, without running the guard's atexit handlers or
    // flushing its stdio buffers (which are the parent's memory).
    unsafe { libc::_exit(127) }
}
