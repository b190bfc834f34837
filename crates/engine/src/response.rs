//! Streaming HTTP/1.1 response parser: the head through `httparse`, the body framed by
//! Content-Length, chunked encoding (with trailers) or the end of the connection.
//! Bodies are counted, never buffered; only an incomplete head is kept between reads.
//! Pure (no I/O) so it can be tested and fuzzed on byte strings.

/// Largest response head (or chunked trailer section) accepted before the response is refused.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 128;

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Status code (1xx interim responses are skipped, never reported).
    pub status: u16,
    /// The connection may carry another request after this response.
    pub keep_alive: bool,
    /// Body bytes (decoded: chunk framing excluded).
    pub body_bytes: u64,
    /// Bytes of the wire response, head and framing included.
    pub wire_bytes: u64,
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The status line or a header is malformed.
    #[error("malformed response head: {0}")]
    Head(String),
    /// The head is larger than `MAX_HEAD_BYTES`.
    #[error("response head larger than {MAX_HEAD_BYTES} bytes")]
    HeadTooLarge,
    /// Content-Length is invalid or contradictory.
    #[error("invalid Content-Length")]
    ContentLength,
    /// A chunk-size line or chunk terminator is malformed.
    #[error("invalid chunked encoding: {0}")]
    Chunked(&'static str),
    /// The connection ended before the response was complete.
    #[error("connection closed before the response was complete")]
    Truncated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// The chunk-size digits; `None` before the first.
    Size {
        value: Option<u64>,
    },
    /// The chunk extensions after the size: `len` bytes after their first so far, at most
    /// `MAX_HEAD_BYTES`.
    Ext {
        value: u64,
        len: usize,
        at: Ext,
    },
    SizeLf {
        value: u64,
    },
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    TrailerLineStart,
    TrailerLine,
    TrailerEndLf,
    TrailerLineLf,
}

/// Where a byte of the chunk extensions falls (RFC 9112 §7.1.1):
/// `chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )`,
/// a name a token, a value a token or a quoted-string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ext {
    /// Whitespace after the size or a complete extension: only `;` may follow.
    Bws,
    /// After `;` (and any whitespace): the name's first byte is due.
    NameStart,
    Name,
    /// Whitespace after a name: `;` or `=` may follow.
    AfterName,
    /// After `=` (and any whitespace): the value's first byte is due.
    ValueStart,
    Token,
    Quoted,
    /// After a backslash inside a quoted string.
    QuotedPair,
    /// After the closing quote.
    AfterQuoted,
}

/// What an extension byte leads to: another position, or the end of the size line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExtStep {
    To(Ext),
    Cr,
    Lf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length { remaining: u64 },
    Chunked(Chunk),
    UntilClose,
}

/// What a response's checks watch as it is parsed (`--expect-*`): its header fields and its
/// body bytes, decoded (chunk framing left out). The default methods do nothing, and the
/// parser's plain [`ResponseParser::feed`] uses `()`, so a run without checks pays nothing.
pub trait ResponseObserver {
    /// A header field of the final (non-1xx) response head.
    #[inline]
    fn header(&mut self, _name: &str, _value: &[u8]) {}
    /// Bytes of the body, in order.
    #[inline]
    fn body(&mut self, _bytes: &[u8]) {}
}

impl ResponseObserver for () {}

/// Parser for the responses of one connection, in order.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    head: Vec<u8>,
    head_request: bool,
    status: u16,
    keep_alive: bool,
    body_bytes: u64,
    wire_bytes: u64,
    trailer_bytes: usize,
}

impl ResponseParser {
    /// A parser for responses to `HEAD` requests (`head_request`) or to any other method.
    pub fn new(head_request: bool) -> Self {
        ResponseParser {
            state: State::Head,
            head: Vec::new(),
            head_request,
            status: 0,
            keep_alive: true,
            body_bytes: 0,
            wire_bytes: 0,
            trailer_bytes: 0,
        }
    }

