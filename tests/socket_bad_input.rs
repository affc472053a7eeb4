//! Bad input against the real `serve` binary over raw Unix streams: every rejection gets its
//! precise reason in the documented shape, is audited, and the server keeps serving.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;
use support::socket::*;

const TOKEN: &str = "bad-input-test-token-0123456789ab";

fn good_request_is_allowed(w: &World) {
    let reply = raw_exchange(
        &w.socket(),
        request_line(TOKEN, "good", "ls").as_bytes(),
        true,
    );
    let v = first_json(&reply);
    assert_eq!(v["type"], "decision", "{reply}");
    assert_eq!(v["decision"], "allow-once", "{reply}");
    assert_eq!(v["id"], "good");
    assert!(
        v.get("reason").is_none(),
        "an allow carries no reason: {reply}"
    );
}

fn exec_request_json(argv: &[&str]) -> String {
    serde_json::json!({"command":argv,"rawCommand":argv.join(" "),"cwd":"/usr","env":null,
        "timeoutMs":5000,"needsScreenRecording":false,"agentId":"main","sessionKey":"agent:main:main",
        "approvalDecision":null})
    .to_string()
}

fn reject_reason_of_exec(reply: &str) -> (String, String) {
    let v = first_json(reply);
    assert_eq!(v["type"], "exec-res", "{reply}");
    assert_eq!(v["ok"], false, "{reply}");
    (
        v["error"]["reason"].as_str().unwrap_or_default().to_owned(),
        v["error"]["code"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn each_bad_input_gets_its_precise_rejection() {
    let w = World::new(NEW, TOKEN, &[]);
    let serve = Serve::start(&w, &HIGH_RATE, &[]);
    let sock = w.socket();

    // Wrong token on `request`: a deny decision (the Node client's only accepted shape).
    let r = raw_exchange(
        &sock,
        request_line("wrong-token", "t1", "ls").as_bytes(),
        true,
    );
    let v = first_json(&r);
    assert_eq!(
        (v["type"].as_str(), v["decision"].as_str()),
        (Some("decision"), Some("deny")),
        "{r}"
    );
    assert_eq!(v["reason"], "token");
    assert_eq!(v["id"], "t1");

    // Bad HMAC.
    let rj = exec_request_json(&["/usr/bin/uname", "-s"]);
    let mut line = exec_line(TOKEN, &fresh_nonce(), now_ms(), &rj);
    line = line.replace("\"hmac\":\"", "\"hmac\":\"00");
    let r = raw_exchange(&sock, line.as_bytes(), true);
    assert_eq!(
        reject_reason_of_exec(&r),
        ("hmac".into(), "INVALID_REQUEST".into()),
        "{r}"
    );
    let line = exec_line("not-the-token", &fresh_nonce(), now_ms(), &rj);
    let r = raw_exchange(&sock, line.as_bytes(), true);
    assert_eq!(reject_reason_of_exec(&r).0, "hmac", "{r}");

    // Stale and future ts (valid HMAC over the shifted ts).
    for shift in [-11_000i64, 11_000] {
        let line = exec_line(TOKEN, &fresh_nonce(), now_ms() + shift, &rj);
        let r = raw_exchange(&sock, line.as_bytes(), true);
        assert_eq!(reject_reason_of_exec(&r).0, "ttl", "shift {shift}: {r}");
    }

    // Replayed nonce: the first frame passes auth, the identical second one does not.
    let line = exec_line(TOKEN, &fresh_nonce(), now_ms(), &rj);
    let first = raw_exchange(&sock, line.as_bytes(), true);
    let v = first_json(&first);
    assert_eq!(v["type"], "exec-res", "{first}");
    let reason = v["error"]["reason"].as_str().unwrap_or("");
    assert!(
        !["hmac", "ttl", "replay", "json"].contains(&reason),
        "first exec rejected: {first}"
    );
    let again = raw_exchange(&sock, line.as_bytes(), true);
    assert_eq!(reject_reason_of_exec(&again).0, "replay", "{again}");

    // A line over the 256,000-byte cap (no newline in the first 300 KB).
    let mut s = UnixStream::connect(&sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let big = vec![b'a'; 300_000];
    let mut writer = s.try_clone().expect("clone");
    let t = std::thread::spawn(move || {
        let _ = writer.write_all(&big);
    });
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let _ = t.join();
    let v = first_json(&out);
    assert_eq!(v["decision"], "deny", "{out}");
    assert_eq!(v["reason"], "too-large", "{out}");
    assert!(out.contains("\"type\":\"exec-res\""), "both shapes: {out}");

    // A complete frame but no newline, then EOF.
    let mut no_nl = request_line(TOKEN, "e1", "ls");
    no_nl.pop();
    let r = raw_exchange(&sock, no_nl.as_bytes(), true);
    assert_eq!(first_json(&r)["reason"], "eof", "{r}");

    // Invalid JSON, and JSON that is no known frame.
    let r = raw_exchange(&sock, b"{\"type\":\"request\", nope\n", true);
    assert_eq!(first_json(&r)["reason"], "json", "{r}");
    let r = raw_exchange(
        &sock,
        b"{\"type\":\"request\",\"id\":\"m1\",\"token\":7}\n",
        true,
    );
    let v = first_json(&r);
    assert_eq!(
        (
            v["decision"].as_str(),
            v["reason"].as_str(),
            v["id"].as_str()
        ),
        (Some("deny"), Some("json"), Some("m1")),
        "{r}"
    );
    let r = raw_exchange(&sock, b"{\"type\":\"hello\",\"id\":\"u1\"}\n", true);
    let v = first_json(&r);
    assert_eq!(
        (v["reason"].as_str(), v["id"].as_str()),
        (Some("unknown-type"), Some("u1")),
        "{r}"
    );
    let lines: Vec<&str> = r.lines().collect();
    assert_eq!(lines.len(), 2, "unknown type answers in both shapes: {r}");
    let e: serde_json::Value = serde_json::from_str(lines[1]).expect("json");
    assert_eq!(e["error"]["reason"], "unknown-type");

    // A client that does not half-close (older clients) still gets its reply.
    let mut s = UnixStream::connect(&sock).expect("connect");
    s.write_all(request_line(TOKEN, "nohc", "ls").as_bytes())
        .expect("write");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert_eq!(first_json(&out)["decision"], "allow-once", "{out}");

    good_request_is_allowed(&w);

    let needles: Vec<String> = [
        "token",
        "hmac",
        "ttl",
        "replay",
        "too-large",
        "eof",
        "json",
        "unknown-type",
    ]
    .iter()
    .map(|r| format!("\"reason\":\"{r}\""))
    .collect();
    let audit = audit_with(&w, &needles.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        !audit.contains("wrong-token") && !audit.contains(TOKEN),
        "tokens must be redacted"
    );
    drop(serve);
    let (code, out, err) = guard_cli(
        &["audit", "verify", w.audit_path().to_str().expect("utf8")],
        &[],
    );
    assert_eq!(code, 0, "audit verify: {out}{err}");
}

const PEER_CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("CONNECT-ERROR", e.errno); sys.exit(0)
s.sendall(sys.argv[2].encode()); s.shutdown(socket.SHUT_WR)
out = b""
while True:
    d = s.recv(65536)
    if not d: break
    out += d
print(out.decode(), end="")
"#;

fn as_nobody(sock: &std::path::Path, line: &str, dac_override: bool) -> String {
    let mut c = Command::new("setpriv");
    c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"]);
    if dac_override {
        // Lets uid 65534 pass the 0700/0600 file modes so the SO_PEERCRED check is reached.
        c.args([
            "--inh-caps",
            "+dac_override",
            "--ambient-caps",
            "+dac_override",
        ]);
    }
    let out = c
        .args(["/usr/bin/python3", "-c", PEER_CLIENT])
        .arg(sock)
        .arg(line)
        .output()
        .expect("setpriv (util-linux) and /usr/bin/python3 are required");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn another_uid_is_refused_by_file_modes_and_by_peercred() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &HIGH_RATE, &[]);
    let line = request_line(TOKEN, "p1", "ls");
    // Layer 1: dir 0700 + socket 0600 → uid 65534 cannot even connect (EACCES = 13).
    assert_eq!(
        as_nobody(&w.socket(), &line, false).trim(),
        "CONNECT-ERROR 13"
    );
    // Layer 2: with the file modes bypassed, the SO_PEERCRED check still says no.
    let r = as_nobody(&w.socket(), &line, true);
    let v = first_json(&r);
    assert_eq!(
        (v["decision"].as_str(), v["reason"].as_str()),
        (Some("deny"), Some("peer-uid")),
        "{r}"
    );
    audit_with(&w, &["\"uid\":65534", "peer-uid"]);
    good_request_is_allowed(&w);
}

#[test]
fn rate_limit_per_peer_then_recovers() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(
        &w,
        &[
            ("SANCTUM_SOCKET_RATE_PER_SEC", "2"),
            ("SANCTUM_SOCKET_RATE_BURST", "5"),
        ],
        &[],
    );
    let mut reasons = Vec::new();
    for i in 0..8 {
        let r = raw_exchange(
            &w.socket(),
            request_line(TOKEN, &format!("r{i}"), "ls").as_bytes(),
            true,
        );
        let v = first_json(&r);
        reasons.push(
            v["reason"]
                .as_str()
                .unwrap_or(v["decision"].as_str().unwrap_or(""))
                .to_owned(),
        );
    }
    assert_eq!(&reasons[..5], &["allow-once"; 5], "{reasons:?}");
    assert!(
        reasons[5..].iter().all(|r| r == "rate-limit"),
        "{reasons:?}"
    );
    std::thread::sleep(Duration::from_millis(700));
    good_request_is_allowed(&w);
}

#[test]
fn a_thousand_concurrent_clients_all_get_answers() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &HIGH_RATE, &[]);
    let sock = w.socket();
    let handles: Vec<_> = (0..1000)
        .map(|i| {
            let sock = sock.clone();
            std::thread::spawn(move || {
                let r = raw_exchange(
                    &sock,
                    request_line(TOKEN, &format!("c{i}"), "ls").as_bytes(),
                    true,
                );
                let v = first_json(&r);
                (
                    v["id"].as_str().map(str::to_owned),
                    v["decision"].as_str().map(str::to_owned),
                )
            })
        })
        .collect();
    let mut ok = 0;
    for (i, h) in handles.into_iter().enumerate() {
        let (id, d) = h.join().expect("client thread");
        assert_eq!(id.as_deref(), Some(format!("c{i}").as_str()));
        assert_eq!(d.as_deref(), Some("allow-once"));
        ok += 1;
    }
    assert_eq!(ok, 1000);
    good_request_is_allowed(&w);
}

