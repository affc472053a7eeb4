//! An approved `workspace-write` run can create files at the workspace root
//! and use git normally, while every change to a repository's hooks and code-running config
//! (nested and new repositories too) and to the agent's `.openclaw`/`.sanctum` is restored and
//! reported in `RunOutcome.integrity`; links planted in the workspace never make the restore
//! write outside it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::sandbox::integrity::{Action, Change, Integrity};
use sanctum_guard::sandbox::{run, IntegrityEvent, RunOutcome, ScanLimits};
use sanctum_test_support as support;
use std::collections::BTreeMap;
use std::path::Path;
use support::process::git;
use support::sandbox::*;

async fn ww(ws: &Ws, script: &str) -> RunOutcome {
    let mut spec = run_spec(ws, "workspace-write", &["/bin/sh", "-c", script]);
    let node_bin = concat!(env!("CARGO_MANIFEST_DIR"), "/.cache/node/bin");
    let path = format!("{node_bin}:{}", std::env::var("PATH").unwrap_or_default());
    spec.env = BTreeMap::from([("PATH".to_string(), path)]);
    run(spec).await.unwrap()
}

/// The event for `rel` (relative to the workspace), if any.
fn event<'a>(o: &'a RunOutcome, ws: &Ws, rel: &str) -> Option<&'a IntegrityEvent> {
    let p = ws.path().canonicalize().unwrap().join(rel);
    o.integrity.iter().find(|e| e.path == p)
}

