//! WebSocket frames (RFC 6455 §5): the client's, masked, written whole; the server's read as
//! they arrive. A data message's payload is counted, never held (a 2 GiB frame costs no
//! memory, and one longer than the reader's limit is refused at its header); a control frame's
//! (at most 125 bytes) is kept for its answer.

use thiserror::Error;

/// A continuation frame.
pub const OP_CONTINUATION: u8 = 0x0;
/// A text frame.
pub const OP_TEXT: u8 = 0x1;
/// A binary frame.
pub const OP_BINARY: u8 = 0x2;
/// A close frame.
pub const OP_CLOSE: u8 = 0x8;
/// A ping.
pub const OP_PING: u8 = 0x9;
/// A pong.
pub const OP_PONG: u8 = 0xA;

/// The largest payload of a control frame (RFC 6455 §5.5).
pub const MAX_CONTROL: usize = 125;

/// The bytes [`encode`] writes for a payload of `len` bytes.
pub fn encoded_len(len: usize) -> usize {
    let ext = match len {
        0..=125 => 0,
        126..=0xffff => 2,
        _ => 8,
    };
    2 + ext + 4 + len
}

/// Appends one whole frame (FIN set) of `opcode` carrying `payload`, masked with `mask` as a
/// client must (RFC 6455 §5.3).
pub fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.reserve(encoded_len(payload.len()));
    out.push(0x80 | opcode);
    let n = payload.len();
    if n <= 125 {
        out.push(0x80 | n as u8);
    } else if n <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    for (k, b) in out[start..].iter_mut().enumerate() {
        *b ^= mask[k & 3];
    }
}

/// A close frame's payload: the code, then a reason.
pub fn close_payload(code: u16) -> [u8; 2] {
    code.to_be_bytes()
}

/// What the server's bytes held, one at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A whole data message of `len` payload bytes (all its fragments).
    Message {
        /// A binary message (else text).
        binary: bool,
        /// Its payload's length.
        len: u64,
    },
    /// A ping, to be answered with a pong of the same payload.
    Ping(Vec<u8>),
    /// A pong (unasked for, or an answer).
    Pong,
    /// The server closes: its status code (none when the frame had no payload) and reason.
    Close {
        /// The status code (RFC 6455 §7.4).
        code: Option<u16>,
        /// Its reason, as far as it is UTF-8.
        reason: String,
    },
}

/// A frame the server should not have sent (RFC 6455 §5 and §7.4): the connection fails.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// A server's frames are never masked (§5.1).
    #[error("the server sent a masked frame")]
    Masked,
    /// Reserved bits without a negotiated extension (§5.2).
    #[error("the server set reserved bits (0x{0:x}) that no extension negotiated")]
    Reserved(u8),
    /// An opcode RFC 6455 does not define.
    #[error("the server sent a frame of unknown opcode 0x{0:x}")]
    Opcode(u8),
    /// A control frame longer than 125 bytes, or fragmented (§5.5).
    #[error("the server sent a {what} control frame (opcode 0x{opcode:x})")]
    Control {
        /// Its opcode.
        opcode: u8,
        /// `fragmented` or `N-byte`.
        what: String,
    },
    /// A continuation frame with no message begun, or a new message inside a fragmented one.
    #[error("the server {0}")]
    Fragments(&'static str),
    /// A message longer than the reader takes.
    #[error("the server sent a message of {len} bytes, over the {limit} bytes volley reads")]
    TooLarge {
        /// The message's length so far (its frames' declared lengths).
        len: u64,
        /// The reader's limit.
        limit: u64,
    },
    /// A close frame of one byte, or with a code no endpoint may send (§7.4.1).
    #[error("the server sent a close frame {0}")]
    Close(String),
}

/// The header of the frame being read.
#[derive(Debug, Clone, Copy)]
struct Head {
    fin: bool,
    opcode: u8,
}

/// Reads the server's frames as they arrive, in pieces of any size.
#[derive(Debug)]
pub struct Reader {
    /// The header bytes gathered so far, and how many it has (2 to 10).
    head: [u8; 10],
    head_len: usize,
    /// The frame whose payload is being read.
    frame: Option<Head>,
    /// Its payload bytes still to come.
    remaining: u64,
    /// A data message begun (binary?, its length so far), until its final fragment.
    message: Option<(bool, u64)>,
    /// A control frame's payload.
    control: Vec<u8>,
    /// The longest message taken.
    limit: u64,
}

impl Reader {
    /// A reader that refuses messages longer than `limit` bytes.
    pub fn new(limit: u64) -> Reader {
        Reader {
            head: [0; 10],
            head_len: 0,
            frame: None,
            remaining: 0,
            message: None,
            control: Vec::new(),
            limit,
        }
    }

