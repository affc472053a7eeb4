//! The confinement steps the child applies to itself between clone and exec. Everything here
//! is async-signal-safe and safe in a child that shares the parent's memory (see
//! `launch.rs`): raw syscalls on data prepared before the clone, no allocation, no locks, no
//! writes to memory other than the child's own stack. A failure names its [`Stage`] so the
//! parent can tell "sandbox setup failed" from "the command could not be executed".

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// One setrlimit call.
#[derive(Debug, Clone, Copy)]
pub struct Rlimit {
    pub resource: libc::__rlimit_resource_t,
    pub value: libc::rlim_t,
}

/// Everything the child applies, built in the parent.
#[derive(Debug)]
pub struct ChildPlan {
    /// The base Landlock layer (roots, network, scopes), cached (a pooled private tmp keeps its inode).
    pub landlock: Option<std::sync::Arc<OwnedFd>>,
    /// The cached layer capping deny_read and protected paths (shared between spawns).
    pub landlock_limits: Option<std::sync::Arc<OwnedFd>>,
    /// The run's seccomp filter (None in degraded mode without seccomp). The child inherits
    /// it from the spawner thread, in force from the clone on.
    pub seccomp: Option<std::sync::Arc<super::seccomp::Filter>>,
    pub rlimits: Vec<Rlimit>,
    pub drop_bounding: bool,
    /// Highest capability number of this kernel (/proc/sys/kernel/cap_last_cap).
    pub cap_last: u32,
    pub parent_pid: libc::pid_t,
    /// The uid and gid the run takes (`run_as`), with no supplementary groups.
    pub run_as: Option<(libc::uid_t, libc::gid_t)>,
    /// The join file (`tasks` on v1, `cgroup.procs` on v2) of the run's cgroups, open for
    /// writing (kept open by `cgroup`).
    pub cgroup_procs: Vec<RawFd>,
}

/// The steps of a child's life before exec, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    Signals,
    Stdio,
    /// Entering the working directory: the command cannot start, the sandbox is intact.
    Chdir,
    Setsid,
    ParentDeathSignal,
    ParentGone,
    Rlimits,
    CloseFds,
    /// Joining the run's cgroups.
    Cgroup,
    Capabilities,
    /// Taking the run's uid and gid (`run_as`).
    Identity,
    NoNewPrivs,
    Landlock,
    /// execve of every candidate path failed: the command cannot start.
    Exec,
}

impl Stage {
    pub const ALL: [Stage; 14] = [
        Stage::Signals,
        Stage::Stdio,
        Stage::Chdir,
        Stage::Setsid,
        Stage::ParentDeathSignal,
        Stage::ParentGone,
        Stage::Rlimits,
        Stage::CloseFds,
        Stage::Cgroup,
        Stage::Capabilities,
        Stage::Identity,
        Stage::NoNewPrivs,
        Stage::Landlock,
        Stage::Exec,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Signals => "signal handlers",
            Stage::Stdio => "stdio",
            Stage::Chdir => "working directory",
            Stage::Setsid => "setsid",
            Stage::ParentDeathSignal => "parent-death signal",
            Stage::ParentGone => "parent gone",
            Stage::Rlimits => "rlimits",
            Stage::CloseFds => "close fds",
            Stage::Cgroup => "cgroup",
            Stage::Capabilities => "capabilities",
            Stage::Identity => "run identity",
            Stage::NoNewPrivs => "no_new_privs",
            Stage::Landlock => "landlock",
            Stage::Exec => "exec",
        }
    }
}

/// Where the child stopped, and the errno of the failing call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub stage: Stage,
    pub errno: i32,
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// SECBIT_NOROOT | NOROOT_LOCKED | KEEP_CAPS_LOCKED | NO_CAP_AMBIENT_RAISE(+LOCKED).
const SECUREBITS: libc::c_ulong = 0x01 | 0x02 | 0x20 | 0x40 | 0x80;
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// The errno of the call that just failed.
pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `Err` at `stage` when a syscall returned a negative value.
pub(super) fn check(rc: libc::c_long, stage: Stage) -> Result<(), Failure> {
    if rc < 0 {
        Err(Failure {
            stage,
            errno: errno(),
        })
    } else {
        Ok(())
    }
}

impl ChildPlan {
    /// Applies the plan to the calling process, one step per line, in an order that matters:
    /// the session and parent-death signal first (nothing may outlive the guard), limits and
    /// fd hygiene, then capabilities, no_new_privs (which Landlock needs when unprivileged)
    /// and Landlock last. The seccomp filter is in force from the clone on (inherited from
    /// the spawner thread, see `seccomp::Filter`).
    ///
    /// # Safety
    /// Call only in a child between clone and exec; it changes process-wide state.
    pub unsafe fn apply(&self) -> Result<(), Failure> {
        // SAFETY: each step has the same contract as this function (child only, between clone
        // and exec), which the caller upholds; none allocates or locks.
        unsafe {
            self.own_session()?;
            self.die_with_parent()?;
            self.set_rlimits()?;
            self.close_inherited_fds()?;
            self.join_cgroups()?;
            self.drop_capabilities()?;
            self.set_no_new_privs()?;
            self.restrict_landlock()
        }
    }

