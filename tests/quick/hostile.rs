//! Hostile servers: each run is bounded in time, ends with a clear error kind, keeps the
//! counter invariant, and volley's memory stays small whatever the server sends.

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::*;

/// volley's peak RSS must stay below this whatever the server does.
const RSS_LIMIT: u64 = 64 << 20;

fn run(url: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["run", url, "-t", "1", "-d", "1s", "--timeout", "1s"];
    if !extra.contains(&"-c") {
        args.extend_from_slice(&["-c", "1"]);
    }
    args.extend_from_slice(extra);
    let (code, j, stderr) = volley_json(&args, Duration::from_secs(20));
    assert_invariant(&j);
    let rss = j["client"]["rss_max_bytes"].as_u64().unwrap();
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

#[test]
fn a_10_gib_body_is_streamed_and_counted_not_buffered() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            let _ = c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n");
            let chunk = vec![b'x'; 256 * 1024];
            while c.write(&chunk) {}
        }
    });
    let (code, j) = run(&s.url("/"), &[]);
    assert_eq!(code, 1, "no response completed");
    assert_eq!(n(&j, &["errors", "timeout"]), 1, "{}", j["errors"]);
    assert!(
        n(&j, &["bytes", "received"]) > 50 << 20,
        "the body was read as it came: {} bytes",
        j["bytes"]["received"]
    );
}

#[test]
fn endless_headers_are_a_protocol_error() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            let _ = c.write(b"HTTP/1.1 200 OK\r\n");
            let line = format!("X-Pad: {}\r\n", "a".repeat(1000));
            while c.write(line.as_bytes()) {}
        }
    });
    let (code, j) = run(&s.url("/"), &[]);
    assert_eq!(code, 1);
    assert!(n(&j, &["errors", "protocol"]) >= 1, "{}", j["errors"]);
    assert_eq!(n(&j, &["errors", "timeout"]), 0);
}

#[test]
fn a_chunked_body_that_never_ends_times_out() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            let _ = c.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            let mut chunk = b"4000\r\n".to_vec();
            chunk.extend(std::iter::repeat_n(b'y', 0x4000));
            chunk.extend_from_slice(b"\r\n");
            while c.write(&chunk) {}
        }
    });
    let (code, j) = run(&s.url("/"), &[]);
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["errors", "timeout"]), 1, "{}", j["errors"]);
    assert!(n(&j, &["bytes", "received"]) > 10 << 20);
}

#[test]
fn invalid_chunk_sizes_are_a_protocol_error() {
    let s = answering(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n.\r\n0\r\n\r\n");
    let (code, j) = run(&s.url("/"), &[]);
    assert_eq!(code, 1);
    assert!(n(&j, &["errors", "protocol"]) >= 1, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
}

/// A chunked 200 whose body is `$body`.
macro_rules! chunked_reply {
    ($body:literal) => {
        concat!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            $body
        )
        .as_bytes()
    };
}

/// `requests` requests, one at a time on one connection, to `url`.
fn run_n(url: &str, requests: &str) -> (i32, serde_json::Value) {
    let args = [
        "run",
        url,
        "-t",
        "1",
        "-c",
        "1",
        "-n",
        requests,
        "--timeout",
        "1s",
    ];
    let (code, j, _) = volley_json(&args, Duration::from_secs(20));
    assert_invariant(&j);
    (code, j)
}

#[test]
fn chunk_size_lines_outside_rfc_9112_are_a_protocol_error() {
    let cases: [(&'static [u8], &str); 4] = [
        (
            chunked_reply!("5 \r\nhello\r\n0\r\n\r\n"),
            "whitespace at the end of the chunk-size line",
        ),
        (
            chunked_reply!("5 ext\r\nhello\r\n0\r\n\r\n"),
            "chunk extension without ';'",
        ),
        (
            chunked_reply!("5;\r\nhello\r\n0\r\n\r\n"),
            "empty chunk extension name",
        ),
        (
            chunked_reply!("5;a=\"b\r\nhello\r\n0\r\n\r\n"),
            "line ended inside a quoted chunk extension value",
        ),
    ];
    for (reply, reason) in cases {
        let s = answering(reply);
        let (code, j) = run_n(&s.url("/"), "3");
        assert_eq!(code, 1, "{reason}: no response completed");
        assert_eq!(
            n(&j, &["errors", "protocol"]),
            3,
            "{reason}: {}",
            j["errors"]
        );
        assert_eq!(n(&j, &["requests", "errors"]), 3, "{reason}");
        assert_eq!(n(&j, &["requests", "completed"]), 0, "{reason}");
        let quoted = format!("(invalid chunked encoding: {reason})");
        assert!(
            j["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains(&quoted)),
            "{quoted} in {}",
            j["warnings"]
        );
    }
}

#[test]
fn chunk_extensions_of_rfc_9112_complete() {
    let s = answering(chunked_reply!(
        "5 ; a = \"x;y \\\" z\" ;b\t=\ttoken;c\r\nhello\r\n0005\r\nworld\r\n0 ;end\r\n\r\n"
    ));
    let (code, j) = run_n(&s.url("/"), "20");
    assert_eq!(code, 0);
    assert_eq!(n(&j, &["requests", "completed"]), 20, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["connections", "opened"]), 1, "kept alive");
}

#[test]
fn a_server_that_never_reads_times_out_the_write() {
    let s = spawn(|c, _| {
        // Accepts and holds the connection without reading a byte.
        std::thread::sleep(Duration::from_secs(5));
        drop(c);
    });
    // 8 MiB cannot fit into the socket buffers: the write itself stalls.
    let (code, j) = run(&s.url("/"), &["--body-size", "8MiB"]);
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["errors", "timeout"]), 1, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "sent"]), 1);
}

