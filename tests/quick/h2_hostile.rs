//! HTTP/2 (h2c) against hostile servers (`tests/common/h2.rs`): each run of the real binary
//! ends in bounded time with the error kinds the contract names, keeps the counter
//! invariant, and volley's memory stays small whatever the server sends. The well-behaved
//! server checks the baseline: every request answered, the server's stream limit kept.

use crate::common;

use std::time::{Duration, Instant};

use common::h2::{serve, Behaviour, H2Server};
use common::{assert_invariant, volley, volley_json};

/// volley's peak RSS must stay below this whatever the server does.
const RSS_LIMIT: u64 = 64 << 20;

/// A run of `volley run URL --h2c -t 1` with `extra` (`--streams 4 -c 2` unless it says), checked for the
/// invariant, its memory and its wall time (`within`).
fn run(s: &H2Server, extra: &[&str], within: Duration) -> (i32, serde_json::Value) {
    let url = s.url("/");
    let mut args = vec!["run", url.as_str(), "--h2c", "-t", "1"];
    // Defaults that `extra` may set otherwise.
    for (flag, value) in [("--streams", "4"), ("-c", "2")] {
        if !extra.contains(&flag) {
            args.extend_from_slice(&[flag, value]);
        }
    }
    args.extend_from_slice(extra);
    let t = Instant::now();
    let (code, j, stderr) = volley_json(&args, Duration::from_secs(30));
    let took = t.elapsed();
    assert!(took < within, "took {took:?}, over {within:?}\n{stderr}");
    assert_invariant(&j);
    let rss = n(&j, &["client", "rss_max_bytes"]);
    assert!(rss < RSS_LIMIT, "volley grew to {rss} bytes\n{stderr}");
    (code, j)
}

fn n(j: &serde_json::Value, path: &[&str]) -> u64 {
    let mut v = j;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("{path:?} in {j}"))
}

/// Every error of the run is of one of `kinds`, and there is at least one.
fn only_errors(j: &serde_json::Value, kinds: &[&str]) -> u64 {
    let total = n(j, &["requests", "errors"]);
    let of: u64 = kinds.iter().map(|k| n(j, &["errors", k])).sum();
    assert!(total >= 1, "no error: {}", j["errors"]);
    assert_eq!(of, total, "errors other than {kinds:?}: {}", j["errors"]);
    of
}

const LONG: Duration = Duration::from_secs(15);

/// The wall time a run of `-d 1s --timeout 500ms` may take against any server:
/// `-d` + `--timeout` + 1 s.
const BOUND: Duration = Duration::from_millis(1000 + 500 + 1000);

#[test]
fn a_well_behaved_server_answers_every_request_on_concurrent_streams() {
    let s = serve(Behaviour::Normal {
        max_streams: None,
        hold: Duration::from_millis(5),
    });
    let (code, j) = run(&s, &["-n", "200"], LONG);
    assert_eq!(code, 0);
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(s.requests(), 200);
    assert!(s.max_open() > 1, "--streams 4 kept {} open", s.max_open());
    assert!(s.max_open() <= 4, "{} streams open at once", s.max_open());
    assert!(s.connections() <= 2, "{} connections", s.connections());
}

#[test]
fn the_servers_stream_limit_is_never_exceeded() {
    let s = serve(Behaviour::Normal {
        max_streams: Some(2),
        hold: Duration::from_millis(5),
    });
    let (code, j) = run(&s, &["-n", "200"], LONG);
    assert_eq!(code, 0);
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{}", j["errors"]);
    assert_eq!(s.max_open(), 2, "SETTINGS_MAX_CONCURRENT_STREAMS 2");
}

#[test]
fn a_graceful_goaway_sends_the_rest_again_and_everything_completes() {
    let s = serve(Behaviour::GoAwayAfter(10));
    let (code, j) = run(&s, &["-n", "200"], LONG);
    assert_eq!(code, 0);
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(s.requests(), 200, "each request answered once");
    assert!(
        n(&j, &["connections", "opened"]) >= 20,
        "{}",
        j["connections"]
    );
}

