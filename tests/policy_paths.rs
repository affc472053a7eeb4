//! Sensitive paths against a real filesystem: a temp home with real symlinks.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::paths::{normalize, PathContext, SensitivePaths};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ctx: PathContext,
    sp: SensitivePaths,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home/node");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "k").unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    let ctx = PathContext {
        home: home.clone(),
        cwd: home.join("work"),
    };
    let sp = SensitivePaths::new(&home, &["~/.config/gh/".to_string()]).unwrap();
    Home {
        _dir: dir,
        home,
        ctx,
        sp,
    }
}

#[test]
fn normalize_expands_and_folds() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let ctx = PathContext {
        home: "/home/node".into(),
        cwd: "/w/sub".into(),
    };
    for (raw, want) in [
        ("~", "/home/node"),
        ("~/.ssh//id_rsa", "/home/node/.ssh/id_rsa"),
        ("$HOME/.aws/./credentials", "/home/node/.aws/credentials"),
        ("${HOME}/x", "/home/node/x"),
        ("../a/../b", "/w/b"),
        ("/../../etc/shadow", "/etc/shadow"),
        ("~root/.ssh", "/root/.ssh"),
        ("x", "/w/sub/x"),
        ("~+/x", "/w/sub/x"),
        ("~-/.ssh", "/home/node/.ssh"),
        ("~alice/x", "/home/alice/x"),
        ("$HOMEDIR/x", "/w/sub/$HOMEDIR/x"),
    ] {
        assert_eq!(normalize(raw, &ctx), PathBuf::from(want), "{raw}");
    }
}

#[test]
fn directory_rules_cover_descendants_file_rules_are_exact() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let h = home();
    let hit = |p: &str| h.sp.check(p, &h.ctx);
    assert_eq!(hit("~/.ssh").as_deref(), Some("~/.ssh/"));
    assert_eq!(hit("~/.ssh/").as_deref(), Some("~/.ssh/"));
    assert_eq!(hit("~/.ssh/deep/er/key").as_deref(), Some("~/.ssh/"));
    assert_eq!(hit("~/.netrc").as_deref(), Some("~/.netrc"));
    assert_eq!(hit("~/.netrc.bak"), None);
    assert_eq!(hit("~/.netrc/x"), None);
    assert_eq!(hit("~/.sshx"), None);
    assert_eq!(hit("~/.kube/config").as_deref(), Some("~/.kube/config"));
    assert_eq!(hit("~/.kube/cache"), None);
    assert_eq!(
        hit("~/.config/gh/hosts.yml").as_deref(),
        Some("~/.config/gh/")
    );
    assert_eq!(hit("/etc/shadow").as_deref(), Some("/etc/shadow"));
    assert_eq!(hit("/etc/passwd"), None);
    assert_eq!(hit("../.ssh/id_ed25519").as_deref(), Some("~/.ssh/"));
    // Case-sensitive on Linux.
    assert_eq!(hit("~/.SSH/id"), None);
}

#[test]
fn proc_environ_and_mem_for_every_process_and_thread() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let h = home();
    for p in [
        "/proc/1/environ",
        "/proc/self/environ",
        "/proc/self/mem",
        "/proc/thread-self/environ",
        "/proc/12/task/13/mem",
        "/proc/self/root/etc/shadow",
    ] {
        assert!(h.sp.matches(Path::new(p)).is_some(), "{p}");
    }
    assert_eq!(h.sp.matches(Path::new("/proc/self/status")), None);
    assert_eq!(h.sp.matches(Path::new("/proc/cpuinfo")), None);
}

#[test]
fn symlinks_to_sensitive_paths_are_caught() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let h = home();
    let work = h.home.join("work");
    symlink(h.home.join(".ssh"), work.join("keys")).unwrap();
    symlink(h.home.join(".ssh/id_ed25519"), work.join("k")).unwrap();
    // Dangling: writing through it creates a file under ~/.ssh.
    symlink(h.home.join(".ssh/new_key"), work.join("dangling")).unwrap();
    // Relative link, then `..` after it: the kernel resolves the link first.
    std::fs::create_dir_all(h.home.join(".ssh/sub")).unwrap();
    symlink("../.ssh/sub", work.join("rel")).unwrap();
    // A loop resolves to nothing and must not hang.
    symlink(work.join("loop"), work.join("loop")).unwrap();
    for p in [
        "keys/id_ed25519",
        "keys/missing/tail",
        "k",
        "dangling",
        "rel/../authorized_keys",
    ] {
        assert_eq!(h.sp.check(p, &h.ctx).as_deref(), Some("~/.ssh/"), "{p}");
    }
    assert_eq!(h.sp.check("loop", &h.ctx), None);
    assert_eq!(h.sp.check("plain.txt", &h.ctx), None);
}

#[test]
fn globs_that_may_expand_to_sensitive_paths() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let h = home();
    let g = |s: &str| h.sp.glob_may_match(s, &h.ctx);
    assert_eq!(g("~/.ss*/id_*").as_deref(), Some("~/.ssh/"));
    assert_eq!(g("~/.ss?").as_deref(), Some("~/.ssh/"));
    assert_eq!(g("~/.[a-z]sh/x").as_deref(), Some("~/.ssh/"));
    assert_eq!(g("~/*/id_rsa").as_deref(), Some("~/.ssh/"));
    assert_eq!(g("~/.net*").as_deref(), Some("~/.netrc"));
    assert_eq!(g("/proc/*/env*").as_deref(), Some("/proc/*/environ"));
    assert_eq!(g("/etc/sha*").as_deref(), Some("/etc/shadow"));
    assert!(g("~/.{ssh,aws}/x").is_some());
    assert_eq!(g("~/work/*.txt"), None);
    assert_eq!(g("/etc/pass*"), None);
    assert_eq!(g("~/.netrc/*"), None);
    // Through a symlinked literal prefix.
    symlink(h.home.clone(), h.home.join("work/h")).unwrap();
    assert_eq!(g("h/.ss*/x").as_deref(), Some("~/.ssh/"));
}

