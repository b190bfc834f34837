//! One HTTP/2 connection as a client sees it, sans-IO: bytes from the server go in
//! ([`H2Conn::feed`]) and come out as events (a response head, body bytes, a stream's end, a
//! reset, GOAWAY, the server's stream limit); what the client must send (the preface, its
//! SETTINGS, acknowledgements, window updates, requests) collects in [`H2Conn::out`] for the
//! caller to write. Flow control: the client opens its receive windows wide (2^31 − 1, as
//! h2load does; small default windows halve HTTP/2 throughput) and tops up the connection's
//! window when half of it is used; request bodies respect the server's windows and wait for
//! its WINDOW_UPDATEs.

use std::sync::Arc;

use loona_hpack::Decoder;

use super::frame::{self, flags, setting, Header, Kind, HEADER_LEN};

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

/// The receive window the client announces, per stream and for the connection.
pub const RECEIVE_WINDOW: u32 = frame::MAX_WINDOW;

/// A request body waiting for flow-control window.
#[derive(Debug)]
struct Pending {
    stream: u32,
    sent: usize,
    window: i64,
}

/// One connection's HTTP/2 state.
pub struct H2Conn {
    /// Bytes to write to the server, in order; the caller drains what the socket took.
    pub out: Vec<u8>,
    inbuf: Vec<u8>,
    decoder: Decoder<'static>,
    /// The request body every stream of the run sends (empty without one).
    body: Arc<[u8]>,
    max_streams: u32,
    max_frame: usize,
    peer_initial_window: i64,
    send_window: i64,
    recv_unacked: u64,
    /// Received bytes after which the connection's window is topped up.
    update_at: u64,
    next_stream: u32,
    open: Vec<u32>,
    /// A header block being assembled from HEADERS and CONTINUATION: (stream, end stream).
    block_of: Option<(u32, bool)>,
    block: Vec<u8>,
    pending: Vec<Pending>,
    goaway: bool,
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

impl H2Conn {
    /// A new connection that will send `body` with every request; the preface and the
    /// client's SETTINGS are queued in [`H2Conn::out`] (send them before anything else).
    pub fn new(body: Arc<[u8]>) -> H2Conn {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, RECEIVE_WINDOW),
            ],
        );
        frame::window_update(&mut out, 0, RECEIVE_WINDOW - frame::DEFAULT_WINDOW);
        H2Conn {
            out,
            inbuf: Vec::new(),
            decoder: Decoder::new(),
            body,
            max_streams: u32::MAX,
            max_frame: frame::DEFAULT_MAX_FRAME as usize,
            peer_initial_window: i64::from(frame::DEFAULT_WINDOW),
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_unacked: 0,
            update_at: u64::from(RECEIVE_WINDOW / 2),
            next_stream: 1,
            open: Vec::new(),
            block_of: None,
            block: Vec::new(),
            pending: Vec::new(),
            goaway: false,
        }
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.open.len()
    }

    /// The server's limit on open streams (`u32::MAX` until it says).
    pub fn max_streams(&self) -> u32 {
        self.max_streams
    }

    /// Whether another stream may be opened: under the server's limit, before GOAWAY, and
    /// with stream ids left.
    pub fn can_open(&self) -> bool {
        !self.goaway
            && (self.open.len() as u64) < u64::from(self.max_streams)
            && self.next_stream < frame::MAX_WINDOW
    }

    /// Opens a stream with the request header `block` (see [`super::request`]) and the
    /// connection's body; returns its id.
    pub fn open_stream(&mut self, block: &[u8]) -> u32 {
        let stream = self.next_stream;
        self.next_stream += 2;
        self.open.push(stream);
        let no_body = self.body.is_empty();
        let mut chunks = block.chunks(self.max_frame).peekable();
        let first = chunks.next().unwrap_or(&[]);
        let mut fl = if no_body { flags::END_STREAM } else { 0 };
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
        if !no_body {
            self.pending.push(Pending {
                stream,
                sent: 0,
                window: self.peer_initial_window,
            });
            self.send_bodies();
        }
        stream
    }

    /// Writes as much of the waiting request bodies as the windows allow.
    fn send_bodies(&mut self) {
        let body = Arc::clone(&self.body);
        let mut i = 0;
        while i < self.pending.len() {
            let p = &mut self.pending[i];
            while p.sent < body.len() && self.send_window > 0 && p.window > 0 {
                let n = (body.len() - p.sent)
                    .min(self.max_frame)
                    .min(self.send_window as usize)
                    .min(p.window as usize);
                let end = if p.sent + n == body.len() {
                    flags::END_STREAM
                } else {
                    0
                };
                let chunk = &body[p.sent..p.sent + n];
                frame::write(&mut self.out, Kind::Data, end, p.stream, chunk);
                p.sent += n;
                p.window -= n as i64;
                self.send_window -= n as i64;
            }
            if p.sent == body.len() {
                self.pending.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Takes `data` from the server and reports what it means to `on`, in order.
    pub fn feed(&mut self, data: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        if self.inbuf.is_empty() {
            let used = self.frames(data, on)?;
            self.inbuf.extend_from_slice(&data[used..]);
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.inbuf);
        buf.extend_from_slice(data);
        let used = self.frames(&buf, on);
        let used = used?;
        buf.drain(..used);
        self.inbuf = buf;
        Ok(())
    }

    /// Handles every whole frame at the start of `data`; returns the bytes used.
    fn frames(&mut self, data: &[u8], on: &mut impl FnMut(Event)) -> Result<usize, H2Error> {
        let mut off = 0;
        while data.len() - off >= HEADER_LEN {
            let h = Header::parse(&data[off..]);
            if h.len as usize > frame::DEFAULT_MAX_FRAME as usize {
                return Err(H2Error(format!(
                    "a {:?} frame of {} bytes, over the 16,384 this client accepts (FRAME_SIZE_ERROR)",
                    h.kind, h.len
                )));
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

    fn frame(&mut self, h: Header, p: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        if self.block_of.is_some() && h.kind != Kind::Continuation {
            return Err(H2Error(format!(
                "a {:?} frame inside a header block (PROTOCOL_ERROR)",
                h.kind
            )));
        }
        match h.kind {
            Kind::Data => self.data(h, p, on),
            Kind::Headers => self.headers(h, p, on),
            Kind::Continuation => self.continuation(h, p, on),
            Kind::Settings => self.settings(h, p, on),
            Kind::Ping => {
                if !h.has(flags::ACK) {
                    frame::write(&mut self.out, Kind::Ping, flags::ACK, 0, p);
                }
                Ok(())
            }
            Kind::RstStream => {
                let code = u32_at(p, 0).ok_or_else(|| H2Error("a short RST_STREAM".into()))?;
                if self.close(h.stream) {
                    on(Event::Reset {
                        stream: h.stream,
                        code,
                    });
                }
                Ok(())
            }
            Kind::GoAway => {
                let last = u32_at(p, 0).ok_or_else(|| H2Error("a short GOAWAY".into()))?;
                let code = u32_at(p, 4).unwrap_or(0);
                self.goaway = true;
                on(Event::GoAway {
                    last_stream: last & frame::MAX_WINDOW,
                    code,
                });
                Ok(())
            }
            Kind::WindowUpdate => self.window_update(h, p),
            Kind::PushPromise => Err(H2Error(
                "the server pushed a stream although push was disabled (PROTOCOL_ERROR)".into(),
            )),
            Kind::Priority | Kind::Unknown(_) => Ok(()),
        }
    }

    fn data(&mut self, h: Header, p: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        // Padding counts against the windows too.
        self.recv_unacked += p.len() as u64;
        if self.recv_unacked >= self.update_at {
            frame::window_update(&mut self.out, 0, self.recv_unacked as u32);
            self.recv_unacked = 0;
        }
        let body = unpad(h, p)?;
        if !self.open.contains(&h.stream) {
            // A stream this client already reset or never opened: its bytes are ignored.
            return Ok(());
        }
        if !body.is_empty() {
            on(Event::Data {
                stream: h.stream,
                len: body.len(),
            });
        }
        if h.has(flags::END_STREAM) && self.close(h.stream) {
            on(Event::End { stream: h.stream });
        }
        Ok(())
    }

    fn headers(&mut self, h: Header, p: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        let mut frag = unpad(h, p)?;
        if h.has(flags::PRIORITY) {
            frag = frag
                .get(5..)
                .ok_or_else(|| H2Error("a HEADERS frame too short for its priority".into()))?;
        }
        self.block.clear();
        self.block.extend_from_slice(frag);
        self.block_of = Some((h.stream, h.has(flags::END_STREAM)));
        if h.has(flags::END_HEADERS) {
            self.end_block(on)?;
        }
        Ok(())
    }

    fn continuation(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        match self.block_of {
            Some((stream, _)) if stream == h.stream => {}
            _ => {
                return Err(H2Error(
                    "a CONTINUATION frame that continues no header block (PROTOCOL_ERROR)".into(),
                ))
            }
        }
        self.block.extend_from_slice(p);
        if self.block.len() > 1 << 20 {
            return Err(H2Error("a header block over 1 MiB".into()));
        }
        if h.has(flags::END_HEADERS) {
            self.end_block(on)?;
        }
        Ok(())
    }

    /// A whole header block: decoded (always, to keep the table in step with the server's).
    fn end_block(&mut self, on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        let Some((stream, end_stream)) = self.block_of.take() else {
            return Ok(());
        };
        let mut status: Option<Result<u16, ()>> = None;
        self.decoder
            .decode_with_cb(&self.block, |name, value| {
                if &name[..] == b":status" {
                    status = Some(
                        std::str::from_utf8(&value)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .ok_or(()),
                    );
                }
            })
            .map_err(|e| {
                H2Error(format!(
                    "the server's header block does not decode ({e:?}, COMPRESSION_ERROR)"
                ))
            })?;
        if !self.open.contains(&stream) {
            return Ok(());
        }
        match status {
            Some(Ok(s)) if (100..200).contains(&s) => {}
            Some(Ok(s)) => on(Event::Head { stream, status: s }),
            Some(Err(())) => return Err(H2Error("a response with an invalid :status".into())),
            None => {} // trailers
        }
        if end_stream && self.close(stream) {
            on(Event::End { stream });
        }
        Ok(())
    }

    fn settings(&mut self, h: Header, p: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        if h.has(flags::ACK) {
            return Ok(());
        }
        if p.len() % 6 != 0 {
            return Err(H2Error(
                "a SETTINGS frame whose length is not a multiple of 6".into(),
            ));
        }
        for s in p.chunks(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                setting::MAX_CONCURRENT_STREAMS => self.max_streams = v,
                setting::INITIAL_WINDOW_SIZE => {
                    let delta = i64::from(v) - self.peer_initial_window;
                    self.peer_initial_window = i64::from(v);
                    for p in &mut self.pending {
                        p.window += delta;
                    }
                }
                setting::MAX_FRAME_SIZE => self.max_frame = v.clamp(16_384, (1 << 24) - 1) as usize,
                _ => {}
            }
        }
        frame::write(&mut self.out, Kind::Settings, flags::ACK, 0, &[]);
        on(Event::Settings {
            max_streams: self.max_streams,
        });
        self.send_bodies();
        Ok(())
    }

    fn window_update(&mut self, h: Header, p: &[u8]) -> Result<(), H2Error> {
        let inc = i64::from(
            u32_at(p, 0).ok_or_else(|| H2Error("a short WINDOW_UPDATE".into()))?
                & frame::MAX_WINDOW,
        );
        if h.stream == 0 {
            self.send_window += inc;
        } else if let Some(p) = self.pending.iter_mut().find(|p| p.stream == h.stream) {
            p.window += inc;
        }
        self.send_bodies();
        Ok(())
    }

    /// Forgets an open stream; false when it was not open.
    fn close(&mut self, stream: u32) -> bool {
        match self.open.iter().position(|s| *s == stream) {
            Some(i) => {
                self.open.swap_remove(i);
                self.pending.retain(|p| p.stream != stream);
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
    let pad = *p
        .first()
        .ok_or_else(|| H2Error("a padded frame without its pad length".into()))?
        as usize;
    p.get(1..p.len().saturating_sub(pad))
        .filter(|_| pad < p.len())
        .ok_or_else(|| H2Error("padding longer than the frame (PROTOCOL_ERROR)".into()))
}

fn u32_at(p: &[u8], at: usize) -> Option<u32> {
    p.get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests;
