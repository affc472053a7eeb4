//! The cached Landlock layers against the real kernel. Limits layer: a layer built before a
//! change in a listed directory must never make a denied path readable afterwards, and
//! siblings created later become readable once the cache notices the change. Base layer: a
//! write root replaced by another directory is granted as the new one, never the old.
//! Allow-list roots (the autonomous profile's `/etc` files, in a test-only fixture): a table
//! of swaps, replacements and renames between runs, and a rename race while runs start,
//! never let a run read what a fresh profile refuses.
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

/// A system-like fixture for the autonomous profile's allow-list, in a test-only root: an
/// `etc` whose files and directories are named read roots one by one (as `/etc`'s are), a
/// workspace, and secrets the profile refuses (`secret` is deny_read; `loose` is under no
/// root). Aged past the cache's racy window, so the cached base layer is vouched for by
/// its parent directory's stamp, the cheap path this suite attacks.
struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in [
            "etc/alternatives",
            "etc/ld.so.conf.d",
            "ws",
            "secret",
            "loose",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (f, text) in [
            ("etc/passwd", "root:x:0:0\n"),
            ("etc/hosts", "127.0.0.1 localhost\n"),
            ("etc/group", "root:x:0:\n"),
            ("etc/alternatives/ok", "alt\n"),
            ("etc/ld.so.conf.d/ok", "ld\n"),
            ("secret/key", "SECRET-DENIED\n"),
            ("loose/key", "SECRET-LOOSE\n"),
        ] {
            std::fs::write(root.join(f), text).unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        Fixture { _dir: dir, root }
    }

    fn p(&self, rel: &str) -> std::path::PathBuf {
        self.root.join(rel)
    }

    /// The autonomous profile's shape over the fixture: the system's program directories,
    /// the fixture's `etc` entries by name, the workspace; `secret` denied.
    fn spec(&self) -> ProfileSpec {
        let mut s = builtin_profiles()["autonomous-read"].clone();
        let etc = ["passwd", "hosts", "group", "alternatives", "ld.so.conf.d"];
        s.read = ["/usr", "/lib", "/lib64", "/bin", "/dev/null", "{workspace}"]
            .iter()
            .map(|x| x.to_string())
            .chain(
                etc.iter()
                    .map(|e| self.p("etc").join(e).display().to_string()),
            )
            .collect();
        s.write = vec!["/dev/null".into()];
        s.deny_read = vec![self.p("secret").display().to_string()];
        s
    }

    /// `cat path` under a freshly resolved and prepared plan, as each request does.
    fn cat(&self, path: &Path) -> RunOutcome {
        let profile = self.spec().resolve(&self.p("ws")).unwrap();
        let prepared = prepare(&profile).unwrap();
        output(
            &prepared,
            &self.p("ws"),
            &["/bin/cat", &path.to_string_lossy()],
        )
    }
}

/// One attack on the cached base layer: a change between two runs, and the path a run then
/// reads, which the fresh profile refuses (under no root, or denied).
struct Attack {
    name: &'static str,
    change: fn(&Fixture),
    read: &'static str,
    /// A root that must still be readable afterwards, with its content (the cache must not
    /// serve the old inode for a new one either).
    still: Option<(&'static str, &'static str)>,
}

fn mv(f: &Fixture, from: &str, to: &str) {
    std::fs::rename(f.p(from), f.p(to)).unwrap();
}

