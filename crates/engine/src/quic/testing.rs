//! Test support (the crate's tests, and the `testing` feature for the integration tests): a
//! QUIC server endpoint on a loopback socket that answers request streams as an HTTP/3
//! server would — or as a hostile one does ([`Answer`], [`Server::grease`],
//! [`Server::mute_after`], [`Server::with_streams`]). Driven from the test's thread
//! ([`Server::pump`]) or from one of its own ([`Server::spawn`]).

mod answer;
mod thread;

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ServerConfig,
    StreamEvent, StreamId, TransportConfig, VarInt,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::conn::MAX_DATAGRAM;
use super::QuicClient;
use crate::tls;
use answer::{Flood, Over};
use volley_plan::{HttpVersion, TlsSpec};

pub use answer::Answer;
pub use thread::Running;

/// The control stream's start: its type (0x00) and SETTINGS (0x04) with no setting.
const CONTROL: &[u8] = &[0x00, 0x04, 0x00];
/// The QPACK encoder stream's type (RFC 9204 §4.2).
const QPACK_ENCODER: u8 = 0x02;
/// A reserved unidirectional stream type (0x1f × N + 0x21, RFC 9114 §6.2.3).
const GREASE_STREAM: u8 = 0x21;

/// A connection and what the server does on it.
struct Peer {
    h: ConnectionHandle,
    c: quinn_proto::Connection,
    /// Requests answered on it.
    answered: u64,
    floods: Vec<Flood>,
    /// Its HTTP/3 control stream, once open.
    control: Option<StreamId>,
    /// [`Answer::GoAwayAfter`]: the first request stream its GOAWAY left unprocessed.
    goaway: Option<u64>,
    /// The highest request stream answered on it.
    highest: u64,
}

/// A server endpoint, its socket and its connections.
pub struct Server {
    alpn: Vec<u8>,
    /// Request streams a client may have open at once.
    bidi: u32,
    cert: CertificateDer<'static>,
    /// The certificate's private key (PKCS #8 DER).
    key: Vec<u8>,
    ep: Endpoint,
    socket: UdpSocket,
    conns: Vec<Peer>,
    /// What each request stream got so far (by connection and stream).
    requests: HashMap<(ConnectionHandle, StreamId), Vec<u8>>,
    /// Whether it opens an HTTP/3 control stream with SETTINGS once connected.
    pub h3: bool,
    /// How request streams are answered.
    pub answer: Answer,
    /// Floods the client with what it must ignore: reserved frames on the control stream
    /// after SETTINGS, and as many streams of a reserved type as the client allows (more as
    /// it frees them), each written to without end.
    pub grease: bool,
    /// Opens a QPACK encoder stream and writes on it without end: Set Dynamic Table Capacity
    /// 0 instructions, which a decoder whose table has capacity 0 must accept, each of them.
    pub qpack_flood: bool,
    /// After this many answers in all, silence: datagrams are read and dropped, nothing is
    /// sent (the handshakes done, the server gone quiet).
    pub mute_after: Option<u64>,
    /// Requests answered.
    pub answered: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Bytes written by the floods (endless bodies, field sections, reserved streams).
    pub flooded: u64,
    /// Streams of a reserved type opened.
    pub grease_streams: u64,
    /// Floods the client stopped (STOP_SENDING) or reset.
    pub stopped: u64,
}

impl Server {
    /// A server offering ALPN `alpn`, with a self-signed certificate for `localhost`; its PEM.
    pub fn new(alpn: &[u8]) -> (Server, String) {
        Server::with_streams(alpn, 100)
    }

    /// The same, allowing a client `bidi` request streams at once (0: none ever); it pings
    /// every 100 ms.
    pub fn with_streams(alpn: &[u8], bidi: u32) -> (Server, String) {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = CertificateDer::from(key.cert.der().to_vec());
        let pk = key.signing_key.serialize_der();
        (Server::with_key(alpn, cert, pk, bidi), key.cert.pem())
    }

    /// Another server with the same certificate and its own session cache: it knows none of
    /// this one's session tickets (resumption and early data are refused).
    pub fn sibling(&self) -> Server {
        Server::with_key(&self.alpn, self.cert.clone(), self.key.clone(), self.bidi)
    }

