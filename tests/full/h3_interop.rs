//! The engine's HTTP/3 (QUIC by quinn-proto, `h3::session` over volley's own frames and QPACK)
//! against a real HTTP/3 server, Caddy: the handshake verifies Caddy's certificate, and every
//! request on concurrent streams is answered `200 .` — as many as Caddy's access log counts over
//! HTTP/3. (`--http3` is being built on these; this checks they speak the protocol as servers
//! do before a run depends on them.)

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::caddy::Caddy;
use volley::engine::h2::conn::Event;
use volley::engine::h3::response::Limits;
use volley::engine::h3::session::H3Session;
use volley::engine::h3::{frame, qpack};
use volley::engine::quic::conn::{QuicConn, MAX_DATAGRAM};
use volley::engine::quic::{endpoint, QuicClient};
use volley::engine::tls;
use volley::plan::{HttpVersion, TlsSpec};

/// The session driven until `done` or 10 s; the events.
fn drive(
    s: &mut H3Session,
    ep: &mut quinn_proto::Endpoint,
    done: impl Fn(&H3Session, &[Event]) -> bool,
) -> Vec<Event> {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let now = Instant::now();
        s.quic.transmit(now).unwrap();
        s.quic.receive(ep, &mut buf, now).unwrap();
        s.quic.on_timeout(ep, now);
        s.poll(&mut |e| events.push(e)).unwrap();
        if done(s, &events) {
            return events;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!(
        "not done within 10 s: {:?}",
        &events[events.len().saturating_sub(5)..]
    );
}

#[test]
fn caddy_answers_every_request_on_concurrent_streams() {
    let Some(srv) = Caddy::start("interop") else {
        return;
    };
    let port = srv.port;
    let spec = TlsSpec {
        verify: true,
        cacert: Some(srv.cacert()),
        cert: None,
        key: None,
        resume: true,
        early_data: false,
    };
    let tls = tls::client(&spec, "localhost", 1, HttpVersion::H2).unwrap();
    let client = QuicClient::new(&tls, "localhost", 8, false).unwrap();
    let mut ep = endpoint();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let quic = QuicConn::connect(&mut ep, &client, addr, None, Instant::now()).unwrap();
    let mut s = H3Session::new(quic, false, Limits::default());
    drive(&mut s, &mut ep, |s, _| s.connected());

    let authority = format!("localhost:{port}");
    let section = qpack::encode_request("GET", "https", &authority, "/", &[], None);
    let mut request = Vec::new();
    frame::headers(&section, &mut request);
    let request = Bytes::from(request);
    let (mut ok, mut body) = (0, 0);
    for _ in 0..25 {
        let opened = (0..8).filter_map(|_| s.open_stream(&request, None)).count();
        assert_eq!(opened, 8);
        let events = drive(&mut s, &mut ep, |_, e| {
            e.iter()
                .filter(|e| !matches!(e, Event::Head { .. } | Event::Data { .. }))
                .count()
                == 8
        });
        for e in &events {
            match e {
                Event::Head { status, .. } => ok += usize::from(*status == 200),
                Event::Data { len, .. } => body += len,
                Event::End { .. } => {}
                other => panic!("{other:?} in {events:?}"),
            }
        }
    }
    assert_eq!((ok, body), (200, 200), "200 responses of `.`");
    assert!(s.settings_seen(), "Caddy's SETTINGS were read");
    s.close(volley::engine::h3::Code::NoError, Instant::now());
    let _ = s.quic.transmit(Instant::now());
    assert_eq!(srv.h3_logged(), 200, "Caddy's access log over HTTP/3");
}
