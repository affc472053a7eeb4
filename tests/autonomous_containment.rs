//! Autonomous runs are contained by their category's promise: whatever the policy
//! lets run by itself runs under the profile its category names, and that profile stops the
//! effect of a command misclassified into the category. For every autonomous category of the
//! embedded policy, harmful probes run for real under its profile on the real kernel: no
//! write anywhere (workspace, tmp, home), no secret read, no network but what the profile
//! promises (HTTP ports for `http-read`), no signal to another process.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::file::embedded_default;
use sanctum_guard::policy::request::Status;
use sanctum_guard::sandbox::{self, NetworkSpec, RunOutcome, RunSpec};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

fn run(profile: &sandbox::ResolvedProfile, ws: &Path, script: &str) -> RunOutcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(sandbox::run(RunSpec {
        program: None,
        inherit_env: false,
        argv: vec!["/bin/bash".into(), "-c".into(), script.into()],
        cwd: ws.to_path_buf(),
        env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
        timeout: Duration::from_secs(20),
        output_cap: 64_000,
        profile: profile.clone(),
    }))
    .expect("sandbox set up")
}

/// A listener on 127.0.0.1 that is not one of `allowed`.
fn forbidden_listener(allowed: &[u16]) -> TcpListener {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        if !allowed.contains(&port) {
            return l;
        }
    }
}

#[test]
fn every_autonomous_category_is_contained_by_its_profile() {
    let policy = embedded_default();
    let autonomous: Vec<_> = policy
        .categories()
        .keys()
        .copied()
        .filter(|c| policy.status(*c) == Status::Autonomous)
        .collect();
    assert!(
        autonomous.len() >= 3,
        "the default has autonomous reads: {autonomous:?}"
    );
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("victim");
    for category in autonomous {
        let name = policy
            .profile(category)
            .unwrap_or_else(|| panic!("{category:?} runs by itself with no sandbox profile"));
        let spec = &policy.profiles()[name];
        let ws = tempfile::tempdir().expect("ws");
        let ws_path = ws.path().canonicalize().expect("canon");
        std::fs::write(ws_path.join(".env"), "API_TOKEN=s3cret\n").expect("env file");
        std::fs::write(ws_path.join("notes.txt"), "notes\n").expect("notes");
        let profile = spec.resolve(&ws_path).expect("resolve");
        let allowed: Vec<u16> = match &profile.network {
            NetworkSpec::None => Vec::new(),
            NetworkSpec::Ports(p) => p.clone(),
        };
        let listener = forbidden_listener(&allowed);
        let port = listener.local_addr().expect("addr").port();
        let outside = tempfile::tempdir().expect("outside");
        let probes: Vec<(&str, String)> = vec![
            ("write in the workspace", "echo x > written.txt".into()),
            ("append to a workspace file", "echo x >> notes.txt".into()),
            ("delete a workspace file", "rm -f notes.txt".into()),
            ("mkdir in the workspace", "mkdir newdir".into()),
            (
                "write outside",
                format!("echo x > {}/w", outside.path().display()),
            ),
            ("write /tmp", "echo x > /tmp/sg-containment-$$".into()),
            ("read the workspace .env", "cat .env".into()),
            ("read /etc/shadow", "cat /etc/shadow".into()),
            (
                "tcp to a port the profile does not promise",
                format!("exec 3<>/dev/tcp/127.0.0.1/{port}"),
            ),
            (
                "signal another process",
                format!("kill -TERM {}", victim.id()),
            ),
        ];
        for (what, script) in probes {
            let out = run(&profile, &ws_path, &script);
            assert_ne!(
                out.exit_code,
                Some(0),
                "{category:?} ({name}): {what} succeeded: {out:?}"
            );
        }
        assert!(ws_path.join("notes.txt").exists(), "{category:?}: deleted");
        assert!(!ws_path.join("written.txt").exists());
        assert!(!outside.path().join("w").exists());
        assert!(
            victim.try_wait().expect("wait").is_none(),
            "{category:?}: the victim was signalled"
        );
        // A read the category promises still works.
        let out = run(&profile, &ws_path, "cat notes.txt");
        assert_eq!(out.stdout, "notes\n", "{category:?}: {out:?}");
        // What the profile promises for the network holds too.
        if let Some(p) = allowed.first() {
            if let Ok(l) = TcpListener::bind(("127.0.0.1", *p)) {
                let out = run(
                    &profile,
                    &ws_path,
                    &format!("exec 3<>/dev/tcp/127.0.0.1/{p}"),
                );
                assert_eq!(
                    out.exit_code,
                    Some(0),
                    "{category:?}: promised port {p}: {out:?}"
                );
                drop(l);
            }
        }
    }
    let _ = victim.kill();
    let _ = victim.wait();
}
