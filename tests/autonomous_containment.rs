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
use std::path::{Path, PathBuf};
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
            // Unresolved here (no proxy attached): no network at all.
            NetworkSpec::None | NetworkSpec::ReadProxy => Vec::new(),
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

/// The autonomous profile reads only the workspace and the system: nothing of HOME, of
/// OpenClaw's state or of a directory beside the workspace; not the secrets inside the
/// workspace, at any depth, by name or through /proc and /dev/fd magic links (which the
/// kernel resolves to the real path, which Landlock then checks); writes only its private
/// tmp; changes no file's mode or times; no network.
#[test]
fn autonomous_profile_reads_the_workspace_and_system_only() {
    use sanctum_guard::policy::profile::AUTONOMOUS_PROFILE;
    let root = tempfile::tempdir().expect("root");
    let root = root.path().canonicalize().expect("canon");
    let (home, ws, beside) = (root.join("home"), root.join("ws"), root.join("beside"));
    for d in [
        &home.join(".openclaw/agents/main/agent"),
        &ws.join("src/deep"),
        &beside,
    ] {
        std::fs::create_dir_all(d).expect("dirs");
    }
    let secret = |p: &Path| std::fs::write(p, "MARK-9f2c\n").expect("secret");
    for p in [
        home.join("notes.txt"),
        home.join(".openclaw/agents/main/agent/openclaw-agent.sqlite"),
        beside.join("plain.txt"),
        ws.join(".env"),
        ws.join("src/deep/.env.production"),
    ] {
        secret(&p);
    }
    std::fs::write(ws.join("src/deep/code.rs"), "fn main() {}\n").expect("code");
    std::fs::write(ws.join(".env.example"), "KEY=\n").expect("template");
    // A hard link is the file itself under a second name: one in the workspace to a file
    // outside it is that file, whatever its name. Links that stay inside the workspace (a
    // package store beside node_modules, as pnpm makes) are the workspace's own.
    std::fs::hard_link(home.join("notes.txt"), ws.join("src/linked.txt")).expect("link out");
    std::fs::create_dir_all(ws.join("store")).expect("store");
    std::fs::write(ws.join("store/pkg.js"), "module.exports = 1;\n").expect("pkg");
    std::fs::hard_link(ws.join("store/pkg.js"), ws.join("src/pkg.js")).expect("link in");
    // A device node is the device: one in the workspace reads the disk as a node of the
    // disk would. /dev/zero's numbers make the read succeed wherever it is not denied.
    let node = ws.join("src/dev");
    let made = std::process::Command::new("mknod")
        .args([node.to_str().expect("utf-8"), "c", "1", "5"])
        .status()
        .is_ok_and(|s| s.success());
    let spec = &sandbox::builtin_profiles()[AUTONOMOUS_PROFILE];
    let deny = sandbox::DenyList::default();
    let profile = spec.resolve_with(&ws, &home, &deny).expect("resolve");
    let listener = forbidden_listener(&[]);
    let port = listener.local_addr().expect("addr").port();
    let (h, b) = (home.display(), beside.display());
    let harmful: Vec<(&str, String)> = vec![
        ("read HOME", format!("cat {h}/notes.txt")),
        ("list HOME", format!("ls {h}")),
        (
            "read OpenClaw's agent database",
            format!("cat {h}/.openclaw/agents/main/agent/openclaw-agent.sqlite"),
        ),
        ("read beside the workspace", format!("cat {b}/plain.txt")),
        ("read the workspace .env", "cat .env".into()),
        (
            "read a nested .env.*",
            "cat src/deep/.env.production".into(),
        ),
        ("/proc/self/cwd", "cat /proc/self/cwd/.env".into()),
        (
            "/proc/self/cwd/..",
            "cd src && cat /proc/self/cwd/../.env".into(),
        ),
        ("/proc/PID/root", format!("cat /proc/$$/root{h}/notes.txt")),
        ("/dev/fd/N/..", "exec 3<src; cat /dev/fd/3/../.env".into()),
        ("write the workspace", "echo x > new.txt".into()),
        ("write /tmp", "echo x > /tmp/sg-auto-$$".into()),
        (
            "chmod in the workspace",
            "chmod 600 src/deep/code.rs".into(),
        ),
        (
            "chmod in the private tmp",
            "f=$TMPDIR/x; : > $f; chmod 777 $f".into(),
        ),
        (
            "touch -d in the workspace",
            "touch -d 2001-01-01 src/deep/code.rs".into(),
        ),
        ("tcp", format!("exec 3<>/dev/tcp/127.0.0.1/{port}")),
        ("a hard link to a HOME file", "cat src/linked.txt".into()),
        (
            "a hard link to a HOME file, through /proc",
            "cat /proc/self/cwd/src/linked.txt".into(),
        ),
    ];
    let mut harmful = harmful;
    if made {
        harmful.push(("a device node", "head -c 16 src/dev".into()));
    }
    for (what, script) in harmful {
        let out = run(&profile, &ws, &script);
        assert!(
            out.exit_code != Some(0) && !out.stdout.contains("MARK-9f2c"),
            "{what} succeeded: {out:?}"
        );
    }
    assert!(!ws.join("new.txt").exists());
    for (what, script, want) in [
        ("read code", "cat src/deep/code.rs", "fn main() {}\n"),
        ("read a template", "cat .env.example", "KEY=\n"),
        ("list the workspace", "ls src/deep", "code.rs\n"),
        (
            "a pipeline",
            "grep -c main src/deep/code.rs | sed s/1/one/",
            "one\n",
        ),
        (
            "its private tmp",
            "echo t > $TMPDIR/t && cat $TMPDIR/t",
            "t\n",
        ),
        ("system files", "head -c 4 /etc/passwd", "root"),
        (
            "a hard link inside the workspace",
            "cat src/pkg.js",
            "module.exports = 1;\n",
        ),
        (
            "its twin in the store",
            "cat store/pkg.js",
            "module.exports = 1;\n",
        ),
    ] {
        let out = run(&profile, &ws, script);
        assert_eq!(out.stdout, want, "{what}: {out:?}");
    }
}

