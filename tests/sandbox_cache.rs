//! The cached Landlock layers against the real kernel. Limits layer: a layer built before a
//! change in a listed directory must never make a denied path readable afterwards, and
//! siblings created later become readable once the cache notices the change. Base layer: a
//! write root replaced by another directory is granted as the new one, never the old.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::sandbox::{
    builtin_profiles, prepare, run_prepared, Prepared, ProfileSpec, RunOutcome, RunSpec,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Read-only profile whose only secret is `{workspace}/.ssh`.
fn spec() -> ProfileSpec {
    let mut s = builtin_profiles()["read-only"].clone();
    s.deny_read = vec!["{workspace}/.ssh".into()];
    s
}

/// `cat path` confined by a freshly prepared plan (as `run` does per request).
fn cat(ws: &Path, path: &Path) -> RunOutcome {
    let profile = spec().resolve(ws).unwrap();
    let prepared = prepare(&profile).unwrap();
    output(&prepared, ws, &["/bin/cat", &path.to_string_lossy()])
}

/// Runs `argv` under an already prepared plan, as the socket's exec path does.
fn output(prepared: &Prepared, ws: &Path, argv: &[&str]) -> RunOutcome {
    let spec = RunSpec {
        program: None,
        inherit_env: true,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: ws.to_path_buf(),
        env: BTreeMap::new(),
        timeout: Duration::from_secs(30),
        output_cap: 200_000,
        profile: prepared.profile().clone(),
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_prepared(prepared, &spec))
        .unwrap()
}

fn denied(o: &RunOutcome) -> bool {
    !o.success && o.stderr.contains("Permission denied")
}

/// A workspace outside /tmp (whose constant churn would keep the layer uncached), old enough
/// for the layer built on it to be cached.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir(ws.path().join("keys.bak")).unwrap();
    std::fs::write(ws.path().join("keys.bak/id"), "PRIVATE KEY").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    ws
}

#[test]
fn renaming_a_granted_sibling_onto_a_denied_name_never_exposes_it() {
    let ws = workspace();
    let p = ws.path().canonicalize().unwrap();
    // Warm the cache: the sibling is readable, twice (the second use is a cache hit).
    for _ in 0..2 {
        let o = cat(&p, &p.join("keys.bak/id"));
        assert!(o.success, "{o:?}");
        assert_eq!(o.stdout, "PRIVATE KEY");
    }
    std::fs::rename(p.join("keys.bak"), p.join(".ssh")).unwrap();
    let o = cat(&p, &p.join(".ssh/id"));
    assert!(denied(&o), "{o:?}");
    assert!(o.stdout.is_empty());
}

#[test]
fn secret_created_after_the_cache_was_filled_stays_unreadable() {
    let ws = workspace();
    let p = ws.path().canonicalize().unwrap();
    for _ in 0..2 {
        assert!(cat(&p, &p.join("keys.bak/id")).success);
    }
    std::fs::create_dir(p.join(".ssh")).unwrap();
    std::fs::write(p.join(".ssh/id"), "NEW KEY").unwrap();
    let o = cat(&p, &p.join(".ssh/id"));
    assert!(denied(&o), "{o:?}");
    // A sibling created after the cache was filled is readable: the cache saw the change.
    std::fs::write(p.join("notes.txt"), "hello").unwrap();
    let o = cat(&p, &p.join("notes.txt"));
    assert!(o.success, "{o:?}");
    assert_eq!(o.stdout, "hello");
}

/// `sh -c script` under a profile that writes only `root` (no private tmp: its base layer is
/// cached between spawns).
fn write_into(ws: &Path, root: &Path, script: &str) -> RunOutcome {
    let mut spec = builtin_profiles()["read-only"].clone();
    spec.deny_read.clear();
    spec.write = vec![root.to_string_lossy().into_owned(), "/dev/null".into()];
    let profile = spec.resolve(ws).unwrap();
    assert!(profile.tmp.is_none(), "this profile must be cacheable");
    let prepared = prepare(&profile).unwrap();
    output(&prepared, ws, &["/bin/sh", "-c", script])
}

#[test]
fn replaced_write_root_is_granted_as_the_new_directory_only() {
    let ws = workspace();
    let p = ws.path().canonicalize().unwrap();
    let root = p.join("out");
    std::fs::create_dir(&root).unwrap();
    // Warm the cache: two spawns, the second a cache hit.
    for i in 0..2 {
        let o = write_into(&p, &root, &format!("echo {i} > {}/f{i}", root.display()));
        assert!(o.success, "{o:?}");
    }
    // Replace the root: the old directory moves aside, a new one takes its name.
    let old = p.join("old-out");
    std::fs::rename(&root, &old).unwrap();
    std::fs::create_dir(&root).unwrap();
    let o = write_into(&p, &root, &format!("echo new > {}/g", root.display()));
    assert!(o.success, "the new root must be writable: {o:?}");
    assert_eq!(std::fs::read_to_string(root.join("g")).unwrap(), "new\n");
    let o = write_into(&p, &root, &format!("echo stale > {}/h", old.display()));
    assert!(!o.success, "the old root must not be writable: {o:?}");
    assert!(!old.join("h").exists());
}
