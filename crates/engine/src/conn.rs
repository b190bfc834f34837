//! One connection's state: the socket, the requests in flight on it (a sliding window of at
//! most `--pipeline`, or HTTP/2 or HTTP/3 streams), how far their bytes are written, and the
//! response parser (HTTP/1.1) or the HTTP/2 or HTTP/3 session.

use std::collections::VecDeque;

use super::h2::conn::H2Conn;
use super::h3::session::H3Session;
use super::response::ResponseParser;
use super::stream::Stream;
pub use volley_model::stats::recorder::Phase;

/// A request from the moment it is taken from the schedule until it ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlight {
    /// Latency origin: the due time (open loop) or the moment it was taken (closed loop).
    pub start_ns: u64,
    /// When its first byte was written on the current connection (0: not yet).
    pub write_ns: u64,
    /// Offset of its first byte in the connection's request stream.
    pub stream_pos: u64,
    /// When it was both due and had a free connection: the origin of the schedule lag.
    pub lag_origin_ns: u64,
    /// Its phase.
    pub phase: Phase,
    /// Already counted as sent (a resend is not counted twice).
    pub sent_counted: bool,
    /// Already resent once after a silent close.
    pub resent: bool,
    /// HTTP/2: its stream (0: not opened yet; always 0 on HTTP/1.1).
    pub stream: u32,
    /// HTTP/2: the status of its response head, once it arrived (0: not yet).
    pub status: u16,
    /// `--requests-file`: its request in the workload ([`NO_ENTRY`] until a connection takes
    /// it; kept when it goes again, so a resend is the same request). `u32`: a file may hold
    /// more than 65,535 requests.
    pub entry: u32,
    /// The request's index in the run (`{seq}`; the weighted mix's turn).
    pub index: u64,
    /// HTTP/2: its response's body bytes so far (`--expect-size`).
    pub body_bytes: u64,
    /// HTTP/2: the header and body checks its response failed (`check::FAILED_*` bits).
    pub content_failed: u8,
    /// A journey's user who sends it ([`crate::journey::users::NO_USER`] outside one).
    pub user: u32,
}

/// An `InFlight` whose workload request is not chosen yet (or a run without a workload).
pub(crate) const NO_ENTRY: u32 = u32::MAX;

impl InFlight {
    /// A request taken at `start_ns`.
    pub fn new(start_ns: u64, phase: Phase) -> Self {
        InFlight {
            start_ns,
            write_ns: 0,
            stream_pos: 0,
            lag_origin_ns: start_ns,
            phase,
            sent_counted: false,
            resent: false,
            stream: 0,
            status: 0,
            entry: NO_ENTRY,
            index: 0,
            body_bytes: 0,
            content_failed: 0,
            user: crate::journey::users::NO_USER,
        }
    }
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnState {
    /// No socket; may connect now.
    Closed,
    /// No socket; waits until this time after failed connects.
    Backoff {
        /// Run-clock ns when it may try again.
        until_ns: u64,
    },
    /// A non-blocking connect is in progress, then (through a proxy) its `CONNECT`, then (TLS)
    /// the handshake.
    Connecting {
        /// When the connect started.
        since_ns: u64,
        /// When the TLS handshake began: the socket connected, or the tunnel opened (0: not
        /// yet).
        tcp_ns: u64,
        /// When the `CONNECT` was written, while its answer is awaited (0: none awaited).
        tunnel_ns: u64,
        /// `ws://`, `wss://`: when the upgrade request was written, while its answer is
        /// awaited (0: none awaited).
        upgrade_ns: u64,
    },
    /// Connected.
    Open,
}

/// One connection slot, owned by one worker for the whole run.
#[derive(Debug)]
pub(crate) struct Conn {
    /// The socket (with TLS, when the run has it) while there is one.
    pub stream: Option<Stream>,
    /// Life-cycle state.
    pub state: ConnState,
    /// Requests on this connection, oldest first.
    pub inflight: VecDeque<InFlight>,
    /// Response parser (keeps only an incomplete head).
    pub parser: ResponseParser,
    /// Bytes of the request stream written so far on this socket.
    pub write_pos: u64,
    /// Bytes of the request stream queued so far on this socket.
    pub write_end: u64,
    /// Complete responses on this socket (a silent close after one allows a resend).
    pub responses: u64,
    /// Consecutive connections that failed before any response: connects that failed, and
    /// connections that ended without answering (for the back-off).
    pub connect_failures: u32,
    /// Fresh connections in a row on which the server spoke before any request.
    pub unsolicited_streak: u32,
    /// Ever connected during the run (for the warning about connections that never opened).
    pub ever_connected: bool,
    /// Listed in the worker's free list.
    pub in_free: bool,
    /// Listed in the worker's list of connections to write.
    pub flush_pending: bool,
    /// Run-clock ns before which this connection's user is thinking (`--think-time`).
    pub ready_ns: u64,
    /// When the socket last became ready for requests (run-clock ns).
    pub opened_ns: u64,
    /// HTTP/2: when bytes last arrived (a connection silent for `--timeout` times out whole).
    pub last_read_ns: u64,
    /// The HTTP/2 session, when the connection speaks HTTP/2 (boxed: most of a run's
    /// connections are HTTP/1.1 ones or none at all, and the slot stays small).
    pub h2: Option<Box<H2Conn>>,
    /// HTTP/3: the session, with its QUIC connection and UDP socket (in place of `stream`).
    pub h3: Option<Box<H3Session>>,
    /// HTTP/2 and HTTP/3: requests at the back of `inflight` waiting for a stream (not opened
    /// yet).
    pub h2_queued: usize,
    /// `--requests-file` on HTTP/1.1: the bytes of the requests queued on this socket and
    /// not yet written (each request is rendered when the connection takes it; a run of one
    /// request writes from the shared repeated template instead).
    pub out: Vec<u8>,
    /// Bytes at the front of `out` already written.
    pub out_sent: usize,
    /// Requests this connection has taken in its sequence (`sequence` workloads).
    pub walked: u64,
    /// The checks of the response being parsed (made on the first checked response).
    pub check: Option<Box<super::check::CheckState>>,
    /// `ws://`, `wss://`: the WebSocket (from the upgrade request on).
    pub ws: Option<Box<super::ws::WsConn>>,
}

impl Conn {
    /// An unconnected slot.
    pub fn new(head_request: bool, pipeline: usize) -> Self {
        Conn {
            stream: None,
            state: ConnState::Closed,
            inflight: VecDeque::with_capacity(pipeline),
            parser: ResponseParser::new(head_request),
            write_pos: 0,
            write_end: 0,
            responses: 0,
            connect_failures: 0,
            unsolicited_streak: 0,
            ever_connected: false,
            in_free: false,
            flush_pending: false,
            ready_ns: 0,
            opened_ns: 0,
            last_read_ns: 0,
            h2: None,
            h3: None,
            h2_queued: 0,
            out: Vec::new(),
            out_sent: 0,
            walked: 0,
            check: None,
            ws: None,
        }
    }