#[test]
fn a_silent_client_gets_read_timeout_not_silence() {
    let w = World::new(NEW, TOKEN, &[]);
    let cfg = w.write_config("[socket]\nread_timeout_ms = 500\n");
    let _serve = Serve::start(&w, &HIGH_RATE, &["--config", cfg.to_str().expect("utf8")]);
    let mut s = UnixStream::connect(w.socket()).expect("connect");
    s.write_all(b"{\"type\":\"request\"").expect("partial line");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let v = first_json(&out);
    assert_eq!(
        (v["decision"].as_str(), v["reason"].as_str()),
        (Some("deny"), Some("read-timeout")),
        "{out}"
    );
    good_request_is_allowed(&w);
}

/// A line that arrives late and in pieces (not there when the connection is accepted, so
/// the server waits for it on the event loop instead of answering at once) is answered the
/// same way, and so is a line sent before the client half-closes or not at all.
#[test]
fn a_line_sent_late_and_in_pieces_is_answered() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &HIGH_RATE, &[]);
    let line = request_line(TOKEN, "late", "ls");
    let (a, b) = line.as_bytes().split_at(line.len() / 2);
    for half_close in [true, false] {
        let mut s = UnixStream::connect(w.socket()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        std::thread::sleep(Duration::from_millis(150));
        s.write_all(a).expect("first half");
        std::thread::sleep(Duration::from_millis(150));
        s.write_all(b).expect("second half");
        if half_close {
            s.shutdown(std::net::Shutdown::Write).expect("half-close");
        }
        let mut out = String::new();
        s.read_to_string(&mut out).expect("reply, then close");
        let v = first_json(&out);
        assert_eq!(
            (v["decision"].as_str(), v["id"].as_str()),
            (Some("allow-once"), Some("late")),
            "{out}"
        );
    }
    good_request_is_allowed(&w);
}
