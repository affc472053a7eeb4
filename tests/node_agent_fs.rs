//! A guard beside the agent's container judges the node's commands with the agent's
//! filesystem, not its own: the real `serve` with `agent_filesystem` pointing at a snapshot the
//! real `fs-snapshot` took. A program the agent has runs by itself; the same command is not
//! autonomous when the agent's image lacks that program (whatever the guard's own `/usr/bin`
//! holds) or when it leads into the agent's `/tmp`, which the guard cannot see. A guard that
//! judges for another container runs nothing itself (socket `exec` frames are refused), and
//! one whose snapshot is missing or malformed does not start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::node::*;

const TOKEN: &str = "agent-fs-token-0123456789abcdefghij";

fn node_request(w: &World, id: &str, argv: &[&str]) -> String {
    use std::os::unix::fs::MetadataExt;
    let ws = w.oc_state.join("workspace");
    std::fs::create_dir_all(&ws).expect("workspace");
    let m = std::fs::metadata(&ws).expect("stat workspace");
    json!({"type":"request","token":TOKEN,"id":id,"request":{"command":argv.join(" "),
        "cwd":"/usr","host":"node","agentId":"main","sessionKey":"agent:main:n",
        "commandArgv":argv,"envKeys":[],"source":"node","runId":"run-1","nodeId":"node-x",
        "timeoutMs":1_500,"nodeVerdict":{"kind":"allow","reasons":[],
        "workspace":{"dev":m.dev(),"ino":m.ino()}}}})
    .to_string()
        + "\n"
}

/// The real `fs-snapshot` of this host's PATH directories (the agent's PATH when the policy
/// names none), as the agent's image would give it.
fn take_snapshot(dir: &Path) -> Value {
    let out = dir.join("taken.json");
    let path = std::env::var("PATH").expect("PATH");
    let mut args = vec!["fs-snapshot", "--out", out.to_str().expect("utf8")];
    args.extend(
        path.split(':')
            .filter(|d| d.starts_with('/') && Path::new(d).is_dir()),
    );
    let (code, stdout, stderr) = guard_cli(&args, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("recorded "), "{stdout}");
    serde_json::from_str(&std::fs::read_to_string(&out).expect("snapshot")).expect("json")
}

/// `snap` with its entry for `path` replaced by `object` (None: removed).
fn edited(snap: &Value, path: &str, object: Option<Value>) -> Value {
    let mut s = snap.clone();
    let entries = s["entries"].as_array_mut().expect("entries");
    entries.retain(|e| e["path"] != path);
    if let Some(mut o) = object {
        o["path"] = json!(path);
        entries.push(o);
    }
    s
}

/// `serve` with `agent_filesystem` = `snap` (written to a file); its config file's path.
fn config_with(w: &World, name: &str, snap: &str) -> PathBuf {
    let f = w.tmp.path().join(format!("{name}.json"));
    std::fs::write(&f, snap).expect("snapshot file");
    let cfg = w.tmp.path().join(format!("{name}.toml"));
    std::fs::write(
        &cfg,
        format!("agent_filesystem = {:?}\n", f.to_str().expect("utf8")),
    )
    .expect("config");
    cfg
}