    /// The next response answers a `HEAD` (no body) or not: set between responses, when each
    /// request of a connection may have its own method (`--requests-file`).
    pub(crate) fn set_head_request(&mut self, head_request: bool) {
        self.head_request = head_request;
    }

    /// True when no byte of the next response has arrived.
    pub fn is_idle(&self) -> bool {
        self.state == State::Head && self.head.is_empty() && self.wire_bytes == 0
    }

    /// Bytes of an incomplete head kept between reads (bounded by `MAX_HEAD_BYTES` + 1); for
    /// the fuzz checks (`volley::fuzzing`).
    #[doc(hidden)]
    pub fn buffered_head_bytes(&self) -> usize {
        self.head.len()
    }

    /// After `feed(input)` failed: where the bytes it could not use begin, at most `max` of
    /// them. A head that arrived in pieces is kept whole (it already holds `input`'s bytes);
    /// otherwise it is `input` itself.
    pub(crate) fn failed_bytes<'a>(&'a self, input: &'a [u8], max: usize) -> &'a [u8] {
        let b = if self.head.is_empty() {
            input
        } else {
            &self.head
        };
        &b[..b.len().min(max)]
    }

    /// Discards any partial response (the connection is being replaced).
    pub fn reset(&mut self) {
        *self = ResponseParser::new(self.head_request);
    }

