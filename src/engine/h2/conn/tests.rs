use loona_hpack::Encoder;

use super::*;
use crate::engine::h2::frame::MAX_WINDOW;

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

#[test]
fn a_ping_flood_is_refused_once_1000_acks_wait_to_be_written() {
    let ping = Server::frame(Kind::Ping, 0, 0, b"flooding");
    let msg = refused(&ping.repeat(MAX_QUEUED_ACKS + 1));
    assert!(
        msg.contains("ENHANCE_YOUR_CALM") && msg.contains("PING flood"),
        "{msg}"
    );
    // What was queued before the refusal is bounded: 1,001 acks of 17 bytes.
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    let _ = c.feed(&ping.repeat(100_000), &mut |_| {});
    assert!(c.out.len() < 20_000, "{} bytes queued", c.out.len());
}

#[test]
fn acks_that_are_written_do_not_count_so_a_busy_but_honest_server_is_fine() {
    let mut c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
    let ping = Server::frame(Kind::Ping, 0, 0, b"12345678");
    let settings = Server::frame(Kind::Settings, 0, 0, &[0, 3, 0, 0, 0, 100]);
    for _ in 0..10 {
        for _ in 0..MAX_QUEUED_ACKS / 2 {
            events(&mut c, &settings);
            events(&mut c, &ping);
        }
        // The socket took everything: the acks were written.
        c.out.clear();
    }
    // Partly written: only what is still in `out` counts.
    for _ in 0..MAX_QUEUED_ACKS {
        events(&mut c, &ping);
    }
    let n = c.out.len();
    c.out.drain(..n / 2);
    for _ in 0..MAX_QUEUED_ACKS / 2 {
        events(&mut c, &ping);
    }
    // 1,000 wait now: one more is too many.
    let msg = c.feed(&ping, &mut |_| {}).unwrap_err().0;
    assert!(msg.contains("ENHANCE_YOUR_CALM"), "{msg}");
}

#[test]
fn a_settings_flood_is_refused_too() {
    let settings = Server::frame(Kind::Settings, 0, 0, &[0, 3, 0, 0, 0, 100]);
    let msg = refused(&settings.repeat(MAX_QUEUED_ACKS + 1));
    assert!(msg.contains("ENHANCE_YOUR_CALM"), "{msg}");
    // A SETTINGS frame full of window changes costs one pass over the streams.
    let mut c = ready(Arc::from(&vec![1u8; 1 << 20][..]), RECEIVE_WINDOW);
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &[]));
    for _ in 0..100 {
        sent(&mut c, &[0x83]);
    }
    let mut p = Vec::new();
    for i in 0..2730u32 {
        p.extend(setting::INITIAL_WINDOW_SIZE.to_be_bytes());
        p.extend((i * 1000).to_be_bytes());
    }
    let t = std::time::Instant::now();
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &p));
    assert!(t.elapsed() < std::time::Duration::from_millis(100));
    assert_eq!(c.peer_initial_window, 2_729_000);
}

#[test]
fn endless_continuation_is_refused_by_count_and_by_size() {
    let head = Server::frame(Kind::Headers, 0, 3, &[0x88]);
    // Empty CONTINUATIONs never grow the block: their number is bounded.
    let mut bytes = head.clone();
    bytes.extend(Server::frame(Kind::Continuation, 0, 3, &[]).repeat(MAX_CONTINUATIONS + 1));
    let msg = refused(&bytes);
    assert!(
        msg.contains("ENHANCE_YOUR_CALM") && msg.contains("CONTINUATION"),
        "{msg}"
    );
    // Full ones are refused at 1 MiB, before the block is copied past it.
    let mut bytes = head;
    let full = Server::frame(Kind::Continuation, 0, 3, &[0x88; 16_384]);
    bytes.extend(full.repeat(MAX_HEADER_BLOCK / 16_384 + 1));
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    sent(&mut c, &[0x82]);
    sent(&mut c, &[0x82]);
    let err = c.feed(&bytes, &mut |_| {}).unwrap_err().0;
    assert!(
        err.contains("ENHANCE_YOUR_CALM") && err.contains("65536"),
        "{err}"
    );
    assert!(c.block.len() <= MAX_HEADER_BLOCK);
    // A large block that ends is decoded and its buffer given back.
    let mut s = Server::new();
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    sent(&mut c, &[0x82]);
    let big = vec![b'v'; 40_000];
    let block = s.hpack.encode(vec![
        (&b":status"[..], &b"200"[..]),
        (&b"x-big"[..], &big[..]),
    ]);
    let mut bytes = Server::frame(Kind::Headers, 0, 1, &block[..16_000]);
    let mut rest = block[16_000..].chunks(16_000).peekable();
    while let Some(chunk) = rest.next() {
        let fl = if rest.peek().is_none() {
            flags::END_HEADERS
        } else {
            0
        };
        bytes.extend(Server::frame(Kind::Continuation, fl, 1, chunk));
    }
    assert_eq!(
        events(&mut c, &bytes),
        [Event::Head {
            stream: 1,
            status: 200
        }]
    );
    assert!(c.block.capacity() <= BLOCK_KEEP);
}

