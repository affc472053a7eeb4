//! Load client for the approvals socket: starts the real `sanctum-guard serve` on a temp dir
//! and, like OpenClaw's client, opens one connection per request (write the line, half-close,
//! read the reply). Measures autonomous decisions/s with closed-loop clients, then the latency
//! distribution at a paced 1,000 requests/s (measured from each request's scheduled start, so
//! a stall is not hidden). Prints the figures.
//!
//! `cargo bench --bench socket_load`. Env: SANCTUM_BENCH_DIR (parent of the temp dir, e.g.
//! /dev/shm), SANCTUM_BENCH_SECS (default 5), SANCTUM_BENCH_CLIENTS (default 4),
//! SANCTUM_BENCH_ROUNDS (throughput rounds, default 3), SANCTUM_BENCH_BIN (a guard binary
//! other than this build's).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn one(sock: &Path, line: &[u8], buf: &mut Vec<u8>) -> bool {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return false;
    };
    if s.write_all(line).is_err() || s.shutdown(std::net::Shutdown::Write).is_err() {
        return false;
    }
    buf.clear();
    s.read_to_end(buf).is_ok() && buf.windows(12).any(|w| w == b"\"allow-once\"")
}

fn token_of(oc_state: &Path) -> String {
    let db = oc_state.join("state/openclaw.sqlite");
    let conn = rusqlite::Connection::open(&db).expect("openclaw sqlite written by serve");
    let raw: String = conn
        .query_row(
            "SELECT raw_json FROM exec_approvals_config WHERE config_key='current'",
            [],
            |r| r.get(0),
        )
        .expect("approvals row");
    let v: serde_json::Value = serde_json::from_str(&raw).expect("json");
    v["socket"]["token"].as_str().expect("token").to_owned()
}

/// CPU time (user + system) the process has used, from /proc/PID/stat.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| f.get(*i).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / hz.max(1))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One closed-loop round: (decisions/s, failed requests, guard CPU µs per decision; steadier
/// than the rate on a shared machine).
fn throughput(
    serve_pid: u32,
    sock: &Path,
    line: &Arc<Vec<u8>>,
    clients: u64,
    secs: u64,
) -> (f64, u64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let cpu0 = cpu_time(serve_pid);
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (stop, done, failed, sock, line) = (
                stop.clone(),
                done.clone(),
                failed.clone(),
                sock.to_path_buf(),
                line.clone(),
            );
            std::thread::spawn(move || {
                let mut buf = Vec::with_capacity(256);
                while !stop.load(Ordering::Relaxed) {
                    if one(&sock, &line, &mut buf) {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    let el = t0.elapsed().as_secs_f64();
    let cpu = cpu_time(serve_pid).saturating_sub(cpu0);
    let n = done.load(Ordering::Relaxed);
    (
        n as f64 / el,
        failed.load(Ordering::Relaxed),
        cpu.as_secs_f64() * 1e6 / n.max(1) as f64,
    )
}

fn main() {
    let parent = std::env::var_os("SANCTUM_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("sg-bench-")
        .tempdir_in(&parent)
        .expect("tempdir");
    let (home, oc, guard) = (
        tmp.path().join("home"),
        tmp.path().join("oc"),
        tmp.path().join("guard"),
    );
    std::fs::create_dir_all(&home).expect("home");
    let log = tmp.path().join("serve.log");
    // SANCTUM_BENCH_BIN: another build of the guard, to compare two builds on one machine.
    let bin = std::env::var_os("SANCTUM_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_sanctum-guard")));
    let child = Command::new(bin)
        .args(["serve", "--state-dir"])
        .arg(&guard)
        .arg("--openclaw-state")
        .arg(&oc)
        .env("HOME", &home)
        .env("SANCTUM_LOG", "warn")
        .env("SANCTUM_SOCKET_RATE_PER_SEC", "10000000")
        .env("SANCTUM_SOCKET_RATE_BURST", "10000000")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn serve");
    let serve_pid = child.id();
    let _serve = Kill(child);
    let sock = oc.join("exec-approvals.sock");
    let start = Instant::now();
    while UnixStream::connect(&sock).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let token = token_of(&oc);
    let line = format!(
        "{}\n",
        serde_json::json!({"type":"request","token":token,"id":"bench",
            "request":{"command":"ls -la","cwd":"/usr","agentId":"main"}})
    );
    let line = Arc::new(line.into_bytes());
    let mut warm = Vec::new();
    assert!(
        one(&sock, &line, &mut warm),
        "warm-up request was not allowed: {}",
        String::from_utf8_lossy(&warm)
    );

    let secs = env_u64("SANCTUM_BENCH_SECS", 5);
    let clients = env_u64("SANCTUM_BENCH_CLIENTS", 4);
    println!(
        "socket_load: state in {} ({} cores)",
        tmp.path().display(),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    );

    // 1. Throughput: closed-loop clients, one connection per request, in rounds (this
    // shared VM's speed drifts; the median round is the figure).
    let rounds = env_u64("SANCTUM_BENCH_ROUNDS", 3).max(1);
    let mut rates = Vec::new();
    for round in 1..=rounds {
        let (rate, failed, cpu_per) = throughput(serve_pid, &sock, &line, clients, secs);
        println!(
            "round {round}: {rate:.0} autonomous decisions/s ({failed} failed, {clients} clients, \
             {secs} s); guard CPU {cpu_per:.1} µs per decision"
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "throughput: {:.0} autonomous decisions/s (median of {rounds} rounds; min {:.0}, max {:.0})",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );

    // 2. Latency at a paced 1,000 req/s, from each request's scheduled time.
    let rate = 1000u64;
    let total = rate * secs;
    let period = Duration::from_nanos(1_000_000_000 / rate);
    let mut lat = Vec::with_capacity(total as usize);
    let mut buf = Vec::with_capacity(256);
    let mut bad = 0;
    let t0 = Instant::now();
    for i in 0..total {
        let due = t0 + period * i as u32;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        if !one(&sock, &line, &mut buf) {
            bad += 1;
        }
        lat.push(due.elapsed());
    }
    lat.sort();
    println!(
        "paced {rate} req/s for {secs} s: p50 {:?}  p90 {:?}  p99 {:?}  max {:?}  ({bad} failed)",
        percentile(&lat, 0.50),
        percentile(&lat, 0.90),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or_default()
    );
}
