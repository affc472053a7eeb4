//! A confined command has no same-uid lever on another process. Every attack
//! runs inside the sandbox against a real sibling victim of the same uid (not the test
//! process), which has dropped its capabilities like a guard running as a plain user, so the
//! kernel's "target has more capabilities" checks cannot hide a lever. After each attack the
//! victim must be alive, unchanged (limits, nice, policy, affinity, I/O priority, OOM score,
//! timer slack) and must not have received a signal.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use support::sandbox::*;

/// (lever, expected answer; None: the call may "succeed" but must have no effect, which the
/// victim check proves; the kernel drops the signal at delivery).
const LEVERS: &[(&str, Option<&str>)] = &[
    // Resource limits (the attack: nofile 1 or fsize 0 stops or kills the guard).
    ("prlimit", Some("ERR EPERM")),
    ("prlimit_fsize", Some("ERR EPERM")),
    ("prlimit_read", Some("ERR EPERM")),
    // Signals: Landlock's signal scope, every way of sending one.
    ("kill", Some("ERR EPERM")),
    ("tgkill", Some("ERR EPERM")),
    ("sigqueue", Some("ERR EPERM")),
    ("pidfd_signal", Some("ERR EPERM")),
    ("tgsigqueue", Some("ERR EPERM")),
    ("kill_pgrp", Some("ERR EPERM")),
    ("kill_all", None),
    ("fsetown", None),
    ("fioasync", None),
    // Scheduling and priorities.
    ("setpriority", Some("ERR EPERM")),
    ("setpriority_pgrp", Some("ERR EPERM")),
    ("setpriority_user", Some("ERR EPERM")),
    ("ioprio", Some("ERR EPERM")),
    ("ioprio_user", Some("ERR EPERM")),
    ("affinity", Some("ERR EPERM")),
    ("scheduler", Some("ERR EPERM")),
    ("schedparam", Some("ERR EPERM")),
    ("sched_setattr", Some("ERR EPERM")),
    // Memory and descriptors.
    ("migrate_pages", Some("ERR EPERM")),
    ("move_pages", Some("ERR EPERM")),
    ("process_madvise", Some("ERR EPERM")),
    ("pidfd_getfd", Some("ERR EPERM")),
    ("kcmp", Some("ERR EPERM")),
    ("robust_list", Some("ERR EPERM")),
    ("ptrace_seize", Some("ERR EPERM")),
    ("vm_writev", Some("ERR EPERM")),
    // /proc/PID writes (Landlock: /proc is not writable) and ptrace-guarded reads.
    ("procw:oom_score_adj", Some("ERR EACCES")),
    ("procw:oom_adj", Some("ERR EACCES")),
    ("procw:attr/current", Some("ERR EACCES")),
    ("procw:attr/exec", Some("ERR EACCES")),
    ("procw:timerslack_ns", Some("ERR EACCES")),
    ("procw:mem", Some("ERR EACCES")),
    ("procw:clear_refs", Some("ERR EACCES")),
    ("procw:coredump_filter", Some("ERR EACCES")),
    ("procw:comm", Some("ERR EACCES")),
    ("procw:autogroup", Some("ERR EACCES")),
    ("procw:sched", Some("ERR EACCES")),
    ("procw:uid_map", Some("ERR EACCES")),
    ("procw:setgroups", Some("ERR EACCES")),
    ("procr:mem", Some("ERR EACCES")),
    ("procr:environ", Some("ERR EACCES")),
    ("procr:fd/0", Some("ERR EACCES")),
    ("procr:cwd/.", Some("ERR EACCES")),
    ("procr:root/etc/hostname", Some("ERR EACCES")),
    ("procr:maps", Some("ERR EACCES")),
    ("procr:pagemap", Some("ERR EACCES")),
    ("procr:auxv", Some("ERR EACCES")),
    // The victim's abstract unix socket (Landlock scope; no AF_UNIX socket at all here).
    ("abstract", Some("ERR EPERM")),
];

struct Victim {
    child: Child,
    pid: u32,
    got: tempfile::NamedTempFile,
}

