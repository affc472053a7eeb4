//! OpenClaw's approvals formats against the real OpenClaw CLI (2026.9.6 SQLite era, 2026.7.35
//! JSON era) and its real JavaScript hash function. Needs `tests/setup.sh` (Node 24 and both
//! OpenClaw versions under `.cache/`, or `SANCTUM_TEST_CACHE`).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::openclaw::allow_always::{append_allow_always, cwd_argv_pattern, Grant};
use sanctum_guard::openclaw::document::{ApprovalsDocument, Ask, Security};
use sanctum_guard::openclaw::resolve::{resolve, resolve_read};
use sanctum_guard::openclaw::socket::ensure_socket;
use sanctum_guard::openclaw::store::{
    normalize_agent_id, Era, Store, StoreError, JSON_FILE, SQLITE_FILE,
};
use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use sanctum_test_support as support;

/// The deployment HOME that expands `~` in stored socket paths.
const HOME: &str = "/home/sanctum-test";
use support::openclaw::*;

/// A deployment token (config `socket.token_file`) replaces a generated one, in the document
/// OpenClaw reads too, and a second start with it changes nothing.
#[test]
fn a_deployment_token_replaces_the_documents_token() {
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let first = ensure_socket(&store, Some(Path::new(HOME)), None).unwrap();
    let mine = "deployment-socket-token-0123456789".to_owned();
    let config = ensure_socket(&store, Some(Path::new(HOME)), Some(mine.clone())).unwrap();
    assert_ne!(first.token, mine);
    assert_eq!(config.token, mine);
    assert_eq!(config.path, first.path);
    assert_eq!(
        ensure_socket(&store, Some(Path::new(HOME)), None).unwrap(),
        config,
        "the stored token is the deployment's"
    );
    let stored = store.read().unwrap().unwrap();
    assert_eq!(stored.socket_token(), Some(mine.as_str()));
    // OpenClaw still reads the document we wrote (it redacts the token itself).
    let got = approvals_get(NEW, &e.home, &e.state);
    assert_eq!(got["exists"], json!(true));
}

