//! One HTTP/2 connection as a client sees it, sans-IO: bytes from the server go in
//! ([`H2Conn::feed`]) and come out as events (a response head, body bytes, a stream's end, a
//! reset, GOAWAY, the server's stream limit); what the client must send (the preface, its
//! SETTINGS, acknowledgements, window updates, requests) collects in [`H2Conn::out`] for the
//! caller to write. Flow control: the client opens its receive windows wide (2^31 − 1, as
//! h2load does; small default windows halve HTTP/2 throughput), tops them up when half is
//! used, and credits an update only once it is written (so DATA beyond the window is seen);
//! request bodies respect the server's windows and are queued a few frames ahead of the
//! socket ([`H2Conn::fill_bodies`]).

use std::collections::VecDeque;
use std::sync::Arc;

use super::hpack::Hpack;

use super::frame::{self, code, flags, setting, Header, Kind, HEADER_LEN};
pub use crate::check::watch::Recorded;
use crate::check::watch::StreamWatch;
use crate::check::CheckState;
use volley_plan::workload::Checks;

/// What the server said or did, in the order it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The server's SETTINGS: the most streams it allows open at once (`u32::MAX`: no limit).
    Settings {
        /// SETTINGS_MAX_CONCURRENT_STREAMS.
        max_streams: u32,
    },
    /// A response's head (interim 1xx heads are skipped; trailers carry no status).
    Head {
        /// The stream.
        stream: u32,
        /// `:status`.
        status: u16,
    },
    /// Body bytes (padding excluded).
    Data {
        /// The stream.
        stream: u32,
        /// How many.
        len: usize,
    },
    /// A checked stream's response is complete: the header and body checks it failed
    /// (`check::FAILED_*` bits; its status and size are the caller's to judge). Comes just
    /// before the stream's `End`.
    Checked {
        /// The stream.
        stream: u32,
        /// The failed checks' bits.
        failed: u8,
        /// What the response offers a journey's captures and cookie jar (`None`: the
        /// request captures nothing).
        offered: Option<Box<CheckState>>,
    },
    /// The server ended the stream: the response is complete.
    End {
        /// The stream.
        stream: u32,
    },
    /// The server reset the stream (RST_STREAM).
    Reset {
        /// The stream.
        stream: u32,
        /// The error code (`frame::error_name`).
        code: u32,
    },
    /// The server ended the stream with a malformed response (RFC 9113 §8.1.1): a
    /// content-length that disagrees with the DATA, or one that is not a number. The
    /// client reset the stream if the server had not ended it.
    Malformed {
        /// The stream.
        stream: u32,
        /// What was wrong.
        reason: String,
    },
    /// The server is going away: streams above `last_stream` were not processed and may be
    /// sent again on a new connection; `code` 0 is a graceful shutdown.
    GoAway {
        /// The last stream it processed.
        last_stream: u32,
        /// The error code.
        code: u32,
    },
}

/// A connection error: the connection cannot go on (the caller counts it as `protocol`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("HTTP/2: {0}")]
pub struct H2Error(pub String);

/// The receive window the client announces by default, per stream and for the connection
/// (`--h2-window` sets another).
pub const RECEIVE_WINDOW: u32 = frame::MAX_WINDOW;

/// The largest header block (HEADERS and its CONTINUATIONs) the client assembles; a server
/// that sends more is refused (ENHANCE_YOUR_CALM) instead of being buffered.
/// 64 KiB, like the HTTP/1.1 head limit: the HPACK decoder moves the rest of the block for
/// every field, so the block's size bounds that cost too.
pub(crate) const MAX_HEADER_BLOCK: usize = 64 << 10;

/// The most CONTINUATION frames one header block may take (nghttp2 allows 8, the h2 crate 5
/// for this block size; 64 serves servers that split finely), so a stream of empty
/// CONTINUATIONs (CVE-2024-27316 style) ends the connection quickly.
pub(crate) const MAX_CONTINUATIONS: usize = 64;

/// The most acknowledgements (SETTINGS and PING ACKs) queued in `out` and not yet written:
/// a server that makes the client queue more (SETTINGS or PING flood, CVE-2019-9512/9515) is
/// refused with ENHANCE_YOUR_CALM. nghttp2's default `max_outbound_ack`, the same rule.
pub const MAX_QUEUED_ACKS: usize = 1000;

