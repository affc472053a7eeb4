//! The guard's side of lowered limits: a confined command of the same uid lowers the guard's
//! limits with `prlimit`. The real `serve` must survive, fail closed and say what happened.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::{Duration, Instant};
use support::socket::*;

const TOKEN: &str = "limits-test-token-0123456789abcd";

fn prlimit(pid: i32, what: &str) {
    let out = Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(what)
        .output()
        .expect("prlimit (util-linux)");
    assert!(out.status.success(), "prlimit {what}: {out:?}");
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn decision(w: &World, id: &str) -> String {
    send_line(&w.socket(), &request_line(TOKEN, id, "ls"))["decision"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_lowered_descriptor_limit_is_survived_and_reported() {
    raise_nofile();
    let w = World::new(NEW, TOKEN, &[]);
    let mut serve = Serve::start(&w, &[], &[]);
    assert!(
        serve.log().contains("limits          nofile"),
        "{}",
        serve.log()
    );
    let pid = serve.pid();
    let n = open_fds(pid) + 6;
    prlimit(pid, &format!("--nofile={n}:{n}"));
    // Far more connections than descriptors left.
    let held: Vec<UnixStream> = (0..200)
        .filter_map(|_| UnixStream::connect(w.socket()).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(serve.alive(), "serve died: {}", serve.log());
    drop(held);
    // Answers again once the flood is gone (honest clients are not left hanging).
    let start = Instant::now();
    loop {
        if decision(&w, "after") == "allow-once" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{}", serve.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(serve.alive());
    audit_with(&w, &["\"kind\":\"guard-limit\"", "EMFILE"]);
}

/// Started with the common soft limit far below the hard one, `serve` raises its own soft
/// limit: a flood of connections then meets the hard limit, not 1024.
#[test]
fn serve_raises_its_soft_descriptor_limit_to_the_hard_one() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    use std::os::unix::process::CommandExt;
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard > 256,
        "this test needs a hard limit above 256, not {hard}"
    );
    let w = World::new(NEW, TOKEN, &[]);
    let mut cmd = Serve::command(&w, &[]);
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            setrlimit(Resource::RLIMIT_NOFILE, 256, hard).map_err(std::io::Error::from)
        });
    }
    let mut serve = Serve::start_command(&w, cmd);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", serve.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(nums, [hard.to_string(), hard.to_string()], "{line}");
    assert!(
        serve.log().contains(&format!("nofile {hard}/{hard}")),
        "{}",
        serve.log()
    );
    assert_eq!(decision(&w, "raised"), "allow-once");
    assert!(serve.alive());
}

#[test]
fn a_lowered_file_size_limit_fails_closed_instead_of_killing_the_guard() {
    let w = World::new(NEW, TOKEN, &[]);
    let mut serve = Serve::start(&w, &[], &[]);
    let pid = serve.pid();
    assert_eq!(decision(&w, "before"), "allow-once");
    let audit = w.audit_path();
    std::thread::sleep(Duration::from_millis(200));
    let size = std::fs::metadata(&audit).expect("audit").len();
    // The next records do not fit: writes get SIGXFSZ/EFBIG.
    prlimit(pid, &format!("--fsize={}:{}", size + 10, size + 10));
    let mut answers = Vec::new();
    for i in 0..20 {
        answers.push(decision(&w, &format!("x{i}")));
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(serve.alive(), "SIGXFSZ killed the guard: {}", serve.log());
    // Once the log cannot be written, nothing is allowed (fail closed).
    assert_eq!(
        answers.last().map(String::as_str),
        Some("deny"),
        "answers after the audit log failed: {answers:?}"
    );
    // The log line may still be on its way when the last answer arrives.
    let reported = (0..50).any(|_| {
        let log = serve.log();
        let seen = log.contains("audit") && log.contains("File too large");
        if !seen {
            std::thread::sleep(Duration::from_millis(100));
        }
        seen
    });
    assert!(reported, "the failure is reported: {}", serve.log());
}