#[test]
fn ensure_socket_seeds_a_sqlite_store_openclaw_reads() {
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let config = ensure_socket(&store, Some(Path::new(HOME)), None).unwrap();
    assert_eq!(config.path, e.state.join("exec-approvals.sock"));
    assert_eq!(config.token.len(), 32);
    assert!(!e.state.join(JSON_FILE).exists(), "legacy JSON created");
    // Idempotent: a second call returns the stored values, not new ones.
    assert_eq!(
        ensure_socket(&store, Some(Path::new(HOME)), None).unwrap(),
        config
    );

    let got = approvals_get(NEW, &e.home, &e.state);
    assert_eq!(got["exists"], json!(true));
    assert_eq!(
        got["file"]["socket"]["path"],
        json!(config.path.to_str().unwrap())
    );
    assert!(
        got["file"]["socket"].get("token").is_none(),
        "OpenClaw redacts the token"
    );
    let raw = store.read_raw().unwrap().unwrap();
    assert_eq!(
        got["hash"],
        json!(sha256_hex(&raw)),
        "OpenClaw read our exact bytes"
    );
    let conn = rusqlite::Connection::open(e.state.join(SQLITE_FILE)).unwrap();
    let (has_token, socket_path): (i64, String) = conn
        .query_row(
            "SELECT has_socket_token, socket_path FROM exec_approvals_config WHERE config_key='current'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(has_token, 1);
    assert_eq!(socket_path, config.path.to_str().unwrap());
}

#[test]
fn ensure_socket_reads_the_token_openclaw_generated() {
    let e = env();
    let doc = e.home.join("doc.json");
    std::fs::write(
        &doc,
        r#"{"version":1,"socket":{"path":"~/oc.sock"},"defaults":{"security":"allowlist","ask":"on-miss"}}"#,
    )
    .unwrap();
    openclaw_cli(
        NEW,
        &e.home,
        &e.state,
        &["approvals", "set", "--file", doc.to_str().unwrap()],
    );
    let store = Store::open(&e.state, Era::Json).unwrap();
    assert_eq!(
        store.era(),
        Era::Sqlite,
        "detected from the existing database"
    );
    let before = store.read_raw().unwrap().unwrap();
    let token = store
        .read()
        .unwrap()
        .unwrap()
        .socket_token()
        .unwrap()
        .to_string();
    assert_eq!(token.len(), 32, "OpenClaw generated a 32-char token");
    let config = ensure_socket(&store, Some(Path::new(HOME)), None).unwrap();
    assert_eq!(config.token, token);
    assert_eq!(
        config.path,
        sanctum_guard::openclaw::store::expand_home("~/oc.sock", Some(Path::new(HOME)))
    );
    assert_eq!(
        store.read_raw().unwrap().unwrap(),
        before,
        "nothing rewritten"
    );
}

#[test]
fn sqlite_round_trip_guard_writes_openclaw_reads() {
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let doc = sample_doc(&e.state.join("guard.sock"));
    store.write(&doc).unwrap();
    assert!(!e.state.join(JSON_FILE).exists(), "legacy JSON created");
    for entry in std::fs::read_dir(e.state.join("state")).unwrap() {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{:?}", entry.file_name());
    }
    assert_eq!(
        e.state.join("state").metadata().unwrap().mode() & 0o777,
        0o700
    );

    let got = approvals_get(NEW, &e.home, &e.state);
    assert_eq!(
        got["file"],
        without_token(&doc),
        "OpenClaw reads the same document"
    );
    assert_eq!(openclaw_effective(&got), ours_effective(&doc));
    assert_eq!(
        ours_effective(&doc),
        ("allowlist".into(), "always".into(), "deny".into())
    );
    // OpenClaw storing the same document writes the same bytes and projection columns.
    let theirs_state = e.home.join("their-state");
    let input = e.home.join("ours.json");
    std::fs::write(&input, store.read_raw().unwrap().unwrap()).unwrap();
    openclaw_cli(
        NEW,
        &e.home,
        &theirs_state,
        &["approvals", "set", "--file", input.to_str().unwrap()],
    );
    let row = |state: &Path| -> Vec<Value> {
        let conn = rusqlite::Connection::open(state.join(SQLITE_FILE)).unwrap();
        conn.query_row(
            "SELECT json_array(config_key, raw_json, socket_path, has_socket_token, default_security,
               default_ask, default_ask_fallback, auto_allow_skills, agent_count, allowlist_count)
             FROM exec_approvals_config",
            [],
            |r| r.get::<_, String>(0),
        )
        .map(|text| serde_json::from_str::<Vec<Value>>(&text).unwrap())
        .unwrap()
    };
    let ours = row(&e.state);
    assert_eq!(ours, row(&theirs_state));
    assert_eq!(
        ours[3..],
        [
            json!(1),
            json!("allowlist"),
            json!("on-miss"),
            json!("deny"),
            json!(0),
            json!(3),
            json!(2)
        ]
    );
}

#[test]
fn sqlite_round_trip_openclaw_writes_guard_reads() {
    let e = env();
    let input = e.home.join("doc.json");
    let mut value = serde_json::to_value(sample_doc(Path::new("/tmp/oc-guard.sock"))).unwrap();
    value["agents"]["main"]["allowlist"][0]["commandText"] = json!("git status");
    value["defaults"]["ask"] = json!("bogus");
    std::fs::write(&input, value.to_string()).unwrap();
    openclaw_cli(
        NEW,
        &e.home,
        &e.state,
        &["approvals", "set", "--file", input.to_str().unwrap()],
    );
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let ours = store.read().unwrap().expect("stored document");
    assert_eq!(ours.socket_token(), Some("tok-from-guard-0123456789abcdef"));
    let got = approvals_get(NEW, &e.home, &e.state);
    assert_eq!(without_token(&ours), got["file"]);
    assert_eq!(ours.defaults.ask, None, "invalid value dropped by both");
    let entry = &ours.agents["main"].allowlist.as_ref().unwrap()[0];
    assert!(!entry.extra.contains_key("commandText"));
    assert_eq!(entry.extra["extraKey"], json!([1]));
    assert_eq!(openclaw_effective(&got), ours_effective(&ours));
}

