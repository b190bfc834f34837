//! `volley run --http3` against hostile HTTP/3 servers (the engine's in-process server,
//! `engine::quic::testing`, on a thread): one that closes connections with an error code
//! mid-run, one that allows no request streams, endless bodies and field sections, a flood
//! of reserved streams and frames, and one that goes silent. Each run ends in bounded time
//! and memory, every failure counted under the kind docs/contract.md names ("HTTP/3").

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use volley_engine::quic::testing::{Answer, Running, Server};
use volley_engine::quic::ALPN_H3;

/// volley's peak RSS must stay below this whatever the server does.
const RSS_LIMIT: u64 = 64 << 20;

/// A hostile server on its thread, and the certificate volley is to trust.
struct Hostile {
    running: Running,
    dir: PathBuf,
}

impl Hostile {
    /// A server allowing `streams` request streams, set up by `set`.
    fn start(name: &str, streams: u32, set: impl FnOnce(&mut Server)) -> Hostile {
        let dir = common::scratch("h3-hostile", name);
        let (mut server, pem) = Server::with_streams(ALPN_H3, streams);
        std::fs::write(dir.join("cert.pem"), pem).unwrap();
        set(&mut server);
        Hostile {
            running: server.spawn(),
            dir,
        }
    }

    /// `volley run --http3` with `extra`, within `within`: its exit code, RunResult and
    /// output (the summary, the warnings), checked for the counter invariant and memory.
    fn run(&self, extra: &[&str], within: Duration) -> (i32, Value, String) {
        let url = format!("https://localhost:{}/", self.running.addr.port());
        let cacert = self.dir.join("cert.pem").display().to_string();
        let json = self.dir.join("r.json").display().to_string();
        let mut args = vec!["run", &url, "--http3", "--cacert", &cacert, "--json", &json];
        args.extend_from_slice(extra);
        let t = Instant::now();
        let o = common::volley(&args, Duration::from_secs(60));
        let took = t.elapsed();
        let text = common::output_text(&o);
        assert!(took < within, "took {took:?}, over {within:?}\n{text}");
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        common::assert_invariant(&j);
        let rss = n(&j, &["client", "rss_max_bytes"]);
        assert!(rss < RSS_LIMIT, "volley grew to {rss} bytes\n{text}");
        (o.status.code().unwrap_or(-1), j, text)
    }

    /// Stops the server: its counts.
    fn stop(self) -> Server {
        self.running.stop()
    }
}

fn n(j: &Value, path: &[&str]) -> u64 {
    let mut v = j;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("{path:?} in {j}"))
}

/// Every error of the run is of one of `kinds`, and there is at least one: how many.
fn only_errors(j: &Value, kinds: &[&str]) -> u64 {
    let total = n(j, &["requests", "errors"]);
    let of: u64 = kinds.iter().map(|k| n(j, &["errors", k])).sum();
    assert!(total >= 1, "no error: {}", j["errors"]);
    assert_eq!(of, total, "errors other than {kinds:?}: {}", j["errors"]);
    of
}

/// The run's warning containing `what`, also in its summary `text`.
fn warned(j: &Value, text: &str, what: &str) {
    let w = j["warnings"].as_array().unwrap();
    assert!(
        w.iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains(what))),
        "no warning with {what:?}: {w:?}"
    );
    assert!(text.contains(what), "not in the summary: {what:?}\n{text}");
}

/// `-d 1s --timeout 500ms`: a run against any server ends within -d, twice --timeout for the
/// drain, and the start and the result (slow on a busy machine: this catches a hang).
const BOUND: Duration = Duration::from_secs(10);

#[test]
fn a_connection_closed_with_an_error_mid_run_fails_its_requests_as_protocol_errors() {
    // Each connection answers 20 requests, then closes with H3_EXCESSIVE_LOAD.
    let s = Hostile::start("close", 100, |s| {
        s.answer = Answer::CloseAfter {
            answers: 20,
            code: 0x107,
        }
    });
    let args = [
        "-c",
        "2",
        "--streams",
        "4",
        "-d",
        "1s",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 0, "responses came: {text}");
    assert!(n(&j, &["requests", "completed"]) >= 20, "{text}");
    // The requests in flight when the close came were sent: `protocol`, as HTTP/2's GOAWAY
    // with an error code; those not yet on a stream went on the next connection.
    only_errors(&j, &["protocol"]);
    warned(
        &j,
        &text,
        "the server closed the connection with H3_EXCESSIVE_LOAD (\"closing\") (CONNECTION_CLOSE)",
    );
    // volley reconnected and went on.
    assert!(server.accepted >= 4, "{} connections", server.accepted);
    assert!(
        n(&j, &["connections", "opened"]) >= 4,
        "{}",
        j["connections"]
    );
}

