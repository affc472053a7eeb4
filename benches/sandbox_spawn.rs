//! Spawn cost of `/bin/true`: plain `std::process::Command`, our confined spawn (the same
//! `Prepared::command` path `run` uses, minus tokio) and bwrap with namespaces, in one run.
//! `cargo bench --bench sandbox_spawn` (N from SANCTUM_BENCH_N, default 1000 per variant).

use sanctum_guard::sandbox::{builtin_profiles, prepare};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn time_it(n: usize, mut make: impl FnMut() -> Command) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = make();
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let t = Instant::now();
        let st = c.status().expect("spawn"); // startup
        out.push(t.elapsed());
        assert!(st.success(), "command failed");
    }
    out.sort();
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let n: usize = std::env::var("SANCTUM_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let ws = std::env::temp_dir();
    let profile = builtin_profiles()["read-only"]
        .resolve(&ws)
        .expect("profile"); // startup
    let argv = vec!["/bin/true".to_string()];
    let env = BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    // Warm-up, then interleave-free runs of each variant.
    let _ = time_it(50, || Command::new("/bin/true"));
    let plain = time_it(n, || Command::new("/bin/true"));
    let confined = time_it(n, || {
        // The whole per-spawn cost: ruleset + BPF built for each spawn, as `run` does.
        let p = prepare(&profile).expect("prepare"); // startup
        p.command(&argv, &ws, &env).expect("command").0 // startup
    });
    let bwrap = time_it(n, || {
        let mut c = Command::new("bwrap");
        c.args([
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
        ]);
        c
    });
    let med = |v: &Vec<Duration>| ms(v[v.len() / 2]);
    let p90 = |v: &Vec<Duration>| ms(v[v.len() * 9 / 10]);
    println!("sandbox_spawn: /bin/true, {n} runs each");
    println!("{:<22} {:>10} {:>10}", "variant", "median ms", "p90 ms");
    for (name, v) in [
        ("plain (std Command)", &plain),
        ("sanctum confined", &confined),
        ("bwrap --unshare-all", &bwrap),
    ] {
        println!("{:<22} {:>10.3} {:>10.3}", name, med(v), p90(v));
    }
    let ours = med(&confined) - med(&plain);
    let theirs = med(&bwrap) - med(&plain);
    println!("overhead over plain: ours {ours:.3} ms, bwrap {theirs:.3} ms");
    println!(
        "ratios: confined/plain {:.2}x, bwrap/confined {:.2}x, our overhead / bwrap overhead {:.3}",
        med(&confined) / med(&plain),
        med(&bwrap) / med(&confined),
        ours / theirs
    );
    println!(
        "targets: overhead <= 0.2 ms: {}; <= 1/5 of bwrap's: {}",
        if ours <= 0.2 { "met" } else { "MISSED" },
        if ours <= theirs / 5.0 {
            "met"
        } else {
            "MISSED"
        }
    );
}
