//! The egress proxy against Squid and tinyproxy, side by side in one run: the same loopback
//! HTTP upstream reached directly, through Squid, through tinyproxy and through
//! `sanctum-guard egress` (which judges every request against its rules, resolves, checks
//! the address and writes an audit record before and after each connection). Each request
//! is a new connection (what a forward proxy serves: one CONNECT or one absolute-form
//! request per connection). Throughput: 50 clients at once; connections per second, the
//! round trip's p50/p99, the p99 each proxy adds over the direct path (mostly queueing at
//! that load), and each proxy's CPU time per connection. Latency: one client, one
//! connection at a time, the p50/p99 each proxy adds to a lone request. Both modes: a plain
//! `GET http://…` forwarded, and a CONNECT tunnel with one request inside. Nine rounds
//! (`SANCTUM_BENCH_ROUNDS`, `SANCTUM_BENCH_REQUESTS` per client, `SANCTUM_BENCH_SERIAL`
//! lone requests per round), the order rotating, medians reported. Targets: throughput >=
//! 1.0x Squid's (tinyproxy is the second anchor), p99 added <= 1 ms on loopback. Needs
//! `squid` and `tinyproxy-bin` from apt (tests/setup.sh installs both); a missing one is
//! skipped and said so.
// Bench code: a panic is the failure report, and benches may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::bench::{cpu_of, figures, knob, median, wait_port, Figures, Proxy};
use support::process::{free_port, guard_bin, listen_addr_in, wait_line, ChildGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CLIENTS: usize = 50;
const REQUESTS: usize = 100;
const ROUNDS: usize = 9;
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

/// Answers one request per connection (the head up to its blank line) and closes.
async fn upstream(l: tokio::net::TcpListener) {
    loop {
        let Ok((mut s, _)) = l.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(512);
            let mut chunk = [0u8; 512];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut chunk).await {
                    Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
            }
            let _ = s.write_all(RESPONSE).await;
        });
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `GET http://upstream/…` to the proxy (or `GET /…` directly).
    Plain,
    /// `CONNECT upstream`, then the request inside the tunnel.
    Tunnel,
}

