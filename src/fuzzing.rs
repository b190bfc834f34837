//! The checks behind the fuzz targets (`fuzz/fuzz_targets/`) and their regression test
//! (`tests/fuzz_regressions.rs`), kept in the library so both run exactly the same code and
//! the stable test needs no nightly toolchain. Each function takes arbitrary bytes, feeds them
//! to one parser and panics when a promise of that parser is broken; returning means the input
//! was handled (accepted or refused) correctly.
//!
//! Not a public API: hidden from the documentation, may change with the parsers.

use std::path::Path;
use std::time::Duration;

use crate::config::suite::{SuiteConfig, SuiteError, MAX_CELLS_PER_SCENARIO};
use crate::config::{parse_url, threshold};
use crate::engine::response::{ParseError, Response, ResponseParser, MAX_HEAD_BYTES};
use crate::report::{Format, Report};
use crate::result::{RunResult, SuiteIndex};
use crate::stats::histogram;
use crate::sys::cpus::parse_list as parse_cpu_list;
use crate::units;

/// The longest a parsed duration may be (`parse_duration` refuses more than a year).
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
/// The largest size, count or decimal the unit parsers accept.
const MAX_UNIT_VALUE: f64 = 1e15;

/// What one connection's bytes turned into: the responses in order, and whether the
/// connection ended in an error (from `feed` or from `eof`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Complete responses, the close-delimited one from `eof` included.
    pub responses: Vec<Response>,
    /// The error that ended the connection, if any.
    pub error: Option<ParseError>,
}

/// Feeds `wire` to a fresh parser in pieces whose lengths cycle through `splits` (0 means the
/// whole rest), then signals the end of the connection, checking the parser's promises after
/// every call: a call consumes at most what it was given, a call with input either consumes
/// bytes, completes a response or fails (so a caller's read loop always ends), the buffered
/// head stays within `MAX_HEAD_BYTES` (+1 byte to detect the overflow), responses account for
/// every byte, and a HEAD response has no body.
pub fn run_connection(wire: &[u8], head_request: bool, splits: &[usize]) -> Outcome {
    let mut p = ResponseParser::new(head_request);
    let mut responses: Vec<Response> = Vec::new();
    let mut consumed = 0usize;
    let mut pos = 0usize;
    let mut k = 0usize;
    let check = |r: &Response, responses: &[Response], consumed: usize| {
        assert!(
            !(100..200).contains(&r.status),
            "an interim {} response was reported",
            r.status
        );
        assert!(r.wire_bytes > 0, "a response without bytes: {r:?}");
        assert!(
            r.body_bytes < r.wire_bytes,
            "body bytes not below wire bytes: {r:?}"
        );
        assert!(
            !head_request || r.body_bytes == 0,
            "a body on a HEAD response: {r:?}"
        );
        let accounted: u64 = responses.iter().map(|r| r.wire_bytes).sum::<u64>() + r.wire_bytes;
        assert!(
            accounted <= consumed as u64,
            "responses account for {accounted} bytes but only {consumed} were consumed"
        );
    };
    while pos < wire.len() {
        let step = match splits.get(k % splits.len().max(1)) {
            Some(&s) if s > 0 => s,
            _ => wire.len() - pos,
        };
        k += 1;
        let piece = &wire[pos..(pos + step).min(wire.len())];
        pos += piece.len();
        let mut rest = piece;
        while !rest.is_empty() {
            match p.feed(rest) {
                Ok((n, r)) => {
                    assert!(n <= rest.len(), "feed consumed {n} of {} bytes", rest.len());
                    assert!(
                        n > 0 || r.is_some(),
                        "feed made no progress on {} bytes (a read loop would spin)",
                        rest.len()
                    );
                    assert!(
                        p.buffered_head_bytes() <= MAX_HEAD_BYTES + 1,
                        "head buffer grew to {} bytes",
                        p.buffered_head_bytes()
                    );
                    consumed += n;
                    rest = &rest[n..];
                    if let Some(r) = r {
                        check(&r, &responses, consumed);
                        responses.push(r);
                    }
                }
                Err(e) => {
                    assert!(
                        p.buffered_head_bytes() <= MAX_HEAD_BYTES + 1,
                        "head buffer grew to {} bytes",
                        p.buffered_head_bytes()
                    );
                    return Outcome {
                        responses,
                        error: Some(e),
                    };
                }
            }
        }
    }
    let idle = p.is_idle();
    let error = match p.eof() {
        Ok(None) => {
            assert!(idle, "eof was clean but the parser was not idle");
            let accounted: u64 = responses.iter().map(|r| r.wire_bytes).sum();
            assert_eq!(
                accounted, consumed as u64,
                "a clean end, but the responses account for {accounted} of {consumed} bytes"
            );
            None
        }
        Ok(Some(r)) => {
            assert!(!idle, "an idle parser produced a response at eof");
            assert!(
                !r.keep_alive,
                "a close-delimited response kept the connection"
            );
            check(&r, &responses, consumed);
            responses.push(r);
            let accounted: u64 = responses.iter().map(|r| r.wire_bytes).sum();
            assert_eq!(
                accounted, consumed as u64,
                "a close-delimited end, but the responses account for {accounted} of {consumed} bytes"
            );
            None
        }
        Err(e) => {
            assert!(!idle, "eof failed ({e}) on an idle parser");
            Some(e)
        }
    };
    p.reset();
    assert!(p.is_idle(), "reset did not make the parser idle");
    Outcome { responses, error }
}

