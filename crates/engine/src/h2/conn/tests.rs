use loona_hpack::Encoder;

use super::*;
use crate::h2::frame::MAX_WINDOW;

/// A server's side of the conversation: frames built by hand, headers by a real HPACK
/// encoder (which indexes, so the client's decoder must keep its table in step).
struct Server {
    hpack: Encoder<'static>,
}

impl Server {
    fn new() -> Self {
        Server {
            hpack: Encoder::new(),
        }
    }

    fn head(&mut self, status: &str) -> Vec<u8> {
        self.hpack.encode(vec![
            (&b":status"[..], status.as_bytes()),
            (&b"content-type"[..], &b"text/plain"[..]),
        ])
    }

    fn frame(kind: Kind, fl: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame::write(&mut out, kind, fl, stream, payload);
        out
    }
}

/// Opens a stream with `block` whose HEADERS count as written (the server may answer it),
/// leaving them in `out` for the test to read.
fn sent(c: &mut H2Conn, block: &[u8]) -> u32 {
    let id = c.open_stream(block);
    c.unwritten.clear();
    id
}

/// A connection that has had the server's (empty) SETTINGS, as every server sends first.
fn ready(body: Arc<[u8]>, window: u32) -> H2Conn {
    let mut c = H2Conn::new(body, window);
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &[]));
    c
}

fn events(c: &mut H2Conn, bytes: &[u8]) -> Vec<Event> {
    let mut ev = Vec::new();
    c.feed(bytes, &mut |e| ev.push(e)).unwrap();
    ev
}

fn frames_in(out: &[u8]) -> Vec<(Header, Vec<u8>)> {
    let mut v = Vec::new();
    let mut off = 0;
    while off < out.len() {
        let h = Header::parse(&out[off..]);
        let end = off + HEADER_LEN + h.len as usize;
        v.push((h, out[off + HEADER_LEN..end].to_vec()));
        off = end;
    }
    v
}

#[test]
fn the_client_opens_with_the_preface_wide_windows_and_no_push() {
    let c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
    assert!(c.out.starts_with(frame::PREFACE));
    let f = frames_in(&c.out[frame::PREFACE.len()..]);
    assert_eq!(f[0].0.kind, Kind::Settings);
    assert_eq!(f[0].1, [0, 2, 0, 0, 0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xff]);
    assert_eq!(f[1].0.kind, Kind::WindowUpdate);
    assert_eq!(f[1].1, (MAX_WINDOW - 65_535).to_be_bytes());
}

#[test]
fn responses_decode_across_streams_and_any_split_of_the_bytes() {
    let mut s = Server::new();
    let mut bytes = Server::frame(Kind::Settings, 0, 0, &[0, 3, 0, 0, 0, 2]);
    for stream in [1, 3] {
        // The second head is mostly indexed from the first's table entries.
        bytes.extend(Server::frame(
            Kind::Headers,
            flags::END_HEADERS,
            stream,
            &s.head("200"),
        ));
        bytes.extend(Server::frame(
            Kind::Data,
            flags::END_STREAM,
            stream,
            b"hello",
        ));
    }
    let want = vec![
        Event::Settings { max_streams: 2 },
        Event::Head {
            stream: 1,
            status: 200,
        },
        Event::Data { stream: 1, len: 5 },
        Event::End { stream: 1 },
        Event::Head {
            stream: 3,
            status: 200,
        },
        Event::Data { stream: 3, len: 5 },
        Event::End { stream: 3 },
    ];
    for step in [bytes.len(), 1, 7] {
        let mut c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
        assert_eq!(sent(&mut c, &[0x82]), 1);
        assert_eq!(sent(&mut c, &[0x82]), 3);
        let mut got = Vec::new();
        for chunk in bytes.chunks(step) {
            got.extend(events(&mut c, chunk));
        }
        assert_eq!(got, want, "fed {step} bytes at a time");
        assert_eq!(c.open_streams(), 0);
        // The SETTINGS were acknowledged.
        assert!(frames_in(&c.out[frame::PREFACE.len()..])
            .iter()
            .any(|(h, _)| h.kind == Kind::Settings && h.has(flags::ACK)));
    }
}

