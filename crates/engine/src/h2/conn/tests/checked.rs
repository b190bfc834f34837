//! Header and body checks on HTTP/2 streams: the session reads a checked stream's final head
//! and its DATA, and says which checks failed just before the stream's end.

use super::*;
use crate::check::{FAILED_BODY_CONTAINS, FAILED_BODY_REGEX, FAILED_HEADER};

fn checks(headers: &[(&str, Option<&str>)], contains: &[&str], regex: Option<&str>) -> Arc<Checks> {
    Arc::new(Checks {
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.map(str::to_string)))
            .collect(),
        body_contains: contains.iter().map(|c| c.as_bytes().to_vec()).collect(),
        body_regex: regex.map(|r| regex::bytes::Regex::new(r).unwrap()),
        ..Checks::default()
    })
}

/// One response on stream 1 of a stream opened with `checks`: a head with `fields` (after an
/// interim 103 with a `link` field), the body in `chunks`; the events it makes.
fn answer(checks: Arc<Checks>, fields: &[(&str, &str)], chunks: &[&str]) -> Vec<Event> {
    let mut c = ready(Arc::from(&b""[..]), RECEIVE_WINDOW);
    let id = c.open_stream_with(&[0x82], None, false, Some(checks));
    c.unwritten.clear();
    let mut hpack = Encoder::new();
    let interim = hpack.encode(vec![
        (&b":status"[..], &b"103"[..]),
        (&b"link"[..], &b"</a>"[..]),
    ]);
    let mut head: Vec<(&[u8], &[u8])> = vec![(b":status", b"200")];
    head.extend(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
    let head = hpack.encode(head);
    let mut bytes = Server::frame(Kind::Headers, flags::END_HEADERS, id, &interim);
    bytes.extend(Server::frame(Kind::Headers, flags::END_HEADERS, id, &head));
    for (k, chunk) in chunks.iter().enumerate() {
        let fl = if k + 1 == chunks.len() {
            flags::END_STREAM
        } else {
            0
        };
        bytes.extend(Server::frame(Kind::Data, fl, id, chunk.as_bytes()));
    }
    events(&mut c, &bytes)
}

fn failed(ev: &[Event]) -> u8 {
    let at = ev
        .iter()
        .position(|e| matches!(e, Event::End { .. }))
        .expect("the stream ended");
    match ev[at - 1] {
        Event::Checked {
            stream: 1, failed, ..
        } => failed,
        ref e => panic!("no Checked before End: {e:?} in {ev:?}"),
    }
}

#[test]
fn a_response_that_passes_fails_nothing_even_across_data_frames() {
    let ch = checks(
        &[("x-app", Some("volley")), ("etag", None)],
        &["hello world"],
        Some("^hel+o"),
    );
    let ev = answer(
        ch,
        &[("x-app", " volley "), ("etag", "\"1\"")],
        &["hel", "lo wor", "ld!"],
    );
    assert_eq!(failed(&ev), 0, "{ev:?}");
}

#[test]
fn each_failed_check_is_named() {
    let ch = checks(&[("x-app", Some("volley"))], &["needle"], Some("^\\{"));
    let ev = answer(ch.clone(), &[("x-app", "other")], &["hay", "stack"]);
    assert_eq!(
        failed(&ev),
        FAILED_HEADER | FAILED_BODY_CONTAINS | FAILED_BODY_REGEX
    );
    // A field of the interim 103 head does not count for the final one.
    let ev = answer(checks(&[("link", None)], &[], None), &[], &["."]);
    assert_eq!(failed(&ev), FAILED_HEADER);
}

#[test]
fn streams_without_header_or_body_checks_carry_no_watch() {
    let status_only = Arc::new(Checks {
        size: Some(1),
        ..Checks::default()
    });
    let ev = answer(status_only, &[], &["."]);
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Checked { .. })),
        "{ev:?}"
    );
}
