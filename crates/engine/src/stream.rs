//! A connection's byte stream: a TCP or Unix socket, or TLS over either. The worker reads and
//! writes through [`Stream`] the same way for all of them; the TLS side drives rustls (sans-IO)
//! by hand so it fits the edge-triggered loop:
//!
//! - a read that returns fewer bytes than asked means the socket is drained (as for a plain
//!   socket), so the loop can skip the `read()` that would return `EAGAIN`;
//! - a write is accepted only while rustls has nothing left to send from the last one (the
//!   socket's back-pressure reaches the worker), and what the socket did not take is sent on
//!   the next writable event ([`Stream::flush`]).

use std::io::{self, Read, Write};
use std::path::Path;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use rustls::ClientConnection;

use super::ring::RingSocket;
use super::tls::{HandshakeError, TlsClient, TlsFlood, TlsReadError};
use volley_model::stats::transport::TlsSeen;

/// What one read may spend on records that carry no data (tickets, key updates, empty or
/// padded records) before it stops, so that a flood of them cannot hold the worker for as long
/// as it lasts: TLS bytes taken beyond the plaintext returned, and records without data since
/// the read began (or since the data it returned). Above what a normal read spends so (record
/// overheads, a partial record, the few tickets after a handshake). Under io_uring a read takes
/// the bytes of one receive (at most 32 KiB) whole: the receive bounds it, and bytes left over
/// would be copied aside, to pile up while the kernel goes on receiving.
pub(crate) const READ_BUDGET_BYTES: usize = 32 * 1024;
/// See [`READ_BUDGET_BYTES`].
pub(crate) const READ_BUDGET_RECORDS: u64 = 256;

/// TLS records in a row without data after which the server is taken to flood the connection.
/// rustls ends runs of 32 empty records or 32 key updates itself, not a run of tickets (or of
/// tickets between empty records); a server sends a few tickets after a handshake.
pub(crate) const MAX_RECORDS_WITHOUT_DATA: u64 = 1_000;

/// The socket under a stream.
#[derive(Debug)]
pub enum Socket {
    /// TCP.
    Tcp(TcpStream),
    /// A Unix domain socket (`--unix-socket`).
    Unix(UnixStream),
    /// Either, driven by the thread's io_uring (`--io uring`).
    Ring(Box<RingSocket>),
    /// An in-memory connection (the `h2_worker` fuzz target's; see [`super::mem`]).
    #[doc(hidden)]
    Mem(super::mem::MemSocket),
}

impl Socket {
    /// Starts a non-blocking connect to the Unix socket at `path`.
    pub(crate) fn unix(path: &Path) -> io::Result<Socket> {
        UnixStream::connect(path).map(Socket::Unix)
    }

    /// The pending error of a non-blocking connect, if any.
    pub(crate) fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Socket::Tcp(s) => s.take_error(),
            Socket::Unix(s) => s.take_error(),
            Socket::Ring(s) => s.take_error(),
            Socket::Mem(_) => Ok(None),
        }
    }

    /// Whether the connect has finished (`NotConnected` while it has not).
    pub(crate) fn check_connected(&mut self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.peer_addr().map(|_| ()),
            Socket::Unix(s) => s.peer_addr().map(|_| ()),
            Socket::Ring(s) => s.check_connected(),
            Socket::Mem(_) => Ok(()),
        }
    }

    /// Reads what has arrived without taking it: a proxy's answer to `CONNECT` is taken only
    /// up to its end, and the target's first bytes stay.
    pub(crate) fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.peek(buf),
            Socket::Unix(s) => peek_fd(std::os::fd::AsRawFd::as_raw_fd(s), buf),
            Socket::Ring(s) => s.peek(buf),
            Socket::Mem(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// The same socket, driven by this thread's io_uring from now on.
    pub(crate) fn into_ring(self) -> Socket {
        match self {
            Socket::Tcp(s) => Socket::Ring(Box::new(RingSocket::new(s))),
            Socket::Unix(s) => Socket::Ring(Box::new(RingSocket::new(s))),
            ring => ring,
        }
    }
}

/// `recv(MSG_PEEK)` on a non-blocking socket (mio's Unix stream has no `peek`).
fn peek_fd(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes; the fd is open while its socket lives.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_PEEK) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

