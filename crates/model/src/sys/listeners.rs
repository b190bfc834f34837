//! Which local addresses have a listening TCP socket, read from `/proc/net/tcp` and
//! `/proc/net/tcp6` (the current network namespace's) — or, for QUIC, a bound unconnected UDP
//! socket (`/proc/net/udp*`, [`udp_table`]). Volley uses it to pick the address of a
//! loopback target without connecting: a probe connection is one more connection the server
//! counts, and a server that accepts a single connection would then fail the run's first
//! request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// TCP state `LISTEN` in `/proc/net/tcp*`.
const LISTEN: &str = "0A";
/// The state of a bound UDP socket that takes datagrams from anyone (`TCP_CLOSE`; a connected
/// one, a client's, is `ESTABLISHED`) in `/proc/net/udp*`.
const UNCONNECTED: &str = "07";

/// What the tables say of one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A socket listens on the address or its family's wildcard.
    Yes,
    /// Only an IPv6 wildcard listens, for an IPv4 address: it takes IPv4 unless it was
    /// opened IPv6-only (nginx's `listen [::]:80`, `net.ipv6.bindv6only`), which the tables
    /// do not show.
    Maybe,
    /// Nothing listens there.
    No,
}

/// The listening addresses of this network namespace; `None` when the tables cannot be read
/// or hold no listening socket at all (a system whose tables do not reflect its sockets).
pub fn table() -> Option<Vec<SocketAddr>> {
    let v4 = std::fs::read_to_string("/proc/net/tcp").ok();
    let v6 = std::fs::read_to_string("/proc/net/tcp6").ok();
    let mut listening = parse(v4.as_deref().unwrap_or(""));
    listening.extend(parse(v6.as_deref().unwrap_or("")));
    (!listening.is_empty()).then_some(listening)
}

/// The addresses bound UDP sockets take datagrams on from anyone (a QUIC server's), as
/// [`table`] for TCP.
pub fn udp_table() -> Option<Vec<SocketAddr>> {
    let mut bound = Vec::new();
    for path in ["/proc/net/udp", "/proc/net/udp6"] {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        bound.extend(sockets_in(&text, UNCONNECTED).into_iter().map(|l| l.addr));
    }
    (!bound.is_empty()).then_some(bound)
}

/// Whether something listens on `addr` (reads the tables; `None` as for [`table`]).
#[cfg(test)]
fn is_listening(addr: SocketAddr) -> Option<Answer> {
    table().map(|l| answer(&l, addr))
}

/// What `listening` says of `target`.
pub fn answer(listening: &[SocketAddr], target: SocketAddr) -> Answer {
    if accepts(listening, target) {
        return Answer::Yes;
    }
    let v6_wildcard = listening
        .iter()
        .any(|l| l.port() == target.port() && l.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    if target.is_ipv4() && v6_wildcard {
        Answer::Maybe
    } else {
        Answer::No
    }
}

/// The listening addresses of a `/proc/net/tcp` or `/proc/net/tcp6` table.
pub fn parse(table: &str) -> Vec<SocketAddr> {
    parse_sockets(table).into_iter().map(|l| l.addr).collect()
}

/// A listening socket: its address and its inode (what `/proc/PID/fd/N` links to as
/// `socket:[INODE]`, so the process holding it can be found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    /// Local address.
    pub addr: SocketAddr,
    /// Socket inode.
    pub inode: u64,
}

/// The listening sockets of this network namespace, IPv4 and IPv6 (empty when the tables
/// cannot be read).
pub fn sockets() -> Vec<Listener> {
    let mut out = Vec::new();
    for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(t) = std::fs::read_to_string(path) {
            out.extend(parse_sockets(&t));
        }
    }
    out
}

/// The listening sockets of a `/proc/net/tcp` or `/proc/net/tcp6` table.
pub(crate) fn parse_sockets(table: &str) -> Vec<Listener> {
    sockets_in(table, LISTEN)
}

/// The sockets of a `/proc/net/{tcp,udp}*` table in `state`.
fn sockets_in(table: &str, state: &str) -> Vec<Listener> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            // sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.get(3) != Some(&state) {
                return None;
            }
            Some(Listener {
                addr: parse_addr(f.get(1)?)?,
                inode: f.get(9)?.parse().ok()?,
            })
        })
        .collect()
}

/// Whether a socket listening on one of `listening` surely takes connections to `target`:
/// the same address, the wildcard of its family, or the IPv4-mapped form of an IPv4 address.
fn accepts(listening: &[SocketAddr], target: SocketAddr) -> bool {
    listening.iter().any(|l| {
        l.port() == target.port()
            && match (l.ip(), target.ip()) {
                (a, b) if a == b => true,
                (IpAddr::V4(a), IpAddr::V4(_)) => a.is_unspecified(),
                (IpAddr::V6(a), IpAddr::V6(_)) => a.is_unspecified(),
                (IpAddr::V6(a), IpAddr::V4(b)) => a.to_ipv4_mapped() == Some(b),
                (IpAddr::V4(_), IpAddr::V6(_)) => false,
            }
    })
}

/// `0100007F:1F90` (IPv4, each 32-bit word in host byte order) or 32 hex digits (IPv6).
fn parse_addr(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As a little-endian machine writes them.
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:1F91 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1 0 100 0 0 10 0
";

    fn at(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn listeners_are_read_and_matched_like_the_kernel_would() {
        let mut l = parse(TCP);
        assert_eq!(
            l,
            [at("127.0.0.1:8080"), at("0.0.0.0:80")],
            "not the established one"
        );
        l.extend(parse(TCP6));
        assert_eq!(&l[2..], [at("[::1]:8082"), at("[::]:3000")]);
        let yes = |a| answer(&l, at(a)) == Answer::Yes;
        assert!(yes("127.0.0.1:8080"));
        assert_eq!(
            answer(&l, at("[::1]:8080")),
            Answer::No,
            "127.0.0.1 does not take ::1"
        );
        assert!(yes("127.0.0.1:80"), "the IPv4 wildcard");
        assert!(yes("[::1]:8082"));
        assert_eq!(answer(&l, at("127.0.0.1:8082")), Answer::No);
        assert!(yes("[::1]:3000"));
        assert_eq!(
            answer(&l, at("127.0.0.1:3000")),
            Answer::Maybe,
            "an IPv6 wildcard may be IPv6-only"
        );
        assert_eq!(
            answer(&l, at("127.0.0.1:8081")),
            Answer::No,
            "connected, not listening"
        );
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn listeners_carry_their_inode() {
        let l = parse_sockets(TCP6);
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].addr, at("[::]:3000"));
        assert_eq!(l[1].inode, 5);
    }

    #[test]
    fn a_listener_of_this_process_is_seen() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        assert_eq!(is_listening(addr), Some(Answer::Yes));
        drop(l);
        assert_eq!(is_listening(addr), Some(Answer::No));
    }
}
