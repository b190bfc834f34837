//! One HTTP/3 connection of a worker: the QUIC connection ([`QuicConn`]) and what runs on it —
//! the client's control stream (its SETTINGS), the server's control and QPACK streams, and a
//! request stream per request, whose response becomes the events HTTP/2's session gives
//! ([`Event`]), so a worker completes, fails and counts requests the same way on both. A
//! request's bytes (its HEADERS frame, and DATA for a body) are built once per run and shared
//! by every stream ([`Bytes`]: quinn sends them without a copy).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{
    ConnectionError, Dir, Event as QuicEvent, ReadError, StreamEvent, StreamId, TransportErrorCode,
    VarInt,
};
use volley_plan::workload::Checks;

use super::control::{PeerStreams, UniEvent, UniKind, UniStream};
use super::error::Code;
use super::frame::ClientSettings;
use super::response::{Event as ResponseEvent, Limits, ResponseParser};
use super::H3Error;
use crate::check::watch::{Recorded, StreamWatch};
use crate::h2::conn::Event;
use crate::quic::conn::QuicConn;

/// Bytes read from one stream per readiness before the others get their turn.
const READ_CHUNK: usize = 64 << 10;

/// Why the connection cannot go on (the caller counts it as `protocol`, or as the QUIC
/// connection's loss).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The server broke HTTP/3: volley closed the connection with this code.
    #[error("HTTP/3: {0}")]
    Protocol(H3Error),
    /// The server closed the connection with an error code (CONNECTION_CLOSE: its name, and
    /// the reason the server gave): as HTTP/2's GOAWAY with an error code.
    #[error("HTTP/3: the server closed the connection with {0} (CONNECTION_CLOSE)")]
    Closed(String),
    /// The QUIC connection ended (the server closed it, it timed out, the handshake failed).
    #[error("QUIC: {0}")]
    Lost(String),
}

/// How a read of a request stream left it.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// More to come.
    Pending,
    /// The response is complete.
    Ended,
    /// The response broke HTTP/3's rules for it (the stream is given up).
    Malformed(H3Error),
    /// The server reset the stream with this code.
    Reset(u64),
}

/// A request stream: its response so far, and its request's bytes not yet taken by QUIC.
struct Request {
    id: StreamId,
    parser: ResponseParser,
    unsent: Option<Bytes>,
    /// Its response's header and body checks, as they are read (`None`: none to read).
    watch: Option<Box<StreamWatch>>,
}

/// What [`H3Session::open_stream_with`] opens: the request's frames, whether it is a HEAD (its
/// response has no content), its checks, and how many body bytes `--verify` keeps of its
/// response (`None`: nothing recorded).
#[derive(Debug, Clone, Copy)]
pub struct StreamOpts<'a> {
    /// HEAD: the response has no content.
    pub head: bool,
    /// The response's header and body checks.
    pub checks: Option<&'a Arc<Checks>>,
    /// Record the head's fields and this many body bytes (`--verify`).
    pub record: Option<usize>,
}

/// An HTTP/3 connection.
pub struct H3Session {
    /// Request streams opened so far.
    opened: u64,
    /// When a request stream was last opened (first: when the handshake ended).
    last_open: Option<Instant>,
    /// Bytes of responses (their frames) read since [`H3Session::take_received`].
    received: u64,
    /// QUIC.
    pub quic: QuicConn,
    connected: bool,
    /// `--0rtt` on a resumed session: requests go before the handshake ends, as early data.
    early: bool,
    /// The server refused the early data: the requests sent in it must go again.
    rejected: bool,
    settings_seen: bool,
    /// The first stream the server will not process (GOAWAY), once it said so.
    going_away: Option<u64>,
    peer: PeerStreams,
    uni: HashMap<StreamId, UniStream>,
    requests: HashMap<u32, Request>,
    head_request: bool,
    limits: Limits,
    settings: ClientSettings,
    /// What the last recorded stream's response showed (`--verify`).
    recorded: Option<Recorded>,
}

impl H3Session {
    /// The session over a QUIC connection whose handshake has started; `head_request` when the
    /// run's requests are HEADs (their responses have no content).
    pub fn new(quic: QuicConn, head_request: bool, limits: Limits) -> H3Session {
        let early = quic.conn.has_0rtt();
        let mut session = H3Session {
            opened: 0,
            last_open: None,
            received: 0,
            quic,
            connected: false,
            early,
            rejected: false,
            settings_seen: false,
            going_away: None,
            peer: PeerStreams::default(),
            uni: HashMap::new(),
            requests: HashMap::new(),
            head_request,
            limits,
            settings: ClientSettings::default(),
            recorded: None,
        };
        if early {
            session.open_control();
        }
        session
    }