#[test]
fn directories_that_contain_sensitive_paths() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let h = home();
    let c = |s: &str| h.sp.contains_sensitive(&normalize(s, &h.ctx));
    assert!(c("~").is_some());
    assert!(c("/").is_some());
    assert!(c("/etc").is_some());
    assert!(c("/proc").is_some());
    assert!(c("~/.ssh/sub").is_some(), "inside a sensitive dir");
    assert_eq!(c("~/work"), None);
    assert_eq!(c("/usr"), None);
    // An existing file contains nothing.
    std::fs::write(h.home.join("work/f"), "x").unwrap();
    assert_eq!(c("~/work/f"), None);
    symlink(h.home.clone(), h.home.join("work/up")).unwrap();
    assert!(c("~/work/up").is_some(), "symlink to home");
    assert!(h
        .sp
        .glob_may_contain(
            "/home/*",
            &PathContext {
                home: "/home/node".into(),
                cwd: "/".into()
            }
        )
        .is_none());
    let sp = SensitivePaths::new(Path::new("/home/node"), &[]).unwrap();
    let ctx = PathContext {
        home: "/home/node".into(),
        cwd: "/".into(),
    };
    assert_eq!(
        sp.glob_may_contain("/home/*", &ctx).as_deref(),
        Some("~/.ssh/")
    );
    assert_eq!(sp.glob_may_contain("/usr/*", &ctx), None);
}

#[test]
fn extras_and_home_with_glob_characters() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let sp =
        SensitivePaths::new(Path::new("/home/a[1]*"), &["/srv/secret-*.key".to_string()]).unwrap();
    assert!(sp.matches(Path::new("/home/a[1]*/.ssh/x")).is_some());
    assert!(
        sp.matches(Path::new("/home/a1x/.ssh/x")).is_none(),
        "home is literal"
    );
    assert!(sp.matches(Path::new("/srv/secret-prod.key")).is_some());
    assert!(SensitivePaths::new(Path::new("/h"), &["relative/x".to_string()]).is_err());
    assert!(SensitivePaths::new(Path::new("/h"), &["/a/[".to_string()]).is_err());
}

#[test]
fn a_symlinked_home_is_matched_through_its_real_path() {
    // The real filesystem answers the core\'s questions (policy::facts).
    let _facts = sanctum_guard::host_facts::scope();
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("data/node");
    std::fs::create_dir_all(real.join(".ssh")).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let home = dir.path().join("home/node");
    symlink(&real, &home).unwrap();
    let sp = SensitivePaths::new(&home, &["~/.pgpass".to_string()]).unwrap();
    assert_eq!(
        sp.matches(&real.join(".ssh/id_rsa")).as_deref(),
        Some("~/.ssh/")
    );
    assert_eq!(
        sp.matches(&real.join(".pgpass")).as_deref(),
        Some("~/.pgpass")
    );
    assert_eq!(
        sp.matches(&home.join(".ssh/id_rsa")).as_deref(),
        Some("~/.ssh/")
    );
    // A link elsewhere that resolves under the real home.
    let other = dir.path().join("link");
    symlink(real.join(".ssh"), &other).unwrap();
    assert_eq!(sp.matches(&other.join("k")).as_deref(), Some("~/.ssh/"));
    assert_eq!(sp.matches(&real.join("notes")), None);
}

/// `/proc/self`, `/proc/thread-self` and `/dev/fd` are the agent's process: `cwd` is the
/// request's cwd (this test process runs elsewhere), `root` is `/`, and `..` is folded only
/// after those links are read, so it climbs from the request's cwd.
#[test]
fn proc_self_is_the_agents_process_not_the_guards() {
    let _facts = sanctum_guard::host_facts::scope();
    let h = home();
    let guard_cwd = std::env::current_dir().unwrap();
    assert!(!guard_cwd.starts_with(&h.ctx.cwd) && !h.ctx.cwd.starts_with(&guard_cwd));
    for p in [
        "/proc/self/cwd/../.ssh/id_ed25519",
        "/proc/thread-self/cwd/../.ssh/id_ed25519",
        "/dev/fd/../cwd/../.ssh/id_ed25519",
        "/proc/self/fd/../cwd/../.ssh",
        "/proc/self/task/1/cwd/../.ssh/x",
    ] {
        assert_eq!(h.sp.check(p, &h.ctx).as_deref(), Some("~/.ssh/"), "{p}");
    }
    let root = format!("/proc/self/root{}/.ssh/id_ed25519", h.home.display());
    assert_eq!(h.sp.check(&root, &h.ctx).as_deref(), Some("~/.ssh/"));
    // The request's cwd itself is no secret, whatever the guard's cwd holds.
    assert_eq!(h.sp.check("/proc/self/cwd/notes.txt", &h.ctx), None);
    assert_eq!(
        sanctum_guard::policy::paths::normalize("/proc/self/cwd/x", &h.ctx),
        h.ctx.cwd.join("x")
    );
    // Another process's cwd or open files: unknown, so sensitive, `..` or not.
    assert!(h.sp.check("/proc/1/cwd/../x", &h.ctx).is_some());
    assert!(h.sp.check("/proc/self/fd/3", &h.ctx).is_some());
}
