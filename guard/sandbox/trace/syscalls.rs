//! The system calls the recorder looks at, by number, and where their arguments are.

/// Where an open's flags are.
#[derive(Debug, Clone, Copy)]
pub(super) enum Flags {
    /// In argument N.
    Arg(usize),
    /// In the first u64 of the `struct open_how` argument N points to.
    How(usize),
    /// `creat`: always a write.
    Creat,
}

/// A path argument: the dirfd argument it is relative to (none: the cwd), the string argument.
pub(super) type PathArg = (Option<usize>, usize);

#[derive(Debug, Clone, Copy)]
pub(super) enum Call {
    Open {
        path: PathArg,
        flags: Flags,
    },
    /// A call that changes each of these paths.
    Write {
        name: &'static str,
        paths: &'static [PathArg],
    },
    /// `connect(fd, addr, len)`.
    Connect,
    /// `sendto(fd, buf, len, flags, addr, len)`.
    SendTo,
}

macro_rules! w {
    ($name:literal, $($p:expr),+) => {
        Call::Write { name: $name, paths: &[$($p),+] }
    };
}

/// The call `nr` is, or `None` when the recorder does not look at it.
#[allow(non_upper_case_globals)] // libc names the syscall numbers in lower case
pub(super) fn lookup(nr: i64) -> Option<Call> {
    use libc::*;
    Some(match nr {
        SYS_openat => Call::Open {
            path: (Some(0), 1),
            flags: Flags::Arg(2),
        },
        SYS_openat2 => Call::Open {
            path: (Some(0), 1),
            flags: Flags::How(2),
        },
        SYS_unlinkat => w!("unlinkat", (Some(0), 1)),
        SYS_mkdirat => w!("mkdirat", (Some(0), 1)),
        SYS_mknodat => w!("mknodat", (Some(0), 1)),
        SYS_truncate => w!("truncate", (None, 0)),
        SYS_fchmodat => w!("fchmodat", (Some(0), 1)),
        SYS_fchmodat2 => w!("fchmodat2", (Some(0), 1)),
        SYS_fchownat => w!("fchownat", (Some(0), 1)),
        SYS_utimensat => w!("utimensat", (Some(0), 1)),
        SYS_setxattr => w!("setxattr", (None, 0)),
        SYS_lsetxattr => w!("lsetxattr", (None, 0)),
        SYS_removexattr => w!("removexattr", (None, 0)),
        SYS_lremovexattr => w!("lremovexattr", (None, 0)),
        SYS_renameat => w!("renameat", (Some(0), 1), (Some(2), 3)),
        SYS_renameat2 => w!("renameat2", (Some(0), 1), (Some(2), 3)),
        SYS_linkat => w!("linkat", (Some(2), 3)),
        SYS_symlinkat => w!("symlinkat", (Some(1), 2)),
        SYS_connect => Call::Connect,
        SYS_sendto => Call::SendTo,
        _ => return legacy(nr),
    })
}

/// The pre-`*at` calls x86_64 still has.
#[cfg(target_arch = "x86_64")]
#[allow(non_upper_case_globals)]
fn legacy(nr: i64) -> Option<Call> {
    use libc::*;
    Some(match nr {
        SYS_open => Call::Open {
            path: (None, 0),
            flags: Flags::Arg(1),
        },
        SYS_creat => Call::Open {
            path: (None, 0),
            flags: Flags::Creat,
        },
        SYS_unlink => w!("unlink", (None, 0)),
        SYS_rmdir => w!("rmdir", (None, 0)),
        SYS_mkdir => w!("mkdir", (None, 0)),
        SYS_mknod => w!("mknod", (None, 0)),
        SYS_chmod => w!("chmod", (None, 0)),
        SYS_chown => w!("chown", (None, 0)),
        SYS_lchown => w!("lchown", (None, 0)),
        SYS_utime => w!("utime", (None, 0)),
        SYS_utimes => w!("utimes", (None, 0)),
        SYS_futimesat => w!("futimesat", (Some(0), 1)),
        SYS_rename => w!("rename", (None, 0), (None, 1)),
        SYS_link => w!("link", (None, 1)),
        SYS_symlink => w!("symlink", (None, 1)),
        _ => return None,
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn legacy(_nr: i64) -> Option<Call> {
    None
}
