//! The workspace secrets of the `autonomous-read` profile on the real kernel: files that are
//! secrets by content or by a telling name stay unreadable while ordinary files (a README,
//! code, a `.env.example` of placeholders, a lockfile of hashes) stay readable; and a hard link
//! toggled by a process outside the guard between the scan and the grants is never granted.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::profile::AUTONOMOUS_PROFILE;
use sanctum_guard::sandbox::{self, RunOutcome, RunSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Resolves the autonomous profile for `ws` (as the engine does per request) and runs
/// `script` under it.
fn run(rt: &tokio::runtime::Runtime, ws: &Path, home: &Path, script: &str) -> RunOutcome {
    let spec = &sandbox::builtin_profiles()[AUTONOMOUS_PROFILE];
    let profile = spec
        .resolve_with(ws, home, &sandbox::DenyList::default())
        .expect("resolve");
    rt.block_on(sandbox::run(RunSpec {
        program: None,
        inherit_env: false,
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        cwd: ws.to_path_buf(),
        env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
        timeout: Duration::from_secs(20),
        output_cap: 64_000,
        profile,
    }))
    .expect("sandbox set up")
}

/// A root with a HOME and a workspace beside it, on one filesystem (links can join them).
fn root() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().expect("root");
    let root = t.path().canonicalize().expect("canon");
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(home.join(".ssh")).expect("home");
    std::fs::create_dir_all(&ws).expect("ws");
    (t, home, ws)
}

/// Toggles `ws/<dir>/race.txt` between a plain file and a hard link to `secret` until
/// stopped, atomically (a rename over the name), as a process outside the guard would.
fn toggler(
    ws: PathBuf,
    dir: &str,
    secret: PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let target = ws.join(dir).join("race.txt");
    // Staged beside the workspace, on the same filesystem: rename(2) needs that.
    let stage = ws.parent().expect("parent").join("stage");
    std::fs::create_dir_all(&stage).expect("stage");
    std::thread::spawn(move || {
        let mut flips = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let link = stage.join("link");
            let _ = std::fs::remove_file(&link);
            std::fs::hard_link(&secret, &link).expect("link");
            std::fs::rename(&link, &target).expect("rename link");
            let plain = stage.join("plain");
            std::fs::write(&plain, "plain\n").expect("plain");
            std::fs::rename(&plain, &target).expect("rename plain");
            flips += 1;
        }
        flips
    })
}

