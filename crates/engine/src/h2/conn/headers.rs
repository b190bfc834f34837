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
        self.block.clear();
        if self.block.capacity() > BLOCK_KEEP {
            self.block = Vec::new();
        }
        let head = decoded?;
        let Some(i) = self.index(stream) else {
            return Ok(());
        };
        self.head(i, head, end_stream, on)
    }

    /// Decodes the header block, bounding the decoded size: its `:status` and
    /// `content-length`. loona-hpack decodes from the block in place, so the cost is linear
    /// in its size whatever the server puts in it.
    pub(super) fn decode_block(&mut self, stream: u32) -> Result<Decoded, H2Error> {
        if let Err(why) = hpack_framed(&self.block) {
            return Err(fail(
                code::COMPRESSION_ERROR,
                format_args!("the server's header block on stream {stream} {why}"),
            ));
        }
        let mut d = Decoded::default();
        let mut size = 0usize;
        // The fields are kept only for a stream whose checks read them.
        let at = self.index(stream);
        let keep = at.is_some_and(|i| {
            let w = self.open[i].watch.as_ref();
            w.is_some_and(|w| w.reads_fields())
        });
        let tunnel = at.is_some_and(|i| self.open[i].tunnel);
        // Values are decoded where they are read: the head's checks read every field.
        let want = |name: &[u8]| {
            keep || matches!(name, b":status" | b"content-length")
                || (tunnel && name == b"sec-websocket-extensions")
        };
        let r = self.decoder.decode(&self.block, want, |name, value, len| {
            size += len + 32;
            if size > MAX_HEADER_LIST {
                return; // refused below; the rest only keeps the table in step
            }
            let Some(value) = value else { return };
            match name {
                b":status" => d.status = Some(parse_status(value)),
                b"content-length" => d.length = d.length.and(value),
                b"sec-websocket-extensions" if tunnel => {
                    d.extension = Some(String::from_utf8_lossy(value).into_owned());
                }
                _ => {}
            }
            if keep && !name.starts_with(b":") {
                d.fields.push((name.to_vec(), value.to_vec()));
            }
        });
        if let Err(e) = r {
            return Err(fail(
                code::COMPRESSION_ERROR,
                format_args!("the server's header block on stream {stream} does not decode: {e}"),
            ));
        }
        if size > MAX_HEADER_LIST {
            return Err(fail(
                code::ENHANCE_YOUR_CALM,
                format_args!(
                    "a header list over {MAX_HEADER_LIST} bytes decoded on stream {stream}"
                ),
            ));
        }
        Ok(d)
    }

    /// What a decoded header block `d` means for the `i`th open stream: an interim head
    /// (skipped), the response head, or trailers; anything else is refused.
    pub(super) fn head(
        &mut self,
        i: usize,
        d: Decoded,
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
        match d.status {
            Some(None) => return Err(broken("a response with an invalid :status")),
            Some(Some(_)) if s.head => return Err(broken("a second response head")),
            Some(Some(c)) if c < 200 && end_stream => {
                return Err(broken("an interim response that ends the stream"))
            }
            Some(Some(c)) if c < 200 => {}
            Some(Some(c)) => {
                s.head = true;
                s.length = match d.length {
                    // RFC 9110 §6.4.1: a HEAD, 204 or 304 response has no content, whatever
                    // its content-length says.
                    // A 2xx to a WebSocket's CONNECT opens a tunnel: its DATA is not content.
                    _ if s.head_request || s.tunnel || c == 204 || c == 304 => Length::Unchecked,
                    l => l,
                };
                if let Some(w) = s.watch.as_mut() {
                    for (name, value) in &d.fields {
                        if let Ok(name) = std::str::from_utf8(name) {
                            w.field(name, value);
                        }
                    }
                }
                if let Some(ext) = d.extension.as_ref().filter(|_| c < 300) {
                    // volley offered none: the frames would carry what it cannot read.
                    let why = format!(
                        "a 2xx that chose the extension `{ext}`, which volley did not offer"
                    );
                    self.malformed(i, end_stream, why, on);
                    return Ok(());
                }
                on(Event::Head { stream, status: c });
                if s.length == Length::Invalid {
                    self.malformed(i, end_stream, "an invalid content-length".into(), on);
                    return Ok(());
                }
            }
            None if !s.head => return Err(broken("a header block without :status")),
            None if !end_stream => return Err(broken("trailers that do not end the stream")),
            None => {
                if let Some(w) = s.watch.as_mut() {
                    for (name, value) in &d.fields {
                        if let Ok(name) = std::str::from_utf8(name) {
                            w.trailer(name, value);
                        }
                    }
                }
            }
        }
        if end_stream {
            self.end_stream(i, on);
        }
        Ok(())
    }
}

/// A decoded header block: what the client reads of it.
#[derive(Debug, Default)]
pub(super) struct Decoded {
    /// `:status` (`Some(None)` when invalid, `None` without one).
    status: Option<Option<u16>>,
    /// `content-length`.
    length: Length,
    /// The fields (not the pseudo-headers), for a stream whose checks read them.
    fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// A WebSocket's `sec-websocket-extensions` (kept on its tunnel's stream only).
    extension: Option<String>,
}

impl Length {
    /// This length with another `content-length` field's `value`: fields that disagree, or a
    /// value that is not a number, make it invalid.
    fn and(self, value: &[u8]) -> Length {
        let parsed = std::str::from_utf8(value)
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok());
        match (self, parsed) {
            (_, None) | (Length::Invalid, _) => Length::Invalid,
            (Length::Declared(a), Some(b)) if a != b => Length::Invalid,
            (_, Some(b)) => Length::Declared(b),
        }
    }
}

/// The most dynamic table size updates a header block may start with (RFC 7541 §4.2: a
/// change of the maximum and a smaller size before it; anything more is a COMPRESSION_ERROR,
/// and would cost the decoder a pass over the rest of the block each).
const MAX_SIZE_UPDATES: usize = 2;

/// Checks an HPACK block before it is decoded: every integer and string ends within it (the
/// decoder checks too; this names the truncation), and table size updates come only at its
/// start, at most [`MAX_SIZE_UPDATES`] of them. The error says which rule broke.
fn hpack_framed(b: &[u8]) -> Result<(), &'static str> {
    let (mut i, mut fields, mut updates) = (0, 0usize, 0usize);
    while i < b.len() {
        let o = b[i];
        let (prefix, literal) = match o {
            _ if o & 0x80 != 0 => (7, false),
            _ if o & 0x40 != 0 => (6, true),
            _ if o & 0x20 != 0 => (5, false),
            _ => (4, true),
        };
        if prefix == 5 {
            if fields > 0 {
                return Err("has a dynamic table size update after a header field");
            }
            updates += 1;
            if updates > MAX_SIZE_UPDATES {
                return Err("starts with more than two dynamic table size updates");
            }
        } else {
            fields += 1;
        }
        let (index, n) = crate::h2::hpack::int(&b[i..], prefix).ok_or("is truncated")?;
        i += n;
        if literal {
            let strings = if index == 0 { 2 } else { 1 };
            for _ in 0..strings {
                i += hpack_string(&b[i..]).ok_or("is truncated")?;
            }
        }
    }
    Ok(())
}

/// The length of an HPACK string literal that fits in `b`.
fn hpack_string(b: &[u8]) -> Option<usize> {
    let (len, n) = crate::h2::hpack::int(b, 7)?;
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
