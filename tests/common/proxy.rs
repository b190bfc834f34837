//! An in-process HTTP proxy on an ephemeral port, honest or hostile: it relays `CONNECT`
//! tunnels to loopback targets, answers forwarded requests itself (recording their heads), or
//! refuses, stalls, floods or lies. Real proxies (tinyproxy) are in `tests/full/proxy.rs`.

#![allow(dead_code)] // each test module uses a part of it

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
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
}

/// A running proxy: its address and the request heads it read (first line and headers).
pub struct Proxy {
    pub addr: SocketAddr,
    pub heads: Arc<Mutex<Vec<String>>>,
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
    let seen = Arc::clone(&heads);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { continue };
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || serve(s, b, &seen));
        }
    });
    Proxy { addr, heads }
}

fn serve(mut s: TcpStream, b: Behaviour, seen: &Mutex<Vec<String>>) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    loop {
        let Some(head) = read_head(&mut s, &mut buf) else {
            return;
        };
        seen.lock().unwrap().push(head.clone());
        let connect = head.starts_with("CONNECT ");
        match b {
            Behaviour::Honest if connect => return tunnel(s, &head, buf),
            Behaviour::Honest => {
                if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n.")
                    .is_err()
                {
                    return;
                }
            }
            Behaviour::Answer(bytes) => {
                let _ = s.write_all(bytes);
                return drain(s);
            }
            Behaviour::Stall => return drain(s),
            Behaviour::Flood => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Flood: ");
                let chunk = [b'a'; 16 * 1024];
                while s.write_all(&chunk).is_ok() {}
                return;
            }
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
fn tunnel(mut client: TcpStream, head: &str, early: Vec<u8>) {
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
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
        || upstream.write_all(&early).is_err()
    {
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