/// A private tmp is reused from run to run (its Landlock layer with it), and a run never sees
/// what an earlier one left there: files, directories, links, a changed mode.
#[test]
fn a_reused_private_tmp_starts_empty() {
    use sanctum_guard::policy::profile::AUTONOMOUS_PROFILE;
    let root = tempfile::tempdir().expect("tmp");
    let root = root.path().canonicalize().expect("canon");
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("ws");
    let spec = &sandbox::builtin_profiles()[AUTONOMOUS_PROFILE];
    let deny = sandbox::DenyList::default();
    let mut seen = Vec::new();
    for i in 0..6 {
        let profile = spec.resolve_with(&ws, &home, &deny).expect("resolve");
        let script = format!(
            "ls -A \"$TMPDIR\"; echo left-{i} > \"$TMPDIR/f\"; mkdir -p \"$TMPDIR/d/e\"; \
             ln -s /etc \"$TMPDIR/l\"; chmod 755 \"$TMPDIR\"; echo \"dir=$TMPDIR\""
        );
        let out = run(&profile, &ws, &script);
        let dir = out
            .stdout
            .strip_prefix("dir=")
            .unwrap_or_else(|| panic!("run {i} saw an earlier run's files: {out:?}"))
            .trim()
            .to_string();
        seen.push(dir);
    }
    let mut distinct = seen.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct.len() < seen.len(),
        "no directory was reused: {seen:?}"
    );
}

