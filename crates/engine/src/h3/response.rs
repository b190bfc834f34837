//! The response on a request stream (RFC 9114 §4.1): interim HEADERS (1xx), the final
//! HEADERS, DATA, then optionally trailing HEADERS; unknown and reserved frame types are
//! skipped. Fed the stream's bytes in pieces of any size, it hands out events; the field
//! sections are bounded ([`Limits`]), DATA payloads are handed out as they come (the caller
//! counts them; [`Limits::keep_body`] keeps the start for a body check). What a response
//! means for the run (status, size, checks) is the caller's; see docs/contract.md.

use super::error::{fail, Code, H3Error};
use super::frame::{kind, Head as FrameHead, Piece, Splitter};
use super::qpack;

/// The default bound on a HEADERS frame's payload (the encoded field section) and on its
/// decoded size: 64 KiB, like the HTTP/1.1 head and the HTTP/2 header block.
pub const MAX_FIELD_SECTION: usize = 64 << 10;

/// Bounds and what to keep of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest HEADERS frame payload accepted (more: H3_EXCESSIVE_LOAD, before any of it
    /// is kept).
    pub max_headers_frame: usize,
    /// The largest decoded field section (names and values plus 32 per line, as
    /// SETTINGS_MAX_FIELD_SECTION_SIZE counts; more: H3_EXCESSIVE_LOAD).
    pub max_field_section: usize,
    /// Whether the fields of the head and trailers are kept for checks.
    pub keep_fields: bool,
    /// How many bytes of the start of the body are kept ([`ResponseParser::kept_body`]).
    pub keep_body: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_headers_frame: MAX_FIELD_SECTION,
            max_field_section: MAX_FIELD_SECTION,
            keep_fields: false,
            keep_body: 0,
        }
    }
}

/// Field lines (name, value), pseudo-header fields left out.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A response's head.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    /// `:status`.
    pub status: u16,
    /// `content-length`, if the response has one.
    pub content_length: Option<u64>,
    /// The fields, when [`Limits::keep_fields`] (else empty).
    pub fields: Fields,
}

/// What the response parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// An interim response (1xx).
    Interim {
        /// Its status.
        status: u16,
    },
    /// The final response's head.
    Head(Head),
    /// Body bytes (one DATA frame may come in several events).
    Data(&'a [u8]),
    /// The trailers: their fields when [`Limits::keep_fields`] (else empty).
    Trailers(Fields),
}

/// Where the response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the final head.
    Head,
    /// After it: DATA or trailers.
    Body,
    /// After the trailers: only frames to skip.
    Done,
}

/// The frame being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Headers,
    Data,
    Skip,
}

/// One request stream's response, parsed incrementally.
#[derive(Debug)]
pub struct ResponseParser {
    limits: Limits,
    head_request: bool,
    split: Splitter,
    state: State,
    frame: Option<Frame>,
    /// The HEADERS payload so far (at most `limits.max_headers_frame`).
    block: Vec<u8>,
    /// The body length the head promised (0 for a response without content).
    expect: Option<u64>,
    body: u64,
    kept: Vec<u8>,
    failed: Option<H3Error>,
}

impl ResponseParser {
    /// A parser for the response to a request (`head_request`: a HEAD, whose response has
    /// no content whatever its `content-length`).
    pub fn new(limits: Limits, head_request: bool) -> ResponseParser {
        ResponseParser {
            limits,
            head_request,
            split: Splitter::default(),
            state: State::Head,
            frame: None,
            block: Vec::new(),
            expect: None,
            body: 0,
            kept: Vec::new(),
            failed: None,
        }
    }

