//! The spawn itself (`launch.rs`: a CLONE_VM|CLONE_VFORK child that confines itself, then
//! execs): what the command starts with (signal mask, SIGPIPE, PATH look-up), how failures
//! are told apart, that the guard's signal handlers never run in the child, and that a
//! command whose caller goes away is killed and reaped.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Raw signal and process calls on the test process itself: the sandbox is under test.
#![allow(unsafe_code)]
// `SPAWNING` serialises whole tests, each on its own thread and runtime: held across their
// awaits on purpose, it blocks no other task of the same runtime.
#![allow(clippy::await_holding_lock)]

use sanctum_guard::sandbox::{
    builtin_profiles, prepare, run, ChildStdio, RunSpec, SandboxError, SpawnError,
};
use sanctum_test_support as support;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::sandbox::*;

fn spec(ws: &Ws, argv: &[&str]) -> RunSpec {
    run_spec(ws, "read-only", argv)
}

/// The `Sig*` mask of /proc/self/status named `key`, as the confined command sees it.
fn sig_field(status: &str, key: &str) -> u64 {
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("{key} in {status}"));
    u64::from_str_radix(line[key.len()..].trim(), 16).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn command_starts_with_no_blocked_signals_and_default_sigpipe() {
    let _serial = spawning();
    let ws = Ws::new();
    // Block SIGUSR1 on this (the spawning) thread; the Rust runtime already ignores SIGPIPE.
    // SAFETY: sigset_t is plain data; pthread_sigmask changes this thread's mask only.
    let old = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    };
    let o = run(spec(&ws, &["/bin/cat", "/proc/self/status"])).await;
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    let o = o.unwrap();
    assert!(o.success, "{o:?}");
    assert_eq!(sig_field(&o.stdout, "SigBlk:"), 0, "{}", o.stdout);
    let sigpipe = 1u64 << (libc::SIGPIPE - 1);
    assert_eq!(sig_field(&o.stdout, "SigIgn:") & sigpipe, 0, "{}", o.stdout);
}

#[tokio::test]
async fn failures_are_told_apart() {
    let _serial = spawning();
    let ws = Ws::new();
    // Found through the child's PATH, as execvp would.
    let o = run(spec(&ws, &["true"])).await.unwrap();
    assert!(o.success, "{o:?}");
    let o = run(spec(&ws, &["no-such-command-4711"])).await.unwrap();
    assert!(o.error.unwrap().contains("No such file"));
    // Not executable: the command cannot start, the sandbox itself was fine.
    let script = ws.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let o = run(spec(&ws, &[script.to_str().unwrap()])).await.unwrap();
    assert!(!o.success && o.exit_code.is_none());
    assert!(o.error.unwrap().contains("Permission denied"));
    // A working directory that does not exist is named in the error.
    let mut s = spec(&ws, &["/bin/true"]);
    s.cwd = ws.path().join("gone");
    let o = run(s).await.unwrap();
    let e = o.error.unwrap();
    assert!(
        e.contains("working directory") && e.contains("gone") && e.contains("No such file"),
        "{e}"
    );
    // Bytes execve cannot carry are refused before anything starts.
    let r = run(spec(&ws, &["/bin/echo", "a\0b"])).await;
    assert!(matches!(r, Err(SandboxError::Command(_))), "{r:?}");
    // The environment allow-list already drops such names; the spawn refuses them too.
    let prepared = prepare(&spec(&ws, &[]).profile).unwrap();
    let env = BTreeMap::from([("BAD=NAME".to_string(), "x".to_string())]);
    let r = prepared.spawn(&["/bin/true".into()], ws.path(), &env, ChildStdio::null());
    assert!(
        matches!(r, Err(SpawnError::Sandbox(SandboxError::Command(_)))),
        "{r:?}"
    );
}

static HANDLER_RAN: AtomicBool = AtomicBool::new(false);

