use super::*;
use crate::policy::facts::FakeFs;

fn file(p: &str, mode: u32) -> Entry {
    Entry {
        path: p.into(),
        object: Object::File { mode },
    }
}
fn dir(p: &str) -> Entry {
    Entry {
        path: p.into(),
        object: Object::Dir { mode: 0o755 },
    }
}
fn link(p: &str, t: &str) -> Entry {
    Entry {
        path: p.into(),
        object: Object::Link { target: t.into() },
    }
}

/// A Debian-like agent image: merged /usr, an alternatives chain, a loop, a non-runnable file.
fn snapshot() -> Snapshot {
    Snapshot {
        version: SNAPSHOT_VERSION,
        complete: vec!["/usr/bin".into(), "/usr/local/bin".into()],
        entries: vec![
            link("/bin", "usr/bin"),
            dir("/usr"),
            dir("/usr/bin"),
            dir("/usr/local"),
            dir("/usr/local/bin"),
            file("/usr/bin/ls", 0o755),
            file("/usr/bin/mawk", 0o755),
            link("/usr/bin/awk", "/etc/alternatives/awk"),
            dir("/etc"),
            dir("/etc/alternatives"),
            link("/etc/alternatives/awk", "/usr/bin/mawk"),
            link("/usr/bin/loop", "loop2"),
            link("/usr/bin/loop2", "loop"),
            file("/usr/bin/notes", 0o644),
            link("/usr/local/bin/tmpy", "/tmp/tool"),
        ],
    }
}

/// The guard's own container: a `/usr/bin/evil` the agent does not have, the shared workspace.
fn host() -> Arc<dyn Facts> {
    Arc::new(
        FakeFs::new()
            .file("/usr/bin/evil", 0o755)
            .file("/usr/bin/ls", 0o755)
            .file("/tmp/tool", 0o755)
            .file("/workspace/a.txt", 0o644)
            .link("/workspace/bin", "/usr/bin")
            .link("/workspace/tmp", "/tmp")
            .link("/workspace/keys", "/home/node/.ssh")
            .link("/workspace/up", "../usr/bin"),
    )
}

fn agent() -> AgentFs {
    AgentFs::new(snapshot(), Path::new("/workspace"), host()).expect("snapshot")
}

#[test]
fn answers_come_from_where_the_command_runs() {
    use LinkStatus::*;
    let fs = agent();
    // (path, realpath, link_status): None is "unknown", never "proven missing".
    let rows: &[(&str, Option<&str>, Option<LinkStatus>)] = &[
        ("/usr/bin/ls", Some("/usr/bin/ls"), Some(NotLink)),
        ("/bin/ls", Some("/usr/bin/ls"), Some(NotLink)),
        (
            "/usr/bin/awk",
            Some("/usr/bin/mawk"),
            Some(Target("/etc/alternatives/awk".into())),
        ),
        ("/bin", Some("/usr/bin"), Some(Target("usr/bin".into()))),
        // The guard's own program is not the agent's: missing from a complete directory.
        ("/usr/bin/evil", None, Some(Missing)),
        ("/bin/evil", None, Some(Missing)),
        // A name under a file, a loop.
        ("/usr/bin/ls/x", None, Some(Missing)),
        ("/usr/bin/loop", None, Some(Target("loop2".into()))),
        ("/usr/bin/loop/x", None, Some(Missing)),
        // The agent's /tmp, home and unlisted system dirs: unknown, whatever the guard's say.
        ("/tmp/tool", None, None),
        (
            "/usr/local/bin/tmpy",
            None,
            Some(Target("/tmp/tool".into())),
        ),
        ("/home/node/.ssh/id_rsa", None, None),
        ("/usr/lib/x", None, None),
        ("/etc/passwd", None, None),
        ("relative/ls", None, None),
        // The shared workspace is asked live, and its links lead back into the snapshot.
        ("/workspace/a.txt", Some("/workspace/a.txt"), Some(NotLink)),
        ("/workspace/nope", None, Some(Missing)),
        ("/workspace/bin/ls", Some("/usr/bin/ls"), Some(NotLink)),
        ("/workspace/bin/evil", None, Some(Missing)),
        ("/workspace/up/ls", Some("/usr/bin/ls"), Some(NotLink)),
        ("/workspace/tmp/tool", None, None),
        ("/workspace/keys/id_rsa", None, None),
        (
            "/workspace/../usr/bin/ls",
            Some("/usr/bin/ls"),
            Some(NotLink),
        ),
        ("/workspace/../tmp/tool", None, None),
    ];
    for (p, real, status) in rows {
        let p = Path::new(p);
        assert_eq!(fs.realpath(p), real.map(PathBuf::from), "realpath {p:?}");
        assert_eq!(fs.link_status(p), *status, "link_status {p:?}");
        assert_eq!(fs.stat(p).is_some(), real.is_some(), "stat {p:?}");
    }
}

