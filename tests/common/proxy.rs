//! An in-process HTTP proxy on an ephemeral port, honest or hostile: it relays `CONNECT`
//! tunnels to loopback targets, answers forwarded requests itself (recording their heads), or
//! refuses, stalls, floods or lies. Real proxies (tinyproxy) are in `tests/full/proxy.rs`.

#![allow(dead_code)] // each test module uses a part of it

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does with each connection.
#[derive(Clone, Copy)]
pub enum Behaviour {
    /// `CONNECT`: 200, then relays bytes both ways. A forwarded request: answers 200 `.`.
    Honest,
    /// Answers `CONNECT` with these bytes and waits for the client to close.
    Answer(&'static [u8]),
    /// Reads the `CONNECT` and never answers.
    Stall,
    /// Answers with a head that never ends: endless header bytes until the client closes.
    Flood,
    /// Honest, but its answer to `CONNECT` comes in two writes 200 ms apart.
    SplitAnswer,
    /// Writes the start of an answer, then closes.
    PartialThenClose,
    /// Honest, but it waits up to 300 ms for the target's first bytes and writes them in the
    /// same write as its answer (a target that speaks first, such as an HTTP/2 server's
    /// SETTINGS, arrives with the head).
    Coalescing,
    /// Honest for its first `n` connections, then answers every `CONNECT` with these bytes.
    HonestThen(usize, &'static [u8]),
}

/// A running proxy: its address and the request heads it read (first line and headers).
pub struct Proxy {
    pub addr: SocketAddr,
    pub heads: Arc<Mutex<Vec<String>>>,
    /// `Coalescing`: bytes of the target written in the same write as an answer.
    pub coalesced: Arc<AtomicU64>,
}

impl Proxy {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Starts a proxy doing `b` on every connection.
pub fn start(b: Behaviour) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let heads: Arc<Mutex<Vec<String>>> = Arc::default();
    let coalesced: Arc<AtomicU64> = Arc::default();
    let (seen, early) = (Arc::clone(&heads), Arc::clone(&coalesced));
    std::thread::spawn(move || {
        for (k, s) in listener.incoming().enumerate() {
            let Ok(s) = s else { continue };
            let (seen, early) = (Arc::clone(&seen), Arc::clone(&early));
            let b = match b {
                Behaviour::HonestThen(n, _) if k < n => Behaviour::Honest,
                Behaviour::HonestThen(_, answer) => Behaviour::Answer(answer),
                other => other,
            };
            std::thread::spawn(move || serve(s, b, &seen, &early));
        }
    });
    Proxy {
        addr,
        heads,
        coalesced,
    }
}

fn serve(mut s: TcpStream, b: Behaviour, seen: &Mutex<Vec<String>>, early: &AtomicU64) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    loop {
        let Some(head) = read_head(&mut s, &mut buf) else {
            return;
        };
        seen.lock().unwrap().push(head.clone());
        let connect = head.starts_with("CONNECT ");
        let honest = matches!(
            b,
            Behaviour::Honest | Behaviour::SplitAnswer | Behaviour::Coalescing
        );
        match b {
            _ if honest && connect => return tunnel(s, &head, buf, b, early),
            _ if honest => {
                let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n.";
                if s.write_all(ok).is_err() {
                    return;
                }
            }
            Behaviour::Answer(bytes) => {
                let _ = s.write_all(bytes);
                return drain(s);
            }
            Behaviour::PartialThenClose => {
                let _ = s.write_all(b"HTTP/1.1 200 Conn");
                return;
            }
            Behaviour::Flood => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Flood: ");
                let chunk = [b'a'; 16 * 1024];
                while s.write_all(&chunk).is_ok() {}
                return;
            }
            _ => return drain(s),
        }
    }
}

/// Reads one request head (without a body: a CONNECT or a GET), leaving what follows in `buf`.
fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            return Some(head);
        }
        let mut tmp = [0u8; 4096];
        match s.read(&mut tmp) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

/// Opens the tunnel to the loopback target the `CONNECT` names and relays until either side
/// closes.
fn tunnel(mut client: TcpStream, head: &str, early: Vec<u8>, b: Behaviour, sent_early: &AtomicU64) {
    let authority = head.split(' ').nth(1).unwrap_or("");
    use std::net::ToSocketAddrs;
    let target = match authority.to_socket_addrs().ok().and_then(|mut a| a.next()) {
        Some(a) if a.ip().is_loopback() => a,
        _ => {
            let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            return;
        }
    };
    let Ok(mut upstream) = TcpStream::connect_timeout(&target, Duration::from_secs(2)) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let _ = upstream.set_nodelay(true);
    let answer = b"HTTP/1.1 200 Connection established\r\n\r\n";
    let sent = match b {
        Behaviour::SplitAnswer => {
            let first = client.write_all(&answer[..17]);
            std::thread::sleep(Duration::from_millis(200));
            first.and_then(|()| client.write_all(&answer[17..]))
        }
        Behaviour::Coalescing => {
            let mut both = answer.to_vec();
            let _ = upstream.set_read_timeout(Some(Duration::from_millis(300)));
            let mut first = [0u8; 4096];
            if let Ok(n) = upstream.read(&mut first) {
                both.extend_from_slice(&first[..n]);
                sent_early.fetch_add(n as u64, Ordering::SeqCst);
            }
            let _ = upstream.set_read_timeout(None);
            client.write_all(&both)
        }
        _ => client.write_all(answer),
    };
    if sent.is_err() || upstream.write_all(&early).is_err() {
        return;
    }
    let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c2, &mut u2);
        let _ = u2.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}

/// Reads until the client closes.
fn drain(mut s: TcpStream) {
    let mut tmp = [0u8; 4096];
    while matches!(s.read(&mut tmp), Ok(n) if n > 0) {}
}
