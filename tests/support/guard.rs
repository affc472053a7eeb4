//! One guard deployment on temp dirs: OpenClaw's approvals document seeded with the REAL
//! `openclaw approvals set`, the real `sanctum-guard serve` on it, and what it leaves behind
//! (inbox, audit log) read back through the real CLI or files.

use super::process::{guard_bin, guard_cli, now_ms, wait_until, ChildGuard};
use super::tools::{openclaw_cli, NEW};
use serde_json::{json, Value};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
        let entries: Vec<Value> = allowlist.iter().map(|p| json!({ "pattern": p })).collect();
        Self::seed(
            version,
            "sg-sock-",
            token,
            sock,
            json!({"security":"allowlist","ask":"on-miss","askFallback":"deny"}),
            json!({"main":{"allowlist":entries}}),
        )
    }

    /// A world whose OpenClaw defaults leave every decision to the guard (security full,
    /// ask off: OpenClaw's own settings can only tighten the guard's table).
    pub fn full(token: &str) -> World {
        Self::seed(
            NEW,
            "sg-node-",
            token,
            None,
            json!({"security":"full","ask":"off","askFallback":"deny"}),
            json!({}),
        )
    }

    /// Writes the document (`defaults`, `agents`) and sets it with the real CLI.
    fn seed(
        version: &str,
        prefix: &str,
        token: &str,
        sock: Option<&Path>,
        defaults: Value,
        agents: Value,
    ) -> World {
        let tmp = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("tempdir");
        let home = tmp.path().join("home");
        let oc_state = tmp.path().join("oc");
        let guard_state = tmp.path().join("guard");
        std::fs::create_dir_all(&home).expect("home");
        let sock_path = sock
            .map(Path::to_path_buf)
            .unwrap_or_else(|| oc_state.join("exec-approvals.sock"));
        let doc = json!({"version":1,"socket":{"path":sock_path,"token":token},
            "defaults":defaults,"agents":agents});
        let doc_path = tmp.path().join("doc.json");
        std::fs::write(&doc_path, doc.to_string()).expect("doc");
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

    /// The socket path the approvals document names.
    pub fn socket(&self) -> PathBuf {
        self.sock.clone()
    }

    /// Writes a guard policy file into the world; its path (for `--policy`).
    pub fn write_policy(&self, text: &str) -> PathBuf {
        let p = self.tmp.path().join("policy.toml");
        std::fs::write(&p, text).expect("policy");
        p
    }

    /// Writes a guard config file into the world; its path (for `--config`).
    pub fn write_config(&self, toml: &str) -> PathBuf {
        let p = self.tmp.path().join("guard.toml");
        std::fs::write(&p, toml).expect("config");
        p
    }

    /// The guard's audit log file.
    pub fn audit_path(&self) -> PathBuf {
        self.guard_state.join("audit.jsonl")
    }
}

/// The real `sanctum-guard serve`, started on the world's dirs.
pub struct Serve {
    pub child: ChildGuard,
    pub stderr_path: PathBuf,
}

impl Serve {
    /// `serve` on the world's dirs with `extra_args`; its stderr is a pipe (see `spawn`).
    pub fn command(w: &World, extra_args: &[&str]) -> Command {
        let mut cmd = Command::new(guard_bin());
        if let Some(uid) = super::process::guard_uid() {
            // The world becomes the guard's, and the test (root) may still connect, as may
            // the guard's own uid (its node).
            super::process::give_to_guard(w.tmp.path());
            super::process::as_guard(&mut cmd);
            cmd.env("SANCTUM_SOCKET_ALLOWED_UIDS", format!("0,{uid}"));
        }
        cmd.arg("serve")
            .arg("--state-dir")
            .arg(&w.guard_state)
            .arg("--openclaw-state")
            .arg(&w.oc_state)
            .args(extra_args)
            .env("HOME", &w.home)
            .env_remove("OPENCLAW_STATE_DIR")
            // The web prompt on a free port unless the test chooses one (`--web-listen` or
            // `extra_env` win): its default, 127.0.0.1:8484, is the port the compose and
            // Kubernetes suites publish, and these suites run beside them (tests/run). A
            // guard here holding it once made `podman kube play` fail on CI.
            .env("SANCTUM_WEB_LISTEN", "127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    /// Spawns `cmd` with its stderr copied into `log` by a thread of the test. Through a pipe,
    /// not a file the guard writes: a test that lowers the guard's RLIMIT_FSIZE must still see
    /// what the guard logs about it (the limit applies to every regular file it writes).
    /// The thread ends when the last holder of the pipe's write end is gone.
    fn spawn(mut cmd: Command, log: &Path) -> (ChildGuard, std::thread::JoinHandle<()>) {
        let mut file = std::fs::File::create(log).expect("log");
        let mut child = cmd.spawn().expect("spawn serve");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let copier = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = std::io::Read::read(&mut stderr, &mut buf) {
                if n == 0 || std::io::Write::write_all(&mut file, &buf[..n]).is_err() {
                    break;
                }
            }
        });
        (ChildGuard::new("serve", child), copier)
    }

    /// Starts `serve` (log level info) and waits until it serves on the world's socket.
    pub fn start(w: &World, extra_env: &[(&str, &str)], extra_args: &[&str]) -> Serve {
        let mut cmd = Self::command(w, extra_args);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        Self::start_command(w, cmd)
    }

