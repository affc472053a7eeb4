//! Per-run cgroups: what bounds a run as a whole (its processes, memory and CPU share)
//! rather than per process as rlimits do, and what RLIMIT_NPROC cannot do for uid 0.
//!
//! The guard uses its own cgroup as the parent of one child cgroup per run, and only when it
//! can write there: on cgroup v2 the controllers must be enabled in (or enableable for) its
//! cgroup's `subtree_control`, which the kernel allows only for a cgroup without processes,
//! so a guard alone in its cgroup (a container's, a systemd unit's with `Delegate=yes`)
//! moves itself into a leaf `sanctum-guard` first; on cgroup v1 each controller's hierarchy
//! is used where the guard sits in it. Elsewhere there is no per-run cgroup and the caller
//! falls back to rlimits (`spawn.rs`) or refuses to run (fail closed).
//!
//! The child joins its run's cgroup itself, between clone and exec, by writing `0` ("me")
//! to each `cgroup.procs` opened here (`child.rs`); everything it starts is born inside.
//!
//! Run cgroups are pooled: making one (mkdir, its limits written, on v1 one per hierarchy)
//! and removing it were ~0.25 ms of an autonomous run's ~0.6 ms of overhead. A cgroup goes
//! back to the pool only when it is empty (no member in any `cgroup.procs`, and `pids.current`
//! 0, which still counts zombies), and is handed out again only for the same limits; only
//! the guard can move a process into it (the run's processes cannot write the cgroup
//! files), so an idle pooled cgroup stays empty. What a pooled cgroup keeps from its last
//! run is accounting only (usage counters, reclaimable page cache on v1), not limits.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The limits one run's cgroup enforces (0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wanted {
    pub pids: u64,
    pub memory_mb: u64,
    pub cpu_percent: u64,
}

/// Where each controller's per-run cgroups are made, when the guard may.
#[derive(Debug, Default, Clone)]
pub struct Bases {
    v2: bool,
    pids: Option<PathBuf>,
    memory: Option<PathBuf>,
    cpu: Option<PathBuf>,
}

impl Bases {
    /// The controllers per-run cgroups can enforce, by name (for status and `doctor`).
    pub fn available(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (name, b) in [
            ("pids", &self.pids),
            ("memory", &self.memory),
            ("cpu", &self.cpu),
        ] {
            if b.is_some() {
                v.push(name);
            }
        }
        v
    }

    pub fn pids(&self) -> bool {
        self.pids.is_some()
    }

    pub fn memory(&self) -> bool {
        self.memory.is_some()
    }

    pub fn cpu(&self) -> bool {
        self.cpu.is_some()
    }
}

/// The guard's usable cgroup bases, found once per process.
pub fn bases() -> &'static Bases {
    static BASES: OnceLock<Bases> = OnceLock::new();
    BASES.get_or_init(detect)
}

/// `/proc/self/cgroup` lines: (controllers, path); v2's line has no controllers.
fn own_paths() -> Vec<(String, String)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            let _id = f.next()?;
            Some((f.next()?.to_string(), f.next()?.to_string()))
        })
        .collect()
}

/// Mount points of cgroup hierarchies: (fstype, mount point, options).
fn mounts() -> Vec<(String, PathBuf, String)> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (mnt, fstype, opts) = (f.get(1)?, f.get(2)?, f.get(3)?);
            (*fstype == "cgroup" || *fstype == "cgroup2").then(|| {
                (
                    fstype.to_string(),
                    PathBuf::from(mnt.replace("\\040", " ")),
                    opts.to_string(),
                )
            })
        })
        .collect()
}

/// A directory the guard may create cgroups in (probed by making and removing one).
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!("sanctum-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).is_ok() && std::fs::remove_dir(&probe).is_ok()
}