impl Read for Socket {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
            Socket::Ring(s) => s.read(buf),
            Socket::Mem(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
            Socket::Ring(s) => s.write(buf),
            Socket::Mem(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write_vectored(bufs),
            Socket::Unix(s) => s.write_vectored(bufs),
            Socket::Mem(s) => s.write_vectored(bufs),
            Socket::Ring(s) => {
                let mut n = 0;
                for b in bufs {
                    match s.write(b) {
                        Ok(k) => {
                            n += k;
                            if k < b.len() {
                                break;
                            }
                        }
                        Err(e) if n == 0 => return Err(e),
                        Err(_) => break,
                    }
                }
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection's stream.
#[derive(Debug)]
pub enum Stream {
    /// Cleartext.
    Plain(Socket),
    /// TLS (boxed: rustls's state is large, and most runs have none).
    Tls(Box<TlsStream>),
}

/// How far a TLS handshake got.
#[derive(Debug)]
pub enum Handshake {
    /// Finished: requests may be written.
    Done,
    /// Waiting for the socket.
    Pending,
    /// Failed.
    Failed(HandshakeError),
}

impl Stream {
    /// `socket`, with TLS when `tls` is given (the handshake starts on the first
    /// [`TlsStream::handshake`]).
    pub fn new(socket: Socket, tls: Option<&TlsClient>) -> io::Result<Stream> {
        match tls {
            None => Ok(Stream::Plain(socket)),
            Some(t) => {
                let conn =
                    ClientConnection::new(std::sync::Arc::clone(&t.config), t.server_name.clone())
                        .map_err(io::Error::other)?;
                Ok(Stream::Tls(Box::new(TlsStream {
                    socket,
                    conn,
                    drained: false,
                    head: Head::default(),
                    pending: None,
                    peer_closed: false,
                    finished_pending: false,
                    records: Records::default(),
                    data_at: 0,
                    stopped: false,
                })))
            }
        }
    }

    /// The io_uring socket under the stream, if it is one.
    pub(crate) fn ring_mut(&mut self) -> Option<&mut RingSocket> {
        match self.socket_mut() {
            Socket::Ring(r) => Some(r),
            _ => None,
        }
    }

    /// The socket (mutable: checking an io_uring socket's connect arms its receive).
    pub(crate) fn socket_mut(&mut self) -> &mut Socket {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &mut t.socket,
        }
    }

    /// Reads decrypted bytes; fewer than `buf.len()` means the socket is drained.
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }

    /// TLS holds something for the next read although the last one came back short: the end
    /// of the stream (close_notify) or an error that followed the bytes returned. The reader
    /// must read once more instead of waiting for an event that will not come.
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        match self {
            Stream::Plain(_) => false,
            Stream::Tls(t) => t.pending.is_some(),
        }
    }

    /// The last read stopped at its budget ([`READ_BUDGET_BYTES`]) although the socket may hold
    /// more: the reader must come back to it (edge-triggered, no event will say so), after its
    /// other work.
    #[inline]
    pub(crate) fn stopped_at_budget(&self) -> bool {
        matches!(self, Stream::Tls(t) if t.stopped)
    }

    /// Writes (for TLS: encrypts and sends) as much of `buf` as the socket takes.
    #[inline]
    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }

    /// [`Stream::write`] of bytes from the run's shared request stream, which an io_uring
    /// socket sends without copying them.
    #[inline]
    pub(crate) fn write_shared(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            // SAFETY: callers pass only `engine::Shared::stream_bytes`, which the engine holds
            // until every worker (and its ring) has ended.
            Stream::Plain(Socket::Ring(r)) => unsafe { r.write_stable(buf) },
            other => other.write(buf),
        }
    }

    /// Sends what TLS still holds of earlier writes (`WouldBlock` while the socket is full).
    #[inline]
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(_) => Ok(()),
            Stream::Tls(t) => t.flush_tls(),
        }
    }
}

