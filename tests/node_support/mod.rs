//! Helpers of the node integration tests: the sidecar world (OpenClaw's approvals document set
//! with the REAL CLI, the real `serve`), the REAL OpenClaw gateway on a free loopback port with
//! a temp HOME/state, the scripted model (tests/js/scripted_model.mjs) as its provider, and
//! the real `sanctum-guard node`. Every child is killed by a Drop guard.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(dead_code)]

#[path = "../socket_support/mod.rs"]
pub mod sock;

use serde_json::{json, Value};
pub use sock::*;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const GW_TOKEN: &str = "node-test-gateway-token";
pub const NODE_NAME: &str = "guardnode";

/// A sidecar world whose OpenClaw defaults leave every decision to the guard (security full,
/// ask off: OpenClaw's own settings can only tighten the guard's table).
pub fn world(token: &str) -> World {
    let tmp = tempfile::Builder::new()
        .prefix("sg-node-")
        .tempdir()
        .expect("tempdir");
    let home = tmp.path().join("home");
    let oc_state = tmp.path().join("oc");
    std::fs::create_dir_all(&home).expect("home");
    let doc = json!({"version":1,"socket":{"path":oc_state.join("exec-approvals.sock"),"token":token},
        "defaults":{"security":"full","ask":"off","askFallback":"deny"},"agents":{}});
    let doc_path = tmp.path().join("doc.json");
    std::fs::write(&doc_path, doc.to_string()).expect("doc");
    openclaw_cli(
        NEW,
        &home,
        &oc_state,
        &[
            "approvals",
            "set",
            "--file",
            doc_path.to_str().expect("utf8"),
        ],
    );
    World {
        sock: oc_state.join("exec-approvals.sock"),
        guard_state: tmp.path().join("guard"),
        home,
        oc_state,
        token: token.into(),
        tmp,
    }
}

/// One real gateway at a time in a test binary: two starting at once on a loaded 2-core
/// machine take minutes. Hold the guard for the test's whole life.
pub fn one_gateway_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn wait_until<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The scripted model: `(child, port, log of every request)`.
pub fn start_model(dir: &Path) -> (ChildGuard, u16, PathBuf) {
    let log = dir.join("model.jsonl");
    let out = dir.join("model.out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/scripted_model.mjs");
    let child = ChildGuard::spawn_group(
        "model",
        Command::new(node())
            .arg(script)
            .arg("0")
            .arg(&log)
            .stdout(std::fs::File::create(&out).expect("out"))
            .stderr(Stdio::inherit()),
    );
    let port = wait_until("the model to listen", Duration::from_secs(30), || {
        let t = std::fs::read_to_string(&out).ok()?;
        t.lines()
            .find_map(|l| l.strip_prefix("listening ")?.trim().parse().ok())
    });
    (child, port, log)
}

