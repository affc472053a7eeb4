//! The sandbox half of the deny list: the deployment's own secrets (the guard's state dir,
//! OpenClaw's approvals document and SQLite store, token files) are unreadable in every
//! profile, wherever the deployment keeps them, including files that appear only later
//! (SQLite's -wal) and through links planted in the workspace.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod support;
use sanctum_guard::sandbox::{builtin_profiles, run, DenyList, RunOutcome};
use std::path::{Path, PathBuf};
use support::sandbox::*;

const SECRET: &str = "SECRET-7f3a";

/// A deployment laid out like OpenClaw's state dir, a guard state dir, a token file, and
/// a workspace elsewhere.
struct Deployment {
    _dir: tempfile::TempDir,
    openclaw: PathBuf,
    guard_state: PathBuf,
    token: PathBuf,
    ws: Ws,
}

impl Deployment {
    fn new() -> Deployment {
        let dir = tempfile::tempdir().unwrap();
        let openclaw = dir.path().join("openclaw");
        let guard_state = dir.path().join("guard-state");
        std::fs::create_dir_all(openclaw.join("state")).unwrap();
        std::fs::create_dir_all(guard_state.join("inbox")).unwrap();
        for f in [
            openclaw.join("exec-approvals.json"),
            openclaw.join("state/openclaw.sqlite"),
            guard_state.join("audit.log"),
            guard_state.join("inbox/req.json"),
            dir.path().join("gateway.token"),
        ] {
            std::fs::write(f, SECRET).unwrap();
        }
        std::fs::write(openclaw.join("openclaw.json"), "{}").unwrap();
        Deployment {
            openclaw,
            guard_state,
            token: dir.path().join("gateway.token"),
            _dir: dir,
            ws: Ws::new(),
        }
    }

    fn deny(&self) -> DenyList {
        let mut d = DenyList::new([self.guard_state.clone(), self.token.clone()]).unwrap();
        d.push_openclaw_state(&self.openclaw).unwrap();
        d
    }

    async fn run(&self, profile: &str, script: &str) -> RunOutcome {
        let mut spec = run_spec(&self.ws, profile, &["/bin/sh", "-c", script]);
        spec.profile = builtin_profiles()[profile]
            .resolve_with(
                self.ws.path(),
                std::path::Path::new("/nonexistent-home"),
                &self.deny(),
            )
            .unwrap();
        run(spec).await.unwrap()
    }
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[tokio::test]
async fn deployment_secrets_unreadable_in_every_profile() {
    let d = Deployment::new();
    let targets = [
        d.openclaw.join("exec-approvals.json"),
        d.openclaw.join("state/openclaw.sqlite"),
        d.guard_state.join("audit.log"),
        d.guard_state.join("inbox/req.json"),
        d.token.clone(),
    ];
    for profile in ["read-only", "workspace-write"] {
        for t in &targets {
            let o = d.run(profile, &format!("cat {}", q(t))).await;
            assert!(
                !o.success && !o.stdout.contains(SECRET),
                "{profile} {t:?}: {o:?}"
            );
            assert!(
                o.stderr.contains("Permission denied"),
                "{profile} {t:?}: {o:?}"
            );
        }
        // Siblings stay readable. (Names inside a denied directory can still be listed:
        // ReadDir is inherited from the parent, which must stay listable; see SECURITY.md.)
        let o = d
            .run(
                profile,
                &format!("cat {}", q(&d.openclaw.join("openclaw.json"))),
            )
            .await;
        assert!(o.success, "{profile}: sibling unreadable: {o:?}");
    }
}

#[tokio::test]
async fn files_that_appear_later_and_planted_links_are_denied() {
    let d = Deployment::new();
    let wal = d.openclaw.join("state/openclaw.sqlite-wal");
    // Created after the profile was resolved, as SQLite does while the guard runs.
    let mut spec = run_spec(&d.ws, "read-only", &["/bin/cat", wal.to_str().unwrap()]);
    spec.profile = builtin_profiles()["read-only"]
        .resolve_with(
            d.ws.path(),
            std::path::Path::new("/nonexistent-home"),
            &d.deny(),
        )
        .unwrap();
    std::fs::write(&wal, SECRET).unwrap();
    let o = run(spec).await.unwrap();
    assert!(!o.success && !o.stdout.contains(SECRET), "{o:?}");
    let approvals = q(&d.openclaw.join("exec-approvals.json"));
    for script in [
        format!("ln -s {approvals} l && cat l"),
        format!("ln {approvals} h && cat h"),
        format!("cp {approvals} c && cat c"),
        format!(
            "cd {} && cat ../exec-approvals.json",
            q(&d.openclaw.join("state"))
        ),
    ] {
        let o = d.run("workspace-write", &script).await;
        assert!(!o.stdout.contains(SECRET), "{script}: {o:?}");
    }
}

#[test]
fn a_deny_path_around_the_workspace_is_refused() {
    let ws = Ws::new();
    let parent = ws.path().parent().unwrap().to_path_buf();
    let deny = DenyList::new([parent]).unwrap();
    for (name, spec) in builtin_profiles() {
        assert!(
            spec.resolve_with(ws.path(), std::path::Path::new("/nonexistent-home"), &deny)
                .is_err(),
            "{name}"
        );
    }
}
