//! Every process a run creates is killed and reaped when the run ends, however it was made:
//! many runs each try to leave processes behind (clone(CLONE_PARENT), a double fork, setsid,
//! zombies, sleepers); afterwards the process that ran them (the guard, here this test) has
//! no child left, zombie or alive, and a normal pipeline still runs.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::time::{Duration, Instant};
use support::sandbox::{probe, procs_with, run_spec, Ws};

/// This process's children (every thread's), with their state letter from /proc/PID/stat.
fn children() -> Vec<(i32, char)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(list) = std::fs::read_to_string(t.path().join("children")) else {
            continue;
        };
        for pid in list
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
                .unwrap_or('?');
            out.push((pid, state));
        }
    }
    out
}

/// How many runs: `SANCTUM_REAP_RUNS`, default 1,000.
fn runs() -> usize {
    std::env::var("SANCTUM_REAP_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

#[test]
fn runs_that_try_to_leave_processes_leave_none() {
    let ws = Ws::new();
    let probe = probe().to_str().unwrap().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let n = runs();
    let started = Instant::now();
    for i in 0..n {
        let spec = run_spec(&ws, "read-only", &[&probe, "orphans"]);
        let out = rt.block_on(sanctum_guard::sandbox::run(spec)).unwrap();
        assert!(
            out.stdout.starts_with("ERR refused 3"),
            "run {i}: clone(CLONE_PARENT) must be refused: {out:?}"
        );
    }
    let took = started.elapsed();
    eprintln!(
        "{n} runs in {took:?} ({:?} per run)",
        took / n.max(1) as u32
    );
    // Reaping what died last may finish just after the last run returned.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !children().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        children(),
        vec![],
        "no child of the guard is left, zombie or alive"
    );
    assert_eq!(procs_with(&format!("{probe}\0orphans")), 0, "no probe left");
    let spec = run_spec(
        &ws,
        "read-only",
        &["/bin/sh", "-c", "echo abc | tr b x | wc -c"],
    );
    let out = rt.block_on(sanctum_guard::sandbox::run(spec)).unwrap();
    assert_eq!(out.stdout.trim(), "4", "{out:?}");
    assert!(out.success);
}
