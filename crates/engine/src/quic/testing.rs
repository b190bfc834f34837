//! Test support: a QUIC server endpoint on a loopback socket, driven from the test's thread
//! ([`Server::pump`]), that answers request streams as an HTTP/3 server would — or as a
//! faulty one does ([`Answer`]).

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ServerConfig,
    StreamEvent, StreamId, VarInt,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::conn::MAX_DATAGRAM;
use super::QuicClient;
use crate::tls;
use volley_plan::{HttpVersion, TlsSpec};

/// How the server answers a request stream once the request is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `200` with the body `.` (HEADERS, DATA, FIN).
    Ok,
    /// Resets the stream with this code.
    Reset(u64),
    /// As `Ok` as soon as the request stream has data, without waiting for its end, then
    /// STOP_SENDING on the request side with this code.
    OkThenStop(u64),
    /// DATA before HEADERS (H3_FRAME_UNEXPECTED for the client).
    DataFirst,
    /// Nothing: the stream stays open.
    Silent,
}

/// A server endpoint, its socket and its connections.
pub struct Server {
    ep: Endpoint,
    socket: UdpSocket,
    conns: Vec<(ConnectionHandle, quinn_proto::Connection)>,
    /// What each request stream got so far (by connection and stream).
    requests: HashMap<(ConnectionHandle, StreamId), Vec<u8>>,
    /// Whether it opens an HTTP/3 control stream with SETTINGS once connected.
    pub h3: bool,
    /// How request streams are answered.
    pub answer: Answer,
    /// Requests answered.
    pub answered: u64,
}

impl Server {
    /// A server offering ALPN `alpn`, with a self-signed certificate for `localhost`; its PEM.
    pub fn new(alpn: &[u8]) -> (Server, String) {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = CertificateDer::from(key.cert.der().to_vec());
        let pk = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], pk)
            .unwrap();
        tls.alpn_protocols = vec![alpn.to_vec()];
        let crypto = QuicServerConfig::try_from(tls).unwrap();
        let config = ServerConfig::with_crypto(Arc::new(crypto));
        let ep = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::new(config)),
            true,
            None,
        );
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        let s = Server {
            ep,
            socket,
            conns: Vec::new(),
            requests: HashMap::new(),
            h3: true,
            answer: Answer::Ok,
            answered: 0,
        };
        (s, key.cert.pem())
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    /// Takes the datagrams waiting, accepts new connections, answers complete requests, and
    /// sends what its connections have to send.
    pub fn pump(&mut self, now: Instant) {
        self.receive(now);
        for k in 0..self.conns.len() {
            self.drive(k, now);
        }
    }

    fn receive(&mut self, now: Instant) {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        while let Ok((n, from)) = self.socket.recv_from(&mut buf) {
            let mut reply = Vec::new();
            let data = bytes::BytesMut::from(&buf[..n]);
            match self.ep.handle(now, from, None, None, data, &mut reply) {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    match self.ep.accept(incoming, now, &mut reply, None) {
                        Ok((h, c)) => self.conns.push((h, c)),
                        // Refused (no common ALPN): the close goes back to the client.
                        Err(e) => {
                            if let Some(t) = e.response {
                                let _ = self.socket.send_to(&reply[..t.size], t.destination);
                            }
                        }
                    }
                }
                Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                    if let Some((_, c)) = self.conns.iter_mut().find(|(k, _)| *k == h) {
                        c.handle_event(ev);
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    let _ = self.socket.send_to(&reply[..t.size], t.destination);
                }
                None => {}
            }
        }
    }

    /// Connection `k`'s timers, events and datagrams.
    fn drive(&mut self, k: usize, now: Instant) {
        let (h, c) = &mut self.conns[k];
        let h = *h;
        if c.poll_timeout().is_some_and(|t| t <= now) {
            c.handle_timeout(now);
        }
        let mut ready = Vec::new();
        while let Some(e) = c.poll() {
            match e {
                Event::Connected if self.h3 => {
                    let id = c.streams().open(Dir::Uni).unwrap();
                    // Control stream (0x00), SETTINGS (0x04) with no setting.
                    c.send_stream(id).write(&[0x00, 0x04, 0x00]).unwrap();
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    while let Some(id) = c.streams().accept(Dir::Bi) {
                        ready.push(id);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => ready.push(id),
                _ => {}
            }
        }
        for id in ready {
            let request = self.requests.entry((h, id)).or_default();
            let seen = request.len();
            let fin = read_all(c, id, request);
            let early = matches!(self.answer, Answer::OkThenStop(_)) && seen == 0;
            if fin || (early && !request.is_empty()) {
                answer(c, id, self.answer);
                self.answered += 1;
            }
        }
        let mut out = Vec::new();
        while let Some(t) = c.poll_transmit(now, 1, &mut out) {
            let _ = self.socket.send_to(&out[..t.size], t.destination);
            out.clear();
        }
    }
}

/// Reads what stream `id` has into `into`; true once its end came.
fn read_all(c: &mut quinn_proto::Connection, id: StreamId, into: &mut Vec<u8>) -> bool {
    let mut rs = c.recv_stream(id);
    let Ok(mut chunks) = rs.read(true) else {
        return false;
    };
    let mut fin = false;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => into.extend_from_slice(&chunk.bytes),
            Ok(None) => {
                fin = true;
                break;
            }
            Err(_) => break,
        }
    }
    let _ = chunks.finalize();
    fin
}

/// Answers request stream `id` as `how` says.
fn answer(c: &mut quinn_proto::Connection, id: StreamId, how: Answer) {
    // HEADERS: the field section prefix (0, 0) and `:status 200` (static index 25).
    let headers: &[u8] = &[0x01, 0x03, 0x00, 0x00, 0xc0 | 25];
    let data: &[u8] = &[0x00, 0x01, b'.'];
    let mut s = c.send_stream(id);
    match how {
        Answer::Ok => {
            s.write(&[headers, data].concat()).unwrap();
            s.finish().unwrap();
        }
        Answer::DataFirst => {
            s.write(&[data, headers].concat()).unwrap();
            s.finish().unwrap();
        }
        Answer::Reset(code) => s.reset(VarInt::from_u64(code).unwrap()).unwrap(),
        Answer::OkThenStop(code) => {
            s.write(&[headers, data].concat()).unwrap();
            s.finish().unwrap();
            let _ = c.recv_stream(id).stop(VarInt::from_u64(code).unwrap());
        }
        Answer::Silent => {}
    }
}

/// The run's QUIC client trusting `cert_pem` (written into `dir`) for `localhost`.
pub fn client(cert_pem: &str, dir: &std::path::Path) -> QuicClient {
    let path = dir.join("cert.pem");
    std::fs::write(&path, cert_pem).unwrap();
    let spec = TlsSpec {
        verify: true,
        cacert: Some(path),
        cert: None,
        key: None,
        resume: true,
    };
    let tls = tls::client(&spec, "localhost", 1, HttpVersion::H2).unwrap();
    QuicClient::new(&tls, "localhost", 8).unwrap()
}
