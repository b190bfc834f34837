//! The response parser on fixture bytes: framing, split reads, hostile heads.

use super::*;

/// Feeds `input` in pieces of `step` bytes and collects every response and the error, if any.
fn parse_all(
    p: &mut ResponseParser,
    input: &[u8],
    step: usize,
) -> (Vec<Response>, Option<ParseError>) {
    let mut out = Vec::new();
    for piece in input.chunks(step.max(1)) {
        let mut rest = piece;
        while !rest.is_empty() {
            match p.feed(rest) {
                Ok((n, r)) => {
                    rest = &rest[n..];
                    out.extend(r);
                }
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

fn every_split(input: &[u8], head: bool) -> Vec<Response> {
    let mut first = None;
    for step in [1, 2, 3, 7, 64, input.len()] {
        let mut p = ResponseParser::new(head);
        let (rs, err) = parse_all(&mut p, input, step);
        assert!(err.is_none(), "step {step}: {err:?}");
        assert!(
            p.is_idle(),
            "step {step}: parser not back at a response boundary"
        );
        match &first {
            None => first = Some(rs),
            Some(f) => assert_eq!(f, &rs, "step {step} parsed differently"),
        }
    }
    first.unwrap()
}

#[test]
fn content_length_and_keep_alive() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
    let rs = every_split(wire, false);
    assert_eq!(rs.len(), 2);
    assert_eq!(
        (rs[0].status, rs[0].body_bytes, rs[0].keep_alive),
        (200, 5, true)
    );
    assert_eq!(rs[0].wire_bytes, 43);
    assert_eq!((rs[1].status, rs[1].body_bytes), (404, 0));
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=x\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
    let rs = every_split(wire, false);
    assert_eq!(rs.len(), 2);
    assert_eq!(
        (rs[0].status, rs[0].body_bytes, rs[0].keep_alive),
        (200, 15, true)
    );
    assert_eq!(
        rs[0].wire_bytes as usize,
        wire.len() - b"HTTP/1.1 204 No Content\r\n\r\n".len()
    );
    assert_eq!(rs[1].status, 204);
}

#[test]
fn chunked_without_trailers() {
    let rs = every_split(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(rs[0].body_bytes, 3);
}

#[test]
fn interim_responses_are_skipped() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    let rs = every_split(wire, false);
    assert_eq!(rs.len(), 1);
    assert_eq!((rs[0].status, rs[0].body_bytes), (201, 2));
    assert_eq!(rs[0].wire_bytes as usize, wire.len());
}

#[test]
fn head_204_304_have_no_body() {
    let rs = every_split(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true);
    assert_eq!((rs[0].status, rs[0].body_bytes), (200, 0));
    let rs = every_split(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\nHTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", false);
    assert_eq!(
        rs.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![304, 204]
    );
}

#[test]
fn close_delimited_body_ends_at_eof() {
    let mut p = ResponseParser::new(false);
    let (rs, err) = parse_all(&mut p, b"HTTP/1.0 200 OK\r\n\r\nsome body bytes", 4);
    assert!(rs.is_empty() && err.is_none());
    let r = p.eof().unwrap().unwrap();
    assert_eq!((r.status, r.body_bytes, r.keep_alive), (200, 15, false));
}

#[test]
fn connection_close_and_http10() {
    let rs = every_split(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    assert!(!rs[0].keep_alive);
    let rs = every_split(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false);
    assert!(!rs[0].keep_alive, "HTTP/1.0 closes by default");
    let rs = every_split(
        b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    assert!(rs[0].keep_alive);
}

#[test]
fn eof_between_and_inside_responses() {
    let mut p = ResponseParser::new(false);
    assert_eq!(p.eof(), Ok(None));
    let mut p = ResponseParser::new(false);
    let _ = parse_all(
        &mut p,
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        100,
    );
    assert_eq!(p.eof(), Err(ParseError::Truncated));
    let mut p = ResponseParser::new(false);
    let _ = parse_all(&mut p, b"HTTP/1.1 200", 100);
    assert!(!p.is_idle());
    assert_eq!(p.eof(), Err(ParseError::Truncated));
}

#[test]
fn malformed_input_is_a_protocol_error() {
    let cases: &[&[u8]] = &[
        b"garbage garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ];
    for c in cases {
        for step in [1, 5, c.len()] {
            let mut p = ResponseParser::new(false);
            let (_, err) = parse_all(&mut p, c, step);
            assert!(
                err.is_some(),
                "accepted {:?} in steps of {step}",
                String::from_utf8_lossy(c)
            );
        }
    }
}

#[test]
fn endless_headers_are_bounded() {
    let mut p = ResponseParser::new(false);
    let mut err = None;
    let line = b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let (_, e) = parse_all(&mut p, b"HTTP/1.1 200 OK\r\n", 100);
    assert!(e.is_none());
    for _ in 0..10_000 {
        if let (_, Some(e)) = parse_all(&mut p, line, line.len()) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(err, Some(ParseError::HeadTooLarge));
    // The same in one large read.
    let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
    while big.len() <= MAX_HEAD_BYTES + 10 {
        big.extend_from_slice(line);
    }
    let mut p = ResponseParser::new(false);
    let err = parse_all(&mut p, &big, big.len()).1;
    assert!(
        matches!(err, Some(ParseError::HeadTooLarge | ParseError::Head(_))),
        "{err:?}"
    );
}

#[test]
fn head_limit_is_the_same_in_one_read_and_in_pieces() {
    let head_of = |len: usize| {
        let start = b"HTTP/1.1 200 OK\r\nX-Big: ";
        let end = b"\r\nContent-Length: 0\r\n\r\n";
        let mut h = start.to_vec();
        h.resize(len - end.len(), b'a');
        h.extend_from_slice(end);
        assert_eq!(h.len(), len);
        h
    };
    let ok = head_of(MAX_HEAD_BYTES);
    assert_eq!(every_split(&ok, false).len(), 1);
    let big = head_of(MAX_HEAD_BYTES + 1);
    for step in [1, 1000, big.len()] {
        let mut p = ResponseParser::new(false);
        let (rs, err) = parse_all(&mut p, &big, step);
        assert!(rs.is_empty(), "step {step}");
        assert_eq!(err, Some(ParseError::HeadTooLarge), "step {step}");
    }
}

#[test]
fn huge_declared_body_is_counted_not_buffered() {
    let mut p = ResponseParser::new(false);
    let (rs, err) = parse_all(
        &mut p,
        b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n",
        1000,
    );
    assert!(rs.is_empty() && err.is_none());
    let block = vec![b'x'; 1 << 20];
    for _ in 0..(10 * 1024 - 1) {
        assert_eq!(p.feed(&block).unwrap(), (block.len(), None));
    }
    let (n, r) = p.feed(&block).unwrap();
    assert_eq!(n, block.len());
    assert_eq!(r.unwrap().body_bytes, 10 << 30);
}

#[test]
fn failed_bytes_start_where_the_unusable_response_began() {
    // In one read: the read itself.
    let mut p = ResponseParser::new(false);
    let banner = b"SSH-2.0-OpenSSH_9.6\r\n";
    assert!(p.feed(banner).is_err());
    assert_eq!(p.failed_bytes(banner, 64), banner);
    assert_eq!(p.failed_bytes(banner, 3), b"SSH");
    // A head that arrived in pieces: all of it, from its first byte.
    let mut p = ResponseParser::new(false);
    assert_eq!(p.feed(b"HTTP/1.1 200 OK\r\n").unwrap(), (17, None));
    let rest = b"Bad Header\r\n\r\n";
    assert!(p.feed(rest).is_err());
    assert_eq!(
        p.failed_bytes(rest, 64),
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"
    );
}

/// A chunked response with `body` as its framed body.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    wire.extend_from_slice(body);
    wire
}

/// `body` is refused for `reason`, fed whole or in pieces down to single bytes.
fn assert_chunk_error(body: &[u8], reason: &'static str) {
    let wire = chunked(body);
    for step in [1, 2, 3, 7, wire.len()] {
        let mut p = ResponseParser::new(false);
        let (rs, err) = parse_all(&mut p, &wire, step);
        let shown = String::from_utf8_lossy(body);
        assert!(rs.is_empty(), "{shown:?} step {step}: a response completed");
        assert_eq!(
            err,
            Some(ParseError::Chunked(reason)),
            "{shown:?} step {step}"
        );
    }
}

/// `body` is one response of `decoded` body bytes, whatever the reads.
fn assert_chunk_accepted(body: &[u8], decoded: u64) {
    let wire = chunked(body);
    let rs = every_split(&wire, false);
    let shown = String::from_utf8_lossy(body);
    assert_eq!(rs.len(), 1, "{shown:?}");
    assert_eq!(rs[0].body_bytes, decoded, "{shown:?}");
    assert_eq!(rs[0].wire_bytes as usize, wire.len(), "{shown:?}");
}

#[test]
fn chunk_size_lines_outside_rfc_9112_are_refused() {
    let cases: &[(&[u8], &str)] = &[
        (
            b"5 \r\nhello\r\n0\r\n\r\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"5\t\r\nhello\r\n0\r\n\r\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"5 \nhello\n0\n\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"0 \r\n\r\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"5;a \r\nhello\r\n0\r\n\r\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"5;a=b\t\r\nhello\r\n0\r\n\r\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"5;a=\"b\" \r\nhello\r\n0\r\n\r\n",
            "whitespace at the end of the chunk-size line",
        ),
        (
            b"5 ext\r\nhello\r\n0\r\n\r\n",
            "chunk extension without ';'",
        ),
        (
            b"5;a b\r\nhello\r\n0\r\n\r\n",
            "chunk extension without ';'",
        ),
        (
            b"5;a=b c\r\nhello\r\n0\r\n\r\n",
            "chunk extension without ';'",
        ),
        (b"5;\r\nhello\r\n0\r\n\r\n", "empty chunk extension name"),
        (b"5; \r\nhello\r\n0\r\n\r\n", "empty chunk extension name"),
        (b"5;\nhello\n0\n\n", "empty chunk extension name"),
        (b"5;;a\r\nhello\r\n0\r\n\r\n", "empty chunk extension name"),
        (b"5;=b\r\nhello\r\n0\r\n\r\n", "empty chunk extension name"),
        (b"5;a;\r\nhello\r\n0\r\n\r\n", "empty chunk extension name"),
        (b"0;\r\n\r\n", "empty chunk extension name"),
        (b"5;a=\r\nhello\r\n0\r\n\r\n", "empty chunk extension value"),
        (
            b"5;a= ;b\r\nhello\r\n0\r\n\r\n",
            "empty chunk extension value",
        ),
        (
            b"5;a@b\r\nhello\r\n0\r\n\r\n",
            "invalid character in chunk extension",
        ),
        (
            b"5;a=b=c\r\nhello\r\n0\r\n\r\n",
            "invalid character in chunk extension",
        ),
        (
            b"5;a=b\"c\"\r\nhello\r\n0\r\n\r\n",
            "invalid character in chunk extension",
        ),
        (
            b"5;a=\"b\"c\r\nhello\r\n0\r\n\r\n",
            "invalid character in chunk extension",
        ),
        (
            b"5;a=\"b\r\nhello\r\n0\r\n\r\n",
            "line ended inside a quoted chunk extension value",
        ),
        (
            b"5;a=\"b\\\r\nhello\r\n0\r\n\r\n",
            "line ended inside a quoted chunk extension value",
        ),
        (
            b"5;a=\"\x01\"\r\nhello\r\n0\r\n\r\n",
            "invalid character in a quoted chunk extension value",
        ),
        (
            b"5;a=\"\x7f\"\r\nhello\r\n0\r\n\r\n",
            "invalid character in a quoted chunk extension value",
        ),
        (
            b"0x5\r\nhello\r\n0\r\n\r\n",
            "invalid character in chunk size",
        ),
        (
            b"5h\r\nhello\r\n0\r\n\r\n",
            "invalid character in chunk size",
        ),
        (b"-5\r\nhello\r\n0\r\n\r\n", "missing chunk size"),
        (b"+5\r\nhello\r\n0\r\n\r\n", "missing chunk size"),
        (b" 5\r\nhello\r\n0\r\n\r\n", "missing chunk size"),
        (b";a\r\nhello\r\n0\r\n\r\n", "missing chunk size"),
        (b"1000000000000000\r\n", "chunk size too large"),
        (b"5\rhello\r\n0\r\n\r\n", "expected LF after chunk size"),
        (b"5;a\rhello\r\n0\r\n\r\n", "expected LF after chunk size"),
    ];
    for (body, reason) in cases {
        assert_chunk_error(body, reason);
    }
}

#[test]
fn chunk_extensions_of_rfc_9112_are_accepted() {
    let cases: &[&[u8]] = &[
        b"5;name\r\nhello\r\n0\r\n\r\n",
        b"5;name=token\r\nhello\r\n0\r\n\r\n",
        b"5;a;b=c;d\r\nhello\r\n0\r\n\r\n",
        b"5;a=!#$%&'*+-.^_`|~09AZaz\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"\"\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"x;y=z\"\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"q\\\"uote\\\\ and \\;\"\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"tab\tand space\"\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"obs \xe9\xff\"\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"x\";b=y\r\nhello\r\n0\r\n\r\n",
        // BWS around `;` and `=` (RFC 9112 §7.1.1).
        b"5 ;a\r\nhello\r\n0\r\n\r\n",
        b"5\t;\ta\r\nhello\r\n0\r\n\r\n",
        b"5 ; a = b ; c\r\nhello\r\n0\r\n\r\n",
        b"5;a \t= \t\"v\" ;b\r\nhello\r\n0\r\n\r\n",
        b"0 ;last=\"chunk\"\r\n\r\n",
    ];
    for body in cases {
        let decoded = if body.starts_with(b"5") { 5 } else { 0 };
        assert_chunk_accepted(body, decoded);
    }
}

#[test]
fn chunk_sizes_take_leading_zeros_and_either_case() {
    assert_chunk_accepted(b"0005\r\nhello\r\n0\r\n\r\n", 5);
    assert_chunk_accepted(b"00000000000000000000000005\r\nhello\r\n0\r\n\r\n", 5);
    assert_chunk_accepted(b"1A\r\n0123456789abcdef0123456789\r\n000\r\n\r\n", 26);
    assert_chunk_accepted(b"1a\r\n0123456789abcdef0123456789\r\n0\r\n\r\n", 26);
    // 15 significant digits (below 2^60) are the most a chunk may declare, zeros before them
    // or not: the size line is read, the body is awaited.
    for body in [&b"fffffffffffffff\r\n"[..], b"000fffffffffffffff\r\n"] {
        let mut p = ResponseParser::new(false);
        assert_eq!(parse_all(&mut p, &chunked(body), 1), (vec![], None));
        assert!(!p.is_idle());
    }
}

#[test]
fn chunked_framing_takes_bare_lf_as_a_line_end() {
    // RFC 9112 §2.2: a bare LF may end a line; the head (httparse) and chunk framing agree.
    assert_chunk_accepted(b"5\nhello\n0\n\n", 5);
    assert_chunk_accepted(b"5;a=\"b\"\nhello\r\n0;c\nX-T: 1\n\n", 5);
    let rs = every_split(
        b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n",
        false,
    );
    assert_eq!(rs[0].body_bytes, 3);
}

#[test]
fn whitespace_around_header_values_is_optional() {
    let rs = every_split(
        b"HTTP/1.1 200 OK\r\nContent-Length:\t 5 \t\r\nConnection: \tclose\t\r\n\r\nhello",
        false,
    );
    assert_eq!((rs[0].body_bytes, rs[0].keep_alive), (5, false));
    let rs = every_split(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding:\t chunked \t\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(rs[0].body_bytes, 5);
}

#[test]
fn chunk_extensions_stay_bounded() {
    // The extensions after a size may be 64 KiB + 1 bytes long; one more is refused.
    let line = |ext_len: usize| {
        let mut body = b"5;".to_vec();
        body.resize(1 + ext_len, b'n');
        body.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
        body
    };
    assert_chunk_accepted(&line(MAX_HEAD_BYTES + 1), 5);
    assert_chunk_error(&line(MAX_HEAD_BYTES + 2), "chunk extension too long");
}

#[test]
fn content_length_whitespace_is_spaces_and_tabs_only() {
    // Other Unicode whitespace (no-break space, em space, NEL) around the digits is no OWS.
    for value in [
        &b"5\xc2\xa0"[..],
        b"\xc2\xa05",
        b"\xe2\x80\x835",
        b"5\xc2\x85",
    ] {
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Length: ".to_vec();
        wire.extend_from_slice(value);
        wire.extend_from_slice(b"\r\n\r\nhello");
        for step in [1, wire.len()] {
            let mut p = ResponseParser::new(false);
            let (rs, err) = parse_all(&mut p, &wire, step);
            assert!(rs.is_empty(), "{value:?} step {step}");
            assert_eq!(
                err,
                Some(ParseError::ContentLength),
                "{value:?} step {step}"
            );
        }
    }
    let rs = every_split(
        b"HTTP/1.1 200 OK\r\nContent-Length: \t 18446744073709551615\t \r\n\r\n",
        true,
    );
    assert_eq!(rs[0].status, 200);
    let mut p = ResponseParser::new(false);
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n";
    assert_eq!(
        parse_all(&mut p, wire, wire.len()).1,
        Some(ParseError::ContentLength)
    );
}