#[test]
fn a_goaway_with_an_error_code_fails_what_it_processed_and_retries_the_rest() {
    // INTERNAL_ERROR, last stream = the first: that one is lost, the others are resent.
    let s = serve(Behaviour::GoAwayError(2));
    let (code, j) = run(&s, &["-n", "40", "--timeout", "500ms"], LONG);
    assert_eq!(code, 1, "no response");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    only_errors(&j, &["protocol", "closed"]);
}

#[test]
fn rst_stream_on_every_stream_is_a_protocol_error_per_request() {
    let s = serve(Behaviour::Reset(2));
    let (code, j) = run(&s, &["-n", "200"], LONG);
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert_eq!(only_errors(&j, &["protocol"]), 200);
    assert_eq!(n(&j, &["requests", "sent"]), 200);
}

#[test]
fn a_window_that_never_opens_times_out_in_bounded_time() {
    let s = serve(Behaviour::ZeroWindow);
    let (code, j) = run(
        &s,
        &["--body-size", "100", "-d", "1s", "--timeout", "500ms"],
        Duration::from_secs(6),
    );
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    only_errors(&j, &["timeout"]);
    assert!(s.requests() == 0, "no request ever ended");
}

/// A flooding server: protocol errors, bounded time and memory.
fn refused(b: Behaviour) {
    let s = serve(b);
    let (code, j) = run(
        &s,
        &["-d", "1s", "--timeout", "500ms"],
        Duration::from_secs(8),
    );
    assert_eq!(code, 1, "{b:?}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    only_errors(&j, &["protocol"]);
}

#[test]
fn a_settings_flood_is_a_protocol_error() {
    refused(Behaviour::SettingsFlood);
}

#[test]
fn a_ping_flood_is_a_protocol_error() {
    refused(Behaviour::PingFlood);
}

#[test]
fn a_header_block_that_never_ends_is_a_protocol_error() {
    refused(Behaviour::EndlessContinuation);
}

#[test]
fn a_huge_hpack_table_is_a_protocol_error() {
    refused(Behaviour::HugeTableSize);
}

#[test]
fn an_http11_answer_to_h2c_exits_2_with_one_line() {
    let s = serve(Behaviour::Http11);
    let url = s.url("/");
    let t = Instant::now();
    let o = volley(
        &[
            "run",
            &url,
            "--h2c",
            "--streams",
            "4",
            "-c",
            "2",
            "-n",
            "200",
        ],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("volley: "), "{err}");
    assert!(err.contains("HTTP/1.1") && err.contains("--h2c"), "{err}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// A warning of the run that contains `what`.
fn warned<'a>(j: &'a serde_json::Value, what: &str) -> &'a str {
    j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.contains(what))
        .unwrap_or_else(|| panic!("no warning with {what:?}: {}", j["warnings"]))
}

/// A run that must end before any response with one line on stderr, exit 2, naming `why`.
fn set_up_failure(b: Behaviour, why: &str) {
    let s = serve(b);
    let url = s.url("/");
    let t = Instant::now();
    let args = [
        "run",
        &url,
        "--h2c",
        "--streams",
        "8",
        "-c",
        "2",
        "-d",
        "3s",
    ];
    let o = volley(&args, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{b:?}: {err}");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "{b:?}: took {:?}",
        t.elapsed()
    );
    assert_eq!(err.lines().count(), 1, "{b:?}: one line: {err:?}");
    assert!(
        err.starts_with("volley: HTTP/2 with 127.0.0.1:")
            && err.contains("failed before any request"),
        "{b:?}: {err}"
    );
    assert!(err.contains(why), "{b:?}: {err}");
    assert!(o.stdout.is_empty(), "{b:?}");
    assert!(
        s.connections() <= 10,
        "{b:?}: {} connections",
        s.connections()
    );
}

