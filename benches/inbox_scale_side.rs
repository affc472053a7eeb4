//! The web prompt at 10,000 pending requests, this build side by side with an older one in one
//! run: each build's real `sanctum-guard serve` on its own temp dirs, 10,000 `request` frames
//! held open on its approvals socket (a door every build serves, so the inbox schema may
//! differ), signed in with its login link, then p50/p99 over HTTP of what a reviewer's page
//! does: the pending list (the first page the inbox page loads), a decision, History and
//! `/readyz`. The builds alternate request by request, so drift on a shared machine hits both.
//! Target: list, decide and History under 100 ms p99 on the server.
//!
//! `SANCTUM_BENCH_BASELINE_BIN=$(benches/baseline.sh 29d5920) cargo bench --bench inbox_scale_side`
//! Env: SANCTUM_BENCH_BIN (the current build, default this build's binary),
//! SANCTUM_BENCH_BASELINE_BIN (the older build; without it only the current one is measured),
//! SANCTUM_BENCH_N (samples per figure, default 100), SANCTUM_BENCH_DIR (parent of the temp
//! dirs, e.g. /dev/shm).
// Bench code: a panic is the failure report, and benches may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::process::{free_port, ChildGuard};
use support::web::{Login, WebClient};

const PENDING: usize = 10_000;
/// Set (to the socket path) in the child that holds one build's 10,000 connections: each
/// process may hold about 20,000 descriptors, and two builds' clients would not fit in one.
const HOLD_ENV: &str = "SANCTUM_BENCH_HOLD_SOCKET";
/// Every build reads these keys: room for 10,000 waiting clients from one peer, no rate limit
/// in the way of filling, and deadlines far beyond the run.
const CONFIG: &str = "[socket]\nmax_connections = 12000\nmax_connections_per_uid = 12000\n\
    rate_per_sec = 10000000\nrate_burst = 10000000\n[deadlines]\nrequest_ms = 3600000\n";

/// One build under test.
struct Build {
    name: String,
    bin: PathBuf,
}

/// One build's `serve` filled with pending requests, signed in.
struct Running {
    name: String,
    client: WebClient,
    login: Login,
    /// The first page its inbox page asks for: the current page asks `limit=500`; the older
    /// page (before paging) asked with no limit, which its server capped at 500.
    list_path: String,
    /// (id, request hash) of pending entries to decide.
    to_decide: Vec<(String, String)>,
    fill_secs: f64,
    _holder: ChildGuard,
    _serve: ChildGuard,
    _tmp: tempfile::TempDir,
}

