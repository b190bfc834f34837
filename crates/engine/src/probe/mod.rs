//! The one blocking client for the requests volley asks outside a load: the suite harness's
//! readiness checks (HTTP/1.1, TLS, HTTP/2 over TLS, h2c) and `--verify`'s one request per
//! request of a run (docs/contract.md, "Suites" and `--verify`). A connection over TCP or a
//! Unix socket with timeouts, TLS when asked, that keeps the first bytes it read (to tell a
//! plain-HTTP answer from TLS); a status line read ([`Probe::http1_status`]), a whole
//! HTTP/1.1 response through the engine's parser ([`Probe::exchange`]), a whole HTTP/2
//! response through the engine's session ([`Probe::exchange_h2`], [`session`]), a whole
//! HTTP/3 one on a QUIC connection of its own ([`h3::exchange_h3`]), and the readiness
//! check's HTTP/2 in [`h2`]. Not the hot path: std's blocking sockets, one request per connection.

pub mod h2;
pub mod h3;
pub mod session;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use crate::response::{ResponseObserver, ResponseParser};

/// A blocking connection for one request: plain or TLS.
pub struct Probe {
    io: Io,
}

enum Io {
    Plain(Sniff),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, Sniff>>),
}

/// The socket under a probe, keeping the first bytes it read.
struct Sniff {
    socket: Socket,
    first: Vec<u8>,
}

enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Probe {
    /// A TCP connection to `addr` made within `connect`, whose reads and writes wait at most
    /// `io`.
    pub fn tcp(addr: SocketAddr, connect: Duration, io: Duration) -> std::io::Result<Probe> {
        let s = TcpStream::connect_timeout(&addr, connect)?;
        s.set_read_timeout(Some(io))?;
        s.set_write_timeout(Some(io))?;
        Ok(Probe::over(Socket::Tcp(s)))
    }

    /// A connection to the Unix socket `path`, whose reads and writes wait at most `io`.
    pub fn unix(path: &Path, io: Duration) -> std::io::Result<Probe> {
        let s = UnixStream::connect(path)?;
        s.set_read_timeout(Some(io))?;
        s.set_write_timeout(Some(io))?;
        Ok(Probe::over(Socket::Unix(s)))
    }

    fn over(socket: Socket) -> Probe {
        let first = Vec::new();
        Probe {
            io: Io::Plain(Sniff { socket, first }),
        }
    }

    /// The same connection with a TLS client on it (the handshake runs with the first read
    /// or write, or [`Probe::handshake`]).
    pub fn tls(
        self,
        config: Arc<rustls::ClientConfig>,
        name: ServerName<'static>,
    ) -> Result<Probe, rustls::Error> {
        let sock = match self.io {
            Io::Plain(s) => s,
            Io::Tls(t) => return Ok(Probe { io: Io::Tls(t) }),
        };
        let conn = rustls::ClientConnection::new(config, name)?;
        let tls = rustls::StreamOwned::new(conn, sock);
        Ok(Probe {
            io: Io::Tls(Box::new(tls)),
        })
    }

    /// Finishes the TLS handshake (nothing in plain).
    pub fn handshake(&mut self) -> std::io::Result<()> {
        if let Io::Tls(t) = &mut self.io {
            while t.conn.is_handshaking() {
                t.conn.complete_io(&mut t.sock)?;
            }
        }
        Ok(())
    }

    /// The protocol the TLS handshake chose by ALPN.
    pub fn alpn(&self) -> Option<&[u8]> {
        match &self.io {
            Io::Tls(t) => t.conn.alpn_protocol(),
            Io::Plain(_) => None,
        }
    }

    /// The first bytes (at most 8) the peer sent, before any TLS.
    pub fn first_bytes(&self) -> &[u8] {
        match &self.io {
            Io::Plain(s) => &s.first,
            Io::Tls(t) => &t.sock.first,
        }
    }

    /// Through a proxy: writes its `CONNECT` (`request`) and reads the answer's head, a byte at
    /// a time so that nothing of the target's is taken (one connection: the cost is nothing).
    pub fn tunnel(&mut self, request: &[u8]) -> Result<(), String> {
        self.write_all(request)
            .and_then(|()| self.flush())
            .map_err(|e| format!("proxy: write CONNECT: {e}"))?;
        let mut head = Vec::with_capacity(256);
        let mut byte = [0u8; 1];
        loop {
            match crate::proxy::parse_reply(&head) {
                crate::proxy::Reply::Open { .. } => return Ok(()),
                crate::proxy::Reply::Refused { reason, .. }
                | crate::proxy::Reply::Broken(reason) => return Err(reason),
                crate::proxy::Reply::Incomplete => {}
            }
            match self.read(&mut byte) {
                Ok(0) => {
                    return Err("the proxy closed the connection before answering CONNECT".into())
                }
                Ok(_) => head.push(byte[0]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("proxy: read the answer to CONNECT: {e}")),
            }
        }
    }

    /// Sends `GET path` (`Host: host`) in HTTP/1.1 and reads the status line of the answer.
    pub fn http1_status(&mut self, host: &str, path: &str) -> std::io::Result<u16> {
        write!(
            self,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: volley-ready\r\nConnection: close\r\n\r\n"
        )?;
        self.flush()?;
        let mut buf = Vec::with_capacity(256);
        let mut chunk = [0u8; 256];
        while !buf.windows(2).any(|w| w == b"\r\n") && buf.len() < 4096 {
            let n = self.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        status_line(&buf)
    }

    /// Writes `bytes` (one HTTP/1.1 request) and reads one response through the engine's
    /// parser, telling `seen` what it parses: the status and the body's length. `head`: the
    /// request was a HEAD. At most `timeout` for the whole response.
    pub fn exchange(
        &mut self,
        bytes: &[u8],
        head: bool,
        timeout: Duration,
        seen: &mut impl ResponseObserver,
    ) -> Result<(u16, u64), String> {
        self.write_all(bytes).map_err(|e| format!("write: {e}"))?;
        self.flush().map_err(|e| format!("write: {e}"))?;
        let mut parser = ResponseParser::new(head);
        let mut buf = vec![0u8; 64 * 1024];
        let deadline = Instant::now() + timeout;
        loop {
            if Instant::now() > deadline {
                let s = timeout.as_secs_f64();
                return Err(format!("no complete response within {s} s"));
            }
            let n = match self.read(&mut buf) {
                Ok(0) => {
                    return match parser.eof() {
                        Ok(Some(r)) => Ok((r.status, r.body_bytes)),
                        _ => Err("the connection closed before a complete response".into()),
                    }
                }
                Ok(n) => n,
                // A signal handled elsewhere in the process interrupted the wait: wait again.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read: {e}")),
            };
            let mut off = 0;
            while off < n {
                let (used, done) = parser
                    .feed_with(&buf[off..n], seen)
                    .map_err(|e| format!("not HTTP/1.1: {e}"))?;
                if let Some(r) = done {
                    return Ok((r.status, r.body_bytes));
                }
                off += used;
            }
        }
    }
}

/// The status of an answer that starts with `buf`, or what it is instead.
fn status_line(buf: &[u8]) -> std::io::Result<u16> {
    let line = String::from_utf8_lossy(buf);
    let line = line.lines().next().unwrap_or("");
    let mut parts = line.split_whitespace();
    match (
        parts.next(),
        parts.next().and_then(|c| c.parse::<u16>().ok()),
    ) {
        (Some(v), Some(code)) if v.starts_with("HTTP/") => Ok(code),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            if line.is_empty() {
                "closed without an HTTP response".to_string()
            } else if matches!(buf.first(), Some(0x15 | 0x16)) {
                // A TLS record: an alert or a handshake.
                "the server answered with TLS (set protocol = \"https\" in the scenario)"
                    .to_string()
            } else {
                let start: String = line.chars().take(60).collect();
                format!("not an HTTP response: `{start}`")
            },
        )),
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Socket::Tcp(s) => s.flush(),
            Socket::Unix(s) => s.flush(),
        }
    }
}

impl Read for Sniff {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.socket.read(buf)?;
        let want = 8usize.saturating_sub(self.first.len()).min(n);
        self.first.extend_from_slice(&buf[..want]);
        Ok(n)
    }
}

impl Write for Sniff {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.socket.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.socket.flush()
    }
}

impl Read for Probe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.io {
            Io::Plain(s) => s.read(buf),
            Io::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Probe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.io {
            Io::Plain(s) => s.write(buf),
            Io::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.io {
            Io::Plain(s) => s.flush(),
            Io::Tls(t) => t.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_or_what_came_instead() {
        assert_eq!(status_line(b"HTTP/1.1 204 No Content\r\n").unwrap(), 204);
        let e = |b: &[u8]| status_line(b).unwrap_err().to_string();
        assert_eq!(e(b""), "closed without an HTTP response");
        assert!(e(b"\x15\x03\x03\x00\x02\x02\x46").contains("answered with TLS"));
        assert_eq!(
            e(b"SSH-2.0-OpenSSH\r\n"),
            "not an HTTP response: `SSH-2.0-OpenSSH`"
        );
    }
}
