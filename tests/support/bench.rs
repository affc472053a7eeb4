//! What the side-by-side benches share: a proxy's processes and their CPU time, the figures
//! of a run (rate, p50, p99, CPU per request), waiting for a port, and the benches' knobs.

use std::time::{Duration, Instant};

/// One column's figures.
pub struct Figures {
    pub per_sec: f64,
    pub p50: u64,
    pub p99: u64,
    /// The proxy's CPU time per message, µs (NaN for the direct path).
    pub cpu_us: f64,
}

/// Sorts the round trips (µs) of a run over `wall` and takes its figures.
pub fn figures((mut rtts, wall): (Vec<u64>, Duration), cpu: Duration) -> Figures {
    rtts.sort_unstable();
    let at = |q: f64| rtts[((rtts.len() as f64 * q) as usize).min(rtts.len() - 1)];
    Figures {
        per_sec: rtts.len() as f64 / wall.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        cpu_us: cpu.as_secs_f64() * 1e6 / rtts.len() as f64,
    }
}

/// A proxy's processes: nginx is a process group (master and workers), the door one process
/// (the guard's).
#[derive(Clone, Copy)]
pub enum Proxy {
    Group(u32),
    Process(u32),
    /// One process that starts a thread per connection (tinyproxy): an exited thread leaves
    /// `task/`, so its time is read from the process's `stat` (utime + stime, which keep
    /// what exited threads spent), in clock ticks.
    Threads(u32),
}

/// On-CPU time so far of every thread of `proxy`'s processes
/// (`/proc/PID/task/TID/schedstat`, first field, nanoseconds).
pub fn cpu_of(proxy: Proxy) -> Duration {
    let pids: Vec<String> = match proxy {
        Proxy::Threads(pid) => return ticks_of(pid),
        Proxy::Process(pid) => vec![pid.to_string()],
        Proxy::Group(pgid) => std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| {
                let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
                // The fields after the command name, which is in parentheses.
                let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
                after.split_whitespace().nth(2) == Some(pgid.to_string().as_str())
            })
            .map(|p| p.file_name().to_string_lossy().into_owned())
            .collect(),
    };
    let mut ns = 0u64;
    for pid in pids {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        for t in tasks.into_iter().flatten().flatten() {
            let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            ns += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

/// utime + stime of process `pid`, every thread it ever had included.
fn ticks_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (in parentheses): utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    // /proc reports USER_HZ ticks: 100 a second on x86_64 and arm64.
    Duration::from_millis(ticks.saturating_mul(10))
}

/// Waits up to 20 s for a listener on `port` (loopback).
pub fn wait_port(port: u16) {
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A number from the environment (the bench's knobs), or `default`.
pub fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// The median of some figures (the upper one of an even count).
pub fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