#[test]
fn an_hpack_table_over_4096_bytes_is_a_compression_error() {
    // A dynamic table size update to 128 MiB (RFC 7541 §6.3: 001xxxxx, 5-bit prefix), then
    // entries to fill it: refused at the update, before any entry is kept.
    let mut block = Vec::new();
    loona_hpack::encoder::encode_integer_into(1 << 27, 5, 0x20, &mut block).unwrap();
    block.push(0x88);
    let msg = refused(&Server::frame(Kind::Headers, flags::END_HEADERS, 3, &block));
    assert!(
        msg.contains("COMPRESSION_ERROR") && msg.contains("exceeds the maximum size"),
        "{msg}"
    );
    // Up to the default is fine, and so is making it smaller.
    for size in [4096, 0] {
        let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
        sent(&mut c, &[0x82]);
        let mut block = Vec::new();
        loona_hpack::encoder::encode_integer_into(size, 5, 0x20, &mut block).unwrap();
        block.push(0x88);
        let ev = events(
            &mut c,
            &Server::frame(
                Kind::Headers,
                flags::END_HEADERS | flags::END_STREAM,
                1,
                &block,
            ),
        );
        assert_eq!(ev.len(), 2, "{size}: {ev:?}");
    }
}

#[test]
fn flow_control_violations_are_flow_control_errors() {
    let max = MAX_WINDOW.to_be_bytes();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // The connection's send window starts at 65,535: 2^31 - 1 more overflows it.
        (
            Server::frame(Kind::WindowUpdate, 0, 0, &max),
            "FLOW_CONTROL_ERROR",
        ),
        (
            Server::frame(Kind::WindowUpdate, 0, 0, &[0; 4]),
            "PROTOCOL_ERROR",
        ),
        (
            Server::frame(Kind::WindowUpdate, 0, 3, &[0; 4]),
            "PROTOCOL_ERROR",
        ),
        (
            Server::frame(Kind::WindowUpdate, 0, 0, &[0; 3]),
            "FRAME_SIZE_ERROR",
        ),
        (
            Server::frame(Kind::WindowUpdate, 0, 9, &[0, 0, 0, 1]),
            "PROTOCOL_ERROR",
        ),
        (
            setting(setting::INITIAL_WINDOW_SIZE, MAX_WINDOW + 1),
            "FLOW_CONTROL_ERROR",
        ),
    ];
    for (bytes, name) in cases {
        let msg = refused(&bytes);
        assert!(msg.contains(name), "{bytes:?}: {msg}");
    }
    // Stream windows of bodies still being sent overflow too.
    let body: Arc<[u8]> = vec![0u8; 100_000].into();
    let c = ready(body.clone(), RECEIVE_WINDOW);
    let msg = refused_with(c, &Server::frame(Kind::WindowUpdate, 0, 3, &max));
    assert!(
        msg.contains("FLOW_CONTROL_ERROR") && msg.contains("stream 3"),
        "{msg}"
    );
    let c = ready(body, RECEIVE_WINDOW);
    // Stream 1 took the connection's window: stream 3 has its whole window left.
    let mut bytes = Server::frame(Kind::WindowUpdate, 0, 3, &100_000u32.to_be_bytes());
    bytes.extend(setting(setting::INITIAL_WINDOW_SIZE, MAX_WINDOW));
    let msg = refused_with(c, &bytes);
    assert!(msg.contains("FLOW_CONTROL_ERROR"), "{msg}");
}

