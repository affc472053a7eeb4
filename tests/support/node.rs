//! Helpers of the node integration tests: the sidecar world ([`World::full`] and the real
//! `serve`, re-exported from the socket helpers), the REAL OpenClaw gateway on a free loopback port with
//! a temp HOME/state, the scripted model (tests/js/scripted_model.mjs) as its provider, and
//! the real `sanctum-guard node`. Every child is killed by a Drop guard.

pub use super::socket::*;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The token the test gateway and the node share.
pub const GW_TOKEN: &str = "node-test-gateway-token";
/// The display name our node registers under (the gateway binds exec to it).
pub const NODE_NAME: &str = "guardnode";

/// One real gateway at a time in a test binary: two starting at once on a loaded 2-core
/// machine take minutes. Hold the guard for the test's whole life.
pub fn one_gateway_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Spawns the real `openclaw gateway run` (token auth, loopback `port`) as a process group,
/// its stdout into `log`; does not wait for it.
pub fn spawn_gateway(home: &Path, state: &Path, port: u16, token: &str, log: &Path) -> ChildGuard {
    ChildGuard::spawn_group(
        "gateway",
        oc(home, state)
            .args([
                "gateway",
                "run",
                "--allow-unconfigured",
                "--auth",
                "token",
                "--token",
                token,
            ])
            .args(["--port", &port.to_string(), "--bind", "loopback"])
            .stdout(std::fs::File::create(log).expect("log"))
            .stderr(Stdio::inherit()),
    )
}

/// The scripted model: `(child, port, log of every request)`.
pub fn start_model(dir: &Path) -> (ChildGuard, u16, PathBuf) {
    start_model_with(dir, None)
}

/// [`start_model`] whose answer to a message without a script line is the call `default`.
pub fn start_model_with(dir: &Path, default: Option<&Value>) -> (ChildGuard, u16, PathBuf) {
    let log = dir.join("model.jsonl");
    let out = dir.join("model.out");
    let script = super::process::repo_root().join("tests/js/scripted_model.mjs");
    let mut cmd = Command::new(node());
    if let Some(d) = default {
        cmd.env("SCRIPTED_MODEL_DEFAULT", d.to_string());
    }
    let child = ChildGuard::spawn_group(
        "model",
        cmd.arg(script)
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
    /// Starts the gateway on a free port (config `extra` merged over ours) and waits until
    /// it has loaded its plugins.
    pub fn start(dir: &Path, model_port: u16, extra: Value) -> Gateway {
        Self::start_prepared(dir, model_port, extra, |_, _| {})
    }

    /// [`Gateway::start`], with `prepare(home, state)` run after the config is written and
    /// before the gateway starts (e.g. `openclaw plugins install`).
    pub fn start_prepared(
        dir: &Path,
        model_port: u16,
        extra: Value,
        prepare: impl FnOnce(&Path, &Path),
    ) -> Gateway {
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
        prepare(&home, &state);
        let log = dir.join("gateway.log");
        let child = spawn_gateway(&home, &state, port, GW_TOKEN, &log);
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
        (out.status.success(), output_text(&out))
    }

    /// An agent turn whose scripted model calls `exec` with `command` (runs to completion).
    pub fn agent_cmd(&self, session: &str, command: &str) -> Command {
        self.agent_tool_cmd(session, "exec", json!({ "command": command }))
    }

    /// An agent turn whose scripted model calls tool `name` with `arguments`.
    pub fn agent_tool_cmd(&self, session: &str, name: &str, arguments: Value) -> Command {
        let script = json!({"name":name,"arguments":arguments});
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

    /// [`Gateway::agent_cmd`] run to completion; its stdout+stderr.
    pub fn agent_turn(&self, session: &str, command: &str) -> String {
        output_text(&self.agent_cmd(session, command).output().expect("agent"))
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

    /// What the gateway logged so far.
    pub fn gateway_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Deep-merges JSON `b` into `a` (test config overrides).
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

/// The current OpenClaw CLI as the user with `home` and `state`.
pub fn oc(home: &Path, state: &Path) -> Command {
    openclaw_command(NEW, home, state)
}

/// The real `sanctum-guard node`, its stderr in a file.
pub struct NodeProc {
    pub child: ChildGuard,
    pub log: PathBuf,
}

impl NodeProc {
    /// The guard's node as a deployment runs it: deciding through `world`'s `serve` socket,
    /// on `workspace`, its state in `dir/node-state`. Returns once it is connected and its
    /// commands are approved on `gw`.
    pub fn start_for_guard(dir: &Path, gw: &Gateway, world: &World, workspace: &Path) -> NodeProc {
        let oc_state = world.oc_state.to_str().expect("utf8").to_owned();
        let sock = world.socket().to_str().expect("utf8").to_owned();
        let node = Self::start(
            dir,
            gw,
            &dir.join("node-state"),
            workspace,
            &["--decider", &sock, "--openclaw-state", &oc_state],
        );
        node.wait_log("connected as node", Duration::from_secs(120));
        gw.approve_node();
        node
    }

    /// Starts `sanctum-guard node` against `gw` (token file, workspace, state dir, `extra`).
    pub fn start(
        dir: &Path,
        gw: &Gateway,
        state: &Path,
        workspace: &Path,
        extra: &[&str],
    ) -> NodeProc {
        Self::start_at(dir, gw.port, state, workspace, extra)
    }

    /// [`NodeProc::start`] against whatever gateway listens on loopback `port`.
    pub fn start_at(
        dir: &Path,
        port: u16,
        state: &Path,
        workspace: &Path,
        extra: &[&str],
    ) -> NodeProc {
        Self::start_wrapped(&[], dir, port, state, workspace, extra)
    }

    /// [`NodeProc::start_at`] started through `wrapper` (a program that ends by executing its
    /// remaining arguments, e.g. `unshare -m sh -c '…; exec "$@"' sh`).
    pub fn start_wrapped(
        wrapper: &[&str],
        dir: &Path,
        port: u16,
        state: &Path,
        workspace: &Path,
        extra: &[&str],
    ) -> NodeProc {
        let token = dir.join("gw-token");
        super::process::write_secret(&token, GW_TOKEN);
        let log = dir.join(format!("node-{}.log", now_ms()));
        let mut c = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(guard_bin());
                c
            }
            None => Command::new(guard_bin()),
        };
        // An unprivileged node (SANCTUM_TEST_GUARD_UID) owns its state and workspace.
        super::process::give_to_guard(dir);
        super::process::give_to_guard(state);
        super::process::give_to_guard(workspace);
        if super::process::guard_uid().is_some() {
            // An unprivileged user has a home of its own (root's is not readable).
            super::process::as_guard(&mut c);
            c.env("HOME", dir);
        }
        c.arg("node")
            .args(["--gateway-url", &format!("ws://127.0.0.1:{port}")])
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

    /// What the node logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the node's log contains `needle`; the whole log.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> String {
        wait_until(&format!("node log {needle:?}"), timeout, || {
            let l = self.log();
            l.contains(needle).then_some(l)
        })
    }
}

/// The guard inbox's pending entries (via the real CLI): `(inbox id, request json)`.
pub fn pending(state_dir: &Path) -> Vec<(String, Value)> {
    inbox_list(state_dir, &[])
        .into_iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap_or_default().to_owned(),
                e["request"].clone(),
            )
        })
        .collect()
}