#[test]
fn a_server_that_breaks_http2_before_any_request_is_a_set_up_failure() {
    set_up_failure(
        Behaviour::PingFirst,
        "the server's first frame is PING, not SETTINGS",
    );
    set_up_failure(
        Behaviour::BadSetting(5, 16_383),
        "SETTINGS_MAX_FRAME_SIZE 16383, outside 16,384 to 2^24 - 1 (PROTOCOL_ERROR)",
    );
    set_up_failure(
        Behaviour::BadSetting(2, 2),
        "SETTINGS_ENABLE_PUSH 2, not 0 or 1",
    );
    set_up_failure(
        Behaviour::BadSetting(4, 1 << 31),
        "SETTINGS_INITIAL_WINDOW_SIZE 2147483648, over 2^31 - 1 (FLOW_CONTROL_ERROR)",
    );
    set_up_failure(
        Behaviour::Garbage,
        r#"the server's first bytes are not an HTTP/2 frame: "SSH-2.0-OpenSSH_9.6\r\n""#,
    );
    set_up_failure(
        Behaviour::GoAwayFirst(0xb),
        "the server went away with ENHANCE_YOUR_CALM (GOAWAY) before any request",
    );
    set_up_failure(
        Behaviour::GoAwayFirst(0),
        "the server went away with NO_ERROR (GOAWAY) before any request",
    );
}

#[test]
fn after_a_response_such_connections_are_connect_errors_and_back_off() {
    // The first connection answers 5 requests; every later one answers with a PING.
    let s = serve(Behaviour::PingFirstAfterOne);
    let (code, j) = run(&s, &["-c", "1", "-d", "1s", "--timeout", "500ms"], BOUND);
    assert_eq!(code, 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "completed"]), 5);
    // Requests sent once before (above the GOAWAY's last stream) end as `closed` when their
    // next connection fails: they were sent.
    only_errors(&j, &["connect", "closed"]);
    // One `connect` error per failed connection (its waiting requests go elsewhere).
    let (connect, conns) = (n(&j, &["errors", "connect"]), s.connections());
    assert!(
        connect > 0 && connect < conns && connect + 2 >= conns,
        "{connect} for {conns}"
    );
    let w = warned(&j, "connection attempts failed");
    assert!(
        w.contains("HTTP/2: the server's first frame is PING, not SETTINGS"),
        "{w}"
    );
    // Backed off (1 ms doubling to 100 ms, checked every 10 ms), not thousands a second.
    assert!(
        s.connections() < 40,
        "{} connections in 1 s",
        s.connections()
    );
}

#[test]
fn a_goaway_that_refuses_everything_resends_each_request_once() {
    let s = serve(Behaviour::RefuseAll);
    let (code, j) = run(
        &s,
        &["--streams", "8", "-d", "1s", "--timeout", "500ms"],
        BOUND,
    );
    assert_eq!(code, 1, "no response");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    let refused = only_errors(&j, &["protocol"]);
    let sent = n(&j, &["requests", "sent"]);
    assert_eq!(n(&j, &["requests", "unfinished"]), 0, "the drain ends");
    assert!(
        s.requests() <= 2 * sent,
        "{} streams for {sent} requests",
        s.requests()
    );
    assert!(refused >= 1);
    let w = warned(&j, "did not process");
    assert!(w.contains("again (GOAWAY NO_ERROR, last stream 0)"), "{w}");
    assert!(s.connections() < 60, "{} connections", s.connections());
}

#[test]
fn refused_streams_go_once_more_then_are_named() {
    let s = serve(Behaviour::Reset(7));
    let (code, j) = run(&s, &["-n", "200"], LONG);
    assert_eq!(code, 1);
    assert_eq!(only_errors(&j, &["protocol"]), 200);
    assert_eq!(s.requests(), 400, "each request sent twice");
    let w = warned(&j, "did not process");
    assert!(w.contains("again (RST_STREAM REFUSED_STREAM)"), "{w}");
}