/// One request on a new connection; returns when the whole answer is in.
async fn one(target: u16, via: Option<u16>, mode: Mode) {
    let port = via.unwrap_or(target);
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let host = format!("127.0.0.1:{target}");
    let mut out = Vec::with_capacity(256);
    let mut buf = [0u8; 1024];
    if via.is_some() && mode == Mode::Tunnel {
        s.write_all(format!("CONNECT {host} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
            .await
            .expect("connect head");
        // The proxy's "200 Connection established" head, whole.
        while !out.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.expect("read");
            assert!(n > 0, "tunnel refused: {}", String::from_utf8_lossy(&out));
            out.extend_from_slice(&buf[..n]);
        }
        assert!(
            out.starts_with(b"HTTP/1.1 200") || out.starts_with(b"HTTP/1.0 200"),
            "{}",
            String::from_utf8_lossy(&out)
        );
        out.clear();
    }
    let target_form = if via.is_some() && mode == Mode::Plain {
        format!("http://{host}/x")
    } else {
        "/x".to_owned()
    };
    s.write_all(format!("GET {target_form} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .expect("request");
    loop {
        let n = s.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.ends_with(b"\r\n\r\nok") {
            break;
        }
    }
    assert!(out.ends_with(b"ok"), "{}", String::from_utf8_lossy(&out));
}

/// Round trips (µs) of `clients` x `requests` connections, and the wall time.
async fn load(
    target: u16,
    via: Option<u16>,
    mode: Mode,
    clients: usize,
    requests: usize,
) -> (Vec<u64>, Duration) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        tasks.push(tokio::spawn(async move {
            let mut rtts = Vec::with_capacity(requests);
            for _ in 0..requests {
                let t0 = Instant::now();
                one(target, via, mode).await;
                rtts.push(t0.elapsed().as_micros() as u64);
            }
            rtts
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("client"));
    }
    (all, started.elapsed())
}

/// `sanctum-guard egress` allowing the upstream; its port and process.
fn ours(state: &std::path::Path, upstream: u16) -> (u16, ChildGuard) {
    let mut child = ChildGuard::spawn_group(
        "egress",
        Command::new(guard_bin())
            .args([
                "egress",
                "--listen",
                "127.0.0.1:0",
                "--max-connections",
                "1024",
            ])
            .arg("--state-dir")
            .arg(state.join("egress"))
            .args(["--allow", &format!("127.0.0.1:{upstream}")])
            .env("SANCTUM_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let stderr = child
        .child
        .as_mut()
        .expect("child")
        .stderr
        .take()
        .expect("stderr");
    let mut lines = std::io::BufReader::new(stderr);
    let line = wait_line(
        &mut lines,
        |l| l.contains("egress proxy"),
        Duration::from_secs(30),
    )
    .expect("the listen line");
    let port = listen_addr_in(&line, "egress proxy")
        .expect("address")
        .port();
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    (port, child)
}

/// Squid (Debian's, one worker, no cache, no access log) allowing loopback clients; the
/// default config's port limits are left out, so CONNECT reaches the upstream's port as it
/// does through the others. `None` when it is not installed.
fn squid(dir: &std::path::Path) -> Option<(u16, ChildGuard)> {
    let bin = ["/usr/sbin/squid", "/usr/bin/squid"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let port = free_port();
    let run = dir.join("squid");
    std::fs::create_dir_all(&run).expect("squid dir");
    // Run as root it drops to `proxy`, which must write its log and pid file here.
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .expect("squid dir mode");
    let conf = run.join("squid.conf");
    let d = run.display();
    std::fs::write(
        &conf,
        format!(
            "http_port 127.0.0.1:{port}\nacl lo src 127.0.0.1/32\nhttp_access allow lo\n\
             http_access deny all\ncache deny all\ncache_mem 0 MB\naccess_log none\n\
             cache_store_log none\ncache_log {d}/cache.log\npid_filename {d}/squid.pid\n\
             coredump_dir {d}\nmax_filedescriptors 8192\nshutdown_lifetime 0 seconds\n\
             pinger_enable off\nvia off\nforwarded_for delete\n"
        ),
    )
    .expect("conf");
    let child = ChildGuard::spawn_group(
        "squid",
        Command::new(bin)
            .arg("-N")
            .arg("-f")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_port(port);
    Some((port, child))
}

/// tinyproxy allowing loopback clients and CONNECT to the upstream's port (None: missing).
fn tinyproxy(dir: &std::path::Path, upstream: u16) -> Option<(u16, ChildGuard)> {
    let bin = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let port = free_port();
    let conf = dir.join("tinyproxy.conf");
    std::fs::write(
        &conf,
        format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 60\nMaxClients 1024\nAllow 127.0.0.1\n\
             ConnectPort {upstream}\nLogLevel Critical\nDisableViaHeader Yes\n"
        ),
    )
    .expect("conf");
    let child = ChildGuard::spawn_group(
        "tinyproxy",
        Command::new(bin)
            .arg("-d")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_port(port);
    Some((port, child))
}

struct Column {
    name: &'static str,
    via: Option<u16>,
    proxy: Option<Proxy>,
    runs: Vec<Figures>,
}

fn measure(
    rt: &tokio::runtime::Runtime,
    c: &Column,
    target: u16,
    mode: Mode,
    requests: usize,
) -> Figures {
    let before = c.proxy.map(cpu_of);
    let run = rt.block_on(load(target, c.via, mode, CLIENTS, requests));
    let cpu = match (c.proxy, before) {
        (Some(p), Some(b)) => cpu_of(p).saturating_sub(b),
        _ => Duration::ZERO,
    };
    let mut f = figures(run, cpu);
    if c.proxy.is_none() {
        f.cpu_us = f64::NAN;
    }
    f
}

fn main() {
    support::process::raise_nofile();
    let rounds = knob("SANCTUM_BENCH_ROUNDS", ROUNDS);
    let requests = knob("SANCTUM_BENCH_REQUESTS", REQUESTS);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let target = listener.local_addr().expect("addr").port();
    rt.spawn(upstream(listener));
    let dir = tempfile::tempdir().expect("tmp");
    let (our_port, our_child) = ours(dir.path(), target);
    let sq = squid(dir.path());
    let tiny = tinyproxy(dir.path(), target);
    for mode in [Mode::Plain, Mode::Tunnel] {
        let mut cols = vec![
            Column {
                name: "direct",
                via: None,
                proxy: None,
                runs: Vec::new(),
            },
            Column {
                name: "egress",
                via: Some(our_port),
                proxy: Some(Proxy::Process(our_child.pid())),
                runs: Vec::new(),
            },
        ];
        if let Some((p, child)) = &sq {
            cols.push(Column {
                name: "squid",
                via: Some(*p),
                proxy: Some(Proxy::Group(child.pid())),
                runs: Vec::new(),
            });
        }
        if let Some((p, child)) = &tiny {
            cols.push(Column {
                name: "tinyproxy",
                via: Some(*p),
                proxy: Some(Proxy::Threads(child.pid())),
                runs: Vec::new(),
            });
        }
        for c in &cols {
            rt.block_on(load(target, c.via, mode, CLIENTS, requests / 4 + 1));
        }
        for round in 0..rounds {
            let n = cols.len();
            for k in 0..n {
                let i = (round + k) % n;
                let f = measure(&rt, &cols[i], target, mode, requests);
                cols[i].runs.push(f);
            }
        }
        report(mode, &cols, rounds, requests);
        one_at_a_time(&rt, &cols, target, mode, rounds);
    }
    if sq.is_none() {
        println!("  squid: skipped (not installed: apt-get install squid)");
    }
    if tiny.is_none() {
        println!("  tinyproxy: skipped (not installed: apt-get install tinyproxy-bin)");
    }
}

/// The latency a proxy adds to a lone request (the "p99 added on loopback"): one
/// client, one connection at a time (`SANCTUM_BENCH_SERIAL` per round, columns rotating),
/// so no queue behind other clients is counted. Every round's round trips pooled.
fn one_at_a_time(
    rt: &tokio::runtime::Runtime,
    cols: &[Column],
    target: u16,
    mode: Mode,
    rounds: usize,
) {
    let serial = knob("SANCTUM_BENCH_SERIAL", 300);
    let mut rtts: Vec<Vec<u64>> = vec![Vec::new(); cols.len()];
    for round in 0..rounds {
        for k in 0..cols.len() {
            let i = (round + k) % cols.len();
            let (r, _) = rt.block_on(load(target, cols[i].via, mode, 1, serial));
            rtts[i].extend(r);
        }
    }
    println!(
        "  one client, one connection at a time ({} per column):",
        serial * rounds
    );
    let f: Vec<Figures> = rtts
        .into_iter()
        .map(|r| figures((r, Duration::from_secs(1)), Duration::ZERO))
        .collect();
    for (c, x) in cols.iter().zip(&f) {
        let added = x.p99.saturating_sub(f[0].p99);
        let verdict = match (c.name, added <= 1000) {
            ("egress", true) => "   (target <= 1 ms: met)",
            ("egress", false) => "   (target <= 1 ms: MISSED)",
            _ => "",
        };
        println!(
            "    {:<9} p50 {:>6} µs   p99 {:>6} µs   added p50 {:>6} µs   added p99 {:>6} µs{verdict}",
            c.name,
            x.p50,
            x.p99,
            x.p50.saturating_sub(f[0].p50),
            added,
        );
    }
}

fn report(mode: Mode, cols: &[Column], rounds: usize, requests: usize) {
    println!(
        "egress_proxy ({}): {CLIENTS} clients x {requests} connections, one request each, median of {rounds} rounds",
        if mode == Mode::Plain { "plain GET http://" } else { "CONNECT + one request" }
    );
    let direct_p99 = median(cols[0].runs.iter().map(|f| f.p99 as f64));
    for c in cols {
        let p99 = median(c.runs.iter().map(|f| f.p99 as f64));
        println!(
            "  {:<9} {:>8.0} conn/s   p50 {:>6.0} µs   p99 {:>6.0} µs   added p99 {:>6.0} µs   cpu {:>6.1} µs/conn",
            c.name,
            median(c.runs.iter().map(|f| f.per_sec)),
            median(c.runs.iter().map(|f| f.p50 as f64)),
            p99,
            (p99 - direct_p99).max(0.0),
            median(c.runs.iter().map(|f| f.cpu_us)),
        );
    }
    let ours = &cols[1];
    for anchor in &cols[2..] {
        let pairs = || ours.runs.iter().zip(&anchor.runs);
        let thr: Vec<f64> = pairs().map(|(o, a)| o.per_sec / a.per_sec).collect();
        let cpu: Vec<f64> = pairs().map(|(o, a)| o.cpu_us / a.cpu_us).collect();
        println!(
            "  egress/{}: throughput {:.2}x (target >= 1), cpu per connection {:.2}x",
            anchor.name,
            median(thr.into_iter()),
            median(cpu.into_iter())
        );
    }
}
