use super::*;
use crate::h3::frame::{self, ClientSettings};

/// The events of `wire` fed as one stream in two pieces cut at `cut`.
fn run(wire: &[u8], cut: usize) -> Result<Vec<UniEvent>, H3Error> {
    let mut s = UniStream::default();
    let mut events = Vec::new();
    s.feed(&wire[..cut], &mut |e| events.push(e))?;
    s.feed(&wire[cut..], &mut |e| events.push(e))?;
    Ok(events)
}

fn code(wire: &[u8]) -> Code {
    run(wire, 0).unwrap_err().code
}

/// A control stream with the server's SETTINGS: `pairs` as they are.
fn control(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut p = Vec::new();
    for &(id, v) in pairs {
        varint::encode(id, &mut p).unwrap();
        varint::encode(v, &mut p).unwrap();
    }
    let mut w = vec![0x00];
    frame::header(kind::SETTINGS, p.len(), &mut w);
    w.extend_from_slice(&p);
    w
}

#[test]
fn a_control_stream_split_anywhere() {
    let mut w = control(&[
        (0x01, 4096),
        (0x06, 16_384),
        (0x07, 100),
        (0x21, 7),
        (0x33, 1),
    ]);
    frame::header(0x21, 2, &mut w); // reserved: skipped
    w.extend_from_slice(b"..");
    frame::goaway(8, &mut w).unwrap();
    frame::goaway(4, &mut w).unwrap();
    frame::goaway(4, &mut w).unwrap();
    let expected = vec![
        UniEvent::Opened(UniKind::Control),
        UniEvent::Settings(PeerSettings {
            qpack_max_table_capacity: 4096,
            qpack_blocked_streams: 100,
            max_field_section_size: Some(16_384),
        }),
        UniEvent::GoAway(8),
        UniEvent::GoAway(4),
        UniEvent::GoAway(4),
    ];
    for cut in 0..=w.len() {
        assert_eq!(run(&w, cut).unwrap(), expected, "cut at {cut}");
    }
    let mut s = UniStream::default();
    s.feed(&w, &mut |_| {}).unwrap();
    assert_eq!(s.kind(), Some(UniKind::Control));
    assert_eq!(s.finish().unwrap_err().code, Code::ClosedCriticalStream);
    // The client's own control stream reads back as its settings.
    let mut mine = Vec::new();
    ClientSettings {
        max_field_section_size: Some(1000),
    }
    .control_stream(&mut mine);
    let events = run(&mine, 1).unwrap();
    assert_eq!(
        events[1],
        UniEvent::Settings(PeerSettings {
            max_field_section_size: Some(1000),
            ..PeerSettings::default()
        })
    );
}

#[test]
fn control_stream_errors_have_the_rfc_codes() {
    let settings = control(&[]);
    let then = |build: &dyn Fn(&mut Vec<u8>)| {
        let mut w = settings.clone();
        build(&mut w);
        w
    };
    let mut first_goaway = vec![0x00];
    frame::goaway(0, &mut first_goaway).unwrap();
    let mut first_unknown = vec![0x00];
    frame::header(0x21, 0, &mut first_unknown);
    let cases: Vec<(Vec<u8>, Code)> = vec![
        (first_goaway, Code::MissingSettings),
        (first_unknown, Code::MissingSettings),
        (
            then(&|w| ClientSettings::default().write(w)),
            Code::FrameUnexpected,
        ),
        (then(&|w| frame::data(b"x", w)), Code::FrameUnexpected),
        (then(&|w| frame::headers(&[0, 0], w)), Code::FrameUnexpected),
        (
            then(&|w| frame::header(kind::MAX_PUSH_ID, 0, w)),
            Code::FrameUnexpected,
        ),
        (
            then(&|w| frame::header(kind::PUSH_PROMISE, 0, w)),
            Code::FrameUnexpected,
        ),
        (then(&|w| frame::header(0x08, 0, w)), Code::FrameUnexpected),
        (
            then(&|w| frame::header(kind::CANCEL_PUSH, 1, w)),
            Code::IdError,
        ),
        (then(&|w| frame::goaway(2, w).unwrap()), Code::IdError),
        (
            then(&|w| {
                frame::goaway(4, w).unwrap();
                frame::goaway(8, w).unwrap()
            }),
            Code::IdError,
        ),
        (
            then(&|w| w.extend([0x07, 0x02, 0x00, 0x00])),
            Code::FrameError,
        ),
        (then(&|w| w.extend([0x07, 0x00])), Code::FrameError),
        (then(&|w| w.extend([0x07, 0x09])), Code::FrameError),
        (control(&[(0x01, 0), (0x01, 0)]), Code::SettingsError),
        (control(&[(0x21, 0), (0x21, 1)]), Code::SettingsError),
        (control(&[(0x04, 65_535)]), Code::SettingsError),
        (vec![0x00, 0x04, 0x01, 0x01], Code::FrameError),
        (
            vec![0x00, 0x04, 0x80, 0x00, 0x40, 0x01],
            Code::ExcessiveLoad,
        ),
        (vec![0x01, 0x00], Code::IdError),
        (vec![0x02, 0xc0, 0x00], Code::QpackEncoderStreamError),
        (vec![0x03, 0x80], Code::QpackDecoderStreamError),
    ];
    for (i, (wire, expected)) in cases.iter().enumerate() {
        assert_eq!(code(wire), *expected, "case {i}: {wire:02x?}");
    }
}

#[test]
fn qpack_and_unknown_streams() {
    assert_eq!(
        run(&[0x02, 0x20, 0x20], 1).unwrap(),
        [UniEvent::Opened(UniKind::QpackEncoder)]
    );
    assert_eq!(
        run(&[0x03, 0x44], 2).unwrap(),
        [UniEvent::Opened(UniKind::QpackDecoder)]
    );
    // A reserved type in 2 bytes, then anything: ignored.
    let grease = [0x40, 0x21, 0x01, 0x02, 0xff];
    for cut in 0..=grease.len() {
        assert_eq!(
            run(&grease, cut).unwrap(),
            [UniEvent::Opened(UniKind::Unknown(0x21))]
        );
    }
    let mut s = UniStream::default();
    s.feed(&grease[..1], &mut |_| {}).unwrap();
    assert_eq!(s.kind(), None);
    assert!(s.finish().is_ok());
    s.feed(&grease[1..], &mut |_| {}).unwrap();
    assert!(s.finish().is_ok());
}

#[test]
fn one_control_and_qpack_stream_of_each() {
    let mut peer = PeerStreams::default();
    for kind in [
        UniKind::Control,
        UniKind::QpackEncoder,
        UniKind::QpackDecoder,
        UniKind::Unknown(0x21),
        UniKind::Unknown(0x21),
    ] {
        peer.opened(kind).unwrap();
    }
    for kind in [
        UniKind::Control,
        UniKind::QpackEncoder,
        UniKind::QpackDecoder,
    ] {
        assert_eq!(
            peer.opened(kind).unwrap_err().code,
            Code::StreamCreationError
        );
    }
}