/// The HPACK dynamic table size the client allows the server's encoder (the protocol's
/// default SETTINGS_HEADER_TABLE_SIZE, which the client never changes): a size update above
/// it is a COMPRESSION_ERROR, so the table stays within 4 KiB per connection.
pub(crate) const HEADER_TABLE_SIZE: u32 = 4096;

/// The largest decoded header list (RFC 7541 §4.1 sizes: name + value + 32 per field): an
/// HPACK bomb (a small block of references to a large table entry) is refused before it
/// allocates more. 64 KiB, like the HTTP/1.1 head limit.
pub(crate) const MAX_HEADER_LIST: usize = 64 << 10;

/// Request body bytes queued in `out` ahead of what the socket took, at most (plus one frame):
/// four frames keep the socket's buffer fed without holding a body in memory twice.
pub const BODY_AHEAD: usize = 64 << 10;

/// The largest DATA frame the client writes, whatever larger frames the server accepts, so
/// one frame never holds more than 16 KiB of a body in `out`.
const DATA_FRAME: usize = frame::DEFAULT_MAX_FRAME as usize;

/// Bytes of a first answer that is not HTTP/2 quoted in its error.
const FIRST_BYTES_SHOWN: usize = 33;

/// Kept capacity of the header block buffer between blocks (a rare large block is freed).
const BLOCK_KEEP: usize = 64 << 10;

/// A request body waiting for flow-control window.
#[derive(Debug)]
struct Pending {
    stream: u32,
    sent: usize,
    window: i64,
    /// Its own body (a workload's request); `None`: the connection's.
    body: Option<Arc<[u8]>>,
}

/// A stream the client opened and the server has not ended.
#[derive(Debug)]
struct Stream {
    id: u32,
    /// The final (non-1xx) response head arrived.
    head: bool,
    /// DATA bytes received since the stream's window was last topped up.
    unacked: u64,
    /// DATA bytes the server may still send on it, by the updates written so far.
    credit: i64,
    /// The request is a HEAD (its response has no content, whatever it declares).
    head_request: bool,
    /// What the response's content-length declared.
    length: Length,
    /// Body bytes received (padding excluded).
    received: u64,
    /// Its response's header and body checks, as they are read (`None`: none to read).
    watch: Option<Box<StreamWatch>>,
    /// The connection's WebSocket (RFC 8441): its DATA is the WebSocket's bytes, kept for the
    /// caller ([`H2Conn::take_tunnel_input`]), and its 2xx head declares no content.
    tunnel: bool,
}

/// A response's declared content length, checked against its DATA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Length {
    /// None declared (or no head yet).
    #[default]
    None,
    /// This many bytes.
    Declared(u64),
    /// A value that is not a number, or fields that disagree.
    Invalid,
    /// A response without content (to a HEAD, 204, 304): not checked.
    Unchecked,
}

impl Length {
    /// `self` when it declares fewer bytes than `received`.
    fn filter_over(self, received: u64) -> Length {
        match self {
            Length::Declared(n) if received > n => self,
            _ => Length::None,
        }
    }
}

/// A WINDOW_UPDATE queued in `out`: it widens the window the server sees only once written.
#[derive(Debug, Clone, Copy)]
struct Update {
    /// Where (in bytes ever queued) the frame ends.
    end: u64,
    /// Its stream (0: the connection).
    stream: u32,
    increment: u32,
}

