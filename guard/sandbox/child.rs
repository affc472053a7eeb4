//! What runs in the child between fork and exec. Everything here is async-signal-safe: raw
//! syscalls on data prepared before fork, no allocation, no locks. On failure the stage number
//! is written to a pipe so the parent can tell "sandbox setup failed" from "exec failed".

use std::io;
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
    /// The base Landlock layer (roots, network, scopes), cached unless it names a private tmp.
    pub landlock: Option<std::sync::Arc<OwnedFd>>,
    /// The cached layer capping deny_read and protected paths (shared between spawns).
    pub landlock_limits: Option<std::sync::Arc<OwnedFd>>,
    pub bpf: std::sync::Arc<Vec<libc::sock_filter>>,
    pub rlimits: Vec<Rlimit>,
    pub drop_bounding: bool,
    /// Highest capability number of this kernel (/proc/sys/kernel/cap_last_cap).
    pub cap_last: u32,
    pub parent_pid: libc::pid_t,
}

/// Stages, in order; the index is what the child reports.
pub const STAGES: [&str; 9] = [
    "setsid",
    "parent-death signal",
    "rlimits",
    "close fds",
    "capabilities",
    "no_new_privs",
    "landlock",
    "seccomp",
    "parent gone",
];

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

fn fail(stage_fd: RawFd, stage: usize) -> io::Error {
    let err = io::Error::last_os_error();
    let byte = [stage as u8];
    // SAFETY: write(2) of one byte from a stack buffer to a pipe fd we own; async-signal-safe.
    unsafe { libc::write(stage_fd, byte.as_ptr().cast(), 1) };
    err
}

fn check(rc: libc::c_long, stage_fd: RawFd, stage: usize) -> io::Result<()> {
    if rc < 0 {
        Err(fail(stage_fd, stage))
    } else {
        Ok(())
    }
}

impl ChildPlan {
    /// Applies the plan to the calling (forked, single-threaded) process.
    ///
    /// # Safety
    /// Call only in a child between fork and exec; it changes process-wide state.
    pub unsafe fn apply(&self, stage_fd: RawFd) -> io::Result<()> {
        // SAFETY (whole block): each call is a raw syscall on integers or on memory owned by
        // `self`, which the fork copied and nothing else mutates; none allocates or locks.
        unsafe {
            check(libc::setsid().into(), stage_fd, 0)?;
            check(
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong).into(),
                stage_fd,
                1,
            )?;
            // The parent may have died before the line above: then nobody would kill us.
            if libc::getppid() != self.parent_pid {
                *libc::__errno_location() = libc::ESRCH;
                return Err(fail(stage_fd, 8));
            }
            for r in &self.rlimits {
                let lim = libc::rlimit {
                    rlim_cur: r.value,
                    rlim_max: r.value,
                };
                check(libc::setrlimit(r.resource, &lim).into(), stage_fd, 2)?;
            }
            check(
                libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC),
                stage_fd,
                3,
            )?;
            // Caps: securebits first (needs CAP_SETPCAP), then ambient, bounding, the rest.
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
                stage_fd,
                4,
            )?;
            if self.drop_bounding {
                for cap in 0..=self.cap_last {
                    // Reading is cheap; a drop rebuilds the credentials, so only present
                    // capabilities are dropped (after `serve` cleared its own set, none).
                    // A number this kernel does not know reads as EINVAL: nothing to drop.
                    if libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong) <= 0 {
                        continue;
                    }
                    let rc = libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong);
                    if rc < 0 {
                        return Err(fail(stage_fd, 4));
                    }
                }
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
                stage_fd,
                4,
            )?;
            check(
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into(),
                stage_fd,
                5,
            )?;
            // Two layers: Landlock allows an access only if both do.
            let layers = [self.landlock.as_deref(), self.landlock_limits.as_deref()];
            for fd in layers.into_iter().flatten() {
                check(
                    libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32),
                    stage_fd,
                    6,
                )?;
            }
            if self.bpf.is_empty() {
                return Ok(());
            }
            let prog = libc::sock_fprog {
                len: self.bpf.len() as u16,
                filter: self.bpf.as_ptr() as *mut libc::sock_filter,
            };
            check(
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &prog as *const libc::sock_fprog,
                ),
                stage_fd,
                7,
            )?;
        }
        Ok(())
    }
}
