//! Reviewer accounts as a test makes them: `sanctum-guard reviewers add` on a running
//! guard's state dir, and the login link it prints.
use super::process::guard_cli;
use super::web::Web;
use std::path::Path;

/// `reviewers add NAME --role ROLE [--identity ID]…`; returns its login link.
pub fn add(state: &Path, name: &str, role: &str, identities: &[&str]) -> String {
    let st = state.to_str().expect("utf8");
    let mut args = vec!["reviewers", "add", name, "--role", role, "--state-dir", st];
    for i in identities {
        args.extend_from_slice(&["--identity", i]);
    }
    let (code, out, err) = guard_cli(&args, &[]);
    assert_eq!(code, 0, "reviewers add {name}: {out}{err}");
    out.lines()
        .find(|l| l.contains("/login#t="))
        .unwrap_or_else(|| panic!("no link in: {out}"))
        .trim()
        .to_owned()
}

/// The token of a login link.
pub fn token(link: &str) -> String {
    link.rsplit_once("#t=").expect("token in link").1.to_owned()
}

/// `reviewers ARGS… --state-dir STATE`: exit code, stdout, stderr.
pub fn cli(state: &Path, args: &[&str]) -> (i32, String, String) {
    let st = state.to_str().expect("utf8");
    let mut all = vec!["reviewers"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--state-dir", st]);
    guard_cli(&all, &[])
}

/// A guard whose policy needs two approvers for `write`; keep the dir (the policy file) alive.
pub fn two_person_guard() -> (Web, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[approvals]\napprovals_required = { \"write\" = 2 }\n",
    )
    .expect("policy");
    let web = Web::start_configured(
        120_000,
        "",
        &["--policy", policy.to_str().expect("utf8")],
        "http",
    );
    (web, dir)
}
