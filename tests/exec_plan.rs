//! The exec plan's two attack classes (what runs, where it writes), attacked through the
//! real socket and the real kernel: the
//! client chooses neither where a command runs and what is writable (the deployment's
//! workspace is the only writable tree; no cwd means the workspace; a relative cwd is
//! refused), nor what runs (the program is the file judged, found on the deployment's PATH;
//! the request's PATH, HOME and code-loading variables never reach the run; autonomous git
//! runs with its own programs switched off).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::socket::*;

const TOKEN: &str = "plan-test-token-0123456789abcdefghi";

/// Sends one signed `exec` frame with `fields` merged over a plain request; returns the reply.
fn exec(sock: &Path, argv: &[&str], fields: Value) -> Value {
    // OpenClaw's rawCommand: the shell text of `[sh, -c, TEXT]`, else nothing (the argv is
    // judged; a rawCommand that disagrees with it is refused, tests/socket_forms.rs).
    let raw = match argv {
        [sh, flag, text] if sh.ends_with("sh") && (*flag == "-c" || *flag == "-lc") => json!(text),
        _ => json!(null),
    };
    let mut rj = json!({"command":argv,"rawCommand":raw,"timeoutMs":10_000,
        "needsScreenRecording":false,"agentId":"main","sessionKey":"agent:main:main",
        "approvalDecision":null});
    if let (Some(o), Some(f)) = (rj.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            o.insert(k.clone(), v.clone());
        }
    }
    let v = send_exec(sock, TOKEN, &rj.to_string());
    assert_eq!(v["type"], "exec-res", "{v}");
    v
}