impl Victim {
    fn start() -> Victim {
        let got = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(probe())
            .arg("victim")
            .arg(got.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let pid = line.trim().parse().expect("victim pid");
        Victim { child, pid, got }
    }

    /// Everything a lever could change, as one comparable text.
    fn state(&mut self) -> String {
        let pid = self.pid;
        let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap();
        let stat = read("stat");
        let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
        // After the comm field: nice is field 19, policy 41 (1-based in proc(5)).
        let (nice, policy) = (fields[19 - 3], fields[41 - 3]);
        let cpus = read("status")
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list"))
            .unwrap()
            .to_string();
        let ionice = Command::new("ionice")
            .args(["-p", &pid.to_string()])
            .output()
            .unwrap();
        format!(
            "alive={} limits={} nice={nice} policy={policy} {cpus} ionice={} oom={} slack={} got={:?}",
            self.child.try_wait().unwrap().is_none(),
            read("limits"),
            String::from_utf8_lossy(&ionice.stdout).trim(),
            read("oom_score_adj").trim(),
            read("timerslack_ns").trim(),
            std::fs::read_to_string(self.got.path()).unwrap(),
        )
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn no_lever_on_a_same_uid_sibling() {
    let ws = Ws::new();
    let mut failures = Vec::new();
    for profile in ["read-only", "workspace-write"] {
        let mut victim = Victim::start();
        let before = victim.state();
        let opts = ["--profile", profile];
        for (lever, want) in LEVERS {
            let arg = if *lever == "abstract" {
                format!("sanctum-victim-{}", victim.pid)
            } else {
                victim.pid.to_string()
            };
            let got = probe_run(&ws, &opts, "lever", &[lever, &arg]);
            if let Some(want) = want {
                if got != *want {
                    failures.push(format!("{profile} {lever}: got {got:?}, want {want:?}"));
                }
            }
            // The victim notes a signal within 50 ms.
            std::thread::sleep(std::time::Duration::from_millis(120));
            let after = victim.state();
            if after != before {
                failures.push(format!(
                    "{profile} {lever}: victim changed\n  before {before}\n  after  {after}"
                ));
                victim = Victim::start();
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same calls on the confined process itself still work (pid 0 = self): glibc's
/// setrlimit, nice(1), taskset on itself, ionice on itself.
#[test]
fn own_process_still_adjustable() {
    let ws = Ws::new();
    for lever in [
        "prlimit",
        "prlimit_read",
        "setpriority",
        "ioprio",
        "affinity",
        "scheduler",
        "sched_setattr",
    ] {
        assert_eq!(
            probe_run(
                &ws,
                &["--profile", "workspace-write"],
                "lever",
                &[lever, "0"]
            ),
            "OK",
            "{lever} on itself"
        );
    }
    let o = sh(
        &ws,
        "read-only",
        "nice -n 5 true && ulimit -n 64 && ionice -c 3 true",
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Terminal ioctls on an inherited terminal the user sees (a real pty): what would change
/// the user's terminal is refused. TIOCSWINSZ stays allowed (resizing is what terminals do).
#[test]
fn inherited_terminal_ioctls() {
    let ws = Ws::new();
    let pty = nix::pty::openpty(None, None).unwrap();
    for (op, want) in [
        ("tiocsti", "ERR EPERM"),
        ("tiocsetd", "ERR EPERM"),
        ("tioccons", "ERR EPERM"),
        ("tiocspgrp", "ERR EPERM"),
        ("tiocsctty", "ERR EPERM"),
        ("tiocvhangup", "ERR EPERM"),
        ("tiocswinsz", "OK"),
    ] {
        let slave = pty.slave.try_clone().unwrap();
        let o = Command::new(guard_bin())
            .args(["sandbox", "--profile", "workspace-write", "--workspace"])
            .arg(ws.path())
            .arg("--")
            .arg(probe())
            .args(["tty", op])
            .current_dir(ws.path())
            .stdin(Stdio::from(slave))
            .output()
            .unwrap();
        assert_eq!(stdout(&o), want, "{op}: {}", stderr(&o));
    }
}
