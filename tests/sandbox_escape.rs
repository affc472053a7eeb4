//! The escape suite (docs/sandbox-anchors.md §5): every attack runs under `sanctum-guard sandbox`
//! and must fail with the specific denial (errno, signal or exit code). Needs gcc, git, curl,
//! wget, nc, ping, Landlock ABI >= 6 and seccomp; fails loudly when one is missing.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use support::sandbox::*;

/// A probe mode that must be refused with exactly `expect`.
macro_rules! denied {
    ($name:ident, $opts:expr, $mode:expr, $expect:expr) => {
        #[test]
        fn $name() {
            let ws = Ws::new();
            assert_eq!(probe_run(&ws, $opts, $mode, &[]), $expect, "mode {}", $mode);
        }
    };
}

// ---- Process ----
denied!(ptrace_parent, RO, "ptrace", "ERR EPERM");
denied!(process_vm_writev_parent, RO, "vm_writev", "ERR EPERM");
denied!(process_vm_readv_parent, RO, "vm_readv", "ERR EPERM");
denied!(write_parent_proc_mem, RO, "parent_mem", "ERR EACCES");
denied!(signal_parent_outside_domain, RO, "kill_parent", "ERR EPERM");
denied!(unshare_newuser, WW, "unshare_user", "ERR EPERM");
denied!(unshare_newnet, WW, "unshare_net", "ERR EPERM");
denied!(clone_with_newuser_flag, WW, "clone_newuser", "ERR EPERM");
denied!(clone3_is_enosys, WW, "clone3", "ERR ENOSYS");
denied!(mount_tmpfs, WW, "mount", "ERR EPERM");
denied!(fsopen_new_mount_api, WW, "fsopen", "ERR EPERM");
denied!(pivot_root, WW, "pivot_root", "ERR EPERM");
denied!(chroot, WW, "chroot", "ERR EPERM");
denied!(personality_no_aslr, WW, "personality", "ERR EPERM");
denied!(setsid_escape_process_group, WW, "setsid", "ERR EPERM");
denied!(
    setsid_guessing_the_session_key,
    WW,
    "setsid_guess",
    "ERR EPERM"
);
denied!(setpgid_escape_process_group, WW, "setpgid", "ERR EPERM");
// ---- Kernel surface ----
denied!(io_uring_setup, WW, "io_uring", "ERR EPERM");
denied!(keyctl, WW, "keyctl", "ERR EPERM");
denied!(add_key, WW, "add_key", "ERR EPERM");
denied!(bpf_map_create, WW, "bpf", "ERR EPERM");
denied!(perf_event_open, WW, "perf", "ERR EPERM");
denied!(userfaultfd, WW, "userfaultfd", "ERR EPERM");
denied!(kexec_load, WW, "kexec", "ERR EPERM");
denied!(finit_module, WW, "finit_module", "ERR EPERM");
denied!(delete_module, WW, "delete_module", "ERR EPERM");
denied!(open_by_handle_at_shocker, WW, "open_by_handle", "ERR EPERM");
denied!(memfd_create_fileless_exec, WW, "memfd", "ERR EPERM");
// ---- Network (none) ----
denied!(udp_socket_network_none, RO, "udp", "ERR EPERM");
denied!(raw_icmp_socket, RO, "raw_icmp", "ERR EPERM");
denied!(af_packet_socket, RO, "packet", "ERR EPERM");
denied!(netlink_socket, RO, "netlink", "ERR EPERM");
denied!(vsock_socket, RO, "vsock", "ERR EPERM");
// ---- TTY ----
denied!(tiocsti_injection, WW, "tiocsti", "ERR EPERM");
denied!(tiocsti_64bit_cmd_trick, WW, "tiocsti64", "ERR EPERM");
denied!(tioclinux, WW, "tioclinux", "ERR EPERM");

#[test]
fn proc_1_environ_unreadable() {
    let ws = Ws::new();
    assert_eq!(
        probe_run(&ws, RO, "open_read", &["/proc/1/environ"]),
        "ERR EACCES"
    );
}

