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

/// The run read the "plain" file [`root_with_plain`] made, and nothing was withheld.
fn assert_read_plain(out: &RunOutcome) {
    assert_eq!(
        (out.stdout.as_str(), out.success),
        ("plain\n", true),
        "{out:?}"
    );
}

/// The run's output and exit were withheld for `why` (the workspace changed under it):
/// `mark`, which the run printed, never reaches the caller.
fn assert_withheld_for(out: &RunOutcome, mark: &str, why: &str) {
    assert!(!out.stdout.contains(mark), "{out:?}");
    let error = out.error.as_deref().unwrap_or_default();
    assert!(error.starts_with(why), "{out:?}");
    assert_eq!((out.exit_code, out.success), (None, false), "{out:?}");
}

/// Withheld because a secret is in the workspace now.
fn assert_withheld(out: &RunOutcome, mark: &str) {
    assert_withheld_for(out, mark, sandbox::run::WORKSPACE_CHANGED);
}

/// Whether the run's output and exit were withheld, for either reason.
fn withheld(out: &RunOutcome) -> bool {
    let why = out.error.as_deref().unwrap_or_default();
    (why == sandbox::run::WORKSPACE_CHANGED || why.starts_with(sandbox::run::WORKSPACE_CHURNED))
        && out.stdout.is_empty()
        && out.stderr.is_empty()
        && out.exit_code.is_none()
}

/// [`root`] with one workspace file, `ws/sub/<name>` holding "plain".
fn root_with_plain(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (t, home, ws) = root();
    std::fs::create_dir_all(ws.join("sub")).expect("dir");
    std::fs::write(ws.join("sub").join(name), "plain\n").expect("file");
    (t, home, ws)
}

/// Toggles `ws/<dir>/race.txt` between a plain file and a hard link to `secret` until
/// stopped, atomically (a rename over the name), as a process outside the guard would;
/// each state is held for `hold` (zero: flips as fast as it can).
fn toggler(
    ws: PathBuf,
    dir: &str,
    secret: PathBuf,
    stop: Arc<AtomicBool>,
    hold: Duration,
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
            std::thread::sleep(hold);
            let plain = stage.join("plain");
            std::fs::write(&plain, "plain\n").expect("plain");
            std::fs::rename(&plain, &target).expect("rename plain");
            std::thread::sleep(hold);
            flips += 1;
        }
        flips
    })
}

/// What `n` autonomous `cat race.txt` runs got while a thread outside the guard toggled
/// `race.txt` (in `dir` of the workspace) into a hard link to a secret.
struct Race {
    /// Printed the secret.
    leaked: usize,
    /// Printed the plain file.
    plain: usize,
    /// Output withheld: the workspace changed during the run.
    withheld: usize,
    /// Anything else (each one's outcome).
    other: Vec<String>,
    flips: u64,
}