#[test]
fn request_bodies_stay_bounded_when_the_server_never_reads() {
    let args = [
        "-c",
        "2",
        "--streams",
        "32",
        "--body-size",
        "8MiB",
        "-d",
        "2s",
        "--timeout",
        "1s",
    ];
    // Bounded by --timeout, not by the wall clock: the drain would end at twice --timeout
    // (and 100 ms) after the window, leaving what is still open `unfinished`; streams that
    // each end at their own --timeout leave none. How long the process takes beyond that
    // (start, the result) depends on how busy the machine is: LONG only catches a hang.
    let reads = serve(Behaviour::Normal {
        max_streams: None,
        hold: Duration::ZERO,
    });
    let (_, ok) = run(&reads, &args, LONG);
    assert_eq!(n(&ok, &["requests", "unfinished"]), 0, "{}", ok["errors"]);
    // A server that reads: bodies flowed (whether 8 MiB ones complete within the second of
    // --timeout depends on how busy the machine is).
    let flowed = n(&ok, &["bytes", "sent"]);
    assert!(
        flowed > 16 << 20,
        "{flowed} bytes sent to a server that reads"
    );
    let s = serve(Behaviour::NeverReads);
    let (code, j) = run(&s, &args, LONG);
    assert_eq!(code, 1);
    only_errors(&j, &["timeout"]);
    assert_eq!(
        n(&j, &["requests", "unfinished"]),
        0,
        "each stream timed out"
    );
    let (base, rss) = (
        n(&ok, &["client", "rss_max_bytes"]),
        n(&j, &["client", "rss_max_bytes"]),
    );
    assert!(
        rss <= base + (16 << 20),
        "{rss} bytes against {base} with a server that reads"
    );
}

#[test]
fn a_header_block_of_size_updates_is_a_compression_error() {
    let s = serve(Behaviour::SizeUpdates);
    let (code, j) = run(&s, &["-d", "1s", "--timeout", "500ms"], BOUND);
    assert_eq!(code, 1);
    only_errors(&j, &["protocol"]);
    let w = warned(&j, "COMPRESSION_ERROR");
    assert!(
        w.contains("more than two dynamic table size updates"),
        "{w}"
    );
}

#[test]
fn a_content_length_that_lies_is_a_protocol_error() {
    let s = serve(Behaviour::ShortBody);
    let (code, j) = run(&s, &["-n", "100"], LONG);
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert_eq!(only_errors(&j, &["protocol"]), 100);
    let w = warned(&j, "malformed");
    assert!(
        w.contains("a content-length of 10 and 1 bytes of DATA"),
        "{w}"
    );
}

#[test]
fn a_stalled_stream_times_out_alone() {
    let s = serve(Behaviour::StallFirst);
    let (code, j) = run(
        &s,
        &["-c", "1", "-n", "60", "--timeout", "500ms"],
        Duration::from_secs(5),
    );
    assert_eq!(code, 0);
    assert_eq!(only_errors(&j, &["timeout"]), 1, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "completed"]), 59);
    assert_eq!(s.connections(), 1, "the connection was kept");
}

#[test]
fn a_server_that_ignores_the_window_is_named() {
    let s = serve(Behaviour::IgnoresWindow);
    let (code, j) = run(
        &s,
        &[
            "-c",
            "1",
            "-d",
            "1s",
            "--timeout",
            "500ms",
            "--h2-window",
            "65535",
        ],
        BOUND,
    );
    assert_eq!(code, 1, "{}", j["errors"]);
    only_errors(&j, &["protocol"]);
    let w = warned(&j, "FLOW_CONTROL_ERROR");
    assert!(w.contains("beyond the connection's window of 65535"), "{w}");
}