impl Socket {
    /// What epoll registers: the socket itself, plain or under TLS (`None` under io_uring:
    /// its ring is told of it instead).
    fn source(&mut self) -> Option<&mut dyn Source> {
        match self {
            Socket::Tcp(s) => Some(s),
            Socket::Unix(s) => Some(s),
            Socket::Ring(_) | Socket::Mem(_) => None,
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self.socket_mut().source() {
            Some(s) => s.register(r, t, i),
            None => Ok(()),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self.socket_mut().source() {
            Some(s) => s.reregister(r, t, i),
            None => Ok(()),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self.socket_mut().source() {
            Some(s) => s.deregister(r),
            None => Ok(()),
        }
    }
}

/// The first bytes a server sent during the handshake, kept inline (no allocation per
/// connection) so that a plain-HTTP answer on a TLS port can be named.
#[derive(Debug, Default)]
struct Head {
    bytes: [u8; 32],
    len: u8,
}

/// TLS over a socket.
#[derive(Debug)]
pub struct TlsStream {
    socket: Socket,
    conn: ClientConnection,
    /// The last socket read returned less than asked: no more bytes until the next event.
    drained: bool,
    head: Head,
    /// What the next read returns, found after bytes that were returned first: the end of
    /// the stream (`Ok(0)`) or an error (the socket's is reported once by the kernel).
    pending: Option<io::Result<usize>>,
    /// The server ended the stream (close_notify or its FIN): nothing to say back.
    peer_closed: bool,
    /// The handshake ended with the client's last flight still to send (see `handshake`).
    finished_pending: bool,
    /// The records read from the socket.
    records: Records,
    /// `records.seen` when data last came (or the handshake ended).
    data_at: u64,
    /// The last read stopped at its budget ([`READ_BUDGET_BYTES`]).
    stopped: bool,
}

/// Counts the TLS records in the bytes read from the socket by their 5-byte headers, in
/// whatever pieces the bytes arrive.
#[derive(Debug, Default)]
struct Records {
    /// Records whose header was read.
    seen: u64,
    /// Bytes of the current record's body still to come.
    body_left: usize,
    /// Bytes of the next header read so far (0 to 4).
    header_len: u8,
    /// The first byte of that header's length.
    length_hi: u8,
}

impl Records {
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            if self.body_left > 0 {
                let skip = self.body_left.min(bytes.len());
                self.body_left -= skip;
                bytes = &bytes[skip..];
                continue;
            }
            bytes = rest;
            match self.header_len {
                3 => self.length_hi = b,
                4 => {
                    self.body_left = usize::from(u16::from_be_bytes([self.length_hi, b]));
                    self.seen += 1;
                    self.header_len = 0;
                    continue;
                }
                _ => {}
            }
            self.header_len += 1;
        }
    }
}

impl Drop for TlsStream {
    /// Closing says so (close_notify), best effort and without waiting: servers otherwise
    /// log an unexpected end of stream. Not after the server closed (`Connection: close`):
    /// the write would only draw a reset.
    fn drop(&mut self) {
        if !self.conn.is_handshaking() && !self.peer_closed {
            self.conn.send_close_notify();
            let _ = self.flush_tls();
        }
    }
}

/// A reader that tells whether the socket gave less than asked (so it is drained), counts the
/// records, and keeps the first bytes of a handshake.
struct Counting<'a> {
    socket: &'a mut Socket,
    short: bool,
    records: &'a mut Records,
    head: Option<&'a mut Head>,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.socket.read(buf)?;
        self.short = n < buf.len();
        self.records.feed(&buf[..n]);
        if let Some(h) = self.head.as_deref_mut() {
            let room = h.bytes.len() - h.len as usize;
            let take = room.min(n);
            h.bytes[h.len as usize..h.len as usize + take].copy_from_slice(&buf[..take]);
            h.len += take as u8;
        }
        Ok(n)
    }
}