#[test]
fn the_servers_stream_limit_and_goaway_bound_new_streams() {
    let mut c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
    events(
        &mut c,
        &Server::frame(Kind::Settings, 0, 0, &[0, 3, 0, 0, 0, 1]),
    );
    assert!(c.can_open());
    sent(&mut c, &[0x82]);
    assert!(!c.can_open(), "one stream at a time");
    let ev = events(
        &mut c,
        &Server::frame(Kind::RstStream, 0, 1, &7u32.to_be_bytes()),
    );
    assert_eq!(ev, [Event::Reset { stream: 1, code: 7 }]);
    assert!(c.can_open());
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    let ev = events(&mut c, &Server::frame(Kind::GoAway, 0, 0, &goaway));
    assert_eq!(
        ev,
        [Event::GoAway {
            last_stream: 1,
            code: 0
        }]
    );
    assert!(!c.can_open());
}

#[test]
fn interim_heads_trailers_padding_and_continuation_are_understood() {
    let mut s = Server::new();
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    sent(&mut c, &[0x82]);
    let mut bytes = Server::frame(Kind::Headers, flags::END_HEADERS, 1, &s.head("103"));
    // A head split over HEADERS and two CONTINUATIONs.
    let head = s.head("204");
    bytes.extend(Server::frame(Kind::Headers, 0, 1, &head[..1]));
    bytes.extend(Server::frame(Kind::Continuation, 0, 1, &head[1..2]));
    bytes.extend(Server::frame(
        Kind::Continuation,
        flags::END_HEADERS,
        1,
        &head[2..],
    ));
    // Padded DATA: pad length 3, two bytes of body, three of padding.
    bytes.extend(Server::frame(
        Kind::Data,
        flags::PADDED,
        1,
        &[3, b'o', b'k', 0, 0, 0],
    ));
    let trailers = s.hpack.encode(vec![(&b"grpc-status"[..], &b"0"[..])]);
    bytes.extend(Server::frame(
        Kind::Headers,
        flags::END_HEADERS | flags::END_STREAM,
        1,
        &trailers,
    ));
    assert_eq!(
        events(&mut c, &bytes),
        [
            Event::Head {
                stream: 1,
                status: 204
            },
            Event::Data { stream: 1, len: 2 },
            Event::End { stream: 1 },
        ]
    );
    // PING is answered with its payload.
    events(&mut c, &Server::frame(Kind::Ping, 0, 0, b"12345678"));
    let f = frames_in(&c.out[frame::PREFACE.len()..]);
    let (h, p) = f.last().unwrap();
    assert_eq!(
        (h.kind, h.flags, p.as_slice()),
        (Kind::Ping, flags::ACK, &b"12345678"[..])
    );
}

#[test]
fn protocol_violations_are_connection_errors() {
    let bad = [
        Server::frame(Kind::Continuation, flags::END_HEADERS, 1, &[0x88]),
        Server::frame(
            Kind::PushPromise,
            flags::END_HEADERS,
            1,
            &[0, 0, 0, 2, 0x82],
        ),
        Server::frame(Kind::Data, flags::PADDED, 1, &[9, 1]),
        Server::frame(
            Kind::Headers,
            flags::END_HEADERS,
            1,
            &[0xff, 0xff, 0xff, 0x7f],
        ),
        {
            let mut f = Vec::new();
            Header {
                len: 20_000,
                kind: Kind::Data,
                flags: 0,
                stream: 1,
            }
            .write(&mut f);
            f
        },
    ];
    for b in bad {
        let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
        sent(&mut c, &[0x82]);
        assert!(c.feed(&b, &mut |_| {}).is_err(), "{b:?}");
    }
}

/// Writes everything `c` queued, as a socket that takes all would, refilling bodies after
/// each write; returns the DATA bytes written and whether the last one ended its stream.
fn write_all(c: &mut H2Conn) -> (usize, bool) {
    let (mut data, mut ended) = (0, false);
    loop {
        c.fill_bodies();
        if c.out.is_empty() {
            return (data, ended);
        }
        assert!(
            c.out.len() <= BODY_AHEAD + DATA_FRAME + 64,
            "{} bytes queued",
            c.out.len()
        );
        for (h, p) in frames_in(&c.out) {
            if h.kind == Kind::Data {
                data += p.len();
                ended = h.has(flags::END_STREAM);
            }
        }
        c.out.clear();
    }
}