#[test]
fn i386_int80_killed() {
    let ws = Ws::new();
    // Baseline: without the sandbox the i386 entry point answers.
    let base = Command::new(probe()).arg("int80").output().unwrap();
    assert!(stdout(&base).starts_with("OK"), "baseline {base:?}");
    let o = sandbox(&ws, RO, &[probe().to_str().unwrap(), "int80"]);
    assert_eq!(o.status.code(), Some(128 + 31), "SIGSYS expected: {o:?}");
}

#[test]
fn x32_syscall_numbers_killed() {
    let ws = Ws::new();
    let base = Command::new(probe()).arg("x32").output().unwrap();
    assert_eq!(
        stdout(&base),
        "ERR ENOSYS",
        "baseline: x32 off in this kernel"
    );
    let o = sandbox(&ws, RO, &[probe().to_str().unwrap(), "x32"]);
    assert_eq!(o.status.code(), Some(128 + 31), "SIGSYS expected: {o:?}");
}

#[test]
fn no_caps_and_no_new_privs() {
    let ws = Ws::new();
    let o = sandbox(&ws, RO, &["/bin/cat", "/proc/self/status"]);
    let s = stdout(&o);
    for key in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            s.contains(&format!("{key}:\t0000000000000000")),
            "{key} not empty: {s}"
        );
    }
    assert!(s.contains("NoNewPrivs:\t1"));
    assert!(s.contains("Seccomp:\t2"));
}