/// Fuzz target `response`: byte 0 picks HEAD (bit 0), bytes 1-3 the piece lengths (0: the
/// rest); the remaining bytes are what a server sent on one keep-alive connection. Besides the
/// promises of `run_connection`, the same bytes fed in one piece, byte by byte and in the
/// chosen pieces must give the same responses and the same error-or-not outcome.
pub fn check_response(data: &[u8]) {
    let (head_request, splits, wire) = match data {
        [flags, a, b, c, wire @ ..] => (
            flags & 1 == 1,
            [*a as usize, *b as usize, *c as usize],
            wire,
        ),
        _ => return,
    };
    let whole = run_connection(wire, head_request, &[0]);
    let bytewise = run_connection(wire, head_request, &[1]);
    let split = run_connection(wire, head_request, &splits);
    for (name, o) in [("byte by byte", &bytewise), ("in pieces", &split)] {
        assert_eq!(
            whole.responses, o.responses,
            "responses differ between one piece and {name}"
        );
        assert_eq!(
            whole.error.is_some(),
            o.error.is_some(),
            "one piece ended with {:?}, {name} with {:?}",
            whole.error,
            o.error
        );
    }
}

/// Fuzz target `units`: every unit parser of the command line and suite files on arbitrary
/// text. Besides not panicking, what they accept must be within what they promise.
pub fn check_units(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(d) = units::parse_duration(text) {
        assert!(d <= YEAR, "parse_duration({text:?}) = {d:?}, over a year");
    }
    if let Ok(v) = units::parse_size(text) {
        assert!(v as f64 <= MAX_UNIT_VALUE, "parse_size({text:?}) = {v}");
    }
    if let Ok(v) = units::parse_count(text) {
        assert!(v as f64 <= MAX_UNIT_VALUE, "parse_count({text:?}) = {v}");
    }
    if let Ok(v) = units::parse_decimal(text) {
        assert!(
            v.is_finite() && (0.0..=MAX_UNIT_VALUE).contains(&v),
            "parse_decimal({text:?}) = {v}"
        );
    }
    if let Ok(stages) = units::parse_stages(text) {
        assert!(!stages.is_empty(), "parse_stages({text:?}) gave no stage");
        assert!(
            stages.iter().any(|s| !s.duration.is_zero()),
            "parse_stages({text:?}): all stages last 0 s"
        );
        for s in &stages {
            assert!(
                s.duration <= YEAR && s.users as f64 <= MAX_UNIT_VALUE,
                "{s:?}"
            );
        }
    }
    if let Ok(t) = threshold::parse(text) {
        assert!(
            t.limit.is_finite() && t.limit >= 0.0,
            "threshold::parse({text:?}) limit {}",
            t.limit
        );
        assert_eq!(t.text, text.trim());
        let _ = t.show(Some(t.limit));
    }
    if let Ok(list) = parse_cpu_list(text) {
        assert!(
            list.cpus.windows(2).all(|w| w[0] < w[1]) && list.cpus.iter().all(|c| *c < 1024),
            "parse_cpu_list({text:?}) = {:?}",
            list.cpus
        );
    }
    if let Ok(t) = parse_url(text) {
        assert!(
            t.port != 0 && !t.host.is_empty(),
            "parse_url({text:?}) = {t:?}"
        );
        assert!(
            t.path.starts_with('/'),
            "parse_url({text:?}): path {:?}",
            t.path
        );
        // The path goes on the request line and the host into a header: no byte may end either.
        assert!(
            !t.path.bytes().any(|b| b <= b' ' || b == 0x7f),
            "parse_url({text:?}): path {:?}",
            t.path
        );
        assert!(
            !t.host_header
                .bytes()
                .any(|b| b == b'\r' || b == b'\n' || b == 0),
            "parse_url({text:?}): Host {:?}",
            t.host_header
        );
    }
}

