//! seccomp/agent-profile.json under real podman: Node 24, ls, cat, git status and fs.watch
//! work; ptrace, mount, bpf, unshare and keyctl fail even with the capabilities that would
//! otherwise allow them. Builds `localhost/sanctum-agent-test` once (debootstrap bookworm
//! minbase + git, Node from .cache/node); every container runs with --rm.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use support::sandbox::probe;

const IMAGE: &str = "localhost/sanctum-agent-test";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn profile() -> PathBuf {
    repo().join("seccomp/agent-profile.json")
}

fn run_ok(cmd: &mut Command) {
    let st = cmd.status().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(st.success(), "{cmd:?} failed: {st}");
}

/// Builds the image unless it exists (tests/images.sh, the one recipe: podman, debootstrap
/// and Node 24 are required; tests/run has usually made it while cargo compiled).
fn image() -> &'static str {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| run_ok(Command::new(repo().join("tests/images.sh")).arg("agent-test")));
    IMAGE
}

/// Runs `script` in a fresh container under the agent profile; extra podman flags first.
fn in_container(extra: &[&str], script: &str) -> std::process::Output {
    let seccomp = format!("seccomp={}", profile().display());
    let probe_mount = format!("{}:/probe:ro", probe().display());
    Command::new("podman")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "--security-opt",
            &seccomp,
        ])
        .args(["-v", &probe_mount])
        .args(extra)
        .args([image(), "/bin/sh", "-c", script])
        .output()
        .expect("podman run")
}

#[test]
fn node_ls_cat_git_and_fs_watch_work() {
    let script = r#"set -e
export PATH=/opt/node/bin:$PATH
node -e 1
node -e "require('child_process').execFileSync('true'); new (require('worker_threads').Worker)('1', {eval: true})"
node -e "const fs=require('fs'); const w=fs.watch('/tmp', ()=>{}); fs.writeFileSync('/tmp/x','1'); w.close(); console.log('watch ok')"
ls -la / >/dev/null
cat /etc/os-release >/dev/null
git init -q /tmp/r && cd /tmp/r && git status --short && echo git ok
grep Seccomp: /proc/self/status"#;
    let o = in_container(
        &["--cap-drop", "ALL", "--security-opt", "no-new-privileges"],
        script,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout {out} stderr {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("watch ok") && out.contains("git ok"), "{out}");
    assert!(out.contains("Seccomp:\t2"), "the profile is active: {out}");
}

#[test]
fn dangerous_syscalls_fail_even_with_caps() {
    // CAP_SYS_ADMIN and CAP_SYS_PTRACE would allow all of these: only the profile stops them.
    let script = "for m in ptrace mount bpf unshare_user unshare_net keyctl add_key clone_newuser clone3 io_uring userfaultfd perf; do echo $m $(/probe $m); done";
    let caps = ["--cap-add", "SYS_ADMIN", "--cap-add", "SYS_PTRACE"];
    let o = in_container(&caps, script);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    for m in [
        "ptrace",
        "mount",
        "bpf",
        "unshare_user",
        "unshare_net",
        "keyctl",
        "add_key",
        "clone_newuser",
        "io_uring",
        "userfaultfd",
        "perf",
    ] {
        assert!(out.contains(&format!("{m} ERR EPERM")), "{m}: {out}");
    }
    assert!(out.contains("clone3 ERR ENOSYS"), "{out}");
    // Baseline: the same container without a seccomp filter lets unshare through, so the
    // denial above is the profile's doing.
    let base = Command::new("podman")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "--security-opt",
            "seccomp=unconfined",
        ])
        .args(caps)
        .args(["-v", &format!("{}:/probe:ro", probe().display())])
        .args([image(), "/probe", "unshare_net"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&base.stdout).trim(), "OK");
}

#[test]
fn no_container_left_running() {
    // Its own labelled container: the other tests run theirs concurrently, so "no container
    // of this image" would race with them.
    let label = format!("sanctum-test=left-{}", std::process::id());
    let o = in_container(&["--label", &label], "true");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("podman")
        .args(["ps", "-aq", "--filter", &format!("label={label}")])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stdout).trim().is_empty(),
        "container left behind after --rm run"
    );
}