#[test]
fn data_beyond_the_announced_windows_is_a_flow_control_error() {
    let mut s = Server::new();
    let chunk = Server::frame(Kind::Data, 0, 1, &[0u8; 16_384]);
    let start = |s: &mut Server| {
        let mut c = ready(Arc::from(&b""[..]), 65_535);
        sent(&mut c, &[0x82]);
        events(
            &mut c,
            &Server::frame(Kind::Headers, flags::END_HEADERS, 1, &s.head("200")),
        );
        c
    };
    // `--h2-window 65535` and a server that ignores it: the client queues its window
    // updates after half of it, but they widen nothing until written, so the fifth 16 KiB
    // frame in a row is beyond the window the server was given.
    let mut c = start(&mut s);
    let err = c.feed(&chunk.repeat(5), &mut |_| {}).unwrap_err().0;
    assert!(
        err.contains("FLOW_CONTROL_ERROR")
            && err.contains("beyond the connection's window of 65535"),
        "{err}"
    );
    // A server that waits for the updates is fine: once written, they are its window.
    let mut c = start(&mut s);
    for _ in 0..40 {
        events(&mut c, &chunk);
        c.out.clear();
    }
    // The stream's own window, when the connection's is wider.
    let mut c = ready(Arc::from(&b""[..]), 65_535);
    c.recv_credit = i64::MAX / 2;
    sent(&mut c, &[0x82]);
    events(
        &mut c,
        &Server::frame(Kind::Headers, flags::END_HEADERS, 1, &s.head("200")),
    );
    let err = c.feed(&chunk.repeat(5), &mut |_| {}).unwrap_err().0;
    assert!(
        err.contains("FLOW_CONTROL_ERROR") && err.contains("stream 1's window"),
        "{err}"
    );
}

#[test]
fn frames_on_the_wrong_stream_and_bad_settings_are_refused() {
    let mut s = Server::new();
    let head = s.head("200");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Server::frame(Kind::Data, 0, 0, b"x"), "stream 0"),
        (
            Server::frame(Kind::Headers, flags::END_HEADERS, 0, &head),
            "stream 0",
        ),
        (
            Server::frame(Kind::RstStream, 0, 0, &[0, 0, 0, 8]),
            "stream 0",
        ),
        (
            Server::frame(Kind::Headers, flags::END_HEADERS, 2, &head),
            "never opened",
        ),
        (Server::frame(Kind::Data, 0, 5, b"x"), "never opened"),
        (
            Server::frame(Kind::RstStream, 0, 3, &[0, 0, 8]),
            "FRAME_SIZE_ERROR",
        ),
        (Server::frame(Kind::Settings, 0, 1, &[]), "PROTOCOL_ERROR"),
        (
            Server::frame(Kind::Settings, flags::ACK, 0, &[0; 6]),
            "FRAME_SIZE_ERROR",
        ),
        (
            Server::frame(Kind::Settings, 0, 0, &[0; 5]),
            "FRAME_SIZE_ERROR",
        ),
        (Server::frame(Kind::Ping, 0, 1, &[0; 8]), "PROTOCOL_ERROR"),
        (Server::frame(Kind::Ping, 0, 0, &[0; 9]), "FRAME_SIZE_ERROR"),
        (
            Server::frame(Kind::GoAway, 0, 0, &[0; 7]),
            "FRAME_SIZE_ERROR",
        ),
        (Server::frame(Kind::GoAway, 0, 1, &[0; 8]), "PROTOCOL_ERROR"),
        (setting(setting::ENABLE_PUSH, 2), "SETTINGS_ENABLE_PUSH 2"),
        (setting(setting::MAX_FRAME_SIZE, 16_383), "PROTOCOL_ERROR"),
        (setting(setting::MAX_FRAME_SIZE, 1 << 24), "PROTOCOL_ERROR"),
        // Stream 1 already has its head; stream 3 has none yet.
        (
            Server::frame(Kind::Headers, flags::END_HEADERS, 1, &head),
            "a second response head",
        ),
        (
            Server::frame(Kind::Data, 0, 3, b"x"),
            "DATA before the response head",
        ),
        (
            Server::frame(
                Kind::Headers,
                flags::END_HEADERS,
                3,
                &[0x00, 0x01, b'x', 0x01, b'y'],
            ),
            "without :status",
        ),
        (
            Server::frame(
                Kind::Headers,
                flags::END_HEADERS,
                3,
                &s.hpack.encode(vec![(&b":status"[..], &b"20"[..])]),
            ),
            "invalid :status",
        ),
        (
            Server::frame(
                Kind::Headers,
                flags::END_HEADERS | flags::END_STREAM,
                3,
                &s.hpack.encode(vec![(&b":status"[..], &b"100"[..])]),
            ),
            "interim response that ends",
        ),
    ];
    for (bytes, what) in cases {
        let msg = refused(&bytes);
        assert!(msg.contains(what), "{bytes:?}: {msg}");
    }
    // Valid extremes are accepted.
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    for (id, v) in [
        (setting::ENABLE_PUSH, 1),
        (setting::MAX_FRAME_SIZE, (1 << 24) - 1),
        (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
        (0x99, u32::MAX),
    ] {
        events(&mut c, &setting(id, v));
    }
}

