//! The client-to-gateway half of the front door, frame by frame. A client's frames are masked
//! by the client, and a masked frame is what the gateway must get from its own client too: so
//! a judged message goes up as the very frames the client sent (mask and all, one write), and
//! the door unmasks only a copy of the payload, for the filter. Headers are checked strictly
//! before any payload is waited for or copied: a declared length over the limit ends the
//! client at once (1009), as do reserved bits, an unmasked frame, an unknown opcode, a long or
//! fragmented control frame and a length in more bytes than it needs (1002: a parser
//! differential with the gateway is not worth a lenient reading). Binary frames are refused
//! at their header (1003), text that is not UTF-8 is 1007.
//!
//! A fragmented message is gathered and judged whole; none of its frames reaches the gateway
//! before that. An allowed one then goes up as the client's own fragment frames, in order and
//! unchanged (the control frames the client interleaved are the door's to answer, and are
//! left out): that keeps "forwarded as received" true for fragments too, and needs no fresh
//! mask. A message being gathered may hold at most `max` payload bytes and `2 × max` bytes of
//! frames (a stream of empty fragments must not grow it without end).
//!
//! A frame, once begun, or a fragmented message, once started, must be complete within the
//! reader's deadline: a client that dribbles a frame byte by byte does not hold its
//! connection slot forever. Between messages a client may stay silent as long as it likes.

use super::relay::{OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT};
use bytes::{Buf, BytesMut};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

/// How much one socket read may bring (no zero-fill: the buffer's spare room is read into).
const READ_CHUNK: usize = 8 * 1024;

/// Why a client's stream ends; each has its close code.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("reserved bits set (no extension was negotiated)")]
    Reserved,
    #[error("unmasked frame from a client")]
    Unmasked,
    #[error("unknown opcode {0:#x}")]
    Opcode(u8),
    #[error("invalid control frame")]
    Control,
    #[error("frame length not in its shortest form")]
    NonMinimal,
    #[error("frame or message over {0} bytes")]
    TooLarge(usize),
    #[error("binary frames are not accepted")]
    Binary,
    #[error("continuation frame outside a message")]
    StrayContinuation,
    #[error("new message inside a fragmented one")]
    Interleaved,
    #[error("text is not UTF-8")]
    Utf8,
    #[error("invalid close code {0}")]
    CloseCode(u16),
    #[error("frame not completed within {0:?}")]
    Slow(Duration),
    #[error("connection ended inside a frame")]
    Truncated,
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl ClientError {
    /// The close code the door sends for this error (None: the connection is gone anyway).
    pub fn close_code(&self) -> Option<u16> {
        match self {
            ClientError::TooLarge(_) => Some(1009),
            ClientError::Binary => Some(1003),
            ClientError::Utf8 => Some(1007),
            ClientError::Slow(_) => Some(1008),
            ClientError::Truncated | ClientError::Io(_) => None,
            _ => Some(1002),
        }
    }
}

/// One client frame header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientHeader {
    pub fin: bool,
    pub opcode: u8,
    /// Bytes of header (mask included) before the payload.
    pub len: usize,
    pub payload: usize,
    pub mask: [u8; 4],
}

/// The header at the start of `buf` (None: not all of it is here yet). The length is judged
/// as soon as its bytes are here, before the mask is waited for.
pub fn parse_client_header(buf: &[u8], max: usize) -> Result<Option<ClientHeader>, ClientError> {
    let (Some(&b0), Some(&b1)) = (buf.first(), buf.get(1)) else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(ClientError::Reserved);
    }
    let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
    if !matches!(opcode, 0..=2 | 8..=10) {
        return Err(ClientError::Opcode(opcode));
    }
    if b1 & 0x80 == 0 {
        return Err(ClientError::Unmasked);
    }
    let Some((at, payload)) = super::relay::payload_length(buf) else {
        return Ok(None);
    };
    if (at == 4 && payload < 126) || (at == 10 && payload <= 0xFFFF) {
        return Err(ClientError::NonMinimal);
    }
    if opcode >= OP_CLOSE && (!fin || payload > 125) {
        return Err(ClientError::Control);
    }
    let payload = match usize::try_from(payload) {
        Ok(p) if p <= max => p,
        _ => return Err(ClientError::TooLarge(max)),
    };
    if opcode == OP_BINARY {
        return Err(ClientError::Binary);
    }
    let Some(mask) = buf
        .get(at..at + 4)
        .and_then(|m| <[u8; 4]>::try_from(m).ok())
    else {
        return Ok(None);
    };
    Ok(Some(ClientHeader {
        fin,
        opcode,
        len: at + 4,
        payload,
        mask,
    }))
}

