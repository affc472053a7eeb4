//! Tests of `ws_secrets.rs`: what the scan denies, what it grants, what it sees change.

use super::*;

#[test]
fn finds_nested_secrets_and_sees_new_ones() {
    let t = tempfile::tempdir().unwrap();
    let ws = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("a/b")).unwrap();
    std::fs::write(ws.join(".env"), "x").unwrap();
    std::fs::write(ws.join("a/b/.env.local"), "x").unwrap();
    std::fs::write(ws.join("a/.env.example"), "x").unwrap();
    std::fs::write(ws.join("a/b/ok.txt"), "x").unwrap();
    let s = secrets_in(&ws).unwrap();
    assert_eq!(*s, vec![ws.join(".env"), ws.join("a/b/.env.local")]);
    std::fs::write(ws.join("a/.env.prod"), "x").unwrap();
    let s = secrets_in(&ws).unwrap();
    assert!(s.contains(&ws.join("a/.env.prod")), "{s:?}");
}

#[test]
fn a_secret_written_into_a_cached_file_is_seen() {
    let t = tempfile::tempdir().unwrap();
    let ws = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("a")).unwrap();
    std::fs::write(ws.join("a/notes.txt"), "nothing\n").unwrap();
    std::thread::sleep(RACY + std::time::Duration::from_millis(50));
    assert!(secrets_in(&ws).unwrap().is_empty());
    let cached = secrets_in(&ws).unwrap();
    assert!(cached.is_empty());
    // No directory changes: only the file's content.
    let key = format!("-----BEGIN {}PRIVATE KEY-----\nMIIE\n", "EC ");
    std::fs::write(ws.join("a/notes.txt"), key).unwrap();
    assert_eq!(*secrets_in(&ws).unwrap(), vec![ws.join("a/notes.txt")]);
    // Without watches, the files are re-stat'ed instead.
    let mut j = super::super::ws_walk::scan(&ws).unwrap();
    j.watch = None;
    assert!(j.still_valid());
    std::fs::write(ws.join("a/notes.txt"), "nothing again\n").unwrap();
    assert!(!j.still_valid());
}

