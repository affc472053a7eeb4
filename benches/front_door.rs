//! The front door against nginx, side by side in one run: the same WebSocket echo upstream,
//! reached directly, through nginx as a WebSocket reverse proxy, and through the guard's door
//! (which parses and filters every frame). 100 connections each send 1 KB `chat.history`
//! requests one after another and wait for the echo; the figures are messages per second and
//! the round trip's p50/p99, with the latency each proxy adds over the direct path; nine
//! rounds (`SANCTUM_BENCH_ROUNDS`, `SANCTUM_BENCH_MESSAGES` per connection), the proxies'
//! order rotating, medians reported. `SANCTUM_BENCH_DOOR_B=BINARY` adds another build of the
//! guard as a third column, to measure a change against its parent in the same rounds.
//! Targets (issue): the door's throughput >= nginx's, its p99 <= 1.5x nginx's. Each proxy's
//! own CPU time per message is printed too (every thread of its process group, from the
//! scheduler's nanosecond counters): on a machine the load generator saturates, throughput
//! goes to whichever proxy costs less CPU, and that figure is far steadier than msg/s.
//! Needs nginx (`apt-get install nginx-light`); without it the nginx column is skipped.
// Bench code: a panic is the failure report, and benches may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use support::bench::{cpu_of, figures, knob, median, wait_port, Figures, Proxy};
use support::guard::{Serve, World};
use support::process::{free_port, ChildGuard};
use tokio_tungstenite::tungstenite::Message;

const CONNECTIONS: usize = 100;
const MESSAGES: usize = 200;
const ROUNDS: usize = 9;

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
async fn load(url: &str, messages: usize) -> (Vec<u64>, Duration) {
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
            let mut rtts = Vec::with_capacity(messages);
            for i in 0..messages {
                let t0 = Instant::now();
                tx.send(Message::text(frame(c * messages + i)))
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

/// A measured run of `load` through `proxy` (None: direct).
fn measure(
    rt: &tokio::runtime::Runtime,
    url: &str,
    proxy: Option<Proxy>,
    messages: usize,
) -> Figures {
    let before = proxy.map(cpu_of);
    let run = rt.block_on(load(url, messages));
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

/// A guard with its door in front of `upstream`, limits raised for the load; `bin` runs
/// another build of the guard (None: this one). The door link's url, and the guard.
fn door(upstream: u16, bin: Option<&str>) -> (String, Serve, World) {
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
    // The support code finds the guard binary through this variable.
    if let Some(b) = bin {
        std::env::set_var("SANCTUM_TEST_GUARD_BIN", b);
    }
    let serve = Serve::start(
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
            &format!("ws://127.0.0.1:{upstream}"),
            "--gateway-token-file",
            token.to_str().expect("utf8"),
        ],
    );
    wait_port(front);
    let url = support::gateway::door_link(&w.guard_state, &format!("127.0.0.1:{front}"), "bench");
    if bin.is_some() {
        std::env::remove_var("SANCTUM_TEST_GUARD_BIN");
    }
    (url, serve, w)
}

/// One measured column: a name, its url, and the proxy whose CPU is counted (None: direct).
struct Column {
    name: &'static str,
    url: String,
    proxy: Option<Proxy>,
    runs: Vec<Figures>,
}

fn main() {
    let rounds = knob("SANCTUM_BENCH_ROUNDS", ROUNDS);
    let messages = knob("SANCTUM_BENCH_MESSAGES", MESSAGES);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let echo = free_port();
    rt.spawn(echo_upstream(echo));
    wait_port(echo);

    let (door_url, serve, w) = door(echo, None);
    // SANCTUM_BENCH_DOOR_B: another build of the guard, measured in the same rounds (a change
    // against its parent: `cp target/release/sanctum-guard /tmp/before` first).
    let other = std::env::var("SANCTUM_BENCH_DOOR_B").ok();
    let door_b = other.as_deref().map(|b| door(echo, Some(b)));
    let nginx_port = free_port();
    let ngx = nginx(w.tmp.path(), nginx_port, echo);

    let mut columns = vec![Column {
        name: "door",
        url: door_url,
        proxy: Some(Proxy::Process(serve.child.pid())),
        runs: Vec::new(),
    }];
    if let Some(n) = &ngx {
        columns.push(Column {
            name: "nginx",
            url: format!("ws://127.0.0.1:{nginx_port}/"),
            proxy: Some(Proxy::Group(n.pid())),
            runs: Vec::new(),
        });
    }
    if let Some((url, s, _)) = &door_b {
        columns.push(Column {
            name: "door-b",
            url: url.clone(),
            proxy: Some(Proxy::Process(s.child.pid())),
            runs: Vec::new(),
        });
    }
    // One warm-up pass each, then the measured rounds. Within a round the proxies' order
    // rotates, so drift and the machine's other load hit each alike; the figures are each
    // column's median over the rounds, and the ratios are the medians of the per-round ratios
    // (each compares runs made in the same round).
    let direct_url = format!("ws://127.0.0.1:{echo}/");
    rt.block_on(load(&direct_url, messages));
    for c in &columns {
        rt.block_on(load(&c.url, messages));
    }
    let mut direct = Vec::new();
    for round in 0..rounds {
        direct.push(measure(&rt, &direct_url, None, messages));
        let n = columns.len();
        for k in 0..n {
            let c = &mut columns[(round + k) % n];
            c.runs.push(measure(&rt, &c.url, c.proxy, messages));
        }
    }

    println!(
        "front_door: {CONNECTIONS} connections x {messages} messages of ~1 KB (chat.history), \
         median of {rounds} rounds"
    );
    let direct_p99 = median(direct.iter().map(|f| f.p99 as f64));
    let direct = Column {
        name: "direct",
        url: String::new(),
        proxy: None,
        runs: direct,
    };
    for c in std::iter::once(&direct).chain(&columns) {
        let p99 = median(c.runs.iter().map(|f| f.p99 as f64));
        println!(
            "  {:<7} {:>9.0} msg/s   p50 {:>6.0} µs   p99 {:>6.0} µs   added p99 {:>6.0} µs   \
             cpu {:>5.1} µs/msg",
            c.name,
            median(c.runs.iter().map(|f| f.per_sec)),
            median(c.runs.iter().map(|f| f.p50 as f64)),
            p99,
            (p99 - direct_p99).max(0.0),
            median(c.runs.iter().map(|f| f.cpu_us)),
        );
    }
    if ngx.is_none() {
        println!("  nginx: skipped (not installed: apt-get install nginx-light)");
    }
    for other in &columns[1..] {
        compare(&columns[0], other);
    }
}

/// The door's figures over `other`'s, round by round, and their medians.
fn compare(door: &Column, other: &Column) {
    let pairs = || door.runs.iter().zip(&other.runs);
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
    let targets = other.name == "nginx";
    println!(
        "  door/{}: throughput {:.2}x ({}rounds {}), p99 {:.2}x ({}rounds {})",
        other.name,
        median(throughput.iter().copied()),
        if targets { "target >= 1; " } else { "" },
        list(&throughput),
        median(p99.iter().copied()),
        if targets { "target <= 1.5; " } else { "" },
        list(&p99),
    );
    println!(
        "  door/{}: cpu per message {:.2}x (rounds {})",
        other.name,
        median(cpu.iter().copied()),
        list(&cpu),
    );
}
