//! HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6) and the error every parser of
//! this module returns: the code the connection (or stream) is closed with, and why.

/// An HTTP/3 or QPACK error code, named as the RFCs name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// H3_NO_ERROR (0x0100).
    NoError,
    /// H3_GENERAL_PROTOCOL_ERROR (0x0101).
    GeneralProtocolError,
    /// H3_INTERNAL_ERROR (0x0102).
    InternalError,
    /// H3_STREAM_CREATION_ERROR (0x0103).
    StreamCreationError,
    /// H3_CLOSED_CRITICAL_STREAM (0x0104).
    ClosedCriticalStream,
    /// H3_FRAME_UNEXPECTED (0x0105).
    FrameUnexpected,
    /// H3_FRAME_ERROR (0x0106).
    FrameError,
    /// H3_EXCESSIVE_LOAD (0x0107).
    ExcessiveLoad,
    /// H3_ID_ERROR (0x0108).
    IdError,
    /// H3_SETTINGS_ERROR (0x0109).
    SettingsError,
    /// H3_MISSING_SETTINGS (0x010a).
    MissingSettings,
    /// H3_REQUEST_REJECTED (0x010b).
    RequestRejected,
    /// H3_REQUEST_CANCELLED (0x010c).
    RequestCancelled,
    /// H3_REQUEST_INCOMPLETE (0x010d).
    RequestIncomplete,
    /// H3_MESSAGE_ERROR (0x010e).
    MessageError,
    /// H3_CONNECT_ERROR (0x010f).
    ConnectError,
    /// H3_VERSION_FALLBACK (0x0110).
    VersionFallback,
    /// QPACK_DECOMPRESSION_FAILED (0x0200).
    QpackDecompressionFailed,
    /// QPACK_ENCODER_STREAM_ERROR (0x0201).
    QpackEncoderStreamError,
    /// QPACK_DECODER_STREAM_ERROR (0x0202).
    QpackDecoderStreamError,
}

/// Every code with its value and name, in the RFCs' order.
const CODES: [(Code, u64, &str); 20] = [
    (Code::NoError, 0x100, "H3_NO_ERROR"),
    (
        Code::GeneralProtocolError,
        0x101,
        "H3_GENERAL_PROTOCOL_ERROR",
    ),
    (Code::InternalError, 0x102, "H3_INTERNAL_ERROR"),
    (Code::StreamCreationError, 0x103, "H3_STREAM_CREATION_ERROR"),
    (
        Code::ClosedCriticalStream,
        0x104,
        "H3_CLOSED_CRITICAL_STREAM",
    ),
    (Code::FrameUnexpected, 0x105, "H3_FRAME_UNEXPECTED"),
    (Code::FrameError, 0x106, "H3_FRAME_ERROR"),
    (Code::ExcessiveLoad, 0x107, "H3_EXCESSIVE_LOAD"),
    (Code::IdError, 0x108, "H3_ID_ERROR"),
    (Code::SettingsError, 0x109, "H3_SETTINGS_ERROR"),
    (Code::MissingSettings, 0x10a, "H3_MISSING_SETTINGS"),
    (Code::RequestRejected, 0x10b, "H3_REQUEST_REJECTED"),
    (Code::RequestCancelled, 0x10c, "H3_REQUEST_CANCELLED"),
    (Code::RequestIncomplete, 0x10d, "H3_REQUEST_INCOMPLETE"),
    (Code::MessageError, 0x10e, "H3_MESSAGE_ERROR"),
    (Code::ConnectError, 0x10f, "H3_CONNECT_ERROR"),
    (Code::VersionFallback, 0x110, "H3_VERSION_FALLBACK"),
    (
        Code::QpackDecompressionFailed,
        0x200,
        "QPACK_DECOMPRESSION_FAILED",
    ),
    (
        Code::QpackEncoderStreamError,
        0x201,
        "QPACK_ENCODER_STREAM_ERROR",
    ),
    (
        Code::QpackDecoderStreamError,
        0x202,
        "QPACK_DECODER_STREAM_ERROR",
    ),
];

impl Code {
    fn entry(self) -> (Code, u64, &'static str) {
        CODES[self as usize]
    }

    /// The code's value on the wire (CONNECTION_CLOSE, RESET_STREAM, STOP_SENDING).
    pub fn value(self) -> u64 {
        self.entry().1
    }

    /// The code's name (`H3_FRAME_UNEXPECTED`, `QPACK_DECOMPRESSION_FAILED`, …).
    pub fn name(self) -> &'static str {
        self.entry().2
    }

    /// The code with this value, if it is one of the RFCs' (a peer's CONNECTION_CLOSE).
    pub fn from_value(value: u64) -> Option<Code> {
        CODES.iter().find(|c| c.1 == value).map(|c| c.0)
    }
}

/// Why an HTTP/3 stream or connection cannot go on: the code to close it with, and what the
/// peer did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("HTTP/3: {why} ({})", code.name())]
pub struct H3Error {
    /// The error code.
    pub code: Code,
    /// What happened, for the run's error message.
    pub why: String,
}

/// An error with `code`, saying `why`.
pub(crate) fn fail(code: Code, why: impl std::fmt::Display) -> H3Error {
    H3Error {
        code,
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_the_rfc_values_and_names() {
        for (i, (code, value, name)) in CODES.iter().enumerate() {
            assert_eq!(*code as usize, i, "{name} out of order");
            assert_eq!(code.value(), *value);
            assert_eq!(code.name(), *name);
            assert_eq!(Code::from_value(*value), Some(*code));
        }
        assert_eq!(Code::FrameUnexpected.value(), 0x105);
        assert_eq!(Code::QpackDecompressionFailed.value(), 0x200);
        assert_eq!(Code::from_value(0x21), None);
        let e = fail(Code::ExcessiveLoad, "a HEADERS frame of 70000 bytes");
        assert_eq!(
            e.to_string(),
            "HTTP/3: a HEADERS frame of 70000 bytes (H3_EXCESSIVE_LOAD)"
        );
    }
}