fn detect() -> Bases {
    let own = own_paths();
    let mounts = mounts();
    let mut b = Bases::default();
    for ctrl in ["pids", "memory", "cpu"] {
        let Some((_, path)) = own.iter().find(|(c, _)| c.split(',').any(|x| x == ctrl)) else {
            continue;
        };
        let Some((_, mnt, _)) = mounts
            .iter()
            .find(|(t, _, o)| t == "cgroup" && o.split(',').any(|x| x == ctrl))
        else {
            continue;
        };
        let dir = mnt.join(path.trim_start_matches('/'));
        if writable(&dir) {
            match ctrl {
                "pids" => b.pids = Some(dir),
                "memory" => b.memory = Some(dir),
                _ => b.cpu = Some(dir),
            }
        }
    }
    if b.pids.is_none() && b.memory.is_none() && b.cpu.is_none() {
        if let Some(v2) = detect_v2(&own, &mounts) {
            return v2;
        }
    }
    b
}

/// cgroup v2: the guard's cgroup with the controllers enabled for its children, moving the
/// guard into a leaf when it is alone there (the kernel's "no internal processes" rule).
fn detect_v2(own: &[(String, String)], mounts: &[(String, PathBuf, String)]) -> Option<Bases> {
    let (_, path) = own.iter().find(|(c, _)| c.is_empty())?;
    let (_, mnt, _) = mounts.iter().find(|(t, _, _)| t == "cgroup2")?;
    let dir = mnt.join(path.trim_start_matches('/'));
    let offered = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    let want: Vec<&str> = ["pids", "memory", "cpu"]
        .into_iter()
        .filter(|c| offered.split_whitespace().any(|o| o == *c))
        .collect();
    if want.is_empty() || !writable(&dir) {
        return None;
    }
    let enable = want
        .iter()
        .map(|c| format!("+{c}"))
        .collect::<Vec<_>>()
        .join(" ");
    if write(&dir.join("cgroup.subtree_control"), &enable).is_err() {
        // Processes in our cgroup: only if they are all ours may we move into a leaf.
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).ok()?;
        let me = std::process::id().to_string();
        if procs.split_whitespace().any(|p| p != me) {
            return None;
        }
        let leaf = dir.join("sanctum-guard");
        let _ = std::fs::create_dir(&leaf);
        write(&leaf.join("cgroup.procs"), &me).ok()?;
        write(&dir.join("cgroup.subtree_control"), &enable).ok()?;
    }
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    let on = |c: &str| {
        enabled
            .split_whitespace()
            .any(|e| e == c)
            .then(|| dir.clone())
    };
    Some(Bases {
        v2: true,
        pids: on("pids"),
        memory: on("memory"),
        cpu: on("cpu"),
    })
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(value.as_bytes())
}

/// The file the child writes `0` to, to join: on v1 `tasks`, which moves only the writing
/// thread, and for the current thread the kernel skips the global threadgroup lock
/// (`cgroup_procs_write_start`), whose write side waits for an RCU grace period: ~20 µs a
/// hierarchy when idle, milliseconds under load, three times per v1 run. The child is
/// single-threaded between clone and exec, so moving its thread moves the whole process, and
/// everything it starts is born inside. v2 has no `tasks`: `cgroup.procs` there.
fn join_file(v2: bool) -> &'static str {
    if v2 {
        "cgroup.procs"
    } else {
        "tasks"
    }
}

/// One run's cgroups (one per v1 hierarchy, one on v2), pooled or removed when dropped.
#[derive(Debug)]
pub struct RunCgroup {
    dirs: Vec<PathBuf>,
    /// `tasks` (v1) or `cgroup.procs` (v2) of each, open for writing: the child writes `0`
    /// to join (`join_file`).
    procs: Vec<OwnedFd>,
    /// What says whether it is empty, open for reading (each run's check re-reads them
    /// from the start; opening them was most of what giving a cgroup back cost).
    members: Vec<(std::fs::File, Count)>,
    v2: bool,
    /// The limits it was made with (a pooled cgroup is reused only for the same).
    want: Wanted,
}