const ATTACKS: &[Attack] = &[
    Attack {
        name: "a file root swapped for a symlink to a denied secret",
        change: |f| {
            std::fs::remove_file(f.p("etc/hosts")).unwrap();
            std::os::unix::fs::symlink(f.p("secret/key"), f.p("etc/hosts")).unwrap();
        },
        read: "etc/hosts",
        still: Some(("etc/passwd", "root:x:0:0\n")),
    },
    Attack {
        name: "a directory root swapped for a symlink to a denied directory",
        change: |f| {
            mv(f, "etc/alternatives", "alt.old");
            std::os::unix::fs::symlink(f.p("secret"), f.p("etc/alternatives")).unwrap();
        },
        read: "etc/alternatives/key",
        still: Some(("etc/group", "root:x:0:\n")),
    },
    Attack {
        name: "a granted directory moved aside, replaced, and filled with a secret",
        change: |f| {
            mv(f, "etc/alternatives", "alt.old");
            std::fs::create_dir(f.p("etc/alternatives")).unwrap();
            std::fs::write(f.p("etc/alternatives/ok"), "new alt\n").unwrap();
            mv(f, "loose/key", "alt.old/key");
        },
        read: "alt.old/key",
        still: Some(("etc/alternatives/ok", "new alt\n")),
    },
    Attack {
        name: "a granted file moved aside and its name given to a new file",
        change: |f| {
            mv(f, "etc/passwd", "passwd.old");
            std::fs::write(f.p("etc/passwd"), "new:x:1:1\n").unwrap();
            std::fs::write(f.p("passwd.old"), "SECRET-LOOSE\n").unwrap();
        },
        read: "passwd.old",
        still: Some(("etc/passwd", "new:x:1:1\n")),
    },
    Attack {
        name: "the parent of the roots replaced whole, a secret put in the old one",
        change: |f| {
            mv(f, "etc", "etc.old");
            std::fs::create_dir_all(f.p("etc/alternatives")).unwrap();
            std::fs::create_dir(f.p("etc/ld.so.conf.d")).unwrap();
            std::fs::write(f.p("etc/hosts"), "new hosts\n").unwrap();
            mv(f, "loose/key", "etc.old/ld.so.conf.d/key");
        },
        read: "etc.old/ld.so.conf.d/key",
        still: Some(("etc/hosts", "new hosts\n")),
    },
    Attack {
        name: "a directory root made a hard-link farm of the denied secret's parent",
        change: |f| {
            std::fs::hard_link(f.p("secret/key"), f.p("loose/linked")).unwrap();
            mv(f, "etc/ld.so.conf.d", "ld.old");
            std::fs::create_dir(f.p("etc/ld.so.conf.d")).unwrap();
            mv(f, "loose/linked", "ld.old/key");
        },
        read: "ld.old/key",
        still: Some(("etc/hosts", "127.0.0.1 localhost\n")),
    },
];

#[test]
fn attacks_on_the_cached_allow_list_never_read_what_a_fresh_profile_refuses() {
    for a in ATTACKS {
        let f = Fixture::new();
        // Warm the cache: the second run is served from it.
        for _ in 0..2 {
            let o = f.cat(&f.p("etc/passwd"));
            assert!(o.success, "{}: warm-up {o:?}", a.name);
        }
        (a.change)(&f);
        let o = f.cat(&f.p(a.read));
        assert!(
            !o.success && !o.stdout.contains("SECRET"),
            "{}: read {} → {o:?}",
            a.name,
            a.read
        );
        if let Some((path, text)) = a.still {
            let o = f.cat(&f.p(path));
            assert_eq!(o.stdout, text, "{}: {path} after the change: {o:?}", a.name);
        }
    }
}

/// A directory root is moved aside and refilled with a secret in a loop while runs start: a
/// run prepared after move `k` never reads the secret put in any of the first `k` old
/// directories (only a stale layer could grant one; a fresh one grants what bears the name).
#[test]
fn a_rename_race_while_runs_start_never_serves_a_stale_layer() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let f = Arc::new(Fixture::new());
    let moved = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mutator = {
        let (f, moved, stop) = (f.clone(), moved.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut k = 0;
            while !stop.load(Ordering::SeqCst) {
                k += 1;
                let old = format!("old{k}");
                mv(&f, "etc/alternatives", &old);
                std::fs::create_dir(f.p("etc/alternatives")).unwrap();
                std::fs::write(f.p(&old).join("key"), "SECRET-RACE\n").unwrap();
                moved.store(k, Ordering::SeqCst);
                // Now and then a pause past the racy window, so that cached layers are also
                // vouched for by the parent's stamp, not only checked root by root.
                let pause = if k % 4 == 0 { 150 } else { 3 };
                std::thread::sleep(Duration::from_millis(pause));
            }
        })
    };
    let (mut runs, mut leaks) = (0, Vec::new());
    let started = std::time::Instant::now();
    while runs < 150 && started.elapsed() < Duration::from_secs(60) {
        let k = moved.load(Ordering::SeqCst);
        if k == 0 {
            continue;
        }
        // Every directory moved aside so far: any layer still granting one of them is stale.
        let olds: Vec<String> = (1..=k)
            .map(|j| f.p(&format!("old{j}/key")).display().to_string())
            .collect();
        let profile = f.spec().resolve(&f.p("ws")).unwrap();
        let prepared = prepare(&profile).unwrap();
        let mut argv = vec!["/bin/cat"];
        argv.extend(olds.iter().map(String::as_str));
        let o = output(&prepared, &f.p("ws"), &argv);
        runs += 1;
        if o.success || o.stdout.contains("SECRET") {
            leaks.push((k, o));
        }
    }
    stop.store(true, Ordering::SeqCst);
    mutator.join().unwrap();
    assert!(runs >= 50, "only {runs} runs");
    assert!(
        leaks.is_empty(),
        "{} of {runs} runs read a moved-aside root: {:?}",
        leaks.len(),
        leaks.first()
    );
}
