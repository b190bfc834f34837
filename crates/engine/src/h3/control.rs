//! The server's unidirectional streams (RFC 9114 §6.2): each starts with its type. The
//! control stream carries SETTINGS first, then GOAWAY (and frames to skip); the QPACK
//! encoder and decoder streams are read by [`super::qpack`]; a push stream is refused (the
//! client never sends MAX_PUSH_ID); streams of other types are ignored (the caller stops
//! reading them: STOP_SENDING with H3_STREAM_CREATION_ERROR). [`PeerStreams`] refuses a
//! second control or QPACK stream.

use super::error::{fail, Code, H3Error};
use super::frame::{kind, setting, stream_type, Head, Piece, Splitter};
use super::qpack::{self, DecoderStream};
use super::varint;

/// The largest SETTINGS frame payload read (more: H3_EXCESSIVE_LOAD); 16 KiB holds over a
/// thousand settings, where servers send a handful.
pub const MAX_SETTINGS_FRAME: u64 = 16 << 10;

/// A unidirectional stream's type, as the server opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniKind {
    /// The control stream.
    Control,
    /// The QPACK encoder stream.
    QpackEncoder,
    /// The QPACK decoder stream.
    QpackDecoder,
    /// Another type (reserved ones included): ignored.
    Unknown(u64),
}

/// The server's settings (RFC 9114 §7.2.4.1, RFC 9204 §5), unknown ones left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PeerSettings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY (the client's encoder uses no table, whatever it is).
    pub qpack_max_table_capacity: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub qpack_blocked_streams: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest request field section the server takes
    /// (`None`: unlimited).
    pub max_field_section_size: Option<u64>,
}

/// What a unidirectional stream said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UniEvent {
    /// Its type was read (give it to [`PeerStreams::opened`]).
    Opened(UniKind),
    /// The server's SETTINGS (the control stream's first frame).
    Settings(PeerSettings),
    /// A GOAWAY: streams from this ID on will not be processed (retry them elsewhere).
    GoAway(u64),
}

/// One unidirectional stream from the server, read incrementally.
#[derive(Debug, Default)]
pub struct UniStream {
    /// The stream type's bytes so far.
    partial: Vec<u8>,
    state: UniState,
}

#[derive(Debug, Default)]
enum UniState {
    #[default]
    Type,
    Control(Box<Control>),
    Encoder,
    Decoder(DecoderStream),
    Ignored(u64),
}

/// The control stream past its type.
#[derive(Debug, Default)]
struct Control {
    split: Splitter,
    settings: bool,
    frame: Option<Head>,
    /// The payload of a SETTINGS or GOAWAY frame so far (bounded).
    payload: Vec<u8>,
    goaway: Option<u64>,
}

impl UniStream {
    /// Reads the stream's next bytes, calling `on` with what they say. An error closes the
    /// connection with its code (the stream is not read further).
    pub fn feed(&mut self, mut input: &[u8], on: &mut impl FnMut(UniEvent)) -> Result<(), H3Error> {
        if let UniState::Type = self.state {
            let Some(kind) = self.stream_type(&mut input)? else {
                return Ok(());
            };
            on(UniEvent::Opened(kind));
        }
        match &mut self.state {
            UniState::Type => Ok(()),
            UniState::Control(c) => c.feed(input, on),
            UniState::Encoder => qpack::encoder_stream(input),
            UniState::Decoder(d) => d.feed(input),
            UniState::Ignored(_) => Ok(()),
        }
    }

    /// Reads the stream type off `input` (`None`: not whole yet).
    fn stream_type(&mut self, input: &mut &[u8]) -> Result<Option<UniKind>, H3Error> {
        let take = input.len().min(8 - self.partial.len());
        self.partial.extend_from_slice(&input[..take]);
        let Some((t, n)) = varint::decode(&self.partial) else {
            *input = &input[take..];
            return Ok(None);
        };
        *input = &input[n + take - self.partial.len()..];
        self.partial = Vec::new();
        let (state, kind) = match t {
            stream_type::CONTROL => (UniState::Control(Box::default()), UniKind::Control),
            stream_type::QPACK_ENCODER => (UniState::Encoder, UniKind::QpackEncoder),
            stream_type::QPACK_DECODER => (
                UniState::Decoder(DecoderStream::default()),
                UniKind::QpackDecoder,
            ),
            stream_type::PUSH => {
                return Err(fail(
                    Code::IdError,
                    "a push stream, though the client allows no push (it sent no MAX_PUSH_ID)",
                ))
            }
            other => (UniState::Ignored(other), UniKind::Unknown(other)),
        };
        self.state = state;
        Ok(Some(kind))
    }

    /// The bytes the stream holds: the start of its type, or of a SETTINGS (at most
    /// [`MAX_SETTINGS_FRAME`]) or GOAWAY frame.
    pub fn held(&self) -> usize {
        let frame = match &self.state {
            UniState::Control(c) => c.payload.len(),
            _ => 0,
        };
        self.partial.len() + frame
    }

    /// The stream's type, once read.
    pub fn kind(&self) -> Option<UniKind> {
        match self.state {
            UniState::Type => None,
            UniState::Control(_) => Some(UniKind::Control),
            UniState::Encoder => Some(UniKind::QpackEncoder),
            UniState::Decoder(_) => Some(UniKind::QpackDecoder),
            UniState::Ignored(t) => Some(UniKind::Unknown(t)),
        }
    }

