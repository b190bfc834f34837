//! Servers the client refuses: floods of acknowledgements and CONTINUATION, HPACK tables and
//! bombs, flow-control violations, frames on the wrong stream, GOAWAY, a first frame that is
//! not SETTINGS.

use super::*;

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
        msg.contains("COMPRESSION_ERROR") && msg.contains("above the size allowed"),
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