/// A valid suite up to the keys of its one scenario: appended to it, the fuzzer's text lands in
/// `[[scenario]]` (where keys become `volley run` flags and lists become matrix axes) instead
/// of failing on a missing `[suite]` or `[[server]]` almost every time.
const SUITE_PREFIX: &str = "[suite]\nname = \"f\"\n\n[[server]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n\n[[scenario]]\nname = \"s\"\n";

/// Fuzz target `suite`: a suite file, as given and appended to `SUITE_PREFIX`. Refused text
/// must be refused with a place inside it (line and column from 1, on a line that exists, at
/// most one column past its end); an accepted suite has servers, scenarios and cells.
pub fn check_suite(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_suite_text(text);
    check_suite_text(&format!("{SUITE_PREFIX}{text}"));
}

fn check_suite_text(text: &str) {
    match SuiteConfig::parse(text, Path::new("fuzz.toml"), 2) {
        Ok(cfg) => {
            assert!(!cfg.servers.is_empty() && !cfg.scenarios.is_empty());
            assert!(cfg
                .scenarios
                .iter()
                .all(|s| !s.cells.is_empty() && s.cells.len() <= MAX_CELLS_PER_SCENARIO));
            assert!(cfg.cells_per_rep() >= 1);
            assert!((1..=1000).contains(&cfg.repetitions));
        }
        Err(SuiteError::At { line, column, .. }) => {
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(
                line >= 1 && line <= lines.len(),
                "error on line {line} of {}",
                lines.len()
            );
            let width = lines[line - 1].chars().count();
            assert!(
                column >= 1 && column <= width + 1,
                "error at column {column} of a line of {width} characters"
            );
        }
        Err(e @ SuiteError::Read { .. }) => panic!("parsing text read a file: {e}"),
    }
}

/// Fuzz target `result`: what `volley report` reads from other machines. A RunResult or suite
/// index that parses must survive a JSON round trip unchanged and render in every format; a
/// histogram that decodes must encode and decode to the same counts.
pub fn check_result(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = RunResult::from_json(text) {
        let json = serde_json::to_string(&r).expect("a RunResult serializes");
        let back = RunResult::from_json(&json).expect("a written RunResult reads back");
        assert_eq!(r, back, "RunResult changed in a JSON round trip");
        let report = Report::single(r);
        render_all(&report);
    }
    if let Ok(ix) = SuiteIndex::from_json(text) {
        let json = serde_json::to_string(&ix).expect("a SuiteIndex serializes");
        let back = SuiteIndex::from_json(&json).expect("a written SuiteIndex reads back");
        assert_eq!(ix, back, "SuiteIndex changed in a JSON round trip");
        // A folder that does not exist: rows keep their status and lose their numbers.
        let report = Report::suite(ix, Path::new("/nonexistent/volley-fuzz"));
        render_all(&report);
    }
    if let Ok(h) = histogram::decode(text) {
        let p = histogram::Percentiles::of(&h);
        let back = histogram::decode(&histogram::encode(&h)).expect("an encoded histogram decodes");
        assert_eq!(
            back.len(),
            h.len(),
            "histogram count changed in a round trip"
        );
        assert_eq!(
            histogram::Percentiles::of(&back),
            p,
            "percentiles changed in a round trip"
        );
    }
}

fn render_all(report: &Report) {
    for f in [
        Format::Terminal,
        Format::Json,
        Format::Csv,
        Format::Markdown,
        Format::Html,
    ] {
        let _ = f.reporter().render(report);
    }
}