impl TlsStream {
    /// Drives the handshake as far as the socket allows.
    pub fn handshake(&mut self) -> Handshake {
        loop {
            if !self.conn.is_handshaking() {
                // The client's last flight (its Finished) is not flushed here: it leaves with
                // the first request in one write ([`Stream::write`]), or with the flush the
                // worker makes when no request waits.
                self.finished_pending = self.conn.wants_write();
                self.data_at = self.records.seen;
                return Handshake::Done;
            }
            match self.flush_tls() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Handshake::Pending,
                Err(e) => return Handshake::Failed(HandshakeError::Io(e)),
            }
            let mut rd = Counting {
                socket: &mut self.socket,
                short: false,
                records: &mut self.records,
                head: Some(&mut self.head),
            };
            match self.conn.read_tls(&mut rd) {
                Ok(0) => {
                    return Handshake::Failed(HandshakeError::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    )))
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Handshake::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Handshake::Failed(HandshakeError::Io(e)),
            }
            if let Err(error) = self.conn.process_new_packets() {
                // Tell the server why (rustls queued an alert), then give up.
                let _ = self.flush_tls();
                let head = self.head.bytes[..self.head.len as usize].to_vec();
                return Handshake::Failed(HandshakeError::Tls { error, head });
            }
        }
    }

    /// What the handshake settled, and whether it resumed a session.
    pub(crate) fn negotiated(&self) -> (TlsSeen, bool) {
        let seen = TlsSeen {
            version: self.conn.protocol_version().map(version_name),
            cipher: self
                .conn
                .negotiated_cipher_suite()
                .map(|s| format!("{:?}", s.suite())),
            alpn: self
                .conn
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        };
        let resumed = self.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        (seen, resumed)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stopped = false;
        if let Some(r) = self.pending.take() {
            return r;
        }
        let mut filled = 0;
        // TLS bytes this call took from the socket, and the records seen before it.
        let mut taken = 0usize;
        let start = self.records.seen;
        loop {
            match self.conn.reader().read(&mut buf[filled..]) {
                // The server's close_notify: the end of the stream.
                Ok(0) => return self.end(filled, Ok(0)),
                Ok(n) => {
                    filled += n;
                    self.data_at = self.records.seen;
                    if filled == buf.len() {
                        return Ok(filled);
                    }
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The socket ended without close_notify: for HTTP, a close like any other.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return self.end(filled, Ok(0))
                }
                Err(e) => return self.end(filled, Err(e)),
            }
            if self.records.seen - self.data_at > MAX_RECORDS_WITHOUT_DATA {
                let e = io::Error::new(io::ErrorKind::InvalidData, TlsFlood);
                return self.end(filled, Err(e));
            }
            // Only with bytes to return: a short read without plaintext (a partial record, a
            // ticket) may have come with the peer's FIN or reset, which only a read sees.
            if self.drained && filled > 0 {
                self.drained = false;
                return Ok(filled);
            }
            if !self.drained && self.over_budget(taken.saturating_sub(filled), start) {
                self.stopped = true;
                return match filled {
                    0 => Err(io::ErrorKind::WouldBlock.into()),
                    n => Ok(n),
                };
            }
            self.drained = false;
            let mut rd = Counting {
                socket: &mut self.socket,
                short: false,
                records: &mut self.records,
                head: None,
            };
            match self.conn.read_tls(&mut rd) {
                Ok(0) => {}
                Ok(n) => {
                    taken += n;
                    self.drained = rd.short;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && filled > 0 => return Ok(filled),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.end(filled, Err(e)),
            }
            if let Err(e) = self.conn.process_new_packets() {
                let _ = self.flush_tls();
                let e = io::Error::new(io::ErrorKind::InvalidData, TlsReadError(e));
                return self.end(filled, Err(e));
            }
            // rustls may owe the server an answer (a key update, an alert).
            if self.conn.wants_write() {
                match self.flush_tls() {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return self.end(filled, Err(e)),
                }
            }
        }
    }

    /// Whether a read that began at `start` records and took `spent` TLS bytes beyond the
    /// plaintext it returned spent its budget (never under io_uring, see [`READ_BUDGET_BYTES`]).
    fn over_budget(&self, spent: usize, start: u64) -> bool {
        let quiet = self.records.seen - self.data_at.max(start);
        !matches!(self.socket, Socket::Ring(_))
            && (spent >= READ_BUDGET_BYTES || quiet >= READ_BUDGET_RECORDS)
    }

    /// What ends a read after `filled` bytes: returned now when there are none, else kept for
    /// the next call so the bytes go first (they are never dropped).
    fn end(&mut self, filled: usize, r: io::Result<usize>) -> io::Result<usize> {
        if matches!(r, Ok(0)) {
            self.peer_closed = true;
        }
        if filled == 0 {
            return r;
        }
        self.pending = Some(r);
        Ok(filled)
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Nothing new while the last records are not on the wire: the socket is full. Only
        // the handshake's last flight may wait for the first request, to share its write.
        if std::mem::take(&mut self.finished_pending) {
            // Nothing of it was tried yet: the socket has room.
        } else {
            self.flush_tls()?;
        }
        let n = self.conn.writer().write(buf)?;
        match self.flush_tls() {
            Ok(()) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(n),
            Err(e) => Err(e),
        }
    }

    fn flush_tls(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.socket) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn version_name(v: rustls::ProtocolVersion) -> String {
    match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".into(),
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".into(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of `lengths`, each with its 5-byte header (the body's bytes do not matter).
    fn stream_of(lengths: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for &len in lengths {
            out.extend_from_slice(&[0x17, 0x03, 0x03]);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend(std::iter::repeat_n(0x05, usize::from(len)));
        }
        out
    }

    #[test]
    fn records_are_counted_in_whatever_pieces_they_arrive() {
        let lengths = [0, 1, 17, 5, 0, 0, 300, 16_401, 4, 65_535, 22];
        let bytes = stream_of(&lengths);
        for piece in [1, 2, 3, 4, 5, 6, 7, 22, 4096, bytes.len()] {
            let mut r = Records::default();
            for chunk in bytes.chunks(piece) {
                r.feed(chunk);
            }
            assert_eq!(r.seen, lengths.len() as u64, "pieces of {piece}");
            assert_eq!(r.body_left, 0);
        }
        // The first two records whole, the third's header: it counts, its body is to come.
        let mut r = Records::default();
        r.feed(&bytes[..5 + (5 + 1) + 5]);
        assert_eq!((r.seen, r.body_left), (3, 17));
    }

    #[test]
    fn a_flood_names_its_bound() {
        let e = io::Error::new(io::ErrorKind::InvalidData, TlsFlood);
        assert_eq!(
            e.to_string(),
            "TLS: the server sent more than 1,000 records in a row without any data \
             (tickets, key updates or empty records: a flood)"
        );
        assert!(
            TlsReadError::of(&e).is_none(),
            "not an alert: no set-up failure"
        );
    }
}
