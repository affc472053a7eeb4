//! The policy core is pure by construction: no file under guard/policy names an
//! I/O facility or a module outside the core. Facts about the filesystem reach it through
//! `policy::facts::Facts`; the environment and policy files are read by the host side.
//! Test modules (`#[cfg(test)]` to the end of the file) may use tempdirs and are skipped.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

/// What the core may not name.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::env",
    "std::process",
    "std::net",
    "std::os",
    "libc",
    "nix::",
    "tokio",
    "crate::sandbox",
    "crate::openclaw",
    "crate::socket",
    "crate::inbox",
    "crate::audit",
    "crate::config",
    "crate::host_facts",
    "crate::doctor",
    "File::open",
    "read_dir(",
    "Command::new",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every offending line of `text`, with its number, up to the first `#[cfg(test)]` (or
/// `#![cfg(test)]`).
fn offences(text: &str) -> Vec<(usize, String, &'static str)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        // Test code from here on (`#![cfg(test)]` opens a file that is a test module).
        if code.starts_with("#[cfg(test)]") || code.starts_with("#![cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        // Names inside a string or comment after the code still count: a macro or a path
        // could be built from them, and the core has no reason to spell them.
        for f in FORBIDDEN {
            let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
            // A whole name: `libc` but not `libcurl` (a curl option the table lists).
            let word_start = code.match_indices(f).any(|(at, _)| {
                let end = at + f.len();
                (at == 0 || !ident(code.as_bytes()[at - 1]))
                    && (!f.ends_with(|c: char| c.is_ascii_alphanumeric())
                        || end == code.len()
                        || !ident(code.as_bytes()[end]))
            });
            if word_start {
                out.push((i + 1, line.to_string(), *f));
            }
        }
    }
    out
}

#[test]
fn the_policy_core_does_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("guard/policy");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        for (n, line, what) in offences(&text) {
            bad.push(format!("{}:{n}: {what}: {}", f.display(), line.trim()));
        }
    }
    assert!(
        bad.is_empty(),
        "I/O or outside imports in the policy core:\n{}",
        bad.join("\n")
    );
}

/// The scanner itself finds what it should and skips test modules.
#[test]
fn the_scanner_finds_offences() {
    let text = "use std::fs;\nfn f() { std::env::var(\"X\"); }\nuse crate::sandbox::x;\n\
                // std::fs in a comment\nlet a = my_std::fs;\n#[cfg(test)]\nuse std::fs;\n";
    let got: Vec<usize> = offences(text).iter().map(|o| o.0).collect();
    assert_eq!(got, vec![1, 2, 3]);
    // A file that is a test module (`#![cfg(test)]` first) runs the shells it checks against.
    assert!(offences("#![cfg(test)]\nuse std::process::Command;\n").is_empty());
    assert_eq!(
        offences("//! doc\nuse std::process::Command;\n#![cfg(test)]\n").len(),
        1
    );
}

/// With a fake filesystem the core decides deterministically and sees only those facts:
/// a symlink into ~/.ssh that exists only in the fake is followed; a program exists only
/// where the fake says.
#[test]
fn decide_runs_on_fake_facts() {
    use sanctum_guard::policy::decide::{decide, DecideContext};
    use sanctum_guard::policy::explain::cli_request;
    use sanctum_guard::policy::facts::FakeFs;
    use sanctum_guard::policy::file::embedded_default;
    use sanctum_guard::policy::verdict::VerdictKind;
    use std::sync::Arc;

    let fs = FakeFs::new()
        .file("/usr/bin/cat", 0o755)
        .file("/usr/bin/ls", 0o755)
        .file("/fakehome/.ssh/id_rsa", 0o600)
        .link("/fakews/k", "/fakehome/.ssh")
        .file("/fakews/a.txt", 0o644);
    let home = Path::new("/fakehome");
    let ws = Path::new("/fakews");
    let policy = embedded_default().with_agent_home(home).expect("policy");
    let ctx = DecideContext::new(home, "/usr/bin", ws, Arc::new(fs));
    let kind = |text: &str| decide(&policy, &ctx, &cli_request(text, ws)).kind;
    assert_eq!(kind("cat a.txt"), VerdictKind::Allow);
    assert_eq!(kind("cat k/id_rsa"), VerdictKind::Deny);
    // `/fakews/k` exists on no real disk: only the facts could have said it is a symlink.
    assert_eq!(kind("ls /fakews/k/"), VerdictKind::Deny);
    // `cat` is not on this PATH in the fake world: not a trusted program.
    let other = DecideContext::new(home, "/usr/bin", ws, Arc::new(FakeFs::new()));
    assert_ne!(
        decide(&policy, &other, &cli_request("cat a.txt", ws)).kind,
        VerdictKind::Allow
    );
}

/// The request's own environment is judged by the same list as the shell text
/// (`policy::env`): formatting names pass, deployment names are replaced, anything else
/// gates and is named in the reasons.
#[test]
fn request_env_keys_are_judged_by_the_inert_list() {
    use sanctum_guard::policy::decide::{decide, DecideContext};
    use sanctum_guard::policy::explain::cli_request;
    use sanctum_guard::policy::facts::FakeFs;
    use sanctum_guard::policy::file::embedded_default;
    use sanctum_guard::policy::request::Action;
    use sanctum_guard::policy::verdict::VerdictKind;
    use std::sync::Arc;

    let fs = FakeFs::new().file("/usr/bin/ls", 0o755).dir("/h").dir("/w");
    let (home, ws) = (Path::new("/h"), Path::new("/w"));
    let policy = embedded_default().with_agent_home(home).expect("policy");
    let ctx = DecideContext::new(home, "/usr/bin", ws, Arc::new(fs));
    let with_keys = |keys: &[&str]| {
        let mut req = cli_request("ls", ws);
        if let Action::Exec(e) = &mut req.action {
            e.env_keys = keys.iter().map(|k| k.to_string()).collect();
        }
        decide(&policy, &ctx, &req)
    };
    assert_eq!(with_keys(&[]).kind, VerdictKind::Allow);
    assert_eq!(
        with_keys(&["LANG", "LC_ALL", "TZ"]).kind,
        VerdictKind::Allow
    );
    // PATH/HOME are the deployment's: the exec plan replaces the request's values.
    assert_eq!(with_keys(&["HOME", "PATH"]).kind, VerdictKind::Allow);
    for bad in ["LD_PRELOAD", "GIT_CONFIG_COUNT", "PAGER", "BASH_ENV", "FOO"] {
        let v = with_keys(&["LANG", bad]);
        assert_eq!(v.kind, VerdictKind::Ask, "{bad}");
        assert!(
            v.reasons.iter().any(|r| r.message.contains(bad)),
            "{bad}: {:?}",
            v.reasons
        );
    }
}