    fn with_key(alpn: &[u8], cert: CertificateDer<'static>, key: Vec<u8>, bidi: u32) -> Server {
        let pk = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.clone()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], pk)
            .unwrap();
        tls.alpn_protocols = vec![alpn.to_vec()];
        // Its tickets allow 0-RTT (QUIC's only other value is 0).
        tls.max_early_data_size = u32::MAX;
        let crypto = QuicServerConfig::try_from(tls).unwrap();
        let mut config = ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = TransportConfig::default();
        transport.max_concurrent_bidi_streams(VarInt::from_u32(bidi));
        // A client hears from it every 100 ms even while it answers nothing (so a stalled
        // stream is not a connection that went quiet), unless it is muted.
        transport.keep_alive_interval(Some(std::time::Duration::from_millis(100)));
        config.transport_config(Arc::new(transport));
        let ep = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::new(config)),
            true,
            None,
        );
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        Server {
            alpn: alpn.to_vec(),
            bidi,
            cert,
            key,
            ep,
            socket,
            conns: Vec::new(),
            requests: HashMap::new(),
            h3: true,
            answer: Answer::Ok,
            grease: false,
            qpack_flood: false,
            mute_after: None,
            answered: 0,
            accepted: 0,
            flooded: 0,
            grease_streams: 0,
            stopped: 0,
        }
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    /// Whether it went silent ([`Server::mute_after`]).
    pub fn muted(&self) -> bool {
        self.mute_after.is_some_and(|n| self.answered >= n)
    }

    /// Takes the datagrams waiting, accepts new connections, answers complete requests, and
    /// sends what its connections have to send; true when a datagram came.
    pub fn pump(&mut self, now: Instant) -> bool {
        if self.muted() {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            let mut any = false;
            while self.socket.recv_from(&mut buf).is_ok() {
                any = true;
            }
            return any;
        }
        let any = self.receive(now);
        for k in 0..self.conns.len() {
            self.drive(k, now);
        }
        self.conns.retain(|p| !p.c.is_drained());
        any
    }

    fn receive(&mut self, now: Instant) -> bool {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut any = false;
        while let Ok((n, from)) = self.socket.recv_from(&mut buf) {
            any = true;
            let mut reply = Vec::new();
            let data = bytes::BytesMut::from(&buf[..n]);
            match self.ep.handle(now, from, None, None, data, &mut reply) {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    match self.ep.accept(incoming, now, &mut reply, None) {
                        Ok((h, c)) => {
                            self.accepted += 1;
                            self.conns.push(Peer {
                                h,
                                c,
                                answered: 0,
                                floods: Vec::new(),
                                control: None,
                                goaway: None,
                                highest: 0,
                            });
                        }
                        // Refused (no common ALPN): the close goes back to the client.
                        Err(e) => {
                            if let Some(t) = e.response {
                                let _ = self.socket.send_to(&reply[..t.size], t.destination);
                            }
                        }
                    }
                }
                Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                    if let Some(p) = self.conns.iter_mut().find(|p| p.h == h) {
                        p.c.handle_event(ev);
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    let _ = self.socket.send_to(&reply[..t.size], t.destination);
                }
                None => {}
            }
        }
        any
    }

    /// Connection `k`'s timers, events, answers, floods and datagrams.
    fn drive(&mut self, k: usize, now: Instant) {
        let p = &mut self.conns[k];
        if p.c.poll_timeout().is_some_and(|t| t <= now) {
            p.c.handle_timeout(now);
        }
        let mut ready = Vec::new();
        while let Some(e) = p.c.poll() {
            match e {
                Event::Connected if self.h3 => {
                    // (None when the client closed the connection as it came up.)
                    let Some(id) = p.c.streams().open(Dir::Uni) else {
                        continue;
                    };
                    p.control = Some(id);
                    if self.qpack_flood {
                        if let Some(enc) = p.c.streams().open(Dir::Uni) {
                            let flood = answer::capacity_zero();
                            p.floods
                                .push(Flood::new(enc, vec![QPACK_ENCODER], Some(flood)));
                        }
                    }
                    if self.grease {
                        let frames = answer::grease_frames();
                        p.floods
                            .push(Flood::new(id, CONTROL.to_vec(), Some(frames)));
                        self.grease_streams += open_grease(p);
                    } else {
                        p.c.send_stream(id).write(CONTROL).unwrap();
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    while let Some(id) = p.c.streams().accept(Dir::Bi) {
                        ready.push(id);
                    }
                }
                Event::Stream(StreamEvent::Available { dir: Dir::Uni }) if self.grease => {
                    self.grease_streams += open_grease(p);
                }
                Event::Stream(StreamEvent::Readable { id }) => ready.push(id),
                _ => {}
            }
        }
        for id in ready {
            self.request(k, id, now);
        }
        self.flood(k);
        let p = &mut self.conns[k];
        while let Some(ev) = p.c.poll_endpoint_events() {
            if let Some(back) = self.ep.handle_event(p.h, ev) {
                p.c.handle_event(back);
            }
        }
        let mut out = Vec::new();
        while let Some(t) = p.c.poll_transmit(now, 1, &mut out) {
            let _ = self.socket.send_to(&out[..t.size], t.destination);
            out.clear();
        }
    }

    /// Reads request stream `id` of connection `k`; once the request is whole, answers it.
    fn request(&mut self, k: usize, id: StreamId, now: Instant) {
        let muted = self.muted();
        let p = &mut self.conns[k];
        let key = (p.h, id);
        let request = self.requests.entry(key).or_default();
        let seen = request.len();
        let fin = read_all(&mut p.c, id, request);
        // OkThenStop answers the request's first bytes, not its end.
        let early = matches!(self.answer, Answer::OkThenStop(_)) && seen == 0;
        let ready = fin || (early && !request.is_empty());
        if !ready {
            return;
        }
        self.requests.remove(&key);
        if muted {
            return;
        }
        let index = VarInt::from(id).into_inner();
        if p.goaway.is_some_and(|first| index >= first) {
            return; // not processed: the GOAWAY said so
        }
        p.floods.extend(answer::answer(&mut p.c, id, self.answer));
        p.highest = p.highest.max(index);
        self.answered += 1;
        p.answered += 1;
        if let Answer::CloseAfter { answers, code } = self.answer {
            if p.answered == answers {
                let code = VarInt::from_u64(code).unwrap();
                p.c.close(now, code, bytes::Bytes::from_static(b"closing"));
            }
        }
        if let (Answer::GoAwayAfter { answers }, Some(control)) = (self.answer, p.control) {
            if p.answered == answers && p.goaway.is_none() {
                // GOAWAY (type 0x07) naming the stream after the highest answered
                // (client-initiated bidirectional streams are 4 apart), as a varint of 8
                // bytes; streams below it still coming are answered.
                let first = p.highest + 4;
                let mut frame = vec![0x07, 8];
                frame.extend_from_slice(&(first | 0xc0 << 56).to_be_bytes());
                // (A control stream short of credit takes it later: the frame is small.)
                let _ = p.c.send_stream(control).write(&frame);
                p.goaway = Some(first);
            }
        }
    }

    /// Writes what connection `k`'s streams take, answers before floods; drops those done.
    fn flood(&mut self, k: usize) {
        let p = &mut self.conns[k];
        let (mut flooded, mut stopped) = (0, 0);
        p.floods.sort_by_key(Flood::endless);
        p.floods.retain_mut(|f| match f.pump(&mut p.c) {
            Ok(n) => {
                flooded += if f.endless() { n } else { 0 };
                true
            }
            Err(over) => {
                stopped += u64::from(over == Over::Stopped);
                false
            }
        });
        self.flooded += flooded;
        self.stopped += stopped;
    }
}

/// Opens as many streams of a reserved type on `p` as the client allows, each a flood;
/// how many.
fn open_grease(p: &mut Peer) -> u64 {
    let mut n = 0;
    while let Some(id) = p.c.streams().open(Dir::Uni) {
        p.floods
            .push(Flood::new(id, vec![GREASE_STREAM], Some(answer::junk())));
        n += 1;
    }
    n
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

/// The run's QUIC client trusting `cert_pem` (written into `dir`) for `localhost`.
pub fn client(cert_pem: &str, dir: &std::path::Path) -> QuicClient {
    client_with(cert_pem, dir, false)
}

/// [`client`], with `--0rtt` when `zero_rtt`.
pub fn client_with(cert_pem: &str, dir: &std::path::Path, zero_rtt: bool) -> QuicClient {
    let path = dir.join("cert.pem");
    std::fs::write(&path, cert_pem).unwrap();
    let spec = TlsSpec {
        verify: true,
        cacert: Some(path),
        cert: None,
        key: None,
        resume: true,
        early_data: zero_rtt,
    };
    let tls = tls::client(&spec, "localhost", 1, HttpVersion::H2).unwrap();
    QuicClient::new(&tls, "localhost", 8, zero_rtt).unwrap()
}
