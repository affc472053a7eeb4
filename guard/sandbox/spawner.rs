//! Spawner threads: one per seccomp filter (see `seccomp::Filter`), holding it attached, so
//! every run cloned from it inherits the filter instead of attaching (and JIT-compiling) it
//! anew.
//!
//! A filter attaches to a thread, not to the process: the guard's other threads stay
//! unfiltered. The thread blocks every signal (no handler of the guard runs on it), takes
//! no_new_privs (which an unprivileged guard needs to attach a filter; it only affects
//! execve, which this thread never calls) and lives as long as the process, so its
//! children's parent-death signal fires only when the guard itself is gone.
//! Spawns of one filter are serialised on its thread: each holds it for the clone only (the
//! child's setup and exec, about 0.3 ms), while building the plan stays on the caller.

use super::SandboxError;
use std::collections::HashMap;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;
type Prog = Arc<Vec<libc::sock_filter>>;

/// The threads by program (its address; the map keeps it alive so it is never reused).
type Threads = Mutex<HashMap<usize, (Prog, Sender<Job>)>>;

fn threads() -> &'static Threads {
    static THREADS: OnceLock<Threads> = OnceLock::new();
    THREADS.get_or_init(Default::default)
}

fn err(what: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(format!("spawner thread: {what}"))
}

/// Runs `job` on the spawner thread of `prog` (started on first use) and returns its result.
/// The caller waits for it, which is what lets `job` borrow the caller's data.
pub(super) fn run_on<R: Send>(
    prog: &Prog,
    job: impl FnOnce() -> R + Send,
) -> Result<R, SandboxError> {
    let sender = sender(prog)?;
    let (tx, rx) = mpsc::sync_channel::<R>(1);
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let _ = tx.send(job());
    });
    // SAFETY: only the lifetime is changed. The job runs on the spawner thread while this
    // function waits on `rx`, which yields once the job has returned or has been dropped
    // unrun (a closed channel); either way nothing it borrows is used after this returns.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    sender.send(job).map_err(|_| err("gone"))?;
    rx.recv().map_err(|_| err("the spawn did not complete"))
}

/// The sender of `prog`'s thread, starting it if needed.
fn sender(prog: &Prog) -> Result<Sender<Job>, SandboxError> {
    let key = Arc::as_ptr(prog) as usize;
    let mut map = threads().lock().map_err(|_| err("registry poisoned"))?;
    if let Some((_, tx)) = map.get(&key) {
        return Ok(tx.clone());
    }
    let tx = start(Arc::clone(prog))?;
    map.insert(key, (Arc::clone(prog), tx.clone()));
    Ok(tx)
}

/// Starts a thread that attaches `prog` to itself, then runs jobs forever.
fn start(prog: Prog) -> Result<Sender<Job>, SandboxError> {
    let (tx, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), std::io::Error>>(1);
    std::thread::Builder::new()
        .name("sanctum-spawner".into())
        .spawn(move || {
            let attached = attach(&prog);
            let ok = attached.is_ok();
            let _ = ready_tx.send(attached);
            if ok {
                for job in rx {
                    job();
                }
            }
        })
        .map_err(err)?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(tx),
        Ok(Err(e)) => Err(err(format!("attaching the filter: {e}"))),
        Err(_) => Err(err("ended before attaching the filter")),
    }
}

/// Blocks every signal on this thread, sets no_new_privs and attaches `prog`.
fn attach(prog: &[libc::sock_filter]) -> Result<(), std::io::Error> {
    let len = u16::try_from(prog.len()).map_err(|_| std::io::Error::other("filter too long"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: sigfillset and pthread_sigmask write only the set passed and this thread's
    // mask; prctl takes integers; seccomp reads `fprog`, which points into `prog`, alive for
    // the call (the kernel copies the program).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &fprog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
