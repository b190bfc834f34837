//! The socket side of a worker: connecting (through a proxy's tunnel, a TLS handshake),
//! writing the request stream, and reading what arrives; what the bytes read become is
//! `response.rs`'s.

use super::failure::error_kind;
use super::*;
use crate::proxy;
use crate::tls::{self, HandshakeError, TlsReadError};
use crate::{SetupFailure, STOP_ABORT};
use std::io::{Read, Write};

impl Worker {
    pub(super) fn connect(&mut self, i: usize, now: u64) {
        if self.shared.quic.is_some() {
            self.connect_h3(i, now);
            return;
        }
        let attempt = match &self.shared.endpoint {
            Endpoint::Tcp(addr) => self.connect_tcp(*addr).map(Socket::Tcp),
            Endpoint::Unix(path) => Socket::unix(path),
            Endpoint::Mem(net) => net.connect().map(Socket::Mem),
        }
        .map(|socket| self.poll.adopt(socket))
        .and_then(|socket| Stream::new(socket, self.shared.tls.as_ref()));
        match attempt {
            Ok(mut s) => {
                if let Err(e) = self.poll.add(&mut s, Token(i)) {
                    self.connect_failed(i, now, e);
                    return;
                }
                let c = &mut self.conns[i];
                c.stream = Some(s);
                c.state = ConnState::Connecting {
                    since_ns: now,
                    tcp_ns: 0,
                    tunnel_ns: 0,
                    upgrade_ns: 0,
                };
            }
            Err(e) => self.connect_failed(i, now, e),
        }
    }

    /// Starts a TCP connect; out of ephemeral ports towards a loopback target, moves on to the
    /// next source address (127.0.0.2, .3, ...), each with a port range of its own.
    fn connect_tcp(&mut self, addr: std::net::SocketAddr) -> io::Result<mio::net::TcpStream> {
        let mut attempt = transport::connect(addr, self.source);
        while let Err(e) = &attempt {
            if !transport::is_port_exhaustion(e) {
                break;
            }
            match transport::next_loopback_source(addr, self.source) {
                Some(ip) => {
                    self.source = Some(ip);
                    attempt = transport::connect(addr, self.source);
                }
                None => break,
            }
        }
        attempt
    }

    pub(super) fn on_writable(&mut self, i: usize) {
        let now = self.shared.clock.now_ns();
        if self.conns[i].h3.is_some() {
            self.transmit_h3(i, now);
            return;
        }
        let c = &mut self.conns[i];
        if let ConnState::Connecting {
            since_ns,
            tcp_ns,
            tunnel_ns,
            upgrade_ns,
        } = c.state
        {
            if upgrade_ns > 0 {
                // The upgrade request is written: TLS may still hold some of its records.
                if let Some(s) = c.stream.as_mut() {
                    let _ = s.flush();
                }
                return;
            }
            if tunnel_ns > 0 {
                self.drive_tunnel(i, now, false);
                return;
            }
            if tcp_ns > 0 {
                self.drive_handshake(i, now);
                return;
            }
            let Some(s) = c.stream.as_mut() else { return };
            match transport::connect_state(s.socket_mut()) {
                ConnectState::Pending => return,
                ConnectState::Failed(e) => {
                    self.connect_failed(i, now, e);
                    return;
                }
                ConnectState::Ready => {
                    self.transport
                        .connected(ns_to_us(now.saturating_sub(since_ns)));
                    if self.shared.tunnel.is_some() {
                        self.open_tunnel(i, now);
                    } else {
                        self.reached(i, now);
                    }
                    return;
                }
            }
        }
        if self.conns[i].state == ConnState::Open {
            self.write(i, now);
        }
    }

    /// The socket reaches the target (connected, or through the proxy's tunnel): TLS begins
    /// its handshake, or the connection opens and its requests go.
    fn reached(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let ConnState::Connecting { since_ns, .. } = c.state else {
            return;
        };
        if matches!(c.stream, Some(Stream::Tls(_))) {
            c.state = ConnState::Connecting {
                since_ns,
                tcp_ns: now.max(1),
                tunnel_ns: 0,
                upgrade_ns: 0,
            };
            self.drive_handshake(i, now);
            return;
        }
        let h2 = self.shared.http == HttpVersion::H2c;
        if self.shared.ws.is_some() && !h2 {
            self.start_upgrade(i, now);
            return;
        }
        self.opened(i, now, h2);
        if self.conns[i].state == ConnState::Open {
            self.write(i, now);
        }
    }

