//! The front door's relay of the gateway's own frames, against a scripted gateway doing what
//! the real one seldom does: a fragmented approval event never reaches the client and the
//! next message does; the door answers the gateway's ping; a 900 KB relayed frame and the
//! door's own refusal both arrive whole; a gateway close reaches the client; a masked server
//! frame ends the client with 1011; an extension nobody asked for is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::Duration;
use support::gateway::{door_link, open, WsClient};
use support::node::*;
use tokio_tungstenite::tungstenite::{self, Message};

const TOKEN: &str = "gw-relay-socket-token-0123456789ab";

/// An unmasked server frame, as the gateway writes it.
fn server_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
    match payload.len() {
        n if n < 126 => f.push(n as u8),
        n if n <= 0xFFFF => f.extend([126, (n >> 8) as u8, n as u8]),
        n => f.extend([[127].as_slice(), &(n as u64).to_be_bytes()].concat()),
    }
    [f, payload.to_vec()].concat()
}

/// A stand-in gateway for what the real one seldom does (fragments, pings, closes, broken
/// frames): a connection whose `connect` has a scene's id gets that scene's raw frames;
/// others (the guard's approver) are held and ignored. With `deflate` set it answers every
/// upgrade with a permessage-deflate extension nobody asked for. Pongs it gets go to `pongs`.
fn scripted_gateway(
    listener: std::net::TcpListener,
    deflate: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pongs: std::sync::mpsc::Sender<Vec<u8>>,
) {
    use std::io::Write;
    use tungstenite::handshake::server::{ErrorResponse, Request, Response};
    for s in listener.incoming().flatten() {
        let (deflate, pongs) = (deflate.clone(), pongs.clone());
        std::thread::spawn(move || {
            #[allow(clippy::result_large_err)] // the handshake callback's type is tungstenite's
            let offer = |_: &Request, mut r: Response| -> Result<Response, ErrorResponse> {
                if deflate.load(std::sync::atomic::Ordering::SeqCst) {
                    let v = "permessage-deflate".parse().expect("value");
                    r.headers_mut().insert("Sec-WebSocket-Extensions", v);
                }
                Ok(r)
            };
            let Ok(mut ws) = tungstenite::accept_hdr(s, offer) else {
                return;
            };
            let Ok(Message::Text(first)) = ws.read() else {
                return;
            };
            let approval = br#"{"type":"event","event":"exec.approval.requested","payload":{}}"#;
            let big = format!(
                r#"{{"type":"event","event":"big","payload":"{}"}}"#,
                "b".repeat(900_000)
            );
            let frames: Vec<Vec<u8>> = match first.as_str() {
                t if t.contains("scene-fragments") => vec![
                    server_frame(false, 1, &approval[..20]),
                    server_frame(false, 0, &approval[20..40]),
                    server_frame(true, 9, b"hi"),
                    server_frame(true, 0, &approval[40..]),
                    server_frame(false, 1, br#"{"type":"event","#),
                    server_frame(true, 0, br#""event":"tick"}"#),
                ],
                t if t.contains("scene-big") => vec![server_frame(true, 1, big.as_bytes())],
                t if t.contains("scene-close") => {
                    vec![server_frame(true, 8, b"\x03\xe9gateway going")]
                }
                t if t.contains("scene-masked") => vec![vec![0x81, 0x81, 1, 2, 3, 4, b'x' ^ 1]],
                _ => return while ws.read().is_ok() {},
            };
            for f in frames {
                ws.get_mut().write_all(&f).expect("write");
            }
            while let Ok(m) = ws.read() {
                if let Message::Pong(p) = m {
                    let _ = pongs.send(p.to_vec());
                }
            }
        });
    }
}

/// The door relays the gateway's frames as they are: an approval event split over fragments
/// (a ping between them) is held back whole while the next fragmented message passes, the
/// door answers the ping, its own error after a 900 KB frame arrives intact, a gateway close
/// reaches the client, a masked server frame ends the client with 1011, and an extension
/// the door did not ask for is refused at the upgrade.
#[test]
fn the_door_relays_gateway_frames_whole_and_holds_back_fragmented_approvals() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let w = World::full(TOKEN);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream = format!("ws://{}", listener.local_addr().expect("addr"));
    let deflate = std::sync::Arc::new(AtomicBool::new(false));
    let (tx, pongs) = std::sync::mpsc::channel();
    let d = deflate.clone();
    std::thread::spawn(move || scripted_gateway(listener, d, tx));
    let token = w.tmp.path().join("gw-token");
    support::process::write_secret(&token, GW_TOKEN);
    let serve = Serve::start(
        &w,
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
    let door = door_link(&w.guard_state, &front, "relay");
    let scene = |id: &str| {
        let mut c = wait_until("the door", Duration::from_secs(20), || open(&door).ok());
        c.send_text(&json!({"type":"req","id":id,"method":"connect","params":{}}).to_string());
        c
    };
    let next = |c: &mut WsClient| loop {
        if let Some(m) = c.read() {
            return m;
        }
    };

    let mut c = scene("scene-fragments");
    let first = next(&mut c).expect("a message");
    assert_eq!(first["event"], "tick", "the approval never passes: {first}");
    let pong = pongs.recv_timeout(Duration::from_secs(10)).expect("pong");
    assert_eq!(pong, b"hi", "the door answers the gateway's ping");

    let mut c = scene("scene-big");
    c.send_text("{not json");
    std::thread::sleep(Duration::from_millis(500));
    let mut got = [next(&mut c).expect("json"), next(&mut c).expect("json")];
    got.sort_by_key(|v| v["type"] == "res");
    assert_eq!(got[0]["payload"].as_str().map(str::len), Some(900_000));
    assert_eq!(got[1]["error"]["code"], "INVALID_REQUEST", "{}", got[1]);

    let mut c = scene("scene-close");
    let why = c.close_reason();
    assert!(
        why.contains("Away") && why.contains("gateway going"),
        "{why}"
    );

    let mut c = scene("scene-masked");
    let why = c.close_reason();
    assert!(why.contains("Error") && why.contains("masked"), "{why}");

    deflate.store(true, Ordering::SeqCst);
    let mut c = scene("scene-deflate");
    let why = c.close_reason();
    assert!(why.contains("Error") && why.contains("extension"), "{why}");
}
