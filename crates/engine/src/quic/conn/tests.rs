//! A QUIC handshake against an in-process quinn server on loopback (`quic::testing`), both
//! driven from this thread: the client verifies the server's pinned certificate and offers
//! `h3`.

use std::time::{Duration, Instant};

use quinn_proto::{Endpoint, Event};

use super::super::testing::{client, Server};
use super::super::{endpoint, ALPN_H3};
use super::*;

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

/// Drives `c` and `server` for `d` (the server's session ticket comes after the handshake).
fn run_for(c: &mut QuicConn, ep: &mut Endpoint, server: &mut Server, d: Duration) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let end = Instant::now() + d;
    while Instant::now() < end {
        let now = Instant::now();
        c.transmit(now).unwrap();
        server.pump(now);
        c.receive(ep, &mut buf, now).unwrap();
        c.on_timeout(ep, now);
        while c.conn.poll().is_some() {}
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn a_second_connection_resumes_the_session_and_may_send_early_data() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, pem) = Server::new(ALPN_H3);
    for zero_rtt in [false, true] {
        let client = super::super::testing::client_with(&pem, dir.path(), zero_rtt);
        let mut ep = endpoint();
        let now = Instant::now();
        let mut first = QuicConn::connect(&mut ep, &client, server.addr(), None, now).unwrap();
        assert!(!first.conn.has_0rtt(), "no session yet");
        handshake(&mut first, &mut ep, &mut server).unwrap();
        run_for(&mut first, &mut ep, &mut server, Duration::from_millis(50));
        assert!(
            !first.resumed(),
            "the first handshake checks the certificate"
        );
        let now = Instant::now();
        let mut second = QuicConn::connect(&mut ep, &client, server.addr(), None, now).unwrap();
        assert_eq!(second.conn.has_0rtt(), zero_rtt);
        handshake(&mut second, &mut ep, &mut server).unwrap();
        assert!(second.resumed(), "zero_rtt {zero_rtt}");
        assert_eq!(second.conn.accepted_0rtt(), zero_rtt);
    }
}