/// One connection's HTTP/2 state.
pub struct H2Conn {
    /// Bytes to write to the server, in order; the caller drains what the socket took.
    pub out: Vec<u8>,
    inbuf: Vec<u8>,
    decoder: Hpack,
    /// The request body every stream of the run sends (empty without one).
    body: Arc<[u8]>,
    max_streams: u32,
    max_frame: usize,
    peer_initial_window: i64,
    send_window: i64,
    /// The receive window announced, per stream and for the connection.
    window: u32,
    recv_unacked: u64,
    /// DATA bytes the server may still send on the connection, by the updates written so
    /// far: below zero it ignored the window (FLOW_CONTROL_ERROR).
    recv_credit: i64,
    /// Window updates queued and not yet written.
    updates: VecDeque<Update>,
    /// Received bytes after which a window is topped up.
    update_at: u64,
    next_stream: u32,
    open: Vec<Stream>,
    /// A header block being assembled from HEADERS and CONTINUATION: (stream, end stream).
    block_of: Option<(u32, bool)>,
    block: Vec<u8>,
    continuations: usize,
    pending: Vec<Pending>,
    goaway: bool,
    /// The server's SETTINGS arrived: until then no stream is opened, so its stream limit is
    /// never exceeded (a server may refuse streams over it).
    settings_seen: bool,
    /// Bytes of `out` the caller has taken so far, and `out`'s length when this connection
    /// last touched it: what was drained in between was written.
    written: u64,
    seen_len: usize,
    /// Where (in bytes ever queued) each acknowledgement not yet written ends.
    acks: VecDeque<u64>,
    /// Where (in bytes ever queued) the first stream's HEADERS begins.
    first_stream_at: Option<u64>,
    /// Streams whose HEADERS are queued and not yet written, oldest first, with where (in
    /// bytes ever queued) their HEADERS end: the server cannot have seen them.
    unwritten: VecDeque<(u32, u64)>,
    /// A frame has arrived (the first must be the server's SETTINGS).
    framed: bool,
    /// The server answered in HTTP/1.x instead of HTTP/2.
    http1: bool,
    /// What the last recorded stream's response showed, once it ended.
    recorded: Option<Recorded>,
    /// The server announced SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441 §3).
    connect_protocol: bool,
    /// The WebSocket's stream, once opened ([`H2Conn::open_tunnel`]).
    tunnel: Option<tunnel::Tunnel>,
    /// The WebSocket's bytes received (its stream's DATA, padding excluded) and not yet taken.
    tunnel_in: Vec<u8>,
}

impl std::fmt::Debug for H2Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Conn")
            .field("open", &self.open)
            .field("max_streams", &self.max_streams)
            .field("goaway", &self.goaway)
            .finish_non_exhaustive()
    }
}

/// A connection error with the HTTP/2 error `code` named at the end of the message.
fn fail(code: u32, what: impl std::fmt::Display) -> H2Error {
    H2Error(format!("{what} ({})", frame::error_name(code)))
}

