use super::*;
use crate::h3::frame;

/// An event, owned, for comparing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Interim(u16),
    Head(Head),
    Data(Vec<u8>),
    Trailers(Fields),
}

/// A field section of `lines`.
fn section(lines: &[(&str, &str)]) -> Vec<u8> {
    let mut b = vec![0, 0];
    for (n, v) in lines {
        qpack::field_line(&mut b, n, v);
    }
    b
}

fn headers(lines: &[(&str, &str)], out: &mut Vec<u8>) {
    frame::headers(&section(lines), out);
}

/// The events of `wire` fed in pieces cut at `cuts`, DATA joined; then `finish`.
fn run(wire: &[u8], cuts: &[usize], limits: Limits, head: bool) -> Result<Vec<Owned>, H3Error> {
    let mut p = ResponseParser::new(limits, head);
    let mut events: Vec<Owned> = Vec::new();
    let mut on = |e: Event<'_>| match (e, events.last_mut()) {
        (Event::Data(b), Some(Owned::Data(d))) => d.extend_from_slice(b),
        (Event::Data(b), _) => events.push(Owned::Data(b.to_vec())),
        (Event::Interim { status }, _) => events.push(Owned::Interim(status)),
        (Event::Head(h), _) => events.push(Owned::Head(h)),
        (Event::Trailers(f), _) => events.push(Owned::Trailers(f)),
    };
    let mut from = 0;
    for &cut in cuts.iter().chain([&wire.len()]) {
        p.feed(&wire[from..cut], &mut on)?;
        from = cut;
    }
    p.finish()?;
    assert!(p.body_len() <= wire.len() as u64);
    Ok(events)
}

fn code(wire: &[u8]) -> Code {
    run(wire, &[], Limits::default(), false).unwrap_err().code
}

fn sample() -> Vec<u8> {
    let mut w = Vec::new();
    headers(&[(":status", "103"), ("link", "</a.css>")], &mut w);
    frame::header(0x21, 3, &mut w); // reserved: skipped
    w.extend_from_slice(b"pad");
    headers(
        &[(":status", "200"), ("content-length", "5"), ("x-a", "1")],
        &mut w,
    );
    frame::data(b"he", &mut w);
    frame::header(0x40, 0, &mut w); // unknown, empty
    frame::data(b"", &mut w);
    frame::data(b"llo", &mut w);
    headers(&[("x-t", "2")], &mut w);
    frame::header(0x3e, 1, &mut w); // frames to skip may follow the trailers
    w.push(0);
    w
}

#[test]
fn a_response_gives_the_same_events_split_anywhere() {
    let w = sample();
    let limits = Limits {
        keep_fields: true,
        ..Limits::default()
    };
    let whole = run(&w, &[], limits, false).unwrap();
    let field = |n: &str, v: &str| (n.as_bytes().to_vec(), v.as_bytes().to_vec());
    assert_eq!(
        whole,
        [
            Owned::Interim(103),
            Owned::Head(Head {
                status: 200,
                content_length: Some(5),
                fields: vec![field("content-length", "5"), field("x-a", "1")],
            }),
            Owned::Data(b"hello".to_vec()),
            Owned::Trailers(vec![field("x-t", "2")]),
        ]
    );
    for cut in 0..=w.len() {
        assert_eq!(
            run(&w, &[cut], limits, false).unwrap(),
            whole,
            "cut at {cut}"
        );
    }
    let bytewise: Vec<usize> = (1..w.len()).collect();
    assert_eq!(run(&w, &bytewise, limits, false).unwrap(), whole);
    // Without keeping fields, the events are the same but empty of fields.
    let bare = run(&w, &[], Limits::default(), false).unwrap();
    assert!(matches!(&bare[1], Owned::Head(h) if h.fields.is_empty() && h.status == 200));
}

#[test]
fn the_body_is_counted_and_its_start_kept() {
    let w = sample();
    let mut p = ResponseParser::new(
        Limits {
            keep_body: 3,
            ..Limits::default()
        },
        false,
    );
    p.feed(&w, &mut |_| {}).unwrap();
    p.finish().unwrap();
    assert_eq!((p.body_len(), p.kept_body()), (5, &b"hel"[..]));
}

#[test]
fn responses_without_content() {
    let mut w = Vec::new();
    headers(&[(":status", "200"), ("content-length", "100")], &mut w);
    assert!(run(&w, &[], Limits::default(), true).is_ok());
    assert_eq!(code(&w), Code::MessageError); // not a HEAD: 100 bytes were promised
    w.clear();
    headers(&[(":status", "304"), ("content-length", "100")], &mut w);
    assert!(run(&w, &[], Limits::default(), false).is_ok());
    frame::data(b"x", &mut w);
    assert_eq!(code(&w), Code::MessageError);
}

/// Writes a response's frames.
type Build = dyn Fn(&mut Vec<u8>);