/// What a client sent that the door acts on.
#[derive(Debug, PartialEq, Eq)]
pub enum FromClient<'a> {
    /// A whole text message: its frames as received (for the gateway), and its text.
    Message {
        raw: &'a [u8],
        text: &'a str,
    },
    /// A ping's payload, unmasked, for the door's pong.
    Ping(&'a [u8]),
    Pong,
    /// A close, and its code (None: the client sent none).
    Close(Option<u16>),
}

/// Where the next [`FromClient`] lies (positions, so the read loop holds no borrow).
enum Found {
    /// A single-frame message: the frame is `buf[..end]`, its text in `text`.
    Frame(usize),
    /// A gathered message: its frames in `gathered`, its text in `text`.
    Message,
    Ping,
    Pong,
    Close(Option<u16>),
}

/// A client's frames, read, checked and unmasked for judging.
pub struct ClientFrames {
    buf: BytesMut,
    /// Bytes at the front of `buf` handed out last time, dropped on the next call.
    handed: usize,
    /// The fragment frames of the message being gathered (or last handed out), as received.
    gathered: Vec<u8>,
    gathering: bool,
    /// The unmasked text of the message being gathered or handed out.
    text: Vec<u8>,
    /// The unmasked payload of the last control frame.
    control: Vec<u8>,
    max: usize,
    deadline: Duration,
    /// When the door began waiting for the rest of a frame or message.
    since: Option<Instant>,
}

impl ClientFrames {
    /// `already`: bytes the client sent right behind its upgrade request.
    pub fn new(already: BytesMut, max: usize, deadline: Duration) -> Self {
        ClientFrames {
            buf: already,
            handed: 0,
            gathered: Vec::new(),
            gathering: false,
            text: Vec::new(),
            control: Vec::new(),
            max,
            deadline,
            since: None,
        }
    }