/// How many of `n` autonomous `cat race.txt` runs printed the secret while a thread outside
/// the guard toggled `race.txt` (in `dir` of the workspace) into a hard link to it.
fn race_leaks(dir: &str, beside_a_secret: bool, n: usize) -> (usize, usize, u64) {
    let (_t, home, ws) = root();
    let secret = home.join(".ssh/id_ed25519");
    std::fs::write(&secret, "MARK-race-5b1e\n").expect("secret");
    std::fs::create_dir_all(ws.join(dir)).expect("dir");
    std::fs::write(ws.join("README.md"), "readme\n").expect("readme");
    if beside_a_secret {
        // A directory with a secret in it is listed by the grants, entry by entry.
        std::fs::write(ws.join(dir).join(".env"), "K=v\n").expect("env");
    }
    std::fs::write(ws.join(dir).join("race.txt"), "plain\n").expect("race");
    let stop = Arc::new(AtomicBool::new(false));
    let flips = toggler(ws.clone(), dir, secret, Arc::clone(&stop));
    let rt = runtime();
    let script = format!("cat {dir}/race.txt");
    let (mut leaked, mut plain) = (0, 0);
    for _ in 0..n {
        let out = run(&rt, &ws, &home, &script);
        if out.stdout.contains("MARK-race") {
            leaked += 1;
        } else if out.stdout == "plain\n" {
            plain += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flips.join().expect("toggler");
    (leaked, plain, flips)
}

/// The red team's race: the scan judged `race.txt` a plain file, the grants then opened the
/// name again and granted what it named by then, the hard link to `~/.ssh/id_ed25519`.
/// Only inodes the scan judged are granted now.
#[test]
fn a_hard_link_toggled_between_scan_and_grant_is_never_granted() {
    let n = std::env::var("SANCTUM_RACE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let (leaked, plain, flips) = race_leaks(".", true, n);
    eprintln!("race beside a secret: {leaked} of {n} runs leaked, {plain} read the plain file, {flips} flips");
    assert!(flips > 100, "the toggler barely ran: {flips}");
    assert_eq!(leaked, 0, "{leaked} of {n} runs printed the secret");
}

/// The same race in a directory with no secret in it, which the limits layer grants whole
/// (see SECURITY.md): a measurement of what is left, not a check.
#[test]
#[ignore = "a measurement, not a check"]
fn race_in_a_directory_granted_whole() {
    let n = 300;
    let (leaked, plain, flips) = race_leaks("sub", false, n);
    eprintln!(
        "race in a directory granted whole: {leaked} of {n} leaked, {plain} plain, {flips} flips"
    );
}

/// The red team's files inside the workspace, secrets by content or by a telling name and
/// on no name list before: each unreadable by an autonomous run, while ordinary files stay
/// readable. Fake values shaped like real ones (made at run time, so no scanner of this
/// repository trips on this file).
#[test]
fn secrets_by_content_and_telling_names_are_unreadable() {
    let (_t, home, ws) = root();
    let write = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(p, text).expect("write");
    };
    let mark = "MARK-c0n7";
    let secret_aws = format!("wJalrXUtnFEMI/K7MDENG/bPxRfiCYz{}", "Q8h3kLm2P");
    let begin = format!("-----BEGIN {}PRIVATE KEY-----", "RSA ");
    let secrets: Vec<(&str, String)> = vec![
        (
            ".aws/credentials",
            format!("# {mark}\n[default]\naws_access_key_id = AKIAZ7QW3ERT5YUI2OPL\n"),
        ),
        (
            "kubeconfig.yaml",
            format!("# {mark}\napiVersion: v1\nkind: Config\n"),
        ),
        (
            "config/database.yml",
            format!("# {mark}\nproduction:\n  adapter: postgresql\n  password: Tr0ub4dor-9x\n"),
        ),
        (
            "deploy.key",
            format!("{begin}\n{mark}MIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"),
        ),
        (
            "certs/server.pem",
            format!("{begin}\n{mark}MIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"),
        ),
        (
            "settings.py",
            format!("# {mark}\nAWS_SECRET_ACCESS_KEY = \"{secret_aws}\"\n"),
        ),
        (
            "notes.txt",
            format!(
                "{mark} token ghp_{}\n",
                "Zq7Lm2Np4Rt6Vx8Bd1Fh3Jk5Mw9Sy0Cg2Et4Q"
            ),
        ),
    ];
    for (rel, text) in &secrets {
        write(rel, text);
    }
    let lock = r#"{"name":"app","lockfileVersion":3,"packages":{"node_modules/@aws-sdk/credential-provider-env":{"version":"3.658.1","resolved":"https://registry.npmjs.org/@aws-sdk/credential-provider-env/-/credential-provider-env-3.658.1.tgz","integrity":"sha512-Go1Yj8PBCaTpLrwEuaHE8ryOHl9T8zQ3mVzb3o/xqGMJ/cFzJnMbnGIAmaJ2k4ywEY7wNsAj+pfZTXMsg7mAOw=="},"node_modules/secret-stream":{"version":"1.0.0","integrity":"sha512-q2wXYh5/b7e7y0lN7CVtO8O2hJq3mA4lp0K3v9Q9C1L0Zq8kR4aE0qJ0mB8pRk1o8m8eB1rOqK6zF3m4rX1cXg=="}}}
"#;
    let ordinary: Vec<(&str, &str)> = vec![
        (
            "README.md",
            "# app\nSet your AWS keys in ~/.aws/credentials.\n",
        ),
        (
            "src/main.py",
            "import os\nKEY = os.environ['AWS_SECRET_ACCESS_KEY']\n",
        ),
        (
            ".env.example",
            "API_KEY=your-api-key-here\nDB_PASSWORD=changeme\nGITHUB_TOKEN=\n",
        ),
        ("package-lock.json", lock),
        (
            "tests/fixtures/aws.js",
            "const KEY = \"AKIAIOSFODNN7EXAMPLE\";\n",
        ),
        (
            "certs/ca.pem",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        ),
        (
            "config/app.yml",
            "port: 8080\npassword: <%= ENV['DB_PASSWORD'] %>\n",
        ),
    ];
    for (rel, text) in &ordinary {
        write(rel, text);
    }
    let rt = runtime();
    for (rel, _) in &secrets {
        let out = run(&rt, &ws, &home, &format!("cat {rel}"));
        assert!(
            out.exit_code != Some(0) && !out.stdout.contains(mark),
            "{rel} was read: {out:?}"
        );
    }
    // A recursive read does not get them either.
    let out = run(&rt, &ws, &home, "grep -r MARK . ; true");
    assert!(!out.stdout.contains(mark), "grep -r: {out:?}");
    for (rel, text) in &ordinary {
        let out = run(&rt, &ws, &home, &format!("cat {rel}"));
        assert_eq!(out.stdout, *text, "{rel}: {out:?}");
    }
}
