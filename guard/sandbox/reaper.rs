//! Nothing a run starts outlives it as a process or a zombie of the guard.
//!
//! A run lives in one process group and session, which its leader creates (`setsid`) and
//! which it cannot leave (seccomp refuses `setsid`, `setpgid` and `clone(CLONE_PARENT)`), so
//! one `kill(-pgid)` while the leader is unreaped kills all of it (see `process.rs`). What a
//! signal does not do is reap: a process whose parent died is re-parented to the nearest
//! child subreaper, and the guard is one ([`enable`]), so every orphan of a run becomes the
//! guard's child and the guard must collect it. [`settle`] does that after each run: it
//! reaps the guard's children that belong to no live run, and kills those still alive,
//! until the run's group is empty.
//!
//! Which children are a run's: every process a run creates stays in a session other than
//! the guard's (its leader's), and nothing can join the guard's own session, so a child in
//! the guard's session (a helper the guard spawned itself) is never touched. A child in a
//! live run's group is left to that run. Only our own unreaped children are signalled or
//! waited for by pid: their pid cannot name another process until we reap it.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::Duration;

/// Leaders of the runs in progress (pid, which is also the run's group), with a count in
/// case a pid is registered again before an old entry is dropped.
static LEADERS: Mutex<Option<HashMap<libc::pid_t, u32>>> = Mutex::new(None);
/// Held shared from a leader's clone until it is registered, exclusively by a sweep: a
/// sweep never sees a fresh leader it does not know yet.
static GATE: RwLock<()> = RwLock::new(());

/// How long [`settle`] keeps retrying for a group whose members are still dying.
const SETTLE_CAP: Duration = Duration::from_secs(30);

/// Makes this process a child subreaper (once): orphans of a run become its children.
pub fn enable() -> std::io::Result<()> {
    static DONE: OnceLock<Result<(), i32>> = OnceLock::new();
    // SAFETY: prctl on integers; it changes only this process's reaper attribute.
    let r = DONE.get_or_init(
        || match unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL)),
        },
    );
    r.map_err(std::io::Error::from_raw_os_error)
}

/// Shared hold of the gate, taken before a leader's clone and kept until [`register`].
pub fn spawning() -> std::sync::RwLockReadGuard<'static, ()> {
    GATE.read().unwrap_or_else(|p| p.into_inner())
}

fn leaders() -> std::sync::MutexGuard<'static, Option<HashMap<libc::pid_t, u32>>> {
    LEADERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A run's leader was started.
pub fn register(pid: libc::pid_t) {
    *leaders()
        .get_or_insert_with(HashMap::new)
        .entry(pid)
        .or_default() += 1;
}

/// A run's leader was reaped.
pub fn unregister(pid: libc::pid_t) {
    if let Some(map) = leaders().as_mut() {
        if let Some(n) = map.get_mut(&pid) {
            *n -= 1;
            if *n == 0 {
                map.remove(&pid);
            }
        }
    }
}

/// One child of this process: pid, state letter, process group, session.
struct Child {
    pid: libc::pid_t,
    state: char,
    pgrp: libc::pid_t,
    session: libc::pid_t,
}

/// `/proc/PID/stat` fields after the command name: state, ppid, pgrp, session.
fn child(pid: libc::pid_t) -> Option<Child> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let _ppid = f.next()?;
    let pgrp = f.next()?.parse().ok()?;
    let session = f.next()?.parse().ok()?;
    Some(Child {
        pid,
        state,
        pgrp,
        session,
    })
}

/// This process's children: every thread's `children` list.
fn children() -> Vec<libc::pid_t> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
    }
    out
}

/// Reaps every zombie child that belongs to no live run and kills every live one; returns
/// how many are still alive (killed, to reap later).
fn sweep() -> usize {
    let _gate = GATE.write().unwrap_or_else(|p| p.into_inner());
    let live: Vec<libc::pid_t> = leaders()
        .as_ref()
        .map(|m| m.keys().copied().collect())
        .unwrap_or_default();
    // SAFETY: getsid(0) reads this process's session id.
    let own_session = unsafe { libc::getsid(0) };
    let mut alive = 0;
    // A registered leader is skipped before its stat is read (one file read per run in
    // flight saved on every sweep).
    let unknown = children().into_iter().filter(|p| !live.contains(p));
    for c in unknown.filter_map(child) {
        if c.session == own_session || live.contains(&c.pid) || live.contains(&c.pgrp) {
            continue;
        }
        if c.state == 'Z' || c.state == 'X' {
            let mut status = 0;
            // SAFETY: waitpid on our own unreaped child, writing one int.
            unsafe { libc::waitpid(c.pid, &mut status, libc::WNOHANG) };
        } else {
            // SAFETY: kill(2) on our own unreaped child: its pid names nobody else.
            unsafe { libc::kill(c.pid, libc::SIGKILL) };
            alive += 1;
        }
    }
    alive
}

/// Whether process group `pgid` has no member left (dead or alive).
fn group_gone(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 checks existence only and sends nothing.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// After the leader of group `pgid` was killed with its group and reaped: reaps what the run
/// left as children of the guard, now, and in a background thread while members are still
/// dying. (Once the leader is reaped its pid may name a new group; then this only waits
/// longer: it never touches a live run's processes.)
///
/// `contained`: no process of the run could leave its group, so once the group is empty
/// (no member alive or a zombie) nothing of the run is left and the sweep, a read of every
/// thread's `children` in /proc, is skipped: the common case, a run that left nothing.
pub fn settle(pgid: libc::pid_t, contained: bool) {
    if contained && group_gone(pgid) {
        return;
    }
    if sweep() == 0 && group_gone(pgid) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("sanctum-reaper".into())
        .spawn(move || {
            let start = std::time::Instant::now();
            let mut pause = Duration::from_millis(1);
            loop {
                let alive = sweep();
                if (alive == 0 && group_gone(pgid)) || start.elapsed() > SETTLE_CAP {
                    return;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "could not start the reaper thread; orphans are reaped after the next run");
    }
}