/// The answer to request `id` under `snap`, and the reason codes of its verdict (audit log).
fn decision_of(w: &World, snap: &Value, id: &str, argv: &[&str]) -> (Value, Vec<String>) {
    let cfg = config_with(w, id, &snap.to_string());
    let serve = Serve::start(w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let r = first_json(&raw_exchange(
        &w.socket(),
        node_request(w, id, argv).as_bytes(),
        false,
    ));
    drop(serve);
    let audit = audit_with(w, &[&format!("\"id\":\"{id}\"")]);
    let codes: Vec<String> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["fields"]["request"]["id"] == id && v["fields"]["verdict"].is_object())
        .map(|v| {
            v["fields"]["verdict"]["reasons"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["code"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (r, codes)
}

#[test]
fn node_commands_are_judged_on_the_agents_filesystem() {
    let w = World::full(TOKEN);
    let snap = take_snapshot(w.tmp.path());
    let ls = ["/bin/sh", "-lc", "ls"];
    // The agent has `ls`: it runs by itself, as it would on this host.
    let (r, _) = decision_of(&w, &snap, "has-ls", &ls);
    assert_eq!(r["decision"], "allow-once", "{r}");
    assert_eq!(r["profile"], "autonomous-read", "{r}");

    // The agent's image has no `ls` (the guard's own /usr/bin/ls does not count), or its
    // `ls` leads into the agent's /tmp, which the guard cannot see: a person decides.
    let tmp_link = json!({"kind":"link","target":"/tmp/ls"});
    for (id, snap) in [
        ("no-ls", edited(&snap, "/usr/bin/ls", None)),
        ("tmp-ls", edited(&snap, "/usr/bin/ls", Some(tmp_link))),
    ] {
        let (r, codes) = decision_of(&w, &snap, id, &ls);
        assert_eq!(r["reason"], "approval-timeout", "{id}: {r}");
        assert_eq!(codes, ["untrusted-location"], "{id}: {r}");
    }

    // Nothing runs in the guard's own container.
    let cfg = config_with(&w, "snap", &snap.to_string());
    let serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let started = std::fs::read_to_string(&serve.stderr_path).unwrap_or_default();
    assert!(started.contains("agent fs "), "{started}");
    assert!(
        !started.contains("not in the agent fs snapshot"),
        "{started}"
    );
    let request_json = json!({"command":["/usr/bin/uname","-s"],"rawCommand":"/usr/bin/uname -s",
        "cwd":"/usr","agentId":"main","sessionKey":"agent:main:x"})
    .to_string();
    let r = send_exec(&w.socket(), TOKEN, &request_json);
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["error"]["reason"], "runs-elsewhere", "{r}");
    audit_with(&w, &["runs-elsewhere"]);
    drop(serve);

    // A PATH entry the snapshot does not list is named at start.
    let mut partial = snap.clone();
    partial["complete"]
        .as_array_mut()
        .expect("complete")
        .retain(|d| d != "/usr/local/bin");
    let cfg = config_with(&w, "partial", &partial.to_string());
    let serve = Serve::start(&w, &[], &["--config", cfg.to_str().expect("utf8")]);
    let started = std::fs::read_to_string(&serve.stderr_path).unwrap_or_default();
    assert!(
        started.contains("PATH entry \"/usr/local/bin\" is not in the agent fs snapshot"),
        "{started}"
    );
}

#[test]
fn a_guard_without_a_readable_snapshot_does_not_start() {
    let w = World::full(TOKEN);
    let missing = w.tmp.path().join("missing.toml");
    std::fs::write(
        &missing,
        "agent_filesystem = \"/nonexistent/agent-fs.json\"\n",
    )
    .expect("cfg");
    let (code, log) = Serve::start_fails(&w, &["--config", missing.to_str().expect("utf8")]);
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains("agent filesystem: /nonexistent/agent-fs.json"),
        "{log}"
    );
    for (name, text, says) in [
        ("garbled", "{\"version\":1", "not a snapshot"),
        (
            "relative",
            r#"{"version":1,"complete":[],"entries":[{"path":"usr/bin/ls","kind":"file","mode":493}]}"#,
            "is not an absolute path",
        ),
        (
            "future",
            r#"{"version":2,"complete":[],"entries":[]}"#,
            "snapshot version 2",
        ),
    ] {
        let cfg = config_with(&w, name, text);
        let (code, log) = Serve::start_fails(&w, &["--config", cfg.to_str().expect("utf8")]);
        assert_eq!(code, 2, "{name}: {log}");
        assert!(log.contains(says), "{name}: {log}");
    }
    let relative = w.tmp.path().join("relative-key.toml");
    std::fs::write(&relative, "agent_filesystem = \"agent-fs.json\"\n").expect("cfg");
    let (code, log) = Serve::start_fails(&w, &["--config", relative.to_str().expect("utf8")]);
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("not an absolute path"), "{log}");
}
