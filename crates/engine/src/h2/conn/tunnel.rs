//! The connection's WebSocket (RFC 8441): an extended CONNECT on one stream whose 2xx opens a
//! tunnel. The WebSocket's bytes go as that stream's DATA as the server's windows allow (held
//! back, in order, while they do not); its DATA comes back to the caller as bytes, in the
//! order the events name them.

use super::*;

/// The most received tunnel bytes' room kept allocated between reads (a rare large read's is
/// freed).
const INPUT_KEEP: usize = 1 << 20;

/// The WebSocket's stream.
#[derive(Debug)]
pub(super) struct Tunnel {
    /// Its id.
    pub(super) stream: u32,
    /// The server's window for it.
    pub(super) window: i64,
    /// Bytes handed over and not yet framed (the windows held them back), from `held_from` on.
    held: Vec<u8>,
    held_from: usize,
    /// Ended: reset, ended by either side, or above a GOAWAY's last stream.
    closed: bool,
}

impl Tunnel {
    /// The stream is over: nothing more goes on it.
    pub(super) fn close(&mut self) {
        self.closed = true;
        self.held = Vec::new();
        self.held_from = 0;
    }

    fn held_len(&self) -> usize {
        self.held.len() - self.held_from
    }
}

/// Frames as much of `data` as `window` (the stream's) and `send_window` (the connection's)
/// allow into DATA frames on `stream` in `out`; returns the bytes framed.
fn frame_data(
    out: &mut Vec<u8>,
    stream: u32,
    window: &mut i64,
    send_window: &mut i64,
    data: &[u8],
) -> usize {
    let mut sent = 0;
    while sent < data.len() && *window > 0 && *send_window > 0 {
        let n = (data.len() - sent)
            .min(DATA_FRAME)
            .min(*window as usize)
            .min(*send_window as usize);
        frame::write(out, Kind::Data, 0, stream, &data[sent..sent + n]);
        sent += n;
        *window -= n as i64;
        *send_window -= n as i64;
    }
    sent
}

impl H2Conn {
    /// Whether the server takes extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL = 1), as
    /// far as its SETTINGS said.
    pub(crate) fn connect_protocol(&self) -> bool {
        self.connect_protocol
    }

    /// Opens the WebSocket's stream with the extended CONNECT `block`
    /// ([`super::super::request::connect_block`]), which leaves the stream open; returns its
    /// id. A 2xx head opens the tunnel; its DATA is then the WebSocket's.
    pub(crate) fn open_tunnel(&mut self, block: &[u8]) -> u32 {
        let stream = self.push_stream(false, None, true);
        self.write_block(stream, block, false);
        self.tunnel = Some(Tunnel {
            stream,
            window: self.peer_initial_window,
            held: Vec::new(),
            held_from: 0,
            closed: false,
        });
        self.seen_len = self.out.len();
        stream
    }

    /// The WebSocket's stream, once opened.
    pub(crate) fn tunnel_stream(&self) -> Option<u32> {
        self.tunnel.as_ref().map(|t| t.stream)
    }

    /// Hands `bytes` (whole WebSocket frames) to the tunnel: framed as DATA at once as far as
    /// the windows allow, the rest held back until they open. True when the first byte was
    /// framed at once (its DATA frame begins where `out` ended); false when it is held back
    /// behind earlier bytes or the windows, or the tunnel is closed (then nothing goes).
    pub(crate) fn tunnel_send(&mut self, bytes: &[u8]) -> bool {
        self.sync_written();
        let Some(t) = self.tunnel.as_mut().filter(|t| !t.closed) else {
            return false;
        };
        let mut framed = 0;
        if t.held_len() == 0 {
            framed = frame_data(
                &mut self.out,
                t.stream,
                &mut t.window,
                &mut self.send_window,
                bytes,
            );
        }
        t.held.extend_from_slice(&bytes[framed..]);
        self.seen_len = self.out.len();
        framed > 0 || bytes.is_empty()
    }

    /// Bytes handed to the tunnel and held back by the server's windows.
    pub(crate) fn tunnel_held(&self) -> usize {
        self.tunnel.as_ref().map_or(0, Tunnel::held_len)
    }

    /// Frames the held-back tunnel bytes the windows now allow.
    pub(super) fn send_tunnel(&mut self) {
        let Some(t) = self.tunnel.as_mut() else {
            return;
        };
        if t.closed || t.held_len() == 0 {
            return;
        }
        let n = frame_data(
            &mut self.out,
            t.stream,
            &mut t.window,
            &mut self.send_window,
            &t.held[t.held_from..],
        );
        t.held_from += n;
        if t.held_from == t.held.len() {
            t.held.clear();
            t.held_from = 0;
        } else if t.held_from > t.held.len() / 2 {
            t.held.drain(..t.held_from);
            t.held_from = 0;
        }
    }

    /// Ends the tunnel with `last` (a close frame): in a DATA frame that ends the stream when
    /// the tunnel is open, nothing is held back and the windows take it whole; otherwise the
    /// stream is reset (CANCEL), which cuts the WebSocket off as a TCP reset would.
    pub(crate) fn tunnel_close(&mut self, last: &[u8]) {
        self.sync_written();
        let Some(t) = self.tunnel.as_ref().filter(|t| !t.closed) else {
            return;
        };
        let stream = t.stream;
        let len = last.len() as i64;
        let open = self.index(stream).is_some_and(|i| self.open[i].head);
        let fits = t.held_len() == 0 && t.window >= len && self.send_window >= len;
        if open && fits {
            frame::write(&mut self.out, Kind::Data, flags::END_STREAM, stream, last);
            self.send_window -= len;
        } else {
            frame::rst_stream(&mut self.out, stream, code::CANCEL);
        }
        if let Some(t) = self.tunnel.as_mut() {
            t.close();
        }
        self.seen_len = self.out.len();
    }

    /// The WebSocket's bytes received since the last call, in the order of the
    /// [`Event::Data`] events that name its stream (each takes its `len` bytes). Give the
    /// buffer back with [`H2Conn::restore_tunnel_input`] to keep its room.
    pub(crate) fn take_tunnel_input(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.tunnel_in)
    }

    /// Gives back the buffer [`H2Conn::take_tunnel_input`] lent, emptied.
    pub(crate) fn restore_tunnel_input(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        if self.tunnel_in.is_empty() && buf.capacity() <= INPUT_KEEP {
            self.tunnel_in = buf;
        }
    }
}