/// The figure for the workspace secret scan: a 100,000-file tree (1,000 directories of 100
/// files, a few secrets), scanned cold, then re-validated from the cache, and the whole
/// resolve + prepare of the autonomous profile. `cargo test --test suites --
/// autonomous_containment::secret_scan_on_100k_files --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn secret_scan_on_100k_files() {
    use sanctum_guard::policy::profile::AUTONOMOUS_PROFILE;
    use sanctum_guard::sandbox::ws_secrets::secrets_in;
    use std::time::Instant;
    // Under the target dir, like a checkout: /tmp's churn would void the Landlock cache.
    // SANCTUM_SCAN_ROOT names an empty directory to use instead, e.g. a mount point, where
    // the scan counts no hard links (a deployment's workspace volume).
    let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    let ws = std::env::var_os("SANCTUM_SCAN_ROOT").map_or_else(|| t.path().into(), PathBuf::from);
    let ws = ws.canonicalize().expect("canon");
    // SANCTUM_SCAN_BYTES: each file holds that many bytes of code-like text (default empty),
    // for the cost of the content rules on a cold scan.
    let bytes: usize = std::env::var("SANCTUM_SCAN_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let line = "let api_key = config.get(\"key\"); // token secret password\n";
    let body: String = line.repeat(bytes / line.len() + 1)[..bytes].to_string();
    for d in 0..1000 {
        let dir = ws.join(format!("d{}/e{}", d / 10, d % 10));
        std::fs::create_dir_all(&dir).expect("dir");
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f}.rs")), &body).expect("file");
        }
        if d % 250 == 0 {
            std::fs::write(dir.join(".env"), "K=v").expect("secret");
        }
    }
    // Landlock timestamps are coarse: let the tree age past the cache's race window.
    std::thread::sleep(Duration::from_millis(300));
    let at = Instant::now();
    let found = secrets_in(&ws).expect("scan");
    let cold = at.elapsed();
    assert_eq!(found.len(), 4);
    let at = Instant::now();
    let n = 20;
    for _ in 0..n {
        secrets_in(&ws).expect("scan");
    }
    let warm = at.elapsed() / n;
    let spec = &sandbox::builtin_profiles()[AUTONOMOUS_PROFILE];
    let at = Instant::now();
    let p = spec.resolve(&ws).expect("resolve");
    sandbox::prepare(&p).expect("prepare");
    let first = at.elapsed();
    let at = Instant::now();
    for _ in 0..n {
        let p = spec.resolve(&ws).expect("resolve");
        sandbox::prepare(&p).expect("prepare");
    }
    let again = at.elapsed() / n;
    let at = Instant::now();
    let p = spec.resolve(&ws).expect("resolve");
    let resolve_only = at.elapsed();
    let at = Instant::now();
    sandbox::prepare(&p).expect("prepare");
    eprintln!("resolve {resolve_only:?}, prepare {:?}", at.elapsed());
    eprintln!(
        "100,000 files in 1,111 dirs: scan cold {cold:?}, cached re-validation {warm:?}; \
         resolve+prepare of {AUTONOMOUS_PROFILE}: first {first:?}, then {again:?}"
    );
}

/// Command lines of other processes are not files Landlock covers: a confined run reads them
/// through /proc (SECURITY.md, `doctor`). With /proc mounted `hidepid=ptraceable`, the kernel
/// hides every process the reader may not ptrace, and Landlock forbids ptracing anything
/// outside the run's own domain: the run sees only its own processes. Checked in a private
/// mount namespace (the machine's /proc is left alone); needs root to mount.
#[test]
fn hidepid_ptraceable_hides_every_process_outside_the_run() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("mounting a /proc needs root: skipped");
        return;
    }
    let ws = tempfile::tempdir().expect("ws");
    let guard = env!("CARGO_BIN_EXE_sanctum-guard");
    let victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("victim");
    let victim = KillOnDrop(victim);
    let probe = format!(
        "{guard} sandbox --profile autonomous-read --workspace {ws} -- /bin/sh -c \
         'ps -e -o pid= | wc -l; cat /proc/{pid}/cmdline || echo hidden'",
        ws = ws.path().display(),
        pid = victim.0.id()
    );
    let run = |mount: &str| {
        let script = format!("{mount}{probe}");
        let out = std::process::Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .output()
            .expect("unshare");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // As /proc is by default: the victim's command line is read.
    let open = run("mount -t proc proc /proc && ");
    assert!(open.contains("sleep"), "{open}");
    let hidden = run("mount -t proc -o hidepid=ptraceable proc /proc && ");
    let mut lines = hidden.lines();
    // ps, wc and the shell: the run's own processes only.
    let seen: usize = lines.next().unwrap_or("").trim().parse().expect("count");
    assert!(seen <= 3, "{hidden}");
    assert_eq!(lines.next(), Some("hidden"), "{hidden}");
}

