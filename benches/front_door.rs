//! The front door against nginx, side by side in one run: the same WebSocket echo upstream,
//! reached directly, through nginx as a WebSocket reverse proxy, and through the guard's door
//! (which parses and filters every frame). 100 connections each send 1 KB `chat.history`
//! requests one after another and wait for the echo; the figures are messages per second and
//! the round trip's p50/p99, with the latency each proxy adds over the direct path; five
//! rounds, the two proxies' order alternating, medians reported.
//! Targets (issue): the door's throughput >= nginx's, its p99 <= 1.5x nginx's. Each proxy's
//! own CPU time per message is printed too (every thread of its process group, from the
//! scheduler's nanosecond counters): on a machine the load generator saturates, throughput
//! goes to whichever proxy costs less CPU, and that figure is far steadier than msg/s.
//! Needs nginx (`apt-get install nginx-light`); without it the nginx column is skipped.
// Bench code: a panic is the failure report, and benches may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

#[path = "../tests/support/mod.rs"]
mod support;

use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use support::guard::{Serve, World};
use support::process::{free_port, ChildGuard};
use tokio_tungstenite::tungstenite::Message;

const CONNECTIONS: usize = 100;
const MESSAGES: usize = 200;
const ROUNDS: usize = 5;

/// Echoes every text frame back, for as long as the client stays.
async fn echo_upstream(port: u16) {
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind echo");
    loop {
        let Ok((s, _)) = l.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let Ok(ws) = tokio_tungstenite::accept_async(s).await else {
                return;
            };
            let (mut tx, mut rx) = ws.split();
            while let Some(Ok(m)) = rx.next().await {
                if m.is_text() && tx.send(m).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// A `chat.history` request padded to about 1 KB.
fn frame(i: usize) -> String {
    let pad = "x".repeat(900);
    format!(
        r#"{{"type":"req","id":"h-{i}","method":"chat.history","params":{{"sessionKey":"agent:main:main","limit":50,"note":"{pad}"}}}}"#
    )
}

/// Round trips (µs) of every message over `CONNECTIONS` clients of `url`, and the wall time.
async fn load(url: &str) -> (Vec<u64>, Duration) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let (ws, _) = tokio_tungstenite::connect_async(url.as_str())
                .await
                .expect("connect");
            let (mut tx, mut rx) = ws.split();
            let connect = r#"{"type":"req","id":"connect","method":"connect","params":{}}"#;
            tx.send(Message::text(connect)).await.expect("send");
            rx.next().await.expect("connect echo").expect("frame");
            let mut rtts = Vec::with_capacity(MESSAGES);
            for i in 0..MESSAGES {
                let t0 = Instant::now();
                tx.send(Message::text(frame(c * MESSAGES + i)))
                    .await
                    .expect("send");
                let m = rx.next().await.expect("echo").expect("frame");
                assert!(m.is_text(), "{m:?}");
                rtts.push(t0.elapsed().as_micros() as u64);
            }
            let _ = tx.send(Message::Close(None)).await;
            rtts
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("client"));
    }
    (all, started.elapsed())
}

struct Figures {
    per_sec: f64,
    p50: u64,
    p99: u64,
    /// The proxy's CPU time per message, µs (NaN for the direct path).
    cpu_us: f64,
}

fn figures((mut rtts, wall): (Vec<u64>, Duration), cpu: Duration) -> Figures {
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
enum Proxy {
    Group(u32),
    Process(u32),
}

/// On-CPU time so far of every thread of `proxy`'s processes
/// (`/proc/PID/task/TID/schedstat`, first field, nanoseconds).
fn cpu_of(proxy: Proxy) -> Duration {
    let pids: Vec<String> = match proxy {
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

/// A measured run of `load` through `proxy` (None: direct).
fn measure(rt: &tokio::runtime::Runtime, url: &str, proxy: Option<Proxy>) -> Figures {
    let before = proxy.map(cpu_of);
    let run = rt.block_on(load(url));
    let cpu = match (proxy, before) {
        (Some(p), Some(b)) => cpu_of(p).saturating_sub(b),
        _ => Duration::ZERO,
    };
    let mut f = figures(run, cpu);
    if proxy.is_none() {
        f.cpu_us = f64::NAN;
    }
    f
}

/// nginx as a WebSocket reverse proxy to the echo upstream (None when nginx is missing).
fn nginx(dir: &std::path::Path, port: u16, upstream: u16) -> Option<ChildGuard> {
    let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "worker_processes auto; daemon off; pid {pid}; error_log stderr error;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://127.0.0.1:{upstream};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection \"upgrade\";
      proxy_read_timeout 300s;
    }}
  }}
}}
",
            pid = dir.join("nginx.pid").display(),
            d = dir.display(),
        ),
    )
    .expect("nginx.conf");
    let child = ChildGuard::spawn_group(
        "nginx",
        std::process::Command::new(bin)
            .arg("-c")
            .arg(&conf)
            .arg("-p")
            .arg(dir),
    );
    wait_port(port);
    Some(child)
}