fn main() {
    if let Ok(sock) = std::env::var(HOLD_ENV) {
        hold(Path::new(&sock));
        return;
    }
    let n: usize = std::env::var("SANCTUM_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut builds = vec![Build {
        name: "current".into(),
        bin: std::env::var_os("SANCTUM_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_sanctum-guard"))),
    }];
    match std::env::var_os("SANCTUM_BENCH_BASELINE_BIN") {
        Some(b) => builds.push(Build {
            name: "baseline".into(),
            bin: PathBuf::from(b),
        }),
        None => println!(
            "inbox_scale_side: no baseline build; for one, run \
             SANCTUM_BENCH_BASELINE_BIN=$(benches/baseline.sh 29d5920) cargo bench --bench \
             inbox_scale_side. Measuring the current build only."
        ),
    }
    // Filled one after the other (filling is the heavy part), then measured together.
    let runs: Vec<Running> = builds.iter().map(|b| start(b, n)).collect();
    for r in &runs {
        println!(
            "inbox_scale_side: {} ({}): {PENDING} pending held in {:.1} s",
            r.name,
            builds
                .iter()
                .find(|b| b.name == r.name)
                .map(|b| b.bin.display().to_string())
                .unwrap_or_default(),
            r.fill_secs
        );
    }

    type Op = fn(&Running, usize) -> u16;
    let ops: [(&str, Op); 4] = [
        ("list (first page)", |r, _| {
            r.client
                .call("GET", &r.list_path, Some(&r.login), None)
                .status
        }),
        ("decide", |r, i| {
            let (id, hash) = &r.to_decide[i];
            r.client
                .decide(&r.login, id, json!({"decision": "deny", "hash": hash}))
                .status
        }),
        ("history", |r, _| {
            r.client
                .call(
                    "GET",
                    "/api/requests?state=resolved&limit=1000",
                    Some(&r.login),
                    None,
                )
                .status
        }),
        ("readyz", |r, _| {
            r.client.call("GET", "/readyz", None, None).status
        }),
    ];
    let mut table: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
    for (name, op) in ops {
        let mut ms: Vec<Vec<f64>> = vec![Vec::with_capacity(n); runs.len()];
        for i in 0..n {
            // Alternate which build goes first, so neither always follows the other.
            for k in 0..runs.len() {
                let j = (i + k) % runs.len();
                let t0 = Instant::now();
                let status = op(&runs[j], i);
                ms[j].push(t0.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(status, 200, "{name} on {}", runs[j].name);
            }
        }
        table.push((name, ms.iter_mut().map(|m| p50_p99(m)).collect()));
    }

    println!(
        "inbox_scale_side: {PENDING} pending, {n} samples each, p50/p99 in ms (2-core machine \
         shared with other work: figures are noisy; the builds alternate, so noise hits both)"
    );
    let mut head = format!("  {:<18}", "");
    for r in &runs {
        head.push_str(&format!(" {:>20}", r.name));
    }
    if runs.len() == 2 {
        head.push_str(&format!(" {:>22}", "current/baseline"));
    }
    println!("{head}");
    for (name, cols) in &table {
        let mut line = format!("  {name:<18}");
        for (p50, p99) in cols {
            line.push_str(&format!(" {:>9.2} / {:>8.2}", p50, p99));
        }
        if let [(c50, c99), (b50, b99)] = cols[..] {
            line.push_str(&format!(" {:>10.2}x / {:>8.2}x", c50 / b50, c99 / b99));
        }
        println!("{line}");
    }
}

/// p50 and p99 of `ms` (sorted in place).
fn p50_p99(ms: &mut [f64]) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
    (at(0.50), at(0.99))
}