    /// Through a proxy: writes the `CONNECT` on the fresh socket (a few hundred bytes, which an
    /// empty socket buffer takes whole).
    fn open_tunnel(&mut self, i: usize, now: u64) {
        let Some(tunnel) = self.shared.tunnel.as_ref() else {
            return;
        };
        let c = &mut self.conns[i];
        let (Some(s), ConnState::Connecting { since_ns, .. }) = (c.stream.as_mut(), c.state) else {
            return;
        };
        match s.socket_mut().write(&tunnel.request) {
            Ok(n) if n == tunnel.request.len() => {
                c.state = ConnState::Connecting {
                    since_ns,
                    tcp_ns: 0,
                    tunnel_ns: now.max(1),
                    upgrade_ns: 0,
                };
            }
            Ok(_) => {
                let e = io::Error::other("the socket took only part of the CONNECT request");
                self.connect_failed(i, now, e);
            }
            Err(e) => self.connect_failed(i, now, e),
        }
    }

    /// Reads the proxy's answer to `CONNECT` (only its head: what follows is the target's).
    /// `ended`: the event said the proxy closed (or failed) the connection, so a head that is
    /// still incomplete will never end.
    fn drive_tunnel(&mut self, i: usize, now: u64, ended: bool) {
        let c = &mut self.conns[i];
        let (Some(s), ConnState::Connecting { tunnel_ns, .. }) = (c.stream.as_mut(), c.state)
        else {
            return;
        };
        let mut head = [0u8; proxy::MAX_REPLY_HEAD];
        let closed = |what: &str| (format!("the proxy closed the connection {what}"), false);
        let (reason, setup) = match s.socket_mut().peek(&mut head) {
            Ok(0) => closed("before answering CONNECT"),
            Ok(n) => match proxy::parse_reply(&head[..n]) {
                proxy::Reply::Incomplete if ended => closed("within its answer to CONNECT"),
                proxy::Reply::Incomplete => return,
                proxy::Reply::Open { len } => {
                    if let Err(e) = s.socket_mut().read_exact(&mut head[..len]) {
                        self.connect_failed(i, now, e);
                        return;
                    }
                    self.transport
                        .tunneled(ns_to_us(now.saturating_sub(tunnel_ns)));
                    self.reached(i, now);
                    return;
                }
                proxy::Reply::Refused { status, reason } => {
                    (reason, proxy::refusal_is_setup(status))
                }
                proxy::Reply::Broken(reason) => (reason, true),
            },
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) => {
                self.connect_failed(i, now, e);
                return;
            }
        };
        // A proxy that refuses the credentials or the port, or does not speak HTTP, ends the
        // run before any response; one that is busy or closes is a connect error.
        if setup {
            self.setup_failed(|| SetupFailure::Proxy(reason.clone()));
        }
        self.connect_sample.get_or_insert_with(|| reason.clone());
        self.connect_failed(i, now, io::Error::other(reason));
    }

    /// The connection is ready for requests (connected, and with TLS, after the handshake);
    /// `h2`: it speaks HTTP/2.
    pub(super) fn opened(&mut self, i: usize, now: u64, h2: bool) {
        if h2 {
            self.start_h2(i);
        }
        let c = &mut self.conns[i];
        c.state = ConnState::Open;
        c.opened_ns = now;
        c.last_read_ns = now;
        c.ready_ns = c.ready_ns.max(now);
        // Requests queued on a connecting connection had no free connection until now: the
        // connect (and handshake) is their latency, not volley's send lag.
        for r in c.inflight.iter_mut() {
            r.lag_origin_ns = r.lag_origin_ns.max(now);
        }
        c.ever_connected = true;
        let phase = self.phase();
        self.rec.counters_for(phase, now).connections_opened += 1;
        if self.shared.keepalive {
            self.mark_free(i);
        }
    }

    /// Moves a TLS handshake on; when it ends, the connection opens and its requests go.
    fn drive_handshake(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let ConnState::Connecting { tcp_ns, .. } = c.state else {
            return;
        };
        let Some(Stream::Tls(t)) = c.stream.as_mut() else {
            return;
        };
        match t.handshake() {
            Handshake::Pending => {}
            Handshake::Done => {
                // The clock after the step: it checked the certificate and derived the keys.
                let now = self.shared.clock.now_ns();
                let (seen, resumed) = t.negotiated();
                let h2 = seen.alpn.as_deref() == Some("h2");
                self.transport.handshake_done(
                    ns_to_us(now.saturating_sub(tcp_ns)),
                    resumed,
                    || seen.clone(),
                );
                if !h2 && self.shared.http == HttpVersion::H2 {
                    let chose = match seen.alpn {
                        Some(p) => format!("chose {p} by ALPN instead of h2"),
                        None => "chose no protocol by ALPN".to_string(),
                    };
                    self.refused_h2(i, now, chose);
                    return;
                }
                if self.shared.ws.is_some() && !h2 {
                    self.start_upgrade(i, now);
                    return;
                }
                self.opened(i, now, h2);
                if self.conns[i].state == ConnState::Open {
                    self.write(i, now);
                }
            }
            Handshake::Failed(e) if e.refuses_alpn() && self.shared.http == HttpVersion::H2 => {
                let alert = e.describe();
                self.refused_h2(i, now, format!("refused h2 by ALPN ({alert})"));
            }
            Handshake::Failed(e) => {
                if e.is_setup() {
                    self.setup_failed(|| SetupFailure::Handshake(e.describe()));
                }
                self.connect_sample
                    .get_or_insert_with(|| e.connect_reason());
                self.connect_failed(i, now, io::Error::other(e.describe()));
            }
        }
    }

    /// Writes as much of the queued request stream as the socket takes. All requests on a
    /// connection are the same bytes, so the stream is the template repeated; a buffer of
    /// `pipeline` copies lets one write carry a whole window of pipelined requests.
    pub(super) fn write(&mut self, i: usize, now: u64) {
        if self.conns[i].h3.is_some() {
            self.write_h3(i, now);
            return;
        }
        if self.conns[i].h2.is_some() {
            self.write_h2(i, now);
            return;
        }
        if self.shared.mix.is_some() || self.shared.ws.is_some() {
            self.write_rendered(i, now);
            return;
        }
        // Fields are borrowed one by one (no Arc clone: that would be an atomic per write).
        let len = self.shared.template.bytes.len() as u64;
        loop {
            let c = &mut self.conns[i];
            if c.state != ConnState::Open {
                return;
            }
            let Some(s) = c.stream.as_mut() else { return };
            if c.write_pos >= c.write_end {
                // TLS may still hold records of the last write the socket did not take.
                match s.flush() {
                    Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                        self.fail(i, error_kind(&e), now, true);
                    }
                    _ => {}
                }
                return;
            }
            let off = (c.write_pos % len) as usize;
            let avail =
                ((c.write_end - c.write_pos) as usize).min(self.shared.stream_bytes.len() - off);
            match s.write_shared(&self.shared.stream_bytes[off..off + avail]) {
                Ok(0) => {
                    self.fail(i, ErrorKind::Closed, now, true);
                    return;
                }
                Ok(n) => self.wrote(i, n, now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(i, error_kind(&e), now, true);
                    return;
                }
            }
        }
    }

    /// `--requests-file` and `ws://`: writes the requests (messages) rendered into the
    /// connection's own buffer.
    fn write_rendered(&mut self, i: usize, now: u64) {
        loop {
            let c = &mut self.conns[i];
            if c.state != ConnState::Open {
                return;
            }
            let Some(s) = c.stream.as_mut() else { return };
            if c.out_sent >= c.out.len() {
                c.out.clear();
                c.out_sent = 0;
                match s.flush() {
                    Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                        self.fail(i, error_kind(&e), now, true);
                    }
                    _ => {}
                }
                return;
            }
            match s.write(&c.out[c.out_sent..]) {
                Ok(0) => {
                    self.fail(i, ErrorKind::Closed, now, true);
                    return;
                }
                Ok(n) => {
                    c.out_sent += n;
                    self.wrote(i, n, now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(i, error_kind(&e), now, true);
                    return;
                }
            }
        }
    }

    /// `n` more bytes of connection `i`'s request stream are written: the requests whose
    /// first byte went out are sent (and, in the open loop, their lag recorded).
    #[inline]
    pub(super) fn wrote(&mut self, i: usize, n: usize, now: u64) {
        let (open_loop, keepalive) = (self.shared.open_loop, self.shared.keepalive);
        let c = &mut self.conns[i];
        c.write_pos += n as u64;
        let endpoints = self.shared.mix.as_deref().map(|m| &m.requests[..]);
        let newly_sent = mark_written(c, &mut self.rec, now, (open_loop, keepalive), endpoints);
        let phase = self.phase();
        let counts = self.rec.counters_for(phase, now);
        counts.bytes_sent += n as u64;
        if phase == Phase::Measured {
            counts.sent += newly_sent;
            if newly_sent > 0 {
                self.last_send_ns = now;
            }
        }
    }

    /// `--http2`: the server's handshake chose another protocol than `h2` by ALPN. Before any
    /// response this ends the run (it does not speak HTTP/2 there); later it is a failed
    /// connect.
    fn refused_h2(&mut self, i: usize, now: u64, what: String) {
        let reason = if self.shared.ws.is_some() {
            format!("over TLS: its handshake {what}; drop --http2 to upgrade HTTP/1.1")
        } else {
            format!(
                "over TLS: its handshake {what}; drop --http2 (an https:// URL speaks HTTP/2 \
                 when the server offers it, HTTP/1.1 otherwise)"
            )
        };
        self.setup_failed(|| SetupFailure::NoH2(reason.clone()));
        self.connect_sample
            .get_or_insert_with(|| format!("HTTP/2 {reason}"));
        self.connect_failed(i, now, io::Error::other("no h2 by ALPN"));
    }

    /// `hangup`: epoll saw the peer's FIN (or an error) with this event, so a short read does
    /// not mean the socket is drained: the end of stream must still be read.
    pub(super) fn on_readable(&mut self, i: usize, hangup: bool) {
        if self.conns[i].h3.is_some() {
            self.on_h3_readable(i);
            return;
        }
        loop {
            let c = &mut self.conns[i];
            let Some(s) = c.stream.as_mut() else { return };
            if let ConnState::Connecting {
                tunnel_ns,
                upgrade_ns,
                ..
            } = c.state
            {
                if upgrade_ns > 0 {
                    let now = self.shared.clock.now_ns();
                    self.drive_upgrade(i, now);
                    if !matches!(self.conns[i].state, ConnState::Open) {
                        return;
                    }
                    continue;
                }
                if tunnel_ns > 0 {
                    let now = self.shared.clock.now_ns();
                    self.drive_tunnel(i, now, hangup);
                    if !matches!(self.conns[i].state, ConnState::Open) {
                        return;
                    }
                    continue;
                }
                // A refused connect is reported as readable + error: let the writable path
                // decide; a TLS handshake goes on from there too.
                self.on_writable(i);
                if !matches!(self.conns[i].state, ConnState::Open) {
                    return;
                }
                continue;
            }
            match s.read(&mut self.read_buf) {
                Ok(0) => {
                    let now = self.shared.clock.now_ns();
                    self.on_eof(i, now);
                    return;
                }
                Ok(n) => {
                    let now = self.shared.clock.now_ns();
                    // Bytes count as they arrive (like bytes sent), so a body that never ends
                    // is still seen in `bytes.received`.
                    let phase = self.phase();
                    self.rec.counters_for(phase, now).bytes_received += n as u64;
                    if !self.on_bytes(i, n, now) || self.read_later(i) {
                        return;
                    }
                    let pending = self.conns[i]
                        .stream
                        .as_ref()
                        .is_some_and(Stream::has_pending);
                    if n < self.read_buf.len() && !hangup && !pending {
                        // A short read drained the socket (edge-triggered: no more data until the
                        // next event), saving the read() that would return EAGAIN.
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.read_later(i);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let now = self.shared.clock.now_ns();
                    let kind = error_kind(&e);
                    let refused = TlsReadError::of(&e).filter(|t| tls::refuses_client(t));
                    if let Some(t) = refused.filter(|_| self.conns[i].responses == 0) {
                        // TLS 1.3: the server refused the client's certificate after the
                        // client's side of the handshake ended.
                        let error = t.clone();
                        self.setup_failed(|| {
                            SetupFailure::Handshake(
                                HandshakeError::Tls {
                                    error,
                                    head: Vec::new(),
                                }
                                .describe(),
                            )
                        });
                    }
                    if kind == ErrorKind::Protocol && self.protocol_sample.is_none() {
                        // A TLS failure mid-stream (an alert, a bad record).
                        self.protocol_sample = Some(ProtocolSample {
                            reason: e.to_string(),
                            bytes: Vec::new(),
                        });
                    }
                    self.fail(i, kind, now, true);
                    return;
                }
            }
        }
    }

    /// Whether connection `i`'s last read stopped at its budget (TLS records without data) with
    /// bytes maybe left in the socket: it is then read again once the loop has served the
    /// other connections and its timers ([`Worker::read_again`]).
    pub(super) fn read_later(&mut self, i: usize) -> bool {
        let stopped = self.conns[i]
            .stream
            .as_ref()
            .is_some_and(Stream::stopped_at_budget);
        if stopped && !self.unread.contains(&i) {
            self.unread.push(i);
        }
        stopped
    }

    /// Reads the connections whose last read stopped at its budget (no event comes for bytes
    /// that are already in the socket), as after a hang-up: the end of the stream may be among
    /// those bytes, so a short read does not prove the socket drained.
    pub(super) fn read_again(&mut self) {
        for i in std::mem::take(&mut self.unread) {
            let c = &self.conns[i];
            // (An HTTP/3 connection is listed only when its read stopped at its budget.)
            if c.h3.is_some() || c.stream.as_ref().is_some_and(Stream::stopped_at_budget) {
                self.on_readable(i, true);
            }
        }
    }

    /// The server's TLS set-up does not fit the URL: unless a response already arrived, the
    /// run stops now, before more requests go.
    pub(super) fn setup_failed(&mut self, failure: impl FnOnce() -> SetupFailure) {
        if self.shared.setup_gate.fail(failure) {
            self.shared.stop.store(STOP_ABORT, Ordering::Relaxed);
        }
    }
}

