//! QPACK (RFC 9204) as a client that allows no dynamic table needs it: field sections
//! encoded with the static table and literals only (Required Insert Count 0), the
//! response's field sections decoded with the static table and Huffman-coded strings, and
//! the peer's encoder and decoder streams read (with a table of capacity 0 almost nothing
//! may come on them). Every reference to a dynamic table is QPACK_DECOMPRESSION_FAILED.

use super::error::{fail, Code, H3Error};
use super::{huffman, static_table};

/// Appends `v` as a prefixed integer (RFC 7541 §5.1) of `bits` bits, the byte's higher bits
/// being `flags`.
pub(crate) fn put_int(v: u64, bits: u32, flags: u8, out: &mut Vec<u8>) {
    let max = (1u64 << bits) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A prefixed integer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    /// The bytes end before it does.
    Incomplete,
    /// Over 2^62 − 1, the most QPACK asks a decoder to read (RFC 9204 §4.1.1).
    TooLarge,
}

/// The prefixed integer of `bits` bits at the start of `b` and the bytes it took.
pub(crate) fn int(b: &[u8], bits: u32) -> Result<(u64, usize), IntError> {
    let max = (1u64 << bits) - 1;
    let first = u64::from(*b.first().ok_or(IntError::Incomplete)?) & max;
    if first < max {
        return Ok((first, 1));
    }
    let (mut v, mut shift) = (first, 0u32);
    for (i, &byte) in b.iter().enumerate().skip(1) {
        if shift > 56 {
            return Err(IntError::TooLarge);
        }
        v += u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return match v <= super::varint::MAX {
                true => Ok((v, i + 1)),
                false => Err(IntError::TooLarge),
            };
        }
    }
    Err(IntError::Incomplete)
}

/// Appends a string literal with an `n`-bit prefix (RFC 9204 §4.1.2), raw (no Huffman).
fn put_string(s: &[u8], n: u32, flags: u8, out: &mut Vec<u8>) {
    put_int(s.len() as u64, n - 1, flags, out);
    out.extend_from_slice(s);
}

/// The encoded field section of a request: `:method`, `:scheme`, `:authority`, `:path`,
/// then `headers` (names lowered; the connection-specific ones RFC 9114 §4.2 forbids and
/// `host`, which is `:authority`, left out) and, for a body of `body_len` bytes,
/// `content-length` unless `headers` has one. Static references only, so the same bytes are
/// valid on every stream of every connection.
pub fn encode_request(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
    body_len: Option<usize>,
) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + authority.len() + path.len());
    // Encoded Field Section Prefix: Required Insert Count 0, Delta Base 0 (§4.5.1).
    b.extend_from_slice(&[0, 0]);
    for (name, value) in [
        (":method", method),
        (":scheme", scheme),
        (":authority", authority),
        (":path", path),
    ] {
        field_line(&mut b, name, value);
    }
    let mut has_length = false;
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if crate::h2::request::HOP_BY_HOP.contains(&name.as_str()) {
            continue;
        }
        has_length |= name == "content-length";
        field_line(&mut b, &name, value);
    }
    if let (Some(n), false) = (body_len, has_length) {
        field_line(&mut b, "content-length", &n.to_string());
    }
    b
}

/// Appends one field line: indexed when the static table has it whole, a literal with a
/// static name reference when it has the name, else a literal with a literal name (§4.5).
pub fn field_line(b: &mut Vec<u8>, name: &str, value: &str) {
    match static_table::find(name, value) {
        // Indexed Field Line, T=1: 11xxxxxx.
        Some((i, true)) => put_int(i, 6, 0xc0, b),
        // Literal Field Line with Name Reference, N=0, T=1: 0101xxxx.
        Some((i, false)) => {
            put_int(i, 4, 0x50, b);
            put_string(value.as_bytes(), 8, 0x00, b);
        }
        // Literal Field Line with Literal Name, N=0, H=0: 0010 0xxx.
        None => {
            put_string(name.as_bytes(), 4, 0x20, b);
            put_string(value.as_bytes(), 8, 0x00, b);
        }
    }
}

/// The overhead RFC 9114 §4.2.2 adds to each field line's name and value lengths when it
/// sizes a field section (SETTINGS_MAX_FIELD_SECTION_SIZE).
pub const FIELD_OVERHEAD: usize = 32;

/// Decodes the encoded field section `block`, calling `on` with each field line's name and
/// value in order. Refused (QPACK_DECOMPRESSION_FAILED): any reference to the dynamic table,
/// an index past the static table, a truncated line, a bad Huffman string; over `max_size`
/// (names and values plus [`FIELD_OVERHEAD`] per line) is H3_EXCESSIVE_LOAD. `on` may refuse
/// a line too. The work is linear in the block's size.
pub fn decode(
    block: &[u8],
    max_size: usize,
    mut on: impl FnMut(&[u8], &[u8]) -> Result<(), H3Error>,
) -> Result<(), H3Error> {
    let mut rest = prefix(block)?;
    let (mut name_buf, mut value_buf) = (Vec::new(), Vec::new());
    let mut size = 0usize;
    while let Some(&first) = rest.first() {
        let (name, value): (&[u8], &[u8]) = match first {
            0x80.. => {
                let index = static_ref(&mut rest, first & 0x40, 6)?;
                let (n, v) = static_entry(index)?;
                (n.as_bytes(), v.as_bytes())
            }
            0x40..=0x7f => {
                let index = static_ref(&mut rest, first & 0x10, 4)?;
                let (n, _) = static_entry(index)?;
                let v = string(&mut rest, 8, &mut value_buf)?;
                (n.as_bytes(), v.unwrap_or(&value_buf))
            }
            0x20..=0x3f => {
                let n = string(&mut rest, 4, &mut name_buf)?;
                let v = string(&mut rest, 8, &mut value_buf)?;
                (n.unwrap_or(&name_buf), v.unwrap_or(&value_buf))
            }
            _ => return Err(bad("a post-base reference to the dynamic table")),
        };
        size = size.saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
        if size > max_size {
            return Err(fail(
                Code::ExcessiveLoad,
                format_args!("a field section over {max_size} bytes decoded"),
            ));
        }
        on(name, value)?;
    }
    Ok(())
}

