//! The traced child's confinement, prepared in the tracer and applied between fork and exec.

use super::{Scene, TraceError};
use landlock::{
    AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};
use nix::sys::resource::{setrlimit, Resource};
use nix::unistd::{setgid, setgroups, setsid, setuid, Gid, Uid};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The unprivileged identity a command runs as when the recorder is root.
pub(super) const NOBODY: u32 = 65534;

/// A Landlock ruleset that lets the command write only below `scene.tmp` and to `/dev/null`,
/// and scopes its signals and abstract unix sockets to itself. Reads are not restricted: the
/// recorder wants to see them.
pub(super) fn ruleset(scene: &Scene) -> Result<OwnedFd, TraceError> {
    let abi = ABI::V6;
    let ll = |e: &dyn std::fmt::Display| TraceError::Landlock(e.to_string());
    let write = AccessFs::from_write(abi);
    let tmp = PathFd::new(&scene.tmp).map_err(|e| ll(&e))?;
    let null = PathFd::new("/dev/null").map_err(|e| ll(&e))?;
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write)
        .map_err(|e| ll(&e))?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(|e| ll(&e))?
        .create()
        .map_err(|e| ll(&e))?
        .add_rule(PathBeneath::new(tmp, write))
        .map_err(|e| ll(&e))?
        .add_rule(PathBeneath::new(
            null,
            AccessFs::WriteFile | AccessFs::Truncate,
        ))
        .map_err(|e| ll(&e))?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| TraceError::Landlock("ruleset has no fd".into()))
}

/// Applies the confinement to the calling process and asks to be traced by its parent
/// thread; the exec that follows then stops with SIGTRAP.
///
/// Runs between fork and exec: it only makes system calls, it neither allocates nor locks.
pub(super) fn confine(landlock: RawFd, as_nobody: bool) -> std::io::Result<()> {
    setsid()?;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    setrlimit(Resource::RLIMIT_FSIZE, 8 << 20, 8 << 20)?;
    setrlimit(Resource::RLIMIT_CORE, 0, 0)?;
    setrlimit(Resource::RLIMIT_CPU, 30, 30)?;
    if as_nobody {
        setgroups(&[])?;
        setgid(Gid::from_raw(NOBODY))?;
        setuid(Uid::from_raw(NOBODY))?;
    }
    nix::sys::prctl::set_no_new_privs()?;
    // SAFETY: a raw system call with an fd that stays open for its duration (the tracer holds
    // it) and flags 0; it touches no memory of ours.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, landlock, 0u32) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    nix::sys::ptrace::traceme()?;
    Ok(())
}

/// The ruleset fd as the child sees it (the same number: fork copies the table).
pub(super) fn raw(fd: &OwnedFd) -> RawFd {
    fd.as_raw_fd()
}