#[test]
fn goaway_forgets_the_streams_it_did_not_process() {
    let mut s = Server::new();
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    events(&mut c, &Server::frame(Kind::Settings, 0, 0, &[]));
    for _ in 0..3 {
        sent(&mut c, &[0x82]);
    }
    let mut goaway = 3u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    let mut bytes = Server::frame(Kind::GoAway, 0, 0, &goaway);
    // Stream 5 was not processed: what the server still sends for it is ignored.
    for stream in [5, 1] {
        bytes.extend(Server::frame(
            Kind::Headers,
            flags::END_HEADERS | flags::END_STREAM,
            stream,
            &s.head("200"),
        ));
    }
    assert_eq!(
        events(&mut c, &bytes),
        [
            Event::GoAway {
                last_stream: 3,
                code: 0
            },
            Event::Head {
                stream: 1,
                status: 200
            },
            Event::End { stream: 1 },
        ]
    );
    assert_eq!(c.open_streams(), 1);
}

#[test]
fn the_first_frame_must_be_settings_and_an_http1_answer_is_named() {
    let mut c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
    let answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    // Fed in pieces: nothing happens until a frame header's worth arrived.
    events(&mut c, &answer[..8]);
    let err = c.feed(&answer[8..], &mut |_| {}).unwrap_err().0;
    assert!(c.answered_http1());
    assert!(
        err.contains("\"HTTP/1.1 400 Bad Request\"") && err.contains("PROTOCOL_ERROR"),
        "{err}"
    );
    for (first, said) in [
        (
            Server::frame(Kind::Ping, 0, 0, &[0; 8]),
            "the server's first frame is PING, not SETTINGS",
        ),
        (
            Server::frame(Kind::Settings, flags::ACK, 0, &[]),
            "the server's first frame is a SETTINGS acknowledgement, not SETTINGS",
        ),
        (
            Server::frame(Kind::GoAway, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0xb]),
            "the server's first frame is GOAWAY, not SETTINGS",
        ),
        (
            b"SSH-2.0-OpenSSH_9.6\r\n".to_vec(),
            r#"the server's first bytes are not an HTTP/2 frame: "SSH-2.0-OpenSSH_9.6\r\n""#,
        ),
        (
            b"\x00\x00\x00\xfe\x00\x00\x00\x00\x00\x01".to_vec(),
            r#"not an HTTP/2 frame: "\x00\x00\x00\xfe\x00\x00\x00\x00\x00\x01""#,
        ),
    ] {
        let mut c = H2Conn::new(Arc::from(&b""[..]), RECEIVE_WINDOW);
        let err = c.feed(&first, &mut |_| {}).unwrap_err().0;
        assert!(!c.answered_http1());
        assert!(err.contains(said), "{err}");
    }
}

#[test]
fn an_hpack_bomb_is_refused_before_it_allocates_much() {
    // One 4,000-byte value indexed into the table, then 10,000 one-byte references to it:
    // 40 MB decoded from a 10 KB block.
    let mut block = vec![0x40, 0x01, b'x'];
    loona_hpack::encoder::encode_integer_into(4000, 7, 0, &mut block).unwrap();
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 10_000));
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    sent(&mut c, &[0x82]);
    let mut bytes = Server::frame(Kind::Headers, 0, 1, &block[..8000]);
    bytes.extend(Server::frame(
        Kind::Continuation,
        flags::END_HEADERS,
        1,
        &block[8000..],
    ));
    let t = std::time::Instant::now();
    let err = c.feed(&bytes, &mut |_| {}).unwrap_err().0;
    assert!(
        err.contains("ENHANCE_YOUR_CALM") && err.contains("decoded"),
        "{err}"
    );
    assert!(t.elapsed() < std::time::Duration::from_millis(200));
}

