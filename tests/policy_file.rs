//! The policy file: embedded default, layering, accessors, and errors with line:column.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::file::{
    embedded_default, parse, Policy, PolicyError, ALL_CATEGORIES, DEFAULT_POLICY,
};
use sanctum_guard::policy::request::Status;
use sanctum_guard::policy::verdict::Category;
use std::path::Path;

fn err(text: &str) -> PolicyError {
    match parse(text, "test.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

/// Asserts the error is at `line:col` and its message contains every `needle`.
fn assert_err(text: &str, line: usize, col: usize, needles: &[&str]) {
    let e = err(text);
    let shown = e.to_string();
    assert_eq!(e.position(), Some((line, col)), "{shown}");
    assert!(
        shown.starts_with(&format!("test.toml:{line}:{col}: ")),
        "{shown}"
    );
    for n in needles {
        assert!(shown.contains(n), "{shown:?} lacks {n:?}");
    }
}

#[test]
fn embedded_default_is_the_sanctum_table() {
    let p = embedded_default();
    use Category::*;
    for c in [Read, Enumerate, Browse, HttpRead] {
        assert_eq!(p.status(c), Status::Autonomous, "{c:?}");
        let profile = if c == HttpRead {
            "autonomous-http-read"
        } else {
            "autonomous-read"
        };
        assert_eq!(p.profile(c), Some(profile), "{c:?}");
        assert!(!p.persist(c));
    }
    for c in [
        Write,
        Delete,
        RunCode,
        HttpWrite,
        PackageInstall,
        ProcessExit,
        ConfigChange,
        Unanalysable,
    ] {
        assert_eq!(p.status(c), Status::Gated, "{c:?}");
    }
    for c in [
        Privilege,
        PipeToShell,
        DestructiveGit,
        DestructiveDelete,
        SkillInstall,
        SensitivePath,
        ApprovalsOff,
    ] {
        assert_eq!(p.status(c), Status::Blocked, "{c:?}");
        assert!(!p.persist(c));
    }
    for c in [Write, Delete, RunCode, HttpWrite, PackageInstall] {
        assert!(p.persist(c), "{c:?}");
    }
    for c in [ProcessExit, ConfigChange, Unanalysable] {
        assert!(!p.persist(c), "{c:?}");
    }
    for c in [RunCode, PackageInstall, Write, Delete] {
        assert_eq!(p.profile(c), Some("workspace-write"), "{c:?}");
    }
    // The profiles an approved run gets are exactly the sandbox's built-ins: the default policy
    // must not redefine them (an earlier one did, silently dropping deny_read and protections).
    assert_eq!(p.profiles(), &sanctum_guard::sandbox::builtin_profiles());
    let ww = &p.profiles()["workspace-write"];
    assert!(ww.deny_read.iter().any(|d| d.ends_with("/.ssh")), "{ww:?}");
    // The workspace root stays creatable: git hooks/config and the agent's `.openclaw` are kept
    // by the integrity check around each run, not by Landlock (tests/sandbox_integrity.rs).
    assert!(ww.protected.is_empty(), "{ww:?}");
    assert!(ww.write.iter().any(|w| w == "{workspace}"), "{ww:?}");
    assert_eq!(p.command_override("make", &[]), None);
    assert_eq!(p.categories().len(), ALL_CATEGORIES.len());
    // Every category is written out in the file (it is the documentation).
    for c in ALL_CATEGORIES {
        let name = sanctum_guard::policy::file::category_name(c);
        assert!(
            DEFAULT_POLICY.contains(&format!("[categories.{name}]")),
            "{name}"
        );
    }
}

#[test]
fn user_file_layers_over_the_default() {
    let p = parse(
        r#"
version = 1
workspace = "/workspace"
[agent]
home = "/home/node"
path = "/usr/bin"
[categories.run-code]
status = "autonomous"
[[commands]]
program = "make"
args = ["test"]
category = "read"
[[commands]]
program = "/opt/tools/*"
category = "run-code"
[sensitive]
paths = ["~/.config/gh/"]
[profiles.net]
read = ["/usr"]
write = []
protected = []
network = { ports = [443] }
"#,
        "user.toml",
    )
    .unwrap();
    assert_eq!(p.status(Category::RunCode), Status::Autonomous);
    // Keys the file leaves out keep the default.
    assert_eq!(p.profile(Category::RunCode), Some("workspace-write"));
    assert!(p.persist(Category::RunCode));
    assert_eq!(p.status(Category::Write), Status::Gated);
    assert_eq!(p.workspace(), Some(Path::new("/workspace")));
    assert_eq!(p.agent_home(), Some(Path::new("/home/node")));
    assert_eq!(p.agent_path(), Some("/usr/bin"));
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        p.command_override("make", &args(&["test", "-j4"])),
        Some(Category::Read)
    );
    assert_eq!(
        p.command_override("/usr/bin/make", &args(&["test"])),
        Some(Category::Read)
    );
    assert_eq!(p.command_override("make", &args(&["install"])), None);
    assert_eq!(
        p.command_override("/opt/tools/x", &[]),
        Some(Category::RunCode)
    );
    assert_eq!(p.command_override("/opt/tools/sub/x", &[]), None);
    assert_eq!(p.command_override("x", &[]), None);
    let s = p.sensitive();
    assert_eq!(
        s.matches(Path::new("/home/node/.config/gh/hosts.yml"))
            .as_deref(),
        Some("~/.config/gh/")
    );
    assert!(
        s.matches(Path::new("/home/node/.ssh/id_rsa")).is_some(),
        "built-ins stay"
    );
    assert!(p.profiles().contains_key("net") && p.profiles().contains_key("read-only"));
}

#[test]
fn unknown_key_points_at_the_key() {
    assert_err(
        "version = 1\n[categories.read]\nstatuss = \"gated\"\n",
        3,
        1,
        &["statuss", "status"],
    );
    assert_err("version = 1\nwokspace = \"/w\"\n", 2, 1, &["wokspace"]);
}

#[test]
fn bad_enum_value_points_at_the_value() {
    assert_err(
        "version = 1\n[categories.write]\nstatus = \"sometimes\"\n",
        3,
        10,
        &["sometimes", "autonomous", "gated", "blocked"],
    );
    assert_err(
        "version = 1\n[categories.writing]\nstatus = \"gated\"\n",
        2,
        13,
        &["writing"],
    );
}

#[test]
fn wrong_type_points_at_the_value() {
    assert_err(
        "version = 1\n[categories.write]\npersist = \"yes\"\n",
        3,
        11,
        &["bool"],
    );
    assert_err("version = \"1\"\n", 1, 11, &["expected i64"]);
}

#[test]
fn sensitive_path_must_stay_blocked() {
    assert_err(
        "version = 1\n\n[categories.sensitive-path]\nstatus  =  \"gated\"\n",
        4,
        12,
        &["sensitive-path", "blocked"],
    );
    assert!(parse(
        "version = 1\n[categories.sensitive-path]\nstatus = \"blocked\"\n",
        "t"
    )
    .is_ok());
}

#[test]
fn secret_in_tree_is_never_autonomous_and_keeps_the_carve_out() {
    assert_err(
        "version = 1\n[categories.secret-in-tree]\nstatus = \"autonomous\"\n",
        3,
        10,
        &["secret-in-tree", "gated"],
    );
    assert_err(
        "version = 1\n[categories.secret-in-tree]\nprofile = \"workspace-write\"\n",
        3,
        11,
        &["secret-in-tree", "autonomous-read"],
    );
    assert_err(
        "version = 1\n[categories.secret-in-tree]\nprofile = \"\"\n",
        3,
        11,
        &["secret-in-tree", "unreadable"],
    );
    for ok in [
        "version = 1\n[categories.secret-in-tree]\nstatus = \"blocked\"\n",
        "version = 1\n[categories.secret-in-tree]\nprofile = \"autonomous-http-read\"\n",
    ] {
        assert!(parse(ok, "t").is_ok(), "{ok}");
    }
}

#[test]
fn commands_cannot_lift_blocked_programs() {
    assert_err(
        "version = 1\n[[commands]]\nprogram = \"sudo\"\ncategory = \"read\"\n",
        4,
        12,
        &["sudo", "read"],
    );
    assert_err(
        "version = 1\n[[commands]]\nprogram = \"/usr/bin/*\"\ncategory = \"run-code\"\n",
        4,
        12,
        &["run-code"],
    );
    // Making them stricter is fine.
    let p = parse(
        "version = 1\n[[commands]]\nprogram = \"bash\"\ncategory = \"pipe-to-shell\"\n",
        "t",
    )
    .unwrap();
    assert_eq!(p.command_override("bash", &[]), Some(Category::PipeToShell));
}

#[test]
fn other_rules_carry_positions() {
    assert_err("version = 2\n", 1, 11, &["version 2"]);
    assert_err(
        "version = 1\n[categories.read]\nprofile = \"nope\"\n",
        3,
        11,
        &["nope"],
    );
    assert_err("version = 1\nworkspace = \"rel\"\n", 2, 13, &["absolute"]);
    assert_err(
        "version = 1\n[sensitive]\npaths = [\"/ok\", \"relative\"]\n",
        3,
        17,
        &["relative"],
    );
    assert_err(
        "version = 1\n[[commands]]\nprogram = \"bin/x\"\ncategory = \"read\"\n",
        3,
        11,
        &["absolute"],
    );
    assert_err("version = 1\n[profiles.x]\nread = []\n", 2, 1, &["write"]);
    assert_err("version = 1\nx = [\n", 2, 6, &[]);
}

/// The host side reads the file (the core parses text only).
fn load(path: &Path) -> Result<Policy, PolicyError> {
    sanctum_guard::app::config::load_policy(Some(path))
}

#[test]
fn load_reads_files_and_reports_io_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        "version = 1\n[categories.delete]\nstatus = \"blocked\"\n",
    )
    .unwrap();
    let p: Policy = load(&path).unwrap();
    assert_eq!(p.status(Category::Delete), Status::Blocked);
    assert_eq!(p.origin(), path.display().to_string());
    let e = load(&dir.path().join("missing.toml")).unwrap_err();
    assert!(matches!(e, PolicyError::Io { .. }), "{e}");
}

/// The compose deployment's policy is valid, and what it adds is in force.
#[test]
fn compose_policy_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("compose/policy.toml");
    let p = load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.workspace(), Some(Path::new("/workspace")));
    assert!(p
        .sensitive()
        .matches(Path::new("/run/secrets/openai_key"))
        .is_some());
    assert!(p
        .sensitive()
        .matches(Path::new("/home/node/.ssh/id_ed25519"))
        .is_some());
}
