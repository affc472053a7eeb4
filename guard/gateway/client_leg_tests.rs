use super::*;

const MAX: usize = 1 << 20;
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// A masked client frame with its length in `form` bytes (0: the shortest form).
fn frame_in(fin: bool, opcode: u8, payload: &[u8], form: usize) -> Vec<u8> {
    let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
    let n = payload.len();
    let form = match form {
        0 if n < 126 => 1,
        0 if n <= 0xFFFF => 2,
        0 => 8,
        f => f,
    };
    match form {
        1 => f.push(0x80 | n as u8),
        2 => f.extend([0x80 | 126, (n >> 8) as u8, n as u8]),
        _ => f.extend([[0x80 | 127].as_slice(), &(n as u64).to_be_bytes()].concat()),
    }
    f.extend_from_slice(&MASK);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i & 3]));
    f
}

fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    frame_in(fin, opcode, payload, 0)
}

/// What the reader handed out: `m`essage (raw frames, text), `p`ing, `o` pong, `c`lose.
type Handed = Vec<(char, Vec<u8>, String)>;

/// Everything the reader hands out for `input` (fed whole), then the end: Ok(()) at a clean
/// end, else the error.
fn run(input: &[u8], max: usize) -> (Handed, Result<(), String>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("rt");
    rt.block_on(async {
        let mut io = input;
        let mut r = ClientFrames::new(BytesMut::new(), max, Duration::from_secs(30));
        let mut out = Vec::new();
        loop {
            match r.next(&mut io).await {
                Ok(None) => return (out, Ok(())),
                Ok(Some(FromClient::Message { raw, text })) => {
                    out.push(('m', raw.to_vec(), text.to_owned()))
                }
                Ok(Some(FromClient::Ping(p))) => out.push(('p', p.to_vec(), String::new())),
                Ok(Some(FromClient::Pong)) => out.push(('o', vec![], String::new())),
                Ok(Some(FromClient::Close(c))) => out.push(('c', vec![], format!("{c:?}"))),
                Err(e) => return (out, Err(e.to_string())),
            }
        }
    })
}

#[test]
fn headers_of_every_length_form_parse_with_their_mask() {
    let h = |fin, opcode, len, payload| {
        Some(ClientHeader {
            fin,
            opcode,
            len,
            payload,
            mask: MASK,
        })
    };
    let cases: Vec<(Vec<u8>, Option<ClientHeader>)> = vec![
        (vec![], None),
        (vec![0x81], None),
        (vec![0x81, 0x85, 0x37, 0xfa], None),
        (frame(true, 1, b"hello")[..6].to_vec(), h(true, 1, 6, 5)),
        (
            frame(false, 1, &[0; 125])[..6].to_vec(),
            h(false, 1, 6, 125),
        ),
        (vec![0x81, 0xFE, 0x01], None),
        (frame(true, 0, &[0; 256])[..8].to_vec(), h(true, 0, 8, 256)),
        (
            frame(true, 1, &[0; 65536])[..14].to_vec(),
            h(true, 1, 14, 65536),
        ),
    ];
    for (bytes, want) in cases {
        let got = parse_client_header(&bytes, MAX).expect("valid");
        assert_eq!(got, want, "{bytes:?}");
    }
}

/// The attacks on the header, each refused before any payload is read (only the header's
/// bytes are given), with its close code.
#[test]
fn malformed_client_headers_are_refused_with_their_close_code() {
    let cases: Vec<(&str, Vec<u8>, &str, u16)> = vec![
        ("unmasked", vec![0x81, 0x05], "unmasked", 1002),
        ("rsv1", vec![0xC1, 0x85], "reserved", 1002),
        ("rsv2", vec![0xA1, 0x85], "reserved", 1002),
        ("rsv3", vec![0x91, 0x85], "reserved", 1002),
        ("opcode 3", vec![0x83, 0x80], "opcode", 1002),
        ("opcode 0xB", vec![0x8B, 0x80], "opcode", 1002),
        ("fragmented ping", vec![0x09, 0x80], "control", 1002),
        ("fragmented close", vec![0x08, 0x80], "control", 1002),
        ("ping of 126", vec![0x89, 0xFE, 0, 126], "control", 1002),
        (
            "16-bit length of 5",
            vec![0x81, 0xFE, 0, 5],
            "shortest",
            1002,
        ),
        (
            "64-bit length of 200",
            [vec![0x81, 0xFF], 200u64.to_be_bytes().to_vec()].concat(),
            "shortest",
            1002,
        ),
        (
            "64-bit length with its top bit",
            vec![0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1],
            "over",
            1009,
        ),
        (
            "declared 1 MiB + 1",
            [vec![0x81, 0xFF], ((1u64 << 20) + 1).to_be_bytes().to_vec()].concat(),
            "over",
            1009,
        ),
        (
            "declared 2^63 - 1",
            [vec![0x81, 0xFF], (u64::MAX >> 1).to_be_bytes().to_vec()].concat(),
            "over",
            1009,
        ),
        ("binary", vec![0x82, 0x83], "binary", 1003),
        (
            "oversized binary",
            vec![0x82, 0xFF, 0, 0, 0, 0, 0, 0x20, 0, 0],
            "over",
            1009,
        ),
    ];
    for (name, bytes, want, code) in cases {
        let e = parse_client_header(&bytes, MAX).expect_err(name);
        assert!(e.to_string().contains(want), "{name}: {e}");
        assert_eq!(e.close_code(), Some(code), "{name}");
    }
}