    /// What the recorded stream's response showed, once it ended whole.
    pub fn take_recorded(&mut self) -> Option<Recorded> {
        self.recorded.take()
    }

    /// Requests may go before the handshake ends (0-RTT).
    pub fn early(&self) -> bool {
        self.early && !self.connected
    }

    /// Whether the connection offered early data (`--0rtt` on a resumed session), and the
    /// server accepted it: `None` when it offered none; meaningful once the handshake is done.
    pub fn zero_rtt(&self) -> Option<bool> {
        self.early
            .then(|| self.connected && self.quic.conn.accepted_0rtt())
    }

    /// Whether the server refused the early data (true once): the streams opened in it are
    /// gone, and their requests must be opened again.
    pub fn take_rejected(&mut self) -> bool {
        std::mem::take(&mut self.rejected)
    }

    /// The handshake is done: requests may go.
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// The server's SETTINGS arrived.
    pub fn settings_seen(&self) -> bool {
        self.settings_seen
    }

    /// The server said it is going away: no new request may go on this connection.
    pub fn going_away(&self) -> bool {
        self.going_away.is_some()
    }

    /// The protocol the handshake agreed on by ALPN (`h3`).
    pub fn alpn(&self) -> Option<String> {
        let data = self.quic.conn.crypto_session().handshake_data()?;
        let data = data
            .downcast::<quinn_proto::crypto::rustls::HandshakeData>()
            .ok()?;
        data.protocol
            .map(|p| String::from_utf8_lossy(&p).into_owned())
    }

    /// The bytes of responses read since the last call (their HTTP/3 frames, as HTTP/1.1
    /// counts a response's head and body).
    pub fn take_received(&mut self) -> u64 {
        std::mem::take(&mut self.received)
    }

    /// Whether any request stream was opened.
    pub fn opened_any(&self) -> bool {
        self.opened > 0
    }

    /// While no request stream is open: since when the connection carries none (the last
    /// stream's opening, or the handshake's end).
    pub fn idle_since(&self) -> Option<Instant> {
        self.last_open.filter(|_| self.requests.is_empty())
    }

    /// Request streams open (sent or waiting for their response).
    pub fn open_streams(&self) -> usize {
        self.requests.len()
    }

    /// Opens a request stream carrying `request` (its frames, built once per run); the
    /// stream's number, or `None` when the server allows no more streams now (or is going
    /// away). Its response is read for `checks` (header and body checks: [`Event::Checked`]).
    /// What QUIC cannot take yet goes as the stream becomes writable.
    pub fn open_stream(&mut self, request: &Bytes, checks: Option<&Arc<Checks>>) -> Option<u32> {
        let opts = StreamOpts {
            head: self.head_request,
            checks,
            record: None,
        };
        self.open_stream_with(request, opts)
    }

    /// [`H3Session::open_stream`] for a request of its own kind ([`StreamOpts`]).
    pub fn open_stream_with(&mut self, request: &Bytes, opts: StreamOpts) -> Option<u32> {
        if !(self.connected || self.early) || self.going_away.is_some() {
            return None;
        }
        let id = self.quic.conn.streams().open(Dir::Bi)?;
        let stream = number(id);
        self.opened += 1;
        self.last_open = Some(Instant::now());
        let checks = opts.checks.cloned();
        let watch = match opts.record {
            Some(keep) => checks.map(|c| StreamWatch::recording(c, keep)),
            None => StreamWatch::of(checks),
        };
        let limits = Limits {
            keep_fields: watch.as_ref().is_some_and(|w| w.reads_fields()),
            ..self.limits
        };
        let parser = ResponseParser::new(limits, opts.head);
        self.requests.insert(
            stream,
            Request {
                id,
                parser,
                unsent: Some(request.clone()),
                watch,
            },
        );
        self.write_stream(stream);
        Some(stream)
    }

    /// Gives up on `stream` (a timeout): its send side is reset and its response refused,
    /// both with H3_REQUEST_CANCELLED. False when it was not open.
    pub fn cancel(&mut self, stream: u32) -> bool {
        let Some(r) = self.requests.remove(&stream) else {
            return false;
        };
        self.abort(r.id, Code::RequestCancelled);
        true
    }

