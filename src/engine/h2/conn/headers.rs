//! Response header blocks: HEADERS and CONTINUATION frames assembled into a block (bounded:
//! the CONTINUATION flood), checked for truncation, decoded with HPACK, and turned into a
//! response head, interim 1xx heads skipped, trailers accepted.

use super::*;

impl H2Conn {
    pub(super) fn headers(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        self.on_client_stream(&h)?;
        let mut frag = unpad(h, p)?;
        if h.has(flags::PRIORITY) {
            frag = frag.get(5..).ok_or_else(|| {
                fail(
                    code::FRAME_SIZE_ERROR,
                    "a HEADERS frame too short for its priority",
                )
            })?;
        }
        self.block.clear();
        self.block.extend_from_slice(frag);
        self.block_of = Some((h.stream, h.has(flags::END_STREAM)));
        self.continuations = 0;
        if h.has(flags::END_HEADERS) {
            self.end_block(on)?;
        }
        Ok(())
    }

    pub(super) fn continuation(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        match self.block_of {
            Some((stream, _)) if stream == h.stream => {}
            _ => {
                return Err(fail(
                    code::PROTOCOL_ERROR,
                    "a CONTINUATION frame that continues no header block",
                ))
            }
        }
        self.continuations += 1;
        if self.continuations > MAX_CONTINUATIONS {
            return Err(fail(
                code::ENHANCE_YOUR_CALM,
                format_args!(
                    "a header block in more than {MAX_CONTINUATIONS} CONTINUATION frames on stream {}",
                    h.stream
                ),
            ));
        }
        if self.block.len() + p.len() > MAX_HEADER_BLOCK {
            return Err(fail(
                code::ENHANCE_YOUR_CALM,
                format_args!(
                    "a header block over {MAX_HEADER_BLOCK} bytes on stream {}",
                    h.stream
                ),
            ));
        }
        self.block.extend_from_slice(p);
        if h.has(flags::END_HEADERS) {
            self.end_block(on)?;
        }
        Ok(())
    }

    /// A whole header block: decoded (always, to keep the table in step with the server's).
    pub(super) fn end_block(&mut self, on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        let Some((stream, end_stream)) = self.block_of.take() else {
            return Ok(());
        };
        let decoded = self.decode_block(stream);
        if self.block.capacity() > BLOCK_KEEP {
            self.block = Vec::new();
        }
        let status = decoded?;
        let Some(i) = self.index(stream) else {
            return Ok(());
        };
        self.head(i, status, end_stream, on)
    }

    /// Decodes the header block field by field, bounding the decoded size: its `:status`
    /// (`Some(None)` when invalid, `None` without one).
    pub(super) fn decode_block(&mut self, stream: u32) -> Result<Option<Option<u16>>, H2Error> {
        if !hpack_framed(&self.block) {
            return Err(fail(
                code::COMPRESSION_ERROR,
                format_args!("the server's header block on stream {stream} is truncated"),
            ));
        }
        let mut status = None;
        let mut size = 0usize;
        while !self.block.is_empty() {
            self.field.clear();
            self.decoder
                .decode_exact(&mut self.block, &mut self.field)
                .map_err(|e| {
                    fail(
                        code::COMPRESSION_ERROR,
                        format_args!(
                            "the server's header block on stream {stream} does not decode: {e}"
                        ),
                    )
                })?;
            for (name, value, _) in &self.field {
                size += name.len() + value.len() + 32;
                if name == b":status" {
                    status = Some(parse_status(value));
                }
            }
            if size > MAX_HEADER_LIST {
                self.block.clear();
                return Err(fail(
                    code::ENHANCE_YOUR_CALM,
                    format_args!(
                        "a header list over {MAX_HEADER_LIST} bytes decoded on stream {stream}"
                    ),
                ));
            }
        }
        Ok(status)
    }

    /// What a decoded header block with `status` means for the `i`th open stream: an
    /// interim head (skipped), the response head, or trailers; anything else is refused.
    pub(super) fn head(
        &mut self,
        i: usize,
        status: Option<Option<u16>>,
        end_stream: bool,
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        let s = &mut self.open[i];
        let stream = s.id;
        let broken = |what: &str| {
            fail(
                code::PROTOCOL_ERROR,
                format_args!("{what} on stream {stream}"),
            )
        };
        match status {
            Some(None) => return Err(broken("a response with an invalid :status")),
            Some(Some(_)) if s.head => return Err(broken("a second response head")),
            Some(Some(c)) if c < 200 && end_stream => {
                return Err(broken("an interim response that ends the stream"))
            }
            Some(Some(c)) if c < 200 => {}
            Some(Some(c)) => {
                s.head = true;
                on(Event::Head { stream, status: c });
            }
            None if !s.head => return Err(broken("a header block without :status")),
            None if !end_stream => return Err(broken("trailers that do not end the stream")),
            None => {}
        }
        if end_stream && self.close(stream) {
            on(Event::End { stream });
        }
        Ok(())
    }
}

/// Whether every integer and string of an HPACK block ends within it (RFC 7541 §5):
/// httlib-hpack reads past the end of a truncated one (found by the `h2` fuzz target).
fn hpack_framed(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let o = b[i];
        let (prefix, literal) = match o {
            _ if o & 0x80 != 0 => (7, false),
            _ if o & 0x40 != 0 => (6, true),
            _ if o & 0x20 != 0 => (5, false),
            _ => (4, true),
        };
        let Some((index, n)) = hpack_int(&b[i..], prefix) else {
            return false;
        };
        i += n;
        if literal {
            let strings = if index == 0 { 2 } else { 1 };
            for _ in 0..strings {
                let Some(n) = hpack_string(&b[i..]) else {
                    return false;
                };
                i += n;
            }
        }
    }
    true
}

/// An HPACK integer with a `prefix`-bit prefix: its value and length (at most 5 bytes, as
/// the decoder accepts).
fn hpack_int(b: &[u8], prefix: u32) -> Option<(u64, usize)> {
    let mask = (1u64 << prefix) - 1;
    let first = u64::from(*b.first()?) & mask;
    if first < mask {
        return Some((first, 1));
    }
    let mut value = first;
    for (k, byte) in b.iter().enumerate().skip(1).take(4) {
        value += u64::from(byte & 0x7f) << (7 * (k - 1));
        if byte & 0x80 == 0 {
            return Some((value, k + 1));
        }
    }
    None
}

/// The length of an HPACK string literal that fits in `b`.
fn hpack_string(b: &[u8]) -> Option<usize> {
    let (len, n) = hpack_int(b, 7)?;
    let len = usize::try_from(len).ok()?;
    (len <= b.len() - n).then_some(n + len)
}

/// A `:status` value: three digits, 100 to 999 (`None` otherwise).
fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) || v[0] == b'0' {
        return None;
    }
    Some(v.iter().fold(0, |n, d| n * 10 + u16::from(d - b'0')))
}
