//! The proxy in process, against a loopback upstream, with the audit log's fsync held.

use super::*;
use crate::audit::{Verification, FSYNC_STALL};
use std::sync::mpsc;

/// Answers one request per connection with `ok`.
async fn upstream() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let _ = read_head(&mut s).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    )
                    .await;
            });
        }
    });
    port
}

/// A GET through the proxy at `proxy` to the upstream; the whole answer.
async fn get(proxy: SocketAddr, up: u16) -> String {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    let head = format!("GET http://127.0.0.1:{up}/x HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// Holds the fsync stalled on a thread of its own until the returned sender is dropped.
fn stall_fsync() -> mpsc::Sender<()> {
    let (locked_tx, locked) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _stall = FSYNC_STALL.lock();
        let _ = locked_tx.send(());
        let _ = released.recv();
    });
    locked.recv().unwrap();
    release
}

/// A proxy in this process allowing `127.0.0.1:up`, logging to `dir`.
struct Running {
    at: SocketAddr,
    log: std::path::PathBuf,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(dir: &std::path::Path, up: u16, durable_connections: bool) -> Running {
    let log = dir.join("egress-audit.jsonl");
    let (audit, _) = AuditLog::open(&log).unwrap();
    let rules = super::super::rules::rule_set(&[], &[format!("127.0.0.1:{up}")]).unwrap();
    let opts = Options {
        rules: LiveRules::load(rules, None).unwrap(),
        asker: None,
        own: OwnNets::default(),
        max_connections: 16,
        head_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        routes: super::super::route::Routes::none(),
        refuse_in_tunnel: false,
        durable_connections,
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(run(listener, opts, audit, stopped));
    Running {
        at,
        log,
        stop,
        task,
    }
}

/// Stops the proxy; the log then holds the allow and the closed record, and verifies.
async fn stop_and_verify(p: Running) {
    p.stop.send(true).unwrap();
    p.task.await.unwrap();
    let t = Instant::now();
    while !std::fs::read_to_string(&p.log)
        .unwrap()
        .contains(r#""phase":"closed""#)
    {
        assert!(t.elapsed() < Duration::from_secs(5), "no closed record");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(matches!(
        crate::audit::verify(&p.log).unwrap(),
        Verification::Ok { records: 2 }
    ));
}

/// An allowed connection is recorded before it flows, but a disk whose fsync is slow (or,
/// here, does not return) does not hold it: the answer comes while the fsync is stalled, and
/// once the disk answers the record is in a log that verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_connection_does_not_wait_for_the_audit_fsync() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), up, false).await;
    let release = stall_fsync();
    let answer = tokio::time::timeout(Duration::from_secs(3), get(p.at, up)).await;
    drop(release);
    let answer = answer.expect("the connection waited for the audit log's fsync");
    assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
    let text = std::fs::read_to_string(&p.log).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains(r#""verdict":"allow""#) && l.contains(r#""phase":"decided""#)),
        "the allow is in the log: {text}"
    );
    stop_and_verify(p).await;
}

/// `--durable-connections`: the connection waits for the fsync, and goes once it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_connection_waits_for_the_audit_fsync() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), up, true).await;
    let release = stall_fsync();
    let request = tokio::spawn(get(p.at, up));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !request.is_finished(),
        "answered before its record was fsynced"
    );
    drop(release);
    let answer = tokio::time::timeout(Duration::from_secs(5), request)
        .await
        .expect("answered once the fsync returned")
        .unwrap();
    assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
    stop_and_verify(p).await;
}
