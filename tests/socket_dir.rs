//! A socket path in a directory the guard did not create. The guard must
//! never chmod/chown it; an unsafe location is refused with an error naming the path and
//! why; a safe shared one (sticky `/tmp`) is used as it is. Through the real `serve`.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use support::socket::*;

const TOKEN: &str = "dir-test-token-0123456789abcdef0";

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).expect("stat").mode() & 0o7777
}

/// A fresh directory under /tmp with `mode` (and owner `uid`, if given).
fn shared_dir(tag: &str, mode: u32, uid: Option<u32>) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sg-{tag}-{}", &fresh_nonce()[..8]));
    std::fs::create_dir(&d).expect("mkdir");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).expect("chmod");
    if let Some(u) = uid {
        nix::unistd::chown(&d, Some(nix::unistd::Uid::from_raw(u)), None).expect("chown");
    }
    d
}

#[test]
fn sticky_shared_dirs_are_used_unchanged() {
    // Directly in /tmp (root-owned, 1777), and in a sticky world-writable dir of ours.
    let tmp_mode = mode(Path::new("/tmp"));
    let sticky = shared_dir("sticky", 0o1777, None);
    for sock in [
        std::env::temp_dir().join(format!("sg-{}.sock", fresh_nonce())),
        sticky.join("exec-approvals.sock"),
    ] {
        let dir = sock.parent().expect("parent").to_owned();
        let before = (mode(&dir), std::fs::metadata(&dir).expect("stat").uid());
        let w = World::with_socket(NEW, TOKEN, &[], Some(&sock));
        let mut serve = Serve::start(&w, &[], &[]);
        let r = raw_exchange(&sock, request_line(TOKEN, "t", "ls").as_bytes(), true);
        assert_eq!(first_json(&r)["decision"], "allow-once", "{r}");
        assert_eq!(mode(&sock) & 0o777, 0o600, "the socket itself is 0600");
        let after = (mode(&dir), std::fs::metadata(&dir).expect("stat").uid());
        assert_eq!(before, after, "{} was changed", dir.display());
        serve.stop();
        assert!(!sock.exists(), "the socket is removed at exit");
    }
    assert_eq!(mode(Path::new("/tmp")), tmp_mode);
    let _ = std::fs::remove_dir_all(&sticky);
}

#[test]
fn an_owned_dir_with_a_wider_mode_is_not_narrowed() {
    // Before the fix the guard chmod-ed an existing 0755 directory to 0700.
    let d = shared_dir("own755", 0o755, None);
    let sock = d.join("s.sock");
    let w = World::with_socket(NEW, TOKEN, &[], Some(&sock));
    let mut serve = Serve::start(&w, &[], &[]);
    assert_eq!(mode(&d), 0o755);
    serve.stop();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn unsafe_locations_are_refused_and_left_alone() {
    let real = shared_dir("real", 0o700, None);
    let link = std::env::temp_dir().join(format!("sg-link-{}", fresh_nonce()));
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let cases: Vec<(&str, PathBuf, PathBuf, &str)> = {
        let ww = shared_dir("ww", 0o777, None);
        let gw = shared_dir("gw", 0o770, None);
        let foreign = shared_dir("foreign", 0o755, Some(65534));
        let foreign_parent = shared_dir("fparent", 0o755, Some(65534));
        vec![
            (
                "world-writable, no sticky bit",
                ww.join("s.sock"),
                ww,
                "without the sticky bit",
            ),
            (
                "group-writable, no sticky bit",
                gw.join("s.sock"),
                gw,
                "without the sticky bit",
            ),
            (
                "owned by another uid",
                foreign.join("s.sock"),
                foreign,
                "owned by uid 65534",
            ),
            (
                "a missing dir under another uid's dir",
                foreign_parent.join("sub/s.sock"),
                foreign_parent,
                "owned by uid 65534",
            ),
            (
                "a symlink in the path",
                link.join("s.sock"),
                link.clone(),
                "is a symlink",
            ),
        ]
    };
    for (name, sock, dir, why) in &cases {
        let before = std::fs::symlink_metadata(dir).expect("stat");
        let w = World::with_socket(NEW, TOKEN, &[], Some(sock));
        let (code, err) = Serve::start_fails(&w, &[]);
        assert_ne!(code, 0, "{name}: serve must refuse: {err}");
        assert!(
            err.contains(&dir.display().to_string()) && err.contains(why),
            "{name}: the error names the path and why: {err}"
        );
        let after = std::fs::symlink_metadata(dir).expect("stat");
        assert_eq!(
            (before.mode(), before.uid(), before.gid()),
            (after.mode(), after.uid(), after.gid()),
            "{name}: {} was changed",
            dir.display()
        );
        assert!(!sock.exists(), "{name}: no socket was created");
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::remove_dir_all(&real);
}

#[test]
fn a_missing_directory_is_created_0700() {
    let base = shared_dir("base", 0o755, None);
    let sock = base.join("a/b/s.sock");
    let w = World::with_socket(NEW, TOKEN, &[], Some(&sock));
    let mut serve = Serve::start(&w, &[], &[]);
    assert_eq!(mode(&base.join("a/b")), 0o700);
    assert_eq!(mode(&base), 0o755, "the existing parent is untouched");
    serve.stop();
    let _ = std::fs::remove_dir_all(&base);
}
