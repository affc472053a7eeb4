//! Autonomous git stays closed: every repository config a git command line reads is checked
//! (`-C`, `--git-dir`, `--work-tree`, a bare repository, `GIT_DIR`) through the real socket,
//! and the guard's pinned settings beat a real repository that sets each program-valued key.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::socket::*;

const TOKEN: &str = "git-test-token-0123456789abcdefghijk";

/// A script that leaves `marker` when anything runs it, then fails.
fn tripwire(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let script = dir.join(format!("{name}.sh"));
    let marker = dir.join(format!("{name}.ran"));
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (script, marker)
}

fn exec(sock: &Path, argv: &[&str], cwd: &Path, env: Value) -> Value {
    let rj = json!({"command":argv,"rawCommand":null,"cwd":cwd,"env":env,"timeoutMs":20_000,
        "needsScreenRecording":false,"agentId":"main","sessionKey":"agent:main:main",
        "approvalDecision":null})
    .to_string();
    send_exec(sock, TOKEN, &rj)
}

#[test]
fn repository_config_is_checked_wherever_git_looks() {
    let w = World::new(NEW, TOKEN, &[]);
    let cfg = w.write_config("[deadlines]\nexec_ms = 3000\nmargin_ms = 500\n");
    let _serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(&ws).expect("ws");
    git_repo_with_history(&ws);
    let (fsmon, marker) = tripwire(&w.home, "fsmonitor");
    let evil_cfg = format!("[core]\n\tfsmonitor = {}\n", fsmon.display());
    // A repository elsewhere whose config runs a program, as a worktree and bare.
    let evil = w.home.join("evil");
    std::fs::create_dir_all(&evil).expect("evil");
    git_repo_with_history(&evil);
    let mut text = std::fs::read_to_string(evil.join(".git/config")).expect("config");
    text.push_str(&evil_cfg);
    std::fs::write(evil.join(".git/config"), &text).expect("config");
    let bare = w.home.join("bare.git");
    git(&w.home, &["clone", "-q", "--bare", "evil", "bare.git"]);
    std::fs::write(
        bare.join("config"),
        format!("[core]\n\tbare = true\n{evil_cfg}"),
    )
    .expect("bare config");
    let (e, eg, b, wsd) = (
        evil.display().to_string(),
        evil.join(".git").display().to_string(),
        bare.display().to_string(),
        ws.display().to_string(),
    );
    // A repository nested in the workspace, entered by `cd` inside the shell text.
    let nested = ws.join("vendor/lib");
    std::fs::create_dir_all(&nested).expect("nested");
    git_repo_with_history(&nested);
    let mut text = std::fs::read_to_string(nested.join(".git/config")).expect("config");
    text.push_str(&evil_cfg);
    std::fs::write(nested.join(".git/config"), &text).expect("config");
    // A plain repository where `-C vendor/lib` applied twice would land: the check must
    // read the one git reads, not this one.
    std::fs::create_dir_all(nested.join("vendor/lib")).expect("inner");
    git_repo_with_history(&nested.join("vendor/lib"));
    let (gd, xp) = (format!("--git-dir={eg}"), format!("--exec-path={wsd}"));
    let cases: Vec<(&str, Vec<&str>, &Path, Value)> = vec![
        ("-C", vec!["git", "-C", &e, "status"], &ws, json!({})),
        (
            "-C relative",
            vec!["git", "-C", "../../home/evil", "status"],
            &ws,
            json!({}),
        ),
        (
            "--git-dir=",
            vec!["git", &gd, "log", "--oneline"],
            &ws,
            json!({}),
        ),
        (
            "--git-dir --work-tree",
            vec!["git", "--git-dir", &eg, "--work-tree", &wsd, "status"],
            &ws,
            json!({}),
        ),
        (
            "--work-tree of an evil repo",
            vec!["git", "--work-tree", &e, "status"],
            &evil,
            json!({}),
        ),
        (
            "bare cwd",
            vec!["git", "log", "--oneline"],
            &bare,
            json!({}),
        ),
        ("-C bare", vec!["git", "-C", &b, "log"], &ws, json!({})),
        (
            "GIT_DIR",
            vec!["git", "log", "--oneline"],
            &ws,
            json!({ "GIT_DIR": eg }),
        ),
        ("--exec-path", vec!["git", &xp, "status"], &ws, json!({})),
        (
            "cd into a nested repository",
            vec!["sh", "-c", "cd vendor/lib && git status"],
            &ws,
            json!({}),
        ),
        (
            "git -C into a nested repository, in shell text",
            vec!["sh", "-c", "git -C vendor/lib status"],
            &ws,
            json!({}),
        ),
        (
            "env -C into a nested repository",
            vec!["sh", "-c", "env -C vendor/lib git log --oneline"],
            &ws,
            json!({}),
        ),
    ];
    for (name, argv, cwd, env) in &cases {
        let v = exec(&w.socket(), argv, cwd, env.clone());
        assert_eq!(v["type"], "exec-res", "{name}: {v}");
        assert_eq!(v["ok"], false, "{name} ran autonomously: {v}");
        assert_eq!(v["error"]["reason"], "approval-timeout", "{name}: {v}");
    }
    assert!(!marker.exists(), "a repository's program ran");
    // The workspace's own plain repository still runs autonomously from its gitdir too.
    let v = exec(
        &w.socket(),
        &["git", "-C", &wsd, "log", "--oneline"],
        &ws,
        json!({}),
    );
    assert_eq!(v["ok"], true, "{v}");
    assert!(
        v["payload"]["stdout"]
            .as_str()
            .unwrap_or("")
            .contains("second-commit"),
        "{v}"
    );
}

