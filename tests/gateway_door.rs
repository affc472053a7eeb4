//! The front door's frame-level client leg, against a stand-in gateway that records the very
//! bytes it receives: a first frame pipelined behind the upgrade request is not lost; judged
//! frames reach the gateway as the client's own bytes (its mask included), fragments too; a
//! forbidden method split over fragments is refused and none of it reaches the gateway; the
//! door answers pings and closes itself; and every malformed frame ends only its own client,
//! with its close code, while another client keeps being served.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::gateway::{door_link, masked_frame, masked_frames, RawClient, SeenFrame};
use support::node::*;
use tokio_tungstenite::tungstenite;

const TOKEN: &str = "gw-door-socket-token-0123456789abc";

/// The raw bytes each gateway connection received, in connection order.
type Received = Arc<Mutex<Vec<Arc<Mutex<Vec<u8>>>>>>;

/// A stand-in gateway: each connection gets a challenge event, and every single-frame text
/// request is answered `ok` with its method; everything received is recorded as it came.
fn recording_gateway(listener: std::net::TcpListener, received: Received) {
    use std::io::{Read, Write};
    for s in listener.incoming().flatten() {
        let mine = Arc::new(Mutex::new(Vec::new()));
        received.lock().unwrap().push(mine.clone());
        std::thread::spawn(move || {
            let Ok(mut ws) = tungstenite::accept(s) else {
                return;
            };
            let io = ws.get_mut();
            let challenge =
                br#"{"type":"event","event":"connect.challenge","payload":{"nonce":"n"}}"#;
            let _ = io.write_all(&server_text(challenge));
            let mut answered = 0;
            let mut chunk = [0u8; 65536];
            while let Ok(n) = io.read(&mut chunk) {
                if n == 0 {
                    return;
                }
                let frames = {
                    let mut all = mine.lock().unwrap();
                    all.extend_from_slice(&chunk[..n]);
                    masked_frames(&all)
                };
                for f in frames.iter().skip(answered) {
                    answered += 1;
                    let Ok(v) = serde_json::from_slice::<Value>(&f.payload) else {
                        continue;
                    };
                    if f.opcode == 1 && f.fin {
                        let res = json!({"type":"res","id":v["id"],"ok":true,"payload":{"method":v["method"]}});
                        let _ = io.write_all(&server_text(res.to_string().as_bytes()));
                    }
                }
            }
        });
    }
}

/// An unmasked server text frame.
fn server_text(payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![0x81];
    if n < 126 {
        f.push(n as u8);
    } else {
        f.extend([126, (n >> 8) as u8, n as u8]);
    }
    [f, payload.to_vec()].concat()
}

fn text(fin: bool, payload: &str) -> Vec<u8> {
    masked_frame(fin, 1, payload.as_bytes(), 0)
}

fn req(id: &str, method: &str) -> String {
    json!({"type":"req","id":id,"method":method,"params":{}}).to_string()
}

/// The frames the gateway connection whose first frame names `id` received.
fn seen_by_gateway(received: &Received, id: &str) -> Vec<SeenFrame> {
    let tag = format!("\"id\":\"{id}\"");
    let conns = received.lock().unwrap().clone();
    conns
        .iter()
        .map(|c| masked_frames(&c.lock().unwrap()))
        .find(|f| {
            f.first()
                .is_some_and(|f| String::from_utf8_lossy(&f.payload).contains(&tag))
        })
        .unwrap_or_default()
}

/// Opens a client with its `connect` (id `id`) pipelined behind the upgrade request; past
/// the gateway's challenge.
fn client(door: &str, id: &str) -> RawClient {
    let mut c = RawClient::open(door, &text(true, &req(id, "connect")));
    assert_eq!(c.text()["event"], "connect.challenge");
    assert_eq!(c.text()["id"], id, "the connect was answered");
    c
}