#[test]
fn setuid_root_binary_gives_no_caps() {
    let ws = Ws::new();
    let suid = ws.out().join("suidcat");
    std::fs::copy("/bin/cat", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let o = sandbox(&ws, RO, &[suid.to_str().unwrap(), "/proc/self/status"]);
    let s = stdout(&o);
    assert!(s.contains("CapEff:\t0000000000000000"), "{s}");
    assert!(s.contains("CapPrm:\t0000000000000000"), "{s}");
}

#[test]
fn inherited_fds_are_closed() {
    let ws = Ws::new();
    let script = format!(
        "exec 7</etc/passwd 9</etc/hostname; exec {} sandbox --workspace {} -- {} fds",
        guard_bin().display(),
        ws.path().display(),
        probe().display()
    );
    let base = Command::new("bash")
        .args([
            "-c",
            &format!(
                "exec 7</etc/passwd 9</etc/hostname; exec {} fds",
                probe().display()
            ),
        ])
        .output()
        .unwrap();
    let leaked: usize = stdout(&base).trim_start_matches("FDS ").parse().unwrap();
    assert!(leaked >= 5, "baseline leaks 7 and 9: {base:?}");
    let o = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(stdout(&o), "FDS 3", "{o:?}");
}

// ---- Filesystem ----

fn assert_denied(o: &std::process::Output) {
    assert!(!o.status.success(), "should fail: {o:?}");
    let e = stderr(o);
    assert!(
        e.contains("Permission denied")
            || e.contains("Operation not permitted")
            || e.contains("cross-device"),
        "unexpected error: {e}"
    );
}

#[test]
fn write_outside_roots() {
    let ws = Ws::new();
    let o = sh(
        &ws,
        "workspace-write",
        &format!("echo x > {}/new", ws.out_str()),
    );
    assert_denied(&o);
    assert!(!ws.out().join("new").exists());
}

#[test]
fn write_through_planted_symlink() {
    let ws = Ws::new();
    std::os::unix::fs::symlink(ws.out(), ws.path().join("sub/link")).unwrap();
    let o = sh(&ws, "workspace-write", "echo x > sub/link/f");
    assert_denied(&o);
    let o = sh(
        &ws,
        "workspace-write",
        &format!("ln -s {} sub/l2 && echo x > sub/l2/g", ws.out_str()),
    );
    assert_denied(&o);
    assert!(!ws.out().join("f").exists() && !ws.out().join("g").exists());
}

#[test]
fn hardlink_outside_file_into_root() {
    let ws = Ws::new();
    let o = sh(
        &ws,
        "workspace-write",
        &format!("ln {}/secret sub/hl", ws.out_str()),
    );
    assert_denied(&o);
    assert!(!ws.path().join("sub/hl").exists());
}

#[test]
fn rename_outside_file_into_root() {
    let ws = Ws::new();
    let o = sh(
        &ws,
        "workspace-write",
        &format!("mv {}/secret sub/", ws.out_str()),
    );
    assert!(!o.status.success());
    assert!(
        ws.out().join("secret").exists(),
        "the outside file must stay"
    );
}

#[test]
fn dotdot_traversal() {
    let ws = Ws::new();
    let name = ws.out().file_name().unwrap().to_string_lossy().to_string();
    let o = sh(
        &ws,
        "workspace-write",
        &format!("echo x > sub/../../{name}/dd"),
    );
    assert_denied(&o);
    assert!(!ws.out().join("dd").exists());
}

#[test]
fn truncate_read_only_file() {
    let ws = Ws::new();
    let o = sh(
        &ws,
        "workspace-write",
        &format!("truncate -s 0 {}/secret", ws.out_str()),
    );
    assert_denied(&o);
    assert_eq!(
        std::fs::read_to_string(ws.out().join("secret")).unwrap(),
        "top secret\n"
    );
}

#[test]
fn mkfifo_and_mknod_outside() {
    let ws = Ws::new();
    assert_denied(&sh(
        &ws,
        "workspace-write",
        &format!("mkfifo {}/fifo", ws.out_str()),
    ));
    assert_denied(&sh(
        &ws,
        "workspace-write",
        &format!("mknod {}/null c 1 3", ws.out_str()),
    ));
    assert!(!ws.out().join("fifo").exists() && !ws.out().join("null").exists());
}

// Git hooks/config and .openclaw/.sanctum under a writable workspace are no longer
// Landlock-protected (that made the workspace root uncreatable): the integrity check
// restores them after the run; tests/sandbox_integrity.rs.

#[test]
fn read_only_profile_writes_nothing() {
    let ws = Ws::new();
    assert_denied(&sh(&ws, "read-only", "echo x > file.txt"));
    assert_denied(&sh(&ws, "read-only", "echo x > sub/new"));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("file.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn metadata_changes_outside_roots() {
    let ws = Ws::new();
    let secret = ws.out().join("secret");
    let s = secret.to_str().unwrap();
    // read-only: no chmod at all; any profile: no chown, no xattr, no setuid bit.
    assert_eq!(probe_run(&ws, RO, "chmod", &[s, "0777"]), "ERR EPERM");
    assert_eq!(probe_run(&ws, WW, "chown", &[s]), "ERR EPERM");
    assert_eq!(probe_run(&ws, WW, "setxattr", &[s]), "ERR EPERM");
    assert_eq!(probe_run(&ws, WW, "chmod", &[s, "4755"]), "ERR EPERM");
    assert_eq!(probe_run(&ws, WW, "chmod", &[s, "2755"]), "ERR EPERM");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode & 0o6000, 0);
}

// ---- Network ----

#[test]
fn network_tools_fail_with_network_none() {
    let ws = Ws::new();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    for cmd in [
        format!("curl -sS -m 3 http://127.0.0.1:{port}/"),
        format!("wget -q -T 3 --tries=1 -O- http://127.0.0.1:{port}/"),
        format!("nc -w 3 127.0.0.1 {port} </dev/null"),
        format!("bash -c 'echo x > /dev/tcp/127.0.0.1/{port}'"),
        "ping -c 1 -W 1 127.0.0.1".to_string(),
    ] {
        let o = sh(&ws, "read-only", &cmd);
        assert!(!o.status.success(), "{cmd} succeeded");
    }
    assert!(l.accept().is_err(), "no connection may reach the listener");
    assert_eq!(
        probe_run(&ws, RO, "tcp4", &[&port.to_string()]),
        "ERR EPERM"
    );
}

#[test]
fn tcp_connect_only_to_listed_ports() {
    let ws = Ws::new();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let allowed = ["--network", &port];
    assert_eq!(
        probe_run(&ws, &allowed, "tcp4", &[&port]),
        "OK",
        "listed port works"
    );
    let other = (l.local_addr().unwrap().port() as u32 % 60000 + 1).to_string();
    let other_opts = ["--network", &other];
    assert_eq!(probe_run(&ws, &other_opts, "tcp4", &[&port]), "ERR EACCES");
    assert_eq!(probe_run(&ws, &other_opts, "tcp6", &[&port]), "ERR EACCES");
    assert_eq!(probe_run(&ws, &other_opts, "metadata", &[]), "ERR EACCES");
    assert_eq!(probe_run(&ws, &allowed, "bind4", &["0"]), "ERR EACCES");
}

#[test]
fn mptcp_udp_and_unix_refused_even_with_ports() {
    let ws = Ws::new();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let opts = ["--network", &port];
    assert_eq!(probe_run(&ws, &opts, "mptcp", &[&port]), "ERR EPERM");
    assert_eq!(probe_run(&ws, &opts, "udp", &[]), "ERR EPERM");
    assert_eq!(probe_run(&ws, &opts, "udp6", &[]), "ERR EPERM");
    assert_eq!(probe_run(&ws, &opts, "raw_icmp", &[]), "ERR EPERM");
}

#[test]
fn pathname_unix_socket_outside() {
    let ws = Ws::new();
    let path = ws.out().join("docker.sock");
    let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let p = path.to_str().unwrap();
    assert_eq!(probe_run(&ws, WW, "unix_path", &[p]), "ERR EPERM");
    assert_eq!(
        probe_run(&ws, &["--network", "443"], "unix_path", &[p]),
        "ERR EPERM"
    );
}

// ---- Meta ----

#[test]
fn status_reports_full_enforcement() {
    let ws = Ws::new();
    let o = sandbox(
        &ws,
        &["--profile", "workspace-write", "--json-status"],
        &["/bin/true"],
    );
    assert!(o.status.success());
    let line = stderr(&o).lines().next().unwrap_or_default().to_string();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    let s = &v["sandbox_status"];
    assert_eq!(s["landlock"], "full");
    assert!(
        s["landlock_abi"].as_u64().unwrap() >= 6,
        "the suite needs Landlock ABI >= 6"
    );
    assert_eq!(s["seccomp"], true);
    assert_eq!(s["caps_cleared"], true);
    assert_eq!(s["no_new_privs"], true);
    assert_eq!(s["network"], "none");
    assert!(s["scopes"].as_array().unwrap().len() == 2);
}

#[test]
fn setup_failure_exits_125() {
    let ws = Ws::new();
    let o = sandbox(&ws, &["--profile", "no-such-profile"], &["/bin/true"]);
    assert_eq!(o.status.code(), Some(125));
    let o = sandbox(&ws, &["--network", "http"], &["/bin/true"]);
    assert_eq!(o.status.code(), Some(125));
    let o = sandbox(&ws, &[], &["/no/such/binary"]);
    assert_eq!(o.status.code(), Some(127));
}

#[test]
fn sandboxed_child_cannot_relax_its_sandbox() {
    let ws = Ws::new();
    let inner_ws = ws.out();
    // The outer sandbox gives TMPDIR (its private tmp) so the inner one can build its own.
    let script = format!(
        "{g} sandbox --profile workspace-write --workspace {w} -- /bin/sh -c 'echo x > {w}/escaped'",
        g = guard_bin().display(),
        w = inner_ws.display()
    );
    let o = sh(&ws, "workspace-write", &script);
    assert!(!o.status.success(), "{o:?}");
    assert!(
        !inner_ws.join("escaped").exists(),
        "Landlock domains only stack"
    );
}

// ---- Positives ----

#[test]
fn allowed_work_still_works() {
    let ws = Ws::new();
    let o = sandbox(&ws, RO, &["/bin/cat", "/etc/passwd"]);
    assert!(o.status.success() && stdout(&o).contains("root:"));
    let o = sandbox(&ws, RO, &["ls", "-la"]);
    assert!(
        o.status.success() && stdout(&o).contains("file.txt"),
        "{o:?}"
    );
    let o = sh(&ws, "workspace-write", "echo new > sub/new && echo more >> file.txt && chmod 755 sub/new && echo t > $TMPDIR/t && cat $TMPDIR/t");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "t");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("file.txt")).unwrap(),
        "hello\nmore\n"
    );
    for mode in ["socketpair", "personality_query", "fork"] {
        assert_eq!(probe_run(&ws, WW, mode, &[]), "OK", "{mode}");
    }
}

