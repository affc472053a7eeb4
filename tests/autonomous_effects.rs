//! Attack cases whose danger is an effect, run for real. Each command has its
//! effect when bash runs it unconfined (checked first, so the case is live), is never
//! autonomous by the policy (`policy explain`), and, if the policy were wrong, the autonomous
//! sandbox profile (`read-only`) still stops the effect.

// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::path::Path;
use std::process::Command;
use support::process::{git, guard_bin, guard_cli};

/// Is `text` autonomous in `cwd` by `policy explain` (exit 0)? With its report.
fn autonomous(cwd: &Path, text: &str) -> (bool, String) {
    let cwd = cwd.to_string_lossy();
    let (code, out, _) = guard_cli(&["policy", "explain", "--cwd", &cwd, "--", text], &[]);
    (code == 0, out)
}

/// Case name and bash text; `MARK` is replaced by the marker file the effect creates.
const CASES: &[(&str, &str)] = &[
    ("LESSOPEN preprocessor", "LESSOPEN='|touch MARK %s' less a.txt"),
    (
        "git config from the environment",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch MARK' git status",
    ),
    ("arithmetic on a subscript", "x='a[$(touch MARK)]'; [[ $x -eq 1 ]]"),
    ("PS4 with set -x", "PS4='$(touch MARK)'; set -x; ls"),
    (
        "alias with expand_aliases",
        "shopt -s expand_aliases\nalias ls='touch MARK'\nls",
    ),
    ("hash -p", "hash -p ./mark.sh cat; cat a.txt"),
];

/// A git workspace with `a.txt` and `mark.sh` (which creates `marker` in the cwd).
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    git(ws.path(), &["init", "-q"]);
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    std::fs::write(ws.path().join("mark.sh"), "#!/bin/sh\ntouch marker\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        ws.path().join("mark.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    ws
}

#[test]
fn effects_are_gated_and_contained() {
    for (name, text) in CASES {
        // Live: unconfined bash has the effect.
        let ws = workspace();
        let marker: std::path::PathBuf = ws.path().join("marker");
        let script = text.replace("MARK", &marker.to_string_lossy());
        let _ = Command::new("bash")
            .args(["-c", &script])
            .current_dir(ws.path())
            .env("PAGER", "cat")
            .output()
            .unwrap();
        assert!(marker.exists(), "{name}: the case has no effect unconfined");
        std::fs::remove_file(&marker).unwrap();

        // Never autonomous.
        let (allowed, report) = autonomous(ws.path(), &script);
        assert!(!allowed, "{name}: autonomous: {report}");

        // Contained by the autonomous profile even if it ran.
        let out = Command::new(guard_bin())
            .args(["sandbox", "--profile", "autonomous-read", "--workspace"])
            .arg(ws.path())
            .args(["--", "bash", "-c", &script])
            .current_dir(ws.path())
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(125), "{name}: sandbox not set up");
        assert!(!marker.exists(), "{name}: the effect happened in read-only");
    }
}

/// A secret committed once and removed stays in the object store, where a tag can name its
/// blob (and shadow the branch `main`). The path model sees only the working tree, so each
/// read below prints the secret for real and must not be autonomous; `HEAD` names a commit
/// and stays autonomous without printing it.
#[test]
fn reads_of_a_blob_through_a_ref_name_are_gated() {
    const SECRET: &str = "sk-live-4f1d9a";
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::create_dir(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/a.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join(".env"), format!("API_KEY={SECRET}\n")).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "one"]);
    let blob = git(dir, &["rev-parse", "HEAD:.env"]);
    git(dir, &["tag", "v1", blob.trim()]);
    git(dir, &["tag", "main", blob.trim()]);
    std::fs::remove_file(dir.join(".env")).unwrap();
    git(dir, &["commit", "-q", "-am", "two"]);

    let run = |text: &str| {
        let out = Command::new("bash")
            .args(["-c", text])
            .current_dir(dir)
            .env("PAGER", "cat")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for text in [
        "git show v1 --stat",
        "git show --name-only main",
        "git cat-file -p v1",
        "git cat-file blob main",
        "git diff v1 -- src/a.rs",
    ] {
        assert!(run(text).contains(SECRET), "{text}: prints no secret here");
        let (allowed, report) = autonomous(dir, text);
        assert!(!allowed, "{text}: autonomous: {report}");
    }
    for text in [
        "git show HEAD --stat",
        "git cat-file -p HEAD",
        "git diff HEAD~1 --stat",
    ] {
        assert!(!run(text).contains(SECRET), "{text}: prints the secret");
        let (allowed, report) = autonomous(dir, text);
        assert!(allowed, "{text}: not autonomous: {report}");
    }
}