#[test]
fn json_era_round_trips_with_openclaw_2026_7() {
    let e = env();
    // Guard writes the legacy file; 2026.7.35 reads it.
    let store = Store::open(&e.state, Era::Json).unwrap();
    let doc = sample_doc(&e.state.join("guard.sock"));
    store.write(&doc).unwrap();
    let file = e.state.join(JSON_FILE);
    assert_eq!(file.metadata().unwrap().mode() & 0o777, 0o600);
    assert_eq!(e.state.metadata().unwrap().mode() & 0o777, 0o700);
    let got = approvals_get(OLD, &e.home, &e.state);
    // 2026.7.35's `approvals get` does not redact the token.
    assert_eq!(got["file"], serde_json::to_value(&doc).unwrap());
    assert_eq!(
        got["hash"],
        json!(sha256_hex(&std::fs::read_to_string(&file).unwrap()))
    );
    assert_eq!(openclaw_effective(&got), ours_effective(&doc));

    // 2026.7.35 writes (its own database appears with an empty table); the guard still
    // detects the JSON era, reads the token, and ensure_socket keeps it.
    let e = env();
    let input = e.home.join("doc.json");
    std::fs::write(
        &input,
        json!({"version": 1, "socket": {"token": " legacy-token "}, "defaults": {"security": "deny"},
               "agents": {"default": {"allowlist": ["/bin/ls"]}}})
        .to_string(),
    )
    .unwrap();
    openclaw_cli(
        OLD,
        &e.home,
        &e.state,
        &["approvals", "set", "--file", input.to_str().unwrap()],
    );
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    assert_eq!(store.era(), Era::Json);
    let ours = store.read().unwrap().unwrap();
    let got = approvals_get(OLD, &e.home, &e.state);
    // The stored entry has no id, so each reader invents its own; compare the rest.
    let drop_ids = |mut v: Value| {
        for entry in v["agents"]["main"]["allowlist"].as_array_mut().unwrap() {
            entry.as_object_mut().unwrap().remove("id");
        }
        v
    };
    assert_eq!(
        drop_ids(serde_json::to_value(&ours).unwrap()),
        drop_ids(got["file"].clone())
    );
    let config = ensure_socket(&store, Some(Path::new(HOME)), None).unwrap();
    assert_eq!(config.token, "legacy-token");
    assert_eq!(config.path, e.state.join("exec-approvals.sock"));
    let after = approvals_get(OLD, &e.home, &e.state);
    assert_eq!(
        after["file"]["socket"]["path"],
        json!(config.path.to_str().unwrap())
    );
}

#[test]
fn hash_vectors_match_openclaw_js() {
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("/tmp", vec!["/usr/bin/git", "status"]),
        ("/tmp/../tmp/", vec!["/usr/bin/git", "status"]),
        ("/w", vec!["/usr/bin/ls"]),
        ("/w", vec!["/usr/bin/printf", ""]),
        (
            "/home/ü ser/dir with spaces",
            vec!["/usr/bin/echo", "héllo wörld", "日本語", "a b"],
        ),
        ("//a//./b/", vec!["x", "--flag=1", "\t", "emoji 🦀"]),
        ("relative/../x", vec!["rm", "-rf", "/"]),
        ("", vec!["ls"]),
    ];
    let args: Vec<Value> = cases
        .iter()
        .map(|(cwd, argv)| json!([argv, cwd, "linux"]))
        .collect();
    let theirs: Vec<String> =
        serde_json::from_value(run_js(NEW, "buildCwdBoundHashedArgPattern", &args))
            .expect("node output");
    assert_eq!(theirs.len(), cases.len());
    for ((cwd, argv), want) in cases.iter().zip(&theirs) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            &cwd_argv_pattern(cwd, &argv),
            want,
            "cwd={cwd:?} argv={argv:?}"
        );
    }
}

