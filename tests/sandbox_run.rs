//! The library API SOCKET calls (`sandbox::run`): output caps, timeouts that kill the whole
//! process group, the environment allow-list, rlimits, and fail-closed setup.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::sandbox::landlock_rules;
use sanctum_guard::sandbox::{
    builtin_profiles, prepare, run, run_prepared, Level, RunSpec, SandboxError,
};
use sanctum_test_support as support;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::sandbox::*;

fn probe_argv<'a>(mode: &'a str, arg: &'a str) -> Vec<&'a str> {
    vec![probe().to_str().unwrap(), mode, arg]
}

#[tokio::test]
async fn output_capped_head_kept_and_marked() {
    let ws = Ws::new();
    let mut s = run_spec(
        &ws,
        "read-only",
        &["/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a"],
    );
    s.output_cap = 1000;
    let o = run(s).await.unwrap();
    assert_eq!(o.stdout, format!("{}\n... (truncated)", "a".repeat(1000)));
    // At the cap the guard stops reading and kills the run (issue: `yes` burned CPU).
    assert!(!o.success && o.stderr.is_empty(), "{o:?}");
    assert!(
        o.error.as_deref().is_some_and(|e| e.contains("cap")),
        "{o:?}"
    );
    let mut s = run_spec(
        &ws,
        "read-only",
        &[
            "/bin/sh",
            "-c",
            "echo out; sleep 1; echo errrrrrrr >&2; head -c 5000 /dev/zero",
        ],
    );
    s.output_cap = 10;
    let o = run(s).await.unwrap();
    assert_eq!(o.stdout, "out\n");
    assert_eq!(o.stderr, "errrrr\n... (truncated)");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let ws = Ws::new();
    let marker = format!("{} forkbomb 5", probe().display());
    let mut s = run_spec(
        &ws,
        "read-only",
        &["/bin/sh", "-c", &format!("{marker}; sleep 60")],
    );
    s.timeout = Duration::from_millis(800);
    let t = Instant::now();
    let o = run(s).await.unwrap();
    assert!(o.timed_out && !o.success && o.exit_code.is_none(), "{o:?}");
    assert!(t.elapsed() < Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        procs_with(&format!("{}\0forkbomb", probe().display())),
        0,
        "survivors"
    );
}

