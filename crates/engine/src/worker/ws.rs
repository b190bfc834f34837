//! The worker's side of `ws://` and `wss://` (docs/contract.md, "WebSocket"): the upgrade on a
//! connection that reached the server (after TLS for `wss://`), each request of the run a
//! message written as a masked frame (`schedule.rs` renders it), and the server's frames read:
//! its next message answers the oldest message in flight, pings get pongs, a close is answered
//! and ends the connection. The frames themselves are `crate::ws`'s.

use super::*;
use crate::ws::frame::{self, Event, FrameError};
use crate::ws::handshake::{self, Answer};
use crate::ws::WsConn;
use crate::SetupFailure;
use volley_model::stats::recorder::SAMPLE_BYTES;

/// Bytes a connection may hold unwritten before a ping goes unanswered.
const MAX_UNWRITTEN_PONGS: usize = 64 * 1024;

/// A worker's seed for its keys and masks: its number and the clock, so runs differ.
pub(super) fn seed(id: usize) -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ ((id as u64 + 1) << 48)
}

/// Writes all of `bytes` on a fresh connection (an upgrade request, a few hundred bytes that
/// an empty socket buffer takes whole) and flushes what TLS holds as far as the socket takes.
fn write_all(s: &mut Stream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match s.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::other(
                    "the socket took only part of the WebSocket upgrade request",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    match s.flush() {
        Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
        _ => Ok(()),
    }
}

impl Worker {
    /// Writes `req`'s message on connection `i` as a frame with a mask of its own
    /// ([`Worker::ws_frame`]).
    pub(super) fn write_ws_message(&mut self, i: usize, req: &InFlight) {
        let Some(ws) = self.shared.ws.as_ref() else {
            return;
        };
        if self.shared.mix.is_none() {
            // The run's one message: framed straight into the connection's buffer.
            let mask = self.ws_rng.mask();
            let c = &mut self.conns[i];
            let before = c.out.len();
            frame::encode(&mut c.out, ws.opcode, &ws.message, mask);
            c.write_end += (c.out.len() - before) as u64;
            return;
        }
        self.ws_frame(i, req);
        let c = &mut self.conns[i];
        c.out.extend_from_slice(&self.scratch);
        c.write_end += self.scratch.len() as u64;
    }

    /// Frames `req`'s message (on connection `i`) into `scratch` with a mask of its own: the
    /// run's message, or with `--requests-file` its request's body (templated, rendered for it).
    pub(super) fn ws_frame(&mut self, i: usize, req: &InFlight) {
        let Some(ws) = self.shared.ws.as_ref() else {
            return;
        };
        let mask = self.ws_rng.mask();
        self.scratch.clear();
        let Some(mix) = self.shared.mix.as_deref() else {
            frame::encode(&mut self.scratch, ws.opcode, &ws.message, mask);
            return;
        };
        let ids = (self.id, self.shared.threads);
        let ctx = journey::context_for(ids, mix, i, req, self.users.as_ref(), &[]);
        self.ws_body.clear();
        mix.requests[req.entry as usize].render_body(&ctx, &mut self.ws_body);
        frame::encode(&mut self.scratch, ws.opcode, &self.ws_body, mask);
    }

    /// The connection reached the server: writes the upgrade request, with a key of its own.
    pub(super) fn start_upgrade(&mut self, i: usize, now: u64) {
        let Some(run) = self.shared.ws.as_ref() else {
            return;
        };
        let (request, accept) = handshake::request(&run.upgrade_head, self.ws_rng.nonce());
        let limit = run.limit;
        let c = &mut self.conns[i];
        let (
            Some(s),
            ConnState::Connecting {
                since_ns, tcp_ns, ..
            },
        ) = (c.stream.as_mut(), c.state)
        else {
            return;
        };
        if let Err(e) = write_all(s, &request) {
            self.connect_failed(i, now, e);
            return;
        }
        c.ws = Some(Box::new(WsConn::new(accept, limit)));
        c.state = ConnState::Connecting {
            since_ns,
            tcp_ns,
            tunnel_ns: 0,
            upgrade_ns: now.max(1),
        };
        let phase = self.phase();
        self.rec.counters_for(phase, now).bytes_sent += request.len() as u64;
    }

    /// Reads the server's answer to the upgrade, as far as it came.
    pub(super) fn drive_upgrade(&mut self, i: usize, now: u64) {
        loop {
            let c = &mut self.conns[i];
            let (Some(s), Some(ws)) = (c.stream.as_mut(), c.ws.as_mut()) else {
                return;
            };
            match s.read(&mut self.read_buf) {
                Ok(0) => {
                    let e = io::Error::other("the server closed before answering the upgrade");
                    self.connect_failed(i, now, e);
                    return;
                }
                Ok(n) => {
                    ws.head.extend_from_slice(&self.read_buf[..n]);
                    let phase = self.phase();
                    self.rec.counters_for(phase, now).bytes_received += n as u64;
                    let c = &self.conns[i];
                    let ws = c.ws.as_ref().expect("checked above");
                    match handshake::parse_answer(&ws.head, &ws.accept) {
                        Answer::Incomplete => {}
                        Answer::Upgraded { len } => return self.upgraded(i, len, now),
                        Answer::Refused { line, .. } => {
                            return self.upgrade_failed(i, now, format!("answered {line}"))
                        }
                        Answer::Broken(why) => return self.upgrade_failed(i, now, why),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Nothing more for now (a server that closed reads as the end of the
                    // stream, above); a TLS read that stopped at its budget is read again.
                    self.read_later(i);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.connect_failed(i, now, e);
                    return;
                }
            }
        }
    }

    /// The server answered 101 with a head of `len` bytes: the connection opens for messages,
    /// and the frames that came with the answer are read.
    fn upgraded(&mut self, i: usize, len: usize, now: u64) {
        let c = &mut self.conns[i];
        let ConnState::Connecting { upgrade_ns, .. } = c.state else {
            return;
        };
        let Some(ws) = c.ws.as_mut() else { return };
        let rest = ws.head.split_off(len);
        ws.head = Vec::new();
        self.transport
            .ws
            .upgraded(ns_to_us(now.saturating_sub(upgrade_ns)));
        self.opened(i, now, false);
        if !rest.is_empty() && !self.ws_input(i, &rest, now) {
            return;
        }
        if self.conns[i].state == ConnState::Open {
            self.write(i, now);
        }
    }

    /// The server refused the upgrade or answered it wrongly: before any message was answered
    /// the run ends with `reason` (exit 2); later it is a failed connect.
    pub(super) fn upgrade_failed(&mut self, i: usize, now: u64, reason: String) {
        self.setup_failed(|| SetupFailure::WebSocket(reason.clone()));
        self.connect_sample
            .get_or_insert_with(|| format!("WebSocket upgrade: the server {reason}"));
        self.connect_failed(i, now, io::Error::other(reason));
    }

    /// `n` bytes of frames in the read buffer. False when the connection closed meanwhile.
    pub(super) fn on_ws_bytes(&mut self, i: usize, n: usize, now: u64) -> bool {
        // Lent out while the frames are handled (a Vec's move: no copy, no allocation).
        let buf = std::mem::take(&mut self.read_buf);
        let open = self.ws_input(i, &buf[..n], now);
        self.read_buf = buf;
        if open {
            self.ws_pong_later(i);
        }
        open
    }

    /// The pong of the latest ping that found the connection's writes backed up, once they
    /// have room again.
    pub(super) fn ws_pong_later(&mut self, i: usize) {
        if self.ws_unwritten(i) >= MAX_UNWRITTEN_PONGS {
            return;
        }
        let c = &mut self.conns[i];
        if let Some(payload) = c.ws.as_mut().and_then(|w| w.pending_pong.take()) {
            self.ws_queue(i, frame::OP_PONG, &payload);
        }
    }

    /// Bytes connection `i` holds unwritten: its own queue, or over HTTP/2 the session's and
    /// what the server's windows hold back.
    fn ws_unwritten(&self, i: usize) -> usize {
        let c = &self.conns[i];
        match c.h2.as_ref() {
            Some(h2) => h2.out.len() + h2.tunnel_held(),
            None => c.out.len() - c.out_sent,
        }
    }

    /// Reads the server's frames in `input`. False when the connection closed meanwhile.
    pub(super) fn ws_input(&mut self, i: usize, input: &[u8], now: u64) -> bool {
        let mut off = 0;
        while off < input.len() {
            let Some(ws) = self.conns[i].ws.as_mut() else {
                return false;
            };
            match ws.reader.next(&input[off..]) {
                Ok((used, ev)) => {
                    off += used;
                    if let Some(ev) = ev {
                        if !self.ws_event(i, ev, now) {
                            return false;
                        }
                    }
                }
                Err(e) => {
                    self.ws_broken(i, e, &input[off..], now);
                    return false;
                }
            }
        }
        true
    }

    /// One event of the server's frames. False when the connection closed.
    fn ws_event(&mut self, i: usize, ev: Event, now: u64) -> bool {
        match ev {
            Event::Message { .. } => self.ws_message(i, now),
            Event::Ping(payload) => {
                self.transport.ws.pings += 1;
                // A flood of pings the socket cannot take the pongs of: RFC 6455 §5.5.3 lets
                // an endpoint answer only the latest, so while 64 KiB wait to be written the
                // latest ping's pong waits for them ([`Worker::ws_pong_later`]).
                if self.ws_unwritten(i) < MAX_UNWRITTEN_PONGS {
                    self.ws_queue(i, frame::OP_PONG, &payload);
                } else if let Some(ws) = self.conns[i].ws.as_mut() {
                    ws.pending_pong = Some(payload);
                }
                true
            }
            Event::Pong => true,
            Event::Close { code, reason } => {
                let code = code.unwrap_or(1005);
                let ws = &mut self.transport.ws;
                *ws.close_codes.entry(code).or_default() += 1;
                ws.close_sample
                    .get_or_insert_with(|| match reason.as_str() {
                        "" => format!("{code}"),
                        r => format!("{code} ({})", r.chars().take(120).collect::<String>()),
                    });
                // Its close is answered with the same code (RFC 6455 §5.5.1); 1005 is never
                // sent, a close without one is answered without one.
                self.ws_send_close(i, (code != 1005).then_some(code), Some(now));
                if self.conns[i].inflight.is_empty() {
                    self.close_and_replace(i, now, true);
                } else {
                    self.fail(i, ErrorKind::Closed, now, true);
                }
                false
            }
        }
    }

    /// A whole message from the server: the answer of the oldest message in flight, or one of
    /// the server's own.
    fn ws_message(&mut self, i: usize, now: u64) -> bool {
        // A message that answers none of volley's: none waits, or the oldest is not written
        // yet (a greeting that came with the 101, before anything was sent).
        let c = &self.conns[i];
        if c.inflight
            .front()
            .is_none_or(|r| r.stream_pos >= c.write_pos)
        {
            self.transport.ws.server_messages += 1;
            return true;
        }
        self.response_done(i, 0, &[], now);
        if !self.shared.keepalive {
            // --no-keepalive: one exchange per connection, then a close.
            self.ws_send_close(i, Some(1000), Some(now));
            self.close_and_replace(i, now, false);
            return false;
        }
        if i >= self.active && self.conns[i].inflight.is_empty() {
            self.ws_send_close(i, Some(1000), Some(now));
            self.retire(i);
            return false;
        }
        if self.conns[i].going_away() && self.conns[i].inflight.is_empty() {
            // HTTP/2's graceful GOAWAY: the last message is answered, a new connection goes on.
            self.ws_send_close(i, Some(1000), Some(now));
            self.close_and_replace(i, now, true);
            return false;
        }
        // As HTTP/1.1's pipeline: the window is refilled once half of it is free.
        if self.conns[i].inflight.len() <= self.shared.pipeline / 2 {
            self.mark_free(i);
        }
        true
    }

    /// A frame the server should not have sent: the connection fails with `protocol` (closed
    /// with 1002, or 1009 for a message over the limit).
    fn ws_broken(&mut self, i: usize, e: FrameError, at: &[u8], now: u64) {
        if self.protocol_sample.is_none() {
            self.protocol_sample = Some(ProtocolSample {
                reason: format!("WebSocket: {e}"),
                bytes: at[..at.len().min(SAMPLE_BYTES)].to_vec(),
            });
        }
        let code = if matches!(e, FrameError::TooLarge { .. }) {
            1009
        } else {
            1002
        };
        self.ws_send_close(i, Some(code), Some(now));
        self.fail(i, ErrorKind::Protocol, now, false);
    }

    /// Queues a control frame (a pong) behind what the connection has to write.
    fn ws_queue(&mut self, i: usize, opcode: u8, payload: &[u8]) {
        if self.conns[i].h2.is_some() {
            self.ws_h2_queue(i, opcode, payload);
            return;
        }
        let mask = self.ws_rng.mask();
        let c = &mut self.conns[i];
        let before = c.out.len();
        frame::encode(&mut c.out, opcode, payload, mask);
        c.write_end += (c.out.len() - before) as u64;
        if !c.flush_pending {
            c.flush_pending = true;
            self.to_flush.push(i);
        }
    }

    /// Writes a close frame now, once, as far as the socket takes it (the connection closes
    /// right after: what is queued before it goes first). Over HTTP/2, with `now`, the
    /// messages whose first byte goes with it count as written.
    pub(super) fn ws_send_close(&mut self, i: usize, code: Option<u16>, now: Option<u64>) {
        let mask = self.ws_rng.mask();
        let c = &mut self.conns[i];
        let (Some(s), Some(ws)) = (c.stream.as_mut(), c.ws.as_mut()) else {
            return;
        };
        if ws.close_sent {
            return;
        }
        ws.close_sent = true;
        let payload = code.map(frame::close_payload);
        if c.h2.is_some() {
            let mut bytes = Vec::with_capacity(8);
            let payload = payload.as_ref().map_or(&[][..], |p| &p[..]);
            frame::encode(&mut bytes, frame::OP_CLOSE, payload, mask);
            self.ws_h2_close(i, &bytes, now);
            return;
        }
        // What is queued goes first only as far as the frame a write began: messages not
        // begun stay unwritten (they go again elsewhere, and must not reach this server too).
        let base = c.write_pos - c.out_sent as u64;
        let cut = c
            .inflight
            .iter()
            .map(|r| r.stream_pos)
            .filter(|&p| p >= c.write_pos && p != u64::MAX)
            .min()
            .map_or(c.out.len(), |p| ((p - base) as usize).min(c.out.len()));
        let mut bytes = c.out[c.out_sent..cut.max(c.out_sent)].to_vec();
        frame::encode(
            &mut bytes,
            frame::OP_CLOSE,
            payload.as_ref().map_or(&[][..], |p| &p[..]),
            mask,
        );
        let _ = s.write(&bytes);
        let _ = s.flush();
    }

    /// The run ends: each open WebSocket says so (1001, going away) as it closes.
    pub(super) fn close_websockets(&mut self) {
        if self.shared.ws.is_none() {
            return;
        }
        for i in 0..self.conns.len() {
            if self.conns[i].state == ConnState::Open {
                self.ws_send_close(i, Some(1001), None);
            }
        }
    }
}