#[test]
fn a_message_is_handed_out_as_received_with_its_text_unmasked() {
    let connect = br#"{"type":"req","id":"c","method":"connect","params":{}}"#;
    let a = frame(true, OP_TEXT, connect);
    let long = frame(true, OP_TEXT, &[b'x'; 70_000]);
    let (out, end) = run(&[&a[..], &long].concat(), MAX);
    assert_eq!(end, Ok(()));
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].1, a, "the frame is the client's own bytes");
    assert_eq!(out[0].2.as_bytes(), connect);
    assert_eq!(out[1].1, long);
    assert_eq!(out[1].2, "x".repeat(70_000));
}

/// A forbidden method split over fragments, with a ping between them: the ping is handed out
/// at once; the message only whole, as its fragment frames (the ping left out).
#[test]
fn fragmented_messages_are_handed_out_whole_and_controls_between_them_at_once() {
    let msg = br#"{"type":"req","id":"1","method":"exec.approval.resolve","params":{}}"#;
    let a = frame(false, OP_TEXT, &msg[..30]);
    let ping = frame(true, OP_PING, b"hi");
    let b = frame(false, OP_CONTINUATION, &msg[30..45]);
    let pong = frame(true, OP_PONG, b"");
    let c = frame(true, OP_CONTINUATION, &msg[45..]);
    // A character split between fragments is UTF-8 once whole.
    let d = frame(false, OP_TEXT, &"é".as_bytes()[..1]);
    let e = frame(true, OP_CONTINUATION, &"é".as_bytes()[1..]);
    let input = [&a[..], &ping, &b, &pong, &c, &d, &e].concat();
    let (out, end) = run(&input, MAX);
    assert_eq!(end, Ok(()));
    let want: Handed = vec![
        ('p', b"hi".to_vec(), String::new()),
        ('o', vec![], String::new()),
        (
            'm',
            [&a[..], &b, &c].concat(),
            String::from_utf8(msg.to_vec()).expect("utf8"),
        ),
        ('m', [&d[..], &e].concat(), "é".to_owned()),
    ];
    assert_eq!(out, want);
}

/// A broken stream's case: its name, the bytes, the limit, the error and its close code.
type Broken = (&'static str, Vec<u8>, usize, &'static str, Option<u16>);

/// Broken streams: nothing of the broken message is handed out, and the end says why.
#[test]
fn broken_client_streams_end_with_the_reason_and_code() {
    let text = frame(true, OP_TEXT, b"ok");
    let empty_fragments: Vec<u8> = [frame(false, OP_TEXT, b"")]
        .into_iter()
        .chain(std::iter::repeat_with(|| frame(false, OP_CONTINUATION, b"")).take(10))
        .flatten()
        .collect();
    let cases: Vec<Broken> = vec![
        (
            "continuation without a start",
            frame(true, OP_CONTINUATION, b"x"),
            MAX,
            "outside a message",
            Some(1002),
        ),
        (
            "a new message inside a fragmented one",
            [frame(false, OP_TEXT, b"a"), frame(true, OP_TEXT, b"b")].concat(),
            MAX,
            "inside a fragmented",
            Some(1002),
        ),
        (
            "binary inside a fragmented one",
            [frame(false, OP_TEXT, b"a"), frame(true, OP_BINARY, b"b")].concat(),
            MAX,
            "binary",
            Some(1003),
        ),
        (
            "a frame over the limit",
            frame(true, OP_TEXT, &[b'a'; 11]),
            10,
            "over 10",
            Some(1009),
        ),
        (
            "a message over the limit",
            [
                frame(false, OP_TEXT, &[b'a'; 6]),
                frame(true, OP_CONTINUATION, &[b'a'; 6]),
            ]
            .concat(),
            10,
            "over 10",
            Some(1009),
        ),
        (
            "empty fragments without end",
            empty_fragments,
            10,
            "over 10",
            Some(1009),
        ),
        (
            "invalid UTF-8",
            frame(true, OP_TEXT, b"{\"a\":\"\xff\"}"),
            MAX,
            "UTF-8",
            Some(1007),
        ),
        (
            "invalid UTF-8 over fragments",
            [
                frame(false, OP_TEXT, b"\xe9"),
                frame(true, OP_CONTINUATION, b"x"),
            ]
            .concat(),
            MAX,
            "UTF-8",
            Some(1007),
        ),
        (
            "a one-byte close",
            frame(true, OP_CLOSE, &[3]),
            MAX,
            "control",
            Some(1002),
        ),
        (
            "close code 1005",
            frame(true, OP_CLOSE, &1005u16.to_be_bytes()),
            MAX,
            "close code 1005",
            Some(1002),
        ),
        (
            "close reason not UTF-8",
            frame(true, OP_CLOSE, b"\x03\xe8\xff"),
            MAX,
            "UTF-8",
            Some(1007),
        ),
        (
            "cut inside a frame",
            text[..5].to_vec(),
            MAX,
            "inside a frame",
            None,
        ),
        (
            "cut inside a message",
            frame(false, OP_TEXT, b"a"),
            MAX,
            "inside a frame",
            None,
        ),
    ];
    for (name, input, max, want, code) in cases {
        let (out, end) = run(&input, max);
        assert!(out.is_empty(), "{name}: {out:?}");
        let e = end.expect_err(name);
        assert!(e.contains(want), "{name}: {e}");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("rt");
        let err = rt.block_on(async {
            let mut r = ClientFrames::new(BytesMut::new(), max, Duration::from_secs(30));
            let mut io = &input[..];
            r.next(&mut io).await.expect_err(name)
        });
        assert_eq!(err.close_code(), code, "{name}");
    }
}

