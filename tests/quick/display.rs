//! What the reports and the summary say, against real runs and saved results: each note said
//! once and true, counts formatted as in the summary, what a misbehaving server sent shown.

use crate::common;

use std::path::{Path, PathBuf};

use volley::report::{Format, Report};
use volley::result::Warning;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

#[test]
fn the_closed_loop_note_is_said_once_in_every_format() {
    let mut report = Report::load(&[fixture("quick/runs/rust__get__r1.json")]).unwrap();
    for c in &mut report.cells {
        if let Some(r) = c.result.as_mut() {
            r.warnings = vec![Warning::closed_loop()];
        }
    }
    for format in [Format::Terminal, Format::Markdown, Format::Html] {
        let text = format.reporter().render(&report);
        assert_eq!(
            text.matches("coordinated omission").count(),
            1,
            "{format:?}:\n{text}"
        );
        assert!(!text.contains("service time in closed loop"), "{format:?}");
    }
}

#[test]
fn ctrl_c_in_the_warm_up_says_how_long_it_ran() {
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let s = common::normal();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", &s.url("/"), "-c", "2", "-d", "5s", "--warmup", "5s"])
        .args(["--quiet", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The warm-up runs from volley's first request (however long it took to start).
    let spawned = std::time::Instant::now();
    while s.requests() == 0 && spawned.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (since_first, wall) = (
        first.elapsed().as_secs_f64(),
        spawned.elapsed().as_secs_f64(),
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(" s of 5 s, interrupted: "), "{stdout}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let ran = j["warmup"]["duration_s"].as_f64().unwrap();
    // From before the first request to the Ctrl-C (noticed within 100 ms): not 0, not 5 s.
    assert!(
        ran >= since_first - 0.05 && ran <= wall + 0.2,
        "warm-up ran {ran} s: {since_first} s after the first request, {wall} s after the start"
    );
    assert_eq!(j["load"]["warmup_s"], 5.0);
}

fn warnings_of(j: &serde_json::Value) -> Vec<String> {
    j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_server_that_closes_every_keep_alive_connection_is_pointed_out() {
    use std::time::Duration;
    // Like python's http.server: HTTP/1.0, one response per connection.
    let closing = common::spawn(|mut c, _| {
        if c.read_request() {
            c.write(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n.");
        }
    });
    let (_, j, _) = common::volley_json(
        &["run", &closing.url("/"), "-c", "2", "-n", "200"],
        Duration::from_secs(20),
    );
    let closes = warnings_of(&j)
        .into_iter()
        .filter(|w| w.contains("keep-alive was asked for"))
        .collect::<Vec<_>>();
    assert_eq!(closes.len(), 1, "{}", j["warnings"]);
    assert!(
        closes[0].starts_with("the server closed 200 connections for 200 responses"),
        "{}",
        closes[0]
    );
    // A keep-alive server, and a run that asked for a connection per request, get no such note.
    let normal = common::normal();
    for extra in [&[][..], &["--no-keepalive"][..]] {
        let url = if extra.is_empty() {
            normal.url("/")
        } else {
            closing.url("/")
        };
        let mut args = vec!["run", &url, "-c", "2", "-n", "200"];
        args.extend_from_slice(extra);
        let (_, j, _) = common::volley_json(&args, Duration::from_secs(20));
        assert!(
            !warnings_of(&j)
                .iter()
                .any(|w| w.contains("keep-alive was asked for")),
            "{args:?}: {}",
            j["warnings"]
        );
    }
}

/// The warnings that quote what the server sent.
fn samples(j: &serde_json::Value) -> Vec<String> {
    warnings_of(j)
        .into_iter()
        .filter(|w| w.starts_with("the server sent "))
        .collect()
}

#[test]
fn a_server_that_is_not_http_is_quoted_once() {
    use std::io::Write;
    use std::time::Duration;
    // An SSH server: its banner on accept, a complaint about what it read, then a close.
    let ssh = common::spawn(|mut c, _| {
        let _ = c
            .stream
            .write_all(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n");
        let mut buf = [0u8; 1024];
        let _ = std::io::Read::read(&mut c.stream, &mut buf);
        let _ = c
            .stream
            .write_all(b"Invalid SSH identification string.\r\n");
    });
    let (_, j, _) = common::volley_json(
        &["run", &ssh.url("/"), "-c", "2", "-d", "500ms"],
        Duration::from_secs(20),
    );
    let quoted = samples(&j);
    assert_eq!(quoted.len(), 1, "{}", j["warnings"]);
    // Whether the banner beat the request (sent first) or followed it (not a response), its
    // bytes are shown, escaped.
    assert!(
        quoted[0].contains(r#": "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"#),
        "{}",
        quoted[0]
    );
    if j["errors"]["protocol"].as_u64().unwrap() > 0 {
        assert!(
            quoted[0].starts_with(
                "the server sent what is not a valid HTTP response (malformed response head: "
            ),
            "{}",
            quoted[0]
        );
    }
    // A server that answers is not quoted.
    let normal = common::normal();
    let (_, j, _) = common::volley_json(
        &["run", &normal.url("/"), "-c", "2", "-n", "100"],
        Duration::from_secs(20),
    );
    assert!(samples(&j).is_empty(), "{}", j["warnings"]);
}

#[test]
fn bytes_sent_before_any_request_are_quoted() {
    use std::io::Write;
    use std::time::Duration;
    // A valid response before any request, then a hang-up: a request that races it gets it
    // as its answer, so the only thing to quote is what came unasked.
    let s = common::spawn(|mut c, _| {
        let _ = c.stream.write_all(common::OK);
        std::thread::sleep(Duration::from_millis(200));
    });
    let (_, j, _) = common::volley_json(
        &["run", &s.url("/"), "-R", "5", "-c", "4", "-d", "1s"],
        Duration::from_secs(20),
    );
    assert!(j["connections"]["unsolicited"].as_u64().unwrap_or(0) >= 1);
    assert_eq!(
        samples(&j),
        [
            r#"the server sent bytes before any request: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n.""#
        ],
        "{}",
        j["warnings"]
    );
}
