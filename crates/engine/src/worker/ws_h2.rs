//! The worker's side of a WebSocket over HTTP/2 (RFC 8441; `ws://` with `--h2c`, `wss://`
//! with `--http2`): the session starts as any HTTP/2 one; once the server's SETTINGS offer
//! extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL) the connection's one stream asks for
//! the WebSocket, and its 2xx opens the tunnel. From then on the messages are `ws.rs`'s: each
//! is handed to the tunnel as a masked frame (`h2::conn` frames it as DATA within the server's
//! windows), and the stream's DATA is read as the server's frames. A message counts as written
//! once its first byte is, or, when the server's window holds it back, once everything before
//! it is (as a request body waits for window after its HEADERS went).

use super::*;
use crate::h2::frame::error_name;
use crate::ws::frame;
use crate::ws::{Tunnel, WsConn};

/// Why a server that did not announce SETTINGS_ENABLE_CONNECT_PROTOCOL fails the run.
const NO_CONNECT_PROTOCOL: &str = "does not offer WebSocket over HTTP/2 (no \
     SETTINGS_ENABLE_CONNECT_PROTOCOL); drop --h2c/--http2 to upgrade HTTP/1.1";

impl Worker {
    /// The session just started on connection `i` carries the run's WebSocket.
    pub(super) fn start_ws_h2(&mut self, i: usize) {
        if let Some(run) = self.shared.ws.as_ref() {
            self.conns[i].ws = Some(Box::new(WsConn::tunnel(run.limit)));
        }
    }

    /// The session's events of one read on a WebSocket's connection, with the tunnel's bytes
    /// that came with them. False when the connection closed meanwhile.
    pub(super) fn ws_h2_events(&mut self, i: usize, events: &mut Vec<Event>, now: u64) -> bool {
        let Some(h2) = self.conns[i].h2.as_mut() else {
            events.clear();
            return true;
        };
        let input = h2.take_tunnel_input();
        let mut off = 0;
        let mut alive = true;
        for e in events.drain(..) {
            if alive {
                alive = self.ws_h2_event(i, e, &input, &mut off, now);
            }
        }
        if let Some(h2) = self.conns[i].h2.as_mut() {
            h2.restore_tunnel_input(input);
        }
        if alive {
            self.ws_pong_later(i);
        }
        alive
    }

    /// One event of the session: `input[*off..]` holds the tunnel's bytes still to read (a
    /// DATA event on the tunnel takes its own). False when the connection closed.
    fn ws_h2_event(&mut self, i: usize, e: Event, input: &[u8], off: &mut usize, now: u64) -> bool {
        let tunnel = self.conns[i].h2.as_ref().and_then(|h| h.tunnel_stream());
        let ours = |s: u32| tunnel == Some(s);
        match e {
            Event::Settings { max_streams } => {
                self.transport.h2_settings(max_streams);
                self.ws_h2_settings(i, now)
            }
            Event::Head { stream, status } if ours(stream) => self.ws_h2_answered(i, status, now),
            Event::Data { stream, len } if ours(stream) => {
                let end = (*off + len).min(input.len());
                let bytes = &input[*off..end];
                *off = end;
                self.ws_input(i, bytes, now)
            }
            Event::End { stream } if ours(stream) => {
                // The server ended its side without a close frame: as a TCP close.
                self.fail(i, ErrorKind::Closed, now, true);
                false
            }
            Event::Reset { stream, code } if ours(stream) => self.ws_h2_reset(i, stream, code, now),
            Event::Malformed { stream, reason } if ours(stream) => {
                let open = self.conns[i]
                    .ws
                    .as_ref()
                    .is_some_and(|w| w.tunnel == Tunnel::Open);
                if !open {
                    let why = format!("answered the WebSocket's extended CONNECT with {reason}");
                    self.upgrade_failed(i, now, why);
                    return false;
                }
                self.sample_protocol(|| {
                    format!("HTTP/2: the WebSocket's stream {stream}: {reason}")
                });
                self.fail(i, ErrorKind::Protocol, now, false);
                false
            }
            Event::GoAway { last_stream, code } => self.ws_h2_goaway(i, last_stream, code, now),
            _ => true,
        }
    }