    /// Starts `cmd` (from [`Serve::command`], changed by the test) and waits until it serves.
    pub fn start_command(w: &World, mut cmd: Command) -> Serve {
        let stderr_path = w.tmp.path().join(format!("serve-{}.log", now_ms()));
        if !cmd.get_envs().any(|(k, _)| k == "SANCTUM_LOG") {
            cmd.env("SANCTUM_LOG", "info");
        }
        let (child, _copier) = Self::spawn(cmd, &stderr_path);
        let s = Serve { child, stderr_path };
        s.wait_ready(w);
        s
    }

    /// Starts `serve` expecting it to refuse to start: its exit code and stderr. A `serve`
    /// that is still running after 20 s did start: it is killed and reported as exit 0.
    pub fn start_fails(w: &World, extra_args: &[&str]) -> (i32, String) {
        let log = w.tmp.path().join(format!("serve-fail-{}.log", now_ms()));
        let (mut child, copier) = Self::spawn(Self::command(w, extra_args), &log);
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
        // Everything the process wrote is in the log once the copier has drained the pipe.
        let drained = Instant::now();
        while !copier.is_finished() && drained.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        (code, std::fs::read_to_string(&log).unwrap_or_default())
    }

    /// The serve process id (to signal it or read its /proc entries).
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

    /// Waits (20 s) until serve logged "serving" and its socket accepts a connection.
    fn wait_ready(&self, w: &World) {
        let start = Instant::now();
        // With a gateway url, serve first waits (up to 20 s) for the gateway's posture.
        while start.elapsed() < Duration::from_secs(60) {
            if self.log().contains("serving") && UnixStream::connect(w.socket()).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("serve did not become ready:\n{}", self.log());
    }

    /// What serve logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// The address serve's listener `label` (`web prompt`, `front door`) bound, from its
    /// start line ([`listen_addr_in`]).
    pub fn listen_addr(&self, label: &str) -> std::net::SocketAddr {
        let log = self.log();
        super::process::listen_addr_in(&log, label)
            .unwrap_or_else(|| panic!("no {label} address in serve's log:\n{log}"))
    }

    /// The front door's bound `host:port` (the tests start it on port 0).
    pub fn front_addr(&self) -> String {
        self.listen_addr("front door").to_string()
    }
}

/// The guard's inbox in `state_dir` as `inbox list --json` with `extra` flags.
pub fn inbox_list(state_dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["inbox", "list"];
    args.extend_from_slice(extra);
    args.extend(["--json", "--state-dir", state_dir.to_str().expect("utf8")]);
    let (code, out, err) = guard_cli(&args, &[]);
    assert_eq!(code, 0, "inbox list: {err}");
    serde_json::from_str::<Vec<Value>>(&out).unwrap_or_default()
}

/// The guard's inbox as `inbox list --state all --json`.
pub fn inbox_all(w: &World) -> Vec<Value> {
    inbox_list(&w.guard_state, &["--state", "all"])
}

/// Waits for an inbox entry in `state` and returns it.
pub fn wait_entry(w: &World, state: &str, timeout: Duration) -> Option<Value> {
    wait_entry_where(w, timeout, |e| e["state"] == state)
}

/// Waits for an inbox entry (any state) that `pred` accepts and returns it.
pub fn wait_entry_where(
    w: &World,
    timeout: Duration,
    pred: impl Fn(&Value) -> bool,
) -> Option<Value> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Some(e) = inbox_all(w).into_iter().find(|e| pred(e)) {
            return Some(e);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// The ids of the pending inbox entries.
pub fn pending_ids(w: &World) -> Vec<String> {
    inbox_list(&w.guard_state, &[])
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect()
}

/// Waits until some entry is pending; the pending ids then (panics after `timeout`).
pub fn wait_pending_ids(w: &World, timeout: Duration) -> Vec<String> {
    let start = Instant::now();
    loop {
        let ids = pending_ids(w);
        if !ids.is_empty() {
            return ids;
        }
        assert!(start.elapsed() < timeout, "no pending inbox entry appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The audit log once it contains every needle (records of policy answers and rejections are
/// queued and reach the disk with the writer's next group commit, just after the reply).
pub fn audit_with(w: &World, needles: &[&str]) -> String {
    audit_file_with(&w.audit_path(), needles)
}

/// [`audit_with`] for an audit log at any path.
pub fn audit_file_with(path: &Path, needles: &[&str]) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
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

/// What both doors must do with a gated request whose requester left: the inbox entry `id`
/// (in `state_dir`) is cancelled `requester-gone` within `within`, a later approval fails,
/// `inbox list` shows why, the audit log `audit` records it, and `ran` never appears.
pub fn expect_requester_gone(
    state_dir: &Path,
    audit: &Path,
    id: &str,
    ran: &Path,
    within: Duration,
) {
    let state = state_dir.to_str().expect("utf8");
    let e = wait_until("the entry to be cancelled", within, || {
        inbox_list(state_dir, &["--state", "all"])
            .into_iter()
            .find(|e| e["id"] == id && e["state"] == "cancelled")
    });
    assert_eq!(e["decision"]["reason"], "requester-gone", "{e}");
    let (code, out, err) = guard_cli(&["inbox", "approve", id, "--state-dir", state], &[]);
    assert_eq!(
        code, 1,
        "a cancelled request cannot be approved: {out}{err}"
    );
    let (_, list, _) = guard_cli(
        &["inbox", "list", "--state", "all", "--state-dir", state],
        &[],
    );
    assert!(list.contains("cancelled: requester-gone"), "{list}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran.exists(), "a request whose requester left ran");
    audit_file_with(audit, &["requester-gone"]);
}
