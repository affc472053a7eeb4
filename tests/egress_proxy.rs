//! `sanctum-guard egress`, the agent's one way out, run for real on loopback: an allowed
//! destination is tunnelled (CONNECT) or forwarded (absolute-form HTTP) byte for byte; every
//! other destination, spelling and malformed head is refused before anything is connected;
//! a host name never reaches loopback; every decision is in its audit log, whose chain
//! verifies. (Loopback destinations are reachable only through IP-literal entries, which is
//! what lets this test run without leaving the machine.)
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;
use support::egress::*;
use support::process::*;

struct Proxy {
    _e: Egress,
    port: u16,
    state: tempfile::TempDir,
}

/// Starts the proxy on a port of the kernel's choosing (`--listen 127.0.0.1:0`) and reads
/// the bound address from the line it prints once it listens: no port is picked in advance
/// that a test running beside this one could take first.
fn start(allow: &[String]) -> Proxy {
    start_with(allow, &[], None)
}

/// [`start`] with more arguments (`--policy F`), optionally inside its own mount namespace
/// whose /etc/hosts is `hosts` (names the test maps where it wants).
fn start_with(allow: &[String], extra: &[&str], hosts: Option<&std::path::Path>) -> Proxy {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = match hosts {
        None => Command::new(guard_bin()),
        Some(h) => {
            let mut c = Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(r#"mount --bind "$0" /etc/hosts && exec "$@""#)
                .arg(h)
                .arg(guard_bin());
            c
        }
    };
    cmd.args(["egress", "--listen", "127.0.0.1:0"])
        .arg("--state-dir")
        .arg(state.path().join("egress"))
        .args(extra);
    for a in allow {
        cmd.args(["--allow", a]);
    }
    let e = spawn_egress(cmd, &state.path().join("egress"));
    Proxy {
        port: e.port,
        _e: e,
        state,
    }
}

/// Sends `head` (+ `body`) and returns everything the proxy and upstream answered.
fn ask(p: &Proxy, head: &str, body: &[u8]) -> String {
    through(p.port, head, body)
}

fn records(p: &Proxy) -> Vec<serde_json::Value> {
    egress_records(&p.state.path().join("egress"))
}

#[test]
fn allowed_destinations_pass_byte_for_byte_and_nothing_else_connects() {
    let (up, seen) = upstream();
    let (other, other_seen) = upstream();
    let p = start(&[format!("127.0.0.1:{up}"), format!("localhost:{other}")]);

    // CONNECT tunnel to an allowed IP-literal destination.
    let t = ask(
        &p,
        &format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\nHost: x\r\n\r\n"),
        b"ping",
    );
    assert!(t.starts_with("HTTP/1.1 200"), "{t}");
    assert!(t.ends_with("pong"), "{t}");
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");

    // Absolute-form HTTP: forwarded in origin form, proxy headers dropped, connection closed.
    let g = ask(
        &p,
        &format!("POST http://127.0.0.1:{up}/v1/chat?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n"),
        b"hi",
    );
    assert_eq!(g, "pong");
    let got = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(got.starts_with("POST /v1/chat?q=1 HTTP/1.1\r\n"), "{got}");
    assert!(
        got.contains("Connection: close\r\n")
            && !got.contains("Proxy-Authorization")
            && !got.contains("keep-alive"),
        "{got}"
    );

    // Refusals: nothing reaches any upstream.
    let refused = [
        (format!("CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n"), "403"),
        (format!("CONNECT 127.0.0.2:{up} HTTP/1.1\r\n\r\n"), "403"),
        (format!("CONNECT localhost:{up} HTTP/1.1\r\n\r\n"), "403"),
        (format!("CONNECT [::1]:{up} HTTP/1.1\r\n\r\n"), "403"),
        // A listed NAME that resolves to loopback is never connected.
        (format!("CONNECT localhost:{other} HTTP/1.1\r\n\r\n"), "502"),
        (
            format!("GET http://localhost:{other}/ HTTP/1.1\r\n\r\n"),
            "502",
        ),
        (
            format!("GET https://127.0.0.1:{up}/ HTTP/1.1\r\n\r\n"),
            "400",
        ),
        (
            format!("GET /relative HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n"),
            "400",
        ),
        (
            format!("GET http://user:pw@127.0.0.1:{up}/ HTTP/1.1\r\n\r\n"),
            "400",
        ),
        ("\u{1}\u{2}garbage\r\n\r\n".to_owned(), "400"),
        (
            format!(
                "GET http://127.0.0.1:{up}/{} HTTP/1.1\r\n\r\n",
                "a".repeat(20_000)
            ),
            "431",
        ),
    ];
    for (head, status) in &refused {
        let a = ask(&p, head, b"");
        assert!(
            a.starts_with(&format!("HTTP/1.1 {status}")),
            "{head:.60}: {a}"
        );
    }
    assert!(
        seen.recv_timeout(Duration::from_millis(300)).is_err(),
        "a refused request reached the upstream"
    );
    assert!(other_seen.recv_timeout(Duration::from_millis(100)).is_err());

    // Every decision is on record, allowed and refused (denials of one kind within a window
    // counted after the first), and the chain verifies.
    wait_until("the egress records", Duration::from_secs(20), || {
        (denials(&records(&p)) >= refused.len() as u64).then_some(())
    });
    let recs = records(&p);
    let allowed: Vec<_> = recs
        .iter()
        .filter(|r| r["fields"]["verdict"] == "allow")
        .collect();
    assert!(allowed
        .iter()
        .any(|r| r["fields"]["method"] == "CONNECT" && r["fields"]["phase"] == "decided"));
    assert!(allowed
        .iter()
        .any(|r| r["fields"]["phase"] == "closed" && r["fields"]["bytesUp"].as_u64() >= Some(4)));
    // Every refused request is counted once (the readiness probe's empty connection, the
    // first of its kind and so on record in full, is one more).
    assert_eq!(denials(&recs), refused.len() as u64, "{recs:#?}");
    assert!(
        !std::fs::read_to_string(p.state.path().join("egress/egress-audit.jsonl"))
            .unwrap()
            .contains("c2VjcmV0"),
        "a proxy credential reached the audit log"
    );
    let (code, out, err) = guard_cli(
        &[
            "audit",
            "verify",
            p.state
                .path()
                .join("egress/egress-audit.jsonl")
                .to_str()
                .unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_pattern_or_malformed_allow_entry_refuses_to_start() {
    let state = tempfile::tempdir().unwrap();
    for bad in [
        "*.github.com:443",
        ".github.io:443",
        "https://api.example.com:443",
        "api.example.com",
    ] {
        let out = Command::new(guard_bin())
            .args(["egress", "--listen", "127.0.0.1:0", "--allow", bad])
            .arg("--state-dir")
            .arg(state.path().join("e"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(bad), "{bad}: {err}");
    }
}

/// Many clients at once, most of them refused: the proxy keeps answering the allowed one.
/// Refused requests on record: each denial in full, plus the counts of the rest, less the
/// readiness probe's empty connection.
fn denials(recs: &[serde_json::Value]) -> u64 {
    let full = recs
        .iter()
        .filter(|r| r["fields"]["verdict"] == "deny")
        .filter(|r| r["fields"]["reason"] != "connection closed before a request")
        .count() as u64;
    let counted: u64 = recs
        .iter()
        .filter(|r| r["fields"]["phase"] == "denied")
        .map(|r| r["fields"]["count"].as_u64().unwrap_or(0))
        .sum();
    full + counted
}

/// Denied connections do not each write a record: a flood of them (10 s from one client)
/// grows the egress audit log by kilobytes, every denial counted.
#[test]
fn a_flood_of_denied_connections_grows_the_audit_log_by_kilobytes() {
    let p = start(&[]);
    let log = p.state.path().join("egress/egress-audit.jsonl");
    let before = std::fs::metadata(&log).map_or(0, |m| m.len());
    let start = std::time::Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(10) {
        let a = ask(&p, "CONNECT 10.9.9.9:443 HTTP/1.1\r\n\r\n", b"");
        assert!(a.starts_with("HTTP/1.1 403"), "{a}");
        n += 1;
    }
    wait_until("every denial counted", Duration::from_secs(20), || {
        (denials(&records(&p)) == n).then_some(())
    });
    let grew = std::fs::metadata(&log).unwrap().len() - before;
    eprintln!("{n} denied connections in 10 s: the egress audit log grew {grew} bytes");
    assert!(n > 1000, "a flood: {n}");
    assert!(grew < 32 * 1024, "{grew} bytes for {n} denials");
}

#[test]
fn a_flood_of_refused_clients_does_not_stop_allowed_traffic() {
    let (up, seen) = upstream();
    let p = start(&[format!("127.0.0.1:{up}")]);
    let floods: Vec<_> = (0..200)
        .map(|i| {
            let port = p.port;
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
                let _ = s.write_all(
                    format!("CONNECT 10.9.9.{}:443 HTTP/1.1\r\n\r\n", i % 250).as_bytes(),
                );
                let mut line = String::new();
                let _ = BufReader::new(s).read_line(&mut line);
                line
            })
        })
        .collect();
    let t = ask(
        &p,
        &format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n"),
        b"ping",
    );
    assert!(t.ends_with("pong"), "{t}");
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");
    for f in floods {
        assert!(f.join().unwrap().starts_with("HTTP/1.1 403"));
    }
}

/// Rules by host, port, scheme, method and path from a policy file, judged on what the proxy
/// reads: deny wins, a tunnel cannot pass a path rule, a path that reads two ways never
/// passes an allow prefix, the Host header must be the URL's, and nothing pipelined or
/// smuggled behind the judged request reaches the server.
#[test]
fn policy_rules_judge_host_port_method_and_path() {
    let (up, seen) = upstream();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            r#"version = 1
[[egress.rules]]
action = "allow"
host = "127.0.0.1"
ports = [{up}]
scheme = "http"
methods = ["GET"]
path_prefix = "/ok/"
[[egress.rules]]
action = "deny"
host = "127.0.0.1"
ports = [{up}]
path_prefix = "/ok/secret"
"#
        ),
    )
    .unwrap();
    let p = start_with(&[], &["--policy", policy.to_str().unwrap()], None);
    let host = format!("127.0.0.1:{up}");
    let get = |path: &str, headers: &str| {
        format!("GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n{headers}\r\n")
    };
    // A path that reads two ways never passes the allow prefix and meets the deny's
    // (`denied by`); a clear path outside every rule is unlisted (`no egress rule`).
    // Allowed: reaches the server as judged, in every spelling of the address.
    for head in [
        get("/ok/a", ""),
        format!("GET http://2130706433:{up}/ok/b HTTP/1.1\r\n\r\n"),
        format!("GET http://0x7f.1:{up}/ok/c HTTP/1.1\r\n\r\n"),
    ] {
        assert_eq!(ask(&p, &head, b""), "pong", "{head}");
        let got = seen.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(got.starts_with("GET /ok/"), "{got}");
    }
    let rows = [
        (get("/ok/secret/x", ""), "403", "denied by"),
        (get("/ok/%73ecret", ""), "403", "denied by"),
        (
            format!(
                "POST http://{host}/ok/a HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n"
            ),
            "403",
            "no egress rule",
        ),
        (get("/ok/../admin", ""), "403", "denied by"),
        (get("/ok/%2e%2e/admin", ""), "403", "denied by"),
        (get("/ok/..%2fadmin", ""), "403", "denied by"),
        (get("/ok//x", ""), "403", "denied by"),
        (get("/other", ""), "403", "no egress rule"),
        // A tunnel hides its path: the deny rule's path covers it.
        (
            format!("CONNECT {host} HTTP/1.1\r\n\r\n"),
            "403",
            "denied by",
        ),
        (
            format!("GET http://{host}/ok/a HTTP/1.1\r\nHost: internal.example\r\n\r\n"),
            "400",
            "Host header",
        ),
        (
            format!("GET http://{host}/ok/a HTTP/1.1\r\nHost: {host}\r\nHost: {host}\r\n\r\n"),
            "400",
            "Host header",
        ),
        (
            get("/ok/a", "Transfer-Encoding: chunked\r\n"),
            "400",
            "Transfer-Encoding",
        ),
        (
            get("/ok/a", "Content-Length: 1\r\nContent-Length: 2\r\n"),
            "400",
            "Content-Length",
        ),
        (
            get("/ok/a", "Content-Length: +5\r\n"),
            "400",
            "Content-Length",
        ),
        (
            format!("GET http://[{host}]/ok/a HTTP/1.1\r\n\r\n"),
            "400",
            "",
        ),
    ];
    for (head, status, why) in &rows {
        let a = ask(&p, head, b"");
        assert!(
            a.starts_with(&format!("HTTP/1.1 {status}")) && a.contains(why),
            "{head:.80}: {a}"
        );
    }
    assert!(
        seen.recv_timeout(Duration::from_millis(300)).is_err(),
        "a refused request reached the upstream"
    );
    // Pipelined and body-smuggled requests: only the judged request (and its declared body)
    // is forwarded.
    for (head, body) in [
        (
            get("/ok/a", ""),
            &b"GET /admin HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        ),
        (
            get("/ok/a", "Content-Length: 3\r\n"),
            &b"abcGET /admin HTTP/1.1\r\n\r\n"[..],
        ),
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let got = seen.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(got.starts_with("GET /ok/a"), "{got}");
        assert!(!got.contains("/admin"), "smuggled: {got:?}");
        // The upstream reads what arrives first; give the rest time to (not) arrive.
        std::thread::sleep(Duration::from_millis(200));
        assert!(seen.recv_timeout(Duration::from_millis(100)).is_err());
    }
    // `egress rules` prints what the proxy serves, where each rule was written.
    let (code, out, err) = guard_cli(
        &[
            "egress",
            "rules",
            "--policy",
            policy.to_str().unwrap(),
            "--allow",
            "api.example.com:443",
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("allow")
            && lines[0].contains("path=/ok/*")
            && lines[0].contains("methods=GET"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("deny") && lines[1].contains("egress rule 2"),
        "{out}"
    );
    assert!(
        lines[2].contains("api.example.com:443") && lines[2].contains("--allow"),
        "{out}"
    );
}

/// A policy rule the proxy could not judge as written refuses to start, naming the line.
#[test]
fn a_rule_that_reads_two_ways_refuses_to_load() {
    let dir = tempfile::tempdir().unwrap();
    for (rule, why) in [
        ("host = \"*.com\"\nports = [443]", "two labels"),
        (
            "host = \"api.example.com\"\nports = [443]\npath_prefix = \"/v1/\"",
            r#"scheme = "http""#,
        ),
        ("host = \"a*.example.com\"\nports = [443]", "wildcard"),
        ("host = \"api.example.com\"\nports = [0]", "1-65535"),
    ] {
        let policy = dir.path().join("p.toml");
        std::fs::write(
            &policy,
            format!("version = 1\n[[egress.rules]]\naction = \"allow\"\n{rule}\n"),
        )
        .unwrap();
        let (code, out, err) = guard_cli(
            &["egress", "rules", "--policy", policy.to_str().unwrap()],
            &[],
        );
        assert_eq!(code, 2, "{rule}: {out}{err}");
        // `FILE:LINE:COLUMN: why`, the rule's own line (line 2 is `[[egress.rules]]`).
        assert!(
            err.contains(why) && err.contains(&format!("{}:2:", policy.display())),
            "{rule}: {err}"
        );
    }
}

/// Names never lead home, whatever the hosts file says: Debian's `127.0.1.1 <hostname>`, a
/// name mapped to the metadata address or a private one, refused after resolution with the
/// reason; only an `internal` rule reaches a private address, and never loopback.
#[test]
fn names_the_hosts_file_maps_home_are_refused_after_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        "127.0.0.1 localhost\n127.0.1.1 debian-host.test\n169.254.169.254 metadata.test\n\
         10.77.0.9 private.test\n172.30.77.20 svc.example.test\n10.77.0.10 model.test\n",
    )
    .unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let policy = dir2.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[egress.rules]]\naction = \"allow\"\nhost = \"*.example.test\"\nports = [443]\n\
         [[egress.rules]]\naction = \"allow\"\nhost = \"model.test\"\nports = [443]\ninternal = true\n\
         [[egress.rules]]\naction = \"allow\"\nhost = \"metadata.test\"\nports = [80]\ninternal = true\n",
    )
    .unwrap();
    let p = start_with(
        &["debian-host.test:443".into(), "private.test:443".into()],
        &["--policy", policy.to_str().unwrap()],
        Some(&hosts),
    );
    for (head, why) in [
        ("CONNECT debian-host.test:443 HTTP/1.1\r\n\r\n", "loopback"),
        ("CONNECT private.test:443 HTTP/1.1\r\n\r\n", "private"),
        ("CONNECT svc.example.test:443 HTTP/1.1\r\n\r\n", "private"),
        (
            "GET http://metadata.test/latest/meta-data/ HTTP/1.1\r\n\r\n",
            "link-local",
        ),
    ] {
        let a = ask(&p, head, b"");
        assert!(
            a.starts_with("HTTP/1.1 502") && a.contains(why),
            "{head}: {a}"
        );
    }
    // The internal rule passes the address check: the connection is attempted (whether
    // anything answers there depends on the machine's network), never refused by the rule.
    let a = ask(&p, "CONNECT model.test:443 HTTP/1.1\r\n\r\n", b"");
    assert!(
        (a.starts_with("HTTP/1.1 200") || a.starts_with("HTTP/1.1 502"))
            && !a.contains("may reach"),
        "{a}"
    );
}

/// The proxy does not hold a connection for its audit record's fsync, only for its write: so
/// a proxy killed (`kill -9`) the moment its clients have their answers still leaves the
/// record of every connection it made, in a chain that verifies.
#[test]
fn a_killed_proxy_loses_no_record_of_a_connection_it_made() {
    let (up, seen) = upstream();
    let mut p = start(&[format!("127.0.0.1:{up}")]);
    let n = 20;
    for _ in 0..n {
        let t = ask(
            &p,
            &format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\nHost: x\r\n\r\n"),
            b"ping",
        );
        assert!(t.starts_with("HTTP/1.1 200") && t.ends_with("pong"), "{t}");
        assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "ping");
    }
    p._e.child.kill9();
    let allowed = records(&p)
        .iter()
        .filter(|r| r["fields"]["phase"] == "decided" && r["fields"]["verdict"] == "allow")
        .count();
    assert_eq!(allowed, n, "every connection made is on record");
    let log = p.state.path().join("egress/egress-audit.jsonl");
    assert!(
        matches!(
            sanctum_guard::audit::verify(&log).unwrap(),
            sanctum_guard::audit::Verification::Ok { .. }
        ),
        "the chain verifies"
    );
}