/// Sends `argv` on a thread and approves it in the inbox as a person would, if the policy
/// asks for one (a policy deny comes back at once); returns the reply.
fn approved(w: &World, argv: &[&str], fields: Value) -> Value {
    let (sock, a) = (
        w.socket(),
        argv.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    let client = std::thread::spawn(move || {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        exec(&sock, &refs, fields)
    });
    let dir = w.guard_state.to_str().expect("utf8");
    let start = Instant::now();
    while !client.is_finished() {
        let (_, out, _) = guard_cli(&["inbox", "list", "--json", "--state-dir", dir], &[]);
        let id = serde_json::from_str::<Value>(&out)
            .ok()
            .and_then(|v| v.get(0).and_then(|e| e["id"].as_str().map(str::to_owned)));
        if let Some(id) = id {
            let (code, out, err) = guard_cli(&["inbox", "approve", &id, "--state-dir", dir], &[]);
            assert_eq!(code, 0, "{out}{err}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "neither pending nor answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    client.join().expect("client")
}

/// True when the reply says the command did not write: denied, or ran and failed.
fn did_not_write(v: &Value) -> bool {
    v["ok"] == false || v["payload"]["exitCode"] != 0
}

fn workspace(w: &World) -> PathBuf {
    w.oc_state.join("workspace")
}

fn start(w: &World) -> Serve {
    std::fs::create_dir_all(workspace(w)).expect("workspace");
    let cfg = w.write_config("[deadlines]\nexec_ms = 15000\n");
    Serve::start(w, &[], &["--config", cfg.to_str().expect("utf8")])
}

#[test]
fn no_cwd_runs_in_the_workspace_and_a_relative_cwd_is_refused() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = start(&w);
    let ws = workspace(&w).canonicalize().expect("ws");
    // null, missing and empty cwd: the workspace.
    for fields in [json!({"cwd":null}), json!({}), json!({"cwd":""})] {
        let v = exec(&w.socket(), &["/bin/pwd"], fields.clone());
        assert_eq!(v["ok"], true, "{fields}: {v}");
        assert_eq!(
            v["payload"]["stdout"].as_str().map(str::trim),
            Some(ws.to_str().expect("utf8")),
            "{fields}"
        );
    }
    for rel in [".", "sub", "../..", "~", "./"] {
        let v = exec(&w.socket(), &["/bin/pwd"], json!({"cwd":rel}));
        assert_eq!(v["ok"], false, "{rel}: {v}");
        assert_eq!(v["error"]["reason"], "cwd-relative", "{rel}: {v}");
    }
    let v = exec(&w.socket(), &["/bin/pwd"], json!({"cwd":"/no/such/dir"}));
    assert_eq!(v["error"]["reason"], "cwd-unavailable", "{v}");
}

#[test]
fn an_approved_write_cannot_leave_the_workspace_whatever_the_cwd() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = start(&w);
    let tag = format!("sg-plan-{}", std::process::id());
    // Places a root-run command could write if the client chose the writable tree.
    let targets: Vec<PathBuf> = vec![
        PathBuf::from("/etc/cron.d").join(&tag),
        PathBuf::from("/usr/local/bin").join(&tag),
        w.oc_state.join(&tag),
        w.home.join(&tag),
        w.guard_state.join(&tag),
    ];
    for cwd in [
        json!(null),
        json!("/"),
        json!(w.home),
        json!("/usr/local/bin"),
    ] {
        for t in &targets {
            let v = approved(
                &w,
                &["/usr/bin/touch", t.to_str().expect("utf8")],
                json!({"cwd":cwd}),
            );
            assert!(did_not_write(&v), "cwd {cwd}: wrote {}: {v}", t.display());
            assert!(!t.exists(), "cwd {cwd}: {} exists", t.display());
        }
    }
    // A relative target with a cwd outside the workspace: read-only there too.
    let v = approved(
        &w,
        &["/usr/bin/touch", &tag],
        json!({"cwd":"/usr/local/bin"}),
    );
    assert!(did_not_write(&v), "{v}");
    assert!(!Path::new("/usr/local/bin").join(&tag).exists());
    // /proc/sys and device nodes stay closed.
    let v = approved(
        &w,
        &["/bin/sh", "-c", "echo 1 > /proc/sys/vm/drop_caches"],
        json!({"cwd":"/"}),
    );
    assert!(did_not_write(&v), "{v}");
    // Inside the workspace the same approved command works.
    std::fs::create_dir_all(workspace(&w).join("sub")).expect("sub");
    let v = approved(&w, &["/usr/bin/touch", "sub/ok"], json!({}));
    assert_eq!(v["payload"]["exitCode"], 0, "{v}");
    assert!(workspace(&w).join("sub/ok").exists());
}

#[test]
fn the_request_environment_never_chooses_what_runs() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = start(&w);
    let ws = workspace(&w);
    let marker = w.tmp.path().join("planted-ran");
    // A planted `ls` on a PATH the request sends.
    let evil = w.tmp.path().join("evilbin");
    std::fs::create_dir_all(&evil).expect("evil");
    let script = format!("#!/bin/sh\ntouch {}\necho planted\n", marker.display());
    std::fs::write(evil.join("ls"), &script).expect("write");
    std::fs::set_permissions(evil.join("ls"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let path = format!("{}:/usr/bin:/bin", evil.display());
    let v = exec(&w.socket(), &["ls", "/usr"], json!({"env":{"PATH":path}}));
    assert_eq!(v["ok"], true, "{v}");
    let out = v["payload"]["stdout"].as_str().unwrap_or_default();
    assert!(out.contains("bin"), "the real ls ran: {v}");
    assert!(
        !out.contains("planted") && !marker.exists(),
        "planted ls ran"
    );

    // A symlink named like a harmless program is judged as what it points to: never
    // autonomous (it waits for a person; denied here).
    std::os::unix::fs::symlink("/usr/bin/python3", ws.join("ls")).expect("symlink");
    let sock = w.socket();
    let client = std::thread::spawn(move || exec(&sock, &["./ls", "-c", "print(1)"], json!({})));
    let id = wait_pending_ids(&w, Duration::from_secs(10))[0].clone();
    let dir = w.guard_state.to_str().expect("utf8");
    let (code, _, _) = guard_cli(&["inbox", "deny", &id, "--state-dir", dir], &[]);
    assert_eq!(code, 0);
    let v = client.join().expect("client");
    assert_eq!(v["error"]["reason"], "user-denied", "{v}");

    // HOME pointing at a planted .gitconfig whose fsmonitor would run a program.
    let fake_home = w.tmp.path().join("fakehome");
    std::fs::create_dir_all(&fake_home).expect("home");
    let hook = w.tmp.path().join("fsmon.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).expect("w");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(
        fake_home.join(".gitconfig"),
        format!(
            "[core]\n\tfsmonitor = {}\n\tpager = {}\n",
            hook.display(),
            hook.display()
        ),
    )
    .expect("gitconfig");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("HOME", w.tmp.path())
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(ws.join("f.txt"), "x").expect("f");
    let v = exec(
        &w.socket(),
        &["git", "status", "--short"],
        json!({"env":{"HOME":fake_home}}),
    );
    assert_eq!(v["ok"], true, "{v}");
    assert!(
        !marker.exists(),
        "fsmonitor from the request's HOME ran: {v}"
    );

    // The same program planted in the repository's own config: not autonomous any more.
    std::fs::write(
        ws.join(".git/config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = {}\n",
            hook.display()
        ),
    )
    .expect("config");
    let sock = w.socket();
    let client = std::thread::spawn(move || exec(&sock, &["git", "status"], json!({})));
    let id = wait_pending_ids(&w, Duration::from_secs(10))[0].clone();
    let (_, out, _) = guard_cli(&["inbox", "list", "--json", "--state-dir", dir], &[]);
    assert!(out.contains("git-config"), "{out}");
    let (code, _, _) = guard_cli(&["inbox", "deny", &id, "--state-dir", dir], &[]);
    assert_eq!(code, 0);
    let _ = client.join().expect("client");
    assert!(!marker.exists(), "repository fsmonitor ran");

    // Variables that load code make the request wait for a person, and are dropped when a
    // person approves it anyway; PATH and HOME are the deployment's.
    let probe =
        "echo PATH=$PATH; echo HOME=$HOME; echo LDP=$LD_PRELOAD; echo BE=$BASH_ENV; echo FOO=$FOO";
    let v = approved(
        &w,
        &["/bin/sh", "-c", probe],
        json!({"env":{"LD_PRELOAD":"/tmp/x.so","BASH_ENV":"/tmp/x","FOO":"bar","PATH":"/evil","HOME":"/evil"}}),
    );
    let out = v["payload"]["stdout"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(out.contains("LDP=\n") && out.contains("BE=\n"), "{out}");
    assert!(
        out.contains("FOO=bar"),
        "approved plain variables pass: {out}"
    );
    assert!(!out.contains("/evil"), "{out}");
}

#[test]
fn approved_writes_create_files_and_hook_or_config_changes_are_undone_and_reported() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = start(&w);
    let ws = workspace(&w);
    // The most common approved actions work at the workspace root.
    for (argv, made) in [
        (vec!["/bin/sh", "-c", "echo hi > notes.txt"], "notes.txt"),
        (vec!["/bin/mkdir", "build"], "build"),
        (vec!["/usr/bin/git", "init", "-q"], ".git/HEAD"),
    ] {
        let v = approved(&w, &argv, json!({}));
        assert_eq!(v["payload"]["exitCode"], 0, "{argv:?}: {v}");
        assert!(ws.join(made).exists(), "{made}");
    }
    let v = approved(
        &w,
        &[
            "/bin/sh",
            "-c",
            "git add notes.txt && git -c user.name=t -c user.email=t@t commit -qm first",
        ],
        json!({}),
    );
    assert_eq!(v["payload"]["exitCode"], 0, "{v}");
    let config_before = std::fs::read_to_string(ws.join(".git/config")).expect("config");
    // An approved script (the policy cannot see inside it) that plants a hook and an
    // fsmonitor: both undone after the run, and said so. (Writing the hook directly is
    // blocked by the policy before anything runs.)
    std::fs::write(
        ws.join("setup.sh"),
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/post-checkout\n\
         chmod +x .git/hooks/post-checkout\n\
         git config core.fsmonitor /tmp/evil\n",
    )
    .expect("script");
    let v = approved(&w, &["/bin/sh", "setup.sh"], json!({}));
    assert_eq!(v["payload"]["exitCode"], 0, "{v}");
    assert!(
        !ws.join(".git/hooks/post-checkout").exists(),
        "hook left in place"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).expect("config"),
        config_before,
        "config not restored"
    );
    let stderr = v["payload"]["stderr"].as_str().unwrap_or_default();
    assert!(
        stderr.contains("post-checkout"),
        "the agent is told: {stderr}"
    );
    audit_with(&w, &["\"integrity\":[{", "post-checkout"]);
}

#[test]
fn a_workspace_inside_a_secret_is_refused_at_start() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("home");
    let ws = home.join(".ssh/project");
    std::fs::create_dir_all(&ws).expect("ws");
    let out = std::process::Command::new(guard_bin())
        .arg("serve")
        .arg("--state-dir")
        .arg(tmp.path().join("guard"))
        .arg("--openclaw-state")
        .arg(tmp.path().join("oc"))
        .arg("--workspace")
        .arg(&ws)
        .args(["--web-listen", "off"])
        .env("HOME", &home)
        .output()
        .expect("serve");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("inside the sensitive path"), "{err}");
}