    /// Resets stream `id`'s send side and refuses the rest of its response, with `code`.
    fn abort(&mut self, id: StreamId, code: Code) {
        let code = VarInt::from_u64(code.value()).unwrap_or(VarInt::MAX);
        let _ = self.quic.conn.send_stream(id).reset(code);
        let _ = self.quic.conn.recv_stream(id).stop(code);
    }

    /// Handles what the QUIC connection has for the session since the last call (after
    /// datagrams were received or a timer fired), calling `on` for each HTTP event.
    pub fn poll(&mut self, on: &mut impl FnMut(Event)) -> Result<(), SessionError> {
        while let Some(e) = self.quic.conn.poll() {
            match e {
                QuicEvent::Connected => self.on_connected(on),
                QuicEvent::ConnectionLost { reason } => return Err(lost(reason)),
                QuicEvent::Stream(s) => self.on_stream(s, on)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Closes the connection with `code` (H3_NO_ERROR at the end of a run).
    pub fn close(&mut self, code: Code, now: Instant) {
        let code = VarInt::from_u64(code.value()).unwrap_or(VarInt::MAX);
        self.quic.conn.close(now, code, Bytes::new());
    }

    /// The handshake completed: the control stream goes out with SETTINGS, and the connection
    /// takes as many streams as the server's transport parameters allow.
    fn on_connected(&mut self, on: &mut impl FnMut(Event)) {
        self.connected = true;
        self.last_open = Some(Instant::now());
        if self.early && !self.quic.conn.accepted_0rtt() {
            // QUIC forgot every stream opened in 0-RTT (their numbers start again at 0).
            self.rejected = true;
            self.requests.clear();
            self.open_control();
        } else if !self.early {
            self.open_control();
        }
        let max = self.quic.conn.streams().remote_open_streams(Dir::Bi);
        on(Event::Settings {
            max_streams: u32::try_from(max).unwrap_or(u32::MAX),
        });
    }

    /// Opens the client's control stream with its SETTINGS.
    fn open_control(&mut self) {
        if let Some(id) = self.quic.conn.streams().open(Dir::Uni) {
            let mut out = Vec::with_capacity(16);
            self.settings.control_stream(&mut out);
            // A fresh stream's credit takes the few bytes of SETTINGS whole.
            let _ = self.quic.conn.send_stream(id).write(&out);
        }
    }

    fn on_stream(
        &mut self,
        s: StreamEvent,
        on: &mut impl FnMut(Event),
    ) -> Result<(), SessionError> {
        match s {
            StreamEvent::Opened { dir: Dir::Uni } => {
                while let Some(id) = self.quic.conn.streams().accept(Dir::Uni) {
                    self.uni.insert(id, UniStream::default());
                    self.read_uni(id, on)?;
                }
            }
            // The server opens no request streams (its limit is 0): nothing to accept.
            StreamEvent::Opened { dir: Dir::Bi } => {}
            // The server's streams are unidirectional, the requests' bidirectional (a number
            // names a request stream only).
            StreamEvent::Readable { id } if id.dir() == Dir::Uni => self.read_uni(id, on)?,
            StreamEvent::Readable { id } => self.read_request(number(id), on),
            StreamEvent::Writable { id } if id.dir() == Dir::Bi => self.write_stream(number(id)),
            StreamEvent::Stopped { id, error_code } if id.dir() == Dir::Bi => {
                self.stopped(number(id), error_code, on)
            }
            StreamEvent::Writable { .. } | StreamEvent::Stopped { .. } => {}
            StreamEvent::Finished { .. } | StreamEvent::Available { .. } => {}
        }
        Ok(())
    }

    /// Writes what QUIC takes of `stream`'s request, and finishes the stream once all of it
    /// is taken.
    fn write_stream(&mut self, stream: u32) {
        let Some(r) = self.requests.get_mut(&stream) else {
            return;
        };
        let Some(bytes) = r.unsent.take() else {
            return;
        };
        let mut send = self.quic.conn.send_stream(r.id);
        let mut chunks = [bytes];
        let taken = send
            .write_chunks(&mut chunks)
            .map(|w| w.chunks)
            .unwrap_or(0);
        if taken == 1 || chunks[0].is_empty() {
            let _ = send.finish();
        } else {
            let [rest] = chunks;
            r.unsent = Some(rest);
        }
    }

    /// Reads `stream`'s response as far as it came: its head, body and end become events; a
    /// malformed response ends the stream (`Malformed`), a reset is `Reset`.
    fn read_request(&mut self, stream: u32, on: &mut impl FnMut(Event)) {
        let Some(r) = self.requests.get_mut(&stream) else {
            return;
        };
        let mut rs = self.quic.conn.recv_stream(r.id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        let mut outcome = Outcome::Pending;
        loop {
            match chunks.next(READ_CHUNK) {
                Ok(Some(chunk)) => {
                    self.received += chunk.bytes.len() as u64;
                    let Request { parser, watch, .. } = r;
                    let fed = parser.feed(&chunk.bytes, &mut |e| match e {
                        ResponseEvent::Head(h) => {
                            if let Some(w) = watch.as_mut() {
                                watch_fields(w, &h.fields);
                            }
                            on(Event::Head {
                                stream,
                                status: h.status,
                            })
                        }
                        ResponseEvent::Data(d) => {
                            if let Some(w) = watch.as_mut() {
                                w.body(d);
                            }
                            on(Event::Data {
                                stream,
                                len: d.len(),
                            })
                        }
                        ResponseEvent::Interim { .. } | ResponseEvent::Trailers(_) => {}
                    });
                    if let Err(e) = fed {
                        outcome = Outcome::Malformed(e);
                        break;
                    }
                }
                Ok(None) => {
                    outcome = match r.parser.finish() {
                        Ok(()) => Outcome::Ended,
                        Err(e) => Outcome::Malformed(e),
                    };
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    outcome = Outcome::Reset(code.into_inner());
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        if outcome == Outcome::Pending {
            return;
        }
        let (id, watch) = (r.id, r.watch.take());
        self.requests.remove(&stream);
        if let (Outcome::Ended, Some(w)) = (&outcome, watch) {
            let (failed, offered, recorded) = w.finish();
            self.recorded = recorded;
            on(Event::Checked {
                stream,
                failed,
                offered,
            });
        }
        on(match outcome {
            Outcome::Malformed(e) => {
                // A stream error (RFC 9114 §4.1.2): the rest of the response is refused, so
                // what the server goes on sending neither piles up unread nor holds the
                // connection's flow-control window.
                self.abort(id, e.code);
                Event::Malformed {
                    stream,
                    reason: format!("{} ({})", e.why, e.code.name()),
                }
            }
            Outcome::Reset(code) => Event::Reset {
                stream,
                code: u32::try_from(code).unwrap_or(u32::MAX),
            },
            Outcome::Pending | Outcome::Ended => Event::End { stream },
        });
    }

    /// The server asked volley to stop sending `stream`'s request: it will not read the rest
    /// (H3_NO_ERROR with a complete response is allowed; the response decides). A code HTTP/3
    /// does not define counts as H3_NO_ERROR (RFC 9114 §8.1, §9): quinn, for one, sends
    /// STOP_SENDING with 0 when a server drops a request stream it did not read to its end,
    /// as a GET's handler does. Only an HTTP/3 error code ends the request as a reset.
    fn stopped(&mut self, stream: u32, code: VarInt, on: &mut impl FnMut(Event)) {
        if let Some(r) = self.requests.get_mut(&stream) {
            r.unsent = None;
            let error = Code::from_value(code.into_inner()).filter(|c| *c != Code::NoError);
            if error.is_some() {
                self.requests.remove(&stream);
                on(Event::Reset {
                    stream,
                    code: u32::try_from(code.into_inner()).unwrap_or(u32::MAX),
                });
            }
        }
    }

    /// Reads one of the server's unidirectional streams; an error in it ends the connection.
    /// A stream of an unknown type is refused once its type is read (STOP_SENDING with
    /// H3_STREAM_CREATION_ERROR, RFC 9114 §6.2) and a stream that ended is forgotten, so
    /// streams opened without end hold nothing here and free QUIC's stream credit.
    fn read_uni(&mut self, id: StreamId, on: &mut impl FnMut(Event)) -> Result<(), SessionError> {
        let Some(u) = self.uni.get_mut(&id) else {
            return Ok(());
        };
        let mut rs = self.quic.conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return Ok(());
        };
        let mut events = Vec::new();
        let mut result = Ok(());
        let mut ended = false;
        loop {
            match chunks.next(READ_CHUNK) {
                Ok(Some(chunk)) => {
                    if let Err(e) = u.feed(&chunk.bytes, &mut |e| events.push(e)) {
                        result = Err(e);
                        break;
                    }
                    if unknown(u) {
                        break;
                    }
                }
                Ok(None) | Err(ReadError::Reset(_)) => {
                    // A critical stream (control, QPACK) must never end (RFC 9114 §6.2.1).
                    result = u.finish();
                    ended = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let refused = unknown(u) && !ended;
        let _ = chunks.finalize();
        if refused || ended {
            self.uni.remove(&id);
        }
        if refused {
            let code = VarInt::from_u64(Code::StreamCreationError.value()).unwrap_or(VarInt::MAX);
            let _ = self.quic.conn.recv_stream(id).stop(code);
        }
        for e in events {
            self.on_uni_event(e, on).map_err(SessionError::Protocol)?;
        }
        result.map_err(|e| self.fail(e))
    }

    fn on_uni_event(&mut self, e: UniEvent, on: &mut impl FnMut(Event)) -> Result<(), H3Error> {
        match e {
            UniEvent::Opened(kind) => self.peer.opened(kind)?,
            UniEvent::Settings(_) => self.settings_seen = true,
            UniEvent::GoAway(id) => {
                // From a server, the ID of a client's request stream (RFC 9114 §5.2).
                if id % 4 != 0 {
                    return Err(super::error::fail(
                        Code::IdError,
                        format!("GOAWAY names stream {id}, not a request stream"),
                    ));
                }
                self.going_away = Some(id);
                // Streams from `id` on were not processed: they may go again elsewhere. Our
                // stream numbers are the index + 1, so the last processed one is `id / 4`.
                on(Event::GoAway {
                    last_stream: u32::try_from(id / 4).unwrap_or(u32::MAX),
                    code: 0,
                });
            }
        }
        Ok(())
    }

    /// Closes the connection with the error's code; the error, for the caller.
    fn fail(&mut self, e: H3Error) -> SessionError {
        self.close(e.code, Instant::now());
        SessionError::Protocol(e)
    }
}

impl std::fmt::Debug for H3Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Session")
            .field("connected", &self.connected)
            .field("open_streams", &self.requests.len())
            .finish_non_exhaustive()
    }
}

impl Drop for H3Session {
    /// Tells the server the connection is over (CONNECTION_CLOSE with H3_NO_ERROR), best
    /// effort, before the socket closes.
    fn drop(&mut self) {
        let now = Instant::now();
        if !self.quic.conn.is_closed() {
            self.close(Code::NoError, now);
            let _ = self.quic.transmit(now);
        }
    }
}

/// Whether `u` is of a type volley does not read (its bytes are discarded).
fn unknown(u: &UniStream) -> bool {
    matches!(u.kind(), Some(UniKind::Unknown(_)))
}

/// What the QUIC connection's end means: the server's CONNECTION_CLOSE with an error code is
/// [`SessionError::Closed`]; one without (H3_NO_ERROR, NO_ERROR), an idle timeout or the
/// handshake's failure is [`SessionError::Lost`].
fn lost(reason: ConnectionError) -> SessionError {
    let said = |why: &[u8]| {
        let why: String = String::from_utf8_lossy(why).chars().take(120).collect();
        if why.is_empty() {
            String::new()
        } else {
            format!(" ({why:?})")
        }
    };
    match &reason {
        ConnectionError::ApplicationClosed(c)
            if c.error_code.into_inner() != Code::NoError.value() =>
        {
            let code = c.error_code.into_inner();
            let name = Code::from_value(code)
                .map_or_else(|| format!("0x{code:x}"), |c| c.name().to_string());
            SessionError::Closed(format!("{name}{}", said(&c.reason)))
        }
        ConnectionError::ConnectionClosed(c) if c.error_code != TransportErrorCode::NO_ERROR => {
            SessionError::Closed(format!("QUIC's {:?}{}", c.error_code, said(&c.reason)))
        }
        _ => SessionError::Lost(reason.to_string()),
    }
}

/// A request stream's number in the events: its index among the client's bidirectional
/// streams, from 1 (0 is "no stream" in a request's bookkeeping).
fn number(id: StreamId) -> u32 {
    u32::try_from(id.index() + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;

/// The final head's fields, to a stream's checks (names are lowercase ASCII in HTTP/3).
fn watch_fields(w: &mut StreamWatch, fields: &[(Vec<u8>, Vec<u8>)]) {
    for (name, value) in fields {
        if let Ok(name) = std::str::from_utf8(name) {
            w.field(name, value);
        }
    }
}