/// A link to a secret made in a directory granted whole and removed again leaves the
/// workspace as it was, but the watches' record of its names says so; a file made and
/// kept does not.
/// In each mode: fanotify's record, inotify's alone (a runtime that refuses fanotify),
/// and no watch at all (the directories' stamps).
#[test]
fn a_link_made_and_removed_is_a_hidden_change() {
    for mode in ["fanotify", "inotify", "stamps"] {
        let (_t, ws, out) = tree();
        std::fs::write(out.join("key"), "k").unwrap();
        let mut j = super::super::ws_walk::scan(&ws).unwrap();
        match mode {
            "fanotify" if j.name_watch.is_none() => {
                eprintln!("no fanotify group for this process: that mode skipped");
                continue;
            }
            "inotify" => j.name_watch = None,
            "stamps" => j.watch = None,
            _ => {}
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        if mode != "stamps" {
            assert_eq!(j.hidden_change(), None, "{mode}");
            std::fs::write(ws.join("a/kept.o"), "o").unwrap();
            assert_eq!(j.hidden_change(), None, "{mode}");
            assert!(!j.unchanged(), "{mode}");
        }
        std::fs::hard_link(out.join("key"), ws.join("a/race.txt")).unwrap();
        std::fs::remove_file(ws.join("a/race.txt")).unwrap();
        let why = j.hidden_change().unwrap_or_default();
        let named = if mode == "stamps" { "/a " } else { "race.txt" };
        assert!(why.contains(named), "{mode}: {why:?}");
    }
}

/// The red team's toggle, a hard link renamed over a file from outside and the file renamed
/// back: inotify reads the two renames as one (it merges them), fanotify as two; each
/// record sees a state hidden.
#[test]
fn a_file_renamed_over_and_back_is_a_hidden_change() {
    for mode in ["fanotify", "inotify"] {
        let (_t, ws, out) = tree();
        std::fs::write(out.join("key"), "k").unwrap();
        std::fs::write(ws.join("a/plain.txt"), "plain").unwrap();
        let mut j = super::super::ws_walk::scan(&ws).unwrap();
        assert!(!j.mount_root, "a temporary directory");
        match mode {
            "fanotify" if j.name_watch.is_none() => continue,
            "inotify" => j.name_watch = None,
            _ => {}
        }
        std::fs::hard_link(ws.join("a/plain.txt"), out.join("orig")).unwrap();
        std::fs::hard_link(out.join("key"), out.join("link")).unwrap();
        std::fs::rename(out.join("link"), ws.join("a/plain.txt")).unwrap();
        std::fs::rename(out.join("orig"), ws.join("a/plain.txt")).unwrap();
        let why = j.hidden_change().unwrap_or_default();
        assert!(why.contains("plain.txt"), "{mode}: {why:?}");
    }
}

/// A workspace beside an outside directory, on the same filesystem.
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let (ws, out) = (root.join("ws"), root.join("out"));
    for d in [ws.join("a"), ws.join("b"), out.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    (t, ws, out)
}

#[test]
fn every_name_of_a_file_linked_outside_or_to_a_secret_is_denied() {
    let (_t, ws, out) = tree();
    std::fs::write(out.join("key"), "k").unwrap();
    std::fs::hard_link(out.join("key"), ws.join("a/innocent.txt")).unwrap();
    std::fs::write(ws.join(".env"), "K=v").unwrap();
    std::fs::hard_link(ws.join(".env"), ws.join("b/copy.txt")).unwrap();
    std::fs::write(ws.join("a/pkg.js"), "x").unwrap();
    std::fs::hard_link(ws.join("a/pkg.js"), ws.join("b/pkg.js")).unwrap();
    std::fs::write(ws.join("b/plain.rs"), "x").unwrap();
    // A directory with a secret's name is denied whole; a file in it is a secret too.
    std::fs::create_dir_all(ws.join("b/.env/deep")).unwrap();
    std::fs::write(ws.join("b/.env/deep/key"), "k").unwrap();
    std::fs::hard_link(ws.join("b/.env/deep/key"), ws.join("a/key-copy")).unwrap();
    let found = super::super::ws_walk::scan(&ws).unwrap().secrets;
    assert_eq!(
        found,
        vec![
            ws.join(".env"),
            ws.join("a/innocent.txt"),
            ws.join("a/key-copy"),
            ws.join("b/.env"),
            ws.join("b/copy.txt")
        ],
        "links within the workspace stay readable"
    );
}

#[test]
fn a_name_replaced_after_the_scan_is_not_granted() {
    let (_t, ws, out) = tree();
    std::fs::write(ws.join("a/race.txt"), "plain").unwrap();
    std::fs::write(out.join("id_ed25519"), "k").unwrap();
    let j = super::super::ws_walk::scan(&ws).unwrap();
    let st = |p: &Path| nix::sys::stat::lstat(p).unwrap();
    assert!(j.grants(&ws.join("a/race.txt"), &st(&ws.join("a/race.txt"))));
    assert!(j.grants(&ws.join("a"), &st(&ws.join("a"))));
    // Replaced by a hard link to a secret outside: another inode, not granted.
    std::fs::remove_file(ws.join("a/race.txt")).unwrap();
    std::fs::hard_link(out.join("id_ed25519"), ws.join("a/race.txt")).unwrap();
    assert!(!j.grants(&ws.join("a/race.txt"), &st(&ws.join("a/race.txt"))));
    // A judged file renamed to a secret's name, or changed since: not granted.
    std::fs::write(ws.join("b/ok.txt"), "x").unwrap();
    let j = super::super::ws_walk::scan(&ws).unwrap();
    std::fs::rename(ws.join("b/ok.txt"), ws.join("b/.env")).unwrap();
    assert!(!j.grants(&ws.join("b/.env"), &st(&ws.join("b/.env"))));
    std::fs::rename(ws.join("b/.env"), ws.join("b/ok.txt")).unwrap();
    std::fs::write(ws.join("b/ok.txt"), "xy").unwrap();
    assert!(!j.grants(&ws.join("b/ok.txt"), &st(&ws.join("b/ok.txt"))));
}

#[test]
fn a_device_node_is_denied() {
    let (_t, ws, _out) = tree();
    let node = ws.join("a/disk");
    let made = std::process::Command::new("mknod")
        .args([node.to_str().unwrap(), "b", "7", "0"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("mknod needs CAP_MKNOD: skipped");
        return;
    }
    assert_eq!(
        super::super::ws_walk::scan(&ws).unwrap().secrets,
        vec![node]
    );
}
