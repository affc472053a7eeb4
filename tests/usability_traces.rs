//! The usability figure over real agent traces: every distinct read command a coding agent
//! (mini-swe-agent, public trajectories on Django issues; `tests/data/traces/README.md`)
//! ran in a Django checkout, replayed in node mode (the node's invoke handler over the real
//! engine and kernel, `["/bin/sh","-lc",TEXT]` as OpenClaw sends it) in OpenClaw's default
//! layout: the workspace is `~/.openclaw/workspace` with `openclaw.json` beside it, and the
//! checkout holds a `.env` and a `.venv` as real projects do.
//!
//! - at least 98% of them run by themselves (the rest wait for a person; nobody answers here);
//! - none breaks under the jail: each autonomous run's exit code and stdout equal the same
//!   text run unconfined by the same shell in the same directory.
//!
//! Prints `usability traces: …` with the figures and every command that was gated or broke.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::inproc::{payload_of, result_of, InProc};

/// The Django release the checkout is made from (tests/setup.sh downloads its sdist).
const DJANGO: &str = "3.1.14";
/// Where the traces ran their commands; replaced by the workspace.
const TRACE_ROOT: &str = "/testbed";

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}

/// `$HOME/.openclaw/workspace` holding the Django checkout as a git repository with one
/// commit, a `.env` with a secret and a `.venv`; `openclaw.json` beside the workspace.
fn default_layout(home: &Path) -> PathBuf {
    let sdist = support::tools::cache().join(format!("traces/Django-{DJANGO}.tar.gz"));
    assert!(
        sdist.is_file(),
        "{} is missing: run tests/setup.sh",
        sdist.display()
    );
    let oc = home.join(".openclaw");
    let ws = oc.join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(oc.join("openclaw.json"), r#"{"gateway":{"mode":"local"}}"#).unwrap();
    run(Command::new("tar")
        .arg("xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(&ws)
        .arg("--strip-components=1"));
    std::fs::write(
        ws.join(".env"),
        "DJANGO_SECRET_KEY=usability-trace-secret-0123456789\n",
    )
    .unwrap();
    run(Command::new("python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(&ws));
    let git = |args: &[&str]| {
        run(Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(&ws))
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "django"]);
    ws
}

/// Every read command of the traces, in order.
fn trace_reads() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces/django_reads.jsonl");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<String>(l).unwrap())
        .collect()
}

/// The same text run unconfined: the same shell and directory, the jail's kind of
/// environment (a plain PATH, HOME, C locale), no login scripts.
fn unconfined(text: &str, ws: &Path, home: &Path) -> (Option<i32>, Vec<u8>) {
    let out = Command::new("/bin/sh")
        .args(["-c", text])
        .current_dir(ws)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("LANG", "C")
        .output()
        .unwrap();
    (out.status.code(), out.stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_trace_reads_run_by_themselves_and_none_breaks() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = default_layout(&home);
    // The node completes its policy with the agent's HOME. This crate has this one test, so
    // no other thread reads the variable meanwhile.
    std::env::set_var("HOME", &home);
    let node = InProc::at(ws.clone(), Duration::from_millis(1));
    let ws_text = ws.to_str().unwrap();
    let reads = trace_reads();
    assert!(reads.len() > 2000, "a few thousand reads: {}", reads.len());
    let started = Instant::now();
    let (mut autonomous, mut gated, mut broken) = (Vec::new(), Vec::new(), Vec::new());
    for read in &reads {
        let text = read.replace(TRACE_ROOT, ws_text);
        let params = json!({"command": ["/bin/sh", "-lc", text], "cwd": ws});
        let r = result_of(&node.invoke("system.run", &params, 30_000).await);
        if r["ok"] != true {
            let why = r["error"]["message"].as_str().unwrap_or("").to_string();
            gated.push(format!("{read:?}: {why}"));
            continue;
        }
        autonomous.push(read);
        let p: Value = payload_of(&r);
        let stdout = p["stdout"].as_str().unwrap_or("");
        let code = p["exitCode"].as_i64().map(|c| c as i32);
        let (want_code, want) = unconfined(&text, &ws, &home);
        let want = String::from_utf8_lossy(&want);
        if code != want_code || stdout != want {
            broken.push(format!(
                "{read:?}: exit {code:?} (unconfined {want_code:?}), stdout {} bytes (unconfined \
                 {}), error {}, stderr {:?}",
                stdout.len(),
                want.len(),
                p["error"],
                p["stderr"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(300)
                    .collect::<String>()
            ));
        }
    }
    let share = autonomous.len() as f64 * 100.0 / reads.len() as f64;
    println!(
        "usability traces: {} read commands, {} autonomous ({share:.1}%), {} gated, {} broken \
         under the jail, {:.0}s",
        reads.len(),
        autonomous.len(),
        gated.len(),
        broken.len(),
        started.elapsed().as_secs_f64()
    );
    for g in &gated {
        println!("GATED {g}");
    }
    for b in &broken {
        println!("BROKEN {b}");
    }
    assert!(share >= 98.0, "{share:.1}% autonomous (target 98%)");
    assert!(broken.is_empty(), "{} broke under the jail", broken.len());
}