/// A stand-in gateway on loopback for one node connection: it greets the node, accepts its
/// connect, sends one `node.invoke.request` (`system.run` of `params`), and drops the
/// connection when [`OneInvokeGateway::drop_connection`] is called (as a restarting gateway
/// does); it accepts no second connection.
pub struct OneInvokeGateway {
    pub port: u16,
    drop_tx: std::sync::mpsc::Sender<()>,
    /// Every frame the node sent after the invoke.
    pub frames: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl OneInvokeGateway {
    pub fn start(params: Value) -> OneInvokeGateway {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).expect("nonblocking");
        let port = l.local_addr().expect("addr").port();
        let (drop_tx, drop_rx) = std::sync::mpsc::channel::<()>();
        let frames = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = frames.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let l = tokio::net::TcpListener::from_std(l).expect("listener");
                let (tcp, _) = l.accept().await.expect("accept");
                drop(l);
                let mut ws = tokio_tungstenite::accept_async(tcp).await.expect("ws");
                let send = |v: Value| Message::text(v.to_string());
                let hello = json!({"type":"event","event":"connect.challenge","payload":{"nonce":"nonce-1"}});
                ws.send(send(hello)).await.expect("challenge");
                while let Some(Ok(m)) = ws.next().await {
                    if m.to_text().is_ok_and(|t| t.contains("\"connect\"")) {
                        break;
                    }
                }
                ws.send(send(json!({"type":"res","id":"connect","ok":true,"payload":{}})))
                    .await
                    .expect("connect res");
                let inv = json!({"type":"event","event":"node.invoke.request","payload":{
                    "id":"invoke-gone-1","nodeId":"n","command":"system.run",
                    "paramsJSON":params.to_string(),"timeoutMs":120_000}});
                ws.send(send(inv)).await.expect("invoke");
                let mut dropped = tokio::task::spawn_blocking(move || drop_rx.recv());
                loop {
                    tokio::select! {
                        _ = &mut dropped => break,
                        m = ws.next() => match m {
                            Some(Ok(m)) => {
                                if let Ok(v) = serde_json::from_str::<Value>(m.to_text().unwrap_or("")) {
                                    seen.lock().expect("lock").push(v);
                                }
                            }
                            _ => break,
                        },
                    }
                }
                // Dropped without a close frame, like a gateway process that went away.
                drop(ws);
            });
        });
        OneInvokeGateway {
            port,
            drop_tx,
            frames,
        }
    }

    /// The params of the node's `node.invoke.result`, once it sent one.
    pub fn wait_result(&self, timeout: Duration) -> Value {
        wait_until("the node's invoke result", timeout, || {
            self.frames
                .lock()
                .expect("lock")
                .iter()
                .find(|f| f["method"] == "node.invoke.result")
                .map(|f| f["params"].clone())
        })
    }

    /// The gateway connection drops.
    pub fn drop_connection(&self) {
        let _ = self.drop_tx.send(());
    }
}
