//! The HTTP/3 side of a worker (`--http3`): each connection is a QUIC connection on a UDP
//! socket of its own ([`H3Session`]), registered with the worker's poller like a TCP socket.
//! The session's events are HTTP/2's, so `worker/h2.rs` completes, fails and retries requests
//! the same way; this file connects, opens a stream per request, moves datagrams and fires
//! QUIC's timers (docs/contract.md, "HTTP/3").

use std::time::Instant;

use mio::unix::SourceFd;
use mio::Interest;

use super::failure::error_kind;
use super::journey;
use super::*;
use crate::h3::response::Limits;
use crate::h3::session::{H3Session, SessionError, StreamOpts};
use crate::quic::conn::{QuicConn, READ_BUDGET};

impl Worker {
    /// Starts a QUIC connection for slot `i`: its handshake's first packet goes at once.
    pub(super) fn connect_h3(&mut self, i: usize, now: u64) {
        let (Some(client), Some(ep), Endpoint::Tcp(addr)) = (
            self.shared.quic.as_ref(),
            self.quic_ep.as_mut(),
            &self.shared.endpoint,
        ) else {
            return;
        };
        let quic = match QuicConn::connect(ep, client, *addr, self.source, Instant::now()) {
            Ok(q) => q,
            Err(e) => return self.connect_failed(i, now, e),
        };
        let fd = quic.fd();
        // Readable only: writability is watched while a datagram waits ([`Worker::transmit_h3`]).
        if let Err(e) =
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), Token(i), Interest::READABLE)
        {
            return self.connect_failed(i, now, e);
        }
        let head = self.shared.template.is_head();
        let c = &mut self.conns[i];
        let h3 = H3Session::new(quic, head, Limits::default());
        let early = h3.early();
        c.h3 = Some(Box::new(h3));
        c.state = ConnState::Connecting {
            since_ns: now,
            tcp_ns: now.max(1),
            tunnel_ns: 0,
            upgrade_ns: 0,
        };
        if early {
            // 0-RTT: the requests waiting for this connection go with the handshake.
            c.queue_as_streams(0);
        }
        self.write_h3(i, now);
    }

    /// Datagrams arrived on connection `i`: QUIC takes them, then the session's events.
    pub(super) fn on_h3_readable(&mut self, i: usize) {
        let now = self.shared.clock.now_ns();
        let (Some(ep), Some(h3)) = (self.quic_ep.as_mut(), self.conns[i].h3.as_mut()) else {
            return;
        };
        match h3.quic.receive(ep, &mut self.read_buf, Instant::now()) {
            Err(e) => {
                self.h3_lost(i, error_kind(&e), e.to_string(), now);
                return;
            }
            // Datagrams may be left in the socket, and the poller (edge-triggered) will not
            // say so: read again after the next wait, as a TCP read that stopped at its budget.
            Ok(n) if n >= READ_BUDGET && !self.unread.contains(&i) => self.unread.push(i),
            Ok(_) => {}
        }
        self.conns[i].last_read_ns = now;
        self.h3_events(i, now);
        self.h3_note_timer(i);
    }

    /// Fires the QUIC timers that are due (loss detection, acknowledgements, idle). The
    /// connections are looked over only once the earliest deadline noted has passed
    /// ([`Worker::h3_note_timer`]), and the earliest one is then taken afresh from all.
    pub(super) fn h3_timers(&mut self, now: u64) {
        let at = Instant::now();
        if self.h3_next.is_none_or(|t| t > at) {
            return;
        }
        let Some(ep) = self.quic_ep.as_mut() else {
            return;
        };
        let (mut due, mut next) = (Vec::new(), None::<Instant>);
        for (i, c) in self.conns.iter_mut().enumerate() {
            let Some(h3) = c.h3.as_mut() else { continue };
            match h3.quic.timeout() {
                Some(t) if t <= at => {
                    h3.quic.on_timeout(ep, at);
                    due.push(i);
                }
                Some(t) => next = Some(next.map_or(t, |n| n.min(t))),
                None => {}
            }
        }
        self.h3_next = next;
        for i in due {
            self.h3_events(i, now);
        }
        // What the timers made (a retransmission, an acknowledgement) goes now: the turn's
        // flush is over.
        self.flush(now);
    }

    /// Connection `i` was just driven (its timers may have moved): its next deadline, if
    /// earlier than the one noted, becomes the worker's. A deadline pushed later leaves the
    /// noted one early, which costs one look over the connections when it passes.
    fn h3_note_timer(&mut self, i: usize) {
        let Some(t) = self.conns[i].h3.as_mut().and_then(|h| h.quic.timeout()) else {
            return;
        };
        if self.h3_next.is_none_or(|n| t < n) {
            self.h3_next = Some(t);
        }
    }

    /// How long until the first QUIC timer of this worker's connections, ns.
    pub(super) fn h3_timeout_ns(&self) -> Option<u64> {
        let t = self.h3_next?;
        Some(t.saturating_duration_since(Instant::now()).as_nanos() as u64)
    }

    /// The session's events since the last look; the connection is then flushed (with the
    /// turn's new requests).
    fn h3_events(&mut self, i: usize, now: u64) {
        let mut events = std::mem::take(&mut self.h2_events);
        let Some(h3) = self.conns[i].h3.as_mut() else {
            return;
        };
        let polled = h3.poll(&mut |e| events.push(e));
        let received = h3.take_received();
        let now = self.shared.clock.now_ns().max(now);
        let phase = self.phase();
        self.rec.counters_for(phase, now).bytes_received += received;
        let mut alive = true;
        for e in events.drain(..) {
            if !alive {
                break;
            }
            alive = match e {
                Event::Settings { .. } => self.h3_connected(i, now),
                e => self.on_h2_event(i, e, now),
            };
        }
        self.h2_events = events;
        if !alive {
            return;
        }
        if let Err(e) = polled {
            let kind = match e {
                SessionError::Protocol(_) | SessionError::Closed(_) => ErrorKind::Protocol,
                SessionError::Lost(_) => ErrorKind::Closed,
            };
            self.h3_lost(i, kind, e.to_string(), now);
            return;
        }
        // What QUIC has to send (acknowledgements, flow control) goes with the requests the
        // next dispatch puts on this connection, in one packet, as HTTP/2's frames do.
        self.flush_soon(i);
    }

    /// The handshake is done: the connection opens and its requests take streams (again,
    /// when the server refused the early data they went in).
    fn h3_connected(&mut self, i: usize, now: u64) -> bool {
        let c = &mut self.conns[i];
        let (ConnState::Connecting { tcp_ns, .. }, Some(h3)) = (c.state, c.h3.as_mut()) else {
            return true;
        };
        let (alpn, resumed, zero_rtt) = (h3.alpn(), h3.quic.resumed(), h3.zero_rtt());
        let again = h3.take_rejected() || zero_rtt.is_none();
        self.transport
            .handshake_done(ns_to_us(now.saturating_sub(tcp_ns)), resumed, || {
                volley_model::stats::transport::TlsSeen {
                    version: Some("TLSv1.3".into()),
                    cipher: None,
                    alpn,
                }
            });
        self.transport.h3_connections += 1;
        if let Some(accepted) = zero_rtt {
            self.transport.zero_rtt_offered += 1;
            self.transport.zero_rtt_accepted += u64::from(accepted);
        }
        if again {
            self.conns[i].queue_as_streams(0);
        }
        self.opened(i, now, false);
        true
    }

    /// Opens a stream for each request waiting on connection `i`, as far as the server
    /// allows, then sends what QUIC has. The requests count as written as their streams
    /// open (their bytes are QUIC's to deliver from then on).
    pub(super) fn write_h3(&mut self, i: usize, now: u64) {
        let c = &self.conns[i];
        let early = c.h3.as_ref().is_some_and(|h| h.early());
        if c.state == ConnState::Open || early {
            let n = if self.shared.mix.is_some() {
                self.open_mix_h3(i)
            } else {
                self.open_h3(i)
            };
            if n > 0 {
                self.conns[i].write_end += n;
                self.wrote(i, n as usize, now);
            }
        }
        self.transmit_h3(i, now);
    }

    /// Opens streams with the run's request for the requests waiting on connection `i`; the
    /// bytes they carry.
    fn open_h3(&mut self, i: usize) -> u64 {
        let request = &self.shared.h3_request;
        let checks = &self.shared.checks;
        let c = &mut self.conns[i];
        let Some(h3) = c.h3.as_mut() else { return 0 };
        let mut n = 0u64;
        while c.h2_queued > 0 {
            let Some(stream) = h3.open_stream(request, checks.as_ref()) else {
                break;
            };
            let at = c.inflight.len() - c.h2_queued;
            let r = &mut c.inflight[at];
            r.stream = stream;
            r.stream_pos = c.write_end + n;
            c.h2_queued -= 1;
            n += request.len() as u64;
        }
        n
    }

    /// `--requests-file`: each waiting request opens its stream with its own frames (its
    /// field section and body rendered for it; QPACK's static table and literals, as the run's
    /// request); the bytes they carry.
    fn open_mix_h3(&mut self, i: usize) -> u64 {
        let Some(mix) = self.shared.mix.clone() else {
            return 0;
        };
        let mut n = 0u64;
        loop {
            let c = &self.conns[i];
            if c.h2_queued == 0 || c.h3.is_none() {
                return n;
            }
            let at = c.inflight.len() - c.h2_queued;
            let req = c.inflight[at];
            let r = &mix.requests[req.entry as usize];
            let frames = match self.shared.h3_mix[req.entry as usize].clone() {
                Some(fixed) => fixed,
                None => {
                    self.journey_cookie(i, &req);
                    let ids = (self.id, self.shared.threads);
                    let users = self.users.as_ref();
                    let ctx = journey::context_for(ids, &mix, i, &req, users, &self.cookie_buf);
                    crate::h3::request::frames_for_mix(r, &ctx, &r.body_for(&ctx))
                }
            };
            let c = &mut self.conns[i];
            let h3 = c.h3.as_mut().expect("checked above");
            let opts = StreamOpts {
                head: r.head_request,
                checks: r.checks.as_ref(),
                record: None,
            };
            let Some(stream) = h3.open_stream_with(&frames, opts) else {
                return n;
            };
            let r = &mut c.inflight[at];
            r.stream = stream;
            r.stream_pos = c.write_end + n;
            c.h2_queued -= 1;
            n += frames.len() as u64;
        }
    }

    /// Sends what connection `i`'s QUIC has to send (the rest when the socket is writable:
    /// the poller watches for that only while the socket is full).
    pub(super) fn transmit_h3(&mut self, i: usize, now: u64) {
        let Some(h3) = self.conns[i].h3.as_mut() else {
            return;
        };
        let watched = match h3.quic.transmit(Instant::now()) {
            Ok(sent_all) if sent_all == h3.quic.watch_writable => {
                h3.quic.watch_writable = !sent_all;
                let mut interest = Interest::READABLE;
                if !sent_all {
                    interest |= Interest::WRITABLE;
                }
                let fd = h3.quic.fd();
                self.poll
                    .registry()
                    .reregister(&mut SourceFd(&fd), Token(i), interest)
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        match watched {
            Ok(()) => self.h3_note_timer(i),
            Err(e) => self.h3_lost(i, error_kind(&e), e.to_string(), now),
        }
    }

    /// The connection cannot go on (`why`): before its handshake a failed connect, after it
    /// its requests end with `kind` (those not yet sent go again elsewhere).
    fn h3_lost(&mut self, i: usize, kind: ErrorKind, why: String, now: u64) {
        if matches!(self.conns[i].state, ConnState::Connecting { .. }) {
            self.connect_sample.get_or_insert_with(|| why.clone());
            self.connect_failed(i, now, io::Error::other(why));
            return;
        }
        if kind == ErrorKind::Protocol && self.protocol_sample.is_none() {
            self.protocol_sample = Some(ProtocolSample {
                reason: why,
                bytes: Vec::new(),
            });
        }
        self.fail(i, kind, now, true);
    }

    /// Connection `i` had no request stream open and could open none for `--timeout` while
    /// requests waited: the server allows none (QUIC's `initial_max_streams_bidi` 0) or no
    /// more (no MAX_STREAMS since its last streams ended), so nothing can be sent on it.
    /// Dropped as a failed connect (one `connect` error, the reason in the warning, the
    /// connect's back-off); its requests go on another. True when it was.
    pub(super) fn h3_without_streams(&mut self, i: usize, now: u64) -> bool {
        let c = &self.conns[i];
        let Some(h) = c.h3.as_ref().filter(|h| !h.going_away()) else {
            return false;
        };
        let timeout = std::time::Duration::from_nanos(self.shared.timeout_ns);
        let at = Instant::now();
        let idle = h.idle_since().map(|t| at.saturating_duration_since(t));
        if c.h2_queued == 0 || idle.is_none_or(|d| d <= timeout) {
            return false;
        }
        let why = if h.opened_any() {
            "HTTP/3: the server allowed no more request streams (no MAX_STREAMS within \
             --timeout of its last)"
        } else {
            "HTTP/3: the server allowed no request streams (QUIC's initial_max_streams_bidi 0, \
             and no MAX_STREAMS within --timeout)"
        };
        self.connect_sample.get_or_insert_with(|| why.to_string());
        // One sent before (going again) is `closed`, as when its new connect fails.
        self.send_waiting_elsewhere(i, now);
        self.connect_failed(i, now, io::Error::other(why));
        true
    }

    /// Adds connection `i`'s QUIC packet counts to the run's, before it goes.
    pub(super) fn count_quic(&mut self, i: usize) {
        if let Some(h3) = self.conns[i].h3.as_ref() {
            let path = h3.quic.conn.stats().path;
            self.transport.quic_lost_packets += path.lost_packets;
            self.transport.quic_sent_packets += path.sent_packets;
        }
    }
}
