//! One QUIC connection on its own connected UDP socket (a distinct 4-tuple per connection, as
//! separate clients would have): datagrams read from the socket go through the worker's
//! endpoint into the connection, what the connection has to send goes out on the socket, and
//! its timers are the worker's to fire. The datagrams waiting are read in batches, one
//! `recvmmsg` each ([`super::udp`]); one datagram per `send` (no GSO: against a server that
//! answers requests, a connection has one datagram to send per turn, its new requests and
//! acknowledgements together, in all but the handshake).

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use quinn_proto::{ConnectionHandle, DatagramEvent, Endpoint, Transmit};

use super::{udp, QuicClient};

/// The largest UDP payload volley sends or takes (quinn keeps datagrams under the path's MTU;
/// a received one is at most this).
pub const MAX_DATAGRAM: usize = 65_527;
/// Datagrams read per readiness before the worker turns to its other connections; a read that
/// took this many may have left some in the socket (read again: no event comes for them).
pub const READ_BUDGET: usize = 64;

/// A QUIC connection and its socket.
pub struct QuicConn {
    /// The endpoint's name for it.
    pub handle: ConnectionHandle,
    /// quinn's state machine.
    pub conn: quinn_proto::Connection,
    socket: UdpSocket,
    /// A datagram the socket would not take yet: its bytes are `out[..len]`.
    pending: Option<Transmit>,
    out: Vec<u8>,
    /// Where the endpoint writes a stateless reply (none is sent: volley is the client).
    reply: Vec<u8>,
    started: Instant,
    /// From the first packet to the handshake's completion.
    pub handshake: Option<Duration>,
    /// The worker's poller watches the socket for room to send: only while a datagram waits
    /// for it, since a UDP socket turns writable again after every datagram it sends.
    pub watch_writable: bool,
    /// Datagrams the endpoint gave to another connection or dropped (should stay 0).
    pub stray: u64,
    /// Set when the handshake checked the server's certificate (a full handshake).
    verified: bool,
}

impl QuicConn {
    /// Opens a UDP socket connected to `remote` (bound to `local` when given) and starts the
    /// handshake; nothing is sent until [`QuicConn::transmit`].
    pub fn connect(
        endpoint: &mut Endpoint,
        client: &QuicClient,
        remote: SocketAddr,
        local: Option<IpAddr>,
        now: Instant,
    ) -> io::Result<QuicConn> {
        let any: IpAddr = match (local, remote) {
            (Some(ip), _) => ip,
            (None, SocketAddr::V4(_)) => IpAddr::from([0u8; 4]),
            (None, SocketAddr::V6(_)) => IpAddr::from([0u16; 8]),
        };
        let socket = UdpSocket::bind(SocketAddr::new(any, 0))?;
        socket.connect(remote)?;
        socket.set_nonblocking(true)?;
        let (handle, conn) = endpoint
            .connect(now, client.config.clone(), remote, &client.server_name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(QuicConn {
            handle,
            conn,
            socket,
            pending: None,
            out: Vec::with_capacity(MAX_DATAGRAM),
            reply: Vec::new(),
            started: now,
            handshake: None,
            watch_writable: false,
            stray: 0,
            verified: false,
        })
    }

    /// Whether the handshake resumed a session: it checked no certificate (meaningful once
    /// the handshake is done).
    pub fn resumed(&self) -> bool {
        !self.verified
    }

    /// The socket, for the poller.
    pub fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// Reads the datagrams waiting (up to a budget, in batches: [`udp::recv_batch`]) into the
    /// connection through `endpoint`; how many. `Ok(0)` when none was waiting. `buf` holds
    /// a batch: at least one [`udp::SLOT`].
    pub fn receive(
        &mut self,
        endpoint: &mut Endpoint,
        buf: &mut [u8],
        now: Instant,
    ) -> io::Result<usize> {
        let remote = self.conn.remote_address();
        let fd = self.socket.as_raw_fd();
        let mut n = 0;
        while n < READ_BUDGET {
            let mut whole = 0;
            // An ICMP unreachable is reported on the next call: the server is not there.
            let batch = udp::recv_batch(fd, buf, READ_BUDGET - n, |datagram| {
                whole += 1;
                let data = bytes::BytesMut::from(datagram);
                self.reply.clear();
                match endpoint.handle(now, remote, None, None, data, &mut self.reply) {
                    Some(DatagramEvent::ConnectionEvent(h, ev)) if h == self.handle => {
                        super::take_verified();
                        self.conn.handle_event(ev);
                        self.verified |= super::take_verified();
                    }
                    _ => self.stray += 1,
                }
            })?;
            // A datagram cut short (longer than a slot) is dropped, as lost on the way.
            self.stray += (batch.count - whole) as u64;
            n += batch.count;
            if !batch.full {
                break;
            }
        }
        self.endpoint_events(endpoint);
        if self.handshake.is_none() && !self.conn.is_handshaking() {
            self.handshake = Some(now.saturating_duration_since(self.started));
        }
        Ok(n)
    }

    /// Sends what the connection has to send. False when the socket would not take more (wait
    /// until it is writable, then call again).
    pub fn transmit(&mut self, now: Instant) -> io::Result<bool> {
        loop {
            if let Some(t) = self.pending.take() {
                match self.socket.send(&self.out[..t.size]) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.pending = Some(t);
                        return Ok(false);
                    }
                    // A refused datagram (ICMP) is lost like any other: QUIC recovers or
                    // times out.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(e),
                }
            }
            self.out.clear();
            match self.conn.poll_transmit(now, 1, &mut self.out) {
                Some(t) => self.pending = Some(t),
                None => return Ok(true),
            }
        }
    }

    /// When the connection's next timer fires.
    pub fn timeout(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    /// Fires the connection's timers that are due at `now`.
    pub fn on_timeout(&mut self, endpoint: &mut Endpoint, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
            self.endpoint_events(endpoint);
        }
    }

    /// What the connection tells the endpoint (retired connection IDs, its end), and back.
    fn endpoint_events(&mut self, endpoint: &mut Endpoint) {
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(back) = endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(back);
            }
        }
    }
}

#[cfg(test)]
mod tests;