/// What volley does against every hostile server above, as a table (not a check: run it with
/// `cargo test --test tests quick::h2_hostile:: -- --ignored --nocapture`, and `VOLLEY_BIN=<other build>` to
/// see what another build did against the same servers).
#[test]
#[ignore = "a table to read, not a check"]
fn hostile_matrix() {
    let d = ["-d", "3s", "--timeout", "1s"];
    let cases: Vec<(&str, Behaviour, Vec<&str>)> = vec![
        ("PING before SETTINGS", Behaviour::PingFirst, vec![]),
        (
            "MAX_FRAME_SIZE 16383",
            Behaviour::BadSetting(5, 16_383),
            vec![],
        ),
        ("ENABLE_PUSH 2", Behaviour::BadSetting(2, 2), vec![]),
        (
            "INITIAL_WINDOW_SIZE 2^31",
            Behaviour::BadSetting(4, 1 << 31),
            vec![],
        ),
        ("SSH banner", Behaviour::Garbage, vec![]),
        (
            "GOAWAY ENHANCE_YOUR_CALM first",
            Behaviour::GoAwayFirst(0xb),
            vec![],
        ),
        (
            "PING first after one good conn",
            Behaviour::PingFirstAfterOne,
            vec!["-c", "1"],
        ),
        ("GOAWAY NO_ERROR last 0", Behaviour::RefuseAll, vec![]),
        (
            "never reads, windows 2^31-1",
            Behaviour::NeverReads,
            vec!["--streams", "32", "--body-size", "8MiB"],
        ),
        ("64 KiB of size updates", Behaviour::SizeUpdates, vec![]),
        ("content-length 10, 1 byte", Behaviour::ShortBody, vec![]),
        (
            "REFUSED_STREAM on every stream",
            Behaviour::Reset(7),
            vec![],
        ),
        (
            "first stream stalled",
            Behaviour::StallFirst,
            vec!["-c", "1"],
        ),
        (
            "ignores --h2-window 65535",
            Behaviour::IgnoresWindow,
            vec!["-c", "1", "--h2-window", "65535"],
        ),
        ("SETTINGS flood", Behaviour::SettingsFlood, vec![]),
        ("PING flood", Behaviour::PingFlood, vec![]),
        (
            "endless CONTINUATION",
            Behaviour::EndlessContinuation,
            vec![],
        ),
        ("HPACK table 128 MiB", Behaviour::HugeTableSize, vec![]),
    ];
    println!(
        "| server | exit | wall s | completed | errors | conns | streams seen | RSS MiB | said |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, b, extra) in cases {
        let s = serve(b);
        let url = s.url("/");
        let mut args = vec![
            "run",
            url.as_str(),
            "--h2c",
            "-t",
            "1",
            "--json",
            "-",
            "--quiet",
        ];
        for (flag, value) in [("--streams", "8"), ("-c", "2")] {
            if !extra.contains(&flag) {
                args.extend_from_slice(&[flag, value]);
            }
        }
        args.extend_from_slice(&d);
        args.extend_from_slice(&extra);
        let t = Instant::now();
        let o = volley(&args, Duration::from_secs(40));
        let wall = t.elapsed().as_secs_f64();
        let err = String::from_utf8_lossy(&o.stderr).replace('\n', " ");
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        let kinds: Vec<String> = j["errors"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| v.as_u64().unwrap_or(0) > 0)
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect()
            })
            .unwrap_or_default();
        let said = j["warnings"]
            .as_array()
            .and_then(|w| {
                w.iter()
                    .filter_map(|w| w.as_str())
                    .find(|w| w.contains("HTTP/2") || w.contains("due but never"))
                    .map(str::to_string)
            })
            .unwrap_or(err);
        println!(
            "| {name} | {} | {wall:.1} | {} | {} | {} | {} | {:.0} | {} |",
            o.status.code().unwrap_or(-1),
            j["requests"]["completed"],
            if kinds.is_empty() {
                "0".to_string()
            } else {
                kinds.join(", ")
            },
            s.connections(),
            s.requests(),
            j["client"]["rss_max_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
            said.chars().take(150).collect::<String>(),
        );
    }
}

// ---- the servers themselves, checked with volley's own H2Conn over one connection (these
// pass without the engine speaking HTTP/2, so a failure above is volley's, not the fixture's) ----

mod fixture {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use volley::engine::h2::conn::{Event, H2Conn, RECEIVE_WINDOW};

    use super::common::h2::{serve, Behaviour};

    /// What one connection driven by `H2Conn` saw.
    #[derive(Debug, Default)]
    struct Seen {
        completed: u64,
        resets: Vec<u32>,
        goaway: Option<(u32, u32)>,
        max_streams: Option<u32>,
        error: Option<String>,
        eof: bool,
    }

