//! The checks behind the fuzz targets (`fuzz/fuzz_targets/`) and their regression test
//! (`tests/quick/fuzz_regressions.rs`), kept in this crate so both run exactly the same code and
//! the stable test needs no nightly toolchain; not part of the `volley` library. Each function takes arbitrary bytes, feeds them
//! to one parser and panics when a promise of that parser is broken; returning means the input
//! was handled (accepted or refused) correctly.
//!
//! Not a public API (never published): it may change with the parsers.

use std::path::Path;
use std::time::Duration;

mod h2_worker;
mod h3;
pub use h2_worker::{
    check_h2_worker, out_bound as h2_worker_out_bound, run_h2_worker, Outcome as H2WorkerOutcome,
    Setup as H2WorkerSetup,
};
pub use h3::check_h3;

use volley_config::suite::{SuiteConfig, SuiteError, MAX_CELLS_PER_SCENARIO};
use volley_config::{parse_url, threshold};
use volley_engine::h2::conn::{Event as H2Event, H2Conn, H2Error, MAX_QUEUED_ACKS, RECEIVE_WINDOW};
use volley_engine::response::{ParseError, Response, ResponseParser, MAX_HEAD_BYTES};
use volley_model::result::{RunResult, SuiteIndex};
use volley_model::stats::histogram;
use volley_model::sys::cpus::parse_list as parse_cpu_list;
use volley_model::units;
use volley_monitor::gc::{gotrace, hsperfdata, jvmlog, nodetrace, GcLog};
use volley_report::{Format, Report};

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

/// What one HTTP/2 connection's server bytes turned into: the events in order, and the error
/// that ended the connection, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Outcome {
    /// Every event `feed` reported.
    pub events: Vec<H2Event>,
    /// The connection error, if any.
    pub error: Option<H2Error>,
}

/// How the `h2` target sets up a connection (from the input's first byte).
#[derive(Debug, Clone, Copy)]
pub struct H2Setup {
    /// Streams opened before any byte is fed.
    pub streams: u32,
    /// Request body bytes per stream.
    pub body: usize,
    /// The receive window announced.
    pub window: u32,
    /// Whether the caller takes all of `out` after every `feed` (the socket wrote it).
    pub drain: bool,
}

/// The request body of a stream when the `h2` input asks for one: small enough that windows
/// of a few bytes still send it in a bounded number of frames.
const H2_FUZZ_BODY: usize = 100;

/// Opens `setup.streams` streams on a fresh connection, then feeds `wire` in pieces whose
/// lengths cycle through `splits` (0: the whole rest), checking `H2Conn`'s promises after
/// every call: events name only streams that were opened, a stream has at most one head,
/// body bytes only after it, at most one end (End or Reset) and nothing after that or after a
/// GOAWAY that did not process it; `out` grows by a bounded amount whatever the server sends.
pub fn run_h2(wire: &[u8], setup: H2Setup, splits: &[usize]) -> H2Outcome {
    let body: std::sync::Arc<[u8]> = vec![b'b'; setup.body].into();
    let mut c = H2Conn::new(body, setup.window);
    let opened: Vec<u32> = (0..setup.streams)
        .map(|_| c.open_stream(&[0x82, 0x86, 0x84, 0x41, 0x01, b'h']))
        .collect();
    // The preface and the requests are written before the server says anything (a response
    // to a request not yet written is refused).
    c.out.clear();
    c.fill_bodies();
    let base = c.out.len();
    let mut checker = H2Checker::new(opened);
    let mut events = Vec::new();
    let mut pos = 0usize;
    let mut k = 0usize;
    while pos < wire.len() {
        let step = match splits.get(k % splits.len().max(1)) {
            Some(&s) if s > 0 => s,
            _ => wire.len() - pos,
        };
        k += 1;
        let piece = &wire[pos..(pos + step).min(wire.len())];
        pos += piece.len();
        let r = c.feed(piece, &mut |e| {
            checker.check(&e);
            events.push(e);
        });
        let bound = h2_out_bound(base, wire.len(), setup);
        assert!(
            c.out.len() <= bound,
            "out grew to {} bytes (bound {bound})",
            c.out.len()
        );
        assert!(c.open_streams() <= setup.streams as usize);
        if let Err(e) = r {
            assert!(e.0.ends_with(')'), "an error without its HTTP/2 code: {e}");
            return H2Outcome {
                events,
                error: Some(e),
            };
        }
        if setup.drain {
            c.out.clear();
            c.fill_bodies();
        }
    }
    H2Outcome {
        events,
        error: None,
    }
}