#[test]
fn frames_out_of_place_fail_with_the_rfc_codes() {
    fn ok(w: &mut Vec<u8>) {
        headers(&[(":status", "200")], w);
    }
    let cases: [(&Build, Code); 11] = [
        (&|w| frame::data(b"x", w), Code::FrameUnexpected),
        (
            &|w| {
                ok(w);
                frame::ClientSettings::default().write(w)
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| {
                ok(w);
                frame::goaway(0, w).unwrap()
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| {
                ok(w);
                frame::header(kind::MAX_PUSH_ID, 1, w);
                w.push(0)
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| {
                ok(w);
                frame::header(kind::CANCEL_PUSH, 1, w);
                w.push(0)
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| {
                ok(w);
                frame::header(kind::PUSH_PROMISE, 0, w)
            },
            Code::IdError,
        ),
        (
            &|w| {
                ok(w);
                frame::header(0x06, 8, w);
                w.extend([0; 8])
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| {
                ok(w);
                headers(&[("x", "1")], w);
                headers(&[("x", "1")], w)
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| {
                ok(w);
                headers(&[("x", "1")], w);
                frame::data(b"x", w)
            },
            Code::FrameUnexpected,
        ),
        (
            &|w| frame::header(kind::HEADERS, 70_000, w),
            Code::ExcessiveLoad,
        ),
        (
            &|w| {
                ok(w);
                w.extend([0x00, 0x05, b'x'])
            },
            Code::FrameError,
        ),
    ];
    for (i, (build, expected)) in cases.iter().enumerate() {
        let mut w = Vec::new();
        build(&mut w);
        assert_eq!(code(&w), *expected, "case {i}");
    }
    // The largest length there is: refused from the frame header alone.
    let mut p = ResponseParser::new(Limits::default(), false);
    let e = p
        .feed(
            &[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            &mut |_| {},
        )
        .unwrap_err();
    assert_eq!(e.code, Code::ExcessiveLoad);
    // An error stays: feeding more gives it again.
    assert_eq!(p.feed(&[], &mut |_| {}).unwrap_err(), e);
    assert_eq!(p.finish().unwrap_err(), e);
}

#[test]
fn malformed_heads_fail() {
    let cases: [&[(&str, &str)]; 12] = [
        &[(":status", "200"), ("x a", "1")],
        &[(":status", "200"), ("x-a", "1\r\nx-b: 2")],
        &[(":status", "200"), ("x-a", "\0")],
        &[("x-a", "1")],
        &[("x-a", "1"), (":status", "200")],
        &[(":status", "200"), (":status", "200")],
        &[(":status", "20")],
        &[(":status", "099")],
        &[(":path", "/"), (":status", "200")],
        &[(":status", "200"), ("X-A", "1")],
        &[(":status", "200"), ("transfer-encoding", "chunked")],
        &[
            (":status", "200"),
            ("content-length", "1"),
            ("content-length", "2"),
        ],
    ];
    for lines in cases {
        let mut w = Vec::new();
        headers(lines, &mut w);
        assert_eq!(code(&w), Code::MessageError, "{lines:?}");
    }
    let mut w = Vec::new();
    headers(&[(":status", "200")], &mut w);
    headers(&[(":status", "200")], &mut w); // trailers with a pseudo-header field
    assert_eq!(code(&w), Code::MessageError);
    // Before any head, the stream ends: malformed; a dynamic reference: QPACK's error.
    assert_eq!(code(&[]), Code::MessageError);
    assert_eq!(
        code(&[0x01, 0x03, 0x00, 0x00, 0x81]),
        Code::QpackDecompressionFailed
    );
    // A field section decoding to more than the limit.
    let big = "v".repeat(2000);
    let lines: Vec<(&str, &str)> = (0..40).map(|_| ("x-big", big.as_str())).collect();
    let mut w = Vec::new();
    headers(&lines, &mut w);
    assert_eq!(code(&w), Code::ExcessiveLoad);
}

#[test]
fn field_characters() {
    let mut w = Vec::new();
    headers(
        &[(":status", "200"), ("x-a_b~1", "a\tb \u{e9} \"quoted\"")],
        &mut w,
    );
    assert!(run(&w, &[], Limits::default(), false).is_ok());
    for b in 0..=255u8 {
        let token = b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b);
        assert_eq!(name_byte(b), token, "{b:#x}");
        assert_eq!(
            value_byte(b),
            b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80,
            "{b:#x}"
        );
    }
}

#[test]
fn the_body_must_match_its_length() {
    let mut w = Vec::new();
    headers(&[(":status", "200"), ("content-length", "3")], &mut w);
    frame::data(b"ab", &mut w);
    assert_eq!(code(&w), Code::MessageError);
    frame::data(b"cd", &mut w);
    let mut p = ResponseParser::new(Limits::default(), false);
    // Refused as soon as the body passes the length, before the stream ends.
    assert_eq!(
        p.feed(&w, &mut |_| {}).unwrap_err().code,
        Code::MessageError
    );
}