    /// Sends up to `total` GET (or `body`-byte POST) requests on `streams` concurrent streams
    /// of one connection for at most `limit`.
    fn drive(b: Behaviour, streams: usize, total: u64, body: usize, limit: Duration) -> Seen {
        let s = serve(b);
        let mut sock = TcpStream::connect(s.server.addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        sock.set_write_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let method = if body > 0 { 0x83 } else { 0x82 };
        let block = [method, 0x86, 0x84, 0x41, 0x01, b'h'];
        let mut c = H2Conn::new(vec![b'b'; body].into(), RECEIVE_WINDOW);
        let mut seen = Seen::default();
        let (mut opened, deadline) = (0u64, Instant::now() + limit);
        let mut buf = vec![0u8; 64 << 10];
        while Instant::now() < deadline && seen.error.is_none() && !seen.eof {
            while c.can_open() && c.open_streams() < streams && opened < total {
                c.open_stream(&block);
                opened += 1;
            }
            if let Ok(n) = sock.write(&c.out) {
                c.out.drain(..n);
            }
            let n = match sock.read(&mut buf) {
                Ok(0) => {
                    seen.eof = true;
                    continue;
                }
                Ok(n) => n,
                Err(_) => continue,
            };
            let r = c.feed(&buf[..n], &mut |e| match e {
                Event::End { .. } => seen.completed += 1,
                Event::Reset { code, .. } => seen.resets.push(code),
                Event::GoAway { last_stream, code } => seen.goaway = Some((last_stream, code)),
                Event::Settings { max_streams } => seen.max_streams = Some(max_streams),
                _ => {}
            });
            seen.error = r.err().map(|e| e.0);
            let finished = seen.completed + seen.resets.len() as u64;
            if finished == total || (seen.goaway.is_some() && c.open_streams() == 0) {
                break;
            }
        }
        seen
    }

    const SHORT: Duration = Duration::from_secs(5);

    #[test]
    fn the_well_behaved_server_answers_and_announces_its_limit() {
        let normal = Behaviour::Normal {
            max_streams: Some(3),
            hold: Duration::ZERO,
        };
        let seen = drive(normal, 3, 30, 0, SHORT);
        assert_eq!(
            (seen.completed, seen.max_streams),
            (30, Some(3)),
            "{seen:?}"
        );
        // Request bodies larger than the default windows get through.
        let seen = drive(normal, 2, 4, 200_000, SHORT);
        assert_eq!(seen.completed, 4, "{seen:?}");
    }

    #[test]
    fn the_goaway_servers_name_their_last_stream_and_code() {
        let seen = drive(Behaviour::GoAwayAfter(3), 4, 20, 0, SHORT);
        assert_eq!(seen.goaway, Some((5, 0)), "{seen:?}");
        assert_eq!(seen.completed, 3, "{seen:?}");
        let seen = drive(Behaviour::GoAwayError(2), 4, 20, 0, SHORT);
        assert_eq!(seen.goaway, Some((1, 2)), "{seen:?}");
        assert_eq!(seen.completed, 0, "{seen:?}");
    }

    #[test]
    fn the_reset_server_resets_every_stream() {
        let seen = drive(Behaviour::Reset(2), 4, 20, 0, SHORT);
        assert_eq!(seen.resets, vec![2; 20], "{seen:?}");
    }

    #[test]
    fn the_zero_window_server_never_lets_a_body_through() {
        let seen = drive(Behaviour::ZeroWindow, 4, 4, 100, Duration::from_millis(500));
        assert_eq!((seen.completed, &seen.error), (0, &None), "{seen:?}");
    }

    #[test]
    fn the_hostile_servers_end_in_the_named_h2_errors() {
        for (b, name) in [
            (Behaviour::SettingsFlood, "ENHANCE_YOUR_CALM"),
            (Behaviour::PingFlood, "ENHANCE_YOUR_CALM"),
            (Behaviour::EndlessContinuation, "ENHANCE_YOUR_CALM"),
            (Behaviour::HugeTableSize, "COMPRESSION_ERROR"),
            (Behaviour::Http11, "HTTP/1.1 400 Bad Request"),
        ] {
            let seen = drive(b, 4, 20, 0, SHORT);
            let err = seen.error.unwrap_or_else(|| panic!("{b:?}: no error"));
            assert!(err.contains(name), "{b:?}: {err}");
        }
    }

    #[test]
    fn the_http11_server_answers_the_preface_with_a_status_line() {
        // A raw check of the HTTP/1.1 answer: the status line, then the connection closes.
        let s = serve(Behaviour::Http11);
        let mut sock = TcpStream::connect(s.server.addr).unwrap();
        sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        let mut got = Vec::new();
        sock.set_read_timeout(Some(SHORT)).unwrap();
        sock.read_to_end(&mut got).unwrap();
        assert!(got.starts_with(b"HTTP/1.1 400 "), "{got:?}");
    }
}
