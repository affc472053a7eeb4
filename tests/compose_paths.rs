//! Every host path in compose/docker-compose.yml names a file where Docker Compose v2 (what
//! users run) looks for it, from any working directory: build contexts and Dockerfiles,
//! bind-mount sources, env files, secret and config files (as v2's own `config` resolves
//! them) and seccomp profiles, which `config` leaves as written and v2's `create` opens
//! relative to the project directory (the compose file's folder). A real v2 then creates the
//! stack in dry-run mode against a private podman API service, opening the profile itself.
//! docker-compose 1.29 (the tests' `compose_stack`) reads a profile from its working
//! directory: the compose file's comment tells which; checked here as written.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::compose_v2::{compose_v2_bin, PodmanApi};
use support::process::output_text;

fn compose_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("compose/docker-compose.yml")
}

/// A compose command with none of the caller's environment (the file's `${VAR:-default}`
/// take their defaults, as on a user's machine that sets none), run from `cwd`.
fn compose(bin: &Path, cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(bin)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", cwd)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()))
}

/// The seccomp profile a `security_opt` entry names (`seccomp=P` or `seccomp:P`), if any.
fn seccomp_profile(opt: &str) -> Option<&str> {
    let path = opt
        .strip_prefix("seccomp=")
        .or_else(|| opt.strip_prefix("seccomp:"))?;
    (path != "unconfined" && path != "builtin").then_some(path)
}

/// `(what, host path)` for every host path in v2's resolved model of the project in `dir`.
fn host_paths(model: &Value, dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let services = model["services"].as_object().expect("services");
    for (name, svc) in services {
        if let Some(ctx) = svc["build"]["context"].as_str() {
            out.push((format!("{name}: build context"), PathBuf::from(ctx)));
            if let Some(file) = svc["build"]["dockerfile"].as_str() {
                out.push((format!("{name}: dockerfile"), Path::new(ctx).join(file)));
            }
        }
        for v in svc["volumes"].as_array().into_iter().flatten() {
            if v["type"] == "bind" {
                let src = v["source"].as_str().expect("bind source");
                out.push((format!("{name}: bind mount"), PathBuf::from(src)));
            }
        }
        for e in svc["env_file"].as_array().into_iter().flatten() {
            let path = e["path"].as_str().or_else(|| e.as_str()).expect("env_file");
            out.push((format!("{name}: env file"), dir.join(path)));
        }
        for opt in svc["security_opt"].as_array().into_iter().flatten() {
            if let Some(p) = opt.as_str().and_then(seccomp_profile) {
                // v2's create: `project.RelativePath(p)`, the project directory joined.
                out.push((format!("{name}: seccomp profile"), dir.join(p)));
            }
        }
    }
    for kind in ["secrets", "configs"] {
        for (name, item) in model[kind].as_object().into_iter().flatten() {
            if let Some(file) = item["file"].as_str() {
                out.push((format!("{kind}.{name}: file"), dir.join(file)));
            }
        }
    }
    out
}

#[test]
fn every_host_path_exists_where_compose_v2_looks_for_it() {
    let bin = compose_v2_bin();
    let file = compose_file();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = compose(
        &bin,
        elsewhere.path(),
        &[],
        &["-f", file.to_str().unwrap(), "config", "--format", "json"],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let model: Value = serde_json::from_slice(&out.stdout).expect("v2 config JSON");
    let paths = host_paths(&model, file.parent().unwrap());
    for kind in [
        "build context",
        "dockerfile",
        "bind mount",
        "seccomp profile",
    ] {
        assert!(
            paths.iter().any(|(what, _)| what.ends_with(kind)),
            "no {kind} found in the resolved model: the walk misses a shape v2 prints\n{paths:?}"
        );
    }
    let missing: Vec<String> = paths
        .iter()
        .filter(|(_, p)| !p.exists())
        .map(|(what, p)| format!("{what}: {}", p.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "compose v2 resolves these to nothing:\n{}",
        missing.join("\n")
    );
}

#[test]
fn compose_v2_creates_the_stack_with_its_seccomp_profile() {
    let bin = compose_v2_bin();
    let api = PodmanApi::start();
    let file = compose_file();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = compose(
        &bin,
        elsewhere.path(),
        &[("DOCKER_HOST", &api.docker_host())],
        &[
            "--dry-run",
            "-p",
            "sanctumpaths",
            "-f",
            file.to_str().unwrap(),
            "create",
            "--no-build",
            "--pull",
            "never",
        ],
    );
    let text = output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("sanctumpaths-agent-1  Created"),
        "the agent (the service with the profile) was not created:\n{text}"
    );
}

/// A working directory, the environment and whether compose accepts the file there.
type Case<'a> = (&'a Path, &'a [(&'a str, &'a str)], bool);

/// docker-compose 1.29 reads the profile when it loads the file: from compose/, or with the
/// tests' override (podman's API cannot take a profile's text), and not from the root.
#[test]
fn docker_compose_1_reads_the_profile_as_the_comment_says() {
    let bin = Path::new("/usr/bin/docker-compose");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = compose_file();
    let cases: [Case; 4] = [
        (file.parent().unwrap(), &[], true),
        (
            root,
            &[("SANCTUM_SECCOMP_OPT", "seccomp=seccomp/agent-profile.json")],
            true,
        ),
        (root, &[("SANCTUM_SECCOMP_OPT", "no-new-privileges")], true),
        (root, &[], false),
    ];
    for (cwd, env, ok) in cases {
        let out = compose(
            bin,
            cwd,
            env,
            &["-f", file.to_str().unwrap(), "config", "-q"],
        );
        assert_eq!(
            out.status.success(),
            ok,
            "docker-compose 1 from {} with {env:?}:\n{}",
            cwd.display(),
            output_text(&out)
        );
    }
}