/// How a file of [`RunCgroup::members`] tells that no process is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    /// `cgroup.procs`: no pid listed.
    Procs,
    /// `pids.current`: 0 (zombies still count here).
    Pids,
}

impl Count {
    /// Whether `f` (re-read from its start) says the cgroup is empty; a failed read is not.
    fn says_empty(self, f: &std::fs::File) -> bool {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 64];
        let Ok(n) = f.read_at(&mut buf, 0) else {
            return false;
        };
        let text = buf[..n].trim_ascii();
        match self {
            Count::Procs => text.is_empty(),
            Count::Pids => text == b"0",
        }
    }
}

/// Idle run cgroups kept (about the runs in flight at once).
const POOL_MAX: usize = 8;

/// Idle, empty run cgroups, most recently used last.
static POOL: Mutex<Vec<RunCgroup>> = Mutex::new(Vec::new());

impl RunCgroup {
    /// Makes the run's cgroups with `want`'s limits on the controllers the guard may use,
    /// or takes an idle pooled one made with the same limits.
    /// `None` when there is nothing to make (no limit wanted where a cgroup is available).
    pub fn create(want: Wanted) -> std::io::Result<Option<RunCgroup>> {
        if let Ok(mut pool) = POOL.lock() {
            if let Some(i) = pool.iter().rposition(|c| c.want == want) {
                return Ok(Some(pool.swap_remove(i)));
            }
        }
        let b = bases();
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep_dead_pools(b));
        // The maker's pid in the name: its pooled cgroups outlive it (a process exit drops no
        // pool), and the next guard to start removes those of processes that are gone.
        let name = format!(
            "{RUN_PREFIX}p{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        );
        let mut plan: Vec<(PathBuf, Vec<(&str, String)>)> = Vec::new();
        let mut add = |base: &Option<PathBuf>, file: &'static str, value: String| {
            let Some(base) = base else { return };
            let dir = base.join(&name);
            match plan.iter_mut().find(|(d, _)| *d == dir) {
                Some((_, files)) => files.push((file, value)),
                None => plan.push((dir, vec![(file, value)])),
            }
        };
        if want.pids > 0 {
            add(&b.pids, "pids.max", want.pids.to_string());
        }
        if want.memory_mb > 0 {
            let bytes = want.memory_mb.saturating_mul(1 << 20).to_string();
            if b.v2 {
                add(&b.memory, "memory.max", bytes);
                add(&b.memory, "memory.swap.max", "0".into());
            } else {
                add(&b.memory, "memory.limit_in_bytes", bytes);
            }
        }
        if want.cpu_percent > 0 {
            let quota = want.cpu_percent.saturating_mul(1000).to_string();
            if b.v2 {
                add(&b.cpu, "cpu.max", format!("{quota} 100000"));
            } else {
                add(&b.cpu, "cpu.cfs_period_us", "100000".into());
                add(&b.cpu, "cpu.cfs_quota_us", quota);
            }
        }
        if plan.is_empty() {
            return Ok(None);
        }
        let mut cg = RunCgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            members: Vec::new(),
            v2: b.v2,
            want,
        };
        for (dir, files) in plan {
            std::fs::create_dir(&dir)?;
            cg.dirs.push(dir.clone());
            for (file, value) in files {
                // A missing optional knob (no swap accounting) is not a missing limit.
                match write(&dir.join(file), &value) {
                    Err(e)
                        if file == "memory.swap.max"
                            && e.kind() == std::io::ErrorKind::NotFound => {}
                    r => r.map_err(|e| std::io::Error::new(e.kind(), format!("{file}: {e}")))?,
                }
            }
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(join_file(b.v2)))?;
            cg.procs.push(f.into());
            cg.members
                .push((std::fs::File::open(dir.join("cgroup.procs"))?, Count::Procs));
            match std::fs::File::open(dir.join("pids.current")) {
                Ok(f) => cg.members.push((f, Count::Pids)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Some(cg))
    }

    /// The fds the child writes `0` to.
    pub fn procs_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Whether no process (not even a zombie, which `pids.current` still counts) is in any
    /// of the run's cgroups. Anything unreadable counts as not empty.
    fn is_empty(&self) -> bool {
        // Every dir has its cgroup.procs here (`create`), so none is skipped.
        self.members.iter().all(|(f, count)| count.says_empty(f))
    }

    /// Kills every process in the run's cgroup (v2's `cgroup.kill`; on v1 the process group
    /// kill and the reaper do it, see `reaper.rs`).
    pub fn kill(&self) {
        if self.v2 {
            if let Some(d) = self.dirs.first() {
                let _ = write(&d.join("cgroup.kill"), "1");
            }
        }
    }
}