/// Marks the requests whose first byte is now written (the connection's `write_pos` moved
/// past their start): their write time, and for those not counted yet, `sent` — returned for
/// the measured ones, added to the warm-up's for the others — and, in the open loop, the lag.
#[inline]
fn mark_written(
    c: &mut Conn,
    rec: &mut Recorder,
    now: u64,
    (open_loop, keepalive): (bool, bool),
    mix: Option<&[volley_plan::MixRequest]>,
) -> u64 {
    let mut newly_sent = 0;
    for r in c.inflight.iter_mut() {
        if r.stream_pos >= c.write_pos {
            break;
        }
        if r.write_ns != 0 {
            continue;
        }
        r.write_ns = now.max(1);
        if r.sent_counted {
            continue; // a resend: sent once already
        }
        r.sent_counted = true;
        if !open_loop && keepalive {
            // Closed loop measures from the write (docs/contract.md, "Closed loop"): a request
            // that had to wait for its slot to reconnect does not carry the connect.
            r.start_ns = r.write_ns;
        }
        match r.phase {
            Phase::Measured => {
                newly_sent += 1;
                if open_loop {
                    rec.lag(ns_to_us(now.saturating_sub(r.lag_origin_ns)));
                }
                if let Some(e) = mix
                    .filter(|_| r.entry != NO_ENTRY)
                    .and_then(|m| m[r.entry as usize].endpoint)
                {
                    rec.endpoints.sent(e);
                }
            }
            Phase::Warmup => rec.warmup.sent += 1,
        }
    }
    newly_sent
}
