//! Probes of what this kernel and this process offer, done before any spawn.

use std::sync::OnceLock;

/// The Landlock ABI version of the running kernel; 0 when Landlock is missing or disabled.
/// Probed once per process.
pub fn landlock_abi() -> u8 {
    static ABI: OnceLock<u8> = OnceLock::new();
    *ABI.get_or_init(probe_landlock_abi)
}

fn probe_landlock_abi() -> u8 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset with a NULL attr, size 0 and the VERSION flag only
    // returns the ABI number (or -1/errno); it reads and writes no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u8::try_from(v.max(0)).unwrap_or(u8::MAX)
}

/// Whether seccomp filter mode with the actions we use is available (probed once).
pub fn seccomp_available() -> bool {
    static AVAIL: OnceLock<bool> = OnceLock::new();
    *AVAIL.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
            .map(|s| s.contains("errno") && s.contains("kill_process"))
            .unwrap_or(false)
    })
}

/// Whether this process may clear the capability bounding set (needs CAP_SETPCAP).
pub fn can_drop_bounding() -> bool {
    caps::has_cap(None, caps::CapSet::Effective, caps::Capability::CAP_SETPCAP).unwrap_or(false)
}

/// Clears the calling thread's capability bounding set, so that nothing it (or a thread it
/// creates later) executes can regain a capability through file capabilities or a
/// setuid-root binary; the guard itself keeps its current capabilities. `serve` calls it
/// before starting any thread: the bounding set is per thread, inherited at creation, and can
/// only shrink. Called while the process has one thread, success means no thread will ever
/// hold a bounding capability again ([`bounding_set_empty_everywhere`]), and confined children
/// skip their own drop loop. Returns how many were dropped (0 without CAP_SETPCAP).
pub fn clear_own_bounding_set() -> std::io::Result<usize> {
    if !can_drop_bounding() {
        return Ok(0);
    }
    let single = threads() == Some(1);
    let mut dropped = 0;
    // Every number the kernel knows (not only those the caps crate names).
    for cap in 0..=cap_last_cap() {
        if bounding_has(cap)? {
            // SAFETY: prctl(PR_CAPBSET_DROP) takes an integer and changes only this thread's
            // credentials; no memory is passed.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap)) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
            dropped += 1;
        }
    }
    let mut empty = true;
    for cap in 0..=cap_last_cap() {
        empty &= !bounding_has(cap)?;
    }
    if single && empty {
        EMPTY_EVERYWHERE.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(dropped)
}

/// Whether the calling thread's bounding set holds `cap`.
fn bounding_has(cap: u32) -> std::io::Result<bool> {
    // SAFETY: prctl(PR_CAPBSET_READ) takes an integer and reads this thread's credentials.
    match unsafe { libc::prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap)) } {
        r if r < 0 => Err(std::io::Error::last_os_error()),
        r => Ok(r > 0),
    }
}

static EMPTY_EVERYWHERE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True once [`clear_own_bounding_set`] emptied the bounding set of a single-threaded
/// process: every thread since inherited the empty set, and no set can grow back.
pub fn bounding_set_empty_everywhere() -> bool {
    EMPTY_EVERYWHERE.load(std::sync::atomic::Ordering::Relaxed)
}

/// This process's thread count, from /proc/self/status.
fn threads() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Threads:"))?;
    line.trim_start_matches("Threads:").trim().parse().ok()
}

/// The effective capability mask of this process, from /proc/self/status.
pub fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
}

/// The highest capability number the kernel knows (63 if unreadable: dropping unknown
/// numbers only returns EINVAL). Read once.
pub fn cap_last_cap() -> u32 {
    static LAST: OnceLock<u32> = OnceLock::new();
    *LAST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .filter(|&n: &u32| n < 64)
            .unwrap_or(63)
    })
}

/// Whether the `/proc` mount in `mountinfo` (the text of /proc/self/mountinfo) hides the
/// processes a reader may not ptrace (`hidepid=ptraceable`, shown as `4` by older kernels);
/// None when there is no /proc mount.
pub fn proc_hides_other_processes(mountinfo: &str) -> Option<bool> {
    // Fields: id parent major:minor root mount-point options [optional...] - type source super.
    let line = mountinfo.lines().rev().find(|l| {
        let mut f = l.split(' ');
        f.nth(4) == Some("/proc")
            && l.split(" - ")
                .nth(1)
                .is_some_and(|t| t.starts_with("proc "))
    })?;
    let supers = line.split(" - ").nth(1)?.split(' ').nth(2).unwrap_or("");
    Some(
        supers
            .split(',')
            .any(|o| o == "hidepid=ptraceable" || o == "hidepid=4"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_hidepid_is_read_from_the_last_proc_mount() {
        let plain = "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n";
        let hidden = "98 22 0:55 / /proc rw,relatime - proc proc rw,hidepid=ptraceable\n";
        let old = "98 22 0:55 / /proc rw,relatime - proc proc rw,hidepid=4\n";
        let invisible = "98 22 0:55 / /proc rw,relatime - proc proc rw,hidepid=invisible\n";
        let sys = "23 1 0:22 / /sys rw - sysfs sysfs rw\n";
        assert_eq!(proc_hides_other_processes(plain), Some(false));
        assert_eq!(
            proc_hides_other_processes(&format!("{plain}{hidden}")),
            Some(true)
        );
        assert_eq!(
            proc_hides_other_processes(&format!("{hidden}{plain}")),
            Some(false)
        );
        assert_eq!(proc_hides_other_processes(old), Some(true));
        // `invisible` lets the root group (a run as root) see every process.
        assert_eq!(proc_hides_other_processes(invisible), Some(false));
        assert_eq!(proc_hides_other_processes(sys), None);
        // A bind of /proc elsewhere is not the /proc mount.
        let elsewhere = "99 1 0:55 / /srv/proc rw - proc proc rw,hidepid=ptraceable\n";
        assert_eq!(
            proc_hides_other_processes(&format!("{plain}{elsewhere}")),
            Some(false)
        );
    }
}