    /// Consumes a prefix of `input`. Returns the bytes consumed and, when a response ended
    /// within them, that response; call again with the rest.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Response>), ParseError> {
        self.feed_with(input, &mut ())
    }

    /// [`ResponseParser::feed`], telling `obs` the head's fields and the body's bytes.
    pub fn feed_with<O: ResponseObserver>(
        &mut self,
        input: &[u8],
        obs: &mut O,
    ) -> Result<(usize, Option<Response>), ParseError> {
        match self.state {
            State::Head => self.feed_head(input, obs),
            State::Length { remaining } => {
                let n = remaining.min(input.len() as u64);
                obs.body(&input[..n as usize]);
                self.body_bytes += n;
                self.wire_bytes += n;
                if n == remaining {
                    Ok((n as usize, Some(self.finish())))
                } else {
                    self.state = State::Length {
                        remaining: remaining - n,
                    };
                    Ok((n as usize, None))
                }
            }
            State::Chunked(c) => self.feed_chunked(c, input, obs),
            State::UntilClose => {
                obs.body(input);
                self.body_bytes += input.len() as u64;
                self.wire_bytes += input.len() as u64;
                Ok((input.len(), None))
            }
        }
    }

    /// The connection ended. A close-delimited body completes here; anything else
    /// unfinished is `Truncated`. `Ok(None)` means it ended cleanly between responses.
    pub fn eof(&mut self) -> Result<Option<Response>, ParseError> {
        match self.state {
            State::UntilClose => Ok(Some(self.finish())),
            State::Head if self.head.is_empty() && self.wire_bytes == 0 => Ok(None),
            _ => Err(ParseError::Truncated),
        }
    }

    fn finish(&mut self) -> Response {
        let r = Response {
            status: self.status,
            keep_alive: self.keep_alive && self.state != State::UntilClose,
            body_bytes: self.body_bytes,
            wire_bytes: self.wire_bytes,
        };
        self.state = State::Head;
        self.body_bytes = 0;
        self.wire_bytes = 0;
        self.trailer_bytes = 0;
        r
    }

    fn feed_head<O: ResponseObserver>(
        &mut self,
        input: &[u8],
        obs: &mut O,
    ) -> Result<(usize, Option<Response>), ParseError> {
        // Fast path: the whole head is in this read, parse it in place without copying.
        if self.head.is_empty() {
            match self.parse_head(input, obs)? {
                Some(n) => {
                    self.wire_bytes += n as u64;
                    return self.after_head(n);
                }
                None => {
                    if input.len() > MAX_HEAD_BYTES {
                        return Err(ParseError::HeadTooLarge);
                    }
                    self.head.extend_from_slice(input);
                    return Ok((input.len(), None));
                }
            }
        }
        // Slow path: the head arrived in pieces. Only re-parse once a blank line may be present.
        let old = self.head.len();
        let take = input
            .len()
            .min(MAX_HEAD_BYTES + 1 - old.min(MAX_HEAD_BYTES));
        self.head.extend_from_slice(&input[..take]);
        let scan_from = old.saturating_sub(3);
        if !has_blank_line(&self.head[scan_from..]) {
            if self.head.len() > MAX_HEAD_BYTES {
                return Err(ParseError::HeadTooLarge);
            }
            return Ok((take, None));
        }
        let head = std::mem::take(&mut self.head);
        let parsed = self.parse_head(&head, obs);
        self.head = head;
        match parsed? {
            Some(n) => {
                self.head.clear();
                self.wire_bytes += n as u64;
                let consumed = n - old;
                self.after_head(consumed)
            }
            None if self.head.len() > MAX_HEAD_BYTES => Err(ParseError::HeadTooLarge),
            None => Ok((take, None)),
        }
    }

    /// Parses a head at the start of `buf`; `Ok(None)` if incomplete. Sets status and framing.
    fn parse_head<O: ResponseObserver>(
        &mut self,
        buf: &[u8],
        obs: &mut O,
    ) -> Result<Option<usize>, ParseError> {
        // Uninitialised: zeroing 128 headers (4 KiB) for every response cost more than parsing
        // a short head.
        let mut headers =
            [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            buf,
            &mut headers,
        );
        let n = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(ParseError::Head(e.to_string())),
        };
        // The limit holds however the head arrived: a head read in pieces is refused once the
        // buffer passes MAX_HEAD_BYTES, so one parsed in place from a single large read must be
        // too, or the same bytes would pass or fail depending on how the reads fell.
        if n > MAX_HEAD_BYTES {
            return Err(ParseError::HeadTooLarge);
        }
        let status = resp.code.unwrap_or(0);
        let version = resp.version.unwrap_or(1);
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut close = false;
        let mut keep_alive_token = false;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = parse_content_length(h.value)?;
                if content_length.is_some_and(|c| c != v) {
                    return Err(ParseError::ContentLength);
                }
                content_length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let t = token.trim_ascii();
                    close |= t.eq_ignore_ascii_case(b"close");
                    keep_alive_token |= t.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        if !(100..200).contains(&status) {
            for h in resp.headers.iter() {
                obs.header(h.name, h.value);
            }
        }
        self.status = status;
        self.keep_alive = !close && (version == 1 || keep_alive_token);
        self.body_bytes = 0;
        self.state = if (100..200).contains(&status) {
            if status == 101 {
                return Err(ParseError::Head(
                    "101 Switching Protocols is not supported".into(),
                ));
            }
            // An interim response: the real one follows on the same stream.
            State::Head
        } else if self.head_request || status == 204 || status == 304 {
            State::Length { remaining: 0 }
        } else if chunked {
            State::Chunked(Chunk::Size { value: None })
        } else if let Some(len) = content_length {
            State::Length { remaining: len }
        } else {
            State::UntilClose
        };
        Ok(Some(n))
    }

    fn after_head(&mut self, consumed: usize) -> Result<(usize, Option<Response>), ParseError> {
        match self.state {
            State::Length { remaining: 0 } => Ok((consumed, Some(self.finish()))),
            State::Head => {
                // Interim 1xx: the final response follows; its bytes count on the same response.
                Ok((consumed, None))
            }
            _ => Ok((consumed, None)),
        }
    }

    fn feed_chunked<O: ResponseObserver>(
        &mut self,
        mut c: Chunk,
        input: &[u8],
        obs: &mut O,
    ) -> Result<(usize, Option<Response>), ParseError> {
        let mut i = 0;
        while i < input.len() {
            if let Chunk::Data { remaining } = c {
                // Chunk data is counted (and shown to the checks), never kept: one step.
                let n = remaining.min((input.len() - i) as u64);
                obs.body(&input[i..i + n as usize]);
                self.body_bytes += n;
                i += n as usize;
                c = if n == remaining {
                    Chunk::DataCr
                } else {
                    Chunk::Data {
                        remaining: remaining - n,
                    }
                };
                continue;
            }
            let b = input[i];
            i += 1;
            match self.chunk_step(c, b)? {
                Some(next) => c = next,
                None => {
                    self.wire_bytes += i as u64;
                    return Ok((i, Some(self.finish())));
                }
            }
        }
        self.state = State::Chunked(c);
        self.wire_bytes += i as u64;
        Ok((i, None))
    }

    /// One byte of chunked framing outside chunk data: the next state, or `None` when the
    /// byte ends the response (the blank line after the last chunk or its trailers).
    fn chunk_step(&mut self, c: Chunk, b: u8) -> Result<Option<Chunk>, ParseError> {
        let next = match c {
            Chunk::Size { value } => match (hex_value(b), value) {
                (Some(d), v) => Chunk::Size {
                    value: Some(push_hex_digit(v.unwrap_or(0), d)?),
                },
                (None, None) => return Err(ParseError::Chunked("missing chunk size")),
                (None, Some(value)) => match b {
                    b'\r' => Chunk::SizeLf { value },
                    b'\n' => self.size_line_done(value),
                    b';' => Chunk::Ext {
                        value,
                        len: 0,
                        at: Ext::NameStart,
                    },
                    b' ' | b'\t' => Chunk::Ext {
                        value,
                        len: 0,
                        at: Ext::Bws,
                    },
                    _ => return Err(ParseError::Chunked("invalid character in chunk size")),
                },
            },
            Chunk::Ext { value, len, at } => match ext_step(at, b)? {
                ExtStep::To(_) if len >= MAX_HEAD_BYTES => {
                    return Err(ParseError::Chunked("chunk extension too long"))
                }
                ExtStep::To(at) => Chunk::Ext {
                    value,
                    len: len + 1,
                    at,
                },
                ExtStep::Cr => Chunk::SizeLf { value },
                ExtStep::Lf => self.size_line_done(value),
            },
            Chunk::SizeLf { value } => match b {
                b'\n' => self.size_line_done(value),
                _ => return Err(ParseError::Chunked("expected LF after chunk size")),
            },
            Chunk::DataCr => match b {
                b'\r' => Chunk::DataLf,
                b'\n' => Chunk::Size { value: None },
                _ => return Err(ParseError::Chunked("chunk data longer than its size")),
            },
            Chunk::DataLf => match b {
                b'\n' => Chunk::Size { value: None },
                _ => return Err(ParseError::Chunked("expected LF after chunk data")),
            },
            Chunk::TrailerLineStart => match b {
                b'\r' => Chunk::TrailerEndLf,
                b'\n' => return Ok(None),
                _ => {
                    self.trailer_byte()?;
                    Chunk::TrailerLine
                }
            },
            Chunk::TrailerLine => {
                self.trailer_byte()?;
                match b {
                    b'\r' => Chunk::TrailerLineLf,
                    b'\n' => Chunk::TrailerLineStart,
                    _ => Chunk::TrailerLine,
                }
            }
            Chunk::TrailerLineLf => match b {
                b'\n' => Chunk::TrailerLineStart,
                _ => return Err(ParseError::Chunked("expected LF in trailer")),
            },
            Chunk::TrailerEndLf => match b {
                b'\n' => return Ok(None),
                _ => return Err(ParseError::Chunked("expected LF after trailers")),
            },
            Chunk::Data { .. } => unreachable!("chunk data is skipped by the caller"),
        };
        Ok(Some(next))
    }

    fn size_line_done(&mut self, value: u64) -> Chunk {
        if value == 0 {
            self.trailer_bytes = 0;
            Chunk::TrailerLineStart
        } else {
            Chunk::Data { remaining: value }
        }
    }

    fn trailer_byte(&mut self) -> Result<(), ParseError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > MAX_HEAD_BYTES {
            return Err(ParseError::HeadTooLarge);
        }
        Ok(())
    }
}

