//! A QUIC handshake against an in-process quinn server on loopback, both driven from this
//! thread: the client verifies the server's pinned certificate and offers `h3`.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{DatagramEvent, Endpoint, EndpointConfig, Event, ServerConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::super::{endpoint, QuicClient, ALPN_H3};
use super::*;
use crate::tls;
use volley_plan::{HttpVersion, TlsSpec};

/// A server endpoint on a loopback socket, with a certificate for `localhost`, and the
/// certificate's PEM.
struct Server {
    ep: Endpoint,
    socket: UdpSocket,
    conns: Vec<(ConnectionHandle, quinn_proto::Connection)>,
}

impl Server {
    fn new(alpn: &[u8]) -> (Server, String) {
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
        };
        (s, key.cert.pem())
    }

    fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    /// Takes the datagrams waiting, accepts new connections, and sends what its connections
    /// have to send.
    fn pump(&mut self, now: Instant) {
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
                                self.socket
                                    .send_to(&reply[..t.size], t.destination)
                                    .unwrap();
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
                    self.socket
                        .send_to(&reply[..t.size], t.destination)
                        .unwrap();
                }
                None => {}
            }
        }
        for (_, c) in &mut self.conns {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
            let mut out = Vec::new();
            while let Some(t) = c.poll_transmit(now, 1, &mut out) {
                let _ = self.socket.send_to(&out[..t.size], t.destination);
                out.clear();
            }
            while c.poll().is_some() {}
        }
    }
}

fn client(cert_pem: &str, dir: &std::path::Path) -> QuicClient {
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
    QuicClient::new(&tls, "localhost", 8, Duration::from_secs(5)).unwrap()
}

/// Drives `c` and `server` until the client sees `Connected` or the connection is lost.
fn handshake(c: &mut QuicConn, ep: &mut Endpoint, server: &mut Server) -> Result<(), String> {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let now = Instant::now();
        c.transmit(now).unwrap();
        server.pump(now);
        c.receive(ep, &mut buf, now).unwrap();
        c.on_timeout(ep, now);
        while let Some(e) = c.conn.poll() {
            match e {
                Event::Connected => return Ok(()),
                Event::ConnectionLost { reason } => return Err(reason.to_string()),
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Err("no handshake within 5 s".into())
}

#[test]
fn a_handshake_verifies_the_pinned_certificate_and_agrees_on_h3() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, pem) = Server::new(ALPN_H3);
    let client = client(&pem, dir.path());
    let mut ep = endpoint();
    let mut c = QuicConn::connect(&mut ep, &client, server.addr(), None, Instant::now()).unwrap();
    handshake(&mut c, &mut ep, &mut server).unwrap();
    assert!(c.handshake.is_some_and(|d| d < Duration::from_secs(5)));
    let alpn = c
        .conn
        .crypto_session()
        .handshake_data()
        .and_then(|d| {
            d.downcast::<quinn_proto::crypto::rustls::HandshakeData>()
                .ok()
        })
        .and_then(|d| d.protocol);
    assert_eq!(alpn.as_deref(), Some(ALPN_H3));
    assert_eq!(c.stray, 0);
}

#[test]
fn a_server_without_h3_fails_the_handshake_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, pem) = Server::new(b"h2");
    let client = client(&pem, dir.path());
    let mut ep = endpoint();
    let mut c = QuicConn::connect(&mut ep, &client, server.addr(), None, Instant::now()).unwrap();
    let e = handshake(&mut c, &mut ep, &mut server).unwrap_err();
    assert!(
        e.contains("120")
            || e.to_lowercase().contains("alpn")
            || e.contains("no_application_protocol"),
        "{e}"
    );
}

#[test]
fn a_certificate_for_another_name_fails_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, pem) = Server::new(ALPN_H3);
    let mut client = client(&pem, dir.path());
    client.server_name = "example.com".into();
    let mut ep = endpoint();
    let mut c = QuicConn::connect(&mut ep, &client, server.addr(), None, Instant::now()).unwrap();
    let e = handshake(&mut c, &mut ep, &mut server).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
}
