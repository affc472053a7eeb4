//! Shared helpers of the socket integration tests: finding the real Node/OpenClaw installed
//! by tests/setup.sh, running the real `serve` binary on temp dirs, the real OpenClaw
//! clients, and raw socket clients. Every child process is killed by a Drop guard.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const NEW: &str = "2026.9.6";
pub const OLD: &str = "2026.7.35";

/// The test tool cache: `$SANCTUM_TEST_CACHE`, else `<repo>/.cache`. Fails loudly when a tool
/// is missing (tests never pass silently without the real client).
pub fn cache() -> PathBuf {
    let p = std::env::var_os("SANCTUM_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache"));
    assert!(
        p.join("node/bin/node").is_file(),
        "Node 24 not found at {}/node/bin/node: run tests/setup.sh (or set SANCTUM_TEST_CACHE)",
        p.display()
    );
    p
}

pub fn node() -> PathBuf {
    cache().join("node/bin/node")
}

/// The install dir of one OpenClaw version (holding node_modules/openclaw).
pub fn openclaw_dir(version: &str) -> PathBuf {
    let d = cache().join(format!("openclaw-{version}"));
    assert!(
        d.join("node_modules/.bin/openclaw").exists(),
        "OpenClaw {version} not installed at {}: run tests/setup.sh",
        d.display()
    );
    d
}

/// The guard binary under test; `SANCTUM_TEST_GUARD_BIN` runs the suite against another
/// build (e.g. an older commit, to show a new attack test fails there).
pub fn guard_bin() -> PathBuf {
    std::env::var_os("SANCTUM_TEST_GUARD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_sanctum-guard")))
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Kills (SIGKILL) and reaps the child on drop.
pub struct ChildGuard {
    pub child: Option<Child>,
    pub name: String,
    /// Spawned as its own process group leader: the whole group is killed.
    pub group: bool,
}

impl ChildGuard {
    pub fn new(name: &str, child: Child) -> Self {
        ChildGuard {
            child: Some(child),
            name: name.into(),
            group: false,
        }
    }