#[test]
fn request_bodies_wait_for_the_servers_windows() {
    let body: Arc<[u8]> = vec![7u8; 100_000].into();
    let mut c = ready(Arc::clone(&body), RECEIVE_WINDOW);
    c.out.clear();
    let stream = sent(&mut c, &[0x82]);
    // The default windows: 65,535 bytes, in frames of at most 16,384.
    assert_eq!(write_all(&mut c), (65_535, false));
    let mut updates = Server::frame(Kind::WindowUpdate, 0, 0, &100_000u32.to_be_bytes());
    updates.extend(Server::frame(
        Kind::WindowUpdate,
        0,
        stream,
        &100_000u32.to_be_bytes(),
    ));
    events(&mut c, &updates);
    assert_eq!(write_all(&mut c), (100_000 - 65_535, true));
}

#[test]
fn request_bodies_are_queued_a_few_frames_ahead_whatever_the_windows() {
    // A server that opens every window to 2^31 - 1 and allows 16 MiB frames: the client
    // still queues at most BODY_AHEAD bytes (and one 16 KiB frame) until the socket takes
    // them.
    let body: Arc<[u8]> = vec![7u8; 1 << 20].into();
    let mut c = H2Conn::new(Arc::clone(&body), RECEIVE_WINDOW);
    let mut open = Server::frame(
        Kind::Settings,
        0,
        0,
        &[
            [0, 4].as_slice(),
            &MAX_WINDOW.to_be_bytes(),
            &[0, 5],
            &((1u32 << 24) - 1).to_be_bytes(),
        ]
        .concat(),
    );
    open.extend(Server::frame(
        Kind::WindowUpdate,
        0,
        0,
        &(MAX_WINDOW - 65_535).to_be_bytes(),
    ));
    events(&mut c, &open);
    c.out.clear();
    for _ in 0..32 {
        sent(&mut c, &[0x83]);
    }
    assert!(
        c.out.len() <= BODY_AHEAD + DATA_FRAME + 32 * 10,
        "{}",
        c.out.len()
    );
    assert!(c.bodies_waiting());
    // Once written, the rest follows, every stream's whole body.
    let (data, _) = write_all(&mut c);
    assert_eq!(data, 32 << 20);
    assert!(!c.bodies_waiting());
}

#[test]
fn the_receive_windows_are_topped_up_when_half_used() {
    let mut s = Server::new();
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    c.update_at = 20_000;
    sent(&mut c, &[0x82]);
    events(
        &mut c,
        &Server::frame(Kind::Headers, flags::END_HEADERS, 1, &s.head("200")),
    );
    let before = c.out.len();
    let chunk = vec![0u8; 16_000];
    events(&mut c, &Server::frame(Kind::Data, 0, 1, &chunk));
    assert_eq!(c.out.len(), before, "not yet");
    events(&mut c, &Server::frame(Kind::Data, 0, 1, &chunk));
    let f = frames_in(&c.out[before..]);
    // The connection's window, then the stream's.
    assert_eq!((f[0].0.kind, f[0].0.stream), (Kind::WindowUpdate, 0));
    assert_eq!(f[0].1, 32_000u32.to_be_bytes());
    assert_eq!((f[1].0.kind, f[1].0.stream), (Kind::WindowUpdate, 1));
    assert_eq!(f[1].1, 32_000u32.to_be_bytes());
}

#[test]
fn no_stream_opens_before_the_servers_settings_and_a_small_window_is_announced_as_is() {
    let mut c = H2Conn::new(Arc::from(&b""[..]), 65_535);
    assert!(!c.can_open(), "the server's limit is not known yet");
    let f = frames_in(&c.out[frame::PREFACE.len()..]);
    assert_eq!(f.len(), 1, "no WINDOW_UPDATE for the default window");
    assert_eq!(f[0].1, [0, 2, 0, 0, 0, 0, 0, 4, 0, 0, 0xff, 0xff]);
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &[]));
    assert!(c.settings_seen() && c.can_open());
}

/// Feeds `bytes` to a connection with streams 1 and 3 open (after the server's SETTINGS and
/// a 200 head on stream 1) and returns the error it ended with.
fn refused(bytes: &[u8]) -> String {
    refused_with(H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW), bytes)
}

