//! How a profile's per-run limits (`Limits::pids`, `memory_mb`, `cpu_percent`, `tmp_mb`) are
//! enforced on this machine, decided before each spawn, and what cannot be (fail closed).
//!
//! - processes: cgroup `pids.max`; else RLIMIT_NPROC set to what the run's uid already runs
//!   plus `pids`. RLIMIT_NPROC counts every process and thread of the uid (the guard's, the
//!   gateway's, other runs'), so it bounds the uid's total at the spawn, not the run alone,
//!   and the kernel ignores it for uid 0: a run as root without a pids cgroup is refused.
//! - memory: cgroup `memory.max`; else RLIMIT_AS per process, which with
//!   the process cap bounds the total loosely (reported as `memory:rlimit-as`).
//! - CPU: cgroup `cpu.max` (a share); RLIMIT_CPU per process always (the time).
//! - tmp: the run's tmp is measured while it runs and the run is killed over the size
//!   (`run.rs`), with RLIMIT_FSIZE capping any one file. (A tmpfs mounted over the private
//!   tmp in the run's own mount namespace would bound it in the kernel, but Landlock skips
//!   an overmounted directory when it walks a path up, so the tmp's grant would not reach
//!   the tmpfs: every write was refused.)

use super::cgroup::{self, RunCgroup, Wanted};
use super::profile::ResolvedProfile;
use super::SandboxError;
use std::os::unix::ffi::OsStrExt;

/// What one run gets, and how each limit is enforced (for the status).
#[derive(Debug, Default)]
pub struct Plan {
    pub cgroup: Option<RunCgroup>,
    /// RLIMIT_NPROC to set instead of the profile's.
    pub nproc: Option<u64>,
    /// `limit:how` for each per-run limit (`pids:cgroup`, `tmp:poll`…).
    pub how: Vec<String>,
    /// Limits the profile sets that nothing here can enforce.
    pub missing: Vec<String>,
    /// The tmp is bounded by polling its size.
    pub tmp_poll: bool,
}

/// Processes and threads whose real uid is `uid`, as RLIMIT_NPROC counts them.
pub fn uid_tasks(uid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        if !name.as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            n += field("Threads:").unwrap_or(1);
        }
    }
    n
}

/// Decides how `p`'s limits are enforced for one run and makes its cgroup.
pub fn plan(p: &ResolvedProfile) -> Result<Plan, SandboxError> {
    let l = &p.limits;
    let mut out = Plan::default();
    let b = cgroup::bases();
    let want = Wanted {
        pids: if b.pids() { l.pids } else { 0 },
        memory_mb: if b.memory() { l.memory_mb } else { 0 },
        cpu_percent: if b.cpu() { l.cpu_percent } else { 0 },
    };
    out.cgroup = RunCgroup::create(want)
        .map_err(|e| SandboxError::Profile(format!("the run's cgroup: {e}")))?;
    if l.pids > 0 {
        if want.pids > 0 {
            out.how.push("pids:cgroup".into());
        } else {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = p
                .run_as
                .map_or_else(|| unsafe { libc::getuid() }, |r| r.uid);
            if uid == 0 {
                out.missing
                    .push("pids (no pids cgroup; RLIMIT_NPROC does not bind uid 0)".into());
            } else {
                let n = uid_tasks(uid).saturating_add(l.pids).min(l.nproc);
                out.nproc = Some(n);
                out.how.push(format!("pids:rlimit-nproc-uid={n}"));
            }
        }
    }
    if l.memory_mb > 0 {
        out.how.push(if want.memory_mb > 0 {
            "memory:cgroup".into()
        } else {
            "memory:rlimit-as".into()
        });
    }
    if l.cpu_percent > 0 {
        // Without a cpu cgroup, RLIMIT_CPU (per process) times the process cap bounds it.
        out.how.push(if want.cpu_percent > 0 {
            "cpu:cgroup".into()
        } else {
            "cpu:rlimit-cpu".into()
        });
    }
    if p.tmp.is_some() && l.tmp_mb > 0 {
        out.tmp_poll = true;
        out.how.push("tmp:poll".into());
    }
    Ok(out)
}