    /// The next message or control frame; None when the client closed the connection between
    /// messages. Cancel-safe: the only await is a read into `buf`.
    pub async fn next<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
    ) -> Result<Option<FromClient<'_>>, ClientError> {
        let found = loop {
            if let Some(f) = self.step()? {
                break f;
            }
            self.buf.reserve(READ_CHUNK);
            let n = if self.buf.is_empty() && !self.gathering {
                self.since = None;
                io.read_buf(&mut self.buf).await?
            } else {
                let since = *self.since.get_or_insert_with(Instant::now);
                tokio::time::timeout_at(since + self.deadline, io.read_buf(&mut self.buf))
                    .await
                    .map_err(|_| ClientError::Slow(self.deadline))??
            };
            if n == 0 {
                if self.buf.is_empty() && !self.gathering {
                    return Ok(None);
                }
                return Err(ClientError::Truncated);
            }
        };
        Ok(Some(match found {
            Found::Frame(end) => FromClient::Message {
                raw: &self.buf[..end],
                text: std::str::from_utf8(&self.text).map_err(|_| ClientError::Utf8)?,
            },
            Found::Message => FromClient::Message {
                raw: &self.gathered,
                text: std::str::from_utf8(&self.text).map_err(|_| ClientError::Utf8)?,
            },
            Found::Ping => FromClient::Ping(&self.control),
            Found::Pong => FromClient::Pong,
            Found::Close(code) => FromClient::Close(code),
        }))
    }

    /// Takes whole frames from `buf` until one is for the caller (None: more bytes needed).
    fn step(&mut self) -> Result<Option<Found>, ClientError> {
        self.buf.advance(std::mem::take(&mut self.handed));
        loop {
            let Some(h) = parse_client_header(&self.buf, self.max)? else {
                return Ok(None);
            };
            let end = h.len + h.payload;
            if self.buf.len() < end {
                self.buf.reserve(end - self.buf.len());
                return Ok(None);
            }
            let payload = &self.buf[h.len..end];
            match h.opcode {
                OP_PING | OP_PONG | OP_CLOSE => {
                    self.control.clear();
                    unmask_into(&mut self.control, payload, h.mask);
                    self.handed = end;
                    return match h.opcode {
                        OP_PING => Ok(Some(Found::Ping)),
                        OP_PONG => Ok(Some(Found::Pong)),
                        _ => close_code(&self.control).map(|c| Some(Found::Close(c))),
                    };
                }
                OP_TEXT if self.gathering => return Err(ClientError::Interleaved),
                OP_CONTINUATION if !self.gathering => return Err(ClientError::StrayContinuation),
                OP_TEXT => {
                    self.text.clear();
                    unmask_into(&mut self.text, payload, h.mask);
                    if h.fin {
                        self.handed = end;
                        self.since = None;
                        return Ok(Some(Found::Frame(end)));
                    }
                    self.gathering = true;
                    self.gathered.clear();
                    self.gathered.extend_from_slice(&self.buf[..end]);
                }
                _ => {
                    if self.text.len() + payload.len() > self.max
                        || self.gathered.len() + end > self.max.saturating_mul(2)
                    {
                        return Err(ClientError::TooLarge(self.max));
                    }
                    unmask_into(&mut self.text, payload, h.mask);
                    self.gathered.extend_from_slice(&self.buf[..end]);
                    if h.fin {
                        self.gathering = false;
                        self.handed = end;
                        self.since = None;
                        return Ok(Some(Found::Message));
                    }
                }
            }
            self.buf.advance(end);
        }
    }
}

/// A close payload's code (None when empty); a one-byte payload, a code no endpoint may send
/// (RFC 6455 7.4) or a reason that is not UTF-8 is an error.
fn close_code(payload: &[u8]) -> Result<Option<u16>, ClientError> {
    let Some((code, reason)) = payload.split_first_chunk::<2>() else {
        return match payload.is_empty() {
            true => Ok(None),
            false => Err(ClientError::Control),
        };
    };
    let code = u16::from_be_bytes(*code);
    if !matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999) {
        return Err(ClientError::CloseCode(code));
    }
    std::str::from_utf8(reason).map_err(|_| ClientError::Utf8)?;
    Ok(Some(code))
}

/// Appends `payload` unmasked with `mask` (from its first byte).
fn unmask_into(out: &mut Vec<u8>, payload: &[u8], mask: [u8; 4]) {
    let start = out.len();
    out.extend_from_slice(payload);
    super::relay::apply_mask(&mut out[start..], mask);
}

/// Replaces `out` with one whole server frame (unmasked, FIN set) of `payload`.
pub fn server_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    out.clear();
    out.push(0x80 | opcode);
    let n = payload.len();
    if n < 126 {
        out.push(n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        out.push(126);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(payload);
}

/// Replaces `out` with a close frame of `code` and `reason` (cut, at a character boundary,
/// to the 123 bytes a control frame leaves it).
pub fn close_frame(out: &mut Vec<u8>, code: u16, reason: &str) {
    let mut cut = reason.len().min(123);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let payload = [&code.to_be_bytes()[..], &reason.as_bytes()[..cut]].concat();
    server_frame(out, OP_CLOSE, &payload);
}

#[cfg(test)]
#[path = "client_leg_tests.rs"]
mod tests;
