//! Inode flags (chattr), watches on deny-read paths, and fileless exec.
//! Landlock governs opening files, not inode metadata, watches or descriptors without a
//! name, so each of these is closed in seccomp (or documented in SECURITY.md where closing
//! would break ordinary programs).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use std::process::Command;
use support::sandbox::*;

fn lsattr(path: &std::path::Path) -> String {
    let o = Command::new("lsattr").arg("-d").arg(path).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split(' ')
        .next()
        .unwrap_or("")
        .to_string()
}

/// chattr-style flags on a same-uid file the profile may only read (outside the roots), on
/// one it may write (the workspace), and on a directory: refused, and the flags unchanged.
#[test]
fn inode_flags_cannot_be_changed() {
    let ws = Ws::new();
    let outside = ws.out().join("secret");
    let inside = ws.path().join("file.txt");
    let dir = ws.path().join("sub");
    let before: Vec<String> = [&outside, &inside, &dir]
        .iter()
        .map(|p| lsattr(p))
        .collect();
    let mut failures = Vec::new();
    for opts in [RO, WW] {
        for target in [&outside, &inside, &dir] {
            for op in [
                "setflags",
                "setflags_noatime",
                "fssetxattr",
                "file_setattr",
                "setversion",
            ] {
                let got = probe_run(&ws, opts, "inode", &[op, target.to_str().unwrap()]);
                if got != "ERR EPERM" {
                    failures.push(format!("{opts:?} {op} {}: {got}", target.display()));
                }
            }
        }
        let o = sandbox(&ws, opts, &["chattr", "+d", outside.to_str().unwrap()]);
        if o.status.success() {
            failures.push(format!("{opts:?} chattr +d succeeded"));
        }
    }
    let after: Vec<String> = [&outside, &inside, &dir]
        .iter()
        .map(|p| lsattr(p))
        .collect();
    assert_eq!(before, after, "flags changed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A watch on a deny-read directory would report the names and timing of what happens in
/// it (inotify and fanotify need only read permission, which Landlock does not check;
/// dnotify needs a directory fd, which ReadDir inherited from the parent allows).
#[test]
fn no_watch_on_deny_read_paths() {
    let ws = Ws::new();
    let home = ws.out().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "KEY").unwrap();
    for opts in [RO, WW] {
        for (op, target, want) in [
            ("inotify", home.join(".ssh"), "ERR ENOSYS"),
            ("inotify", home.join(".ssh/id_ed25519"), "ERR ENOSYS"),
            ("fanotify", home.join(".ssh"), "ERR EPERM"),
            ("fanotify", home.join(".ssh/id_ed25519"), "ERR EPERM"),
            ("dnotify", home.join(".ssh"), "ERR EPERM"),
        ] {
            {
                let o = Command::new(guard_bin())
                    .args(["sandbox", "--workspace", ws.path().to_str().unwrap()])
                    .args(opts)
                    .arg("--")
                    .arg(probe())
                    .args(["inode", op, target.to_str().unwrap()])
                    .env("HOME", &home)
                    .output()
                    .unwrap();
                assert_eq!(stdout(&o), want, "{opts:?} {op} {}", target.display());
            }
        }
    }
    // tail -f, which uses inotify when it can, still follows a file (by polling).
    let o = sh(
        &ws,
        "read-only",
        "timeout 3 tail -f file.txt 2>/dev/null | head -n1",
    );
    assert_eq!(stdout(&o), "hello");
}

/// Fileless exec: no descriptor without a name is executable. memfd_create and memfd_secret
/// are refused, execveat(AT_EMPTY_PATH) is refused, and read-only has nowhere to create an
/// O_TMPFILE. (O_TMPFILE + exec through /proc/self/fd in a writable dir: SECURITY.md.)
#[test]
fn fileless_exec_refused() {
    let ws = Ws::new();
    for opts in [RO, WW] {
        for (op, arg, want) in [
            ("memfd_secret", "x", "ERR EPERM"),
            ("execveat_empty", "/bin/true", "ERR EPERM"),
        ] {
            assert_eq!(
                probe_run(&ws, opts, "inode", &[op, arg]),
                want,
                "{opts:?} {op}"
            );
        }
        assert_eq!(probe_run(&ws, opts, "memfd", &[]), "ERR EPERM");
    }
    for dir in ["/tmp", "/dev/shm", "/var/tmp"] {
        if std::path::Path::new(dir).is_dir() {
            for op in ["tmpfile_exec", "tmpfile_execveat"] {
                let got = probe_run(&ws, RO, "inode", &[op, dir]);
                assert!(got.starts_with("ERR "), "{op} {dir}: {got}");
            }
        }
    }
    // Ordinary exec of a file the run wrote still works.
    assert!(sh(&ws, "workspace-write", "cp /bin/true ./t && ./t")
        .status
        .success());
}
