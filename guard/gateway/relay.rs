//! The gateway-to-client half of the front door, frame by frame. Server frames are unmasked
//! on both legs, so a gateway frame reaches the client as the very bytes the gateway sent
//! (one write, no decode and re-encode): the door parses only the header, and a text
//! message's payload only to hold back approval events, which are the guard's to answer. A
//! fragmented message is reassembled and judged whole before any of its frames passes.
//! Extensions are never negotiated (see `upstream`), so a reserved bit is a protocol error.
//! Written here rather than taken from a crate: tungstenite has no frame-level read (it
//! always validates and copies into a `Message`); fastwebsockets reads frames but re-encodes
//! each on write, owns the socket the door's own responses also go to, and does not promise a
//! cancel-safe read (the door's one-task select needs one). A relay needs only a header parse.

use bytes::{Buf, BytesMut};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// How much one socket read may bring (no zero-fill: the buffer's spare room is read into).
const READ_CHUNK: usize = 8 * 1024;

/// Why the gateway's stream cannot be relayed further.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("reserved bits set (no extension was negotiated)")]
    Reserved,
    #[error("masked frame from the server")]
    Masked,
    #[error("unknown opcode {0:#x}")]
    Opcode(u8),
    #[error("invalid control frame")]
    Control,
    #[error("frame or message over {0} bytes")]
    TooLarge(usize),
    #[error("continuation frame outside a message")]
    StrayContinuation,
    #[error("new message inside a fragmented one")]
    Interleaved,
    #[error("connection ended inside a frame")]
    Truncated,
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// One frame header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub fin: bool,
    pub opcode: u8,
    /// Bytes of header before the payload.
    pub len: usize,
    pub payload: usize,
}

/// The header at the start of `buf` (None: not all of it is here yet). A server frame: a
/// mask is an error, as are reserved bits, unknown opcodes, fragmented or long control
/// frames and payloads over `max` bytes.
pub fn parse_header(buf: &[u8], max: usize) -> Result<Option<Header>, RelayError> {
    let (Some(&b0), Some(&b1)) = (buf.first(), buf.get(1)) else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(RelayError::Reserved);
    }
    if b1 & 0x80 != 0 {
        return Err(RelayError::Masked);
    }
    let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
    if !matches!(opcode, 0..=2 | 8..=10) {
        return Err(RelayError::Opcode(opcode));
    }
    let Some((len, payload)) = payload_length(buf) else {
        return Ok(None);
    };
    if opcode >= OP_CLOSE && (!fin || payload > 125) {
        return Err(RelayError::Control);
    }
    match usize::try_from(payload) {
        Ok(payload) if payload <= max => Ok(Some(Header {
            fin,
            opcode,
            len,
            payload,
        })),
        _ => Err(RelayError::TooLarge(max)),
    }
}