fn refused_with(mut c: H2Conn, bytes: &[u8]) -> String {
    let mut s = Server::new();
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &[]));
    sent(&mut c, &[0x82]);
    sent(&mut c, &[0x82]);
    events(
        &mut c,
        &Server::frame(Kind::Headers, flags::END_HEADERS, 1, &s.head("200")),
    );
    match c.feed(bytes, &mut |_| {}) {
        Err(H2Error(msg)) => msg,
        Ok(()) => panic!(
            "accepted {} bytes: {:?}",
            bytes.len(),
            &bytes[..bytes.len().min(40)]
        ),
    }
}

fn setting(id: u16, v: u32) -> Vec<u8> {
    let mut p = id.to_be_bytes().to_vec();
    p.extend(v.to_be_bytes());
    Server::frame(Kind::Settings, 0, 0, &p)
}

mod checked;
mod malformed;
mod refused;

/// A connection whose server takes extended CONNECT (and announced `window` per stream),
/// with its tunnel opened and counted as written; the HEADERS stay in `out`.
fn tunnel_with_window(window: u32) -> (H2Conn, u32) {
    let mut c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
    let settings = [
        &[0, 8, 0, 0, 0, 1][..],
        &[0, 4][..],
        &window.to_be_bytes()[..],
    ]
    .concat();
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &settings));
    assert!(c.connect_protocol());
    c.out.clear();
    let id = c.open_tunnel(&crate::h2::request::connect_block("http", "h", "/ws", &[]));
    c.unwritten.clear();
    (c, id)
}

#[test]
fn the_extended_connect_leaves_its_stream_open_and_needs_the_servers_setting() {
    let mut plain = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    assert!(!plain.connect_protocol(), "not announced: not offered");
    let (c, id) = tunnel_with_window(65_535);
    assert_eq!(c.tunnel_stream(), Some(id));
    let f = frames_in(&c.out);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0.kind, Kind::Headers);
    assert!(!f[0].0.has(flags::END_STREAM), "the tunnel stays open");
    assert!(f[0].0.has(flags::END_HEADERS));
    let mut fields = Vec::new();
    loona_hpack::Decoder::new()
        .decode_with_cb(&f[0].1, |n, v| {
            fields.push((n.into_owned(), v.into_owned()));
        })
        .unwrap();
    assert!(fields.contains(&(b":protocol".to_vec(), b"websocket".to_vec())));
    assert!(fields.contains(&(b":method".to_vec(), b"CONNECT".to_vec())));
    // A value other than 0 or 1 is the server's error.
    let bad = Server::frame(Kind::Settings, 0, 0, &[0, 8, 0, 0, 0, 2]);
    let e = plain.feed(&bad, &mut |_| {}).unwrap_err();
    assert!(e.0.contains("SETTINGS_ENABLE_CONNECT_PROTOCOL 2"), "{e}");
}

#[test]
fn tunnel_data_comes_back_as_bytes_in_order_and_the_2xx_declares_no_content() {
    let (mut c, id) = tunnel_with_window(65_535);
    let mut s = Server::new();
    // A 200 that says content-length 0 (broken, but a tunnel's DATA is not content).
    let head = s.hpack.encode(vec![
        (&b":status"[..], &b"200"[..]),
        (&b"content-length"[..], &b"0"[..]),
    ]);
    let mut bytes = Server::frame(Kind::Headers, flags::END_HEADERS, id, &head);
    bytes.extend(Server::frame(Kind::Data, 0, id, b"\x81\x05hel"));
    // Padded: the padding is not the WebSocket's.
    bytes.extend(Server::frame(
        Kind::Data,
        flags::PADDED,
        id,
        b"\x03lo\0\0\0",
    ));
    let ev = events(&mut c, &bytes);
    assert_eq!(
        ev,
        vec![
            Event::Head {
                stream: id,
                status: 200
            },
            Event::Data {
                stream: id,
                len: 3 + 2
            },
            Event::Data { stream: id, len: 2 },
        ]
    );
    let got = c.take_tunnel_input();
    assert_eq!(got, b"\x81\x05hello");
    c.restore_tunnel_input(got);
    assert!(c.take_tunnel_input().is_empty(), "taken once");
    // The server ends the tunnel: its stream ends like any other.
    let ev = events(
        &mut c,
        &Server::frame(Kind::Data, flags::END_STREAM, id, b""),
    );
    assert_eq!(ev, vec![Event::End { stream: id }]);
    assert!(!c.tunnel_send(b"late"), "nothing goes on an ended tunnel");
}