#[test]
fn a_server_that_allows_no_request_streams_is_a_connect_error_within_the_timeout() {
    let s = Hostile::start("zero-streams", 0, |_| {});
    let (code, j, text) = s.run(&["-c", "2", "-d", "1s", "--timeout", "500ms"], BOUND);
    let server = s.stop();
    assert_eq!(code, 1, "no response: {text}");
    assert_eq!(n(&j, &["requests", "sent"]), 0, "{text}");
    only_errors(&j, &["connect"]);
    warned(&j, &text, "the server allowed no request streams");
    assert!(server.accepted >= 2, "{} connections", server.accepted);
    assert_eq!(server.answered, 0);
}

#[test]
fn an_endless_body_times_out_each_request_with_memory_bounded() {
    let s = Hostile::start("endless-body", 100, |s| s.answer = Answer::EndlessBody);
    let args = [
        "-c",
        "2",
        "--streams",
        "2",
        "-d",
        "1s",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 1, "no response: {text}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    only_errors(&j, &["timeout"]);
    // The bodies flowed (read, counted, not kept) until each request's --timeout, which
    // stopped its stream.
    let received = n(&j, &["bytes", "received"]);
    assert!(received > 4 << 20, "{received} bytes received\n{text}");
    assert!(server.flooded >= received, "{} flooded", server.flooded);
    assert!(server.stopped >= 1, "volley stopped no stream");
}

#[test]
fn endless_interim_responses_time_out_each_request() {
    let s = Hostile::start("endless-interim", 100, |s| {
        s.answer = Answer::EndlessInterim
    });
    let args = [
        "-c",
        "2",
        "--streams",
        "2",
        "-d",
        "1s",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 1, "no response: {text}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    only_errors(&j, &["timeout"]);
    // Each 103 read and dropped (the head is the final response's), until --timeout.
    assert!(server.flooded > 1 << 20, "{} flooded", server.flooded);
    assert!(server.stopped >= 1, "volley stopped no stream");
}

#[test]
fn an_endless_field_section_is_a_protocol_error_per_request() {
    let s = Hostile::start("endless-headers", 100, |s| {
        s.answer = Answer::EndlessHeaders
    });
    let args = ["-c", "2", "--streams", "4", "-n", "200", "--timeout", "2s"];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 1, "no response: {text}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    // Each stream refused at once (STOP_SENDING), so the floods hold no connection's window:
    // every request ends so, none times out.
    assert_eq!(only_errors(&j, &["protocol"]), 200, "{text}");
    warned(&j, &text, "HTTP/3: a malformed response on stream ");
    warned(&j, &text, "a HEADERS frame of 1099511627776 bytes");
    warned(&j, &text, "H3_EXCESSIVE_LOAD");
    assert_eq!(server.answered, 200);
    assert!(server.stopped >= 190, "{} streams stopped", server.stopped);
}

#[test]
fn a_flood_of_reserved_streams_and_frames_is_ignored_and_bounded() {
    let s = Hostile::start("grease", 100, |s| s.grease = true);
    let args = [
        "-c",
        "2",
        "--streams",
        "4",
        "-d",
        "1s",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 0, "{text}");
    assert!(n(&j, &["requests", "completed"]) >= 100, "{text}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "unfinished"]), 0, "{text}");
    // volley stopped each stream of a reserved type (H3_STREAM_CREATION_ERROR), which freed
    // QUIC's stream credit: the server opened more than the 16 it is allowed at once.
    assert!(server.stopped >= 16, "{} floods stopped", server.stopped);
    assert!(
        server.grease_streams > 2 * 16,
        "{} reserved streams",
        server.grease_streams
    );
    assert!(server.flooded > 0);
}

#[test]
fn a_server_gone_silent_mid_run_ends_in_timeouts_then_connect_errors() {
    let s = Hostile::start("silent", 100, |s| s.mute_after = Some(50));
    let args = [
        "-c",
        "2",
        "--streams",
        "2",
        "-d",
        "2s",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 0, "responses came: {text}");
    assert_eq!(server.answered, 50);
    let completed = n(&j, &["requests", "completed"]);
    assert!((1..=50).contains(&completed), "{completed}: {text}");
    // What was in flight timed out by --timeout (no byte came on the connection); the
    // connections after it never finished their handshakes.
    only_errors(&j, &["timeout", "connect"]);
    assert!(n(&j, &["errors", "timeout"]) >= 1, "{}", j["errors"]);
    assert!(n(&j, &["errors", "connect"]) >= 1, "{}", j["errors"]);
    warned(
        &j,
        &text,
        "the TLS handshake did not finish within --timeout",
    );
}

#[test]
fn a_rejected_request_goes_once_more_then_is_named() {
    // H3_REQUEST_REJECTED: not processed (RFC 9114 §4.1.1), as HTTP/2's REFUSED_STREAM.
    let s = Hostile::start("rejected", 100, |s| s.answer = Answer::Reset(0x10b));
    let args = ["-c", "2", "--streams", "4", "-n", "200", "--timeout", "2s"];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 1, "no response: {text}");
    assert_eq!(only_errors(&j, &["protocol"]), 200, "{text}");
    assert_eq!(server.answered, 400, "each request sent twice");
    warned(
        &j,
        &text,
        "HTTP/3: the server did not process the request on stream",
    );
    warned(&j, &text, "again (RESET_STREAM H3_REQUEST_REJECTED)");
}

#[test]
fn a_server_that_withholds_new_streams_is_left_for_another_connection() {
    // Two streams at once, never answered, never freed: once volley cancelled them at
    // --timeout, the server grants no new one (no MAX_STREAMS).
    let s = Hostile::start("withheld", 2, |s| s.answer = Answer::Silent);
    let args = [
        "-c",
        "1",
        "--streams",
        "2",
        "-d",
        "2s",
        "--timeout",
        "300ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 1, "no response: {text}");
    only_errors(&j, &["timeout", "connect"]);
    // Each connection: its two requests time out, then --timeout without a stream ends it.
    assert!(n(&j, &["errors", "timeout"]) >= 4, "{}", j["errors"]);
    assert!(n(&j, &["errors", "connect"]) >= 1, "{}", j["errors"]);
    warned(&j, &text, "the server allowed no more request streams");
    assert!(server.accepted >= 3, "{} connections", server.accepted);
}

#[test]
fn a_goaway_sends_the_streams_it_left_unprocessed_to_a_new_connection() {
    // Each connection answers 20 requests, then says GOAWAY and processes nothing more.
    let s = Hostile::start("goaway", 100, |s| {
        s.answer = Answer::GoAwayAfter { answers: 20 }
    });
    let args = [
        "-c",
        "1",
        "--streams",
        "4",
        "-n",
        "200",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 0, "{text}");
    // Every request answered once: those the GOAWAY left went again on a new connection.
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{text}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(server.answered, 200);
    let opened = n(&j, &["connections", "opened"]);
    assert!(
        (10..=12).contains(&opened),
        "a connection per 20 requests: {opened}"
    );
    assert!(
        n(&j, &["target", "quic", "goaways"]) >= 9,
        "{}",
        j["target"]["quic"]
    );
    assert!(
        text.contains("GOAWAYs (the streams each left unprocessed went on new connections)"),
        "{text}"
    );
}

#[test]
fn an_endless_qpack_encoder_stream_is_read_within_bounds() {
    // The server's encoder stream never ends: instructions a table of capacity 0 accepts.
    let s = Hostile::start("qpack", 100, |s| s.qpack_flood = true);
    let args = [
        "-c",
        "2",
        "--streams",
        "4",
        "-d",
        "1s",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = s.run(&args, BOUND);
    let server = s.stop();
    assert_eq!(code, 0, "{text}");
    assert!(n(&j, &["requests", "completed"]) >= 100, "{text}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert!(
        server.flooded > 1 << 20,
        "{} bytes of instructions",
        server.flooded
    );
}