#[test]
fn a_close_is_handed_out_with_its_code() {
    let close = frame(true, OP_CLOSE, b"\x03\xe8bye");
    let bare = frame(true, OP_CLOSE, b"");
    let (out, end) = run(&[&close[..], &bare].concat(), MAX);
    assert_eq!(end, Ok(()));
    let codes: Vec<&str> = out.iter().map(|(_, _, c)| c.as_str()).collect();
    assert_eq!(codes, ["Some(1000)", "None"]);
}

/// Bytes the client sent behind its upgrade request are read first.
#[tokio::test]
async fn bytes_from_the_handshake_come_first() {
    let a = frame(true, OP_TEXT, b"{}");
    let mut r = ClientFrames::new(BytesMut::from(&a[..]), MAX, Duration::from_secs(30));
    let mut io: &[u8] = &[];
    let got = r.next(&mut io).await.expect("frame");
    assert_eq!(
        got,
        Some(FromClient::Message {
            raw: &a,
            text: "{}"
        })
    );
    assert!(r.next(&mut io).await.expect("end").is_none());
}

/// A slowloris: a frame begun and never finished ends at the deadline; a fragmented message
/// that never ends does too; a client silent between messages is left alone.
#[tokio::test]
async fn a_frame_must_be_finished_within_the_deadline() {
    let deadline = Duration::from_millis(200);
    let whole = frame(true, OP_TEXT, b"{}");
    let starts: [Vec<u8>; 3] = [
        whole[..3].to_vec(),
        frame(false, OP_TEXT, b"{"),
        [&whole[..], &whole[..1]].concat(),
    ];
    for start in starts {
        let (mut client, mut door) = tokio::io::duplex(1024);
        tokio::io::AsyncWriteExt::write_all(&mut client, &start)
            .await
            .expect("write");
        let mut r = ClientFrames::new(BytesMut::new(), MAX, deadline);
        let t0 = Instant::now();
        let e = loop {
            match r.next(&mut door).await {
                Ok(Some(_)) => {}
                Ok(None) => panic!("ended"),
                Err(e) => break e,
            }
        };
        assert!(matches!(e, ClientError::Slow(_)), "{e}");
        assert_eq!(e.close_code(), Some(1008));
        assert!(t0.elapsed() >= deadline);
        drop(client);
    }
    let (_client, mut door) = tokio::io::duplex(1024);
    let mut r = ClientFrames::new(BytesMut::new(), MAX, deadline);
    let idle = tokio::time::timeout(deadline * 3, r.next(&mut door)).await;
    assert!(idle.is_err(), "a silent client is still waited for");
}

#[test]
fn server_frames_are_unmasked_and_close_reasons_fit() {
    let mut out = Vec::new();
    for n in [0, 125, 126, 65535, 65536] {
        server_frame(&mut out, OP_TEXT, &vec![b'a'; n]);
        let h = crate::gateway::relay::parse_header(&out, MAX)
            .expect("a valid server frame")
            .expect("whole");
        assert_eq!((h.fin, h.opcode, h.payload), (true, OP_TEXT, n));
        assert_eq!(out.len(), h.len + n);
    }
    close_frame(&mut out, 1011, &"é".repeat(100));
    assert_eq!(out.len(), 2 + 2 + 122, "cut at a character boundary");
    assert_eq!(&out[2..4], &1011u16.to_be_bytes());
}