/// A Content-Length value: decimal digits, with only spaces and tabs (OWS) around them.
fn parse_content_length(value: &[u8]) -> Result<u64, ParseError> {
    let digits = trim_ows(value);
    if digits.is_empty() {
        return Err(ParseError::ContentLength);
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(10).ok_or(ParseError::ContentLength)?;
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d)))
            .ok_or(ParseError::ContentLength)
    })
}

/// `value` without the spaces and tabs (OWS, RFC 9110 §5.6.3) around it.
fn trim_ows(value: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ows(b)).map_or(start, |e| e + 1);
    &value[start..end]
}

fn hex_value(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}

/// `value` with one more hex digit. Leading zeros are free; 15 significant digits (below
/// 2^60) is the most a chunk may declare.
fn push_hex_digit(value: u64, digit: u64) -> Result<u64, ParseError> {
    if value >> 56 != 0 {
        return Err(ParseError::Chunked("chunk size too large"));
    }
    Ok(value << 4 | digit)
}

/// One byte of the chunk extensions at `at`: strict to RFC 9112 §7.1.1, so whitespace stands
/// only around `;` and `=` (never last on the line), and every extension begins with `;` and
/// has a name.
fn ext_step(at: Ext, b: u8) -> Result<ExtStep, ParseError> {
    use Ext::*;
    let to = match (at, b) {
        (Quoted | QuotedPair, _) => quoted_step(at, b)?,
        (Name | Token | AfterQuoted, b'\r') => return Ok(ExtStep::Cr),
        (Name | Token | AfterQuoted, b'\n') => return Ok(ExtStep::Lf),
        (Name, b' ' | b'\t') => AfterName,
        (Token | AfterQuoted, b' ' | b'\t') => Bws,
        (Bws | NameStart | AfterName | ValueStart, b' ' | b'\t') => at,
        (Bws | Name | AfterName | Token | AfterQuoted, b';') => NameStart,
        (Name | AfterName, b'=') => ValueStart,
        (NameStart | Name, _) if is_tchar(b) => Name,
        (ValueStart | Token, _) if is_tchar(b) => Token,
        (ValueStart, b'"') => Quoted,
        _ => return Err(ext_error(at, b)),
    };
    Ok(ExtStep::To(to))
}