#[test]
fn size_updates_come_at_most_twice_and_only_first() {
    let update = |size: usize| {
        let mut b = Vec::new();
        loona_hpack::encoder::encode_integer_into(size, 5, 0x20, &mut b).unwrap();
        b
    };
    let ok = [update(0), update(4096), vec![0x88]].concat();
    let cases = [
        (
            [update(0), update(100), update(4096), vec![0x88]].concat(),
            "more than two",
        ),
        ([vec![0x88], update(0)].concat(), "after a header field"),
        // 64 KiB of size updates: refused before the decoder takes a pass over each.
        (
            [update(0).repeat(60_000), vec![0x88]].concat(),
            "more than two",
        ),
    ];
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    sent(&mut c, &[0x82]);
    let fl = flags::END_HEADERS | flags::END_STREAM;
    assert_eq!(
        events(&mut c, &Server::frame(Kind::Headers, fl, 1, &ok)).len(),
        2
    );
    for (block, said) in cases {
        let mut bytes = Vec::new();
        let mut chunks = block.chunks(16_384).peekable();
        let first = chunks.next().unwrap();
        let end = if chunks.peek().is_none() {
            fl
        } else {
            flags::END_STREAM
        };
        bytes.extend(Server::frame(Kind::Headers, end, 3, first));
        while let Some(ch) = chunks.next() {
            let end = if chunks.peek().is_none() {
                flags::END_HEADERS
            } else {
                0
            };
            bytes.extend(Server::frame(Kind::Continuation, end, 3, ch));
        }
        let msg = refused(&bytes);
        assert!(
            msg.contains("COMPRESSION_ERROR") && msg.contains(said),
            "{msg}"
        );
    }
}

#[test]
fn a_large_block_of_small_fields_decodes_in_linear_time() {
    // 64 KiB of header fields of one byte each would cost a decoder that moves the rest of
    // the block per field 2^31 byte moves; the header list bound stops it at 64 KiB decoded.
    let mut block = vec![0x88];
    block.extend(std::iter::repeat_n(0xbf_u8 & 0x8f, 60_000));
    let mut bytes = Server::frame(Kind::Headers, 0, 3, &block[..16_384]);
    for (k, ch) in block[16_384..].chunks(16_384).enumerate() {
        let last = 16_384 * (k + 2) >= block.len();
        let fl = if last { flags::END_HEADERS } else { 0 };
        bytes.extend(Server::frame(Kind::Continuation, fl, 3, ch));
    }
    let t = std::time::Instant::now();
    for _ in 0..20 {
        let msg = refused(&bytes);
        assert!(msg.contains("header list over"), "{msg}");
    }
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
}

/// A connection with stream 1 open (a HEAD when `head`) after the server's SETTINGS.
fn one_stream(head: bool) -> H2Conn {
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    c.open_stream_with(&[0x82], None, head);
    c.unwritten.clear();
    c.out.clear();
    c
}

#[test]
fn a_content_length_that_disagrees_with_the_data_is_malformed() {
    let mut s = Server::new();
    let head = |s: &mut Server, status: &str, len: &str| {
        s.hpack.encode(vec![
            (&b":status"[..], status.as_bytes()),
            (&b"content-length"[..], len.as_bytes()),
        ])
    };
    let malformed = |ev: &[Event]| match ev.last() {
        Some(Event::Malformed { reason, .. }) => reason.clone(),
        other => panic!("{other:?}"),
    };
    // Fewer bytes than declared, ended by the server: no reset needed.
    let mut c = one_stream(false);
    let mut bytes = Server::frame(
        Kind::Headers,
        flags::END_HEADERS,
        1,
        &head(&mut s, "200", "10"),
    );
    bytes.extend(Server::frame(Kind::Data, flags::END_STREAM, 1, b"."));
    let ev = events(&mut c, &bytes);
    assert!(malformed(&ev).contains("a content-length of 10 and 1 bytes of DATA"));
    assert!(!frames_in(&c.out)
        .iter()
        .any(|(h, _)| h.kind == Kind::RstStream));
    assert_eq!(c.open_streams(), 0);
    // More than declared: the stream is reset at once.
    let mut c = one_stream(false);
    let mut bytes = Server::frame(
        Kind::Headers,
        flags::END_HEADERS,
        1,
        &head(&mut s, "200", "2"),
    );
    bytes.extend(Server::frame(Kind::Data, 0, 1, b"abc"));
    let ev = events(&mut c, &bytes);
    assert!(malformed(&ev).contains("more DATA than its content-length of 2"));
    let rst = frames_in(&c.out);
    assert!(
        rst.iter()
            .any(|(h, p)| h.kind == Kind::RstStream && p == &[0, 0, 0, 1]),
        "{rst:?}"
    );
    // Not a number, or two that disagree.
    for value in ["ten", "-1", "", "5, 6"] {
        let mut c = one_stream(false);
        let fl = flags::END_HEADERS | flags::END_STREAM;
        let ev = events(
            &mut c,
            &Server::frame(Kind::Headers, fl, 1, &head(&mut s, "200", value)),
        );
        assert!(
            malformed(&ev).contains("invalid content-length"),
            "{value:?}: {ev:?}"
        );
    }
    // What the RFC exempts, and a length that matches.
    for (status, head_request, data) in [
        ("200", true, &b""[..]),
        ("204", false, b""),
        ("304", false, b""),
        ("200", false, b"0123456789"),
    ] {
        let mut c = one_stream(head_request);
        let mut bytes = Server::frame(
            Kind::Headers,
            flags::END_HEADERS,
            1,
            &head(&mut s, status, "10"),
        );
        bytes.extend(Server::frame(Kind::Data, flags::END_STREAM, 1, data));
        let ev = events(&mut c, &bytes);
        assert_eq!(
            ev.last(),
            Some(&Event::End { stream: 1 }),
            "{status}: {ev:?}"
        );
    }
}