/// Every file below `dir` with its bytes (links as their target), to prove nothing changed.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            let key = p.strip_prefix(dir).unwrap().display().to_string();
            if ft.is_symlink() {
                out.insert(
                    key,
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                );
            } else if ft.is_dir() {
                out.insert(key, b"<dir>".to_vec());
                stack.push(p);
            } else {
                out.insert(key, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[tokio::test]
async fn approved_writes_create_files_at_the_root() {
    let ws = Ws::new();
    let o = ww(
        &ws,
        "echo hi > notes.txt && mkdir build && touch build/x && mv notes.txt n2.txt && rm file.txt",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("n2.txt")).unwrap(),
        "hi\n"
    );
    assert!(ws.path().join("build/x").exists() && !ws.path().join("file.txt").exists());
    assert!(o.integrity.is_empty(), "{:?}", o.integrity);
}

#[tokio::test]
async fn git_init_add_commit_and_npm_init_work() {
    let ws = Ws::new();
    std::fs::remove_dir_all(ws.path().join(".git")).unwrap();
    let o = ww(
        &ws,
        "git init -q && git add . && git -c user.name=a -c user.email=a@b commit -qm first \
         && echo more >> file.txt && git -c user.name=a -c user.email=a@b commit -qam second",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(git(ws.path(), &["log", "--format=%s"]), "second\nfirst\n");
    // git init's config and sample hooks are inert: nothing to report.
    assert!(o.integrity.is_empty(), "{:?}", o.integrity);
    let o = ww(&ws, "npm init -y >/dev/null 2>&1; test -f package.json").await;
    assert!(o.success, "npm init: {o:?}");
    // Inert config changes are kept (and reported as kept).
    let o = ww(
        &ws,
        "git remote add origin https://example.com/r.git && git config user.name Ann",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(git(ws.path(), &["config", "user.name"]), "Ann\n");
    let e = event(&o, &ws, ".git/config").expect("config change reported");
    assert_eq!((e.change, e.action), (Change::Modified, Action::Kept));
}

#[tokio::test]
async fn hooks_and_code_running_config_restored_and_reported() {
    let ws = Ws::new();
    let config = std::fs::read(ws.path().join(".git/config")).unwrap();
    let sample = std::fs::read(ws.path().join(".git/hooks/pre-commit.sample")).unwrap();
    for (script, rel, change, action) in [
        (
            "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout",
            ".git/hooks/post-checkout",
            Change::Added,
            Action::Removed,
        ),
        (
            "echo 'touch pwned' > .git/hooks/pre-commit.sample",
            ".git/hooks/pre-commit.sample",
            Change::Modified,
            Action::Restored,
        ),
        (
            "git config core.fsmonitor 'touch pwned'",
            ".git/config",
            Change::CodeRunningConfig,
            Action::Restored,
        ),
        (
            "printf '[core]\\n\\thooksPath = /tmp\\n' >> .git/config",
            ".git/config",
            Change::CodeRunningConfig,
            Action::Restored,
        ),
        (
            "git config include.path ../x.cfg && git config user.name Ann",
            ".git/config",
            Change::CodeRunningConfig,
            Action::Restored,
        ),
        ("rm .git/config", ".git/config", Change::Removed, Action::Restored),
        (
            "rm -rf .git/hooks",
            ".git/hooks",
            Change::Removed,
            Action::Restored,
        ),
        (
            "echo ../../elsewhere > .git/commondir",
            ".git/commondir",
            Change::Added,
            Action::Removed,
        ),
        (
            "printf '[core]\\n\\tpager = sh\\n' > .git/config.worktree",
            ".git/config.worktree",
            Change::Added,
            Action::Removed,
        ),
    ] {
        let o = ww(&ws, script).await;
        assert!(o.success, "{script}: {o:?}");
        let e = event(&o, &ws, rel).unwrap_or_else(|| panic!("{script}: {:?}", o.integrity));
        assert_eq!((e.change, e.action), (change, action), "{script}: {e:?}");
        assert_eq!(std::fs::read(ws.path().join(".git/config")).unwrap(), config, "{script}");
        assert_eq!(
            std::fs::read(ws.path().join(".git/hooks/pre-commit.sample")).unwrap(),
            sample,
            "{script}"
        );
        assert!(!ws.path().join(".git/hooks/post-checkout").exists(), "{script}");
        assert!(!ws.path().join(".git/commondir").exists(), "{script}");
        assert!(!ws.path().join(".git/config.worktree").exists(), "{script}");
    }
    // git still works and runs nothing planted.
    git(ws.path(), &["status"]);
    assert!(!ws.path().join("pwned").exists());
}

#[tokio::test]
async fn nested_new_and_bare_repositories_too() {
    let ws = Ws::new();
    let inner = ws.path().join("sub/inner");
    std::fs::create_dir_all(&inner).unwrap();
    git(&inner, &["init", "-q"]);
    let inner_config = std::fs::read(inner.join(".git/config")).unwrap();
    let o = ww(
        &ws,
        "cd sub/inner && git config core.fsmonitor 'touch pwned' && echo x > .git/hooks/pre-push \
         && cd ../.. && mkdir -p deep/new && cd deep/new && git init -q && git config core.hooksPath .h \
         && git config diff.a.textconv sh && git config user.email a@b \
         && echo evil > .git/hooks/post-merge && cd ../.. && git init -q --bare planted.git \
         && git --git-dir=planted.git config core.sshCommand 'sh -c evil'",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        std::fs::read(inner.join(".git/config")).unwrap(),
        inner_config
    );
    assert!(!inner.join(".git/hooks/pre-push").exists());
    let e = event(&o, &ws, "sub/inner/.git/config").expect("nested config");
    assert_eq!(e.action, Action::Restored);
    assert!(e.detail.contains("core.fsmonitor"), "{e:?}");
    // The new repository keeps its inert config and loses what runs code.
    let new = ws.path().join("deep/new");
    let e = event(&o, &ws, "deep/new/.git/config").expect("new repo config");
    assert_eq!(
        (e.change, e.action),
        (Change::CodeRunningConfig, Action::Sanitized)
    );
    assert!(e.detail.contains("core.hookspath") && e.detail.contains("diff.a.textconv"));
    assert_eq!(git(&new, &["config", "user.email"]), "a@b\n");
    assert!(git(&new, &["config", "--list", "--local"])
        .lines()
        .all(|l| !l.contains("hookspath") && !l.contains("textconv")));
    assert!(!new.join(".git/hooks/post-merge").exists());
    assert!(
        new.join(".git/hooks/pre-commit.sample").exists(),
        "samples stay"
    );
    let e = event(&o, &ws, "planted.git/config").expect("bare repo config");
    assert_eq!(e.action, Action::Sanitized);
    let bare = std::fs::read_to_string(ws.path().join("planted.git/config")).unwrap();
    assert!(!bare.to_lowercase().contains("sshcommand"), "{bare}");
}

/// Repositories git recognises that a simple check would miss, and redirections.
#[tokio::test]
async fn unusual_repositories_and_redirections() {
    let ws = Ws::new();
    let o = ww(
        &ws,
        // git init's HEAD replaced by a link, objects/refs by links (git follows them)
        "mkdir -p odd && cd odd && git init -q --bare r && cd r && mv objects ../o && ln -s ../o objects \
         && mv refs ../rf && ln -s ../rf refs && ln -sf refs/heads/main HEAD.new && mv HEAD.new HEAD \
         && git --git-dir=. config core.fsmonitor 'touch pwned' && cd ../.. \
         && mkdir -p myhooks && printf '#!/bin/sh\ntouch pwned\n' > myhooks/post-checkout \
         && chmod +x myhooks/post-checkout && git init -q linked && rm -rf linked/.git/hooks \
         && ln -s ../../myhooks linked/.git/hooks \
         && git init -q --bare .git/evil && git --git-dir=.git/evil config core.pager 'sh' \
         && git init -q --bare redirect && echo ../odd/r > redirect/commondir \
         && git worktree add -q wt 2>/dev/null || git worktree add wt",
    )
    .await;
    assert!(o.success, "{o:?}");
    let has = |rel: &str, change: Change, action: Action| {
        let e = event(&o, &ws, rel).unwrap_or_else(|| panic!("{rel}: {:?}", o.integrity));
        assert_eq!((e.change, e.action), (change, action), "{rel}: {e:?}");
    };
    has("odd/r/config", Change::CodeRunningConfig, Action::Sanitized);
    has("linked/.git/hooks", Change::Added, Action::Removed);
    has(
        ".git/evil/config",
        Change::CodeRunningConfig,
        Action::Sanitized,
    );
    has("redirect/commondir", Change::Added, Action::Removed);
    // git worktree add works; its commondir stays (reported), its .git file is reported.
    has(
        ".git/worktrees/wt/commondir",
        Change::Added,
        Action::Flagged,
    );
    has("wt/.git", Change::GitLink, Action::Flagged);
    assert!(!ws.path().join("linked/.git/hooks").exists());
    assert!(ws.path().join(".git/worktrees/wt/commondir").exists());
    git(&ws.path().join("wt"), &["status"]);
    git(&ws.path().join("linked"), &["status"]);
    assert!(!ws.path().join("pwned").exists() && !ws.path().join("linked/pwned").exists());
}

#[tokio::test]
async fn links_never_make_the_restore_write_outside() {
    let ws = Ws::new();
    // An outside repository and file the run must not be able to change through the restore.
    let outside_repo = ws.out().join("repo");
    std::fs::create_dir(&outside_repo).unwrap();
    git(&outside_repo, &["init", "-q"]);
    let outside_before = tree(ws.out());
    let hooks_before = tree(&ws.path().join(".git/hooks"));
    let out = ws.out_str();
    for script in [
        // hooks dir replaced by a link to an outside dir
        format!("rm -rf .git/hooks && ln -s {out} .git/hooks"),
        format!("rm -rf .git/hooks && ln -s {out}/repo/.git/hooks .git/hooks"),
        // a hook replaced by a link to an outside file
        format!("ln -sf {out}/secret .git/hooks/pre-commit.sample"),
        // config replaced by a link to an outside config
        format!("rm .git/config && ln -s {out}/repo/.git/config .git/config"),
        // .git itself replaced by a link to an outside repository
        format!("mv .git .git-old && ln -s {out}/repo/.git .git"),
        // a gitdir file pointing outside
        format!("mkdir -p w && echo 'gitdir: {out}/repo/.git' > w/.git"),
    ] {
        let o = ww(&ws, &script).await;
        assert!(o.success, "{script}: {o:?}");
        assert!(!o.integrity.is_empty(), "{script}: nothing reported");
        assert!(
            o.integrity.iter().all(|e| e.action != Action::Failed),
            "{script}: {:?}",
            o.integrity
        );
        assert_eq!(tree(ws.out()), outside_before, "{script}: wrote outside");
        // Put the workspace back for the next case (as the human would).
        if ws.path().join(".git-old").exists() {
            std::fs::remove_file(ws.path().join(".git")).unwrap();
            std::fs::rename(ws.path().join(".git-old"), ws.path().join(".git")).unwrap();
            continue;
        }
        assert!(!ws.path().join(".git/hooks").is_symlink(), "{script}");
        assert_eq!(
            tree(&ws.path().join(".git/hooks")),
            hooks_before,
            "{script}"
        );
        assert!(!ws.path().join(".git/config").is_symlink(), "{script}");
    }
    let o = ww(
        &ws,
        &format!("mv .git .git-old && ln -s {out}/repo/.git .git"),
    )
    .await;
    let kinds: Vec<(Change, Action)> = o.integrity.iter().map(|e| (e.change, e.action)).collect();
    assert!(
        kinds.contains(&(Change::RepositoryRemoved, Action::Flagged)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(Change::GitLink, Action::Flagged)),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn agent_config_trees_restored() {
    let ws = Ws::new();
    std::fs::create_dir(ws.path().join(".openclaw")).unwrap();
    std::fs::write(ws.path().join(".openclaw/workspace.json"), "{}").unwrap();
    let o = ww(
        &ws,
        "echo '{\"x\":1}' > .openclaw/workspace.json && echo y > .openclaw/new && mkdir .sanctum",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".openclaw/workspace.json")).unwrap(),
        "{}"
    );
    assert!(!ws.path().join(".openclaw/new").exists() && !ws.path().join(".sanctum").exists());
    assert_eq!(o.integrity.len(), 3, "{:?}", o.integrity);
}

#[test]
fn scan_bounds_are_reported_never_silent() {
    let ws = Ws::new();
    let deep = ws.path().join("a/b/c/d/e");
    std::fs::create_dir_all(&deep).unwrap();
    let root = ws.path().canonicalize().unwrap();
    for (limits, needle) in [
        (
            ScanLimits {
                max_entries: 3,
                ..ScanLimits::default()
            },
            "entries",
        ),
        (
            ScanLimits {
                max_depth: 3,
                ..ScanLimits::default()
            },
            "depth",
        ),
        (
            ScanLimits {
                max_total_bytes: 10,
                ..ScanLimits::default()
            },
            "bytes",
        ),
    ] {
        let events = Integrity::before(&root, limits).unwrap().after();
        let hit: Vec<_> = events
            .iter()
            .filter(|e| e.change == Change::ScanLimit)
            .collect();
        assert_eq!(hit.len(), 2, "before and after: {events:?}");
        assert!(
            hit[0].detail.contains(needle) && hit[0].action == Action::Flagged,
            "{hit:?}"
        );
    }
    assert!(Integrity::before(&root, ScanLimits::default())
        .unwrap()
        .after()
        .is_empty());
    // A workspace that cannot be scanned at all: the run is refused, not run unchecked.
    assert!(Integrity::before(&root.join("missing"), ScanLimits::default()).is_err());
}

/// `sanctum-guard sandbox` (humans, container entrypoints) runs the same check.
#[test]
fn cli_restores_and_reports_too() {
    let ws = Ws::new();
    let config = std::fs::read(ws.path().join(".git/config")).unwrap();
    let hooks = tree(&ws.path().join(".git/hooks"));
    let out = ws.out_str();
    for (script, needle) in [
        (
            "echo evil > .git/hooks/pre-push && echo ok".to_string(),
            "pre-push",
        ),
        (
            "echo '[core] hooksPath=/tmp' >> .git/config && echo ok".to_string(),
            "core.hookspath",
        ),
        ("rm -f .git/config && echo ok".to_string(), ".git/config"),
        (
            format!("rm -rf .git/hooks; ln -s {out} .git/hooks && echo ok"),
            ".git/hooks",
        ),
        ("mkdir .openclaw && echo ok".to_string(), ".openclaw"),
        ("echo x > .sanctum && echo ok".to_string(), ".sanctum"),
    ] {
        let o = sh(&ws, "workspace-write", &script);
        assert!(o.status.success() && stdout(&o) == "ok", "{script}: {o:?}");
        assert!(
            stderr(&o).contains("integrity") && stderr(&o).contains(needle),
            "{script}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(ws.path().join(".git/config")).unwrap(),
            config,
            "{script}"
        );
        assert_eq!(tree(&ws.path().join(".git/hooks")), hooks, "{script}");
        assert!(!ws.path().join(".openclaw").exists() && !ws.path().join(".sanctum").exists());
    }
    assert_eq!(
        std::fs::read_dir(ws.out()).unwrap().count(),
        1,
        "only `secret` outside"
    );
}
