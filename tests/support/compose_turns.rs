//! Agent turns in the compose deployment, each a New Task on the guard's web API whose
//! scripted model calls one tool: what reached the model, a turn that runs by itself, and a
//! process fan-out with a turn made while it is live.

use super::compose::Stack;
use super::process::{output_text, wait_until, wait_until_or};
use super::web::{Login, WebClient};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A New Task whose scripted model calls tool `name` with `arguments`; its session key.
pub fn new_task(web: &WebClient, login: &Login, name: &str, arguments: Value) -> String {
    let message = format!("SCRIPT {}", json!({"name":name,"arguments":arguments}));
    let r = web.call(
        "POST",
        "/api/agent/tasks",
        Some(login),
        Some(&json!({ "message": message }).to_string()),
    );
    assert_eq!(r.status, 202, "{r:?}");
    r.json()["sessionKey"]
        .as_str()
        .expect("sessionKey")
        .to_owned()
}

/// Every tool result the scripted model was shown so far.
pub fn tool_results(stack: &Stack) -> String {
    output_text(&stack.exec("model", "cat /tmp/model.jsonl 2>/dev/null || true"))
}

/// A New Task whose tool call runs by itself: its output (`marker`) reaches the model; the
/// seconds it took.
pub fn autonomous_turn(
    stack: &Stack,
    web: &WebClient,
    login: &Login,
    what: &str,
    (tool, arguments): (&str, Value),
    marker: &str,
) -> f64 {
    let t = Instant::now();
    new_task(web, login, tool, arguments);
    wait_until(what, Duration::from_secs(240), || {
        tool_results(stack).contains(marker).then_some(())
    });
    t.elapsed().as_secs_f64()
}

/// Processes in the agent container (its pid namespace: the gateway, the node, every run).
fn processes(stack: &Stack) -> Option<usize> {
    let out = stack.exec("agent", "ls -d /proc/[0-9]* | wc -l");
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Why a fan-out never held its processes: the counts seen, the agent container's processes,
/// the fan-outs' audit records (their verdicts), what the model was shown, and the agent's
/// last log lines.
fn fan_out_state(stack: &Stack, audit: &Path, idle: usize, seen: &[usize]) -> String {
    let ps = output_text(&stack.exec(
        "agent",
        "for p in /proc/[0-9]*; do echo \"${p#/proc/} $(tr '\\0' ' ' <$p/cmdline)\"; done | head -60",
    ));
    let audit = std::fs::read_to_string(audit).unwrap_or_else(|e| format!("({e})"));
    let records: Vec<&str> = audit.lines().filter(|l| l.contains("xargs")).collect();
    let records = &records[records.len().saturating_sub(12)..];
    let shown = tool_results(stack);
    let shown = &shown[shown.len().saturating_sub(3000)..];
    format!(
        "--- process counts (idle {idle}), every 250 ms: {seen:?}\n--- agent processes:\n{ps}\n\
         --- audit records of the fan-outs:\n{}\n--- model was shown (tail):\n{shown}\n{}",
        records.join("\n"),
        stack.service_log("agent", 40)
    )
}

/// The largest fan-out the judge lets run by itself: `xargs -P` up to 4 (more asks a person),
/// nested three deep, wants 84 processes, more than a run's cap (`limits.pids`, 32), so each
/// run holds its cap until its sleeps end.
pub const FAN_OUT: &str = "seq 64 | xargs -P 4 -n 16 xargs -P 4 -n 4 xargs -P 4 -n 1 sleep 75";
/// Runs of it at once (`limits.concurrent`, 4): every autonomous run slot the node has.
const FAN_OUTS: usize = 4;

/// Starts [`FAN_OUTS`] autonomous fan-outs, waits until they hold processes, then makes agent
/// turns: a `read` while they are live (no run slot needed), and a shell `ls` through the
/// node, a run, which waits for a slot (the fan-outs hold all four until their run time is
/// up: measured 30 s) and then runs, never failing for want of a process. The gateway and the
/// node keep the room the container's `pids_limit` leaves above the runs' caps.
pub fn fan_out_then_a_turn(
    stack: &Stack,
    web: &WebClient,
    login: &Login,
    workspace: &Path,
    audit: &Path,
) {
    let idle = processes(stack).expect("a process count");
    let t = Instant::now();
    for _ in 0..FAN_OUTS {
        new_task(web, login, "exec", json!({ "command": FAN_OUT }));
    }
    let seen = std::cell::RefCell::new(Vec::new());
    let live = wait_until_or(
        "the fan-out's processes",
        Duration::from_secs(180),
        || {
            let n = processes(stack);
            seen.borrow_mut().push(n.unwrap_or(0));
            n.filter(|n| *n >= idle + 40)
        },
        || fan_out_state(stack, audit, idle, &seen.borrow()),
    );
    eprintln!(
        "compose_stack: fan-out live after {:.1} s: {live} processes in the agent container (idle {idle})",
        t.elapsed().as_secs_f64()
    );
    let marker = "fan-out-read-3c9e";
    std::fs::write(workspace.join("fan-out.txt"), marker).unwrap();
    let _ = std::process::Command::new("chown")
        .args(["1000:1000"])
        .arg(workspace.join("fan-out.txt"))
        .status();
    let secs = autonomous_turn(
        stack,
        web,
        login,
        "a read's output at the model during the fan-out",
        ("read", json!({"path":"fan-out.txt"})),
        marker,
    );
    let still = processes(stack).expect("a process count during the fan-out");
    eprintln!("compose_stack: during the fan-out, a read turn in {secs:.1} s ({still} processes)");
    assert!(
        still >= idle + 40,
        "the fan-out ended before the turn did ({still} processes, idle {idle}): nothing shown"
    );
    let listed = "fan-out-listed-5d1a.txt";
    std::fs::write(workspace.join(listed), "").unwrap();
    let secs = autonomous_turn(
        stack,
        web,
        login,
        "a shell ls's output at the model during the fan-out",
        ("exec", json!({"command":"ls"})),
        listed,
    );
    let now = processes(stack).unwrap_or(0);
    eprintln!(
        "compose_stack: after the fan-out began, a shell ls turn in {secs:.1} s ({now} processes now)"
    );
}