/// Kills the child when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Of `/etc` an autonomous run reads only what programs need to start and resolve
/// (`AUTONOMOUS_READ`): a deployment's secrets beside them, and the login start-up files
/// that `sh -lc` (how OpenClaw's node runs every command) would source, stay out of reach.
/// The machine's files are replaced by marked ones in a private mount namespace.
#[test]
fn etc_is_an_allow_list_and_login_files_are_not_sourced() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("bind-mounting over /etc needs root: skipped");
        return;
    }
    let ws = tempfile::tempdir().expect("ws");
    let fake = tempfile::tempdir().expect("fake");
    let f = fake.path();
    std::fs::write(f.join("environment"), "ETC_ENV_TOKEN=MARK-env-4411\n").expect("env");
    std::fs::create_dir(f.join("profile.d")).expect("profile.d");
    std::fs::write(
        f.join("profile.d/zz-token.sh"),
        "export PROFILE_TOKEN=MARK-profile-4412\n",
    )
    .expect("profile.d");
    std::fs::write(f.join("profile"), "export LOGIN_TOKEN=MARK-login-4413\n").expect("profile");
    std::fs::create_dir(f.join("usr-local-etc")).expect("ule");
    std::fs::write(
        f.join("usr-local-etc/pip.conf"),
        "index-url = https://u:MARK-pip-4414@x\n",
    )
    .expect("pip");
    let guard = env!("CARGO_BIN_EXE_sanctum-guard");
    let fp = f.display();
    let mounts = format!(
        "mount --bind {fp}/environment /etc/environment && \
         mount --bind {fp}/profile.d /etc/profile.d && \
         mount --bind {fp}/profile /etc/profile && \
         mount --bind {fp}/usr-local-etc /usr/local/etc && "
    );
    let probe = |text: &str| {
        let script = format!(
            "{mounts}{guard} sandbox --profile autonomous-read --workspace {ws} -- \
             /bin/sh -lc '{text}'",
            ws = ws.path().display()
        );
        let out = std::process::Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .output()
            .expect("unshare");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    // The marks are there to be read unconfined (the mounts took).
    let unconfined = std::process::Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            &format!("{mounts}cat /etc/environment /usr/local/etc/pip.conf; sh -lc printenv"),
        ])
        .output()
        .expect("unshare");
    let unconfined = String::from_utf8_lossy(&unconfined.stdout).into_owned();
    for mark in ["MARK-env-4411", "MARK-pip-4414", "MARK-login-4413"] {
        assert!(unconfined.contains(mark), "{mark} not set up: {unconfined}");
    }
    for text in [
        "printenv",
        "cat /etc/environment",
        "cat /etc/profile.d/*",
        "cat /etc/profile",
        "cat /usr/local/etc/pip.conf",
        "grep -r MARK /etc /usr/local 2>/dev/null",
    ] {
        let out = probe(text);
        assert!(!out.contains("MARK-"), "{text}: {out}");
    }
    for (text, want) in [
        ("head -c 4 /etc/passwd", "root"),
        ("id -un", "root"),
        ("cat /etc/os-release", "ID="),
        ("getent hosts localhost", "localhost"),
        ("date +%Y", "20"),
        ("head -c 9 /proc/meminfo", "MemTotal:"),
    ] {
        let out = probe(text);
        assert!(out.contains(want), "{text}: {out}");
    }
}
