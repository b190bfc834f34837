use super::*;

fn decoded(block: &[u8]) -> Result<Vec<(String, String)>, H3Error> {
    let mut out = Vec::new();
    decode(block, 64 << 10, |n, v| {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        out.push((text(n), text(v)));
        Ok(())
    })?;
    Ok(out)
}

fn code_of(block: &[u8]) -> Code {
    decoded(block).unwrap_err().code
}

#[test]
fn prefixed_integers_as_rfc_7541_c1() {
    let mut b = Vec::new();
    put_int(10, 5, 0xe0, &mut b);
    assert_eq!(b, [0xea]);
    b.clear();
    put_int(1337, 5, 0, &mut b);
    assert_eq!(b, [0x1f, 0x9a, 0x0a]);
    assert_eq!(int(&b, 5), Ok((1337, 3)));
    assert_eq!(int(&b[..2], 5), Err(IntError::Incomplete));
    b.clear();
    put_int(42, 8, 0, &mut b);
    assert_eq!(b, [0x2a]);
    for v in [0, 30, 31, 127, 128, 1 << 20, crate::h3::varint::MAX] {
        for bits in [3, 4, 5, 6, 7, 8] {
            b.clear();
            put_int(v, bits, 0, &mut b);
            assert_eq!(int(&b, bits), Ok((v, b.len())), "{v} in {bits} bits");
        }
    }
    // 2^62 and more, or endless continuation bytes: refused, never overflowing.
    b.clear();
    put_int(crate::h3::varint::MAX + 1, 6, 0, &mut b);
    assert_eq!(int(&b, 6), Err(IntError::TooLarge));
    assert_eq!(
        int(
            &[0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            6
        ),
        Err(IntError::TooLarge)
    );
}

#[test]
fn hand_checked_request_encoding() {
    // `:method GET` is static index 17: an indexed line with T=1 is 0b11 + 17 = 0xd1;
    // `:scheme https` 23 (0xd7), `:path /` 1 (0xc1); `:authority` (0) has no value in the
    // table, so it is a literal with a static name reference, 0b0101 + 0 = 0x50.
    let b = encode_request("GET", "https", "example.com", "/", &[], None);
    let mut expected = vec![0x00, 0x00, 0xd1, 0xd7, 0x50, 0x0b];
    expected.extend_from_slice(b"example.com");
    expected.push(0xc1);
    assert_eq!(b, expected);
    // RFC 9204 B.1: `:path /index.html` as a literal with name reference to index 1.
    let mut line = Vec::new();
    field_line(&mut line, ":path", "/index.html");
    assert_eq!(line, b"\x51\x0b/index.html");
    // A name the table does not have: 0b0010_0 + length 7 (3-bit prefix full: 7, then 0).
    line.clear();
    field_line(&mut line, "x-trace", "1");
    assert_eq!(line, b"\x27\x00x-trace\x01\x31");
}

#[test]
fn rfc_9204_b1_decodes() {
    let block = b"\x00\x00\x51\x0b/index.html";
    assert_eq!(
        decoded(block).unwrap(),
        [(":path".to_string(), "/index.html".to_string())]
    );
}

#[test]
fn a_request_round_trips() {
    let headers = [
        ("User-Agent", "volley"),
        ("Accept", "*/*"),
        ("Connection", "close"),
        ("Host", "ignored"),
        ("X-Long", &"v".repeat(300)),
    ]
    .map(|(n, v)| (n.to_string(), v.to_string()));
    let b = encode_request(
        "PATCH",
        "http",
        "localhost:8443",
        "/a?b=1",
        &headers,
        Some(5),
    );
    let expected = [
        (":method", "PATCH"),
        (":scheme", "http"),
        (":authority", "localhost:8443"),
        (":path", "/a?b=1"),
        ("user-agent", "volley"),
        ("accept", "*/*"),
        ("x-long", &"v".repeat(300)),
        ("content-length", "5"),
    ]
    .map(|(n, v)| (n.to_string(), v.to_string()));
    assert_eq!(decoded(&b).unwrap(), expected);
    // `accept: */*` is static index 29, indexed whole (0xc0 + 29).
    assert!(b.contains(&0xdd));
}

#[test]
fn huffman_strings_decode() {
    // `:authority www.example.com`, the value Huffman-coded (RFC 7541 C.4.1), and a literal
    // name `x-a` Huffman-coded too (`x` 1111001, `-` 010110, `a` 00011: 18 bits + 6 of EOS).
    let mut block = vec![0x00, 0x00, 0x50, 0x8c];
    block.extend_from_slice(&[
        0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
    ]);
    block.extend_from_slice(&[0x2b, 0xf2, 0xb0, 0xff, 0x01, b'1']);
    assert_eq!(
        decoded(&block).unwrap(),
        [(":authority", "www.example.com"), ("x-a", "1")]
            .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    // The same with padding of zeros instead of EOS bits.
    let last = block.len() - 3;
    block[last] = 0xc0;
    assert_eq!(code_of(&block), Code::QpackDecompressionFailed);
}

#[test]
fn dynamic_references_and_malformed_sections_fail() {
    let cases: [(&[u8], Code); 12] = [
        (&[0x01, 0x00], Code::QpackDecompressionFailed), // Required Insert Count 1
        (&[0x00, 0x80], Code::QpackDecompressionFailed), // negative Base
        (&[0x00, 0x00, 0x81], Code::QpackDecompressionFailed), // indexed, dynamic
        (&[0x00, 0x00, 0x10], Code::QpackDecompressionFailed), // post-base indexed
        (&[0x00, 0x00, 0x40, 0x00], Code::QpackDecompressionFailed), // name ref, dynamic
        (&[0x00, 0x00, 0x08, 0x00], Code::QpackDecompressionFailed), // post-base name ref
        (&[0x00, 0x00, 0xff, 0x24], Code::QpackDecompressionFailed), // static index 99
        (
            &[0x00, 0x00, 0x51, 0x05, b'/'],
            Code::QpackDecompressionFailed,
        ), // value cut short
        (&[0x00, 0x00, 0x27, 0x7f], Code::QpackDecompressionFailed), // name length cut short
        (&[0x00], Code::QpackDecompressionFailed),       // prefix cut short
        (&[], Code::QpackDecompressionFailed),
        (
            &[
                0x00, 0x00, 0x5f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
            ],
            Code::QpackDecompressionFailed,
        ),
    ];
    for (block, code) in cases {
        assert_eq!(code_of(block), code, "{block:02x?}");
    }
    assert_eq!(decoded(&[0x00, 0x00]).unwrap(), []);
}

#[test]
fn the_decoded_size_is_bounded() {
    let mut block = vec![0x00, 0x00];
    for _ in 0..10 {
        field_line(&mut block, "x-a", "0123456789");
    }
    // Each line counts 3 + 10 + 32 = 45 bytes.
    assert!(decode(&block, 450, |_, _| Ok(())).is_ok());
    let e = decode(&block, 449, |_, _| Ok(())).unwrap_err();
    assert_eq!(e.code, Code::ExcessiveLoad);
    // A refusal from the caller ends the decoding with it.
    let e = decode(&block, 450, |_, _| Err(fail(Code::MessageError, "no"))).unwrap_err();
    assert_eq!(e.code, Code::MessageError);
}

#[test]
fn the_encoder_stream_may_only_keep_the_capacity_at_0() {
    assert!(encoder_stream(&[]).is_ok());
    assert!(encoder_stream(&[0x20, 0x20]).is_ok());
    for bad in [
        &[0xc0, 0x00][..],
        &[0x41, b'a', 0x00],
        &[0x3f, 0x01],
        &[0x21],
        &[0x00],
    ] {
        let e = encoder_stream(bad).unwrap_err();
        assert_eq!(e.code, Code::QpackEncoderStreamError, "{bad:02x?}");
    }
}

#[test]
fn the_decoder_stream_takes_cancellations_split_anywhere() {
    // Stream Cancellation of stream 4, and of stream 1000 (63 + 937: 0xa9 0x07).
    let bytes = [0x44, 0x7f, 0xa9, 0x07, 0x44];
    for cut in 0..=bytes.len() {
        let mut d = DecoderStream::default();
        d.feed(&bytes[..cut]).unwrap();
        d.feed(&bytes[cut..]).unwrap();
        assert!(d.partial.is_empty());
    }
    for bad in [&[0x80][..], &[0x01], &[0x44, 0x00]] {
        let e = DecoderStream::default().feed(bad).unwrap_err();
        assert_eq!(e.code, Code::QpackDecoderStreamError, "{bad:02x?}");
    }
    let mut endless = vec![0x7f];
    endless.extend([0xff; 12]);
    let e = DecoderStream::default().feed(&endless).unwrap_err();
    assert_eq!(e.code, Code::QpackDecoderStreamError);
}