#[test]
fn a_half_close_before_the_response_is_closed() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            let _ = c.stream.shutdown(std::net::Shutdown::Write);
            std::thread::sleep(Duration::from_secs(3));
        }
    });
    let (code, j) = run(&s.url("/"), &[]);
    assert_eq!(code, 1);
    assert!(n(&j, &["errors", "closed"]) >= 1, "{}", j["errors"]);
}

#[test]
fn a_server_that_speaks_first_is_backed_off_not_flooded() {
    // Every connection gets a response before any request, then the server hangs up.
    let s = spawn(|mut c, _| {
        let _ = c.stream.write_all(OK);
        std::thread::sleep(Duration::from_millis(200));
    });
    // Open loop at a low rate keeps connections idle, so the early bytes arrive first.
    let (_code, j) = run(&s.url("/"), &["-R", "5", "-c", "4"]);
    let opened = n(&j, &["connections", "opened"]);
    let unsolicited = j["connections"]["unsolicited"].as_u64().unwrap_or(0);
    assert!(unsolicited >= 1, "{}", j["connections"]);
    // With a back-off growing to 100 ms, 4 slots open at most ~60 connections a second;
    // without one they would open thousands.
    assert!(opened < 200, "opened {opened} connections in 1 s");
    assert!(j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("before any request")));
}

#[test]
fn one_byte_a_second_times_out() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            for b in OK {
                if !c.write(&[*b]) {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let (code, j) = run(&s.url("/"), &[]);
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["errors", "timeout"]), 1, "{}", j["errors"]);
}

#[test]
fn full_or_closed_outputs_are_not_a_crash() {
    let s = normal();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", &s.url("/"), "-c", "1", "-d", "300ms"])
        .stdout(full())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(o.code(), Some(0), "the summary is lost, the run is not");
    // With --json - the result itself is the output: losing it is a failure (3), not a panic.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", &s.url("/"), "-c", "1", "-d", "300ms", "--json", "-"])
        .stdout(full())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(o.code(), Some(3));
}

#[test]
fn a_100_mib_body_is_built_once_not_per_connection() {
    // Reads and discards request bodies, answering each.
    let s = spawn(|mut c, _| c.answer_each(OK));
    let (code, j, stderr) = volley_json(
        &[
            "run",
            &s.url("/"),
            "-c",
            "4",
            "-t",
            "1",
            "-n",
            "8",
            "--body-size",
            "100MiB",
            "--timeout",
            "20s",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(n(&j, &["requests", "completed"]), 8);
    assert!(n(&j, &["bytes", "sent"]) >= 8 * (100 << 20));
    let rss = n(&j, &["client", "rss_max_bytes"]);
    // One serialized request of 100 MiB (plus the body it was built from), never one per
    // connection (that would be 400+ MiB).
    assert!(rss < 260 << 20, "volley peaked at {} MiB", rss >> 20);
    // Above the limit: a clear error naming the flag before anything is sent.
    let o = volley(
        &["run", &s.url("/"), "--body-size", "2GiB", "-d", "1s"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--body-size"));
}