fn race_leaks(dir: &str, beside_a_secret: bool, hold: Duration, n: usize) -> Race {
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
    let flips = toggler(ws.clone(), dir, secret, Arc::clone(&stop), hold);
    let rt = runtime();
    let script = format!("cat {dir}/race.txt");
    let mut race = Race {
        leaked: 0,
        plain: 0,
        withheld: 0,
        other: Vec::new(),
        flips: 0,
    };
    for _ in 0..n {
        let out = run(&rt, &ws, &home, &script);
        if out.stdout.contains("MARK-race") || out.stderr.contains("MARK-race") {
            race.leaked += 1;
        } else if out.stdout == "plain\n" && out.success {
            race.plain += 1;
        } else if withheld(&out) {
            race.withheld += 1;
        } else {
            race.other.push(format!("{out:?}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    race.flips = flips.join().expect("toggler");
    race
}

impl Race {
    fn report(&self, what: &str, n: usize) {
        eprintln!(
            "race {what}: {} of {n} runs leaked, {} read the plain file, {} withheld, {} other, \
             {} flips",
            self.leaked,
            self.plain,
            self.withheld,
            self.other.len(),
            self.flips
        );
        for o in self.other.iter().take(3) {
            eprintln!("  other: {o}");
        }
    }

    fn assert_closed(&self, n: usize) {
        assert!(self.flips > 100, "the toggler barely ran: {}", self.flips);
        assert_eq!(
            self.leaked, 0,
            "{} of {n} runs printed the secret",
            self.leaked
        );
        // A failed `cat` of a name the grants did not grant (the link) is closed too.
        for o in &self.other {
            assert!(!o.contains("MARK-race"), "{o}");
        }
    }
}

fn race_n() -> usize {
    std::env::var("SANCTUM_RACE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The red team's race: the scan judged `race.txt` a plain file, the grants then opened the
/// name again and granted what it named by then, the hard link to `~/.ssh/id_ed25519`.
/// Only inodes the scan judged are granted now.
#[test]
fn a_hard_link_toggled_between_scan_and_grant_is_never_granted() {
    let n = race_n();
    let race = race_leaks(".", true, Duration::ZERO, n);
    race.report("beside a secret", n);
    race.assert_closed(n);
}

/// The same race in a directory with no secret in it, which the limits layer grants whole:
/// a link made after the scan is readable to the run. The watches' record of the names
/// (`ws_churn`) sees the link come and go, so no run's output carries it, flipping as fast
/// as the toggler can or holding each state 3 ms.
#[test]
fn a_hard_link_toggled_in_a_directory_granted_whole_is_never_read() {
    let n = race_n();
    for (hold, n) in [(Duration::ZERO, n), (Duration::from_millis(3), n / 2)] {
        let race = race_leaks("sub", false, hold, n);
        race.report(&format!("in a directory granted whole, held {hold:?}"), n);
        race.assert_closed(n);
    }
}

/// Waits until a process whose command line is exactly `argv` runs (the confined run has
/// passed its scan and grants by then), so a change made next is made during the run.
fn wait_for_run(argv: &[&str]) {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let found = std::fs::read_dir("/proc")
            .expect("proc")
            .flatten()
            .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want));
        if found {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("the run {argv:?} never started");
}

/// A hard link to a secret made in a directory granted whole while a run reads it, and left
/// there: the run printed the key, the agent gets nothing.
#[test]
fn a_hard_link_made_during_the_run_withholds_its_output() {
    let (_t, home, ws) = root_with_plain("plain.txt");
    let secret = home.join(".ssh/id_ed25519");
    std::fs::write(&secret, "MARK-link-d4\n").expect("secret");
    std::thread::sleep(Duration::from_millis(300));
    let rt = runtime();
    let link = ws.join("sub/later.txt");
    let maker = std::thread::spawn(move || {
        wait_for_run(&["sleep", "0.71"]);
        std::fs::hard_link(&secret, &link).expect("link");
    });
    let out = run(&rt, &ws, &home, "sleep 0.71; cat sub/later.txt");
    maker.join().expect("maker");
    assert_withheld(&out, "MARK-link");
}

/// Ordinary churn during a run withholds nothing: build files made and rewritten in place,
/// an editor's atomic save (a temporary renamed over the file) and a save that keeps a backup
/// (the file renamed aside, a new one written, the backup removed). Only a secret appearing,
/// or a state that came and went, does.
#[test]
fn ordinary_changes_during_a_run_withhold_nothing() {
    let (_t, home, ws) = root_with_plain("plain.txt");
    std::fs::write(ws.join("sub/notes.txt"), "notes\n").expect("notes");
    std::fs::write(ws.join("sub/draft.txt"), "draft\n").expect("draft");
    std::thread::sleep(Duration::from_millis(300));
    let rt = runtime();
    let w = ws.clone();
    let churn = std::thread::spawn(move || {
        wait_for_run(&["sleep", "0.74"]);
        for i in 0..20 {
            std::thread::sleep(Duration::from_millis(10));
            std::fs::write(w.join(format!("sub/build-{i}.o")), "obj").expect("write");
            std::fs::write(w.join(format!("sub/build-{i}.o")), "obj2").expect("rewrite");
        }
        std::fs::write(w.join("sub/.notes.txt.swp"), "x").expect("swap");
        std::fs::rename(w.join("sub/.notes.txt.swp"), w.join("sub/notes.txt")).expect("save");
        std::fs::rename(w.join("sub/draft.txt"), w.join("sub/draft.txt~")).expect("backup");
        std::fs::write(w.join("sub/draft.txt"), "draft 2\n").expect("new");
        std::fs::remove_file(w.join("sub/draft.txt~")).expect("drop backup");
    });
    let out = run(&rt, &ws, &home, "sleep 0.74; cat sub/plain.txt");
    churn.join().expect("churn");
    assert_read_plain(&out);
}

/// Attacks from a process outside the guard that leave the workspace as it was by the time
/// the run ends, so a rescan then finds nothing: each was readable to the run (a directory
/// granted whole), and each withholds the output. `make` runs once the run has started and
/// returns the change that puts things back, which runs after the run read.
#[test]
fn a_state_that_came_and_went_during_the_run_withholds_its_output() {
    type Undo = Box<dyn FnOnce() + Send>;
    type Make = fn(&Path, &Path) -> Undo;
    let cases: &[(&str, &str, Make)] = &[
        (
            "a hard link made, then removed",
            "sub/later.txt",
            |ws, key| {
                std::fs::hard_link(key, ws.join("sub/later.txt")).expect("link");
                let ws = ws.to_path_buf();
                Box::new(move || std::fs::remove_file(ws.join("sub/later.txt")).expect("rm"))
            },
        ),
        (
            "a hard link renamed over a file, then the file put back",
            "sub/plain.txt",
            |ws, key| {
                let stage = ws.parent().expect("parent").join("stage");
                std::fs::create_dir_all(&stage).expect("stage");
                std::fs::hard_link(ws.join("sub/plain.txt"), stage.join("orig")).expect("keep");
                std::fs::hard_link(key, stage.join("link")).expect("link");
                std::fs::rename(stage.join("link"), ws.join("sub/plain.txt")).expect("over");
                let ws = ws.to_path_buf();
                Box::new(move || {
                    std::fs::rename(stage.join("orig"), ws.join("sub/plain.txt")).expect("back")
                })
            },
        ),
        (
            "a directory made with a link in it, then emptied",
            "sub/d/k",
            |ws, key| {
                std::fs::create_dir(ws.join("sub/d")).expect("mkdir");
                std::fs::hard_link(key, ws.join("sub/d/k")).expect("link");
                let ws = ws.to_path_buf();
                Box::new(move || std::fs::remove_file(ws.join("sub/d/k")).expect("rm"))
            },
        ),
        (
            "a link moved in from outside, then moved out",
            "sub/m.txt",
            |ws, key| {
                let stage = ws.parent().expect("parent").join("stage2");
                std::fs::create_dir_all(&stage).expect("stage");
                std::fs::hard_link(key, stage.join("m")).expect("link");
                std::fs::rename(stage.join("m"), ws.join("sub/m.txt")).expect("in");
                let ws = ws.to_path_buf();
                Box::new(move || {
                    std::fs::rename(ws.join("sub/m.txt"), stage.join("m")).expect("out")
                })
            },
        ),
        (
            "the workspace's own secret renamed into a plain name, then back",
            "sub/cfg.txt",
            |ws, _| {
                std::fs::rename(ws.join(".env"), ws.join("sub/cfg.txt")).expect("in");
                let ws = ws.to_path_buf();
                Box::new(move || {
                    std::fs::rename(ws.join("sub/cfg.txt"), ws.join(".env")).expect("back")
                })
            },
        ),
    ];
    let rt = runtime();
    for (i, (what, read, make)) in cases.iter().enumerate() {
        let (_t, home, ws) = root_with_plain("plain.txt");
        let key = home.join(".ssh/id_ed25519");
        std::fs::write(&key, "MARK-came-went-k\n").expect("key");
        std::fs::write(ws.join(".env"), "MARK-came-went-env\n").expect("env");
        std::thread::sleep(Duration::from_millis(300));
        // A sleep of its own per case, so each waits for its own run.
        let (pause, after) = (format!("0.81{i}"), format!("0.61{i}"));
        let (w, k, p, a) = (ws.clone(), key.clone(), pause.clone(), after.clone());
        let make = *make;
        let attacker = std::thread::spawn(move || {
            wait_for_run(&["sleep", p.as_str()]);
            let undo = make(&w, &k);
            wait_for_run(&["sleep", a.as_str()]);
            undo();
        });
        let script = format!("sleep {pause}; cat {read}; sleep {after}");
        let out = run(&rt, &ws, &home, &script);
        attacker.join().expect("attacker");
        assert_withheld_for(&out, "MARK-came-went", sandbox::run::WORKSPACE_CHURNED);
        eprintln!("{what}: withheld");
    }
}

/// A flood of changes during the run, more than the watches can queue (17,000 files made
/// and kept, each on its own harmless), withholds the output: what the queue dropped could
/// have hidden a state.
#[test]
fn a_flood_of_changes_during_the_run_withholds_its_output() {
    let (_t, home, ws) = root_with_plain("plain.txt");
    std::thread::sleep(Duration::from_millis(300));
    let rt = runtime();
    let w = ws.clone();
    let flood = std::thread::spawn(move || {
        wait_for_run(&["sleep", "0.75"]);
        for i in 0..17_000 {
            std::fs::write(w.join(format!("sub/f{i}")), "x").expect("write");
        }
        std::fs::write(w.join("sub/done"), "").expect("done");
    });
    // The run ends only once the flood has been made.
    let script = "sleep 0.75; cat sub/plain.txt; until [ -e sub/done ]; do sleep 0.05; done";
    let out = run(&rt, &ws, &home, script);
    flood.join().expect("flood");
    let error = out.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(sandbox::run::WORKSPACE_CHURNED) && error.contains("faster"),
        "{out:?}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}

/// With nothing changing, the check withholds nothing: the same runs read their file.
#[test]
fn a_quiet_workspace_withholds_nothing() {
    let (_t, home, ws) = root_with_plain("race.txt");
    let rt = runtime();
    for _ in 0..50 {
        let out = run(&rt, &ws, &home, "cat sub/race.txt");
        assert_read_plain(&out);
    }
}

/// A file rewritten in place during the run (no name made, the directory unchanged) voids
/// the scan too: the file was granted as the scan judged its content.
#[test]
fn a_file_rewritten_during_the_run_withholds_its_output() {
    let (_t, home, ws) = root_with_plain("notes.txt");
    // Old enough to be cached (a scan of files changed within RACY is used once).
    std::thread::sleep(Duration::from_millis(300));
    let rt = runtime();
    let first = run(&rt, &ws, &home, "cat sub/notes.txt");
    assert_eq!(first.stdout, "plain\n", "{first:?}");
    let begin = format!("-----BEGIN {}PRIVATE KEY-----", "OPENSSH ");
    let key = format!("{begin}\nMARK-rewrite\n-----END OPENSSH PRIVATE KEY-----\n");
    let target = ws.join("sub/notes.txt");
    let writer = std::thread::spawn(move || {
        wait_for_run(&["sleep", "0.72"]);
        std::fs::write(target, key).expect("rewrite");
    });
    let out = run(&rt, &ws, &home, "sleep 0.72; cat sub/notes.txt");
    writer.join().expect("writer");
    assert_withheld(&out, "MARK-rewrite");
    // The next run is judged from a new scan: the key is denied, by content.
    let next = run(&rt, &ws, &home, "cat sub/notes.txt");
    assert!(
        !next.stdout.contains("MARK-rewrite") && !next.success,
        "{next:?}"
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