    /// Reads `input` up to the end of the next event: the bytes used, and the event when one
    /// ended there (then call again with the rest).
    pub fn next(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), FrameError> {
        let mut used = 0;
        loop {
            if self.frame.is_none() {
                used += self.gather_head(&input[used..])?;
                if self.frame.is_none() {
                    return Ok((used, None));
                }
            }
            let take = self.remaining.min((input.len() - used) as u64) as usize;
            let head = self.frame.expect("a frame is being read");
            if head.opcode >= OP_CLOSE {
                self.control.extend_from_slice(&input[used..used + take]);
            }
            used += take;
            self.remaining -= take as u64;
            if self.remaining > 0 {
                return Ok((used, None));
            }
            self.frame = None;
            if let Some(ev) = self.frame_done(head)? {
                return Ok((used, Some(ev)));
            }
            if used == input.len() {
                return Ok((used, None));
            }
        }
    }

    /// Takes header bytes from `input` (returns how many); once the header is whole, checks
    /// it and starts its frame.
    fn gather_head(&mut self, input: &[u8]) -> Result<usize, FrameError> {
        let mut used = 0;
        while used < input.len() {
            let need = self.head_needed();
            if self.head_len >= need {
                break;
            }
            let take = (need - self.head_len).min(input.len() - used);
            self.head[self.head_len..self.head_len + take]
                .copy_from_slice(&input[used..used + take]);
            self.head_len += take;
            used += take;
        }
        if self.head_len >= 2 && self.head_len >= self.head_needed() {
            self.start_frame()?;
            self.head_len = 0;
        }
        Ok(used)
    }

    /// The header's length as far as its first two bytes tell (2 until they are known).
    fn head_needed(&self) -> usize {
        if self.head_len < 2 {
            return 2;
        }
        match self.head[1] & 0x7f {
            126 => 4,
            127 => 10,
            _ => 2,
        }
    }

    fn start_frame(&mut self) -> Result<(), FrameError> {
        let (b0, b1) = (self.head[0], self.head[1]);
        if b1 & 0x80 != 0 {
            return Err(FrameError::Masked);
        }
        if b0 & 0x70 != 0 {
            return Err(FrameError::Reserved(b0 & 0x70));
        }
        let head = Head {
            fin: b0 & 0x80 != 0,
            opcode: b0 & 0x0f,
        };
        let len = match b1 & 0x7f {
            126 => u64::from(u16::from_be_bytes([self.head[2], self.head[3]])),
            127 => u64::from_be_bytes(self.head[2..10].try_into().expect("8 bytes")),
            n => u64::from(n),
        };
        match head.opcode {
            OP_CLOSE | OP_PING | OP_PONG => {
                if !head.fin || len > MAX_CONTROL as u64 {
                    let what = if head.fin {
                        format!("{len}-byte")
                    } else {
                        "fragmented".to_string()
                    };
                    return Err(FrameError::Control {
                        opcode: head.opcode,
                        what,
                    });
                }
                self.control.clear();
            }
            OP_CONTINUATION | OP_TEXT | OP_BINARY => self.start_data(head, len)?,
            op => return Err(FrameError::Opcode(op)),
        }
        self.frame = Some(head);
        self.remaining = len;
        Ok(())
    }

    /// A data frame's header: it begins a message or continues the one begun.
    fn start_data(&mut self, head: Head, len: u64) -> Result<(), FrameError> {
        let so_far = match (head.opcode, self.message) {
            (OP_CONTINUATION, None) => {
                return Err(FrameError::Fragments(
                    "sent a continuation frame with no message begun",
                ))
            }
            (OP_CONTINUATION, Some((_, n))) => n,
            (_, Some(_)) => {
                return Err(FrameError::Fragments(
                    "began a message inside a fragmented one",
                ))
            }
            (op, None) => {
                self.message = Some((op == OP_BINARY, 0));
                0
            }
        };
        let total = so_far.saturating_add(len);
        if total > self.limit {
            return Err(FrameError::TooLarge {
                len: total,
                limit: self.limit,
            });
        }
        if let Some((_, n)) = self.message.as_mut() {
            *n = total;
        }
        Ok(())
    }

    /// The frame's last payload byte arrived: what it ends, if anything.
    fn frame_done(&mut self, head: Head) -> Result<Option<Event>, FrameError> {
        Ok(match head.opcode {
            OP_PING => Some(Event::Ping(std::mem::take(&mut self.control))),
            OP_PONG => Some(Event::Pong),
            OP_CLOSE => Some(close_event(&self.control)?),
            _ if head.fin => {
                let (binary, len) = self.message.take().expect("a data frame began a message");
                Some(Event::Message { binary, len })
            }
            _ => None,
        })
    }
}