#[test]
fn path_lookups_find_the_agents_programs_only() {
    let fs = agent();
    let path = "/usr/local/bin:/usr/bin:/bin";
    let rows: &[(&str, Option<&str>, Option<&str>)] = &[
        ("ls", Some("/usr/bin/ls"), Some("/usr/bin/ls")),
        ("awk", Some("/usr/bin/awk"), Some("/usr/bin/mawk")),
        ("evil", None, None),
        // Not runnable, a loop, a program behind the agent's /tmp: not found.
        ("notes", None, None),
        ("loop", None, None),
        ("tmpy", None, None),
    ];
    for (name, found, real) in rows {
        let f = fs.which(name, path, Path::new("/workspace"));
        assert_eq!(f.path, found.map(PathBuf::from), "{name}");
        assert_eq!(f.real, real.map(PathBuf::from), "{name}");
    }
}

#[test]
fn only_complete_directories_are_listed() {
    let fs = agent();
    let mut names = fs
        .list_dir(Path::new("/bin"))
        .expect("/usr/bin is complete");
    names.sort();
    assert_eq!(
        names,
        ["awk", "loop", "loop2", "ls", "mawk", "notes"].map(String::from)
    );
    assert_eq!(fs.list_dir(Path::new("/usr")), None);
    assert_eq!(fs.list_dir(Path::new("/etc/alternatives")), None);
    assert_eq!(fs.list_dir(Path::new("/usr/bin/ls")), None);
    assert_eq!(
        fs.list_dir(Path::new("/workspace")).map(|n| n.len()),
        Some(5)
    );
}

#[test]
fn a_malformed_snapshot_is_refused() {
    let bad = |edit: &dyn Fn(&mut Snapshot)| {
        let mut s = snapshot();
        edit(&mut s);
        AgentFs::new(s, Path::new("/workspace"), host()).err()
    };
    assert_eq!(bad(&|s| s.version = 2), Some(SnapshotError::Version(2)));
    for p in [
        "usr/bin/x",
        "/usr/../etc/x",
        "/usr/./bin/x",
        "/usr//bin/x",
        "/usr/bin/x/",
        "/",
    ] {
        assert_eq!(
            bad(&|s| s.entries.push(file(p, 0o755))),
            Some(SnapshotError::NotCanonical(p.into())),
            "{p}"
        );
    }
    assert_eq!(
        bad(&|s| s.entries.push(file("/usr/bin/ls", 0o755))),
        Some(SnapshotError::Duplicate("/usr/bin/ls".into()))
    );
    for d in ["/usr/bin/ls", "/bin", "/opt", "usr"] {
        assert_eq!(
            bad(&|s| s.complete.push(d.into())),
            Some(SnapshotError::NotADir(d.into())),
            "{d}"
        );
    }
}

#[test]
fn the_file_format_is_tagged_json() {
    let s = snapshot();
    let text = serde_json::to_string(&s).expect("json");
    assert!(
        text.contains(r#"{"path":"/bin","kind":"link","target":"usr/bin"}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Snapshot>(&text).ok(), Some(s));
    let unknown = r#"{"version":1,"complete":[],"entries":[{"path":"/x","kind":"socket"}]}"#;
    assert!(serde_json::from_str::<Snapshot>(unknown).is_err());
    let extra = r#"{"version":1,"complete":[],"entries":[],"trust":"me"}"#;
    assert!(serde_json::from_str::<Snapshot>(extra).is_err());
    let extra = r#"{"version":1,"complete":[],"entries":[{"path":"/x","kind":"file","mode":1,"setuid":true}]}"#;
    assert!(serde_json::from_str::<Snapshot>(extra).is_err());
}
