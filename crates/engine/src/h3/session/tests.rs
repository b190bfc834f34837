//! Sessions against the in-process server of `quic::testing`, driven from this thread: a
//! request's response becomes HTTP/2's events, many streams share a connection, and a reset,
//! a malformed response and a cancelled stream end as the worker expects; and which of a
//! connection's ends are the server's errors.

use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn_proto::Endpoint;

use super::*;
use crate::h3::qpack;
use crate::quic::conn::MAX_DATAGRAM;
use crate::quic::testing::{client, client_with, Answer, Server};
use crate::quic::{endpoint, QuicClient, ALPN_H3};

/// A GET of `/` as the worker builds it once per run: one HEADERS frame.
fn get() -> Bytes {
    let section = qpack::encode_request("GET", "https", "localhost", "/", &[], None);
    let mut out = Vec::new();
    crate::h3::frame::headers(&section, &mut out);
    Bytes::from(out)
}

/// A session connected to `server`, with its endpoint.
struct Client {
    ep: Endpoint,
    s: H3Session,
    buf: Vec<u8>,
}

impl Client {
    fn connect(server: &mut Server, dir: &std::path::Path, pem: &str) -> Client {
        let mut c = Client::start(server, &client(pem, dir));
        let events = c.run_until(server, |s, _| s.connected());
        assert!(matches!(events[0], Event::Settings { .. }), "{events:?}");
        c
    }

    /// A session whose handshake has not started moving (its first packet is not sent).
    fn start(server: &Server, client: &QuicClient) -> Client {
        let mut ep = endpoint();
        let now = Instant::now();
        let quic = QuicConn::connect(&mut ep, client, server.addr(), None, now).unwrap();
        Client {
            ep,
            s: H3Session::new(quic, false, Limits::default()),
            buf: vec![0; MAX_DATAGRAM],
        }
    }

    /// Drives both sides until `done` (given the session and the events so far) or 5 s.
    fn run_until(
        &mut self,
        server: &mut Server,
        done: impl Fn(&H3Session, &[Event]) -> bool,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let now = Instant::now();
            self.s.quic.transmit(now).unwrap();
            server.pump(now);
            self.s
                .quic
                .receive(&mut self.ep, &mut self.buf, now)
                .unwrap();
            self.s.quic.on_timeout(&mut self.ep, now);
            self.s.poll(&mut |e| events.push(e)).unwrap();
            if done(&self.s, &events) {
                return events;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        panic!("not done within 5 s: {events:?}");
    }
}

fn ended(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::End { .. } | Event::Reset { .. } | Event::Malformed { .. }
            )
        })
        .count()
}

fn setup(answer: Answer) -> (Server, Client, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, pem) = Server::new(ALPN_H3);
    server.answer = answer;
    let c = Client::connect(&mut server, dir.path(), &pem);
    (server, c, dir)
}

#[test]
fn a_response_becomes_head_data_and_end() {
    let (mut server, mut c, _dir) = setup(Answer::Ok);
    let stream = c.s.open_stream(&get(), None).unwrap();
    let events = c.run_until(&mut server, |_, e| ended(e) == 1);
    assert_eq!(
        events,
        [
            Event::Head {
                stream,
                status: 200
            },
            Event::Data { stream, len: 1 },
            Event::End { stream }
        ]
    );
    assert!(c.s.settings_seen(), "the server's control stream was read");
    assert_eq!(c.s.open_streams(), 0);
}

#[test]
fn streams_share_the_connection_concurrently_and_one_after_another() {
    let (mut server, mut c, _dir) = setup(Answer::Ok);
    let request = get();
    let mut done = 0;
    for _ in 0..25 {
        let opened: Vec<u32> = (0..8)
            .filter_map(|_| c.s.open_stream(&request, None))
            .collect();
        assert_eq!(opened.len(), 8);
        let events = c.run_until(&mut server, |_, e| ended(e) == 8);
        done += events
            .iter()
            .filter(|e| matches!(e, Event::End { .. }))
            .count();
    }
    assert_eq!((done, server.answered), (200, 200));
}

#[test]
fn a_reset_stream_is_a_reset_with_its_code() {
    let (mut server, mut c, _dir) = setup(Answer::Reset(0x10c));
    let stream = c.s.open_stream(&get(), None).unwrap();
    let events = c.run_until(&mut server, |_, e| ended(e) == 1);
    assert_eq!(
        events,
        [Event::Reset {
            stream,
            code: 0x10c
        }]
    );
}

/// A POST of 4 MiB: HEADERS and DATA, more than the server's flow control lets through at
/// once, so the request is still being sent when the server answers and stops it.
fn post() -> Bytes {
    let section = qpack::encode_request("POST", "https", "localhost", "/", &[], Some(4 << 20));
    let mut out = Vec::new();
    crate::h3::frame::headers(&section, &mut out);
    crate::h3::frame::data(&vec![b'x'; 4 << 20], &mut out);
    Bytes::from(out)
}

