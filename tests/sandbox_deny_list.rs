//! The sandbox half of the deny list: the deployment's own secrets (the guard's state dir,
//! OpenClaw's approvals document and SQLite store, token files) are unreadable in every
//! profile, wherever the deployment keeps them, including files that appear only later
//! (SQLite's -wal) and through links planted in the workspace.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::sandbox::{builtin_profiles, run, DenyList, RunOutcome};
use sanctum_test_support as support;
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

/// The deny list of a real guard is built from its own configuration: whatever it was given
/// (config and policy files, web TLS key, the node's token files) and whatever it keeps (its
/// state dir with audit key, head and inbox, node identity), and all of OpenClaw's state
/// outside the workspace (its agent databases too), even when the workspace lies inside
/// OpenClaw's state dir, as it does by default.
#[tokio::test]
async fn the_guards_own_files_from_its_configuration_are_unreadable() {
    use sanctum_guard::app::config::{Config, Overrides};
    use sanctum_guard::engine::judge::Judge;
    use sanctum_guard::openclaw::store::{Era, Store};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let oc = root.join("oc");
    let ws = oc.join("workspace");
    let state = root.join("guard-state");
    let etc = root.join("etc");
    for d in [
        &ws,
        &state.join("node"),
        &etc,
        &oc.join("agents/main/agent"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::create_dir_all(oc.join("credentials")).unwrap();
    std::fs::create_dir_all(oc.join("identity")).unwrap();
    let secrets = [
        state.join("audit.key"),
        state.join("audit.head"),
        state.join("inbox.db"),
        state.join("node/device.json"),
        etc.join("policy.toml"),
        etc.join("web.key"),
        etc.join("gateway.token"),
        etc.join("decider.token"),
        oc.join("agents/main/agent/openclaw-agent.sqlite"),
        oc.join("agents/main/agent/auth-profiles.json"),
        oc.join("credentials/oauth.json"),
        oc.join("identity/device.json"),
        oc.join("openclaw.json"),
        oc.join("something-new.json"),
    ];
    for s in &secrets {
        std::fs::write(s, SECRET).unwrap();
    }
    std::fs::write(
        etc.join("policy.toml"),
        format!("version = 1\n# {SECRET}\n"),
    )
    .unwrap();
    let config = etc.join("guard.toml");
    std::fs::write(
        &config,
        format!(
            "# {SECRET}\nstate_dir = {:?}\nopenclaw_state_dir = {:?}\nworkspace = {:?}\npolicy = {:?}\n",
            state,
            oc,
            ws,
            etc.join("policy.toml")
        ),
    )
    .unwrap();
    std::fs::write(ws.join("notes.txt"), "notes\n").unwrap();
    let mut cfg = Config::load(&Overrides {
        config: Some(config.clone()),
        web_key: Some(etc.join("web.key")),
        ..Default::default()
    })
    .unwrap();
    cfg.secret_files
        .extend([etc.join("gateway.token"), etc.join("decider.token")]);
    let judge = Judge::load(
        cfg.judge_config().unwrap(),
        Store::open(&oc, Era::Sqlite).unwrap(),
    )
    .unwrap();
    let mut targets = secrets.to_vec();
    targets.push(config);
    let home = std::path::Path::new("/nonexistent-home");
    for profile in ["read-only", "workspace-write"] {
        let resolved = builtin_profiles()[profile]
            .resolve_with(&ws, home, judge.deny_list())
            .unwrap();
        for t in &targets {
            let mut spec = run_spec(&Ws::new(), profile, &["/bin/cat", t.to_str().unwrap()]);
            spec.cwd = ws.clone();
            spec.profile = resolved.clone();
            let o = run(spec).await.unwrap();
            assert!(
                !o.success && !o.stdout.contains(SECRET),
                "{profile}: {} readable: {o:?}",
                t.display()
            );
        }
        let mut spec = run_spec(&Ws::new(), profile, &["/bin/cat", "notes.txt"]);
        spec.cwd = ws.clone();
        spec.profile = resolved.clone();
        let o = run(spec).await.unwrap();
        assert!(o.success, "{profile}: the workspace stays readable: {o:?}");
    }
}

/// A limit whose siblings are many (a busy `/tmp`, a large workspace) is granted sibling by
/// sibling; the walk must not hold a descriptor per sibling, or a process with the common
/// soft limit of 1024 descriptors cannot build the ruleset and every run fails (CI did).
#[test]
fn a_limit_among_thousands_of_siblings_builds_under_a_low_descriptor_limit() {
    let ws = Ws::new();
    for i in 0..3000 {
        std::fs::write(ws.path().join(format!("f{i}")), "ok").unwrap();
    }
    std::fs::write(ws.path().join(".env"), SECRET).unwrap();
    let sandbox = |script: &str| {
        std::process::Command::new("prlimit")
            .arg("--nofile=256:256")
            .arg(guard_bin())
            .args(["sandbox", "--workspace", ws.path().to_str().unwrap()])
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(ws.path())
            .output()
            .expect("prlimit (util-linux) is required")
    };
    let o = sandbox("cat f2999");
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout) == "ok",
        "{o:?}"
    );
    let o = sandbox("cat .env");
    assert!(
        !o.status.success() && !String::from_utf8_lossy(&o.stdout).contains(SECRET),
        "{o:?}"
    );
}
