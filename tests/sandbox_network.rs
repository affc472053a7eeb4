//! Each network profile keeps its promise against attacks from inside the
//! sandbox. `network = none`: no socket of any kind. `network = PORTS`: outbound TCP connects
//! to the listed ports only; no implicit connect (TCP Fast Open), no implicit bind (`listen`
//! without `bind`), no protocol or family Landlock's TCP rules do not see. Every attack aims
//! at a real listener on 127.0.0.1 / ::1 whose port is NOT allowed, and the listener must
//! never see a connection.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use std::net::TcpListener;
use support::sandbox::*;

/// `probe net OP DOMAIN TYPE PROTO FAM PORT` (FAM: 4 = 127.0.0.1, 6 = ::1,
/// m = ::ffff:127.0.0.1, u = AF_UNSPEC) and the answer under `--network PORTS`.
/// Under `network = none` every row must be `ERR EPERM` (socket() itself is refused).
const ATTACKS: &[(&str, [&str; 5], &str)] = &[
    // The Landlock rule itself, from every address form.
    ("connect v4", ["connect", "2", "1", "0", "4"], "ERR EACCES"),
    (
        "connect IPPROTO_TCP",
        ["connect", "2", "1", "6", "4"],
        "ERR EACCES",
    ),
    (
        "connect nonblock|cloexec",
        ["connect", "2", "526337", "0", "4"],
        "ERR EACCES",
    ),
    ("connect v6", ["connect", "10", "1", "0", "6"], "ERR EACCES"),
    (
        "connect v4-mapped",
        ["connect", "10", "1", "0", "m"],
        "ERR EACCES",
    ),
    (
        "v4 addr on v6 socket",
        ["connect", "10", "1", "0", "4"],
        "ERR EINVAL",
    ),
    (
        "disconnect then connect",
        ["unspec_then_connect", "2", "1", "0", "4"],
        "ERR EACCES",
    ),
    ("bind", ["bind", "2", "1", "0", "4"], "ERR EACCES"),
    (
        "bind AF_UNSPEC",
        ["bind", "2", "1", "0", "u"],
        "ERR EAFNOSUPPORT",
    ),
    // Implicit connect: TCP Fast Open never calls connect(2).
    (
        "sendto MSG_FASTOPEN v4",
        ["fastopen", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    (
        "sendto MSG_FASTOPEN v6",
        ["fastopen", "10", "1", "0", "6"],
        "ERR EPERM",
    ),
    (
        "sendto MSG_FASTOPEN mapped",
        ["fastopen", "10", "1", "0", "m"],
        "ERR EPERM",
    ),
    (
        "sendto MSG_FASTOPEN|DONTWAIT",
        ["fastopen_nosig", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    (
        "sendmsg MSG_FASTOPEN",
        ["sendmsg_fastopen", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    (
        "sendmsg MSG_FASTOPEN v6",
        ["sendmsg_fastopen", "10", "1", "0", "6"],
        "ERR EPERM",
    ),
    (
        "sendmmsg MSG_FASTOPEN",
        ["sendmmsg_fastopen", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    (
        "sendmmsg MSG_FASTOPEN v6",
        ["sendmmsg_fastopen", "10", "1", "0", "6"],
        "ERR EPERM",
    ),
    (
        "TCP_FASTOPEN_CONNECT",
        ["fastopen_connect", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    (
        "TCP_FASTOPEN listener",
        ["fastopen_listener", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    // Implicit bind: listen() on an unbound socket picks an ephemeral port.
    (
        "listen autobind v4",
        ["listen", "2", "1", "0", "4"],
        "ERR EPERM",
    ),
    (
        "listen autobind v6",
        ["listen", "10", "1", "0", "6"],
        "ERR EPERM",
    ),
    // Stream protocols other than TCP, which Landlock's TCP rules do not see.
    ("MPTCP", ["connect", "2", "1", "262", "4"], "ERR EPERM"),
    ("MPTCP v6", ["connect", "10", "1", "262", "6"], "ERR EPERM"),
    (
        "SCTP stream",
        ["connect", "2", "1", "132", "4"],
        "ERR EPERM",
    ),
    (
        "SCTP seqpacket",
        ["connect", "2", "5", "132", "4"],
        "ERR EPERM",
    ),
    ("DCCP", ["connect", "2", "6", "33", "4"], "ERR EPERM"),
    ("SOCK_RDM", ["socket", "2", "4", "0", "4"], "ERR EPERM"),
    // Datagrams and raw sockets.
    ("UDP sendto", ["sendto", "2", "2", "0", "4"], "ERR EPERM"),
    (
        "UDP v6 sendto",
        ["sendto", "10", "2", "0", "6"],
        "ERR EPERM",
    ),
    (
        "UDP nonblock",
        ["sendto", "2", "2050", "0", "4"],
        "ERR EPERM",
    ),
    (
        "ICMP ping socket",
        ["socket", "2", "2", "1", "4"],
        "ERR EPERM",
    ),
    ("raw TCP", ["socket", "2", "3", "6", "4"], "ERR EPERM"),
    ("raw v6", ["socket", "10", "3", "58", "4"], "ERR EPERM"),
    ("SOCK_PACKET", ["socket", "2", "10", "0", "4"], "ERR EPERM"),
    // Families Landlock has no rule for.
    (
        "AF_UNIX stream",
        ["socket", "1", "1", "0", "4"],
        "ERR EPERM",
    ),
    ("AF_UNIX dgram", ["socket", "1", "2", "0", "4"], "ERR EPERM"),
    ("AF_PACKET", ["socket", "17", "3", "0", "4"], "ERR EPERM"),
    ("AF_NETLINK", ["socket", "16", "3", "0", "4"], "ERR EPERM"),
    ("AF_VSOCK", ["socket", "40", "1", "0", "4"], "ERR EPERM"),
    ("AF_ALG", ["socket", "38", "5", "0", "4"], "ERR EPERM"),
    ("AF_XDP", ["socket", "44", "3", "0", "4"], "ERR EPERM"),
    ("AF_RDS", ["socket", "21", "5", "0", "4"], "ERR EPERM"),
    ("AF_TIPC", ["socket", "30", "5", "0", "4"], "ERR EPERM"),
    ("AF_KCM", ["socket", "41", "5", "0", "4"], "ERR EPERM"),
    ("AF_QIPCRTR", ["socket", "42", "2", "0", "4"], "ERR EPERM"),
    ("AF_CAN", ["socket", "29", "3", "1", "4"], "ERR EPERM"),
    ("AF_BLUETOOTH", ["socket", "31", "1", "0", "4"], "ERR EPERM"),
];

/// A listener on 127.0.0.1 and, when the host has IPv6, on ::1 with the same port.
struct Target {
    v4: TcpListener,
    v6: Option<TcpListener>,
}

impl Target {
    fn new() -> Target {
        loop {
            let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = v4.local_addr().unwrap().port();
            match TcpListener::bind(("::1", port)) {
                Ok(v6) => return Target { v4, v6: Some(v6) },
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
                Err(_) => return Target { v4, v6: None },
            }
        }
    }
    fn port(&self) -> String {
        self.v4.local_addr().unwrap().port().to_string()
    }
    /// Every connection that reached the listeners (accepted without blocking).
    fn reached(&self) -> usize {
        let mut n = 0;
        for l in std::iter::once(&self.v4).chain(self.v6.as_ref()) {
            l.set_nonblocking(true).unwrap();
            while l.accept().is_ok() {
                n += 1;
            }
        }
        n
    }
}

fn run_table(opts: &[&str], target: &Target, none: bool) -> Vec<String> {
    let ws = Ws::new();
    let port = target.port();
    let mut failures = Vec::new();
    for (name, args, ports_expect) in ATTACKS {
        let expect = if none { "ERR EPERM" } else { *ports_expect };
        let mut argv: Vec<&str> = args.to_vec();
        argv.push(&port);
        let got = probe_run(&ws, opts, "net", &argv);
        if got != expect {
            failures.push(format!("{name}: got {got:?}, want {expect:?}"));
        }
    }
    failures
}

#[test]
fn port_restricted_network_only_connects_to_listed_ports() {
    let target = Target::new();
    // The allowed port has its own listener, so "allowed" is a real, reachable port.
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let allowed_port = allowed.local_addr().unwrap().port().to_string();
    for profile in ["read-only", "workspace-write"] {
        let opts = ["--profile", profile, "--network", &allowed_port];
        let failures = run_table(&opts, &target, false);
        assert!(failures.is_empty(), "{profile}:\n{}", failures.join("\n"));
    }
    assert_eq!(
        target.reached(),
        0,
        "a confined process reached the listener"
    );
}

#[test]
fn network_none_has_no_socket_at_all() {
    let target = Target::new();
    for profile in ["read-only", "workspace-write"] {
        let opts = ["--profile", profile];
        let failures = run_table(&opts, &target, true);
        assert!(failures.is_empty(), "{profile}:\n{}", failures.join("\n"));
    }
    assert_eq!(
        target.reached(),
        0,
        "a confined process reached the listener"
    );
}

/// The filters refuse attacks, not ordinary clients: a plain connect, one with socket flags,
/// one naming IPPROTO_TCP, over IPv4, IPv6 and a v4-mapped address, reach the listed port.
#[test]
fn listed_port_still_reachable_in_every_form() {
    let target = Target::new();
    let port = target.port();
    let ws = Ws::new();
    let opts = ["--network", &port];
    let mut rows = vec![
        (["connect", "2", "1", "0", "4"], "OK"),
        (["connect", "2", "1", "6", "4"], "OK"),
        (["connect", "2", "524289", "0", "4"], "OK"),
        (["connect", "10", "1", "0", "m"], "OK"),
    ];
    if target.v6.is_some() {
        rows.push((["connect", "10", "1", "0", "6"], "OK"));
    }
    for (args, want) in &rows {
        let mut argv = args.to_vec();
        argv.push(&port);
        assert_eq!(probe_run(&ws, &opts, "net", &argv), *want, "{args:?}");
    }
    assert_eq!(target.reached(), rows.len());
    // curl, a real client, also works on the listed port.
    target.v4.set_nonblocking(false).unwrap();
    let t = std::thread::spawn(move || {
        let (mut s, _) = target.v4.accept().unwrap();
        use std::io::{Read, Write};
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf);
        s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
    });
    let o = sandbox(
        &ws,
        &opts,
        &[
            "curl",
            "-sS",
            "-m",
            "5",
            &format!("http://127.0.0.1:{port}/"),
        ],
    );
    t.join().unwrap();
    assert_eq!(stdout(&o), "ok", "{}", stderr(&o));
}

/// io_uring would carry connect/sendmsg past every seccomp argument check: refused in the
/// port profile as in the others.
#[test]
fn io_uring_refused_with_ports() {
    let ws = Ws::new();
    assert_eq!(
        probe_run(&ws, &["--network", "443"], "io_uring", &[]),
        "ERR EPERM"
    );
}
