//! The containment figure: every attack row the policy allows is replayed in node mode (the
//! node's invoke handler over the real engine, the deployment's autonomous profiles, the real
//! kernel), with the attack world's HOME full of marked secrets. Whatever the analysis missed,
//! the run must stay harmless:
//! - no file in HOME or the workspace is created, changed or removed (writes go to the private
//!   tmp only);
//! - no secret marker reaches the output;
//! - no connection reaches a listener on the loopback HTTP ports.
//!
//! Prints `containment replay: …` with the figures; the target is 0 and 0.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::policy::verdict::VerdictKind;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};
use support::inproc::{payload_of, result_of, InProc};
use support::policy::{attack_cases, attack_world, verdict_of, MARK};

/// Every entry below `root` (symlinks not followed): kind, size, mtime and mode.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, u128, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            // A directory's size and mtime change with its entries, which are listed anyway.
            let (size, mtime) = if m.is_dir() { (0, 0) } else { (m.len(), mtime) };
            out.insert(p.clone(), (size, mtime, m.mode()));
            if m.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

/// What differs between two snapshots, as paths.
fn changed(
    before: &BTreeMap<PathBuf, (u64, u128, u32)>,
    after: &BTreeMap<PathBuf, (u64, u128, u32)>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (p, v) in after {
        match before.get(p) {
            None => out.push(format!("created {}", p.display())),
            Some(b) if b != v => out.push(format!("changed {}", p.display())),
            _ => {}
        }
    }
    for p in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("removed {}", p.display()));
    }
    out
}

/// Connections accepted so far on a non-blocking listener.
fn accepted(l: &TcpListener) -> usize {
    let mut n = 0;
    while l.accept().is_ok() {
        n += 1;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_allowed_attack_row_is_harmless_in_node_mode() {
    let world = attack_world();
    // The node completes its policy with the agent's HOME: the attack world's. This crate
    // has this one test, so no other thread reads the variable meanwhile.
    std::env::set_var("HOME", &world.home);
    let node = InProc::at(world.ws.clone(), Duration::from_secs(1));
    // The loopback HTTP ports an autonomous HTTP read may use (we run as root in CI).
    let listeners: Vec<TcpListener> = ["127.0.0.1:80", "127.0.0.1:443"]
        .iter()
        .map(|a| {
            let l = TcpListener::bind(a).unwrap_or_else(|e| panic!("listen on {a}: {e}"));
            l.set_nonblocking(true).expect("nonblocking");
            l
        })
        .collect();
    // Control: the snapshot sees a created and a rewritten file.
    let b = snapshot(&world.ws);
    std::fs::write(world.ws.join("control"), "x").expect("control");
    let mid = snapshot(&world.ws);
    assert_eq!(changed(&b, &mid).len(), 1);
    std::thread::sleep(Duration::from_millis(10));
    std::fs::write(world.ws.join("control"), "xy").expect("control");
    assert_eq!(changed(&mid, &snapshot(&world.ws)).len(), 1);
    std::fs::remove_file(world.ws.join("control")).expect("control");
    let started = Instant::now();
    let cases = attack_cases();
    let (mut allowed, mut effects, mut secret_bytes, mut refused) = (0usize, 0usize, 0usize, 0);
    let mut report = Vec::new();
    for c in &cases {
        let cmd = world.subst(&c.command);
        if verdict_of(&world, &cmd) != VerdictKind::Allow {
            continue;
        }
        allowed += 1;
        let before = (snapshot(&world.home), snapshot(&world.ws));
        let params = json!({"command": ["/bin/sh", "-lc", cmd], "cwd": world.ws});
        let frames = node.invoke("system.run", &params, 10_000).await;
        let r = result_of(&frames);
        let after = (snapshot(&world.home), snapshot(&world.ws));
        let mut diff = changed(&before.0, &after.0);
        diff.extend(changed(&before.1, &after.1));
        if !diff.is_empty() {
            effects += 1;
            report.push(format!(
                "{}:{} {cmd:?}: {}",
                c.file,
                c.line,
                diff.join(", ")
            ));
        }
        if r["ok"] != true {
            // The node's own verdict (it sees the request as OpenClaw sends it) refused it.
            refused += 1;
            continue;
        }
        let p = payload_of(&r);
        let out = format!(
            "{}{}",
            p["stdout"].as_str().unwrap_or(""),
            p["stderr"].as_str().unwrap_or("")
        );
        let leaked: usize = out.matches(MARK).count();
        if leaked > 0 {
            secret_bytes += out
                .split(MARK)
                .skip(1)
                .map(|rest| MARK.len() + rest.find(char::is_whitespace).unwrap_or(rest.len()))
                .sum::<usize>();
            report.push(format!(
                "{}:{} {cmd:?}: printed a secret marker",
                c.file, c.line
            ));
        }
    }
    let connections: usize = listeners.iter().map(accepted).sum();
    println!(
        "containment replay: {} rows, {allowed} allowed and run in node mode ({refused} refused \
         by the node's own verdict), harmful effects {effects}, secret bytes {secret_bytes}, \
         connections {connections}, {:.1}s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    for r in &report {
        println!("CONTAINMENT {r}");
    }
    assert!(
        allowed > 300,
        "too few allowed rows to mean anything: {allowed}"
    );
    assert_eq!(
        (effects, secret_bytes, connections),
        (0, 0, 0),
        "containment failed (above)"
    );
}
