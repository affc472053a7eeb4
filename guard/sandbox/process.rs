//! A running confined command: its pid, a pidfd to wait on, and the process group it leads
//! (the child called setsid). Waiting for the exit and reaping are separate steps so that
//! what is left of the group is killed while the leader is still a zombie: until it is
//! reaped, its pid (and so the group id) cannot name anybody else.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

#[derive(Debug)]
struct Leader {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    /// Nothing the run starts can leave its process group (its filter refuses `setsid`,
    /// `setpgid` and `clone(CLONE_PARENT)`), so an empty group is an ended run.
    contained: bool,
}

impl Leader {
    fn kill_group(&self) {
        // SAFETY: kill(2) with a negative pid (a process group) and a signal number; the
        // group is ours while the leader is unreaped. ESRCH (group gone) is the normal case.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
    }

    /// After the leader was reaped (or reaping failed): the run is over; what it left as the
    /// guard's children is reaped.
    fn done(&self) {
        super::reaper::unregister(self.pid);
        super::reaper::settle(self.pid, self.contained);
    }

    /// waitpid on our own unreaped child; `None` while it runs (with WNOHANG).
    fn reap(&self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
        loop {
            let mut status = 0;
            // SAFETY: waitpid on a pid that is our child and unreaped, writing one int.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            match rc {
                0 => return Ok(None),
                r if r > 0 => return Ok(Some(ExitStatus::from_raw(status))),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }
}

/// The confined command. Dropping it before [`ConfinedChild::finish`] kills its whole group
/// and reaps it (in the background under tokio).
#[derive(Debug)]
pub struct ConfinedChild {
    leader: Option<Leader>,
    pid: libc::pid_t,
}

impl ConfinedChild {
    pub(super) fn new(pid: libc::pid_t, pidfd: OwnedFd, contained: bool) -> Self {
        super::reaper::register(pid);
        ConfinedChild {
            leader: Some(Leader {
                pid,
                pidfd,
                contained,
            }),
            pid,
        }
    }

    /// The child's pid, which is also its process group id.
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Kills the whole process group (a no-op once reaped).
    pub fn kill_group(&self) {
        if let Some(l) = &self.leader {
            l.kill_group();
        }
    }

    /// Waits until the leader has exited, without reaping it.
    pub async fn exited(&self) -> io::Result<()> {
        let Some(l) = &self.leader else {
            return Ok(());
        };
        // A pidfd polls readable once its process has exited.
        // SAFETY: the borrowed pidfd stays open and unchanged for the AsyncFd's whole life,
        // which ends with this call.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(
                l.pidfd.as_fd(),
                tokio::io::Interest::READABLE,
            )
        }
        .map_err(|e| e.into_parts().1)?;
        let _ready = fd.readable().await?;
        Ok(())
    }

    /// Blocking form of [`ConfinedChild::exited`].
    pub fn exited_blocking(&self) -> io::Result<()> {
        let Some(l) = &self.leader else {
            return Ok(());
        };
        loop {
            // SAFETY: siginfo_t is plain data, valid when zeroed.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid with WNOWAIT on our pidfd writes one siginfo and reaps nothing.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PIDFD,
                    l.pidfd.as_raw_fd() as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// After [`ConfinedChild::exited`]: kills what the command left running in its group,
    /// then reaps the leader and returns its status.
    pub fn finish(&mut self) -> io::Result<ExitStatus> {
        let l = self
            .leader
            .take()
            .ok_or_else(|| io::Error::other("child already reaped"))?;
        l.kill_group();
        let status = l.reap(0);
        l.done();
        match status? {
            Some(st) => Ok(st),
            None => Err(io::Error::other("waitpid returned no status")),
        }
    }
}

impl Drop for ConfinedChild {
    fn drop(&mut self) {
        let Some(l) = self.leader.take() else {
            return;
        };
        l.kill_group();
        if let Ok(Some(_)) = l.reap(libc::WNOHANG) {
            l.done();
            return;
        }
        // Killed, but not dead yet: reap off the event loop when there is one.
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn_blocking(move || {
                    let _ = l.reap(0);
                    l.done();
                });
            }
            Err(_) => {
                let _ = l.reap(0);
                l.done();
            }
        }
    }
}