#[test]
fn git_status_works() {
    let ws = Ws::new();
    let o = sandbox(&ws, WW, &["git", "status", "--short"]);
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("?? file.txt"), "{o:?}");
}

#[test]
fn node_runs() {
    let node = std::env::var("SANCTUM_NODE").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/.cache/node/bin/node").to_string()
    });
    assert!(
        std::path::Path::new(&node).exists(),
        "Node 24 missing at {node}: run tests/setup.sh"
    );
    let ws = Ws::new();
    let o = sandbox(&ws, WW, &[&node, "-e", "1"]);
    assert!(o.status.success(), "{o:?}");
    let o = sandbox(
        &ws,
        WW,
        &[
            &node,
            "-e",
            "require('fs').writeFileSync('sub/n.txt', process.version)",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert!(std::fs::read_to_string(ws.path().join("sub/n.txt"))
        .unwrap()
        .starts_with("v24"));
}

#[test]
fn deny_listed_secrets_unreadable_even_inside_roots() {
    let ws = Ws::new();
    std::fs::write(ws.path().join(".env"), "OPENAI_API_KEY=sk-1\n").unwrap();
    // The workspace's .env: autonomous (read-only) runs only; an approved workspace-write
    // run may read it (denying it would cap the workspace root; SECURITY.md).
    let o = sh(&ws, "read-only", "cat .env");
    assert_denied(&o);
    assert!(!stdout(&o).contains("sk-1"));
    for profile in ["read-only", "workspace-write"] {
        assert_denied(&sh(&ws, profile, "cat /etc/shadow"));
    }
    // A planted ~/.ssh key: HOME points at a dir holding one.
    let home = ws.out().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let o = Command::new(guard_bin())
        .args(["sandbox", "--workspace", ws.path().to_str().unwrap(), "--"])
        .args(["/bin/cat", home.join(".ssh/id_ed25519").to_str().unwrap()])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        !o.status.success() && stderr(&o).contains("Permission denied"),
        "{o:?}"
    );
    // Siblings of a denied path stay readable.
    assert!(sh(&ws, "read-only", "cat file.txt /etc/hostname")
        .status
        .success());
}

