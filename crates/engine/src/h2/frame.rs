//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, the types and flags a client meets,
//! and the few frames a load client writes. Parsing only reads the header; payloads are read
//! where they are used ([`super::conn`]).

/// What a client sends first on every HTTP/2 connection (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Size of a frame header.
pub const HEADER_LEN: usize = 9;

/// The largest frame payload every peer accepts until it says otherwise.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;

/// Flow-control window of a new stream or connection until SETTINGS change it.
pub(crate) const DEFAULT_WINDOW: u32 = 65_535;

/// The largest window RFC 9113 allows (2^31 − 1).
pub(crate) const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types (RFC 9113 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// DATA.
    Data,
    /// HEADERS.
    Headers,
    /// PRIORITY (ignored).
    Priority,
    /// RST_STREAM.
    RstStream,
    /// SETTINGS.
    Settings,
    /// PUSH_PROMISE (a client that disables push must not receive it).
    PushPromise,
    /// PING.
    Ping,
    /// GOAWAY.
    GoAway,
    /// WINDOW_UPDATE.
    WindowUpdate,
    /// CONTINUATION.
    Continuation,
    /// A type this client does not know: ignored (RFC 9113 §4.1).
    Unknown(u8),
}

impl Kind {
    fn from_byte(b: u8) -> Kind {
        match b {
            0 => Kind::Data,
            1 => Kind::Headers,
            2 => Kind::Priority,
            3 => Kind::RstStream,
            4 => Kind::Settings,
            5 => Kind::PushPromise,
            6 => Kind::Ping,
            7 => Kind::GoAway,
            8 => Kind::WindowUpdate,
            9 => Kind::Continuation,
            other => Kind::Unknown(other),
        }
    }

    /// The frame type's name as RFC 9113 spells it (`SETTINGS`, `PING`, …).
    pub fn name(self) -> String {
        let name = match self {
            Kind::Data => "DATA",
            Kind::Headers => "HEADERS",
            Kind::Priority => "PRIORITY",
            Kind::RstStream => "RST_STREAM",
            Kind::Settings => "SETTINGS",
            Kind::PushPromise => "PUSH_PROMISE",
            Kind::Ping => "PING",
            Kind::GoAway => "GOAWAY",
            Kind::WindowUpdate => "WINDOW_UPDATE",
            Kind::Continuation => "CONTINUATION",
            Kind::Unknown(b) => return format!("an unknown frame type 0x{b:02x}"),
        };
        name.to_string()
    }

    fn byte(self) -> u8 {
        match self {
            Kind::Data => 0,
            Kind::Headers => 1,
            Kind::Priority => 2,
            Kind::RstStream => 3,
            Kind::Settings => 4,
            Kind::PushPromise => 5,
            Kind::Ping => 6,
            Kind::GoAway => 7,
            Kind::WindowUpdate => 8,
            Kind::Continuation => 9,
            Kind::Unknown(b) => b,
        }
    }
}

/// Frame flags (their meaning depends on the type).
pub mod flags {
    /// DATA, HEADERS: the last frame of the stream from its sender.
    pub(crate) const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub(crate) const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block ends here.
    pub(crate) const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: a pad length byte comes first.
    pub(crate) const PADDED: u8 = 0x8;
    /// HEADERS: a priority block (5 bytes) comes first.
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers a client uses (RFC 9113 §6.5.2).
pub(crate) mod setting {
    /// SETTINGS_ENABLE_PUSH.
    pub(crate) const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(crate) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub(crate) const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub(crate) const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §3): the server takes extended CONNECT.
    pub(crate) const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
}

/// The largest SETTINGS_MAX_FRAME_SIZE a peer may announce (2^24 − 1).
pub(crate) const MAX_FRAME_LIMIT: u32 = (1 << 24) - 1;

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Payload length.
    pub len: u32,
    /// Type.
    pub kind: Kind,
    /// Flags.
    pub flags: u8,
    /// Stream identifier (0: the connection).
    pub stream: u32,
}

impl Header {
    /// Reads the header at the start of `b` (at least [`HEADER_LEN`] bytes).
    pub fn parse(b: &[u8]) -> Header {
        Header {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: Kind::from_byte(b[3]),
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
        }
    }

    /// Whether `flag` is set.
    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Appends this header to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_be_bytes()[1..]);
        out.push(self.kind.byte());
        out.push(self.flags);
        out.extend_from_slice(&(self.stream & MAX_WINDOW).to_be_bytes());
    }
}

/// Appends a frame with `payload`.
pub(crate) fn write(out: &mut Vec<u8>, kind: Kind, flags: u8, stream: u32, payload: &[u8]) {
    Header {
        len: payload.len() as u32,
        kind,
        flags,
        stream,
    }
    .write(out);
    out.extend_from_slice(payload);
}

/// Appends a SETTINGS frame with `values`.
pub fn settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    let mut p = Vec::with_capacity(values.len() * 6);
    for (id, v) in values {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    write(out, Kind::Settings, 0, 0, &p);
}

/// Appends a WINDOW_UPDATE of `increment` for `stream` (0: the connection).
pub(crate) fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write(
        out,
        Kind::WindowUpdate,
        0,
        stream,
        &(increment & MAX_WINDOW).to_be_bytes(),
    );
}

/// Appends an RST_STREAM with `code`.
pub(crate) fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write(out, Kind::RstStream, 0, stream, &code.to_be_bytes());
}

/// HTTP/2 error codes a client reports (RFC 9113 §7).
pub(crate) mod code {
    /// PROTOCOL_ERROR.
    pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
    /// FLOW_CONTROL_ERROR.
    pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
    /// FRAME_SIZE_ERROR.
    pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
    /// REFUSED_STREAM: the stream was not processed and may be retried.
    pub(crate) const REFUSED_STREAM: u32 = 0x7;
    /// CANCEL: the client no longer wants the stream (it timed out).
    pub(crate) const CANCEL: u32 = 0x8;
    /// COMPRESSION_ERROR.
    pub(crate) const COMPRESSION_ERROR: u32 = 0x9;
    /// ENHANCE_YOUR_CALM: the peer behaves in a way that costs too much.
    pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// HTTP/2 error codes (RFC 9113 §7), named as the RFC names them.
pub(crate) fn error_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("error 0x{code:x}"), |n| (*n).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let h = Header {
            len: 70_000,
            kind: Kind::Headers,
            flags: flags::END_HEADERS | flags::END_STREAM,
            stream: 7,
        };
        let mut b = Vec::new();
        h.write(&mut b);
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(Header::parse(&b), h);
        // The reserved bit of the stream id is ignored.
        b[5] |= 0x80;
        assert_eq!(Header::parse(&b).stream, 7);
        assert_eq!(
            Header::parse(&[0, 0, 0, 0xfa, 0, 0, 0, 0, 0]).kind,
            Kind::Unknown(0xfa)
        );
    }

    #[test]
    fn frames_a_client_writes() {
        let mut b = Vec::new();
        settings(&mut b, &[(setting::ENABLE_PUSH, 0)]);
        assert_eq!(b, [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]);
        b.clear();
        window_update(&mut b, 0, MAX_WINDOW - DEFAULT_WINDOW);
        assert_eq!(Header::parse(&b).kind, Kind::WindowUpdate);
        assert_eq!(&b[9..], &(MAX_WINDOW - DEFAULT_WINDOW).to_be_bytes());
        assert_eq!(error_name(7), "REFUSED_STREAM");
        assert_eq!(error_name(0x42), "error 0x42");
    }
}
