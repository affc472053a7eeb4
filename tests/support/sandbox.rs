//! Shared fixtures of the sandbox tests: the CLI, the compiled attack probe, a workspace.

pub use super::process::guard_bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `sandbox` CLI options of the built-in read-only profile.
pub const RO: &[&str] = &["--profile", "read-only"];
/// `sandbox` CLI options of the built-in workspace-write profile.
pub const WW: &[&str] = &["--profile", "workspace-write"];

/// tests/sandbox_probe.c compiled once per test binary (gcc is required).
pub fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("sanctum-probe")
            .tempdir()
            .unwrap()
            .keep();
        let out = dir.join("probe");
        let src = super::process::repo_root().join("tests/sandbox_probe.c");
        let st = Command::new("gcc")
            .args(["-O1", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .expect("gcc is required for the sandbox tests");
        assert!(st.success(), "compiling the probe failed");
        out
    })
}

/// A git workspace (with .git/hooks and .git/config), a `sub/` dir and a file, plus an
/// `outside` dir next to it holding `secret`.
pub struct Ws {
    pub root: tempfile::TempDir,
    pub outside: tempfile::TempDir,
}

impl Ws {
    /// Creates the workspace (a fresh `git init`) and the outside dir.
    pub fn new() -> Ws {
        let root = tempfile::Builder::new()
            .prefix("sanctum-ws")
            .tempdir()
            .unwrap();
        let outside = tempfile::Builder::new()
            .prefix("sanctum-out")
            .tempdir()
            .unwrap();
        let st = Command::new("git")
            .args(["init", "-q"])
            .current_dir(root.path())
            .status()
            .expect("git is required");
        assert!(st.success());
        std::fs::create_dir(root.path().join("sub")).unwrap();
        std::fs::write(root.path().join("file.txt"), "hello\n").unwrap();
        std::fs::write(outside.path().join("secret"), "top secret\n").unwrap();
        Ws { root, outside }
    }
    /// The workspace root.
    pub fn path(&self) -> &Path {
        self.root.path()
    }
    /// The dir outside the workspace (holding `secret`).
    pub fn out(&self) -> &Path {
        self.outside.path()
    }
    /// [`Ws::out`] as a string for scripts.
    pub fn out_str(&self) -> String {
        self.outside.path().to_string_lossy().into_owned()
    }
}

/// Runs `argv` under `sanctum-guard sandbox` with `opts`, cwd = the workspace.
pub fn sandbox(ws: &Ws, opts: &[&str], argv: &[&str]) -> Output {
    Command::new(guard_bin())
        .arg("sandbox")
        .args(["--workspace", ws.path().to_str().unwrap()])
        .args(opts)
        .arg("--")
        .args(argv)
        .current_dir(ws.path())
        .output()
        .unwrap()
}

/// Runs a `/bin/sh -c` script under the built-in `profile`.
pub fn sh(ws: &Ws, profile: &str, script: &str) -> Output {
    sandbox(ws, &["--profile", profile], &["/bin/sh", "-c", script])
}

/// A command's stdout, trimmed.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A command's stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Runs a probe mode and returns its one-line answer ("OK", "ERR EPERM", ...).
pub fn probe_run(ws: &Ws, opts: &[&str], mode: &str, args: &[&str]) -> String {
    let mut argv = vec![probe().to_str().unwrap(), mode];
    argv.extend_from_slice(args);
    let o = sandbox(ws, opts, &argv);
    stdout(&o)
}

/// Processes whose command line contains `needle` (to prove a group was killed).
pub fn procs_with(needle: &str) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&c).contains(needle) {
                n += 1;
            }
        }
    }
    n
}

/// What `sandbox::run` gets from the socket for `argv` in `ws` under the built-in `profile`:
/// no env overrides, a 30 s timeout, OpenClaw's 200,000-byte output cap.
pub fn run_spec(ws: &Ws, profile: &str, argv: &[&str]) -> sanctum_guard::sandbox::RunSpec {
    sanctum_guard::sandbox::RunSpec {
        program: None,
        inherit_env: true,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: ws.path().to_path_buf(),
        env: std::collections::BTreeMap::new(),
        timeout: std::time::Duration::from_secs(30),
        output_cap: 200_000,
        profile: sanctum_guard::sandbox::builtin_profiles()[profile]
            .resolve(ws.path())
            .unwrap(),
    }
}