    /// The server's SETTINGS: the first ones must offer extended CONNECT; the WebSocket's
    /// stream is then asked for.
    fn ws_h2_settings(&mut self, i: usize, now: u64) -> bool {
        let c = &mut self.conns[i];
        let (Some(h2), Some(ws)) = (c.h2.as_mut(), c.ws.as_mut()) else {
            return true;
        };
        if ws.tunnel != Tunnel::Settings {
            return true;
        }
        if !h2.connect_protocol() {
            self.upgrade_failed(i, now, NO_CONNECT_PROTOCOL.to_string());
            return false;
        }
        let Some(run) = self.shared.ws.as_ref() else {
            return true;
        };
        h2.open_tunnel(&run.connect_block);
        ws.tunnel = Tunnel::Asked { at_ns: now.max(1) };
        c.write_end = c.write_pos + h2.out.len() as u64;
        self.flush_soon(i);
        true
    }

    /// The answer to the extended CONNECT: a 2xx opens the tunnel (the messages waiting go),
    /// anything else is a refused upgrade.
    fn ws_h2_answered(&mut self, i: usize, status: u16, now: u64) -> bool {
        let c = &mut self.conns[i];
        let Some(ws) = c.ws.as_mut() else { return true };
        let Tunnel::Asked { at_ns } = ws.tunnel else {
            return true;
        };
        if !(200..300).contains(&status) {
            let why = format!("answered the WebSocket's extended CONNECT with :status {status}");
            self.upgrade_failed(i, now, why);
            return false;
        }
        ws.tunnel = Tunnel::Open;
        // Messages queued while the tunnel opened waited for it, not for volley.
        for r in c.inflight.iter_mut() {
            r.lag_origin_ns = r.lag_origin_ns.max(now);
        }
        self.transport
            .ws
            .upgraded(ns_to_us(now.saturating_sub(at_ns)));
        self.flush_soon(i);
        if self.shared.keepalive {
            self.mark_free(i);
        }
        true
    }

    /// The server reset the WebSocket's stream: before its 2xx a refused upgrade; after, the
    /// messages in flight are `protocol` errors, as a reset HTTP/2 stream's request is.
    fn ws_h2_reset(&mut self, i: usize, stream: u32, code: u32, now: u64) -> bool {
        let name = error_name(code);
        let open = self.conns[i]
            .ws
            .as_ref()
            .is_some_and(|w| w.tunnel == Tunnel::Open);
        if !open {
            let why = format!("reset the WebSocket's extended CONNECT (RST_STREAM {name})");
            self.upgrade_failed(i, now, why);
            return false;
        }
        self.sample_protocol(|| {
            format!("HTTP/2: the server reset the WebSocket's stream {stream} (RST_STREAM {name})")
        });
        self.fail(i, ErrorKind::Protocol, now, true);
        false
    }

    /// GOAWAY: a graceful one that keeps the WebSocket's stream lets its messages in flight
    /// finish (no new ones go; the connection is then replaced); otherwise, before the tunnel
    /// opened the connection was of no use, and after it the messages in flight end
    /// (`protocol` with an error code, `closed` without).
    fn ws_h2_goaway(&mut self, i: usize, last: u32, code: u32, now: u64) -> bool {
        self.transport.h2_goaways += 1;
        let name = error_name(code);
        let c = &self.conns[i];
        let stream = c.h2.as_ref().and_then(|h| h.tunnel_stream());
        let open = c.ws.as_ref().is_some_and(|w| w.tunnel == Tunnel::Open);
        let kept = code == 0 && stream.is_some_and(|s| s <= last);
        if kept && open {
            if self.conns[i].inflight.is_empty() {
                self.ws_send_close(i, Some(1000), Some(now));
                self.close_and_replace(i, now, true);
                return false;
            }
            return true;
        }
        if kept {
            // Its CONNECT is still to be answered: the answer decides.
            return true;
        }
        if !open {
            let why = format!(
                "the server went away with {name} (GOAWAY) before the WebSocket's CONNECT was answered"
            );
            self.h2_unusable(i, why, now);
            return false;
        }
        let kind = if code == 0 {
            ErrorKind::Closed
        } else {
            self.sample_protocol(|| {
                format!("HTTP/2: the server went away with {name} (GOAWAY, last stream {last})")
            });
            ErrorKind::Protocol
        };
        self.fail(i, kind, now, true);
        false
    }