fn wait_port(port: u16) {
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let echo = free_port();
    rt.spawn(echo_upstream(echo));
    wait_port(echo);

    // The guard: its door in front of the echo upstream, limits raised for the load.
    let w = World::full("front-door-bench-token-0123456789");
    let cfg = w.write_config(
        "[front]\nmax_connections = 1024\nrate_per_sec = 1000000\nrate_burst = 1000000\n",
    );
    let front = free_port();
    let web = free_port();
    // A gateway url needs a token file; the approver it starts finds no gateway behind the
    // echo and keeps retrying in the background (a few frames a second, noise here).
    let token = w.tmp.path().join("gw-token");
    std::fs::write(&token, "bench-gateway-token").expect("token");
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod token");
    let _serve = Serve::start(
        &w,
        &[("SANCTUM_LOG", "warn")],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--web-listen",
            &format!("127.0.0.1:{web}"),
            "--front-listen",
            &format!("127.0.0.1:{front}"),
            "--gateway-url",
            &format!("ws://127.0.0.1:{echo}"),
            "--gateway-token-file",
            token.to_str().expect("utf8"),
        ],
    );
    wait_port(front);
    let door = support::gateway::door_link(&w.guard_state, &format!("127.0.0.1:{front}"), "bench");

    let nginx_port = free_port();
    let ngx = nginx(w.tmp.path(), nginx_port, echo);

    // One warm-up pass each, then ROUNDS measured rounds. Within a round the order of the two
    // proxies alternates, so drift and the machine's other load hit both alike; the figures
    // are each column's median over the rounds, and the ratios are the medians of the
    // per-round ratios (each ratio compares two runs made back to back).
    let direct_url = format!("ws://127.0.0.1:{echo}/");
    let nginx_url = format!("ws://127.0.0.1:{nginx_port}/");
    rt.block_on(load(&direct_url));
    rt.block_on(load(&door));
    if ngx.is_some() {
        rt.block_on(load(&nginx_url));
    }
    let mut direct = Vec::new();
    let mut via_nginx = Vec::new();
    let mut via_door = Vec::new();
    let door_proc = Proxy::Process(_serve.child.pid());
    let nginx_group = Proxy::Group(ngx.as_ref().map_or(0, ChildGuard::pid));
    for round in 0..ROUNDS {
        direct.push(measure(&rt, &direct_url, None));
        let n = || measure(&rt, &nginx_url, Some(nginx_group));
        let d = || measure(&rt, &door, Some(door_proc));
        if ngx.is_none() {
            via_door.push(d());
        } else if round % 2 == 0 {
            via_nginx.push(n());
            via_door.push(d());
        } else {
            via_door.push(d());
            via_nginx.push(n());
        }
    }

    println!(
        "front_door: {CONNECTIONS} connections x {MESSAGES} messages of ~1 KB (chat.history), \
         median of {ROUNDS} rounds"
    );
    let direct_p99 = median(direct.iter().map(|f| f.p99 as f64));
    for (name, runs) in [
        ("direct", &direct),
        ("nginx", &via_nginx),
        ("door", &via_door),
    ] {
        if runs.is_empty() {
            continue;
        }
        let p99 = median(runs.iter().map(|f| f.p99 as f64));
        println!(
            "  {:<7} {:>9.0} msg/s   p50 {:>6.0} µs   p99 {:>6.0} µs   added p99 {:>6.0} µs   \
             cpu {:>5.1} µs/msg",
            name,
            median(runs.iter().map(|f| f.per_sec)),
            median(runs.iter().map(|f| f.p50 as f64)),
            p99,
            (p99 - direct_p99).max(0.0),
            median(runs.iter().map(|f| f.cpu_us)),
        );
    }
    if via_nginx.is_empty() {
        println!("  nginx: skipped (not installed: apt-get install nginx-light)");
        return;
    }
    let pairs = || via_door.iter().zip(&via_nginx);
    let throughput: Vec<f64> = pairs().map(|(d, n)| d.per_sec / n.per_sec).collect();
    let p99: Vec<f64> = pairs()
        .map(|(d, n)| d.p99 as f64 / n.p99.max(1) as f64)
        .collect();
    let cpu: Vec<f64> = pairs().map(|(d, n)| d.cpu_us / n.cpu_us).collect();
    let list = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  door/nginx: throughput {:.2}x (target >= 1; rounds {}), p99 {:.2}x (target <= 1.5; rounds {})",
        median(throughput.iter().copied()),
        list(&throughput),
        median(p99.iter().copied()),
        list(&p99),
    );
    println!(
        "  door/nginx: cpu per message {:.2}x (rounds {})",
        median(cpu.iter().copied()),
        list(&cpu),
    );
}

/// The median of some figures (the upper one of an even count).
fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
