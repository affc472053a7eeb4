//! The README's quick start, run as written: the commands of its first `bash` block, taken from
//! README.md, against the real OpenClaw gateway, the real `serve` and `node`, on a temp HOME.
//! Only three things are the test's own: `openclaw` and `sanctum-guard` on PATH (the
//! `.cache` install and this build), a free port for 18789, and the requestId that
//! `openclaw nodes pending` printed in place of `<requestId>`. The model is the scripted one
//! (its answer to the recipe's message is an `exec` of `ls`), configured before the recipe as a
//! user's model would be. Lines ending in `&` run in the background until the test ends, and
//! the next line runs at once, as in a shell: no wait is added for a server to be up (`serve
//! &` then `node &` start together; the node waits for the guard's token and socket). Only
//! `openclaw nodes pending` is run again until it shows the node, as its user would. After
//! the recipe, `sanctum-guard doctor` agrees with it (`tools.exec.node` is this node's id).
//! Likewise `sanctum-guard inbox list` is run again until the agent's write waits there, and
//! its id takes the place of `<id>`: the approved write then runs on the node.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::node::*;

const MARKER: &str = "marker-readme-7f3a";

/// The quick start's commands: the first `bash` block after its heading, without comments.
fn recipe() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let at = readme
        .find("## Quick start")
        .expect("a Quick start section");
    let block = readme[at..]
        .split("```bash\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a bash block in the quick start");
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// `bash -c LINE` as the recipe's user: temp HOME, the shims first on PATH.
fn shell(home: &Path, path: &str, line: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(line)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("OPENCLAW_HIDE_BANNER", "1")
        .env("OPENCLAW_SUPPRESS_NOTES", "1")
        .env("NO_COLOR", "1")
        .env("SANCTUM_LOG", "info")
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

/// A directory with `openclaw` (the current version from .cache) and `sanctum-guard` (this
/// build) in it.
fn shims(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let oc = openclaw_dir(NEW).join("node_modules/.bin/openclaw");
    std::os::unix::fs::symlink(&oc, bin.join("openclaw")).expect("openclaw shim");
    std::os::unix::fs::symlink(guard_bin(), bin.join("sanctum-guard")).expect("guard shim");
    bin
}

#[test]
fn the_readme_quick_start_runs_as_written() {
    let _one = one_gateway_at_a_time();
    // The recipe's `serve` binds the web prompt's default port, which the podman suites
    // publish.
    let _port = support::process::podman_lock();
    let lines = recipe();
    assert!(
        lines.iter().any(|l| l.starts_with("sanctum-guard node ")),
        "{lines:?}"
    );
    let tmp = tempfile::Builder::new()
        .prefix("sg-readme-")
        .tempdir()
        .expect("tmp");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".openclaw/workspace")).expect("home");
    std::fs::write(home.join(".openclaw/workspace").join(MARKER), "").expect("marker");
    let bin = shims(tmp.path());
    let path = format!("{}:{}", bin.display(), path_with_node());
    // The user's model, configured before the recipe (here: the scripted one).
    std::env::set_var(
        "SCRIPTED_MODEL_RULES",
        json!([["Create notes.md", {"name":"exec","arguments":{"command":"touch notes.md"}}]])
            .to_string(),
    );
    let (_model, model_port, model_log) = start_model_with(
        tmp.path(),
        Some(&json!({"name":"exec","arguments":{"command":"ls"}})),
    );
    let cfg = json!({
        "agents":{"defaults":{"model":{"primary":"fake/fake-1"}}},
        "models":{"mode":"merge","providers":{"fake":{"baseUrl":format!("http://127.0.0.1:{model_port}/v1"),
            "apiKey":"sk-fake","api":"openai-completions",
            "models":[{"id":"fake-1","name":"Fake","reasoning":false,"input":["text"],"contextWindow":128000,"maxTokens":4096}]}}}});
    std::fs::write(home.join(".openclaw/openclaw.json"), cfg.to_string()).expect("config");

    let port = free_port().to_string();
    let mut background: Vec<ChildGuard> = Vec::new();
    let mut request_id: Option<String> = None;
    let mut inbox_id: Option<String> = None;
    let mut last = String::new();
    let started = std::time::Instant::now();
    for line in &lines {
        let mut line = line.replace("18789", &port);
        if let Some(rid) = &request_id {
            line = line.replace("<requestId>", rid);
        }
        if let Some(id) = &inbox_id {
            line = line.replace("<id>", id);
        }
        if line == "sanctum-guard inbox list" {
            // The write waits there once the agent's turn reached it: run again until it does.
            inbox_id = Some(wait_until(
                "the write in the inbox",
                Duration::from_secs(120),
                || {
                    let out = output_text(&shell(&home, &path, &line).output().expect("run"));
                    std::thread::sleep(Duration::from_millis(500));
                    uuid_in(&out)
                },
            ));
            continue;
        }
        if let Some(bg) = line.strip_suffix('&') {
            background.push(ChildGuard::spawn_group(
                "recipe",
                shell(&home, &path, bg.trim_end()).stdout(Stdio::null()),
            ));
            continue;
        }
        if line.starts_with("openclaw nodes pending") {
            // The node's request appears once it has connected: the line is run until it does.
            let start = std::time::Instant::now();
            loop {
                last = output_text(&shell(&home, &path, &line).output().expect("run"));
                if let Some(rid) = uuid_in(&last) {
                    request_id = Some(rid);
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(180),
                    "no pending request in `{line}`:\n{last}"
                );
                std::thread::sleep(Duration::from_secs(1));
            }
            continue;
        }
        assert!(!line.contains('<'), "a placeholder is left: {line}");
        let out = shell(&home, &path, &line).output().expect("run");
        last = output_text(&out);
        assert!(out.status.success(), "{line}\n{last}");
    }
    // The approved write ran on the node: the file is there and the agent saw the result.
    let notes = home.join(".openclaw/workspace/notes.md");
    wait_until("the approved write", Duration::from_secs(60), || {
        notes.exists().then_some(())
    });
    eprintln!(
        "readme_recipe: from the first line to the approved write's run in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The agent's `ls` ran on the guard's node, by itself, and its output reached the agent.
    let results = tool_results(&model_log);
    assert!(
        results.iter().any(|r| r.contains(MARKER)),
        "ls output must reach the agent: {results:?}\n{last}\nnode log:\n{}",
        std::fs::read_to_string(home.join("sanctum-node.log")).unwrap_or_default()
    );
    let audit = std::fs::read_to_string(home.join(".local/state/sanctum-guard/audit.jsonl"))
        .unwrap_or_default();
    assert!(
        audit.contains("exec-outcome") && audit.contains("\"source\":\"node\""),
        "the guard recorded the node's run"
    );
    // doctor agrees with the recipe: the node it binds is this node.
    let doctor = output_text(
        &shell(&home, &path, "sanctum-guard doctor")
            .output()
            .expect("doctor"),
    );
    assert!(
        doctor.contains("tools.exec.node is this node's id") && !doctor.contains("not this node"),
        "{doctor}"
    );
    drop(background);
}

/// The first UUID in `text` (the requestId `openclaw nodes pending` prints).
fn uuid_in(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
        .find(|w| {
            w.len() == 36
                && w.char_indices().all(|(i, c)| {
                    (matches!(i, 8 | 13 | 18 | 23) && c == '-') || c.is_ascii_hexdigit()
                })
        })
        .map(str::to_owned)
}