/// The name every run cgroup starts with.
const RUN_PREFIX: &str = "sanctum-run-";

/// Whether the run cgroup named `name` is one a process that is gone left behind: made by pid
/// `p<pid>` no longer alive, or named before names carried the maker's pid.
fn left_by_dead(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(RUN_PREFIX) else {
        return false;
    };
    let Some(pid) = rest
        .strip_prefix('p')
        .and_then(|r| r.split('-').next())
        .and_then(|p| p.parse::<i32>().ok())
    else {
        // The older form, `sanctum-run-<uuid>`: from a guard before this one.
        return true;
    };
    pid > 0
        && matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
}

/// Removes the run cgroups processes that are gone left in `b` (a pool idle at their exit).
/// `rmdir` removes only an empty cgroup, so one with a process inside stays.
fn sweep_dead_pools(b: &Bases) {
    for base in [&b.pids, &b.memory, &b.cpu].into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(base) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name().to_str().is_some_and(left_by_dead) {
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
}

/// How long a cgroup whose last processes are still dying is retried before it is left.
const REMOVE_CAP: Duration = Duration::from_secs(30);

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill();
        if !self.dirs.is_empty() && self.is_empty() {
            if let Ok(mut pool) = POOL.lock() {
                if pool.len() < POOL_MAX {
                    pool.push(RunCgroup {
                        dirs: std::mem::take(&mut self.dirs),
                        procs: std::mem::take(&mut self.procs),
                        members: std::mem::take(&mut self.members),
                        v2: self.v2,
                        want: self.want,
                    });
                    return;
                }
            }
        }
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.retain(|d| std::fs::remove_dir(d).is_err());
        if dirs.is_empty() {
            return;
        }
        // Members still exiting: retry off the caller's thread.
        let spawned = std::thread::Builder::new()
            .name("sanctum-cgroup".into())
            .spawn(move || {
                let start = std::time::Instant::now();
                let mut pause = Duration::from_millis(2);
                while !dirs.is_empty() && start.elapsed() < REMOVE_CAP {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                    dirs.retain(|d| std::fs::remove_dir(d).is_err());
                }
                for d in dirs {
                    tracing::warn!(dir = %d.display(), "a run's cgroup could not be removed");
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start the cgroup removal thread");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whose leftover a run cgroup's name says it is: only a gone maker's (or the older
    /// unnamed form) is swept; a live process's, and anything not a run cgroup, stay.
    #[test]
    fn only_cgroups_of_gone_makers_are_swept() {
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        gone.wait().unwrap();
        let me = std::process::id();
        let table = [
            (format!("sanctum-run-p{gone_pid}-0b6e"), true),
            (format!("sanctum-run-p{me}-0b6e"), false),
            (
                "sanctum-run-1f0c2a4e-9d1b-4c55-8a43-2b8e9b0e6f11".into(),
                true,
            ),
            ("sanctum-run-pabc-0b6e".into(), true),
            ("sanctum-guard".into(), false),
            (format!("other-p{gone_pid}"), false),
        ];
        for (name, swept) in table {
            assert_eq!(left_by_dead(&name), swept, "{name}");
        }
        // On the real hierarchy: an empty leftover is removed, a live maker's stays.
        let b = bases();
        let Some(base) = b.pids.clone() else { return };
        let dead = base.join(format!("sanctum-run-p{gone_pid}-sweeptest"));
        let live = base.join(format!("sanctum-run-p{me}-sweeptest"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::create_dir(&live).unwrap();
        sweep_dead_pools(b);
        let (dead_left, live_left) = (dead.exists(), live.exists());
        let _ = std::fs::remove_dir(&live);
        let _ = std::fs::remove_dir(&dead);
        assert!(
            !dead_left && live_left,
            "dead {dead_left}, live {live_left}"
        );
    }

    /// On v1 the child joins through `tasks` (its own thread: no global threadgroup lock),
    /// on v2 through `cgroup.procs`; either way a process written there is a member.
    #[test]
    fn the_child_joins_through_tasks_on_v1() {
        let want = Wanted {
            pids: 29,
            memory_mb: 0,
            cpu_percent: 0,
        };
        let Some(cg) = RunCgroup::create(want).unwrap() else {
            return;
        };
        let expect = if bases().v2 { "cgroup.procs" } else { "tasks" };
        for fd in cg.procs_fds() {
            let name = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
            assert!(name.ends_with(expect), "{}", name.display());
        }
        let mut sleeper = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        write(&cg.dirs[0].join(expect), &sleeper.id().to_string()).unwrap();
        assert!(!cg.is_empty(), "a member through the join file");
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }

    /// Pooled only when empty, reused only for the same limits (one test: the pool is
    /// process-wide). Skipped where the guard may make no cgroup.
    #[test]
    fn a_run_cgroup_is_reused_only_empty_and_for_the_same_limits() {
        let want = Wanted {
            pids: 17,
            memory_mb: 0,
            cpu_percent: 0,
        };
        let Some(a) = RunCgroup::create(want).unwrap() else {
            return;
        };
        let dirs = a.dirs.clone();
        drop(a);
        let b = RunCgroup::create(want).unwrap().unwrap();
        assert_eq!(b.dirs, dirs, "an empty cgroup is reused");
        let other = Wanted { pids: 18, ..want };
        let c = RunCgroup::create(other).unwrap().unwrap();
        assert_ne!(c.dirs, dirs, "never for other limits");
        // A member left inside: not pooled, removed once it is gone.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        write(&dirs[0].join("cgroup.procs"), &sleeper.id().to_string()).unwrap();
        assert!(!b.is_empty());
        drop(b);
        let d = RunCgroup::create(want).unwrap().unwrap();
        assert_ne!(
            d.dirs, dirs,
            "a cgroup with a member is not handed out again"
        );
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        drop((c, d));
    }

    /// The held files are read afresh at each check: empty, then a member (read from the
    /// same open files), then empty again once it is reaped (a zombie still counts).
    #[test]
    fn emptiness_is_read_afresh_from_the_held_files() {
        let want = Wanted {
            pids: 23,
            memory_mb: 0,
            cpu_percent: 0,
        };
        let Some(cg) = RunCgroup::create(want).unwrap() else {
            return;
        };
        assert!(cg.members.iter().any(|(_, c)| *c == Count::Pids));
        assert!(cg.is_empty());
        let mut sleeper = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        write(&cg.dirs[0].join("cgroup.procs"), &sleeper.id().to_string()).unwrap();
        assert!(!cg.is_empty(), "a member is seen through the held files");
        sleeper.kill().unwrap();
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(300) {
            assert!(!cg.is_empty(), "a zombie still counts");
            std::thread::sleep(Duration::from_millis(20));
        }
        sleeper.wait().unwrap();
        assert!(cg.is_empty(), "empty again once reaped");
    }
}
