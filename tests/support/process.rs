//! Child processes of the tests: the guard binary and its CLI, children killed (with their
//! process group) on drop, and the polling waits for what a child writes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The guard binary under test; `SANCTUM_TEST_GUARD_BIN` runs the suite against another
/// build (e.g. an older commit, to show a new attack test fails there).
pub fn guard_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SANCTUM_TEST_GUARD_BIN") {
        return PathBuf::from(p);
    }
    // Cargo builds the package's binary for its tests and benches, beside the directory of
    // their executables (`target/<profile>/deps/<suite>-<hash>`): this library is a crate of
    // its own, which `CARGO_BIN_EXE_*` is not given to.
    let exe = std::env::current_exe().expect("the test's own executable");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("sanctum-guard"))
        .expect("a test executable under target/<profile>/deps");
    assert!(
        bin.exists(),
        "{} is missing: run the tests with cargo, or set SANCTUM_TEST_GUARD_BIN",
        bin.display()
    );
    bin
}

/// Cargo's target directory: above the test's own `target/<profile>/deps`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own executable");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .expect("a test executable under target/<profile>/deps")
}

/// The repository's root: the nearest directory above this crate's that holds `guard/lib.rs`
/// (this file is compiled by the support crate, tests/support, and by the fuzz crate, fuzz/).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("guard/lib.rs").is_file())
        .unwrap_or(here)
        .to_path_buf()
}

/// The uid the guard (serve, node, its CLI) runs as: `SANCTUM_TEST_GUARD_UID`, so the socket
/// and node suites can be run with the guard unprivileged while the test stays root (tests/run
/// does); unset, the test's own uid.
pub fn guard_uid() -> Option<u32> {
    std::env::var("SANCTUM_TEST_GUARD_UID")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// Runs `cmd` as [`guard_uid`] (its gid the same number), when set.
pub fn as_guard(cmd: &mut Command) {
    if let Some(uid) = guard_uid() {
        std::os::unix::process::CommandExt::uid(cmd, uid);
        std::os::unix::process::CommandExt::gid(cmd, uid);
    }
}

/// Hands `dir` and everything in it to [`guard_uid`], when set: what the test (root)
/// prepared becomes the guard's, as a deployment's files are.
pub fn give_to_guard(dir: &Path) {
    let Some(uid) = guard_uid() else { return };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        std::os::unix::fs::lchown(&p, Some(uid), Some(uid)).expect("chown to the guard's uid");
        if meta.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        }
    }
}

/// Runs `sanctum-guard` with args, returning (exit code, stdout, stderr).
pub fn guard_cli(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(guard_bin());
    as_guard(&mut c);
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

/// Runs `git` with `args` in `dir` (no system or global configuration; a fixed author), which
/// must succeed; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        // The repository may belong to the guard's uid (SANCTUM_TEST_GUARD_UID).
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "safe.directory")
        .env("GIT_CONFIG_VALUE_0", "*")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git is required");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Wall-clock epoch milliseconds (frame timestamps, unique log names).
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
    /// Owns an already spawned child.
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

    /// The child's pid (0 once it is reaped).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// SIGKILL (the whole group when spawned as one) and reap.
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

/// Polls `f` every 250 ms until it gives a value; panics naming `what` after `timeout`.
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