#[test]
fn stop_sending_with_a_code_http3_does_not_define_leaves_the_response_complete() {
    // 0: what quinn sends when a server drops a request stream it did not read to its end.
    for code in [0, 0x100, 0x21] {
        let (mut server, mut c, _dir) = setup(Answer::OkThenStop(code));
        let stream = c.s.open_stream(&post(), None).unwrap();
        let events = c.run_until(&mut server, |_, e| ended(e) == 1);
        assert_eq!(
            events.last(),
            Some(&Event::End { stream }),
            "{code:#x}: {events:?}"
        );
        assert!(
            events.contains(&Event::Data { stream, len: 1 }),
            "{code:#x}: {events:?}"
        );
    }
}

#[test]
fn stop_sending_with_an_http3_error_code_is_a_reset() {
    let (mut server, mut c, _dir) = setup(Answer::OkThenStop(0x10b));
    let stream = c.s.open_stream(&post(), None).unwrap();
    let events = c.run_until(&mut server, |_, e| ended(e) == 1);
    assert!(
        events.contains(&Event::Reset {
            stream,
            code: 0x10b
        }),
        "{events:?}"
    );
}

#[test]
fn data_before_the_head_is_a_malformed_response() {
    let (mut server, mut c, _dir) = setup(Answer::DataFirst);
    let stream = c.s.open_stream(&get(), None).unwrap();
    let events = c.run_until(&mut server, |_, e| ended(e) == 1);
    match &events[..] {
        [Event::Malformed { stream: s, reason }] => {
            assert_eq!(*s, stream);
            assert!(reason.contains("H3_FRAME_UNEXPECTED"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cancelled_stream_is_forgotten() {
    let (mut server, mut c, _dir) = setup(Answer::Silent);
    let stream = c.s.open_stream(&get(), None).unwrap();
    c.run_until(&mut server, |_, _| server_has_it());
    assert!(c.s.cancel(stream));
    assert!(!c.s.cancel(stream), "once");
    assert_eq!(c.s.open_streams(), 0);
}

/// (The silent server has nothing to say: one turn is enough for the request to reach it.)
fn server_has_it() -> bool {
    true
}

#[test]
fn early_requests_are_answered_or_go_again_when_the_server_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, pem) = Server::new(ALPN_H3);
    let client = client_with(&pem, dir.path(), true);
    let mut first = Client::start(&server, &client);
    assert!(!first.s.early(), "no session to resume yet");
    // Until the server's session ticket is in.
    first.run_until(&mut server, |s, _| {
        s.connected() && s.quic.conn.stats().frame_rx.crypto > 2
    });
    assert_eq!(first.s.zero_rtt(), None);

    // Accepted: the request goes before the handshake is done, and is answered.
    let mut c = Client::start(&server, &client);
    assert!(c.s.early());
    assert!(c.s.open_stream(&get(), None).is_some());
    let events = c.run_until(&mut server, |_, e| ended(e) == 1);
    assert_eq!(c.s.zero_rtt(), Some(true), "{events:?}");
    assert!(!c.s.take_rejected());
    assert!(c.s.quic.resumed());
    c.run_until(&mut server, |s, _| s.quic.conn.stats().frame_rx.crypto > 2);

    // Refused by a server that does not know the ticket: the stream is gone, and the request
    // is answered when it goes again.
    let mut other = server.sibling();
    let mut c = Client::start(&other, &client);
    assert!(c.s.early());
    assert!(c.s.open_stream(&get(), None).is_some());
    c.run_until(&mut other, |s, _| s.connected());
    assert_eq!(c.s.zero_rtt(), Some(false));
    assert!(c.s.take_rejected() && !c.s.take_rejected());
    assert_eq!(c.s.open_streams(), 0);
    assert!(!c.s.quic.resumed());
    assert!(c.s.open_stream(&get(), None).is_some());
    let events = c.run_until(&mut other, |_, e| ended(e) == 1);
    assert!(
        matches!(events.last(), Some(Event::End { .. })),
        "{events:?}"
    );
    assert_eq!(other.answered, 1);
}

#[test]
fn a_close_with_an_error_code_is_closed_and_one_without_is_lost() {
    use quinn_proto::{ApplicationClose, ConnectionClose, ConnectionError, TransportErrorCode};
    let app = |code: u32, reason: &'static [u8]| {
        lost(ConnectionError::ApplicationClosed(ApplicationClose {
            error_code: VarInt::from_u32(code),
            reason: Bytes::from_static(reason),
        }))
    };
    let closed = |s: &str| SessionError::Closed(s.to_string());
    assert_eq!(app(0x107, b"busy"), closed("H3_EXCESSIVE_LOAD (\"busy\")"));
    assert_eq!(app(0x1234, b""), closed("0x1234"));
    assert!(matches!(app(0x100, b"bye"), SessionError::Lost(_)));
    let transport = |error_code| {
        lost(ConnectionError::ConnectionClosed(ConnectionClose {
            error_code,
            frame_type: None,
            reason: Bytes::new(),
        }))
    };
    assert_eq!(
        transport(TransportErrorCode::PROTOCOL_VIOLATION),
        closed("QUIC's PROTOCOL_VIOLATION")
    );
    assert!(matches!(
        transport(TransportErrorCode::NO_ERROR),
        SessionError::Lost(_)
    ));
    assert!(matches!(
        lost(ConnectionError::TimedOut),
        SessionError::Lost(_)
    ));
}