/// Every tool result the model was shown (what reached the agent).
pub fn tool_results(model_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(model_log).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for m in v["messages"].as_array().into_iter().flatten() {
            if m["role"] == "tool" {
                let t = m["content"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| m["content"].to_string());
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// The real gateway with the scripted model as provider and every exec bound to our node.
pub struct Gateway {
    pub child: ChildGuard,
    pub port: u16,
    pub home: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
}

impl Gateway {
    pub fn start(dir: &Path, model_port: u16, extra: Value) -> Gateway {
        let home = dir.join("gw-home");
        let state = dir.join("gw-state");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&state).expect("state");
        let port = free_port();
        let mut cfg = json!({
            "gateway":{"port":port,"auth":{"mode":"token","token":GW_TOKEN}},
            "agents":{"defaults":{"model":{"primary":"fake/fake-1"}}},
            "models":{"mode":"merge","providers":{"fake":{"baseUrl":format!("http://127.0.0.1:{model_port}/v1"),
                "apiKey":"sk-fake","api":"openai-completions",
                "models":[{"id":"fake-1","name":"Fake","reasoning":false,"input":["text"],"contextWindow":128000,"maxTokens":4096}]}}},
            "tools":{"exec":{"host":"node","node":NODE_NAME}}});
        merge(&mut cfg, extra);
        std::fs::write(state.join("openclaw.json"), cfg.to_string()).expect("config");
        let log = dir.join("gateway.log");
        let child = ChildGuard::spawn_group(
            "gateway",
            oc(&home, &state)
                .args([
                    "gateway",
                    "run",
                    "--allow-unconfigured",
                    "--auth",
                    "token",
                    "--token",
                    GW_TOKEN,
                ])
                .args(["--port", &port.to_string(), "--bind", "loopback"])
                .stdout(std::fs::File::create(&log).expect("log"))
                .stderr(Stdio::inherit()),
        );
        let gw = Gateway {
            child,
            port,
            home,
            state,
            log,
        };
        wait_until("the gateway", Duration::from_secs(300), || {
            std::fs::read_to_string(&gw.log)
                .ok()?
                .contains("[gateway]")
                .then_some(())?;
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(|_| ())
        });
        wait_until("gateway ready", Duration::from_secs(120), || {
            std::fs::read_to_string(&gw.log)
                .ok()?
                .contains("ready")
                .then_some(())
        });
        gw
    }

    /// An operator CLI command as the gateway's own user; `(success, stdout+stderr)`.
    pub fn cli(&self, args: &[&str]) -> (bool, String) {
        let out = oc(&self.home, &self.state)
            .args(args)
            .output()
            .expect("openclaw cli");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// An agent turn whose scripted model calls `exec` with `command` (runs to completion).
    pub fn agent_cmd(&self, session: &str, command: &str) -> Command {
        let script = json!({"name":"exec","arguments":{"command":command}});
        let mut c = oc(&self.home, &self.state);
        c.args([
            "agent",
            "--agent",
            "main",
            "--session-key",
            &format!("agent:main:{session}"),
        ])
        .args([
            "--message",
            &format!("SCRIPT {script}"),
            "--json",
            "--timeout",
            "600",
        ]);
        c
    }

    pub fn agent_turn(&self, session: &str, command: &str) -> String {
        let out = self.agent_cmd(session, command).output().expect("agent");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Approves our node's command surface (`nodes pending` → `nodes approve`); its node id.
    pub fn approve_node(&self) -> String {
        wait_until(
            "the node's pending request",
            Duration::from_secs(120),
            || {
                let (_, out) = self.cli(&["nodes", "pending", "--json"]);
                let at = out.find(['[', '{'])?;
                let v: Value = serde_json::from_str(out[at..].trim()).ok()?;
                let p = v.get(0).or_else(|| v["pending"].get(0))?.clone();
                let rid = p["requestId"].as_str()?.to_owned();
                let (ok, out) = self.cli(&["nodes", "approve", &rid]);
                assert!(ok, "nodes approve: {out}");
                p["nodeId"].as_str().map(str::to_owned)
            },
        )
    }

    /// A raw operator `node.invoke system.run` (no approval involved); stdout+stderr.
    pub fn raw_invoke_cmd(&self, node_id: &str, params: Value, key: &str) -> Command {
        let p = json!({"nodeId":node_id,"command":"system.run","params":params,"idempotencyKey":key,"timeoutMs":120000});
        let mut c = oc(&self.home, &self.state);
        c.args([
            "gateway",
            "call",
            "node.invoke",
            "--json",
            "--timeout",
            "130000",
            "--params",
            &p.to_string(),
        ]);
        c
    }

    pub fn gateway_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

pub fn oc(home: &Path, state: &Path) -> Command {
    let mut c = Command::new(openclaw_dir(NEW).join("node_modules/.bin/openclaw"));
    c.env("PATH", path_with_node())
        .env("HOME", home)
        .env("OPENCLAW_STATE_DIR", state)
        .env("OPENCLAW_HIDE_BANNER", "1")
        .env("OPENCLAW_SUPPRESS_NOTES", "1")
        .env_remove("NODE_OPTIONS")
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

/// The real `sanctum-guard node`, its stderr in a file.
pub struct NodeProc {
    pub child: ChildGuard,
    pub log: PathBuf,
}

impl NodeProc {
    pub fn start(
        dir: &Path,
        gw: &Gateway,
        state: &Path,
        workspace: &Path,
        extra: &[&str],
    ) -> NodeProc {
        let token = dir.join("gw-token");
        std::fs::write(&token, GW_TOKEN).expect("token");
        let log = dir.join(format!("node-{}.log", now_ms()));
        let mut c = Command::new(guard_bin());
        c.arg("node")
            .args(["--gateway-url", &format!("ws://127.0.0.1:{}", gw.port)])
            .arg("--token-file")
            .arg(&token)
            .arg("--workspace")
            .arg(workspace)
            .args(["--name", NODE_NAME])
            .arg("--state-dir")
            .arg(state)
            .args(extra)
            .env("SANCTUM_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"));
        NodeProc {
            child: ChildGuard::new("node", c.spawn().expect("spawn node")),
            log,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn wait_log(&self, needle: &str, timeout: Duration) -> String {
        wait_until(&format!("node log {needle:?}"), timeout, || {
            let l = self.log();
            l.contains(needle).then_some(l)
        })
    }
}

/// A spawned command whose output is collected at the end.
pub fn spawn_collect(mut c: Command) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

pub fn collect(child: Child) -> String {
    let out = child.wait_with_output().expect("wait");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The guard inbox's pending entries (via the real CLI): `(inbox id, request json)`.
pub fn pending(state_dir: &Path) -> Vec<(String, Value)> {
    let (code, out, err) = guard_cli(
        &[
            "inbox",
            "list",
            "--json",
            "--state-dir",
            state_dir.to_str().expect("utf8"),
        ],
        &[],
    );
    assert_eq!(code, 0, "inbox list: {err}");
    let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    v.as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["id"].as_str().unwrap_or_default().to_owned(),
                e["request"].clone(),
            )
        })
        .collect()
}

pub fn lines_of(f: &Path) -> Vec<String> {
    std::fs::File::open(f)
        .map(|f| {
            std::io::BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .collect()
        })
        .unwrap_or_default()
}