/// Landlock grants by inode: a protected (read-only) file linked under another name in a
/// writable root would be writable through that name, and a deny-read file readable. The
/// limits layer grants no name of such a file more than its cap.
#[test]
fn a_capped_file_stays_capped_under_its_other_names() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::hard_link(
        ws.path().join(".git/config"),
        ws.path().join("innocent.cfg"),
    )
    .unwrap();
    std::fs::write(ws.path().join("token.txt"), "TOKEN-7f1a\n").unwrap();
    std::fs::hard_link(ws.path().join("token.txt"), ws.path().join("notes.txt")).unwrap();
    let policy = ws.out().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[profiles.capped]\nread = [\"/\"]\nwrite = [\"{workspace}\"]\n\
         protected = [\"{workspace}/.git/config\"]\n\
         deny_read = [\"{workspace}/token.txt\"]\nnetwork = \"none\"\n",
    )
    .unwrap();
    let run = |script: &str| {
        let args = ["--policy", policy.to_str().unwrap(), "--profile", "capped"];
        sandbox(&ws, &args, &["/bin/sh", "-c", script])
    };
    assert_denied(&run("echo '[core] fsmonitor=x' >> innocent.cfg"));
    assert_denied(&run("echo '[core] fsmonitor=x' >> .git/config"));
    let o = run("cat notes.txt");
    assert_denied(&o);
    assert!(!stdout(&o).contains("TOKEN-7f1a"));
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    // What the caps leave alone still works: reading the protected file by either name,
    // writing the rest of the workspace.
    let o = run("cat innocent.cfg && echo y > sub/other.txt");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "[core]");
}
