//! Where connections go: resolving the target once, picking its address, opening
//! non-blocking TCP connections (or naming the Unix socket), and telling when a connect is
//! done. What travels over them is [`super::stream`]'s business.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream as StdTcpStream, ToSocketAddrs};
use std::time::Duration;

use mio::net::TcpStream;
use socket2::{Domain, Protocol, Socket, Type};

use super::stream::Socket as StreamSocket;
use volley_model::sys::listeners::{self, Answer};

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

/// Resolves `host:port` once (the name is looked up a single time; docs/contract.md, "HTTP/1.1").
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

/// The address a run uses, and what is known of it before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    /// The address used for the whole run.
    pub addr: SocketAddr,
    /// Whether something listens there: `None` when it was not checked (a single remote
    /// address: the run's own connections tell).
    pub listening: Option<bool>,
}

/// The address of a QUIC target: for loopback, the first one a bound UDP socket takes
/// datagrams on ([`listeners::udp_table`]; an IPv6 wildcard counts for IPv4, as servers bind
/// it dual-stack); otherwise the first (UDP cannot be probed without a handshake, whose
/// failure the run then counts).
pub fn pick_udp_address(addrs: &[SocketAddr]) -> Picked {
    let table = listeners::udp_table().filter(|_| addrs.iter().all(|a| a.ip().is_loopback()));
    let Some(table) = table else {
        return Picked {
            addr: addrs[0],
            listening: None,
        };
    };
    let found = addrs
        .iter()
        .find(|a| listeners::answer(&table, **a) != Answer::No);
    Picked {
        addr: *found.unwrap_or(&addrs[0]),
        listening: Some(found.is_some()),
    }
}

/// Picks the address to load, without opening a connection the server would count where
/// that can be avoided: loopback addresses are looked up in the kernel's listening sockets
/// (so `localhost` works whether the server listens on 127.0.0.1 or ::1), a single remote
/// address is used as it is. Probed — one connection per address, closed at once, until one
/// accepts, each within `timeout` — are only a name with several remote addresses, an IPv4
/// loopback address whose only listener is an IPv6 wildcard (it may be IPv6-only), and
/// loopback addresses when the kernel's tables list no listener at all. When none listens
/// the run goes ahead against the first address and counts connect errors.
pub fn pick_address(addrs: &[SocketAddr], timeout: Duration) -> Picked {
    let first = |listening| Picked {
        addr: addrs[0],
        listening,
    };
    let probe = |candidates: &[SocketAddr]| match candidates
        .iter()
        .find(|a| StdTcpStream::connect_timeout(a, timeout).is_ok())
    {
        Some(&addr) => Picked {
            addr,
            listening: Some(true),
        },
        None => first(Some(false)),
    };
    let table = listeners::table().filter(|_| addrs.iter().all(|a| a.ip().is_loopback()));
    if let Some(table) = table {
        let answers: Vec<Answer> = addrs
            .iter()
            .map(|a| listeners::answer(&table, *a))
            .collect();
        if let Some(i) = answers.iter().position(|a| *a == Answer::Yes) {
            return Picked {
                addr: addrs[i],
                listening: Some(true),
            };
        }
        // Only an IPv6 wildcard that may be IPv6-only: a connection tells.
        let maybe: Vec<SocketAddr> = addrs
            .iter()
            .zip(&answers)
            .filter(|(_, a)| **a == Answer::Maybe)
            .map(|(a, _)| *a)
            .collect();
        return if maybe.is_empty() {
            first(Some(false))
        } else {
            probe(&maybe)
        };
    }
    if addrs.len() == 1 {
        return first(None);
    }
    probe(addrs)
}

/// Starts a non-blocking connect with Nagle off (requests are written whole). With `source`,
/// the socket is bound to that local address first (any port).
pub(crate) fn connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<TcpStream> {
    let s = match source {
        None => TcpStream::connect(addr)?,
        Some(ip) => {
            let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
            sock.set_nonblocking(true)?;
            sock.bind(&SocketAddr::new(ip, 0).into())?;
            match sock.connect(&addr.into()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => return Err(e),
            }
            TcpStream::from_std(std::net::TcpStream::from(sock))
        }
    };
    let _ = s.set_nodelay(true);
    Ok(s)
}