/// The most `out` may hold after a client queued `base` bytes and then read `wire_len`
/// server bytes without writing anything: every acknowledgement allowed, window updates
/// (a connection and a stream one per half window read), and the request bodies (a byte
/// per frame at worst, 10 bytes on the wire each).
fn h2_out_bound(base: usize, wire_len: usize, setup: H2Setup) -> usize {
    let acks = (MAX_QUEUED_ACKS + 1) * 17;
    let updates = 26 * (wire_len / (setup.window as usize / 2) + 1) * (setup.streams as usize + 1);
    let bodies = setup.streams as usize * setup.body * 10;
    base + acks + updates + bodies
}

/// The per-stream promises of `H2Conn`'s events.
struct H2Checker {
    opened: Vec<u32>,
    headed: Vec<u32>,
    ended: Vec<u32>,
    /// The last stream of the first GOAWAY: streams above it get no more events.
    goaway: Option<u32>,
}

impl H2Checker {
    fn new(opened: Vec<u32>) -> Self {
        H2Checker {
            opened,
            headed: Vec::new(),
            ended: Vec::new(),
            goaway: None,
        }
    }

    fn check(&mut self, e: &H2Event) {
        let stream = match e {
            H2Event::Settings { .. } => return,
            H2Event::GoAway { last_stream, .. } => {
                self.goaway = Some(self.goaway.map_or(*last_stream, |l| l.min(*last_stream)));
                return;
            }
            H2Event::Head { stream, status } => {
                assert!((200..1000).contains(status), "a head with status {status}");
                assert!(!self.headed.contains(stream), "a second head: {e:?}");
                self.headed.push(*stream);
                *stream
            }
            H2Event::Data { stream, len } => {
                assert!(*len > 0, "empty data reported: {e:?}");
                assert!(self.headed.contains(stream), "data before the head: {e:?}");
                *stream
            }
            H2Event::Checked { stream, .. } => {
                assert!(self.headed.contains(stream), "checks without a head: {e:?}");
                *stream
            }
            H2Event::End { stream } => {
                assert!(self.headed.contains(stream), "an end without a head: {e:?}");
                self.ended.push(*stream);
                *stream
            }
            H2Event::Reset { stream, .. } | H2Event::Malformed { stream, .. } => {
                self.ended.push(*stream);
                *stream
            }
        };
        assert!(
            self.opened.contains(&stream),
            "an event for a stream never opened: {e:?}"
        );
        assert!(
            self.ended.iter().filter(|s| **s == stream).count() <= 1,
            "a second end: {e:?}"
        );
        let ends = matches!(
            e,
            H2Event::End { .. } | H2Event::Reset { .. } | H2Event::Malformed { .. }
        );
        if !ends {
            assert!(
                !self.ended.contains(&stream),
                "an event after the end: {e:?}"
            );
        }
        assert!(
            self.goaway.is_none_or(|last| stream <= last),
            "an event for a stream GOAWAY did not process: {e:?}"
        );
    }
}

/// Fuzz target `h2`: byte 0 sets up the client (bits 0-1: 1 to 4 streams; bit 2: each sends
/// a 100-byte body; bit 3: a 65,535-byte receive window instead of 2^31 − 1; bit 4: `out` is
/// drained after every `feed`), bytes 1-3 the piece lengths (0: the rest); the remaining bytes
/// are what the server sent. Besides the promises of `run_h2`, the same bytes fed in one
/// piece, byte by byte and in the chosen pieces give the same events and the same error
/// (with `out` never drained, so acknowledgement counts do not depend on the pieces).
pub fn check_h2(data: &[u8]) {
    let Some((setup, splits, wire)) = h2_input(data) else {
        return;
    };
    let kept = H2Setup {
        drain: false,
        ..setup
    };
    let whole = run_h2(wire, kept, &[0]);
    let bytewise = run_h2(wire, kept, &[1]);
    let split = run_h2(wire, kept, &splits);
    for (name, o) in [("byte by byte", &bytewise), ("in pieces", &split)] {
        assert_eq!(whole, *o, "one piece and {name} differ");
    }
    if setup.drain {
        run_h2(wire, setup, &splits);
    }
}

