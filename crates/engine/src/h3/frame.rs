//! HTTP/3 frames (RFC 9114 §7): a type and a length (both variable-length integers, see
//! [`super::varint`]) and a payload. The frames a client writes, the settings it announces,
//! and a splitter that finds frames in a stream's bytes however they arrive, without keeping
//! payloads: the stream parsers ([`super::response`], [`super::control`]) decide what to keep.

use super::varint;

/// Frame types (RFC 9114 §7.2).
pub mod kind {
    /// DATA.
    pub const DATA: u64 = 0x00;
    /// HEADERS.
    pub const HEADERS: u64 = 0x01;
    /// CANCEL_PUSH.
    pub const CANCEL_PUSH: u64 = 0x03;
    /// SETTINGS.
    pub const SETTINGS: u64 = 0x04;
    /// PUSH_PROMISE.
    pub const PUSH_PROMISE: u64 = 0x05;
    /// GOAWAY.
    pub const GOAWAY: u64 = 0x07;
    /// MAX_PUSH_ID.
    pub const MAX_PUSH_ID: u64 = 0x0d;

    /// HTTP/2's frame types without an HTTP/3 frame (PRIORITY, PING, WINDOW_UPDATE,
    /// CONTINUATION): their receipt is H3_FRAME_UNEXPECTED wherever they come (§7.2.8).
    pub fn is_http2_only(kind: u64) -> bool {
        matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
    }

    /// The frame type's name as RFC 9114 spells it.
    pub fn name(kind: u64) -> String {
        let name = match kind {
            DATA => "DATA",
            HEADERS => "HEADERS",
            CANCEL_PUSH => "CANCEL_PUSH",
            SETTINGS => "SETTINGS",
            PUSH_PROMISE => "PUSH_PROMISE",
            GOAWAY => "GOAWAY",
            MAX_PUSH_ID => "MAX_PUSH_ID",
            0x02 => "PRIORITY (HTTP/2's)",
            0x06 => "PING (HTTP/2's)",
            0x08 => "WINDOW_UPDATE (HTTP/2's)",
            0x09 => "CONTINUATION (HTTP/2's)",
            other => return format!("frame type 0x{other:x}"),
        };
        name.to_string()
    }
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub mod stream_type {
    /// The control stream.
    pub const CONTROL: u64 = 0x00;
    /// A push stream.
    pub const PUSH: u64 = 0x01;
    /// The QPACK encoder stream.
    pub const QPACK_ENCODER: u64 = 0x02;
    /// The QPACK decoder stream.
    pub const QPACK_DECODER: u64 = 0x03;
}

/// Setting identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub mod setting {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;

    /// HTTP/2's settings without an HTTP/3 one: their receipt is H3_SETTINGS_ERROR.
    pub fn is_http2_only(id: u64) -> bool {
        matches!(id, 0x00 | 0x02..=0x05)
    }
}

/// Appends a frame's type (one of [`kind`], or a reserved type: all below 2^62) and length.
pub fn header(kind: u64, len: usize, out: &mut Vec<u8>) {
    varint::put(kind.min(varint::MAX), out);
    varint::put(len as u64, out);
}

/// Appends a HEADERS frame carrying the encoded field section `section`.
pub fn headers(section: &[u8], out: &mut Vec<u8>) {
    header(kind::HEADERS, section.len(), out);
    out.extend_from_slice(section);
}

/// Appends a DATA frame carrying `payload`.
pub fn data(payload: &[u8], out: &mut Vec<u8>) {
    header(kind::DATA, payload.len(), out);
    out.extend_from_slice(payload);
}

/// The settings the client announces: no QPACK dynamic table, no blocked streams, and
/// optionally the largest field section it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientSettings {
    /// SETTINGS_MAX_FIELD_SECTION_SIZE (`None`: not sent, unlimited).
    pub max_field_section_size: Option<u64>,
}

impl ClientSettings {
    /// Appends the SETTINGS frame.
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut p = Vec::with_capacity(16);
        // Both fit: the ids are constants, the size is clamped below.
        let mut put = |id: u64, v: u64| {
            varint::put(id, &mut p);
            varint::put(v, &mut p);
        };
        put(setting::QPACK_MAX_TABLE_CAPACITY, 0);
        put(setting::QPACK_BLOCKED_STREAMS, 0);
        if let Some(size) = self.max_field_section_size {
            put(setting::MAX_FIELD_SECTION_SIZE, size.min(varint::MAX));
        }
        header(kind::SETTINGS, p.len(), out);
        out.extend_from_slice(&p);
    }

    /// Appends the start of the client's control stream: its type, then SETTINGS (the
    /// control stream's first frame, RFC 9114 §6.2.1).
    pub fn control_stream(&self, out: &mut Vec<u8>) {
        out.push(stream_type::CONTROL as u8);
        self.write(out);
    }
}

/// Appends a GOAWAY frame carrying `id` (from a client: the push ID, RFC 9114 §5.2).
pub fn goaway(id: u64, out: &mut Vec<u8>) -> Result<(), varint::TooLarge> {
    let mut p = Vec::with_capacity(8);
    varint::encode(id, &mut p)?;
    header(kind::GOAWAY, p.len(), out);
    out.extend_from_slice(&p);
    Ok(())
}

/// A frame's type and payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The frame type.
    pub kind: u64,
    /// The payload's length (up to 2^62 − 1: never allocated as such).
    pub len: u64,
}

/// What [`Splitter::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A frame starts: its type and length.
    Start(Head),
    /// The next bytes of its payload.
    Payload(&'a [u8]),
    /// Its payload is complete.
    End,
}

