//! Sessions against the in-process server of `quic::testing`, driven from this thread: a
//! request's response becomes HTTP/2's events, many streams share a connection, and a reset,
//! a malformed response and a cancelled stream end as the worker expects.

use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn_proto::Endpoint;

use super::*;
use crate::h3::qpack;
use crate::quic::conn::MAX_DATAGRAM;
use crate::quic::testing::{client, Answer, Server};
use crate::quic::{endpoint, ALPN_H3};

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
        let mut ep = endpoint();
        let quic = QuicConn::connect(
            &mut ep,
            &client(pem, dir),
            server.addr(),
            None,
            Instant::now(),
        )
        .unwrap();
        let mut c = Client {
            ep,
            s: H3Session::new(quic, false, Limits::default()),
            buf: vec![0; MAX_DATAGRAM],
        };
        let events = c.run_until(server, |s, _| s.connected());
        assert!(matches!(events[0], Event::Settings { .. }), "{events:?}");
        c
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
    let stream = c.s.open_stream(&get()).unwrap();
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
        let opened: Vec<u32> = (0..8).filter_map(|_| c.s.open_stream(&request)).collect();
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
    let stream = c.s.open_stream(&get()).unwrap();
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
        let stream = c.s.open_stream(&post()).unwrap();
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
    let stream = c.s.open_stream(&post()).unwrap();
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
    let stream = c.s.open_stream(&get()).unwrap();
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
    let stream = c.s.open_stream(&get()).unwrap();
    c.run_until(&mut server, |_, _| server_has_it());
    assert!(c.s.cancel(stream));
    assert!(!c.s.cancel(stream), "once");
    assert_eq!(c.s.open_streams(), 0);
}

/// (The silent server has nothing to say: one turn is enough for the request to reach it.)
fn server_has_it() -> bool {
    true
}
