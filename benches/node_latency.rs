//! Added latency of an autonomous exec through `sanctum-guard node`: from the invoke received
//! to the `node.invoke.result` sent, minus the confined command's own run (sandbox spawn to
//! exit), over 500 runs of the agent's shape `["/bin/sh","-lc","ls"]`. Two deciders: in
//! process (laptop mode) and the real `serve` over the approvals socket (deployment mode).
//! Target: p99 ≤ 2 ms on an idle machine; on a loaded one the tail grows with the scheduler's
//! delays (the load is part of the figure: note it). The sidecar is given the node's
//! workspace, as a deployment's is; a failed run prints what the decider saw (its log and
//! audit records). `cargo bench --bench node_latency`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::app::config::{Config, Overrides};
use sanctum_guard::app::node::local_engine;
use sanctum_guard::node::decider::{Decider, Remote, SocketDecider};
use sanctum_guard::node::invoke::{Handler, RunTimer, Send};
use sanctum_guard::node::protocol::InvokeRequest;
use sanctum_guard::openclaw::store::{Era, Store};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

const RUNS: usize = 500;
const WARMUP: usize = 20;

/// A child killed (and reaped) when dropped, unwinding included.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `diagnose` says what the decider saw, for a run that failed.
async fn measure(name: &str, decider: Decider, diagnose: &dyn Fn() -> String) {
    let runs: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::new()));
    let r = runs.clone();
    let timer: RunTimer = Arc::new(move |d| r.lock().expect("lock").push(d));
    let (_tx, rx) = watch::channel(false);
    let h = Handler {
        node_id: "bench".into(),
        decider: Arc::new(decider),
        ask_timeout: Duration::from_secs(60),
        shutdown: rx,
        run_timer: Some(timer),
    };
    let sent_at: Arc<Mutex<Option<(Instant, Value)>>> = Arc::new(Mutex::new(None));
    let s = sent_at.clone();
    let send: Send = Box::new(move |m: &str, p: Value| {
        if m == "node.invoke.result" {
            *s.lock().expect("lock") = Some((Instant::now(), p));
        }
    });
    let params = json!({"command":["/bin/sh","-lc","ls"],"rawCommand":"ls","agentId":"main",
                        "sessionKey":"agent:main:bench","timeoutMs":30000});
    let mut added = Vec::with_capacity(RUNS);
    let mut ran = Vec::with_capacity(RUNS);
    for i in 0..WARMUP + RUNS {
        let inv = InvokeRequest {
            id: format!("b{i}"),
            node_id: Some("bench".into()),
            command: "system.run".into(),
            params_json: Some(params.to_string()),
            timeout_ms: Some(35_000),
        };
        let t0 = Instant::now();
        h.handle(inv, &send).await;
        let (t1, result) = sent_at.lock().expect("lock").take().expect("a result");
        assert!(
            result["ok"] == true,
            "{name}: the autonomous run must succeed (run {i}): {result}\n{}",
            diagnose()
        );
        let run = runs.lock().expect("lock").pop().expect("a run");
        if i >= WARMUP {
            added.push((t1 - t0).saturating_sub(run).as_secs_f64() * 1e3);
            ran.push(run.as_secs_f64() * 1e3);
        }
    }
    added.sort_by(f64::total_cmp);
    ran.sort_by(f64::total_cmp);
    println!(
        "node_latency/{name}: added p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms  (the run itself: p50 {:.2} ms, p99 {:.2} ms; n={RUNS})",
        pct(&added, 0.5),
        pct(&added, 0.99),
        added[added.len() - 1],
        pct(&ran, 0.5),
        pct(&ran, 0.99)
    );
}

fn main() {
    let tmp = tempfile::Builder::new()
        .prefix("sg-bench-node-")
        .tempdir()
        .expect("tmp");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");

    // Laptop mode: the engine in this process (policy answer + fsynced decision record).
    let cfg = Config::load(&Overrides {
        state_dir: Some(tmp.path().join("guard")),
        openclaw_state: Some(tmp.path().join("oc")),
        workspace: Some(ws.clone()),
        ..Default::default()
    })
    .expect("config");
    let store = Store::open(tmp.path().join("oc"), Era::Sqlite).expect("store");
    let engine = local_engine(&cfg, store).expect("engine");
    let audit = cfg.audit_path();
    rt.block_on(measure(
        "in-process",
        Decider::Local(Arc::new(engine)),
        &|| std::fs::read_to_string(&audit).unwrap_or_default(),
    ));

    // Deployment mode: the real sidecar over the approvals socket.
    let oc = tmp.path().join("oc-sidecar");
    let log = tmp.path().join("serve.log");
    let serve = Command::new(env!("CARGO_BIN_EXE_sanctum-guard"))
        .arg("serve")
        .arg("--state-dir")
        .arg(tmp.path().join("sidecar"))
        .arg("--openclaw-state")
        .arg(&oc)
        // The node's workspace: a sidecar that sees another one judges the node's paths as
        // outside it and asks a person (nobody here: the fallback denies after its deadline).
        .arg("--workspace")
        .arg(&ws)
        // No web prompt: a bench must not depend on 127.0.0.1:8484 being free.
        .args(["--web-listen", "off"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("serve");
    // Stopped however the bench ends: a panicking run must not leave serve holding its
    // socket for the next one.
    let _serve = KillOnDrop(serve);
    let start = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("serving")
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let store = Store::open(&oc, Era::Sqlite).expect("store");
    let token = store
        .read()
        .expect("doc")
        .and_then(|d| d.socket_token().map(str::to_owned))
        .expect("serve wrote a token");
    let judge_store = Store::open(tmp.path().join("oc"), Era::Sqlite).expect("store");
    let judge =
        sanctum_guard::engine::Judge::load(cfg.judge_config().expect("judge config"), judge_store)
            .expect("judge");
    let decider = Decider::Remote(Box::new(Remote {
        socket: SocketDecider {
            path: oc.join("exec-approvals.sock"),
            token,
        },
        judge,
        state_modes: cfg.state_modes(),
    }));
    let sidecar_audit = tmp.path().join("sidecar/audit.jsonl");
    rt.block_on(measure("sidecar-socket", decider, &|| {
        format!(
            "serve's log:\n{}\nserve's audit:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            std::fs::read_to_string(&sidecar_audit).unwrap_or_default()
        )
    }));
}
