//! Spawn cost of `/bin/true`: plain `std::process::Command` (posix_spawn, a vfork), plain
//! fork+exec (the same Command with an empty pre_exec hook, which makes std fork), our
//! confined spawn (the same `prepare` + `Prepared::spawn` path `run` uses, a CLONE_VM|VFORK
//! clone, waited on without tokio) and bwrap with namespaces, in one run. "sanctum confined" is the read-only profile without deny_read; the default one,
//! whose secrets force a walk of their parents' siblings (cached between spawns), is shown
//! too, and so is `workspace-write` resolved per spawn (private tmp created and removed) as
//! the approvals socket does per request. The workspace is a fresh directory under the target
//! dir, like a project checkout (not /tmp itself, whose churn is not a workspace's).
//! Variants are interleaved round-robin so machine load hits them equally; bwrap runs
//! after them, on its own (see the comment at its loop).
//! First a phase table (resolve, Landlock layers, seccomp, cgroup, clone..exec, exec..exit,
//! reap, drops) for read-only, autonomous-read, and autonomous-read without a cgroup, which
//! shows what the run's cgroup costs; SANCTUM_BENCH_PHASES_ONLY=1 stops after it.
//! `cargo bench --bench sandbox_spawn` (N from SANCTUM_BENCH_N, default 1000 per variant).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Raw signal and process calls on the test process itself: the sandbox is under test.
#![allow(unsafe_code)]

use sanctum_guard::sandbox::{builtin_profiles, prepare, ChildStdio, ResolvedProfile};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BWRAP: [&str; 11] = [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--unshare-all",
    "--die-with-parent",
    "/bin/true",
    "",
];

/// Runs `c` to completion with the same small environment the confined spawns get (a long
/// inherited environment makes exec measurably slower, which would flatter our figures).
fn spawn_wait(mut c: Command) -> Duration {
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let t = Instant::now();
    let st = c.status().expect("spawn"); // startup
    let d = t.elapsed();
    assert!(st.success(), "command failed");
    d
}