#[tokio::test]
async fn background_children_die_with_the_command() {
    let ws = Ws::new();
    let s = run_spec(
        &ws,
        "read-only",
        &[
            "/bin/sh",
            "-c",
            &format!("{} forkbomb 3 >/dev/null", probe().display()),
        ],
    );
    let o = run(s).await.unwrap();
    assert!(o.success, "{o:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(procs_with(&format!("{}\0forkbomb", probe().display())), 0);
}

#[test]
fn parent_death_kills_the_child() {
    let ws = Ws::new();
    let mut cli = std::process::Command::new(guard_bin())
        .args(["sandbox", "--workspace", ws.path().to_str().unwrap(), "--"])
        .args([probe().to_str().unwrap(), "spin", "pdeathsig"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // The CLI and its confined child both carry the marker.
    assert_eq!(procs_with("spin\0pdeathsig"), 2);
    cli.kill().unwrap();
    cli.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        procs_with("spin\0pdeathsig"),
        0,
        "PDEATHSIG must kill the child"
    );
}

#[tokio::test]
async fn secrets_never_reach_the_child() {
    let ws = Ws::new();
    let mut s = run_spec(&ws, "read-only", &["/usr/bin/env"]);
    s.env = BTreeMap::from([
        ("OPENAI_API_KEY".to_string(), "sk-xyz".to_string()),
        ("GITHUB_TOKEN".to_string(), "ghp".to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
        ("LD_PRELOAD".to_string(), "/tmp/evil.so".to_string()),
    ]);
    let o = run(s).await.unwrap();
    assert!(o.stdout.contains("LANG=C.UTF-8"));
    for bad in ["sk-xyz", "ghp", "LD_PRELOAD", "CARGO"] {
        assert!(!o.stdout.contains(bad), "{bad} leaked: {}", o.stdout);
    }
}

#[tokio::test]
async fn exec_failure_is_an_outcome_not_a_setup_error() {
    let ws = Ws::new();
    let o = run(run_spec(&ws, "read-only", &["/no/such/cmd"]))
        .await
        .unwrap();
    assert!(!o.success && o.exit_code.is_none());
    assert!(o.error.unwrap().contains("No such file"));
    assert_eq!(o.enforcement.landlock, Level::Full);
}

#[tokio::test]
async fn rlimits_apply() {
    let ws = Ws::new();
    let o = run(run_spec(&ws, "read-only", &probe_argv("rlimit", "")))
        .await
        .unwrap();
    let l = &builtin_profiles()["read-only"].limits;
    let mib = 1u64 << 20;
    let want = format!(
        "{} {} {} {} {} 0",
        l.nproc,
        l.address_space_mb * mib,
        l.file_size_mb * mib,
        l.cpu_secs,
        l.nofile
    );
    assert_eq!(
        o.stdout.trim(),
        want,
        "core dumps off, limits from the profile"
    );
}

fn with_limits(
    ws: &Ws,
    profile: &str,
    f: impl Fn(&mut sanctum_guard::sandbox::Limits),
    argv: &[&str],
) -> RunSpec {
    let mut p = builtin_profiles()[profile].clone();
    f(&mut p.limits);
    let mut s = run_spec(ws, profile, argv);
    s.profile = p.resolve(ws.path()).unwrap();
    s
}

#[tokio::test]
async fn file_size_limit() {
    let ws = Ws::new();
    let s = with_limits(
        &ws,
        "workspace-write",
        |l| l.file_size_mb = 1,
        &["/bin/sh", "-c", "head -c 3000000 /dev/zero > sub/big"],
    );
    let o = run(s).await.unwrap();
    assert!(!o.success);
    assert_eq!(
        std::fs::metadata(ws.path().join("sub/big")).unwrap().len(),
        1 << 20
    );
}

#[tokio::test]
async fn memory_limit() {
    let ws = Ws::new();
    let s = with_limits(
        &ws,
        "read-only",
        |l| l.address_space_mb = 256,
        &probe_argv("alloc", "1024"),
    );
    assert_eq!(run(s).await.unwrap().stdout.trim(), "ERR ENOMEM");
    let s = with_limits(
        &ws,
        "read-only",
        |l| l.address_space_mb = 256,
        &probe_argv("alloc", "16"),
    );
    assert_eq!(run(s).await.unwrap().stdout.trim(), "OK");
}

#[tokio::test]
async fn cpu_limit() {
    let ws = Ws::new();
    let s = with_limits(
        &ws,
        "read-only",
        |l| l.cpu_secs = 1,
        &probe_argv("spin", ""),
    );
    let t = Instant::now();
    let o = run(s).await.unwrap();
    // soft = hard: the kernel sends SIGXCPU or, at the hard limit, SIGKILL; not our timeout.
    assert!(!o.timed_out && t.elapsed() < Duration::from_secs(10));
    assert!(matches!(o.signal, Some(9) | Some(24)), "{o:?}");
}

#[tokio::test]
async fn open_files_limit() {
    let ws = Ws::new();
    let s = with_limits(
        &ws,
        "read-only",
        |l| l.nofile = 16,
        &probe_argv("nofile", "32"),
    );
    assert_eq!(run(s).await.unwrap().stdout.trim(), "ERR EMFILE");
}

#[tokio::test]
async fn fork_bomb_is_contained() {
    let ws = Ws::new();
    let mut s = with_limits(
        &ws,
        "read-only",
        |l| l.nproc = 40,
        &probe_argv("forkbomb", "200"),
    );
    s.timeout = Duration::from_secs(5);
    let o = run(s).await.unwrap();
    // SAFETY-free check of our uid via /proc: the kernel does not apply RLIMIT_NPROC to uid 0,
    // so as root the backstop is the process-group kill (setsid/setpgid are denied).
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:\t0\t"));
    if !root {
        assert!(o.stdout.contains("ERR EAGAIN"), "{o:?}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        procs_with(&format!("{}\0forkbomb", probe().display())),
        0,
        "every bomb child killed"
    );
}

#[tokio::test]
async fn toctou_swap_after_build_does_not_widen_access() {
    let ws = Ws::new();
    let profile = builtin_profiles()["workspace-write"]
        .resolve(ws.path())
        .unwrap();
    let prepared = prepare(&profile).unwrap();
    // Swap the granted `sub` dir for a symlink to the outside after the ruleset was built.
    std::fs::rename(ws.path().join("sub"), ws.path().join("sub.old")).unwrap();
    std::os::unix::fs::symlink(ws.out(), ws.path().join("sub")).unwrap();
    let s = run_spec(
        &ws,
        "workspace-write",
        &["/bin/sh", "-c", "echo x > sub/swapped"],
    );
    let o = run_prepared(&prepared, &s).await.unwrap();
    assert!(!o.success);
    assert!(o.stderr.contains("Permission denied"), "{o:?}");
    assert!(
        !ws.out().join("swapped").exists(),
        "rules bind to the inode, not the path"
    );
}

#[test]
fn missing_kernel_features_fail_closed_unless_degraded() {
    let ws = Ws::new();
    let mut p = builtin_profiles()["workspace-write"]
        .resolve(ws.path())
        .unwrap();
    for abi in [0u8, 3, 5] {
        let r = landlock_rules::build(&p, abi);
        assert!(
            matches!(r, Err(SandboxError::Unsupported { .. })),
            "abi {abi}"
        );
    }
    p.allow_degraded = true;
    let (fd, report) = landlock_rules::build(&p, 5).unwrap();
    assert!(fd.is_some());
    assert_eq!(report.level, Level::Partial);
    assert!(!report.missing.is_empty() && report.scopes.is_empty());
    let (fd, report) = landlock_rules::build(&p, 0).unwrap();
    assert!(fd.is_none() && report.level == Level::None);
}

#[test]
fn doctor_reports_this_machine() {
    let o = std::process::Command::new(guard_bin())
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // An independent probe: landlock_create_ruleset(NULL, 0, VERSION) through python ctypes.
    let py = std::process::Command::new("python3")
        .args([
            "-c",
            "import ctypes;print(ctypes.CDLL(None).syscall(444,None,0,1))",
        ])
        .output()
        .expect("python3 is required");
    let abi: i64 = stdout(&py).parse().unwrap();
    assert_eq!(v["landlock_abi"].as_i64().unwrap(), abi.max(0));
    let ok = v["problems"].as_array().unwrap().is_empty();
    assert_eq!(
        o.status.success(),
        ok,
        "exit code follows the problem list: {v}"
    );
    assert!(ok, "this machine must support the sandbox: {v}");
    assert_eq!(v["trial"]["Ok"]["landlock"], "full");
    assert_eq!(v["trial"]["Ok"]["seccomp"], true);
}

/// On a laptop layout (the state dir owned by the uid that runs commands) `doctor` says that
/// approved runs can change the guard's files, and it always says that `request` frames run
/// uncontained.
#[test]
fn doctor_says_what_the_layout_leaves_open() {
    let state = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(guard_bin())
        .arg("doctor")
        .env("SANCTUM_STATE_DIR", state.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("can change the guard's files")
            && text.contains(&*state.path().to_string_lossy()),
        "{text}"
    );
    assert!(text.contains("`request` frames"), "{text}");
}

/// `sandbox --policy FILE` uses the policy's profiles (built-ins included); an unknown name is
/// a setup failure (125) that lists the known ones.
#[test]
fn cli_uses_the_policy_files_profiles() {
    let ws = Ws::new();
    let policy = ws.out().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[profiles.fetch]\nread = [\"/\"]\nwrite = [\"/dev/null\"]\nprotected = []\nnetwork = { ports = [443] }\n",
    )
    .unwrap();
    let p = policy.to_str().unwrap();
    let o = sandbox(
        &ws,
        &["--policy", p, "--profile", "fetch", "--json-status"],
        &["/bin/true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let status: serde_json::Value =
        serde_json::from_str(stderr(&o).lines().next().unwrap()).unwrap();
    assert_eq!(status["sandbox_status"]["network"], "tcp:443", "{status}");
    // The built-ins are still there under a policy file.
    let o = sandbox(
        &ws,
        &["--policy", p, "--profile", "workspace-write"],
        &["/bin/true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = sandbox(&ws, &["--policy", p, "--profile", "nope"], &["/bin/true"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains(
            "known: autonomous-http-read, autonomous-read, fetch, read-only, workspace-write"
        ),
        "{}",
        stderr(&o)
    );
}
