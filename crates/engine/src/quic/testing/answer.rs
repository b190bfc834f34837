//! How the test server answers a request stream ([`Answer`]), and what it writes as the
//! client's flow control lets it ([`Flood`]): an answer, or for the hostile answers a
//! stream written to without end, until the client stops it.

use quinn_proto::{Connection, StreamId, VarInt, WriteError};

/// How the server answers a request stream once the request is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `200` with the body `.` (HEADERS, DATA, FIN).
    Ok,
    /// Resets the stream with this code.
    Reset(u64),
    /// As `Ok` as soon as the request stream has data, without waiting for its end, then
    /// STOP_SENDING on the request side with this code.
    OkThenStop(u64),
    /// DATA before HEADERS (H3_FRAME_UNEXPECTED for the client).
    DataFirst,
    /// Nothing: the stream stays open.
    Silent,
    /// Answers `answers` requests on each connection as [`Answer::Ok`], then closes the
    /// connection (CONNECTION_CLOSE) with the application error `code`.
    CloseAfter {
        /// Requests answered on a connection before it closes.
        answers: u64,
        /// The HTTP/3 error code of the close.
        code: u64,
    },
    /// `200` and then a DATA frame that never ends.
    EndlessBody,
    /// A HEADERS frame that never ends (its length is 2^40).
    EndlessHeaders,
    /// Interim responses (`103`) without end, never the final one.
    EndlessInterim,
    /// Answers `answers` requests on each connection as [`Answer::Ok`], then sends GOAWAY on
    /// its control stream naming the stream after the last answered; later streams are left
    /// unanswered (not processed: the client sends them again elsewhere).
    GoAwayAfter {
        /// Requests answered on a connection before its GOAWAY.
        answers: u64,
    },
}

/// `:status 200` in a HEADERS frame: the field section prefix (0, 0) and static index 25.
const HEADERS_200: &[u8] = &[0x01, 0x03, 0x00, 0x00, 0xc0 | 25];
/// DATA carrying `.`.
const DATA_DOT: &[u8] = &[0x00, 0x01, b'.'];
/// A DATA frame's start whose length, 2^62 − 1, no body reaches.
const DATA_ENDLESS: &[u8] = &[0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
/// A HEADERS frame's start of 2^40 bytes.
const HEADERS_ENDLESS: &[u8] = &[0x01, 0xc0, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00];

/// Answers request stream `id` as `how` says: what is to be written on it, if anything.
pub(super) fn answer(c: &mut Connection, id: StreamId, how: Answer) -> Option<Flood> {
    let (start, endless) = match how {
        Answer::Ok | Answer::CloseAfter { .. } | Answer::GoAwayAfter { .. } => {
            ([HEADERS_200, DATA_DOT].concat(), None)
        }
        Answer::DataFirst => ([DATA_DOT, HEADERS_200].concat(), None),
        Answer::OkThenStop(code) => {
            let _ = c.recv_stream(id).stop(VarInt::from_u64(code).unwrap());
            ([HEADERS_200, DATA_DOT].concat(), None)
        }
        Answer::Reset(code) => {
            c.send_stream(id)
                .reset(VarInt::from_u64(code).unwrap())
                .unwrap();
            return None;
        }
        Answer::Silent => return None,
        Answer::EndlessBody => ([HEADERS_200, DATA_ENDLESS].concat(), Some(&ZEROS[..])),
        Answer::EndlessHeaders => (HEADERS_ENDLESS.to_vec(), Some(&ZEROS[..])),
        Answer::EndlessInterim => (Vec::new(), Some(early_hints())),
    };
    Some(Flood::new(id, start, endless))
}

/// Zero bytes: a body or field section without end.
static ZEROS: [u8; 4096] = [0; 4096];

/// Reserved frames (type 0x21, RFC 9114 §7.2.8) of 64 bytes each, back to back: what a
/// control stream floods with.
pub(super) fn grease_frames() -> &'static [u8] {
    static FRAMES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    FRAMES.get_or_init(|| {
        let mut f = vec![0u8; 4096];
        for frame in f.chunks_mut(64) {
            frame[0] = 0x21;
            frame[1] = 62;
        }
        f
    })
}

/// HEADERS frames of `:status 103` (static index 24), back to back.
fn early_hints() -> &'static [u8] {
    static FRAMES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    FRAMES.get_or_init(|| [0x01, 0x03, 0x00, 0x00, 0xc0 | 24].repeat(819))
}

/// QPACK encoder instructions without end: Set Dynamic Table Capacity (0b001xxxxx) to 0.
pub(super) fn capacity_zero() -> &'static [u8] {
    static FRAMES: [u8; 4096] = [0x20; 4096];
    &FRAMES
}

/// Junk for streams of an unknown type.
pub(super) fn junk() -> &'static [u8] {
    &ZEROS
}

/// What a stream is written: its first bytes, then `pattern` over and over without end
/// (`None`: the stream ends after them).
#[derive(Debug)]
pub(super) struct Flood {
    pub id: StreamId,
    start: Vec<u8>,
    pattern: Option<&'static [u8]>,
    /// Bytes of the pattern written so far.
    written: u64,
}

/// Why a [`Flood`] is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Over {
    /// All of it was written (a finite one).
    Written,
    /// The client stopped (or reset) the stream.
    Stopped,
}

impl Flood {
    pub fn new(id: StreamId, start: Vec<u8>, pattern: Option<&'static [u8]>) -> Flood {
        Flood {
            id,
            start,
            pattern,
            written: 0,
        }
    }

    /// Whether it never ends.
    pub fn endless(&self) -> bool {
        self.pattern.is_some()
    }

    /// Writes as much as the stream takes: the bytes written, or why it is over (a stream
    /// the client stopped is reset).
    pub fn pump(&mut self, c: &mut Connection) -> Result<u64, Over> {
        let mut s = c.send_stream(self.id);
        let mut n = 0u64;
        loop {
            let r = match self.pattern {
                _ if !self.start.is_empty() => s.write(&self.start),
                Some(p) => s.write(&p[(self.written % p.len() as u64) as usize..]),
                None => {
                    let _ = s.finish();
                    return Err(Over::Written);
                }
            };
            match r {
                Ok(k) => {
                    n += k as u64;
                    if self.start.is_empty() {
                        self.written += k as u64;
                    } else {
                        self.start.drain(..k);
                    }
                }
                Err(WriteError::Blocked) => return Ok(n),
                Err(WriteError::Stopped(code)) => {
                    let _ = s.reset(code);
                    return Err(Over::Stopped);
                }
                Err(WriteError::ClosedStream) => return Err(Over::Stopped),
            }
        }
    }
}