/// What the gateway sent that the door acts on (pongs are dropped: the door sends no pings).
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// A whole message's frame(s), to write to the client as they are.
    Data(&'a [u8]),
    /// A ping's payload, for the door's own pong.
    Ping(&'a [u8]),
    /// A close frame as received, and its payload.
    Close { raw: &'a [u8], payload: &'a [u8] },
}

/// Where the next [`Incoming`] lies (positions, so the read loop holds no borrow).
enum Found {
    Frame(usize),
    Ping(usize, usize),
    Close(usize, usize),
    Message,
}

/// A fragmented message being gathered: its frames as received, and its payload.
struct Gathering {
    text: bool,
    raw: Vec<u8>,
    payload: Vec<u8>,
}

/// The gateway's frames, read and judged: whole text messages that are approval events are
/// not handed out.
pub struct GatewayFrames {
    buf: BytesMut,
    /// Bytes at the front of `buf` handed out last time, dropped on the next call.
    handed: usize,
    /// The last gathered message was handed out: clear it on the next call.
    handed_message: bool,
    gathering: Option<Gathering>,
    max: usize,
}

impl GatewayFrames {
    /// `already`: what the handshake read past the response (frames sent right behind it).
    pub fn new(already: BytesMut, max: usize) -> Self {
        GatewayFrames {
            buf: already,
            handed: 0,
            handed_message: false,
            gathering: None,
            max,
        }
    }

    /// The next frame or message to act on; None when the gateway closed the connection
    /// between frames. Cancel-safe: the only await is a read into `buf`.
    pub async fn next<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
    ) -> Result<Option<Incoming<'_>>, RelayError> {
        let found = loop {
            if let Some(f) = self.step()? {
                break f;
            }
            self.buf.reserve(READ_CHUNK);
            if io.read_buf(&mut self.buf).await? == 0 {
                if self.buf.is_empty() && self.gathering.is_none() {
                    return Ok(None);
                }
                return Err(RelayError::Truncated);
            }
        };
        Ok(Some(self.view(found)))
    }

    fn view(&self, found: Found) -> Incoming<'_> {
        match found {
            Found::Frame(end) => Incoming::Data(&self.buf[..end]),
            Found::Ping(start, end) => Incoming::Ping(&self.buf[start..end]),
            Found::Close(start, end) => Incoming::Close {
                raw: &self.buf[..end],
                payload: &self.buf[start..end],
            },
            Found::Message => Incoming::Data(self.gathering.as_ref().map_or(&[], |g| &g.raw)),
        }
    }

    /// Takes whole frames from `buf` until one is for the caller (None: more bytes needed).
    fn step(&mut self) -> Result<Option<Found>, RelayError> {
        self.buf.advance(std::mem::take(&mut self.handed));
        if std::mem::take(&mut self.handed_message) {
            self.gathering = None;
        }
        loop {
            let Some(h) = parse_header(&self.buf, self.max)? else {
                return Ok(None);
            };
            let end = h.len + h.payload;
            if self.buf.len() < end {
                self.buf.reserve(end - self.buf.len());
                return Ok(None);
            }
            let payload = &self.buf[h.len..end];
            match (h.opcode, &mut self.gathering) {
                (OP_PING, _) => {
                    self.handed = end;
                    return Ok(Some(Found::Ping(h.len, end)));
                }
                (OP_CLOSE, _) if h.payload == 1 => return Err(RelayError::Control),
                (OP_CLOSE, _) => {
                    self.handed = end;
                    return Ok(Some(Found::Close(h.len, end)));
                }
                (OP_PONG, _) => {}
                (OP_TEXT | OP_BINARY, Some(_)) => return Err(RelayError::Interleaved),
                (OP_CONTINUATION, None) => return Err(RelayError::StrayContinuation),
                (op, None) if h.fin => {
                    if !(op == OP_TEXT && is_approval_event(payload)) {
                        self.handed = end;
                        return Ok(Some(Found::Frame(end)));
                    }
                }
                (op, None) => {
                    self.gathering = Some(Gathering {
                        text: op == OP_TEXT,
                        raw: self.buf[..end].to_vec(),
                        payload: payload.to_vec(),
                    });
                }
                (_, Some(g)) => {
                    if g.payload.len() + payload.len() > self.max {
                        return Err(RelayError::TooLarge(self.max));
                    }
                    g.raw.extend_from_slice(&self.buf[..end]);
                    g.payload.extend_from_slice(payload);
                    if h.fin {
                        if g.text && is_approval_event(&g.payload) {
                            self.gathering = None;
                        } else {
                            self.buf.advance(end);
                            self.handed_message = true;
                            return Ok(Some(Found::Message));
                        }
                    }
                }
            }
            self.buf.advance(end);
        }
    }
}

/// Whether a whole text message from the gateway is an approval event, not for the client.
/// One that is not UTF-8 but names "approval." is held back too: it is broken anyway, and a
/// lenient client might still read it as one.
pub fn is_approval_event(payload: &[u8]) -> bool {
    // Cheap test first: most frames are not approval events.
    if memchr::memmem::find(payload, b"approval.").is_none() {
        return false;
    }
    let Ok(text) = std::str::from_utf8(payload) else {
        return true;
    };
    serde_json::from_str::<Value>(text).is_ok_and(|v| {
        v["type"] == "event"
            && v["event"].as_str().is_some_and(|e| {
                e.starts_with("exec.approval.") || e.starts_with("plugin.approval.")
            })
    })
}

