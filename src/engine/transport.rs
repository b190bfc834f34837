//! TCP transport: resolving the target once and opening non-blocking connections.
//! (TLS and Unix sockets will sit behind this seam.)

use std::io;
use std::net::{SocketAddr, TcpStream as StdTcpStream, ToSocketAddrs};
use std::time::Duration;

use mio::net::TcpStream;

/// Why the target cannot be reached before the run starts.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The host name does not resolve.
    #[error("URL: cannot resolve host `{host}`: {reason}")]
    Dns {
        /// The host.
        host: String,
        /// The resolver's reason.
        reason: String,
    },
}

/// Resolves `host:port` once (DESIGN §3: the name is looked up a single time).
pub fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| ResolveError::Dns {
            host: host.to_string(),
            reason: e.to_string(),
        })?
        .collect();
    if addrs.is_empty() {
        return Err(ResolveError::Dns {
            host: host.to_string(),
            reason: "no addresses".into(),
        });
    }
    Ok(addrs)
}

/// Picks the first address that accepts a connection (so `localhost` works whether the server
/// listens on 127.0.0.1 or ::1). `None` when none accepts: the run then goes ahead against the
/// first address and counts connect errors.
pub fn pick_address(addrs: &[SocketAddr], timeout: Duration) -> Option<SocketAddr> {
    addrs
        .iter()
        .find(|a| StdTcpStream::connect_timeout(a, timeout).is_ok())
        .copied()
}

/// Starts a non-blocking connect with Nagle off (requests are written whole).
pub fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect(addr)?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

/// Result of checking a connection that epoll reported writable.
pub enum ConnectState {
    /// Connected.
    Ready,
    /// Not yet (spurious wake-up).
    Pending,
    /// Failed.
    Failed(io::Error),
}

/// Whether a non-blocking connect finished.
pub fn connect_state(s: &TcpStream) -> ConnectState {
    match s.take_error() {
        Ok(Some(e)) | Err(e) => return ConnectState::Failed(e),
        Ok(None) => {}
    }
    match s.peer_addr() {
        Ok(_) => ConnectState::Ready,
        Err(e) if e.kind() == io::ErrorKind::NotConnected => ConnectState::Pending,
        Err(e) => ConnectState::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_address_that_accepts_is_picked() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open_addr = open.local_addr().unwrap();
        let picked = pick_address(&[closed, open_addr], Duration::from_secs(1));
        assert_eq!(picked, Some(open_addr));
        assert_eq!(pick_address(&[closed], Duration::from_secs(1)), None);
    }

    #[test]
    fn unresolvable_names_are_an_error() {
        assert!(resolve("name.that.does.not.exist.invalid", 80).is_err());
        assert_eq!(resolve("127.0.0.1", 8080).unwrap()[0].port(), 8080);
    }
}