#[test]
fn tunnel_bytes_go_as_the_windows_allow_and_wait_in_order_when_they_do_not() {
    let (mut c, id) = tunnel_with_window(10);
    let head = Server::new().head("200");
    events(
        &mut c,
        &Server::frame(Kind::Headers, flags::END_HEADERS, id, &head),
    );
    c.out.clear();
    assert!(c.tunnel_send(&[1; 6]), "framed at once");
    assert!(c.tunnel_send(&[2; 6]), "begun: 4 bytes of window left");
    assert!(!c.tunnel_send(&[3; 3]), "behind held bytes");
    assert_eq!(c.tunnel_held(), 2 + 3);
    let f = frames_in(&c.out);
    let data: Vec<u8> = f.iter().flat_map(|(_, p)| p.clone()).collect();
    assert_eq!(data, [vec![1; 6], vec![2; 4]].concat());
    assert!(f
        .iter()
        .all(|(h, _)| h.kind == Kind::Data && h.stream == id));
    assert!(f.iter().all(|(h, _)| !h.has(flags::END_STREAM)));
    // The stream's window opens: the rest goes, in order.
    c.out.clear();
    let inc = Server::frame(Kind::WindowUpdate, 0, id, &100u32.to_be_bytes());
    events(&mut c, &inc);
    let data: Vec<u8> = frames_in(&c.out).into_iter().flat_map(|(_, p)| p).collect();
    assert_eq!(data, [vec![2; 2], vec![3; 3]].concat());
    assert_eq!(c.tunnel_held(), 0);
    // A close goes whole, ending the stream.
    c.out.clear();
    c.tunnel_close(b"\x88\x82abcd\0\0");
    let f = frames_in(&c.out);
    assert_eq!(f.len(), 1);
    assert!(f[0].0.has(flags::END_STREAM) && f[0].0.kind == Kind::Data);
}

#[test]
fn a_tunnel_without_window_holds_its_bytes_and_its_close_is_a_reset() {
    let (mut c, id) = tunnel_with_window(0);
    let mut s = Server::new();
    let head = s.head("200");
    events(
        &mut c,
        &Server::frame(Kind::Headers, flags::END_HEADERS, id, &head),
    );
    c.out.clear();
    assert!(!c.tunnel_send(b"0123456789"));
    assert!(c.out.is_empty());
    assert_eq!(c.tunnel_held(), 10);
    c.tunnel_close(b"\x88\x80abcd");
    let f = frames_in(&c.out);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0.kind, Kind::RstStream);
    assert_eq!(f[0].1, code::CANCEL.to_be_bytes());
    assert_eq!(c.tunnel_held(), 0, "held bytes are dropped with the stream");
}

#[test]
fn a_reset_tunnel_is_reported_and_closed() {
    let (mut c, id) = tunnel_with_window(65_535);
    let ev = events(
        &mut c,
        &Server::frame(Kind::RstStream, 0, id, &code::CANCEL.to_be_bytes()),
    );
    assert_eq!(
        ev,
        vec![Event::Reset {
            stream: id,
            code: code::CANCEL
        }]
    );
    assert!(!c.tunnel_send(b"x"));
}

#[test]
fn a_2xx_that_chooses_an_extension_volley_did_not_offer_is_malformed() {
    let (mut c, id) = tunnel_with_window(65_535);
    c.out.clear();
    let head = Server::new().hpack.encode(vec![
        (&b":status"[..], &b"200"[..]),
        (&b"sec-websocket-extensions"[..], &b"permessage-deflate"[..]),
    ]);
    let ev = events(
        &mut c,
        &Server::frame(Kind::Headers, flags::END_HEADERS, id, &head),
    );
    match &ev[..] {
        [Event::Malformed { stream, reason }] => {
            assert_eq!(*stream, id);
            assert!(reason.contains("`permessage-deflate`"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let f = frames_in(&c.out);
    assert_eq!(f[0].0.kind, Kind::RstStream, "the stream is reset");
    assert!(!c.tunnel_send(b"x"));
}