    /// A new session, so the guard can signal the whole process group. Under a filter, with
    /// its session key in the argument registers setsid ignores (see `seccomp::Filter`).
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn own_session(&self) -> Result<(), Failure> {
        let [a, b, c, d] = self.seccomp.as_ref().map_or([0; 4], |f| f.session_key);
        // SAFETY: setsid reads no arguments; the four integers only fill the registers the
        // filter checks.
        let rc = unsafe { libc::syscall(libc::SYS_setsid, a, b, c, d) };
        check(rc, Stage::Setsid)
    }

    /// SIGKILL when the guard dies, and a check that it has not died already.
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn die_with_parent(&self) -> Result<(), Failure> {
        // SAFETY: prctl and getppid on integers.
        unsafe {
            check(
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong).into(),
                Stage::ParentDeathSignal,
            )?;
            // The parent may have died before the line above: then nobody would kill us.
            if libc::getppid() != self.parent_pid {
                return Err(Failure {
                    stage: Stage::ParentGone,
                    errno: libc::ESRCH,
                });
            }
        }
        Ok(())
    }

    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn set_rlimits(&self) -> Result<(), Failure> {
        for r in &self.rlimits {
            let lim = libc::rlimit {
                rlim_cur: r.value,
                rlim_max: r.value,
            };
            // setrlimit(2) itself, not glibc's wrapper: that calls prlimit64, which the
            // filter head this child already carries denies (it could reach other processes).
            // SAFETY: `lim` lives on this stack frame for the call.
            let rc = unsafe { libc::syscall(libc::SYS_setrlimit, r.resource, &lim) };
            check(rc, Stage::Rlimits)?;
        }
        Ok(())
    }

    /// Marks every fd above stdio close-on-exec: the command inherits nothing of the guard.
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn close_inherited_fds(&self) -> Result<(), Failure> {
        // SAFETY: close_range on integers.
        check(
            unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) },
            Stage::CloseFds,
        )
    }

    /// Moves the child into its run's cgroups (`0` names the writer) while it still has
    /// the guard's identity: everything it starts is born inside.
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn join_cgroups(&self) -> Result<(), Failure> {
        for &fd in &self.cgroup_procs {
            // SAFETY: write(2) of one byte from a static string to an fd the parent keeps open.
            let rc = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
            check(rc as libc::c_long, Stage::Cgroup)?;
        }
        Ok(())
    }

    /// Securebits first (needs CAP_SETPCAP), then ambient, bounding, the rest.
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn drop_capabilities(&self) -> Result<(), Failure> {
        // SAFETY: prctl, setresgid and setresuid on integers; setgroups with a count of 0
        // and a null list (the kernel reads nothing); capset on `hdr` and `data`, which live
        // on this stack frame for the call.
        unsafe {
            let _ = libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS);
            check(
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                )
                .into(),
                Stage::Capabilities,
            )?;
            if self.drop_bounding {
                for cap in 0..=self.cap_last {
                    // Reading is cheap; a drop rebuilds the credentials, so only present
                    // capabilities are dropped (after `serve` cleared its own set, none).
                    // A number this kernel does not know reads as EINVAL: nothing to drop.
                    if libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong) <= 0 {
                        continue;
                    }
                    check(
                        libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong).into(),
                        Stage::Capabilities,
                    )?;
                }
            }
            // The run's identity while CAP_SETGID/CAP_SETUID still hold; leaving uid 0
            // clears the permitted set too (no NO_SETUID_FIXUP), and capset below empties
            // whatever is left either way. Raw syscalls, never libc's wrappers: those
            // broadcast the change to every thread of the process, and this child shares
            // the guard's memory and so its thread list (see launch.rs).
            if let Some((uid, gid)) = self.run_as {
                check(
                    libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()),
                    Stage::Identity,
                )?;
                check(
                    libc::syscall(libc::SYS_setresgid, gid, gid, gid),
                    Stage::Identity,
                )?;
                check(
                    libc::syscall(libc::SYS_setresuid, uid, uid, uid),
                    Stage::Identity,
                )?;
            }
            let mut hdr = CapHeader {
                version: LINUX_CAPABILITY_VERSION_3,
                pid: 0,
            };
            let data = [CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            }; 2];
            check(
                libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()),
                Stage::Capabilities,
            )
        }
    }

    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn set_no_new_privs(&self) -> Result<(), Failure> {
        // SAFETY: prctl on integers.
        check(
            unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into(),
            Stage::NoNewPrivs,
        )
    }

    /// Two layers: Landlock allows an access only if both do.
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    #[inline(always)]
    unsafe fn restrict_landlock(&self) -> Result<(), Failure> {
        let layers = [self.landlock.as_deref(), self.landlock_limits.as_deref()];
        for fd in layers.into_iter().flatten() {
            // SAFETY: a ruleset fd owned by `self`, which the parent keeps open until exec.
            let rc =
                unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
            check(rc, Stage::Landlock)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Stage;

    /// The child reports a stage by discriminant and the parent reads it back by index.
    #[test]
    fn stage_discriminants_are_indexes_of_all() {
        for (i, s) in Stage::ALL.iter().enumerate() {
            assert_eq!(usize::from(*s as u8), i, "{s:?}");
        }
    }
}