/// [`wait_until`], but a timeout fails with `explain()` (a stack's logs, a state file) so the
/// failure says why, not only what.
pub fn wait_until_or<T>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> Option<T>,
    explain: impl FnOnce() -> String,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() >= timeout {
            // The explanation first, the line that names the wait last: a report that keeps
            // only the tail of a long failure still says what timed out.
            panic!(
                "{}\ntimed out waiting for {what} after {} s",
                explain(),
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Waits until the file at `path` contains `needle` (a child's log); false on timeout.
pub fn wait_for_file_text(path: &Path, needle: &str, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
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

/// A line reader over a child's output file, for [`wait_line`].
pub fn reader_of(f: std::fs::File) -> BufReader<std::fs::File> {
    BufReader::new(f)
}

/// The lines of a file (empty when it does not exist yet).
pub fn lines_of(f: &Path) -> Vec<String> {
    std::fs::File::open(f)
        .map(|f| BufReader::new(f).lines().map_while(Result::ok).collect())
        .unwrap_or_default()
}

/// A spawned command whose output is collected at the end.
pub fn spawn_collect(mut c: Command) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// The stdout and stderr of a [`spawn_collect`] child, once it exits.
pub fn collect(child: Child) -> String {
    let out = child.wait_with_output().expect("wait");
    output_text(&out)
}

/// A finished command's stdout followed by its stderr (what CLI tests search).
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A free loopback TCP port (tests run in parallel: never a fixed port).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The address a guard listener printed on its start line (`sanctum-guard: <label>  ADDR…`,
/// ADDR bare or as a URL): tests start listeners on port 0 and read the bound port here, so
/// no port they picked can be taken by a test beside them before the bind. None without such
/// a line, or with port 0 still in it.
pub fn listen_addr_in(log: &str, label: &str) -> Option<std::net::SocketAddr> {
    let prefix = format!("sanctum-guard: {label} ");
    let first = log
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))?
        .split_whitespace()
        .next()?;
    let host_port = first.split_once("://").map_or(first, |(_, rest)| rest);
    let addr: std::net::SocketAddr = host_port.split('/').next()?.parse().ok()?;
    (addr.port() != 0).then_some(addr)
}

/// Raises this process's open-file soft limit to its hard limit (floods need descriptors).
pub fn raise_nofile() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).expect("setrlimit");
    hard
}

/// A repository in `dir` with two commits and an uncommitted change, and only the config
/// `git init` writes: what an autonomous `git status`, `git log` and `git diff` must show.
pub fn git_repo_with_history(dir: &Path) {
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "one\n").expect("a.txt");
    git(dir, &["add", "a.txt"]);
    git(dir, &["commit", "-q", "-m", "first-commit"]);
    std::fs::write(dir.join("a.txt"), "one\ntwo\n").expect("a.txt");
    git(dir, &["commit", "-q", "-am", "second-commit"]);
    std::fs::write(dir.join("a.txt"), "one\ntwo\nthree\n").expect("a.txt");
}

/// The git reads an autonomous run must be able to do, and a line each must print in the
/// repository of [`git_repo_with_history`].
pub const GIT_READS: [(&[&str], &str); 3] = [
    (&["git", "status"], "modified:   a.txt"),
    (&["git", "log", "--oneline"], "second-commit"),
    (&["git", "diff", "--stat"], "a.txt | 1 +"),
];

/// Writes a token file as a deployment must: 0600 (the guard refuses one others can read).
pub fn write_secret(path: &Path, text: &str) {
    std::fs::write(path, text).expect("secret file");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod secret file");
}

/// Holds `/tmp/compose.lock` (flock, as `flock /tmp/compose.lock` takes it) while alive. The
/// compose and Kubernetes suites use fixed names, images and addresses, and publish the web
/// prompt's default port 127.0.0.1:8484, which the suites that run `serve` on its defaults
/// (readme_recipe, socket_defaults) bind too: each holds this lock for as long as it needs
/// them, so suites run side by side (tests/run) never meet there. Not to be taken again
/// inside `flock /tmp/compose.lock` (it would wait for itself).
pub fn podman_lock() -> nix::fcntl::Flock<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/compose.lock")
        .expect("open /tmp/compose.lock");
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("flock /tmp/compose.lock")
}

/// Which processes listen on TCP `port` (`ss -ltnp`), for a failure that may be a port
/// another test holds.
pub fn port_holders(port: u16) -> String {
    Command::new("ss")
        .args(["-ltnpH", &format!("sport = :{port}")])
        .output()
        .map(|o| output_text(&o))
        .unwrap_or_else(|e| format!("ss: {e}"))
}