/// A close frame's payload (RFC 6455 §5.5.1, §7.4).
fn close_event(payload: &[u8]) -> Result<Event, FrameError> {
    match payload {
        [] => Ok(Event::Close {
            code: None,
            reason: String::new(),
        }),
        [_] => Err(FrameError::Close("of one byte (a code is two)".into())),
        [a, b, reason @ ..] => {
            let code = u16::from_be_bytes([*a, *b]);
            // 1005, 1006 and 1015 are for reports, never sent; below 1000, 1016-2999 and
            // 5000 on are not assigned.
            if code < 1000 || matches!(code, 1004..=1006 | 1015..=2999 | 5000..) {
                return Err(FrameError::Close(format!(
                    "with code {code}, which no endpoint sends"
                )));
            }
            Ok(Event::Close {
                code: Some(code),
                reason: String::from_utf8_lossy(reason).into_owned(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's (unmasked) frame.
    fn server(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![(u8::from(fin) << 7) | opcode];
        match payload.len() {
            n @ 0..=125 => f.push(n as u8),
            n @ 126..=0xffff => {
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

    /// Every event of `input` fed `step` bytes at a time.
    fn events(r: &mut Reader, input: &[u8], step: usize) -> Result<Vec<Event>, FrameError> {
        let mut out = Vec::new();
        for chunk in input.chunks(step.max(1)) {
            let mut off = 0;
            loop {
                let (used, ev) = r.next(&chunk[off..])?;
                off += used;
                match ev {
                    Some(e) => out.push(e),
                    None if off == chunk.len() => break,
                    None => {}
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn a_client_frame_is_masked_and_its_length_encoded_in_the_shortest_form() {
        for n in [0usize, 5, 125, 126, 65_535, 65_536] {
            let payload: Vec<u8> = (0..n).map(|k| k as u8).collect();
            let mut out = Vec::new();
            encode(&mut out, OP_BINARY, &payload, [1, 2, 3, 4]);
            assert_eq!(out.len(), encoded_len(n), "{n}");
            assert_eq!(out[0], 0x82);
            assert_eq!(out[1] & 0x80, 0x80, "masked");
            let start = out.len() - n;
            let unmasked: Vec<u8> = out[start..]
                .iter()
                .enumerate()
                .map(|(k, b)| b ^ [1, 2, 3, 4][k & 3])
                .collect();
            assert_eq!(unmasked, payload);
        }
    }

    #[test]
    fn messages_pings_and_closes_are_read_from_pieces_of_any_size() {
        let mut input = server(true, OP_TEXT, b"hello");
        input.extend(server(true, OP_PING, b"p"));
        input.extend(server(false, OP_BINARY, &[7; 300]));
        input.extend(server(true, OP_PONG, b""));
        input.extend(server(true, OP_CONTINUATION, &[8; 70_000]));
        input.extend(server(true, OP_CLOSE, &[0x03, 0xe8, b'o', b'k']));
        let want = vec![
            Event::Message {
                binary: false,
                len: 5,
            },
            Event::Ping(b"p".to_vec()),
            Event::Pong,
            Event::Message {
                binary: true,
                len: 70_300,
            },
            Event::Close {
                code: Some(1000),
                reason: "ok".into(),
            },
        ];
        for step in [1, 2, 3, 7, 64, 1 << 20] {
            let mut r = Reader::new(1 << 20);
            assert_eq!(events(&mut r, &input, step).unwrap(), want, "step {step}");
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_at_its_header_without_its_payload() {
        let mut r = Reader::new(1 << 24);
        // A 2 GiB frame's header alone.
        let mut head = vec![0x82, 127];
        head.extend_from_slice(&(2u64 << 30).to_be_bytes());
        assert_eq!(
            r.next(&head),
            Err(FrameError::TooLarge {
                len: 2 << 30,
                limit: 1 << 24
            })
        );
    }

    #[test]
    fn frames_a_server_must_not_send_fail_the_connection() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0x81, 0x80, 0, 0, 0, 0], "masked"),
            (vec![0xc1, 0x00], "reserved"),
            (vec![0x83, 0x00], "unknown opcode 0x3"),
            (server(false, OP_PING, b""), "fragmented control"),
            (server(true, OP_PING, &[0; 126]), "126-byte control"),
            (server(true, OP_CONTINUATION, b"x"), "no message begun"),
            (
                [server(false, OP_TEXT, b"a"), server(true, OP_TEXT, b"b")].concat(),
                "inside a fragmented one",
            ),
            (server(true, OP_CLOSE, &[3]), "of one byte"),
            (server(true, OP_CLOSE, &[0x03, 0xed]), "code 1005"),
            (server(true, OP_CLOSE, &[0x13, 0x88]), "code 5000"),
        ];
        for (input, what) in cases {
            let mut r = Reader::new(1 << 20);
            let e = events(&mut r, &input, 1 << 20).unwrap_err();
            let text = e.to_string();
            let key = what.split(' ').next().unwrap();
            assert!(text.contains(key), "{what}: {text}");
        }
    }
}