/// An `h2` input read as `check_h2` reads it: the set-up, the piece lengths, the server's
/// bytes (`None` when shorter than 4 bytes).
pub fn h2_input(data: &[u8]) -> Option<(H2Setup, [usize; 3], &[u8])> {
    match data {
        [flags, a, b, c, wire @ ..] => Some((
            H2Setup {
                streams: u32::from(flags & 3) + 1,
                body: if flags & 4 != 0 { H2_FUZZ_BODY } else { 0 },
                window: if flags & 8 != 0 {
                    65_535
                } else {
                    RECEIVE_WINDOW
                },
                drain: flags & 16 != 0,
            },
            [*a as usize, *b as usize, *c as usize],
            wire,
        )),
        _ => None,
    }
}

/// Fuzz target `hsperfdata`: the HotSpot counter file reader on any bytes. Besides not
/// panicking: every tick counter converts to a number of seconds that is not NaN.
pub fn check_hsperfdata(data: &[u8]) {
    if let Ok(snapshot) = hsperfdata::parse(data) {
        for name in snapshot.counters.keys() {
            if let Some(s) = snapshot.seconds(name) {
                assert!(!s.is_nan(), "{name}: {s} s");
            }
        }
    }
}

/// Fuzz target `gctrace`: Go's `GODEBUG=gctrace=1` reader on the lossy UTF-8 text (see
/// `check_gc_log`); lines are read independently, so the text read line by line gives the
/// same events.
pub fn check_gctrace(data: &[u8]) {
    check_pause_log("gctrace", gotrace::parse, data, true);
}

/// Fuzz target `jvmlog`: the JVM unified-logging reader (`-Xlog:gc…`), as `gctrace`.
pub fn check_jvmlog(data: &[u8]) {
    check_pause_log("jvmlog", jvmlog::parse, data, true);
}

/// Fuzz target `nodetrace`: Node's `--trace-gc` reader (see `check_gc_log`); its anchor
/// line ties the lines of one process together, so they are not compared one by one.
pub fn check_nodetrace(data: &[u8]) {
    check_pause_log("nodetrace", nodetrace::parse, data, false);
}

fn check_pause_log(name: &str, parse: fn(&str) -> GcLog, data: &[u8], by_line: bool) {
    let text = String::from_utf8_lossy(data);
    let log = parse(&text);
    check_gc_log(name, &log, text.lines().count() as u64);
    if by_line {
        let one_by_one: Vec<_> = text.lines().flat_map(|l| parse(l).events).collect();
        assert_eq!(
            log.events, one_by_one,
            "{name}: the text and its lines differ"
        );
    }
}

/// The promises every GC log reader keeps on any text of `lines` lines.
fn check_gc_log(name: &str, log: &GcLog, lines: u64) {
    assert!(
        log.events.len() as u64 + log.unparsed_lines <= lines,
        "{name}: {} events and {} unparsed lines from {lines} lines",
        log.events.len(),
        log.unparsed_lines
    );
    for e in &log.events {
        assert!(
            e.pause_ms.is_finite() && e.pause_ms >= 0.0,
            "{name}: pause {e:?}"
        );
        assert!(e.t_s.is_finite() && e.t_s >= 0.0, "{name}: time {e:?}");
        assert!(!e.kind.is_empty(), "{name}: no kind {e:?}");
        assert!(
            e.unix_ms.is_none_or(f64::is_finite),
            "{name}: wall time {e:?}"
        );
    }
    assert!(
        log.anchor_unix_ms.is_none_or(f64::is_finite),
        "{name}: anchor {:?}",
        log.anchor_unix_ms
    );
}