    /// Reads the stream's next bytes, calling `on` with what they complete. An error ends
    /// the stream (and, for most codes, the connection); it is returned again if fed more.
    pub fn feed(&mut self, input: &[u8], on: &mut impl FnMut(Event<'_>)) -> Result<(), H3Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.pieces(input, on);
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    fn pieces(&mut self, mut input: &[u8], on: &mut impl FnMut(Event<'_>)) -> Result<(), H3Error> {
        while let Some(piece) = self.split.next(&mut input) {
            match piece {
                Piece::Start(h) => self.start(h)?,
                Piece::Payload(b) => self.payload(b, on)?,
                Piece::End => {
                    if self.frame.take() == Some(Frame::Headers) {
                        self.section(on)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The server ended the stream (a clean end, not a reset): the response must be whole.
    pub fn finish(&mut self) -> Result<(), H3Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = if !self.split.between_frames() {
            Err(fail(Code::FrameError, "the stream ended inside a frame"))
        } else if self.state == State::Head {
            Err(fail(
                Code::MessageError,
                "the stream ended before the response's head",
            ))
        } else {
            self.check_length()
        };
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    /// The body bytes so far.
    pub fn body_len(&self) -> u64 {
        self.body
    }

    /// The bytes the parser holds: a HEADERS payload being assembled (at most
    /// [`Limits::max_headers_frame`]) and the kept body (at most [`Limits::keep_body`]).
    pub fn held(&self) -> usize {
        self.block.len() + self.kept.len()
    }

    /// The start of the body, up to [`Limits::keep_body`] bytes.
    pub fn kept_body(&self) -> &[u8] {
        &self.kept
    }

    fn start(&mut self, h: FrameHead) -> Result<(), H3Error> {
        let unexpected = |what: &str| {
            fail(
                Code::FrameUnexpected,
                format_args!("{} {what}", kind::name(h.kind)),
            )
        };
        self.frame = Some(match (h.kind, self.state) {
            (kind::HEADERS | kind::DATA, State::Done) => {
                return Err(unexpected("after the trailers"))
            }
            (kind::DATA, State::Head) => return Err(unexpected("before the response's head")),
            (kind::DATA, _) => Frame::Data,
            (kind::HEADERS, _) if h.len > self.limits.max_headers_frame as u64 => {
                return Err(fail(
                    Code::ExcessiveLoad,
                    format_args!(
                        "a HEADERS frame of {} bytes (the client takes {})",
                        h.len, self.limits.max_headers_frame
                    ),
                ))
            }
            (kind::HEADERS, _) => {
                self.block.clear();
                Frame::Headers
            }
            (kind::PUSH_PROMISE, _) => {
                return Err(fail(
                    Code::IdError,
                    "a PUSH_PROMISE, though the client allows no push (it sent no MAX_PUSH_ID)",
                ))
            }
            (kind::SETTINGS | kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH, _) => {
                return Err(unexpected("on a request stream"))
            }
            (k, _) if kind::is_http2_only(k) => return Err(unexpected("(not an HTTP/3 frame)")),
            _ => Frame::Skip,
        });
        Ok(())
    }

    fn payload(&mut self, b: &[u8], on: &mut impl FnMut(Event<'_>)) -> Result<(), H3Error> {
        match self.frame {
            Some(Frame::Headers) => self.block.extend_from_slice(b),
            Some(Frame::Data) => {
                // Bytes past the promised length are refused, those before it handed out
                // first: the same events however the stream was split.
                let room = self.expect.map_or(b.len() as u64, |n| n - self.body);
                let (ok, over) = b.split_at(room.min(b.len() as u64) as usize);
                self.body += ok.len() as u64;
                let keep = self.limits.keep_body.saturating_sub(self.kept.len());
                self.kept.extend_from_slice(&ok[..keep.min(ok.len())]);
                if !ok.is_empty() {
                    on(Event::Data(ok));
                }
                if !over.is_empty() {
                    return Err(fail(
                        Code::MessageError,
                        format_args!("a body over the {} bytes its head promised", self.body),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The whole body against the length the head promised.
    fn check_length(&self) -> Result<(), H3Error> {
        match self.expect {
            Some(n) if self.body != n => Err(fail(
                Code::MessageError,
                format_args!("a body of {} bytes where the head promised {n}", self.body),
            )),
            _ => Ok(()),
        }
    }

    /// A whole HEADERS frame: the head (after any interim ones), or the trailers.
    fn section(&mut self, on: &mut impl FnMut(Event<'_>)) -> Result<(), H3Error> {
        let trailers = self.state == State::Body;
        let d = decode(&self.block, &self.limits, trailers)?;
        self.block.clear();
        if self.block.capacity() > 4096 {
            self.block = Vec::new();
        }
        if trailers {
            self.state = State::Done;
            on(Event::Trailers(d.fields));
            return Ok(());
        }
        let status = d
            .status
            .ok_or_else(|| fail(Code::MessageError, "a response head without :status"))?;
        if status < 200 {
            on(Event::Interim { status });
            return Ok(());
        }
        self.state = State::Body;
        let no_content = self.head_request || status == 204 || status == 304;
        self.expect = if no_content { Some(0) } else { d.length };
        on(Event::Head(Head {
            status,
            content_length: d.length,
            fields: d.fields,
        }));
        Ok(())
    }
}

/// Fields that belong to one HTTP/1.1 connection: a message with any is malformed in
/// HTTP/3 (RFC 9114 §4.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// A decoded field section.
#[derive(Debug, Default)]
struct Decoded {
    status: Option<u16>,
    length: Option<u64>,
    fields: Fields,
}

/// Decodes a field section and checks it as a response's head (`trailers`: as trailers,
/// where no pseudo-header field may be); malformed is H3_MESSAGE_ERROR (RFC 9114 §4.1.2).
fn decode(block: &[u8], limits: &Limits, trailers: bool) -> Result<Decoded, H3Error> {
    let mut d = Decoded::default();
    let mut regular = false;
    let malformed = |what: std::fmt::Arguments<'_>| fail(Code::MessageError, what);
    qpack::decode(block, limits.max_field_section, |name, value| {
        if name.first() == Some(&b':') {
            let name = String::from_utf8_lossy(name);
            if trailers || regular || name != ":status" || d.status.is_some() {
                return Err(malformed(format_args!(
                    "a pseudo-header field {name} {}",
                    if trailers {
                        "in trailers"
                    } else if regular {
                        "after a field"
                    } else {
                        "where a response has one :status only"
                    }
                )));
            }
            d.status = Some(status(value).ok_or_else(|| {
                malformed(format_args!(
                    "a :status of {:?}",
                    String::from_utf8_lossy(value)
                ))
            })?);
            return Ok(());
        }
        regular = true;
        if name.is_empty()
            || !name.iter().all(|&b| name_byte(b))
            || CONNECTION_SPECIFIC.contains(&name)
        {
            return Err(malformed(format_args!(
                "a field named {:?}",
                String::from_utf8_lossy(name)
            )));
        }
        if !value.iter().all(|&b| value_byte(b)) {
            return Err(malformed(format_args!(
                "a control character in the value of {}",
                String::from_utf8_lossy(name)
            )));
        }
        if name == b"content-length" {
            let n = length(value).filter(|n| d.length.is_none_or(|l| l == *n));
            d.length = Some(n.ok_or_else(|| {
                malformed(format_args!(
                    "a content-length of {:?}",
                    String::from_utf8_lossy(value)
                ))
            })?);
        }
        if limits.keep_fields {
            d.fields.push((name.to_vec(), value.to_vec()));
        }
        Ok(())
    })?;
    Ok(d)
}

/// A byte of a field name: a token character (RFC 9110 §5.1), not uppercase (RFC 9114
/// §4.2).
fn name_byte(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9') || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A byte of a field value: anything but a control character other than HTAB (RFC 9110
/// §5.5's field-content; RFC 9114 §10.3: NUL, CR and LF above all).
fn value_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// A `:status` value: three digits, 100 to 999.
fn status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// A `content-length` value: digits, fitting in 64 bits.
fn length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests;
