//! The autonomous profile's per-request caches (resolved paths, both Landlock layers, the
//! workspace scan) against changes made between two runs, through the real path: the profile
//! resolved and prepared per request, `cat` run under it. Each attack warms the caches with
//! two runs, makes its change (a path swapped for a symlink, a directory replaced, a bind
//! mount appearing), and the next run must not read what a freshly resolved profile refuses.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::profile::AUTONOMOUS_PROFILE;
use sanctum_guard::sandbox::{self, RunOutcome, RunSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A private key by content: the workspace scan denies the file wherever it appears.
const KEY: &str =
    "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET-KEY-BODY\n-----END OPENSSH PRIVATE KEY-----\n";

/// A HOME and a workspace under `box`, in a quiet directory (not /tmp, whose churn would
/// keep the caches cold), aged past the caches' racy window so the second run is a hit.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in [
            "box/home/.ssh",
            "box/ws/sub",
            "box/ws/notes",
            "keys",
            "box/home/.ssh/alt/home",
            "box/home/.ssh/alt/ws/sub",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (f, text) in [
            ("box/ws/README.md", "readme\n"),
            ("box/ws/sub/plain.txt", "plain\n"),
            ("box/ws/notes/data.txt", "SECRET-NOTES\n"),
            ("box/home/.ssh/id_ed25519", KEY),
            ("keys/id_ed25519", KEY),
            ("box/home/.ssh/alt/ws/README.md", "alt readme\n"),
            ("box/home/.ssh/alt/ws/sub/plain.txt", KEY),
        ] {
            std::fs::write(root.join(f), text).unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        Fixture { _dir: dir, root }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `cat path` under the autonomous profile resolved and prepared for this request.
    fn cat(&self, path: &Path) -> RunOutcome {
        let ws = self.p("box/ws");
        let spec = &sandbox::builtin_profiles()[AUTONOMOUS_PROFILE];
        let profile = spec
            .resolve_with(&ws, &self.p("box/home"), &sandbox::DenyList::default())
            .unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(sandbox::run(RunSpec {
                program: None,
                inherit_env: false,
                argv: vec!["/bin/cat".into(), path.to_string_lossy().into_owned()],
                cwd: ws,
                env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
                timeout: Duration::from_secs(20),
                output_cap: 64_000,
                profile,
            }))
            .unwrap()
    }
}

fn mv(f: &Fixture, from: &str, to: &str) {
    std::fs::rename(f.p(from), f.p(to)).unwrap();
}

/// Whether this process may mount (root in the guard's mount namespace).
fn can_mount() -> bool {
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let root = unsafe { libc::geteuid() } == 0;
    root && Command::new("mount")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Unmounts what an attack mounted, also when the test fails.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn bind(from: &Path, to: &Path) -> Mounted {
    let st = Command::new("mount")
        .arg("--bind")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(
        st.success(),
        "mount --bind {} {}",
        from.display(),
        to.display()
    );
    Mounted(to.to_path_buf())
}

/// One change between two runs, the path the next run reads (which a fresh profile refuses),
/// and a path that must still read as given (the caches must not deny the new state either).
struct Attack {
    name: &'static str,
    needs_mount: bool,
    change: fn(&Fixture) -> Option<Mounted>,
    read: &'static str,
    still: Option<(&'static str, &'static str)>,
}

const ATTACKS: &[Attack] = &[
    Attack {
        name: "a denied name of HOME made a symlink to a workspace directory",
        needs_mount: false,
        change: |f| {
            std::os::unix::fs::symlink(f.p("box/ws/notes"), f.p("box/home/.aws")).unwrap();
            None
        },
        read: "box/ws/notes/data.txt",
        still: Some(("box/ws/README.md", "readme\n")),
    },
    Attack {
        name: "the workspace's parent replaced whole, the old workspace given a secret",
        needs_mount: false,
        change: |f| {
            mv(f, "box", "box.old");
            std::fs::create_dir_all(f.p("box/ws")).unwrap();
            std::fs::create_dir_all(f.p("box/home")).unwrap();
            std::fs::write(f.p("box/ws/README.md"), "new readme\n").unwrap();
            std::fs::write(f.p("box.old/ws/sub/leak.txt"), "SECRET-OLD-WS\n").unwrap();
            None
        },
        read: "box.old/ws/sub/leak.txt",
        still: Some(("box/ws/README.md", "new readme\n")),
    },
    Attack {
        name: "a workspace directory swapped for a symlink to HOME's .ssh",
        needs_mount: false,
        change: |f| {
            mv(f, "box/ws/sub", "sub.old");
            std::os::unix::fs::symlink(f.p("box/home/.ssh"), f.p("box/ws/sub")).unwrap();
            None
        },
        read: "box/ws/sub/id_ed25519",
        still: Some(("box/ws/README.md", "readme\n")),
    },
    Attack {
        name: "a workspace directory replaced by one holding a private key",
        needs_mount: false,
        change: |f| {
            mv(f, "box/ws/sub", "sub.old");
            mv(f, "keys", "box/ws/sub");
            None
        },
        read: "box/ws/sub/id_ed25519",
        still: Some(("box/ws/README.md", "readme\n")),
    },
    Attack {
        name: "a bind mount over the workspace's parent, a key where a plain file was",
        needs_mount: true,
        // From inside a denied directory: a source that is a granted sibling of a walked
        // directory is the hole the ignored test below shows, cache or not.
        change: |f| Some(bind(&f.p("box/home/.ssh/alt"), &f.p("box"))),
        read: "box/ws/sub/plain.txt",
        still: Some(("box/ws/README.md", "alt readme\n")),
    },
    Attack {
        name: "a bind mount over HOME's .ssh of a workspace directory read before",
        needs_mount: true,
        change: |f| Some(bind(&f.p("box/ws/notes"), &f.p("box/home/.ssh"))),
        read: "box/home/.ssh/data.txt",
        still: Some(("box/ws/sub/plain.txt", "plain\n")),
    },
];

#[test]
fn changes_between_two_runs_never_let_a_cached_profile_read_what_a_fresh_one_refuses() {
    let mounts = can_mount();
    let mut ran = 0;
    for a in ATTACKS {
        if a.needs_mount && !mounts {
            eprintln!("skipped (cannot mount here): {}", a.name);
            continue;
        }
        let f = Fixture::new();
        for _ in 0..2 {
            let o = f.cat(&f.p("box/ws/README.md"));
            assert_eq!(o.stdout, "readme\n", "{}: warm-up {o:?}", a.name);
        }
        let mounted = (a.change)(&f);
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
        drop(mounted);
        ran += 1;
    }
    assert!(ran >= 4, "only {ran} attacks ran");
}

/// Not a cache problem (a fresh profile reads the key too), and not fixed here: a directory
/// reachable by two paths (a bind mount whose source is a sibling the limits layer grants
/// whole) gets that grant under both, as a hard-linked file would without `Linked`. Only a
/// process that may mount in the guard's namespace (root) can set this up.
#[test]
#[ignore = "known: a bind mount of a granted sibling inside the workspace is readable"]
fn a_granted_sibling_bind_mounted_into_the_workspace_stays_unreadable() {
    if !can_mount() {
        return;
    }
    let f = Fixture::new();
    let _m = bind(&f.p("keys"), &f.p("box/ws/sub"));
    let o = f.cat(&f.p("box/ws/sub/id_ed25519"));
    assert!(!o.success && !o.stdout.contains("SECRET"), "{o:?}");
}