#[test]
fn the_door_forwards_client_frames_as_received_and_ends_only_a_broken_client() {
    let w = World::full(TOKEN);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream = format!("ws://{}", listener.local_addr().expect("addr"));
    let received: Received = Arc::default();
    let r = received.clone();
    std::thread::spawn(move || recording_gateway(listener, r));
    let token = w.tmp.path().join("gw-token");
    support::process::write_secret(&token, GW_TOKEN);
    let mut serve = Serve::start(
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
    let door = door_link(&w.guard_state, &front, "raw");
    wait_until("the door", Duration::from_secs(20), || {
        std::net::TcpStream::connect(&front).ok()
    });

    // A connect pipelined behind the upgrade request reaches the gateway as the client's
    // very frame (its mask too), and so does a later request.
    let connect = text(true, &req("a-connect", "connect"));
    let mut a = client(&door, "a-connect");
    let health = text(true, &req("a1", "health"));
    a.send(&health);
    assert_eq!(a.text()["id"], "a1");
    let seen = seen_by_gateway(&received, "a-connect");
    assert_eq!(seen[0].raw, connect, "connect byte for byte");
    assert_eq!(seen[1].raw, health, "a request as received");

    // An allowed message in fragments, a ping between them: the door answers the ping at
    // once, the gateway gets nothing before the message is whole, then its fragment frames
    // as the client sent them (the ping left out).
    let msg = req("a2", "chat.history");
    let (f1, f2) = (
        masked_frame(false, 1, &msg.as_bytes()[..20], 0),
        masked_frame(true, 0, &msg.as_bytes()[20..], 0),
    );
    a.send(&f1);
    a.send(&masked_frame(true, 9, b"are you there", 0));
    assert_eq!(
        a.next(),
        Some((0xA, b"are you there".to_vec())),
        "the door's pong"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        seen_by_gateway(&received, "a-connect").len(),
        2,
        "nothing yet"
    );
    a.send(&f2);
    wait_until("the fragments upstream", Duration::from_secs(10), || {
        (seen_by_gateway(&received, "a-connect").len() == 4).then_some(())
    });
    let seen = seen_by_gateway(&received, "a-connect");
    assert_eq!([&seen[2].raw[..], &seen[3].raw].concat(), [f1, f2].concat());

    // A forbidden method split over fragments: judged whole, refused, and not even its
    // first fragment reaches the gateway.
    a.send(&masked_frame(
        false,
        1,
        br#"{"type":"req","id":"a3","method":"exec.appro"#,
        0,
    ));
    std::thread::sleep(Duration::from_millis(200));
    a.send(&masked_frame(true, 0, br#"val.resolve","params":{}}"#, 0));
    let refused = a.text();
    assert_eq!(refused["id"], "a3");
    assert_eq!(refused["error"]["code"], "FORBIDDEN", "{refused}");
    a.send(&text(true, &req("a4", "health")));
    assert_eq!(a.text()["id"], "a4");
    let seen = seen_by_gateway(&received, "a-connect");
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(
        seen.iter()
            .all(|f| !String::from_utf8_lossy(&f.payload).contains("exec.appro")),
        "none of the refused message reached the gateway"
    );

    // Malformed frames: each ends its own client with its code, none of it reaches the
    // gateway, and the door keeps serving `a`.
    let mut broken: Vec<(&str, Vec<u8>, u16)> = vec![
        ("unmasked", [0x81, 2, b'{', b'}'].to_vec(), 1002),
        (
            "rsv1",
            {
                let mut f = text(true, "{}");
                f[0] |= 0x40;
                f
            },
            1002,
        ),
        ("opcode 3", masked_frame(true, 3, b"x", 0), 1002),
        (
            "ping of 126 bytes",
            masked_frame(true, 9, &[b'p'; 126], 0),
            1002,
        ),
        ("fragmented ping", masked_frame(false, 9, b"p", 0), 1002),
        (
            "continuation without a start",
            masked_frame(true, 0, b"{}", 0),
            1002,
        ),
        (
            "a new message inside a fragmented one",
            [text(false, "{\"a\":"), text(true, "{}")].concat(),
            1002,
        ),
        (
            "invalid UTF-8",
            masked_frame(true, 1, b"{\"a\":\"\xff\"}", 0),
            1007,
        ),
        ("16-bit length of 2", masked_frame(true, 1, b"{}", 2), 1002),
        ("64-bit length of 2", masked_frame(true, 1, b"{}", 8), 1002),
        (
            "declared 1 TiB, no payload",
            [0x81, 0xFF, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4].to_vec(),
            1009,
        ),
        (
            "a message over 1 MiB in fragments",
            [
                masked_frame(false, 1, &[b' '; 600_000], 0),
                masked_frame(true, 0, &[b' '; 600_000], 0),
            ]
            .concat(),
            1009,
        ),
        ("binary", masked_frame(true, 2, b"{}", 0), 1003),
        (
            "close code 1005",
            masked_frame(true, 8, &1005u16.to_be_bytes(), 0),
            1002,
        ),
    ];
    for (i, (name, bytes, code)) in broken.drain(..).enumerate() {
        let id = format!("broken-{i}");
        let mut c = client(&door, &id);
        c.send(&bytes);
        assert_eq!(c.close_code(), Some(code), "{name}");
        let seen = seen_by_gateway(&received, &id);
        assert!(
            seen.iter().skip(1).all(|f| f.opcode == 8),
            "{name}: only the door's close reached the gateway: {seen:?}"
        );
        a.send(&text(true, &req(&format!("a-after-{i}"), "health")));
        assert_eq!(a.text()["id"], format!("a-after-{i}"), "after {name}");
    }

    // The client's close: the door answers it with the client's code, tells the gateway,
    // and the connection ends.
    a.send(&masked_frame(true, 8, b"\x03\xe8bye", 0));
    assert_eq!(a.next(), Some((8, 1000u16.to_be_bytes().to_vec())));
    assert_eq!(a.next(), None, "the connection ends");
    // The gateway records what it reads on its own thread: its close may land just after
    // the client saw the connection end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut seen = seen_by_gateway(&received, "a-connect");
    while seen.last().map(|f| f.opcode) != Some(8) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        seen = seen_by_gateway(&received, "a-connect");
    }
    assert_eq!(
        seen.last().map(|f| f.opcode),
        Some(8),
        "a close to the gateway"
    );
    assert!(
        seen.iter().all(|f| f.opcode != 9),
        "the ping stayed with the door"
    );

    // The guard stopping: a client still connected is told why (1001) before the process
    // goes, rather than finding its connection simply cut.
    let mut b = client(&door, "b-connect");
    assert_eq!(serve.stop(), Some(0), "a clean stop");
    let mut code = None;
    while let Some((op, p)) = b.next() {
        if op == 8 && p.len() >= 2 {
            code = Some((
                u16::from_be_bytes([p[0], p[1]]),
                String::from_utf8_lossy(&p[2..]).into_owned(),
            ));
            break;
        }
    }
    assert_eq!(code, Some((1001, "guard stopping".to_owned())));
}
