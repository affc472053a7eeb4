//! The egress proxy (`sanctum-guard egress`) as a test starts it: on a port of the kernel's
//! choosing, its state dir, optionally asking a running `serve` about unknown hosts; a loopback
//! upstream; one client exchange through the proxy; the proxy's audit records.

use super::process::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// An upstream that reports each connection's first bytes and answers `pong`.
pub fn upstream() -> (u16, mpsc::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = [0u8; 4096];
                let n = c.read(&mut buf).unwrap_or(0);
                let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = c.write_all(b"pong");
            });
        }
    });
    (port, rx)
}

/// A running proxy.
pub struct Egress {
    pub child: ChildGuard,
    pub port: u16,
    pub state: PathBuf,
    /// Everything it printed on stderr so far.
    pub output: Arc<Mutex<String>>,
}

/// Starts the proxy with `args` (after `egress --listen 127.0.0.1:0 --state-dir STATE`) and
/// reads the bound port from the line it prints once it listens.
pub fn start_egress(state: &Path, args: &[&str]) -> Egress {
    let mut cmd = Command::new(guard_bin());
    cmd.args(["egress", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state)
        .args(args);
    spawn_egress(cmd, state)
}

/// Spawns `cmd` (an `egress` on `127.0.0.1:0` whose state dir is `state`, perhaps behind a
/// wrapper), reads the bound port from the line it prints once it listens, and keeps reading
/// its stderr into [`Egress::output`], so it never blocks on a full pipe.
pub fn spawn_egress(mut cmd: Command, state: &Path) -> Egress {
    let mut child =
        ChildGuard::spawn_group("egress", cmd.stdout(Stdio::null()).stderr(Stdio::piped()));
    let stderr = child.child.as_mut().unwrap().stderr.take().unwrap();
    let mut lines = BufReader::new(stderr);
    let line = wait_line(
        &mut lines,
        |l| l.contains("egress proxy"),
        Duration::from_secs(30),
    )
    .expect("the egress proxy's listen line");
    let port = listen_addr_in(&line, "egress proxy")
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .port();
    let output = Arc::new(Mutex::new(line));
    let out = output.clone();
    std::thread::spawn(move || {
        let mut l = String::new();
        while lines.read_line(&mut l).unwrap_or(0) > 0 {
            out.lock().unwrap().push_str(&l);
            l.clear();
        }
    });
    Egress {
        child,
        port,
        state: state.to_owned(),
        output,
    }
}

/// Sends `head` (+ `body`) through the proxy and returns everything answered.
pub fn through(port: u16, head: &str, body: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`through`] on a thread: the answer arrives on the channel once the proxy gives it.
pub fn through_later(port: u16, head: String, body: &'static [u8]) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(through(port, &head, body));
    });
    rx
}

/// The proxy's `egress` audit records.
pub fn egress_records(state: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(state.join("egress-audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["kind"] == "egress")
        .collect()
}

/// A proxy on a fresh state dir (the returned temp dir) that asks the `serve` of `world`
/// about destinations no rule covers, with `token` (the socket token) as its credential.
pub fn start_asking(world: &super::guard::World, token: &str) -> (Egress, tempfile::TempDir) {
    let file = world.tmp.path().join("egress-token");
    write_secret(&file, token);
    let st = tempfile::tempdir().unwrap();
    let sock = world.socket();
    let e = start_egress(
        &st.path().join("egress"),
        &[
            "--ask-socket",
            sock.to_str().unwrap(),
            "--ask-token-file",
            file.to_str().unwrap(),
        ],
    );
    (e, st)
}