fn confined(profile: &ResolvedProfile, ws: &Path, env: &BTreeMap<String, String>) -> Duration {
    let argv = vec!["/bin/true".to_string()];
    let t = Instant::now();
    // The whole per-spawn cost: prepare() for each spawn, as `run` does (cached layers are
    // re-validated, the workspace-write variant builds its base layer every time).
    let p = prepare(profile).expect("prepare"); // startup
    let mut c = p.spawn(&argv, ws, env, ChildStdio::null()).expect("spawn"); // startup
    c.exited_blocking().expect("wait"); // startup
    let st = c.finish().expect("reap"); // startup
    let d = t.elapsed();
    assert!(st.success(), "confined /bin/true failed");
    d
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Set in the helper process that runs bwrap (see `main`).
const BWRAP_RUNNER: &str = "SANCTUM_BENCH_BWRAP_RUNNER";

/// The helper: one bwrap run per input line, its duration in nanoseconds per output line.
fn bwrap_runner() {
    let mut out = std::io::stdout();
    for line in std::io::stdin().lines() {
        if line.is_err() {
            return;
        }
        let mut c = Command::new("bwrap");
        c.args(&BWRAP[..10]);
        let d = spawn_wait(c);
        if writeln!(out, "{}", d.as_nanos())
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

/// The bwrap helper process (this binary again), one timed run per request.
struct BwrapRunner {
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: BufReader<std::process::ChildStdout>,
}

impl BwrapRunner {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().expect("exe")) // startup
            .env(BWRAP_RUNNER, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("bwrap runner"); // startup
        let to = child.stdin.take().expect("runner stdin"); // startup
        let from = BufReader::new(child.stdout.take().expect("runner stdout")); // startup
        BwrapRunner { child, to, from }
    }

    fn time(&mut self) -> Duration {
        self.to.write_all(b"\n").expect("runner"); // startup
        let mut line = String::new();
        self.from.read_line(&mut line).expect("runner"); // startup
        Duration::from_nanos(line.trim().parse().expect("runner answer")) // startup
    }

    /// EOF on its input ends the helper; then it is reaped.
    fn stop(self) {
        let BwrapRunner { mut child, to, .. } = self;
        drop(to);
        let _ = child.wait();
    }
}

/// bwrap runs here (it is the comparison, not a dependency of the guard).
fn bwrap_available() -> bool {
    Command::new("bwrap")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() {
    if std::env::var_os(BWRAP_RUNNER).is_some() {
        return bwrap_runner();
    }
    let n: usize = std::env::var("SANCTUM_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let ws_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("workspace"); // startup
    let ws = ws_dir.path().to_path_buf();
    std::fs::write(ws.join("README.md"), "bench\n").expect("workspace"); // startup
    std::fs::create_dir(ws.join("src")).expect("workspace"); // startup
    let profile = builtin_profiles()["read-only"]
        .resolve(&ws)
        .expect("profile"); // startup
                            // The same profile without deny_read: no sibling walk around the secrets.
    let mut bare = builtin_profiles()["read-only"].clone();
    bare.deny_read.clear();
    let bare = bare.resolve(&ws).expect("profile"); // startup
    let env = BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    // bwrap runs from a helper process (this binary again) started before the bounding set
    // is cleared below: as root it needs its capabilities. This process stays single-threaded
    // and clears its set as `serve` does at startup, so the confined spawns pay what they pay
    // under `serve`.
    let mut bwrap = bwrap_available().then(BwrapRunner::start);
    if bwrap.is_none() {
        println!(
            "sandbox_spawn: bwrap not found on PATH: the bwrap comparison is skipped \
             (install it: `apt-get install bubblewrap`, or run tests/setup.sh)"
        );
    }
    let cleared = sanctum_guard::sandbox::kernel::clear_own_bounding_set().expect("bounding"); // startup
    assert!(
        cleared == 0 || sanctum_guard::sandbox::kernel::bounding_set_empty_everywhere(),
        "the bench must clear its set while single-threaded, like serve"
    );
    let write_spec = builtin_profiles()["workspace-write"].clone();
    let ro_spec = builtin_profiles()["read-only"].clone();
    let auto_spec = builtin_profiles()["autonomous-read"].clone();
    // Resolved per spawn as the engine does per request: the autonomous profile against the
    // read-only one it replaces.
    let resolved = |spec: &sanctum_guard::sandbox::ProfileSpec, ws: &Path| {
        let t = Instant::now();
        let p = spec.resolve(ws).expect("profile"); // startup
        let d = confined(&p, ws, &env);
        drop(p);
        let total = t.elapsed();
        debug_assert!(total >= d);
        total
    };
    let per_request = |ws: &Path| {
        let t = Instant::now();
        let p = write_spec.resolve(ws).expect("profile"); // startup
        let d = confined(&p, ws, &env);
        drop(p);
        let total = t.elapsed();
        debug_assert!(total >= d);
        total
    };
    // The same two profiles without the spawn (whose ~6-8 ms of noise hides a 0.1 ms
    // difference): resolve + drop (private tmp taken and reset, paths canonicalized, the
    // workspace's secrets scan) and prepare() alone (Landlock layers from the cache, seccomp).
    let resolve_only = |spec: &sanctum_guard::sandbox::ProfileSpec, ws: &Path| {
        let t = Instant::now();
        let p = spec.resolve(ws).expect("profile"); // startup
        drop(p);
        t.elapsed()
    };
    let prepare_only = |spec: &sanctum_guard::sandbox::ProfileSpec, ws: &Path| {
        let p = spec.resolve(ws).expect("profile"); // startup
        let t = Instant::now();
        let pp = prepare(&p).expect("prepare"); // startup
        let d = t.elapsed();
        drop(pp);
        d
    };
    for _ in 0..50 {
        resolve_only(&ro_spec, &ws);
        resolve_only(&auto_spec, &ws);
        prepare_only(&ro_spec, &ws);
        prepare_only(&auto_spec, &ws);
        spawn_wait(Command::new("/bin/true"));
        confined(&profile, &ws, &env);
        confined(&bare, &ws, &env);
        per_request(&ws);
        resolved(&ro_spec, &ws);
        resolved(&auto_spec, &ws);
    }
    let forked = || {
        let mut c = Command::new("/bin/true");
        // SAFETY: an empty hook; it only makes std fork instead of posix_spawn.
        unsafe { c.pre_exec(|| Ok(())) };
        c
    };
    // The autonomous profile without per-run limits: what the run's cgroup costs.
    let mut auto_nocg = auto_spec.clone();
    (auto_nocg.limits.pids, auto_nocg.limits.memory_mb) = (0, 0);
    auto_nocg.limits.cpu_percent = 0;
    print_phases(
        &[
            ("read-only", &ro_spec),
            ("autonomous-read", &auto_spec),
            ("auto, no cgroup", &auto_nocg),
        ],
        &ws,
        &env,
        n,
    );
    if std::env::var_os("SANCTUM_BENCH_PHASES_ONLY").is_some() {
        return;
    }
    let (mut plain, mut ours, mut bw, mut prep) = (vec![], vec![], vec![], vec![]);
    let mut fork = vec![];
    let (mut full, mut prep_full, mut write) = (vec![], vec![], vec![]);
    let (mut ro, mut auto) = (vec![], vec![]);
    let (mut ro_res, mut auto_res, mut ro_prep, mut auto_prep) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        ro.push(resolved(&ro_spec, &ws));
        auto.push(resolved(&auto_spec, &ws));
        ro_res.push(resolve_only(&ro_spec, &ws));
        auto_res.push(resolve_only(&auto_spec, &ws));
        ro_prep.push(prepare_only(&ro_spec, &ws));
        auto_prep.push(prepare_only(&auto_spec, &ws));
        write.push(per_request(&ws));
        plain.push(spawn_wait(Command::new("/bin/true")));
        fork.push(spawn_wait(forked()));
        ours.push(confined(&bare, &ws, &env));
        full.push(confined(&profile, &ws, &env));
        let t = Instant::now();
        let _p = prepare(&bare).expect("prepare"); // startup
        prep.push(t.elapsed());
        let t = Instant::now();
        let _p = prepare(&profile).expect("prepare"); // startup
        prep_full.push(t.elapsed());
    }
    // bwrap runs in a phase of its own, after ours: each `--unshare-all` run leaves the
    // kernel tearing its namespaces down in the background, and interleaved with the other
    // variants that made every process spawned after it several ms slower (confined
    // /bin/true 7 ms instead of 1 ms on this 2-core VM), which hid what each variant costs.
    if let Some(b) = bwrap.as_mut() {
        for _ in 0..n {
            bw.push(b.time());
        }
    }
    for v in [
        &mut plain,
        &mut ours,
        &mut bw,
        &mut prep,
        &mut full,
        &mut prep_full,
        &mut write,
        &mut fork,
        &mut ro,
        &mut auto,
        &mut ro_res,
        &mut auto_res,
        &mut ro_prep,
        &mut auto_prep,
    ] {
        v.sort();
    }
    let med = |v: &Vec<Duration>| ms(v[v.len() / 2]);
    let p90 = |v: &Vec<Duration>| ms(v[v.len() * 9 / 10]);
    println!(
        "sandbox_spawn: /bin/true, {n} runs each, interleaved; bounding set cleared as serve \
         does ({cleared} capabilities)"
    );
    println!("{:<28} {:>10} {:>10}", "variant", "median ms", "p90 ms");
    for (name, v) in [
        ("plain (std Command)", &plain),
        ("plain fork+exec", &fork),
        ("sanctum confined", &ours),
        ("  of which prepare()", &prep),
        ("confined + deny_read walk", &full),
        ("  of which prepare()", &prep_full),
        ("workspace-write +resolve", &write),
        ("read-only +resolve", &ro),
        ("autonomous-read +resolve", &auto),
        ("  read-only resolve+drop", &ro_res),
        ("  autonomous resolve+drop", &auto_res),
        ("  read-only prepare()", &ro_prep),
        ("  autonomous prepare()", &auto_prep),
        ("bwrap --unshare-all", &bw),
    ] {
        if v.is_empty() {
            continue;
        }
        println!("{:<28} {:>10.3} {:>10.3}", name, med(v), p90(v));
    }
    println!(
        "autonomous-read over read-only, both resolved per spawn: {:+.3} ms",
        med(&auto) - med(&ro)
    );
    println!(
        "  of which resolve+drop {:+.3} ms, prepare() {:+.3} ms (timed apart, no spawn)",
        med(&auto_res) - med(&ro_res),
        med(&auto_prep) - med(&ro_prep)
    );
    let o = med(&ours) - med(&plain);
    // Without bwrap its figures are NaN and printed as such; the line above says why.
    let b = if bw.is_empty() {
        f64::NAN
    } else {
        med(&bw) - med(&plain)
    };
    let f = med(&full) - med(&plain);
    let w = med(&write) - med(&plain);
    println!(
        "overhead over plain: ours {o:.3} ms, with deny_read {f:.3} ms, workspace-write \
         per request {w:.3} ms; bwrap {b:.3} ms"
    );
    println!(
        "ratios: confined/plain {:.2}x, bwrap/confined {:.2}x, our overhead / bwrap's {:.3}",
        med(&ours) / med(&plain),
        if bw.is_empty() {
            f64::NAN
        } else {
            med(&bw) / med(&ours)
        },
        o / b
    );
    // The target: overhead over plain fork+exec <= 0.2 ms and <= 1/5 of bwrap's. Our
    // spawn is a vfork-style clone like posix_spawn, so the like-for-like figure is the one
    // over posix_spawn (std's spawn without a pre_exec hook); both are printed.
    let verdict = |x: f64, limit: f64| {
        if limit.is_nan() {
            "n/a (no bwrap)"
        } else if x <= limit {
            "met"
        } else {
            "MISSED"
        }
    };
    let fk = med(&fork) - med(&plain);
    for (name, v) in [
        ("read-only, no deny_read", &ours),
        ("read-only default", &full),
    ] {
        let over_fork = med(v) - med(&fork);
        let over_spawn = med(v) - med(&plain);
        println!(
            "target ({name}): over posix_spawn {over_spawn:.3} ms <= 0.2: {}; over fork+exec \
             {over_fork:.3} ms <= 0.2: {}; <= 1/5 of bwrap's {:.3}: {}",
            verdict(over_spawn, 0.2),
            verdict(over_fork, 0.2),
            b / 5.0,
            verdict(over_spawn, b / 5.0),
        );
    }
    println!("(fork+exec itself costs {fk:.3} ms more than posix_spawn here)");
    // The autonomous target: a run resolved per request as the engine does (private tmp,
    // workspace scan, run cgroup, both Landlock layers), at most 0.3 ms over posix_spawn.
    let a = med(&auto) - med(&plain);
    println!(
        "target (autonomous-read, resolved per spawn): over posix_spawn {a:.3} ms <= 0.3: {}",
        verdict(a, 0.3)
    );
    if let Some(b) = bwrap {
        b.stop();
    }
}

/// Where one resolved-per-spawn run's time goes, phase by phase (the breakdown):
/// resolve (paths, private tmp, workspace scan), the Landlock layers (cached, re-checked),
/// seccomp, the run's cgroup, the rest of prepare(), clone to exec, exec to exit, reaping,
/// and the drops (the cgroup removed or pooled, the private tmp emptied).
const PHASES: [&str; 9] = [
    "resolve",
    "landlock layers",
    "seccomp filter",
    "resources (cgroup)",
    "prepare() whole",
    "clone..exec",
    "exec..exit",
    "reap",
    "drop (cgroup, tmp)",
];

fn phases(
    spec: &sanctum_guard::sandbox::ProfileSpec,
    ws: &Path,
    env: &BTreeMap<String, String>,
) -> [Duration; 9] {
    use sanctum_guard::sandbox::{kernel, landlock_rules, resources, seccomp};
    let argv = vec!["/bin/true".to_string()];
    let mut d = [Duration::ZERO; 9];
    let mut t = Instant::now();
    let lap = |i: usize, d: &mut [Duration; 9], t: &mut Instant| {
        d[i] = t.elapsed();
        *t = Instant::now();
    };
    let p = spec.resolve(ws).expect("profile"); // startup
    lap(0, &mut d, &mut t);
    let layers = landlock_rules::build(&p, kernel::landlock_abi()).expect("landlock"); // startup
    lap(1, &mut d, &mut t);
    let bpf = seccomp::build(&p).expect("seccomp"); // startup
    lap(2, &mut d, &mut t);
    let res = resources::plan(&p).expect("resources"); // startup
    lap(3, &mut d, &mut t);
    drop((layers, bpf, res));
    t = Instant::now();
    let pp = prepare(&p).expect("prepare"); // startup
    lap(4, &mut d, &mut t);
    let mut c = pp.spawn(&argv, ws, env, ChildStdio::null()).expect("spawn"); // startup
    lap(5, &mut d, &mut t);
    c.exited_blocking().expect("wait"); // startup
    lap(6, &mut d, &mut t);
    let st = c.finish().expect("reap"); // startup
    lap(7, &mut d, &mut t);
    drop(pp);
    drop(p);
    lap(8, &mut d, &mut t);
    assert!(st.success());
    d
}

/// Prints the median of each phase for each profile, `n` interleaved runs.
fn print_phases(
    specs: &[(&str, &sanctum_guard::sandbox::ProfileSpec)],
    ws: &Path,
    env: &BTreeMap<String, String>,
    n: usize,
) {
    let mut all: Vec<Vec<Vec<Duration>>> = vec![vec![Vec::new(); PHASES.len()]; specs.len()];
    for _ in 0..n {
        for (k, (_, s)) in specs.iter().enumerate() {
            for (i, x) in phases(s, ws, env).into_iter().enumerate() {
                all[k][i].push(x);
            }
        }
    }
    print!("{:<22}", "phase (median ms)");
    for (name, _) in specs {
        print!(" {name:>16}");
    }
    println!();
    for (i, phase) in PHASES.iter().enumerate() {
        print!("{phase:<22}");
        for v in all.iter_mut() {
            v[i].sort();
            print!(" {:>16.3}", ms(v[i][v[i].len() / 2]));
        }
        println!();
    }
}