    /// How many requests the connection may hold now: the pipeline window on HTTP/1.1; on
    /// HTTP/2 `streams` capped by the server's limit, none after its GOAWAY.
    #[inline]
    pub fn capacity(&self, pipeline: usize, streams: usize) -> usize {
        if let Some(h3) = &self.h3 {
            return if h3.going_away() { 0 } else { streams };
        }
        match &self.h2 {
            None => pipeline,
            Some(h) if h.going_away() => 0,
            // A WebSocket over HTTP/2: one stream, its messages in flight the pipeline's.
            Some(_) if self.ws.is_some() => pipeline,
            Some(h) => streams.min(h.max_streams() as usize),
        }
    }

    /// Whether requests go as streams of a session (HTTP/2 or HTTP/3) rather than one after
    /// another on the socket.
    #[inline]
    pub(crate) fn multiplexed(&self) -> bool {
        self.h2.is_some() || self.h3.is_some()
    }

    /// The session's server said it is going away (GOAWAY).
    pub(crate) fn going_away(&self) -> bool {
        self.h2.as_ref().is_some_and(|h| h.going_away())
            || self.h3.as_ref().is_some_and(|h| h.going_away())
    }

    /// A request was written on the session (HTTP/3: a stream was opened).
    pub(crate) fn request_written(&self) -> bool {
        self.h2.as_ref().is_some_and(|h| h.request_written())
            || self.h3.as_ref().is_some_and(|h| h.opened_any())
    }

    /// The connection now speaks a session (HTTP/2 or HTTP/3) whose own bytes start with
    /// `preface` bytes: the requests already queued on it wait for streams instead of the
    /// HTTP/1.1 bytes rendered for them.
    pub(crate) fn queue_as_streams(&mut self, preface: usize) {
        for r in self.inflight.iter_mut() {
            r.stream = 0;
            r.stream_pos = u64::MAX;
        }
        self.h2_queued = self.inflight.len();
        self.out.clear();
        self.out_sent = 0;
        self.write_end = self.write_pos + preface as u64;
    }

    /// Gives up on a session's stream (a timeout).
    pub(crate) fn cancel_stream(&mut self, stream: u32) {
        if let Some(h2) = self.h2.as_mut() {
            h2.cancel(stream);
        }
        if let Some(h3) = self.h3.as_mut() {
            h3.cancel(stream);
        }
    }

    /// Drops the socket and everything tied to it (the in-flight list is the caller's to drain).
    pub(crate) fn reset_socket(&mut self) {
        self.stream = None;
        self.parser.reset();
        self.write_pos = 0;
        self.write_end = 0;
        self.responses = 0;
        self.h2 = None;
        // Its drop tells the server (CONNECTION_CLOSE) and closes the UDP socket.
        self.h3 = None;
        self.h2_queued = 0;
        self.out.clear();
        self.out_sent = 0;
        self.ws = None;
    }

    /// Drops the last request's bytes from `out` (it leaves the connection before any of it
    /// was written), the stream ending where that request began.
    pub(crate) fn unqueue_last(&mut self, stream_pos: u64) {
        if self.write_end > stream_pos && !self.out.is_empty() {
            let base = self.write_pos - self.out_sent as u64;
            self.out.truncate((stream_pos - base) as usize);
        }
        self.write_end = stream_pos;
    }

    /// Back-off after `failures` consecutive failed connections: 1 ms doubling to 100 ms, so
    /// a refused port, or a server that closes before answering, is retried steadily rather
    /// than flooded.
    pub(crate) fn backoff_ns(failures: u32) -> u64 {
        let ms = 1u64 << failures.saturating_sub(1).min(7);
        ms.min(100) * 1_000_000
    }
}