    /// The server ended or reset the stream: the control and QPACK streams must stay open
    /// for the connection's life (H3_CLOSED_CRITICAL_STREAM).
    pub fn finish(&self) -> Result<(), H3Error> {
        match self.kind() {
            Some(k @ (UniKind::Control | UniKind::QpackEncoder | UniKind::QpackDecoder)) => {
                Err(fail(
                    Code::ClosedCriticalStream,
                    format_args!("the server closed its {k:?} stream"),
                ))
            }
            _ => Ok(()),
        }
    }
}

impl Control {
    fn feed(&mut self, mut input: &[u8], on: &mut impl FnMut(UniEvent)) -> Result<(), H3Error> {
        while let Some(piece) = self.split.next(&mut input) {
            match piece {
                Piece::Start(h) => self.start(h)?,
                Piece::Payload(b) => {
                    if self.frame.is_some() {
                        self.payload.extend_from_slice(b);
                    }
                }
                Piece::End => {
                    if let Some(h) = self.frame.take() {
                        self.end(h, on)?;
                        self.payload = Vec::new();
                    }
                }
            }
        }
        Ok(())
    }

    /// A frame starts: SETTINGS first, once; GOAWAY kept; what a server never sends on its
    /// control stream refused; the rest skipped.
    fn start(&mut self, h: Head) -> Result<(), H3Error> {
        if !self.settings && h.kind != kind::SETTINGS {
            return Err(fail(
                Code::MissingSettings,
                format_args!(
                    "the control stream starts with {}, not SETTINGS",
                    kind::name(h.kind)
                ),
            ));
        }
        let (code, why) = match h.kind {
            kind::SETTINGS if self.settings => (Code::FrameUnexpected, "a second SETTINGS frame"),
            kind::SETTINGS if h.len > MAX_SETTINGS_FRAME => {
                (Code::ExcessiveLoad, "a SETTINGS frame over 16 KiB")
            }
            kind::GOAWAY if h.len > 8 => {
                (Code::FrameError, "a GOAWAY frame longer than its stream ID")
            }
            kind::SETTINGS | kind::GOAWAY => {
                self.settings = true;
                self.frame = Some(h);
                return Ok(());
            }
            kind::CANCEL_PUSH => (
                Code::IdError,
                "a CANCEL_PUSH, though the client allows no push",
            ),
            kind::DATA | kind::HEADERS | kind::PUSH_PROMISE | kind::MAX_PUSH_ID => (
                Code::FrameUnexpected,
                "a frame that has no place on the server's control stream",
            ),
            k if kind::is_http2_only(k) => (Code::FrameUnexpected, "an HTTP/2 frame type"),
            _ => return Ok(()),
        };
        Err(fail(code, format_args!("{why} ({})", kind::name(h.kind))))
    }

    fn end(&mut self, h: Head, on: &mut impl FnMut(UniEvent)) -> Result<(), H3Error> {
        if h.kind == kind::SETTINGS {
            on(UniEvent::Settings(settings(&self.payload)?));
            return Ok(());
        }
        let mut p = &self.payload[..];
        let id = varint::take(&mut p)
            .filter(|_| p.is_empty())
            .ok_or_else(|| fail(Code::FrameError, "a GOAWAY frame that is not one stream ID"))?;
        if id % 4 != 0 {
            return Err(fail(
                Code::IdError,
                format_args!("a GOAWAY for stream {id}, not a client's request stream"),
            ));
        }
        if self.goaway.is_some_and(|last| id > last) {
            return Err(fail(
                Code::IdError,
                format_args!("a GOAWAY for stream {id}, after one for a lower stream"),
            ));
        }
        self.goaway = Some(id);
        on(UniEvent::GoAway(id));
        Ok(())
    }
}

/// A SETTINGS payload: pairs of integers, no identifier twice, none of HTTP/2's.
fn settings(mut p: &[u8]) -> Result<PeerSettings, H3Error> {
    let mut s = PeerSettings::default();
    let mut ids = Vec::new();
    while !p.is_empty() {
        let (id, value) = varint::take(&mut p)
            .zip(varint::take(&mut p))
            .ok_or_else(|| {
                fail(
                    Code::FrameError,
                    "a SETTINGS frame that ends inside a setting",
                )
            })?;
        if setting::is_http2_only(id) {
            return Err(fail(
                Code::SettingsError,
                format_args!("HTTP/2's setting 0x{id:x}"),
            ));
        }
        match id {
            setting::QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
            setting::QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
            setting::MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
            _ => {}
        }
        ids.push(id);
    }
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(fail(
            Code::SettingsError,
            format_args!("setting 0x{:x} twice", w[0]),
        ));
    }
    Ok(s)
}

/// The server's control and QPACK streams: one of each at most (RFC 9114 §6.2.1, RFC 9204
/// §4.2; a second is H3_STREAM_CREATION_ERROR).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PeerStreams {
    control: bool,
    encoder: bool,
    decoder: bool,
}

impl PeerStreams {
    /// A stream of `kind` was opened.
    pub fn opened(&mut self, kind: UniKind) -> Result<(), H3Error> {
        let seen = match kind {
            UniKind::Control => &mut self.control,
            UniKind::QpackEncoder => &mut self.encoder,
            UniKind::QpackDecoder => &mut self.decoder,
            UniKind::Unknown(_) => return Ok(()),
        };
        if std::mem::replace(seen, true) {
            return Err(fail(
                Code::StreamCreationError,
                format_args!("a second {kind:?} stream from the server"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