/// The payload length a frame header declares and the bytes it takes up to there (2, 4 or
/// 10); None while those bytes are not all in `buf`. Both legs' readers use it.
pub(super) fn payload_length(buf: &[u8]) -> Option<(usize, u64)> {
    match buf.get(1)? & 0x7F {
        126 => buf
            .get(2..4)
            .map(|b| (4, u64::from(u16::from_be_bytes([b[0], b[1]])))),
        127 => buf
            .get(2..10)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(|b| (10, u64::from_be_bytes(b))),
        n => Some((2, u64::from(n))),
    }
}

/// XORs `bytes` with the 4-byte `mask` from its first byte (masking and unmasking are the
/// same), eight bytes at a time: a byte loop was the door's costliest function of its own.
pub(super) fn apply_mask(bytes: &mut [u8], mask: [u8; 4]) {
    let [a, b, c, d] = mask;
    let wide = u64::from_ne_bytes([a, b, c, d, a, b, c, d]);
    let mut words = bytes.chunks_exact_mut(8);
    for w in &mut words {
        let mut x = [0; 8];
        x.copy_from_slice(w);
        w.copy_from_slice(&(u64::from_ne_bytes(x) ^ wide).to_ne_bytes());
    }
    for (i, b) in words.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 20;

    /// An unmasked server frame.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n if n < 126 => f.push(n as u8),
            n if n <= 0xFFFF => {
                f.push(126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(payload);
        f
    }

    /// What the reader handed out: `d`ata, `p`ing or `c`lose, and the bytes.
    type Handed = Vec<(char, Vec<u8>)>;

    /// Everything the reader hands out for `input` (fed whole), as owned values, then the
    /// end: Ok(()) at a clean end, else the error.
    fn run(input: &[u8], max: usize) -> (Handed, Result<(), String>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("rt");
        rt.block_on(async {
            let mut io = input;
            let mut r = GatewayFrames::new(BytesMut::new(), max);
            let mut out = Vec::new();
            loop {
                match r.next(&mut io).await {
                    Ok(None) => return (out, Ok(())),
                    Ok(Some(Incoming::Data(b))) => out.push(('d', b.to_vec())),
                    Ok(Some(Incoming::Ping(p))) => out.push(('p', p.to_vec())),
                    Ok(Some(Incoming::Close { raw, payload })) => {
                        assert!(raw.ends_with(payload));
                        out.push(('c', payload.to_vec()));
                    }
                    Err(e) => return (out, Err(e.to_string())),
                }
            }
        })
    }

    fn h(fin: bool, opcode: u8, len: usize, payload: usize) -> Option<Header> {
        Some(Header {
            fin,
            opcode,
            len,
            payload,
        })
    }

    #[test]
    fn headers_of_every_length_form_parse() {
        let cases: &[(&[u8], Option<Header>)] = &[
            (&[], None),
            (&[0x81], None),
            (&[0x81, 5], h(true, 1, 2, 5)),
            (&[0x02, 125], h(false, 2, 2, 125)),
            (&[0x81, 126, 0x01], None),
            (&[0x81, 126, 0x01, 0x00], h(true, 1, 4, 256)),
            (&[0x81, 127, 0, 0, 0, 0, 0, 1], None),
            (&[0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0], h(true, 1, 10, 65536)),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse_header(bytes, MAX).expect("valid"), *want, "{bytes:?}");
        }
    }

    #[test]
    fn malformed_headers_are_refused() {
        let cases: &[(&[u8], &str)] = &[
            (&[0xC1, 1], "reserved"),
            (&[0x91, 1], "reserved"),
            (&[0x81, 0x81], "masked"),
            (&[0x83, 0], "opcode"),
            (&[0x8B, 0], "opcode"),
            (&[0x09, 0], "control"),
            (&[0x89, 126, 0, 126], "control"),
            (&[0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 0], "over"),
            (&[0x81, 127, 0, 0, 0, 0, 0, 0x10, 0, 1], "over"),
        ];
        for (bytes, want) in cases {
            let e = parse_header(bytes, MAX).expect_err("malformed").to_string();
            assert!(e.contains(want), "{bytes:?}: {e}");
        }
    }

    #[test]
    fn frames_pass_as_received_and_approvals_are_held_back() {
        let chat = frame(true, OP_TEXT, br#"{"type":"event","event":"chat"}"#);
        let long = frame(true, OP_TEXT, &vec![b'x'; 300]);
        let huge = frame(true, OP_BINARY, &vec![7; 70_000]);
        let appr = frame(
            true,
            OP_TEXT,
            br#"{"type":"event","event":"exec.approval.x"}"#,
        );
        let bin = frame(true, OP_BINARY, b"approval.");
        let input = [&chat[..], &appr, &long, &huge, &bin].concat();
        let (out, end) = run(&input, MAX);
        assert_eq!(end, Ok(()));
        let want = [chat, long, huge, bin].map(|f| ('d', f));
        assert_eq!(out, want);
    }

    #[test]
    fn fragmented_messages_are_judged_whole() {
        // An approval event in three fragments, a ping between them: the ping is answered
        // at once, and no fragment passes.
        let a = frame(false, OP_TEXT, br#"{"type":"event","event":"exec.appro"#);
        let b = frame(false, OP_CONTINUATION, b"val.requ");
        let ping = frame(true, OP_PING, b"hi");
        let c = frame(true, OP_CONTINUATION, br#"ested"}"#);
        // Another fragmented message passes whole, as its frames were received (a pong
        // between them is dropped: the door sends no pings).
        let d = frame(false, OP_TEXT, b"hel");
        let pong = frame(true, OP_PONG, b"");
        let e = frame(true, OP_CONTINUATION, b"lo");
        let input = [&a[..], &b, &ping, &c, &d, &pong, &e].concat();
        let (out, end) = run(&input, MAX);
        assert_eq!(end, Ok(()));
        assert_eq!(
            out,
            vec![('p', b"hi".to_vec()), ('d', [&d[..], &e].concat())]
        );
    }

    #[test]
    fn broken_streams_end_with_the_reason() {
        let text = frame(true, OP_TEXT, b"ok");
        let cases: Vec<(Vec<u8>, usize, &str)> = vec![
            (frame(true, OP_CONTINUATION, b"x"), MAX, "outside a message"),
            (
                [frame(false, OP_TEXT, b"a"), frame(true, OP_TEXT, b"b")].concat(),
                MAX,
                "inside a fragmented",
            ),
            (frame(true, OP_TEXT, &[0; 11]), 10, "over 10"),
            (
                [
                    frame(false, OP_TEXT, &[0; 6]),
                    frame(true, OP_CONTINUATION, &[0; 6]),
                ]
                .concat(),
                10,
                "over 10",
            ),
            (frame(true, OP_CLOSE, &[3]), MAX, "control"),
            (text[..3].to_vec(), MAX, "inside a frame"),
            (frame(false, OP_TEXT, b"a"), MAX, "inside a frame"),
            ([0x81, 0x82, 1, 2, 3, 4, 0, 0].to_vec(), MAX, "masked"),
        ];
        for (input, max, want) in cases {
            let (out, end) = run(&input, max);
            assert!(out.is_empty(), "{want}: {out:?}");
            let e = end.expect_err(want);
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn a_close_is_handed_out_with_its_bytes() {
        let close = frame(true, OP_CLOSE, &[0x03, 0xE8, b'b', b'y', b'e']);
        let (out, end) = run(&close, MAX);
        assert_eq!(end, Ok(()));
        assert_eq!(out, vec![('c', vec![0x03, 0xE8, b'b', b'y', b'e'])]);
    }

    #[test]
    fn only_approval_events_are_held_back() {
        assert!(is_approval_event(
            r#"{"type":"event","event":"exec.approval.requested","payload":{}}"#.as_bytes()
        ));
        assert!(is_approval_event(
            r#"{"type":"event","event":"plugin.approval.resolved"}"#.as_bytes()
        ));
        assert!(!is_approval_event(
            r#"{"type":"event","event":"chat","payload":{"t":"exec.approval."}}"#.as_bytes()
        ));
        assert!(!is_approval_event(
            r#"{"type":"res","id":"1","ok":true,"payload":{"m":"exec.approval.get"}}"#.as_bytes()
        ));
    }
}