    /// Spawns `cmd` as a new process group so its helpers die with it.
    pub fn spawn_group(name: &str, cmd: &mut Command) -> Self {
        use std::os::unix::process::CommandExt;
        let child = cmd
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        ChildGuard {
            child: Some(child),
            name: name.into(),
            group: true,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            if self.group {
                let pgid = nix::unistd::Pid::from_raw(c.id() as i32);
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Runs an OpenClaw CLI command of `version` to completion with a temp HOME and state dir.
pub fn openclaw_cli(version: &str, home: &Path, state: &Path, args: &[&str]) -> String {
    let dir = openclaw_dir(version);
    let out = Command::new(dir.join("node_modules/.bin/openclaw"))
        .args(args)
        .env("PATH", path_with_node())
        .env("HOME", home)
        .env("OPENCLAW_STATE_DIR", state)
        .env("OPENCLAW_HIDE_BANNER", "1")
        .env("OPENCLAW_SUPPRESS_NOTES", "1")
        .current_dir(home)
        .output()
        .expect("run openclaw");
    assert!(
        out.status.success(),
        "openclaw {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn path_with_node() -> String {
    format!(
        "{}:{}",
        cache().join("node/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// One test's world: temp HOME, OpenClaw state dir, guard state dir.
pub struct World {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub oc_state: PathBuf,
    pub guard_state: PathBuf,
    pub token: String,
    /// The socket path the approvals document names.
    pub sock: PathBuf,
}

impl World {
    /// Seeds OpenClaw's approvals document with the REAL `openclaw approvals set --file`
    /// (SQLite era for 2026.9.6, JSON for 2026.7.35), with `token` and the given allowlist.
    pub fn new(version: &str, token: &str, allowlist: &[&str]) -> World {
        Self::with_socket(version, token, allowlist, None)
    }

    /// [`World::new`] with the document naming `sock` as the socket path (default: in the
    /// OpenClaw state dir).
    pub fn with_socket(
        version: &str,
        token: &str,
        allowlist: &[&str],
        sock: Option<&Path>,
    ) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("sg-sock-")
            .tempdir()
            .expect("tempdir");
        let home = tmp.path().join("home");
        let oc_state = tmp.path().join("oc");
        let guard_state = tmp.path().join("guard");
        std::fs::create_dir_all(&home).expect("home");
        let sock_path = sock
            .map(Path::to_path_buf)
            .unwrap_or_else(|| oc_state.join("exec-approvals.sock"));
        let entries: Vec<String> = allowlist
            .iter()
            .map(|p| format!("{{\"pattern\":\"{p}\"}}"))
            .collect();
        let doc = format!(
            "{{\"version\":1,\"socket\":{{\"path\":\"{}\",\"token\":\"{token}\"}},\"defaults\":{{\"security\":\"allowlist\",\"ask\":\"on-miss\",\"askFallback\":\"deny\"}},\"agents\":{{\"main\":{{\"allowlist\":[{}]}}}}}}",
            sock_path.display(),
            entries.join(",")
        );
        let doc_path = tmp.path().join("doc.json");
        std::fs::write(&doc_path, doc).expect("doc");
        openclaw_cli(
            version,
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
            home,
            oc_state,
            guard_state,
            token: token.into(),
            sock: sock_path,
            tmp,
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.sock.clone()
    }

    pub fn write_policy(&self, text: &str) -> PathBuf {
        let p = self.tmp.path().join("policy.toml");
        std::fs::write(&p, text).expect("policy");
        p
    }
}

/// The real `sanctum-guard serve`, started on the world's dirs.
pub struct Serve {
    pub child: ChildGuard,
    pub stderr_path: PathBuf,
}

impl Serve {
    pub fn start(w: &World, extra_env: &[(&str, &str)], extra_args: &[&str]) -> Serve {
        let stderr_path = w.tmp.path().join(format!("serve-{}.log", now_ms()));
        let log = std::fs::File::create(&stderr_path).expect("log");
        let mut cmd = Command::new(guard_bin());
        cmd.arg("serve")
            .arg("--state-dir")
            .arg(&w.guard_state)
            .arg("--openclaw-state")
            .arg(&w.oc_state)
            .args(extra_args)
            .env("HOME", &w.home)
            .env_remove("OPENCLAW_STATE_DIR")
            .env("SANCTUM_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = ChildGuard::new("serve", cmd.spawn().expect("spawn serve"));
        let s = Serve { child, stderr_path };
        s.wait_ready(w);
        s
    }

    /// Starts `serve` expecting it to refuse to start: its exit code and stderr. A `serve`
    /// that is still running after 20 s did start: it is killed and reported as exit 0.
    pub fn start_fails(w: &World, extra_args: &[&str]) -> (i32, String) {
        let log = w.tmp.path().join(format!("serve-fail-{}.log", now_ms()));
        let mut cmd = Command::new(guard_bin());
        cmd.arg("serve")
            .arg("--state-dir")
            .arg(&w.guard_state)
            .arg("--openclaw-state")
            .arg(&w.oc_state)
            .args(extra_args)
            .env("HOME", &w.home)
            .env_remove("OPENCLAW_STATE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).expect("log")));
        let mut child = ChildGuard::new("serve", cmd.spawn().expect("spawn serve"));
        let start = Instant::now();
        let code = loop {
            if let Some(Ok(Some(st))) = child.child.as_mut().map(|c| c.try_wait()) {
                child.child = None;
                break st.code().unwrap_or(-1);
            }
            if start.elapsed() > Duration::from_secs(20) {
                child.kill9();
                break 0;
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        (code, std::fs::read_to_string(&log).unwrap_or_default())
    }

    pub fn pid(&self) -> i32 {
        self.child.pid() as i32
    }

    /// True while the process has not exited.
    pub fn alive(&mut self) -> bool {
        matches!(
            self.child.child.as_mut().map(|c| c.try_wait()),
            Some(Ok(None))
        )
    }

    /// SIGTERM, then waits (up to 10 s) for a clean exit; the exit status code.
    pub fn stop(&mut self) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(self.pid());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Some(Ok(Some(st))) = self.child.child.as_mut().map(|c| c.try_wait()) {
                self.child.child = None;
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Resident memory of the process (VmRSS), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    fn wait_ready(&self, w: &World) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if self.log().contains("serving") && UnixStream::connect(w.socket()).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("serve did not become ready:\n{}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

/// Raises this process's open-file soft limit to its hard limit (floods need descriptors).
pub fn raise_nofile() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).expect("setrlimit");
    hard
}

/// The guard's inbox as `inbox list --state all --json`.
pub fn inbox_all(w: &World) -> Vec<serde_json::Value> {
    let (code, out, err) = guard_cli(
        &[
            "inbox",
            "list",
            "--state",
            "all",
            "--json",
            "--state-dir",
            w.guard_state.to_str().expect("utf8"),
        ],
        &[],
    );
    assert_eq!(code, 0, "inbox list: {err}");
    serde_json::from_str::<Vec<serde_json::Value>>(&out).unwrap_or_default()
}

/// Waits for an inbox entry in `state` and returns it.
pub fn wait_entry(w: &World, state: &str, timeout: Duration) -> Option<serde_json::Value> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Some(e) = inbox_all(w).into_iter().find(|e| e["state"] == state) {
            return Some(e);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Sends `bytes` on a fresh connection, half-closes if asked, and reads the whole reply.
pub fn raw_exchange(sock: &Path, bytes: &[u8], half_close: bool) -> String {
    let mut s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s.write_all(bytes).expect("write");
    if half_close {
        s.shutdown(std::net::Shutdown::Write).expect("shutdown");
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The first reply line as JSON.
pub fn first_json(reply: &str) -> serde_json::Value {
    let line = reply
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no reply line: {reply:?}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("reply {line:?}: {e}"))
}

pub fn request_line(token: &str, id: &str, command: &str) -> String {
    serde_json::json!({"type":"request","token":token,"id":id,
        "request":{"command":command,"cwd":"/tmp","agentId":"main","sessionKey":"agent:main:main",
                   "security":"allowlist","ask":"on-miss"}})
    .to_string()
        + "\n"
}

/// An `exec` frame signed like the real client (hex nonce, epoch-ms ts).
pub fn exec_line(token: &str, nonce: &str, ts: i64, request_json: &str) -> String {
    let hmac = sanctum_guard::socket::auth::exec_hmac(token, nonce, ts, request_json);
    serde_json::json!({"type":"exec","id":format!("id-{nonce}"),"nonce":nonce,"ts":ts,
        "hmac":hmac,"requestJson":request_json})
    .to_string()
        + "\n"
}

pub fn fresh_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Recipe A: the REAL `requestExecApprovalViaSocket` of `version`; prints its result as JSON.
pub fn real_request(
    version: &str,
    sock: &Path,
    token: &str,
    request: &serde_json::Value,
    timeout_ms: u64,
) -> serde_json::Value {
    let script = format!(
        "import('openclaw/plugin-sdk/infra-runtime').then(async m => {{ \
           const r = await m.requestExecApprovalViaSocket({{socketPath: {}, token: {}, timeoutMs: {}, request: {}}}); \
           process.stdout.write(JSON.stringify({{result: r}})); }})",
        serde_json::Value::String(sock.display().to_string()),
        serde_json::Value::String(token.into()),
        timeout_ms,
        request
    );
    let out = Command::new(node())
        .arg("-e")
        .arg(script)
        .current_dir(openclaw_dir(version))
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "node client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("client output is JSON");
    v["result"].clone()
}

/// Reads lines of a child's output until `pred` matches one (or the timeout).
pub fn wait_line(
    reader: &mut impl BufRead,
    pred: impl Fn(&str) -> bool,
    timeout: Duration,
) -> Option<String> {
    let start = Instant::now();
    let mut line = String::new();
    while start.elapsed() < timeout {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return None,
            Ok(_) if pred(&line) => return Some(line.clone()),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

pub fn reader_of(f: std::fs::File) -> BufReader<std::fs::File> {
    BufReader::new(f)
}

/// A free loopback TCP port (tests run in parallel: never a fixed port).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Runs `sanctum-guard` with args, returning (exit code, stdout, stderr).
pub fn guard_cli(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(guard_bin());
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run guard");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The audit log once it contains every needle (records of policy answers and rejections are
/// queued and reach the disk with the writer's next group commit, just after the reply).
pub fn audit_with(w: &World, needles: &[&str]) -> String {
    let path = w.guard_state.join("audit.jsonl");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let missing: Vec<&&str> = needles.iter().filter(|n| !text.contains(**n)).collect();
        if missing.is_empty() {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "audit log lacks {missing:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