/// One byte inside a quoted extension value (RFC 9110 §5.6.4).
fn quoted_step(at: Ext, b: u8) -> Result<Ext, ParseError> {
    match (at, b) {
        (Ext::QuotedPair, _) if is_quotable(b) => Ok(Ext::Quoted),
        (Ext::Quoted, b'"') => Ok(Ext::AfterQuoted),
        (Ext::Quoted, b'\\') => Ok(Ext::QuotedPair),
        (Ext::Quoted, _) if is_qdtext(b) => Ok(Ext::Quoted),
        (_, b'\r' | b'\n') => Err(ParseError::Chunked(
            "line ended inside a quoted chunk extension value",
        )),
        _ => Err(ParseError::Chunked(
            "invalid character in a quoted chunk extension value",
        )),
    }
}

/// Why byte `b` cannot stand at `at` in the chunk extensions.
fn ext_error(at: Ext, b: u8) -> ParseError {
    use Ext::*;
    ParseError::Chunked(match (at, b) {
        (Bws | AfterName, b'\r' | b'\n') => "whitespace at the end of the chunk-size line",
        (NameStart, b'\r' | b'\n' | b';' | b'=') => "empty chunk extension name",
        (ValueStart, b'\r' | b'\n' | b';') => "empty chunk extension value",
        (Bws | AfterName, _) => "chunk extension without ';'",
        _ => "invalid character in chunk extension",
    })
}

/// A token character (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A byte a quoted string holds as it is (RFC 9110 §5.6.4 qdtext: not `"` nor `\\`).
fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

/// A byte a quoted-pair may escape: HTAB, SP, VCHAR, obs-text.
fn is_quotable(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21..=0x7e | 0x80..=0xff)
}

fn has_blank_line(buf: &[u8]) -> bool {
    buf.windows(2).any(|w| w == b"\n\n") || buf.windows(3).any(|w| w == b"\n\r\n")
}

#[cfg(test)]
mod tests;
