//! Fuzz target `h3`: the HTTP/3 codec (`volley_engine::h3`) on a server's bytes. The input
//! is one stream's bytes, read as a request stream's response or as a unidirectional stream
//! (control, QPACK, push or unknown), fed in fuzzer-chosen pieces, in one piece and byte by
//! byte. Checked: no panic; the same events and the same outcome however the bytes were
//! split; the bytes held bounded by the limits; the DATA handed out adding up to the body
//! counted; an error staying once returned.
//!
//! Input: 4 set-up bytes, then the stream's bytes. Byte 0: bit 0 a unidirectional stream
//! (else a response), bit 1 the response to a HEAD, bit 2 fields kept, bit 3 a 256-byte
//! bound on HEADERS frames and field sections (else 64 KiB), bits 4-7 the body bytes kept
//! (× 16). Bytes 1-3: the lengths of the pieces the stream is fed in (0: the whole rest).

use volley_engine::h3::control::{PeerStreams, UniEvent, UniStream, MAX_SETTINGS_FRAME};
use volley_engine::h3::response::{Event, Fields, Head, Limits, ResponseParser};
use volley_engine::h3::H3Error;

/// An `h3` input's set-up.
#[derive(Debug, Clone, Copy)]
struct Setup {
    uni: bool,
    head_request: bool,
    limits: Limits,
}

/// A response event, owned, DATA joined.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Interim(u16),
    Head(Head),
    Data(Vec<u8>),
    Trailers(Fields),
    Uni(UniEvent),
}

/// What one way of feeding the stream gave: the events, then the error (from a feed or the
/// stream's end) if any.
type Outcome = (Vec<Seen>, Option<H3Error>);

/// Fuzz target `h3`: see the module's documentation.
pub fn check_h3(data: &[u8]) {
    let [flags, a, b, c, wire @ ..] = data else {
        return;
    };
    let bound = if flags & 8 != 0 { 256 } else { 64 << 10 };
    let setup = Setup {
        uni: flags & 1 != 0,
        head_request: flags & 2 != 0,
        limits: Limits {
            max_headers_frame: bound,
            max_field_section: bound,
            keep_fields: flags & 4 != 0,
            keep_body: usize::from(flags >> 4) * 16,
        },
    };
    let splits = [*a as usize, *b as usize, *c as usize];
    let whole = run(wire, setup, &[0]);
    for (name, pieces) in [("byte by byte", &[1][..]), ("in pieces", &splits[..])] {
        assert_eq!(
            whole,
            run(wire, setup, pieces),
            "one piece and {name} differ"
        );
    }
}

/// Feeds `wire` in pieces of the lengths in `pieces`, in turn (0: the whole rest).
fn run(wire: &[u8], setup: Setup, pieces: &[usize]) -> Outcome {
    let mut chunks = Vec::new();
    let mut rest = wire;
    for &len in pieces.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let n = if len == 0 {
            rest.len()
        } else {
            len.min(rest.len())
        };
        chunks.push(&rest[..n]);
        rest = &rest[n..];
    }
    if setup.uni {
        uni(&chunks)
    } else {
        response(&chunks, setup)
    }
}

fn response(chunks: &[&[u8]], setup: Setup) -> Outcome {
    let mut p = ResponseParser::new(setup.limits, setup.head_request);
    let mut seen: Vec<Seen> = Vec::new();
    let mut data = 0u64;
    let mut on = |e: Event<'_>| match (e, seen.last_mut()) {
        (Event::Data(b), last) => {
            assert!(!b.is_empty(), "an empty Data event");
            data += b.len() as u64;
            match last {
                Some(Seen::Data(d)) => d.extend_from_slice(b),
                _ => seen.push(Seen::Data(b.to_vec())),
            }
        }
        (Event::Interim { status }, _) => seen.push(Seen::Interim(status)),
        (Event::Head(h), _) => seen.push(Seen::Head(h)),
        (Event::Trailers(f), _) => seen.push(Seen::Trailers(f)),
    };
    let bound = setup.limits.max_headers_frame + setup.limits.keep_body;
    let mut failed = None;
    for chunk in chunks {
        let r = p.feed(chunk, &mut on);
        assert!(p.held() <= bound, "{} bytes held", p.held());
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
    }
    let end = p.finish();
    match &failed {
        Some(e) => assert_eq!(end.as_ref(), Err(e), "an error that did not stay"),
        None => failed = end.err(),
    }
    assert_eq!(
        data,
        p.body_len(),
        "the DATA handed out and the body counted differ"
    );
    assert!(p.kept_body().len() <= setup.limits.keep_body);
    (seen, failed)
}

fn uni(chunks: &[&[u8]]) -> Outcome {
    let mut s = UniStream::default();
    let mut peer = PeerStreams::default();
    let mut seen = Vec::new();
    let mut failed = None;
    for chunk in chunks {
        let r = s.feed(chunk, &mut |e| seen.push(Seen::Uni(e)));
        assert!(
            s.held() as u64 <= MAX_SETTINGS_FRAME + 8,
            "{} bytes held",
            s.held()
        );
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
    }
    // The stream's type is given once, first; a stream of each type is accepted once.
    let opened: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            Seen::Uni(UniEvent::Opened(k)) => Some(*k),
            _ => None,
        })
        .collect();
    assert!(
        opened.len() <= 1
            && (opened.is_empty() || seen[0] == Seen::Uni(UniEvent::Opened(opened[0])))
    );
    if let Some(&k) = opened.first() {
        assert!(peer.opened(k).is_ok());
        assert_eq!(s.kind(), Some(k));
    }
    if failed.is_none() {
        failed = s.finish().err();
    }
    (seen, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_engine::h3::Code;

    /// Each seed of fuzz/regressions/h3 ends as its name says (a seed that no longer does
    /// would keep passing the check while covering nothing).
    #[test]
    fn seeds_reach_their_paths() {
        let expected: [(&str, Option<Code>); 15] = [
            ("seed-response", None),
            ("seed-response-huffman", None),
            ("seed-head-request", None),
            ("seed-body-over-length", Some(Code::MessageError)),
            ("seed-headers-too-large", Some(Code::ExcessiveLoad)),
            ("seed-frame-unexpected", Some(Code::FrameUnexpected)),
            ("seed-push-promise", Some(Code::IdError)),
            (
                "seed-dynamic-reference",
                Some(Code::QpackDecompressionFailed),
            ),
            ("seed-control", Some(Code::ClosedCriticalStream)),
            ("seed-control-missing-settings", Some(Code::MissingSettings)),
            ("seed-control-settings-twice", Some(Code::FrameUnexpected)),
            ("seed-qpack-encoder", Some(Code::QpackEncoderStreamError)),
            ("seed-qpack-decoder", Some(Code::QpackDecoderStreamError)),
            ("seed-push-stream", Some(Code::IdError)),
            ("seed-grease-stream", None),
        ];
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/h3");
        for (name, code) in expected {
            let data = std::fs::read(dir.join(name)).unwrap();
            check_h3(&data);
            let setup = Setup {
                uni: data[0] & 1 != 0,
                head_request: data[0] & 2 != 0,
                limits: Limits {
                    max_headers_frame: if data[0] & 8 != 0 { 256 } else { 64 << 10 },
                    max_field_section: if data[0] & 8 != 0 { 256 } else { 64 << 10 },
                    keep_fields: data[0] & 4 != 0,
                    keep_body: 0,
                },
            };
            let (seen, failed) = run(&data[4..], setup, &[0]);
            assert_eq!(failed.map(|e| e.code), code, "{name}: {seen:?}");
        }
    }
}