fn bad(what: impl std::fmt::Display) -> H3Error {
    fail(Code::QpackDecompressionFailed, what)
}

/// The field lines after the Encoded Field Section Prefix, which must not need a dynamic
/// table: Required Insert Count 0, and a Base that is not negative (Sign 0).
fn prefix(block: &[u8]) -> Result<&[u8], H3Error> {
    let truncated = |_| bad("a field section that ends in its prefix");
    let (ric, n) = int(block, 8).map_err(truncated)?;
    if ric != 0 {
        return Err(bad(format_args!(
            "a field section that needs {ric} dynamic table insertions (the client allows none)"
        )));
    }
    let rest = &block[n..];
    let sign = rest.first().is_some_and(|b| b & 0x80 != 0);
    let (_, m) = int(rest, 7).map_err(truncated)?;
    if sign {
        return Err(bad("a field section with a negative Base"));
    }
    Ok(&rest[m..])
}

/// The static index of an indexed line or a name reference (`t`: its T bit, 0 for the
/// dynamic table), taken off `rest`.
fn static_ref(rest: &mut &[u8], t: u8, bits: u32) -> Result<u64, H3Error> {
    if t == 0 {
        return Err(bad(
            "a reference to the dynamic table (the client allows none)",
        ));
    }
    let (index, n) = int(rest, bits).map_err(|e| int_error(e, "a field line"))?;
    *rest = &rest[n..];
    Ok(index)
}

fn static_entry(index: u64) -> Result<(&'static str, &'static str), H3Error> {
    static_table::get(index)
        .ok_or_else(|| bad(format_args!("static table index {index} (there are 99)")))
}

fn int_error(e: IntError, what: &str) -> H3Error {
    match e {
        IntError::Incomplete => bad(format_args!("{what} cut short")),
        IntError::TooLarge => bad(format_args!("an integer over 2^62 - 1 in {what}")),
    }
}

/// Takes a string literal with an `n`-bit prefix off `rest`: `Some` the raw bytes, or
/// `None` when it was Huffman-coded and its decoding is in `buf`.
fn string<'a>(rest: &mut &'a [u8], n: u32, buf: &mut Vec<u8>) -> Result<Option<&'a [u8]>, H3Error> {
    let huffman = rest.first().is_some_and(|b| b & (1 << (n - 1)) != 0);
    let (len, used) = int(rest, n - 1).map_err(|e| int_error(e, "a string's length"))?;
    let s = usize::try_from(len)
        .ok()
        .and_then(|len| rest.get(used..used.checked_add(len)?))
        .ok_or_else(|| bad("a string longer than the rest of its field section"))?;
    *rest = &rest[used + s.len()..];
    if !huffman {
        return Ok(Some(s));
    }
    buf.clear();
    huffman::decode(s, buf).map_err(bad)?;
    Ok(None)
}

/// The peer's QPACK encoder stream (RFC 9204 §4.3) when the client's table capacity is 0:
/// the only instruction that fits is Set Dynamic Table Capacity to 0 (one byte, 0x20);
/// anything else inserts into, duplicates from or grows a table of capacity 0.
pub fn encoder_stream(bytes: &[u8]) -> Result<(), H3Error> {
    match bytes.iter().find(|&&b| b != 0x20) {
        None => Ok(()),
        Some(&b) => Err(fail(
            Code::QpackEncoderStreamError,
            match b {
                0x80.. | 0x40..=0x7f => "an insertion into a dynamic table of capacity 0",
                0x21..=0x3f => "a dynamic table capacity over the client's 0",
                _ => "a duplicate in an empty dynamic table",
            },
        )),
    }
}

/// The peer's QPACK decoder stream (RFC 9204 §4.4), which answers the client's encoder: as
/// that never refers to the dynamic table, only Stream Cancellation may come (the peer may
/// send one for any stream); a Section Acknowledgment or an Insert Count Increment
/// acknowledges what was never sent. Instructions may be split anywhere.
#[derive(Debug, Default)]
pub struct DecoderStream {
    /// The start of an instruction the bytes so far end inside (a prefixed integer of at
    /// most 10 bytes).
    partial: Vec<u8>,
}

impl DecoderStream {
    /// Reads the next bytes of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), H3Error> {
        while let Some(&b) = bytes.first() {
            if self.partial.is_empty() && b & 0xc0 != 0x40 {
                return Err(fail(
                    Code::QpackDecoderStreamError,
                    match b {
                        0x80.. => {
                            "a Section Acknowledgment for a section without dynamic references"
                        }
                        _ => "an Insert Count Increment when nothing was inserted",
                    },
                ));
            }
            self.partial.push(b);
            bytes = &bytes[1..];
            match int(&self.partial, 6) {
                Ok(_) => self.partial.clear(),
                Err(IntError::Incomplete) if self.partial.len() < 10 => {}
                Err(_) => {
                    return Err(fail(
                        Code::QpackDecoderStreamError,
                        "a Stream Cancellation with a stream ID over 2^62 - 1",
                    ))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