#[test]
fn allow_always_entries_are_read_by_openclaw() {
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let argv: Vec<String> = ["git", "log", "--oneline"].map(String::from).to_vec();
    let doc = store
        .update(|doc| {
            let grant = Grant {
                resolved_path: "/usr/bin/git",
                argv: &argv,
                cwd: "/work",
            };
            Ok(append_allow_always(doc, "main", &[grant], 1_795_000_000_000) == 1)
        })
        .unwrap();
    let got = approvals_get(NEW, &e.home, &e.state);
    let entry = &got["file"]["agents"]["main"]["allowlist"][0];
    assert_eq!(entry["pattern"], "/usr/bin/git");
    assert_eq!(entry["source"], "allow-always");
    assert_eq!(entry["argPattern"], json!(cwd_argv_pattern("/work", &argv)));
    assert_eq!(got["file"], without_token(&doc));
    // OpenClaw classifies it as an active argv+cwd grant (not "inactive").
    let table = openclaw_cli(NEW, &e.home, &e.state, &["approvals", "get"]);
    assert!(table.contains("argv+cwd"), "{table}");
}

#[test]
fn json_file_security() {
    let e = env();
    std::fs::create_dir_all(&e.state).unwrap();
    std::fs::set_permissions(&e.state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = Store::open(&e.state, Era::Json).unwrap();
    store.write(&ApprovalsDocument::default()).unwrap();
    let file = e.state.join(JSON_FILE);
    assert_eq!(file.metadata().unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        e.state.metadata().unwrap().mode() & 0o777,
        0o700,
        "dir tightened"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&e.state)
        .unwrap()
        .filter_map(|f| f.ok())
        .filter(|f| f.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());

    // A symlinked target is refused for writing and reading; its target is untouched.
    let victim = e.home.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&victim, &file).unwrap();
    assert!(matches!(
        store.write(&ApprovalsDocument::default()),
        Err(StoreError::Symlink(_))
    ));
    assert!(matches!(store.read(), Err(StoreError::Symlink(_))));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let policy = resolve_read(store.read(), "main");
    assert_eq!(policy.values.security, Security::Deny, "fails closed");

    // A hard-linked target is refused too.
    std::fs::remove_file(&file).unwrap();
    std::fs::hard_link(&victim, &file).unwrap();
    assert!(matches!(
        store.write(&ApprovalsDocument::default()),
        Err(StoreError::HardLink(_))
    ));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");

    // A symlinked state dir is refused.
    let real = e.home.join("real-state");
    std::fs::create_dir(&real).unwrap();
    let linked = e.home.join("linked-state");
    std::os::unix::fs::symlink(&real, &linked).unwrap();
    let store = Store::open(&linked, Era::Json).unwrap();
    assert!(matches!(
        store.write(&ApprovalsDocument::default()),
        Err(StoreError::Symlink(_))
    ));
    assert!(!real.join(JSON_FILE).exists());
}