    /// Hands the messages waiting on connection `i` to its tunnel, once it is open: each a
    /// frame with a mask of its own, written at once where the windows allow.
    pub(super) fn ws_h2_hand_off(&mut self, i: usize, now: u64) {
        let c = &self.conns[i];
        if self.shared.ws.is_none()
            || !c.ws.as_ref().is_some_and(|w| w.tunnel == Tunnel::Open)
            || c.h2.is_none()
        {
            return;
        }
        let mut held = false;
        while self.conns[i].h2_queued > 0 {
            let c = &self.conns[i];
            let at = c.inflight.len() - c.h2_queued;
            let req = c.inflight[at];
            self.ws_frame(i, &req);
            let c = &mut self.conns[i];
            let h2 = c.h2.as_mut().expect("checked above");
            let pos = c.write_pos + h2.out.len() as u64;
            let at_once = h2.tunnel_send(&self.scratch);
            // Held back by the windows: written once what is queued before it is (the byte
            // before `pos`).
            c.inflight[at].stream_pos = if at_once { pos } else { pos - 1 };
            held |= !at_once;
            c.h2_queued -= 1;
        }
        let c = &mut self.conns[i];
        let out = c.h2.as_ref().map_or(0, |h2| h2.out.len());
        c.write_end = c.write_pos + out as u64;
        if self.scratch.capacity() > 1 << 20 {
            self.scratch = Vec::new();
        }
        if held {
            // Those with nothing queued before them are written now.
            self.wrote(i, 0, now);
        }
    }

    /// Queues a control frame (a pong) on connection `i`'s tunnel.
    pub(super) fn ws_h2_queue(&mut self, i: usize, opcode: u8, payload: &[u8]) {
        let mask = self.ws_rng.mask();
        let c = &mut self.conns[i];
        let Some(h2) = c.h2.as_mut() else { return };
        self.scratch.clear();
        frame::encode(&mut self.scratch, opcode, payload, mask);
        h2.tunnel_send(&self.scratch);
        c.write_end = c.write_pos + h2.out.len() as u64;
        self.flush_soon(i);
    }

    /// Ends connection `i`'s tunnel with the close frame `bytes` and writes what the session
    /// holds as far as the socket takes it (the connection closes right after); with `now`,
    /// the messages whose first byte went are counted as written.
    pub(super) fn ws_h2_close(&mut self, i: usize, bytes: &[u8], now: Option<u64>) {
        let c = &mut self.conns[i];
        let (Some(s), Some(h2)) = (c.stream.as_mut(), c.h2.as_mut()) else {
            return;
        };
        h2.tunnel_close(bytes);
        let n = s.write(&h2.out).unwrap_or(0);
        h2.out.drain(..n);
        let _ = s.flush();
        if let Some(now) = now {
            self.wrote(i, n, now);
        }
    }

    /// `--timeout` on a WebSocket's connection: the extended CONNECT unanswered is a failed
    /// connect; the oldest message unanswered ends the connection with its messages, as on
    /// HTTP/1.1 (the next message the server sends would answer it).
    pub(super) fn ws_h2_timeouts(&mut self, i: usize, now: u64) {
        let timeout = self.shared.timeout_ns;
        let c = &self.conns[i];
        let Some(ws) = c.ws.as_ref() else { return };
        match ws.tunnel {
            Tunnel::Asked { at_ns } if now.saturating_sub(at_ns) > timeout => {
                self.connect_sample.get_or_insert_with(|| {
                    "the server did not answer the WebSocket's extended CONNECT within --timeout"
                        .to_string()
                });
                self.connect_failed(i, now, io::Error::from(io::ErrorKind::TimedOut));
            }
            Tunnel::Open => {
                let expired = c
                    .inflight
                    .front()
                    .is_some_and(|r| r.write_ns > 0 && now.saturating_sub(r.write_ns) > timeout);
                if expired {
                    self.fail(i, ErrorKind::Timeout, now, false);
                }
            }
            _ => {}
        }
    }
}
