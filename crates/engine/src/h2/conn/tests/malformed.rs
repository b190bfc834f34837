//! Header blocks and responses that break the rules a decoder must hold: size updates, a
//! large block of small fields, content-length against DATA, cancelled streams, frames on
//! streams not yet written.

use super::*;

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
    // This thread's CPU time, not the wall clock: other processes on a busy machine take
    // wall time from it, never CPU time. A quadratic decoder needs tens of seconds of CPU for
    // these 20 blocks; a linear one milliseconds (2 s allows a debug build under sanitizers).
    let t = thread_cpu();
    for _ in 0..20 {
        let msg = refused(&bytes);
        assert!(msg.contains("header list over"), "{msg}");
    }
    let used = thread_cpu() - t;
    assert!(used < std::time::Duration::from_secs(2), "{used:?} of CPU");
}

/// CPU time the calling thread has used.
fn thread_cpu() -> std::time::Duration {
    std::time::Duration::from_nanos(crate::clock::thread_cpu_ns().expect("a thread CPU clock"))
}

/// A connection with stream 1 open (a HEAD when `head`) after the server's SETTINGS.
fn one_stream(head: bool) -> H2Conn {
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    c.open_stream_with(&[0x82], None, head, None);
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
