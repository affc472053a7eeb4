//! The front door stays open for its owners under a flood from one address. Upgrade requests
//! that never finish hold no connection slot (a slot is taken only once the credential is
//! checked; unfinished upgrades have their own small budget per peer address, the oldest shed
//! first), so a client with a valid link gets through every time. And unauthenticated
//! upgrades do not each write an audit record: refusals are counted per peer and reason per
//! window, so a flood of them grows the audit log by kilobytes while decisions keep working.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::gateway::door_link;
use support::node::*;

const TOKEN: &str = "front-flood-socket-token-0123456789";

/// A stand-in gateway: accepts WebSocket upgrades and holds them (the door's upstream leg).
fn quiet_gateway() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                if let Ok(mut ws) = tokio_tungstenite::tungstenite::accept(s) {
                    while ws.read().is_ok() {}
                }
            });
        }
    });
    format!("ws://{addr}")
}

/// A front door in front of the stand-in gateway, with the default limits.
fn start(w: &World) -> (Serve, String) {
    let token = w.tmp.path().join("gw-token");
    support::process::write_secret(&token, GW_TOKEN);
    let upstream = quiet_gateway();
    let serve = Serve::start(
        w,
        &[],
        &[
            "--web-listen",
            "off",
            "--front-listen",
            "127.0.0.1:0",
            "--gateway-url",
            &upstream,
            "--gateway-token-file",
            token.to_str().expect("utf8"),
            "--allow-unsafe-posture",
        ],
    );
    let front = serve.front_addr();
    (serve, front)
}

/// The status line's code of one upgrade request to `path` (0: no answer).
fn upgrade_status(front: &str, path: &str) -> u16 {
    let Ok(mut s) = TcpStream::connect(front) else {
        return 0;
    };
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {front}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    if s.write_all(req.as_bytes()).is_err() {
        return 0;
    }
    let mut head = [0u8; 12];
    match s.read_exact(&mut head) {
        Ok(()) => std::str::from_utf8(&head[9..12])
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

/// The path part of a door link URL.
fn path_of(link: &str) -> String {
    let rest = link.strip_prefix("ws://").expect("ws url");
    rest[rest.find('/').expect("path")..].to_owned()
}

#[test]
fn unfinished_upgrades_do_not_hold_the_doors_slots() {
    let w = World::full(TOKEN);
    let (_serve, front) = start(&w);
    let link = path_of(&door_link(&w.guard_state, &front, "owner"));
    // More unfinished upgrades than the door has slots (256 by default), all held open.
    let mut held = Vec::new();
    for _ in 0..300 {
        if let Ok(mut s) = TcpStream::connect(&front) {
            let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n");
            held.push(s);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let codes: Vec<u16> = (0..8).map(|_| upgrade_status(&front, &link)).collect();
    eprintln!(
        "{} unfinished upgrades held; the owner's 8 tries: {codes:?}",
        held.len()
    );
    assert!(codes.iter().all(|&c| c == 101), "{codes:?}");
    drop(held);
}

#[test]
fn a_twenty_second_flood_of_unauthenticated_upgrades_grows_the_audit_log_by_kilobytes() {
    let w = World::full(TOKEN);
    let (mut serve, front) = start(&w);
    let link = path_of(&door_link(&w.guard_state, &front, "owner"));
    let audit = w.audit_path();
    let before = std::fs::metadata(&audit).expect("audit").len();
    let secs: u64 = std::env::var("SANCTUM_FLOOD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let flooders: Vec<_> = (0..4)
        .map(|i| {
            let (stop, sent, front) = (stop.clone(), sent.clone(), front.clone());
            std::thread::spawn(move || {
                let paths = ["/", "/door/wrong-secret"];
                while !stop.load(Ordering::Relaxed) {
                    if upgrade_status(&front, paths[i % 2]) == 401 {
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    let mut owner = Vec::new();
    let mut decisions = 0;
    while start.elapsed() < Duration::from_secs(secs) {
        owner.push(upgrade_status(&front, &link));
        let r = raw_exchange(
            &w.socket(),
            request_line(TOKEN, &format!("d{decisions}"), "ls").as_bytes(),
            true,
        );
        assert_eq!(first_json(&r)["decision"], "allow-once", "{r}");
        decisions += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    for f in flooders {
        f.join().expect("flooder");
    }
    assert_eq!(serve.stop(), Some(0), "a clean stop writes the open counts");
    let grew = std::fs::metadata(&audit).expect("audit").len() - before;
    let n = sent.load(Ordering::Relaxed);
    eprintln!(
        "{n} unauthenticated upgrades in {secs} s: the audit log grew {grew} bytes; \
         {decisions} decisions; owner's upgrades {owner:?}"
    );
    assert!(n > 1000, "the flood was a flood: {n}");
    assert!(owner.iter().all(|&c| c == 101), "{owner:?}");
    // The 40-odd decisions made meanwhile are most of the growth: each is a full record.
    assert!(grew < 128 * 1024, "{grew} bytes for {n} refusals");
    let lines: Vec<String> = support::audit::lines(&audit)
        .into_iter()
        .filter(|l| l.contains("\"kind\":\"front-refusal\""))
        .collect();
    let refusal_bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    eprintln!(
        "front-refusal records: {} ({refusal_bytes} bytes)",
        lines.len()
    );
    assert!(
        refusal_bytes < 16 * 1024,
        "{refusal_bytes} bytes of refusals"
    );
    let records: Vec<serde_json::Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &serde_json::Value| r["fields"]["reason"] == "unauthenticated")
        .collect();
    let counted: u64 = records
        .iter()
        .map(|r| r["fields"]["count"].as_u64().unwrap_or(1))
        .sum();
    assert_eq!(counted, n, "every refusal is counted");
    let (code, out, err) =
        support::process::guard_cli(&["audit", "verify", audit.to_str().expect("utf8")], &[]);
    assert_eq!(code, 0, "{out}{err}");
}