impl H2Conn {
    /// A new connection that will send `body` with every request and announce `window` bytes
    /// of receive window per stream and for the connection (at least the protocol's 65,535,
    /// at most 2^31 − 1); the preface and the client's SETTINGS are queued in
    /// [`H2Conn::out`] (send them before anything else).
    pub fn new(body: Arc<[u8]>, window: u32) -> H2Conn {
        let window = window.clamp(frame::DEFAULT_WINDOW, frame::MAX_WINDOW);
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, window),
            ],
        );
        if window > frame::DEFAULT_WINDOW {
            frame::window_update(&mut out, 0, window - frame::DEFAULT_WINDOW);
        }
        let decoder = Hpack::new(HEADER_TABLE_SIZE as usize);
        let seen_len = out.len();
        H2Conn {
            out,
            inbuf: Vec::new(),
            decoder,
            body,
            max_streams: u32::MAX,
            max_frame: frame::DEFAULT_MAX_FRAME as usize,
            peer_initial_window: i64::from(frame::DEFAULT_WINDOW),
            send_window: i64::from(frame::DEFAULT_WINDOW),
            window,
            recv_unacked: 0,
            recv_credit: i64::from(window),
            updates: VecDeque::new(),
            update_at: u64::from(window / 2),
            next_stream: 1,
            open: Vec::new(),
            block_of: None,
            block: Vec::new(),
            continuations: 0,
            pending: Vec::new(),
            goaway: false,
            settings_seen: false,
            written: 0,
            seen_len,
            acks: VecDeque::new(),
            first_stream_at: None,
            unwritten: VecDeque::new(),
            framed: false,
            http1: false,
            recorded: None,
            connect_protocol: false,
            tunnel: None,
            tunnel_in: Vec::new(),
        }
    }

    /// Opens a stream like [`H2Conn::open_stream_with`] whose response's fields and first
    /// `keep` body bytes are kept, for [`H2Conn::take_recorded`] once it ends (one request on
    /// a connection of its own: `--verify`).
    pub(crate) fn open_stream_recorded(
        &mut self,
        block: &[u8],
        body: Option<Arc<[u8]>>,
        head: bool,
        checks: Arc<Checks>,
        keep: usize,
    ) -> u32 {
        let stream = self.open_stream_with(block, body, head, None);
        if let Some(s) = self.open.last_mut() {
            s.watch = Some(StreamWatch::recording(checks, keep));
        }
        stream
    }

    /// What the recorded stream's response showed, once it ended normally.
    pub(crate) fn take_recorded(&mut self) -> Option<Recorded> {
        self.recorded.take()
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.open.len()
    }

    /// The server's limit on open streams (`u32::MAX` until it says).
    pub(crate) fn max_streams(&self) -> u32 {
        self.max_streams
    }

    /// Whether the server's SETTINGS arrived (the first frame it must send).
    pub(crate) fn settings_seen(&self) -> bool {
        self.settings_seen
    }

    /// Whether the server answered the preface in HTTP/1.x (`feed` then failed): a server
    /// that does not speak HTTP/2 in cleartext, a set-up error rather than a load result.
    #[cfg(test)]
    pub(crate) fn answered_http1(&self) -> bool {
        self.http1
    }

    /// Whether the first byte of a request (a stream's HEADERS) was written: until then a
    /// failing connection cost no request, like a failed connect.
    pub(crate) fn request_written(&self) -> bool {
        let written = self.written + self.seen_len.saturating_sub(self.out.len()) as u64;
        self.first_stream_at.is_some_and(|at| written > at)
    }

    /// Whether the server said GOAWAY.
    pub(crate) fn going_away(&self) -> bool {
        self.goaway
    }

    /// Whether another stream may be opened: after the server's SETTINGS, under its limit,
    /// before GOAWAY, and with stream ids left.
    pub fn can_open(&self) -> bool {
        self.settings_seen
            && !self.goaway
            && (self.open.len() as u64) < u64::from(self.max_streams)
            && self.next_stream < frame::MAX_WINDOW
    }

    /// Opens a stream with the request header `block` (see [`super::request`]) and the
    /// connection's body; returns its id.
    pub fn open_stream(&mut self, block: &[u8]) -> u32 {
        self.open_stream_with(block, None, false, None)
    }

    /// Opens a stream with `block` and `body` (`None`: the connection's body), a HEAD
    /// request when `head`, whose response is read for `checks` (header and body checks:
    /// [`Event::Checked`]); returns its id.
    pub(crate) fn open_stream_with(
        &mut self,
        block: &[u8],
        body: Option<Arc<[u8]>>,
        head: bool,
        checks: Option<Arc<Checks>>,
    ) -> u32 {
        let stream = self.push_stream(head, StreamWatch::of(checks), false);
        let no_body = body.as_ref().map_or(self.body.is_empty(), |b| b.is_empty());
        self.write_block(stream, block, no_body);
        if !no_body {
            self.pending.push(Pending {
                stream,
                sent: 0,
                window: self.peer_initial_window,
                body,
            });
            self.send_bodies();
        }
        self.seen_len = self.out.len();
        stream
    }

    /// A new stream, open: its id (a HEAD request's when `head_request`; a WebSocket's tunnel
    /// when `tunnel`), its response read for `watch`.
    fn push_stream(
        &mut self,
        head_request: bool,
        watch: Option<Box<StreamWatch>>,
        tunnel: bool,
    ) -> u32 {
        self.sync_written();
        let stream = self.next_stream;
        self.next_stream += 2;
        self.first_stream_at
            .get_or_insert(self.written + self.out.len() as u64);
        self.open.push(Stream {
            id: stream,
            head: false,
            unacked: 0,
            credit: i64::from(self.window),
            head_request,
            length: Length::None,
            received: 0,
            watch,
            tunnel,
        });
        stream
    }

    /// Queues `block` on `stream` as HEADERS and, past the server's frame size, CONTINUATION
    /// frames (ending the stream when `end_stream`), noted as not yet written.
    fn write_block(&mut self, stream: u32, block: &[u8], end_stream: bool) {
        let mut chunks = block.chunks(self.max_frame).peekable();
        let first = chunks.next().unwrap_or(&[]);
        let mut fl = if end_stream { flags::END_STREAM } else { 0 };
        if chunks.peek().is_none() {
            fl |= flags::END_HEADERS;
        }
        frame::write(&mut self.out, Kind::Headers, fl, stream, first);
        while let Some(c) = chunks.next() {
            let end = if chunks.peek().is_none() {
                flags::END_HEADERS
            } else {
                0
            };
            frame::write(&mut self.out, Kind::Continuation, end, stream, c);
        }
        self.unwritten
            .push_back((stream, self.written + self.out.len() as u64));
    }

    /// Counts what the caller drained from `out` since this connection last touched it as
    /// written.
    fn sync_written(&mut self) {
        self.written += self.seen_len.saturating_sub(self.out.len()) as u64;
        self.seen_len = self.out.len();
        while self
            .unwritten
            .front()
            .is_some_and(|(_, end)| *end <= self.written)
        {
            self.unwritten.pop_front();
        }
        while let Some(u) = self.updates.front().filter(|u| u.end <= self.written) {
            let (stream, inc) = (u.stream, i64::from(u.increment));
            self.updates.pop_front();
            if stream == 0 {
                self.recv_credit += inc;
            } else if let Some(i) = self.index(stream) {
                self.open[i].credit += inc;
            }
        }
    }

    /// Queues a WINDOW_UPDATE of `increment` for `stream` (0: the connection), credited once
    /// it is written.
    fn grant(&mut self, stream: u32, increment: u32) {
        frame::window_update(&mut self.out, stream, increment);
        self.updates.push_back(Update {
            end: self.written + self.out.len() as u64,
            stream,
            increment,
        });
    }

    /// Gives up on `stream` (it timed out): RST_STREAM CANCEL goes to the server, and what it
    /// still sends for the stream is ignored. False when the stream was not open.
    pub(crate) fn cancel(&mut self, stream: u32) -> bool {
        if !self.close(stream) {
            return false;
        }
        self.sync_written();
        frame::rst_stream(&mut self.out, stream, code::CANCEL);
        self.seen_len = self.out.len();
        true
    }

    /// Takes `data` from the server and reports what it means to `on`, in order. After an
    /// error the connection is unusable (its message names the HTTP/2 error code).
    pub fn feed(&mut self, data: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        self.sync_written();
        let r = self.feed_frames(data, on);
        self.seen_len = self.out.len();
        r
    }

    fn feed_frames(&mut self, data: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        if self.inbuf.is_empty() {
            let used = self.frames(data, on)?;
            self.inbuf.extend_from_slice(&data[used..]);
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.inbuf);
        buf.extend_from_slice(data);
        let used = self.frames(&buf, on)?;
        buf.drain(..used);
        self.inbuf = buf;
        Ok(())
    }

    /// Handles every whole frame at the start of `data`; returns the bytes used.
    fn frames(&mut self, data: &[u8], on: &mut impl FnMut(Event)) -> Result<usize, H2Error> {
        let mut off = 0;
        while data.len() - off >= HEADER_LEN {
            if !self.framed {
                self.first_frame(&data[off..])?;
            }
            let h = Header::parse(&data[off..]);
            if h.len > frame::DEFAULT_MAX_FRAME {
                return Err(fail(
                    code::FRAME_SIZE_ERROR,
                    format_args!(
                        "a {} frame of {} bytes, over the 16,384 this client accepts",
                        h.kind.name(),
                        h.len
                    ),
                ));
            }
            let end = off + HEADER_LEN + h.len as usize;
            if data.len() < end {
                break;
            }
            self.frame(h, &data[off + HEADER_LEN..end], on)?;
            off = end;
        }
        Ok(off)
    }

    /// The server's first frame (at least its header is in `data`) must be SETTINGS (RFC 9113
    /// §3.4); an HTTP/1.x answer is named as such.
    fn first_frame(&mut self, data: &[u8]) -> Result<(), H2Error> {
        if data.starts_with(b"HTTP/1.") {
            self.http1 = true;
            let line = data
                .split(|b| *b == b'\r' || *b == b'\n')
                .next()
                .unwrap_or(data);
            let line = String::from_utf8_lossy(&line[..line.len().min(64)]).into_owned();
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("the server answered in HTTP/1.x ({line:?}), not HTTP/2"),
            ));
        }
        let h = Header::parse(data);
        let frame_like = h.len <= frame::DEFAULT_MAX_FRAME && !matches!(h.kind, Kind::Unknown(_));
        if !frame_like {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!(
                    "the server's first bytes are not an HTTP/2 frame: {}",
                    volley_model::units::quoted_bytes(
                        &data[..data.len().min(FIRST_BYTES_SHOWN)],
                        32
                    )
                ),
            ));
        }
        if h.kind != Kind::Settings || h.has(flags::ACK) {
            let what = if h.kind == Kind::Settings {
                "a SETTINGS acknowledgement".to_string()
            } else {
                h.kind.name()
            };
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("the server's first frame is {what}, not SETTINGS"),
            ));
        }
        self.framed = true;
        Ok(())
    }

    fn frame(&mut self, h: Header, p: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        if self.block_of.is_some() && h.kind != Kind::Continuation {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("a {} frame inside a header block", h.kind.name()),
            ));
        }
        match h.kind {
            Kind::Data => self.data(h, p, on),
            Kind::Headers => self.headers(h, p, on),
            Kind::Continuation => self.continuation(h, p, on),
            Kind::Settings => self.settings(h, p, on),
            Kind::Ping => self.ping(h, p),
            Kind::RstStream => self.rst_stream(h, p, on),
            Kind::GoAway => self.goaway(h, p, on),
            Kind::WindowUpdate => self.window_update(h, p),
            Kind::PushPromise => Err(fail(
                code::PROTOCOL_ERROR,
                "the server pushed a stream although push was disabled",
            )),
            Kind::Priority | Kind::Unknown(_) => Ok(()),
        }
    }

    /// Checks that a frame which belongs to a stream names one this client opened (open or
    /// closed since): not stream 0, not an even (server-initiated) or idle stream.
    fn on_client_stream(&self, h: &Header) -> Result<(), H2Error> {
        if h.stream == 0 {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("a {} frame on stream 0", h.kind.name()),
            ));
        }
        if h.stream.is_multiple_of(2) || h.stream >= self.next_stream {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!(
                    "a {} frame on stream {}, which this client never opened",
                    h.kind.name(),
                    h.stream
                ),
            ));
        }
        // Streams are written in the order they were opened: from the first one not yet
        // written on, the server cannot know of them.
        if self
            .unwritten
            .front()
            .is_some_and(|(first, _)| h.stream >= *first)
        {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!(
                    "a {} frame on stream {} before its request was sent",
                    h.kind.name(),
                    h.stream
                ),
            ));
        }
        Ok(())
    }

    /// Checks that a connection-level frame is on stream 0 and `len` bytes long (any length
    /// when `len` is `None`).
    fn on_connection(h: &Header, p: &[u8], len: Option<usize>) -> Result<(), H2Error> {
        if h.stream != 0 {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("a {} frame on stream {}, not 0", h.kind.name(), h.stream),
            ));
        }
        match len {
            Some(n) if p.len() != n => Err(fail(
                code::FRAME_SIZE_ERROR,
                format_args!("a {} frame of {} bytes, not {n}", h.kind.name(), p.len()),
            )),
            _ => Ok(()),
        }
    }

    fn index(&self, stream: u32) -> Option<usize> {
        self.open.iter().position(|s| s.id == stream)
    }

    /// Forgets an open stream; false when it was not open.
    fn close(&mut self, stream: u32) -> bool {
        match self.index(stream) {
            Some(i) => {
                self.open.swap_remove(i);
                self.pending.retain(|p| p.stream != stream);
                if let Some(t) = self.tunnel.as_mut().filter(|t| t.stream == stream) {
                    t.close();
                }
                true
            }
            None => false,
        }
    }
}

/// A frame's payload without its padding.
fn unpad(h: Header, p: &[u8]) -> Result<&[u8], H2Error> {
    if !h.has(flags::PADDED) {
        return Ok(p);
    }
    let pad = *p.first().ok_or_else(|| {
        fail(
            code::FRAME_SIZE_ERROR,
            "a padded frame without its pad length",
        )
    })? as usize;
    p.get(1..p.len().saturating_sub(pad))
        .filter(|_| pad < p.len())
        .ok_or_else(|| fail(code::PROTOCOL_ERROR, "padding longer than the frame"))
}

fn u32_at(p: &[u8], at: usize) -> Option<u32> {
    p.get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

mod control;
mod data;
mod headers;
#[cfg(test)]
mod tests;
mod tunnel;