/// Held by every test that spawns: the storm below signals every child of the process (the
/// runs are the spawner thread's children, whichever test asked), which must be its own.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn spawning() -> std::sync::MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn on_usr1(_: libc::c_int) {
    HANDLER_RAN.store(true, Ordering::SeqCst);
}

/// The child runs on the guard's memory until it execs, so one of the guard's signal
/// handlers running there would act for the guard (tokio's would report a signal the guard
/// never got). A thread fires SIGUSR1 at every child of the process's threads (the runs are
/// cloned by a spawner thread) as soon as it appears; the guard's handler must never run, in
/// the child or anywhere.
#[test]
fn guard_signal_handlers_never_run_in_the_child() {
    let _serial = spawning();
    let ws = Ws::new();
    let profile = builtin_profiles()["read-only"].resolve(ws.path()).unwrap();
    let prepared = prepare(&profile).unwrap();
    // SAFETY: installs an async-signal-safe handler (one atomic store) for SIGUSR1.
    unsafe { libc::signal(libc::SIGUSR1, on_usr1 as *const () as libc::sighandler_t) };
    let stop = Arc::new(AtomicBool::new(false));
    let hits = Arc::new(AtomicUsize::new(0));
    let sender = {
        let (stop, hits) = (Arc::clone(&stop), Arc::clone(&hits));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut list = String::new();
                for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                    let children = task.path().join("children");
                    list += &std::fs::read_to_string(children).unwrap_or_default();
                    list.push(' ');
                }
                for pid in list.split_whitespace().filter_map(|p| p.parse().ok()) {
                    // SAFETY: kill(2) with a pid and a signal number.
                    if unsafe { libc::kill(pid, libc::SIGUSR1) } == 0 {
                        hits.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    let argv = vec!["/bin/true".to_string()];
    let env = prepared.env(&BTreeMap::new());
    let mut by_signal = 0;
    for _ in 0..300 {
        match prepared.spawn(&argv, ws.path(), &env, ChildStdio::null()) {
            Ok(mut c) => {
                c.exited_blocking().unwrap();
                let st = c.finish().unwrap();
                use std::os::unix::process::ExitStatusExt;
                by_signal += usize::from(st.signal() == Some(libc::SIGUSR1));
            }
            Err(SpawnError::Sandbox(e)) => panic!("setup failed: {e}"),
            Err(SpawnError::Exec(e)) => panic!("exec failed: {e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    eprintln!(
        "children killed by the storm: {by_signal}/300, signals sent: {}",
        hits.load(Ordering::Relaxed)
    );
    // SAFETY: back to the default action.
    unsafe { libc::signal(libc::SIGUSR1, libc::SIG_DFL) };
    assert!(
        by_signal > 0,
        "the race never landed ({} signals sent): the test proves nothing",
        hits.load(Ordering::Relaxed)
    );
    assert!(
        !HANDLER_RAN.load(Ordering::SeqCst),
        "the guard's handler ran (in a child that shares its memory)"
    );
}

/// Our children whose command name is `comm`, zombies included.
fn children_named(comm: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in list
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.contains(&format!("({comm})")) {
                found.push(pid);
            }
        }
    }
    found
}

#[tokio::test]
async fn abandoned_command_is_killed_and_reaped() {
    let _serial = spawning();
    let ws = Ws::new();
    // Copied under a name no other test uses, so the check below sees only this command.
    let sleeper = ws.path().join("sleep-abandon");
    std::fs::copy("/bin/sleep", &sleeper).unwrap();
    let r = tokio::time::timeout(
        Duration::from_millis(300),
        run(spec(&ws, &[sleeper.to_str().unwrap(), "30"])),
    )
    .await;
    assert!(r.is_err(), "the caller gave up first");
    let mut left = children_named("sleep-abandon");
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = children_named("sleep-abandon");
    }
    assert!(left.is_empty(), "still running or a zombie: {left:?}");
}