/// Local source addresses to spread connections over when a loopback target runs out of
/// ephemeral ports (each source address has its own port range): 127.0.0.2, 127.0.0.3, ...
/// `None` for targets outside 127.0.0.0/8.
pub(crate) fn next_loopback_source(target: SocketAddr, current: Option<IpAddr>) -> Option<IpAddr> {
    let IpAddr::V4(t) = target.ip() else {
        return None;
    };
    if !t.is_loopback() {
        return None;
    }
    let next = match current {
        None => 2,
        Some(IpAddr::V4(c)) => u32::from(c.octets()[3]) + 1,
        Some(_) => return None,
    };
    (next <= 254).then(|| IpAddr::V4(Ipv4Addr::new(127, 0, 0, next as u8)))
}

/// The connect failed because no local port was free.
pub(crate) fn is_port_exhaustion(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EADDRNOTAVAIL)
}

/// Where a run's connections go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP address, resolved once.
    Tcp(SocketAddr),
    /// A Unix domain socket (`--unix-socket`).
    Unix(std::path::PathBuf),
    /// In-memory connections (the `h2_worker` fuzz target's; see [`super::mem`]).
    #[doc(hidden)]
    Mem(super::mem::MemNet),
}

impl std::fmt::Display for Endpoint {
    /// As `target.addr` records it: `127.0.0.1:8080`, `[::1]:80`, `unix:/run/app.sock`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::Mem(_) => write!(f, "mem:"),
        }
    }
}

/// Why a Unix socket cannot be used (checked before the run: exit 2).
pub fn check_unix_socket(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--unix-socket {shown}: {e}"))?;
    if !meta.file_type().is_socket() {
        let what = if meta.is_dir() {
            "a directory"
        } else if meta.is_file() {
            "a regular file"
        } else {
            "not a socket"
        };
        return Err(format!(
            "--unix-socket {shown}: {what}, not a Unix domain socket"
        ));
    }
    Ok(())
}

/// Result of checking a connection that epoll reported writable.
pub(crate) enum ConnectState {
    /// Connected.
    Ready,
    /// Not yet (spurious wake-up).
    Pending,
    /// Failed.
    Failed(io::Error),
}

/// Whether a non-blocking connect finished.
pub(crate) fn connect_state(s: &mut StreamSocket) -> ConnectState {
    match s.take_error() {
        Ok(Some(e)) | Err(e) => return ConnectState::Failed(e),
        Ok(None) => {}
    }
    match s.check_connected() {
        Ok(()) => ConnectState::Ready,
        Err(e) if e.kind() == io::ErrorKind::NotConnected => ConnectState::Pending,
        Err(e) => ConnectState::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_listening_address_is_picked_without_a_connection() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        open.set_nonblocking(true).unwrap();
        let open_addr = open.local_addr().unwrap();
        let second = Duration::from_secs(1);
        let picked = pick_address(&[closed, open_addr], second);
        assert_eq!(picked.addr, open_addr);
        assert_eq!(picked.listening, Some(true));
        // A server that accepts one connection must not lose it to the pick.
        assert_eq!(
            open.accept().map(|_| ()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        let none = pick_address(&[closed], second);
        assert_eq!((none.addr, none.listening), (closed, Some(false)));
        // A single address outside loopback is taken as it is (the run's connects tell).
        let remote: SocketAddr = "192.0.2.1:80".parse().unwrap();
        assert_eq!(pick_address(&[remote], second).listening, None);
    }

    #[test]
    fn loopback_sources_rotate_and_end() {
        let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
        assert_eq!(
            next_loopback_source(lo, None),
            Some("127.0.0.2".parse().unwrap())
        );
        assert_eq!(
            next_loopback_source(lo, Some("127.0.0.9".parse().unwrap())),
            Some("127.0.0.10".parse().unwrap())
        );
        assert_eq!(
            next_loopback_source(lo, Some("127.0.0.254".parse().unwrap())),
            None
        );
        assert_eq!(
            next_loopback_source("10.0.0.1:80".parse().unwrap(), None),
            None
        );
        assert_eq!(
            next_loopback_source("[::1]:80".parse().unwrap(), None),
            None
        );
    }

    #[test]
    fn connects_from_another_loopback_source() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let _s = connect(addr, Some("127.0.0.2".parse().unwrap())).unwrap();
        let (_, peer) = l.accept().unwrap();
        assert_eq!(peer.ip().to_string(), "127.0.0.2");
    }

    #[test]
    fn unresolvable_names_are_an_error() {
        assert!(resolve("name.that.does.not.exist.invalid", 80).is_err());
        assert_eq!(resolve("127.0.0.1", 8080).unwrap()[0].port(), 8080);
    }
}