#[test]
fn corrupt_or_conflicting_stores_fail_closed() {
    // A SQLite row OpenClaw itself would reject: both sides deny.
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    store.write(&sample_doc(Path::new("/tmp/x.sock"))).unwrap();
    let conn = rusqlite::Connection::open(e.state.join(SQLITE_FILE)).unwrap();
    conn.execute(
        "UPDATE exec_approvals_config SET raw_json = ?1",
        [r#"{"version":1,"defaults":{"security":"bogus"}}"#],
    )
    .unwrap();
    drop(conn);
    assert!(matches!(store.read(), Err(StoreError::Document(_))));
    let ours = resolve_read(store.read(), "main");
    assert_eq!(
        (ours.values.security, ours.values.ask),
        (Security::Deny, Ask::Off)
    );
    let got = approvals_get(NEW, &e.home, &e.state);
    assert_eq!(
        got["file"]["defaults"]["security"], "deny",
        "OpenClaw fails closed too"
    );
    assert!(matches!(
        ensure_socket(&store, Some(Path::new(HOME)), None),
        Err(sanctum_guard::openclaw::socket::SocketConfigError::Store(_))
    ));

    // A SQLite row next to a legacy JSON file: OpenClaw's migration is pending.
    let e = env();
    Store::open(&e.state, Era::Sqlite)
        .unwrap()
        .write(&ApprovalsDocument::default())
        .unwrap();
    std::fs::write(e.state.join(JSON_FILE), "{\"version\":1}").unwrap();
    assert!(matches!(
        Store::open(&e.state, Era::Sqlite),
        Err(StoreError::MigrationRequired(_))
    ));

    // Invalid JSON in the legacy file: an error, not OpenClaw 2026.7's silent `full`.
    let e = env();
    std::fs::create_dir_all(&e.state).unwrap();
    std::fs::write(e.state.join(JSON_FILE), "{not json").unwrap();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    assert_eq!(store.era(), Era::Json);
    assert_eq!(
        resolve_read(store.read(), "main").values.security,
        Security::Deny
    );
    assert_eq!(
        resolve(&ApprovalsDocument::default(), "main")
            .values
            .security,
        Security::Full
    );
}

#[test]
fn openclaw_runtime_uses_our_token_and_keeps_our_bytes() {
    let e = env();
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let mut doc = sample_doc(Path::new("unused"));
    doc.socket = Default::default();
    store.write(&doc).unwrap();
    let config = ensure_socket(&store, Some(Path::new(HOME)), None).unwrap();
    let row = || -> (String, i64) {
        let conn = rusqlite::Connection::open(e.state.join(SQLITE_FILE)).unwrap();
        conn.query_row(
            "SELECT raw_json, updated_at_ms FROM exec_approvals_config WHERE config_key = 'current'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let before = row();
    // OpenClaw's runtime resolver: it ensures the socket settings and would rewrite the row if
    // our bytes were not what it serialises itself.
    let (chunk, export) = js_export(NEW, "resolveExecApprovals");
    let script = format!(
        "import * as m from {chunk:?}; const r = m[{export:?}]('main'); process.stdout.write(JSON.stringify({{\
         token: r.token, socketPath: r.socketPath, security: r.agent.security, ask: r.agent.ask,\
         askFallback: r.agent.askFallback, autoAllowSkills: r.agent.autoAllowSkills,\
         allowlist: r.allowlist.map(e => e.pattern)}}));",
        chunk = chunk.to_str().unwrap(),
    );
    let out = Command::new(node())
        .args(["--input-type=module", "-e", &script])
        .env("HOME", &e.home)
        .env("OPENCLAW_STATE_DIR", &e.state)
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // OpenClaw logs its schema migration on stdout first; the result is the last line.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let theirs: Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("resolver output {e}: {stdout}"));
    assert_eq!(theirs["token"], json!(config.token));
    assert_eq!(theirs["socketPath"], json!(config.path.to_str().unwrap()));
    let ours = resolve(&store.read().unwrap().unwrap(), "main");
    assert_eq!(
        theirs["security"].as_str(),
        Some(ours.values.security.as_str())
    );
    assert_eq!(theirs["ask"].as_str(), Some(ours.values.ask.as_str()));
    assert_eq!(
        theirs["askFallback"].as_str(),
        Some(ours.values.ask_fallback.as_str())
    );
    assert_eq!(
        theirs["autoAllowSkills"],
        json!(ours.values.auto_allow_skills)
    );
    let patterns: Vec<&str> = ours.allowlist.iter().map(|e| e.pattern()).collect();
    assert_eq!(theirs["allowlist"], json!(patterns));
    assert_eq!(
        row(),
        before,
        "OpenClaw rewrote the row: our bytes differ from its own"
    );
}

#[test]
fn agent_id_normalisation_matches_openclaw_js() {
    let ids = [
        "main",
        " Ops ",
        "a_b-c",
        "*",
        "",
        "My Agent!",
        "-x-",
        "ünï",
        "_x",
        "a.b",
        "日本",
    ];
    let long = "A".repeat(70);
    let ids: Vec<&str> = ids.into_iter().chain([long.as_str()]).collect();
    let args: Vec<Value> = ids.iter().map(|id| json!([id])).collect();
    let theirs = run_js(NEW, "normalizeAgentId", &args);
    for (id, want) in ids.iter().zip(theirs.as_array().unwrap()) {
        assert_eq!(json!(normalize_agent_id(id)), *want, "{id:?}");
    }
}

#[test]
fn agents_being_deleted_are_fenced_like_openclaw() {
    let e = env();
    let input = e.home.join("doc.json");
    std::fs::write(
        &input,
        r#"{"version":1,"agents":{"ops":{"security":"deny"},"main":{"security":"deny"}}}"#,
    )
    .unwrap();
    openclaw_cli(
        NEW,
        &e.home,
        &e.state,
        &["approvals", "set", "--file", input.to_str().unwrap()],
    );
    let conn = rusqlite::Connection::open(e.state.join(SQLITE_FILE)).unwrap();
    conn.execute(
        "INSERT INTO agent_deletion_journal (agent_id, operation_id, agent_dir, workspace_dir, sessions_dir, created_at)
         VALUES ('ops', 'op1', '/a', '/w', '/s', 1)",
        [],
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&e.state, Era::Sqlite).unwrap();
    let before = store.read_raw().unwrap();
    let err = store
        .update(|doc| {
            doc.agents.get_mut("ops").unwrap().policy.security = Some(Security::Full);
            Ok(true)
        })
        .unwrap_err();
    assert!(
        matches!(err, StoreError::AgentDeletionInProgress(ref a) if a == "ops"),
        "{err}"
    );
    assert_eq!(store.read_raw().unwrap(), before, "nothing written");
    // Other agents stay editable.
    let doc = store
        .update(|doc| {
            doc.agents.get_mut("main").unwrap().policy.ask = Some(Ask::Always);
            Ok(true)
        })
        .unwrap();
    assert_eq!(store.read().unwrap().unwrap(), doc);
}

/// A state dir the deployment shares with the socket's group (compose: the approvals socket's
/// directory) keeps group read and search and its setgid bit, and loses everything wider;
/// the database's own dir and files stay private. Without the option it is tightened to 0700.
#[test]
fn a_group_shared_state_dir_keeps_its_group_and_nothing_wider() {
    for (before, after) in [
        (0o2750, 0o2750),
        (0o2777, 0o2750),
        (0o755, 0o750),
        (0o700, 0o700),
    ] {
        let e = env();
        std::fs::create_dir_all(&e.state).unwrap();
        std::fs::set_permissions(&e.state, std::fs::Permissions::from_mode(before)).unwrap();
        for era in [Era::Sqlite, Era::Json] {
            let store = Store::open(&e.state, era).unwrap().shared_with_group(true);
            store
                .write(&sample_doc(&e.state.join("guard.sock")))
                .unwrap();
            assert_eq!(
                e.state.metadata().unwrap().mode() & 0o7777,
                after,
                "{era:?} from {before:o}"
            );
        }
        assert_eq!(
            e.state.join("state").metadata().unwrap().mode() & 0o777,
            0o700
        );
        for f in [
            e.state.join("state").join("openclaw.sqlite"),
            e.state.join(JSON_FILE),
        ] {
            if f.exists() {
                assert_eq!(
                    f.metadata().unwrap().mode() & 0o777,
                    0o600,
                    "{}",
                    f.display()
                );
            }
        }
        // The same dir without the option: OpenClaw's 0700.
        let store = Store::open(&e.state, Era::Sqlite).unwrap();
        store
            .write(&sample_doc(&e.state.join("guard.sock")))
            .unwrap();
        assert_eq!(e.state.metadata().unwrap().mode() & 0o7777, 0o700);
    }
}