#[test]
fn a_stream_cancelled_is_reset_and_what_follows_for_it_ignored() {
    let mut s = Server::new();
    let mut c = one_stream(false);
    sent(&mut c, &[0x82]);
    c.out.clear();
    assert!(c.cancel(1));
    assert!(!c.cancel(1));
    let f = frames_in(&c.out);
    assert_eq!(
        (f[0].0.kind, f[0].0.stream, &f[0].1[..]),
        (Kind::RstStream, 1, &[0, 0, 0, 8][..])
    );
    let mut bytes = Server::frame(Kind::Headers, flags::END_HEADERS, 1, &s.head("200"));
    bytes.extend(Server::frame(Kind::Data, flags::END_STREAM, 1, b"late"));
    bytes.extend(Server::frame(
        Kind::Headers,
        flags::END_HEADERS | flags::END_STREAM,
        3,
        &s.head("200"),
    ));
    let ev = events(&mut c, &bytes);
    assert_eq!(
        ev,
        [
            Event::Head {
                stream: 3,
                status: 200
            },
            Event::End { stream: 3 }
        ]
    );
}

#[test]
fn a_request_counts_as_written_once_its_headers_left() {
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    assert!(!c.request_written());
    // The preface and acknowledgements are written: still no request.
    c.out.clear();
    assert!(!c.request_written());
    sent(&mut c, &[0x82]);
    assert!(!c.request_written(), "queued, not written");
    c.out.drain(..1);
    assert!(c.request_written());
}

#[test]
fn a_response_to_a_request_not_yet_sent_is_refused() {
    // A server that answers stream 1 before the client's HEADERS left `out` cannot know it:
    // were it accepted, a request never written would complete.
    let mut s = Server::new();
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    c.out.clear();
    c.open_stream(&[0x82]);
    let fl = flags::END_HEADERS | flags::END_STREAM;
    let answer = Server::frame(Kind::Headers, fl, 1, &s.head("200"));
    let err = c.feed(&answer, &mut |_| {}).unwrap_err().0;
    assert!(
        err.contains("on stream 1 before its request was sent"),
        "{err}"
    );
    // Once written (the caller drained `out`), the same answer completes it.
    let mut s = Server::new();
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    c.out.clear();
    c.open_stream(&[0x82]);
    c.out.clear();
    let ev = events(&mut c, &Server::frame(Kind::Headers, fl, 1, &s.head("200")));
    assert_eq!(ev.last(), Some(&Event::End { stream: 1 }));
    // Streams are written in order: with stream 1 written and 3 not, 3 is refused.
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    c.out.clear();
    c.open_stream(&[0x82]);
    let first = c.out.len();
    c.open_stream(&[0x82]);
    c.out.drain(..first);
    let mut s = Server::new();
    let err = c
        .feed(
            &Server::frame(Kind::Headers, fl, 3, &s.head("200")),
            &mut |_| {},
        )
        .unwrap_err()
        .0;
    assert!(
        err.contains("stream 3 before its request was sent"),
        "{err}"
    );
}