/// Starts `b`'s serve with its web prompt, holds 10,000 `request` frames on its socket from a
/// child process, waits until its inbox says 10,000 pending, and signs in.
fn start(b: &Build, n: usize) -> Running {
    let tmp = match std::env::var_os("SANCTUM_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .expect("tmp");
    let (home, oc, state) = (
        tmp.path().join("home"),
        tmp.path().join("oc"),
        tmp.path().join("guard"),
    );
    std::fs::create_dir_all(&home).expect("home");
    let cfg = tmp.path().join("guard.toml");
    std::fs::write(&cfg, CONFIG).expect("config");
    let port = free_port();
    let log = std::fs::File::create(tmp.path().join("serve.log")).expect("log");
    let serve = ChildGuard::spawn_group(
        "serve",
        Command::new(&b.bin)
            .arg("serve")
            .arg("--state-dir")
            .arg(&state)
            .arg("--openclaw-state")
            .arg(&oc)
            .arg("--config")
            .arg(&cfg)
            .args(["--web-listen", &format!("127.0.0.1:{port}")])
            .env("HOME", &home)
            .env("SANCTUM_LOG", "warn")
            .env_remove("OPENCLAW_STATE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log),
    );
    let sock = oc.join("exec-approvals.sock");
    let link = state.join("web-login-link");
    let t0 = Instant::now();
    while !(sock.exists() && link.exists()) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{}: serve did not start: {}",
            b.name,
            std::fs::read_to_string(tmp.path().join("serve.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let client = WebClient { port };
    let token = std::fs::read_to_string(&link).expect("link");
    let login =
        Login::from_answer(&client.login_with(token.trim().rsplit_once("#t=").expect("#t=").1));

    let t0 = Instant::now();
    let mut holder = ChildGuard::new(
        "holder",
        Command::new(std::env::current_exe().expect("exe"))
            .env(HOLD_ENV, &sock)
            .env("SANCTUM_BENCH_HOLD_TOKEN", socket_token(&oc))
            .env("SANCTUM_BENCH_HOLD_TAG", &b.name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn holder"),
    );
    let out = holder.child.as_mut().and_then(|c| c.stdout.take());
    let mut line = String::new();
    BufReader::new(out.expect("holder stdout"))
        .read_line(&mut line)
        .expect("holder line");
    assert_eq!(line.trim(), format!("held {PENDING}"), "{}", b.name);
    // Every frame is on the socket; the figure is reached once serve has judged them all.
    let mut pending = 0;
    while pending < PENDING {
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "{}: only {pending} pending after 600 s",
            b.name
        );
        std::thread::sleep(Duration::from_millis(250));
        pending = pending_gauge(&client, &login);
    }
    let fill_secs = t0.elapsed().as_secs_f64();
    assert_eq!(pending, PENDING, "{}", b.name);

    let first = client.call(
        "GET",
        &format!("/api/requests?state=pending&limit={}", n.max(1)),
        Some(&login),
        None,
    );
    let to_decide: Vec<(String, String)> = first.json()["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .take(n)
        .map(|e| {
            (
                e["id"].as_str().expect("id").to_owned(),
                e["requestHash"].as_str().expect("hash").to_owned(),
            )
        })
        .collect();
    assert_eq!(to_decide.len(), n, "{}: too few to decide", b.name);
    let list_path = if b.name == "baseline" {
        "/api/requests?state=pending"
    } else {
        "/api/requests?state=pending&limit=500"
    };
    Running {
        name: b.name.clone(),
        client,
        login,
        list_path: list_path.into(),
        to_decide,
        fill_secs,
        _holder: holder,
        _serve: serve,
        _tmp: tmp,
    }
}

/// The `pending_requests` gauge of `/metrics` (every build exposes it).
fn pending_gauge(client: &WebClient, login: &Login) -> usize {
    let r = client.call("GET", "/metrics", Some(login), None);
    assert_eq!(r.status, 200, "/metrics: {r:?}");
    r.body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.contains("pending_requests"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as usize)
        .unwrap_or(0)
}

/// The socket token serve stored in the OpenClaw document it created.
fn socket_token(oc: &Path) -> String {
    let conn = rusqlite::Connection::open(oc.join("state/openclaw.sqlite")).expect("openclaw db");
    let raw: String = conn
        .query_row(
            "SELECT raw_json FROM exec_approvals_config WHERE config_key='current'",
            [],
            |r| r.get(0),
        )
        .expect("approvals row");
    let v: Value = serde_json::from_str(&raw).expect("json");
    v["socket"]["token"].as_str().expect("token").to_owned()
}

/// The holder child: 10,000 connections, each with one gated `request` frame as OpenClaw's
/// client sends it, kept open (a client that goes away cancels its request); prints
/// `held N`, then waits until the bench closes its stdin.
fn hold(sock: &Path) {
    support::process::raise_nofile();
    let token = std::env::var("SANCTUM_BENCH_HOLD_TOKEN").expect("token");
    let tag = std::env::var("SANCTUM_BENCH_HOLD_TAG").expect("tag");
    let mut held = Vec::with_capacity(PENDING);
    for i in 0..PENDING {
        let line = support::socket::request_line(
            &token,
            &format!("scale-{i}"),
            &format!("touch /tmp/sg-scale-{tag}-{i}"),
        );
        let t0 = Instant::now();
        let mut s = loop {
            match UnixStream::connect(sock) {
                Ok(s) => break s,
                // The listen backlog is full for a moment while serve catches up.
                Err(_) if t0.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("connect {i}: {e}"),
            }
        };
        s.write_all(line.as_bytes()).expect("write frame");
        held.push(s);
    }
    println!("held {}", held.len());
    std::io::stdout().flush().expect("flush");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