/// One repository setting program-valued keys, a git command line that would run them, and
/// whether git itself may still succeed.
struct Pin {
    name: &'static str,
    config: String,
    argv: Vec<String>,
}

#[test]
fn pinned_settings_beat_a_repository_that_sets_each() {
    let dir = tempfile::tempdir().expect("tmp");
    let (script, marker) = tripwire(dir.path(), "prog");
    let s = script.display().to_string();
    let hooks = dir.path().join("hooks");
    std::fs::create_dir_all(&hooks).expect("hooks");
    for h in [
        "pre-commit",
        "post-commit",
        "commit-msg",
        "reference-transaction",
    ] {
        std::os::unix::fs::symlink(&script, hooks.join(h)).expect("hook");
    }
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let signing = "[commit]\n\tgpgsign = true\n[user]\n\tsigningkey = ABCDEF\n";
    let pins = vec![
        Pin {
            name: "protocol.ext.allow",
            config: format!(
                "[protocol]\n\tallow = always\n[protocol \"ext\"]\n\tallow = always\n\
                 [remote \"origin\"]\n\turl = ext::{s} %S\n"
            ),
            argv: args(&["ls-remote", "origin"]),
        },
        Pin {
            name: "core.sshCommand",
            config: format!(
                "[core]\n\tsshCommand = {s}\n[protocol \"ssh\"]\n\tallow = always\n\
                 [remote \"origin\"]\n\turl = ssh://127.0.0.1/x\n"
            ),
            argv: args(&["ls-remote", "origin"]),
        },
        Pin {
            name: "core.gitProxy",
            config: format!(
                "[core]\n\tgitProxy = {s}\n[protocol \"git\"]\n\tallow = always\n\
                 [remote \"origin\"]\n\turl = git://127.0.0.1/x\n"
            ),
            argv: args(&["ls-remote", "origin"]),
        },
        Pin {
            name: "core.fsmonitor",
            config: format!("[core]\n\tfsmonitor = {s}\n"),
            argv: args(&["status"]),
        },
        Pin {
            name: "core.hooksPath",
            config: format!("[core]\n\thooksPath = {}\n", hooks.display()),
            argv: args(&["commit", "-q", "--allow-empty", "-m", "x"]),
        },
        Pin {
            name: "core.editor",
            config: format!("[core]\n\teditor = {s}\n"),
            argv: args(&["commit", "-q", "--allow-empty"]),
        },
        Pin {
            name: "sequence.editor",
            config: format!("[sequence]\n\teditor = {s}\n"),
            argv: args(&["rebase", "-q", "-i", "--autostash", "--root"]),
        },
        Pin {
            name: "gpg.program",
            config: format!("{signing}[gpg]\n\tprogram = {s}\n"),
            argv: args(&["commit", "-q", "--allow-empty", "-m", "x"]),
        },
        Pin {
            name: "gpg.openpgp.program",
            config: format!("{signing}[gpg \"openpgp\"]\n\tprogram = {s}\n"),
            argv: args(&["commit", "-q", "--allow-empty", "-m", "x"]),
        },
        Pin {
            name: "gpg.x509.program",
            config: format!("{signing}[gpg]\n\tformat = x509\n[gpg \"x509\"]\n\tprogram = {s}\n"),
            argv: args(&["commit", "-q", "--allow-empty", "-m", "x"]),
        },
        Pin {
            name: "gpg.ssh.program",
            config: format!(
                "[commit]\n\tgpgsign = true\n[user]\n\tsigningkey = key::ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGd0ZXN0\n\
                 [gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tprogram = {s}\n"
            ),
            argv: args(&["commit", "-q", "--allow-empty", "-m", "x"]),
        },
        Pin {
            name: "gpg.ssh.defaultKeyCommand",
            config: format!(
                "[commit]\n\tgpgsign = true\n[gpg]\n\tformat = ssh\n\
                 [gpg \"ssh\"]\n\tdefaultKeyCommand = {s}\n"
            ),
            argv: args(&["commit", "-q", "--allow-empty", "-m", "x"]),
        },
    ];
    let guard_env = sanctum_guard::engine::git::protective_env();
    for pin in &pins {
        let repo = dir.path().join(pin.name);
        std::fs::create_dir_all(&repo).expect("repo");
        git_repo_with_history(&repo);
        let mut text = std::fs::read_to_string(repo.join(".git/config")).expect("config");
        text.push_str("[user]\n\tname = t\n\temail = t@t\n");
        text.push_str(&pin.config);
        std::fs::write(repo.join(".git/config"), text).expect("config");
        let run = |env: &std::collections::BTreeMap<String, String>| {
            let _ = std::fs::remove_file(&marker);
            // Bounded: a transport helper that fails may leave git waiting.
            let out = Command::new("timeout")
                .args(["20", "git"])
                .args(&pin.argv)
                .current_dir(&repo)
                .env_clear()
                .envs(env)
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("HOME", dir.path())
                .stdin(std::process::Stdio::null())
                .output()
                .expect("git");
            (marker.exists(), output_text(&out))
        };
        // Without the guard's settings the repository's program runs: the case is live.
        let bare_env = [("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string())].into();
        let (ran, out) = run(&bare_env);
        assert!(
            ran,
            "{}: the trigger does not run the program: {out}",
            pin.name
        );
        let (ran, out) = run(&guard_env);
        assert!(!ran, "{}: the repository's program ran: {out}", pin.name);
    }
}

/// OpenClaw's default layout for real: the workspace is `~/.openclaw/workspace`, beside the
/// gateway's `openclaw.json`. Ordinary reads of a repository there run by themselves,
/// through the node's argv (`sh -lc TEXT`), and print what they print anywhere else.
#[test]
fn reads_in_openclaws_default_workspace_run_by_themselves() {
    let w = World::new(NEW, TOKEN, &[]);
    let cfg = w.write_config("[deadlines]\nexec_ms = 3000\nmargin_ms = 500\n");
    let _serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    std::fs::write(
        w.oc_state.join("openclaw.json"),
        "{\"gateway\":{\"auth\":{\"token\":\"gw-secret-token-123456\"}}}\n",
    )
    .expect("openclaw.json");
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(&ws).expect("ws");
    git_repo_with_history(&ws);
    std::fs::create_dir_all(ws.join("src")).expect("src");
    std::fs::write(ws.join("src/lib.rs"), "// hi there\n").expect("lib.rs");
    for (text, want) in [
        ("git log --oneline", "second-commit"),
        ("git diff --stat", "a.txt | 1 +"),
        ("git show --stat", "second-commit"),
        ("rg hi", "hi there"),
        ("grep -rn hi .", "src/lib.rs:1"),
        ("find . -name '*.rs' | xargs wc -l", "src/lib.rs"),
    ] {
        let v = exec(&w.socket(), &["/bin/sh", "-lc", text], &ws, json!({}));
        assert_eq!(v["ok"], true, "{text}: {v}");
        let out = v["payload"]["stdout"].as_str().unwrap_or("");
        assert!(out.contains(want), "{text}: {v}");
    }
    // Whole patches of history are offered to a person here as anywhere else (a secret
    // committed once is in them; `git_content`), not denied as a secret read.
    for text in ["git diff", "git show"] {
        let v = exec(&w.socket(), &["/bin/sh", "-lc", text], &ws, json!({}));
        assert_eq!(v["error"]["reason"], "approval-timeout", "{text}: {v}");
    }
    // The config beside the workspace stays out of reach, by name and through a link.
    std::os::unix::fs::symlink(w.oc_state.join("openclaw.json"), ws.join("cfg")).expect("ln");
    for text in ["cat ../openclaw.json", "cat cfg", "grep -R token ."] {
        let v = exec(&w.socket(), &["/bin/sh", "-lc", text], &ws, json!({}));
        let out = v.to_string();
        assert!(!out.contains("gw-secret-token"), "{text}: {v}");
    }
}