/// Finds frames in a stream's bytes fed in pieces of any size: a frame's type and length
/// may be split anywhere (they are kept until whole, at most 16 bytes), payloads are handed
/// out as they come.
#[derive(Debug, Default)]
pub struct Splitter {
    /// The start of a frame header the bytes so far end inside.
    partial: [u8; 16],
    have: usize,
    /// Payload bytes still to come of the current frame.
    left: Option<u64>,
}

impl Splitter {
    /// The next piece in `input`, taking the bytes it used off it; `None` when `input` is
    /// used up (or holds only the start of a frame header, kept for the next call).
    pub fn next<'a>(&mut self, input: &mut &'a [u8]) -> Option<Piece<'a>> {
        match self.left {
            Some(0) => {
                self.left = None;
                Some(Piece::End)
            }
            Some(left) if !input.is_empty() => {
                let n = usize::try_from(left).map_or(input.len(), |l| l.min(input.len()));
                let (payload, rest) = input.split_at(n);
                *input = rest;
                self.left = Some(left - n as u64);
                Some(Piece::Payload(payload))
            }
            Some(_) => None,
            None => self.header(input),
        }
    }

    fn header<'a>(&mut self, input: &mut &'a [u8]) -> Option<Piece<'a>> {
        if input.is_empty() {
            return None;
        }
        let old = self.have;
        let k = (self.partial.len() - old).min(input.len());
        self.partial[old..old + k].copy_from_slice(&input[..k]);
        self.have += k;
        let mut b = &self.partial[..self.have];
        let parsed = varint::take(&mut b).zip(varint::take(&mut b));
        let Some((kind, len)) = parsed else {
            // Incomplete: two integers take at most 16 bytes, so all of `input` was kept.
            *input = &input[k..];
            return None;
        };
        let used = self.have - b.len();
        *input = &input[used - old..];
        self.have = 0;
        self.left = Some(len);
        Some(Piece::Start(Head { kind, len }))
    }

    /// Whether the bytes so far end between frames (a stream ending elsewhere ended inside
    /// a frame: H3_FRAME_ERROR, RFC 9114 §7.1).
    pub fn between_frames(&self) -> bool {
        self.have == 0 && self.left.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece `bytes` gives when fed in `chunks`, payloads joined per frame.
    fn pieces(bytes: &[u8], cut: usize) -> Vec<(Head, Vec<u8>)> {
        let mut s = Splitter::default();
        let mut out: Vec<(Head, Vec<u8>)> = Vec::new();
        for mut chunk in [&bytes[..cut], &bytes[cut..]] {
            while let Some(p) = s.next(&mut chunk) {
                match p {
                    Piece::Start(h) => out.push((h, Vec::new())),
                    Piece::Payload(b) => out.last_mut().unwrap().1.extend_from_slice(b),
                    Piece::End => assert_eq!(
                        out.last().unwrap().1.len() as u64,
                        out.last().unwrap().0.len
                    ),
                }
            }
            assert!(chunk.is_empty());
        }
        assert!(s.between_frames());
        out
    }

    #[test]
    fn frames_a_client_writes() {
        let mut b = Vec::new();
        ClientSettings::default().control_stream(&mut b);
        assert_eq!(b, [0x00, 0x04, 0x04, 0x01, 0x00, 0x07, 0x00]);
        b.clear();
        let settings = ClientSettings {
            max_field_section_size: Some(65_536),
        };
        settings.write(&mut b);
        assert_eq!(
            b,
            [0x04, 0x09, 0x01, 0x00, 0x07, 0x00, 0x06, 0x80, 0x01, 0x00, 0x00]
        );
        b.clear();
        headers(&[0x00, 0x00, 0xd1], &mut b);
        data(b"hi", &mut b);
        goaway(0, &mut b).unwrap();
        assert_eq!(
            b,
            [0x01, 0x03, 0x00, 0x00, 0xd1, 0x00, 0x02, b'h', b'i', 0x07, 0x01, 0x00]
        );
        assert!(goaway(varint::MAX + 1, &mut b).is_err());
        assert_eq!(kind::name(kind::GOAWAY), "GOAWAY");
        assert_eq!(kind::name(0x21), "frame type 0x21");
    }

    #[test]
    fn frames_split_anywhere_are_found_the_same() {
        let mut b = Vec::new();
        headers(&[0x00, 0x00, 0xd9], &mut b);
        data(&[7; 300], &mut b); // a 2-byte length
        header(0x21, 0, &mut b); // an empty reserved frame
                                 // A frame type in 8 bytes, not the shortest: still one frame.
        b.extend_from_slice(&[0xc0, 0, 0, 0, 0, 0, 0, 0x21, 0x01, 0xaa]);
        let whole = pieces(&b, b.len());
        assert_eq!(whole.len(), 4);
        assert_eq!(
            whole[1].0,
            Head {
                kind: kind::DATA,
                len: 300
            }
        );
        assert_eq!(whole[3].0, Head { kind: 0x21, len: 1 });
        for cut in 0..=b.len() {
            assert_eq!(pieces(&b, cut), whole, "cut at {cut}");
        }
    }

    #[test]
    fn huge_lengths_are_counted_not_allocated() {
        let mut s = Splitter::default();
        let mut input: &[u8] = &[0x21, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2];
        assert_eq!(
            s.next(&mut input),
            Some(Piece::Start(Head {
                kind: 0x21,
                len: varint::MAX
            }))
        );
        assert_eq!(s.next(&mut input), Some(Piece::Payload(&[1, 2])));
        assert_eq!(s.next(&mut input), None);
        assert!(!s.between_frames());
    }
}
