//! The HTTP/2 connection state machine (`engine::h2`) against a real server: nginx speaking
//! h2c with prior knowledge. Requests on several streams at once, responses and their ends
//! decoded, the server's SETTINGS honoured. Needs nginx (the reference servers' suite does).

use crate::common::nginx;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::engine::h2::conn::{Event, H2Conn};
use volley::engine::h2::request::header_block;

/// nginx on a free port with `listen … http2` (h2c), answering `.` to everything.
fn start(dir: &std::path::Path) -> (nginx::Nginx, u16) {
    let port = nginx::free_port();
    let server = format!(
        "server {{ listen 127.0.0.1:{port} http2; http2_max_concurrent_streams 8;\n\
         location / {{ return 200 '.'; }} }}"
    );
    (nginx::start(dir, &server, &[port]), port)
}

#[test]
fn streams_to_nginx_over_h2c_complete_with_their_status() {
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = start(dir.path());
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut c = H2Conn::new(
        Arc::from(&b""[..]),
        volley::engine::h2::conn::RECEIVE_WINDOW,
    );
    let block = header_block("GET", "http", &format!("127.0.0.1:{port}"), "/", &[], None);
    let (mut heads, mut ends, mut max) = (Vec::new(), 0, 0);
    for _ in 0..3 {
        c.open_stream(&block);
    }
    let mut buf = vec![0u8; 16_384];
    let deadline = Instant::now() + Duration::from_secs(10);
    while ends < 3 {
        assert!(
            Instant::now() < deadline,
            "responses: {heads:?}, {ends} ended"
        );
        s.write_all(&c.out).unwrap();
        c.out.clear();
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "nginx closed the connection");
        c.feed(&buf[..n], &mut |e| match e {
            Event::Head { status, .. } => heads.push(status),
            Event::End { .. } => ends += 1,
            Event::Settings { max_streams } => max = max_streams,
            _ => {}
        })
        .unwrap();
    }
    assert_eq!(heads, [200, 200, 200]);
    assert_eq!(max, 8, "the server's SETTINGS_MAX_CONCURRENT_STREAMS");
    assert_eq!(c.open_streams(), 0);
}

/// A workload over HTTP/2 (h2c with prior knowledge, 8 streams a connection): every request
/// opens its own stream with its own header block (the templated one encoded per request) and
/// body, and nginx's access log shows the mix exactly.
#[test]
fn a_requests_file_mix_goes_over_h2c_with_each_request_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let (nginx, port) = start(dir.path());
    let file = dir.path().join("mix.toml");
    std::fs::write(
        &file,
        "[[request]]\nname = \"a\"\npath = \"/a\"\nweight = 3\n\
         [[request]]\nname = \"b\"\npath = \"/b/{seq}\"\nweight = 1\n\
         [[request]]\nname = \"post\"\npath = \"/p\"\nbody = \"x{seq}\"\nweight = 1\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            &format!("http://127.0.0.1:{port}/"),
            "--h2c",
            "--streams",
            "8",
            "-c",
            "2",
            "-n",
            "1000",
            "--requests-file",
            file.to_str().unwrap(),
            "--json",
            "-",
            "-q",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["target"]["protocol"], "h2c");
    assert_eq!(j["requests"]["completed"], 1000, "{stderr}");
    assert_eq!(j["errors"]["protocol"], 0);
    // Named requests' own numbers.
    let ep = j["endpoints"].as_array().unwrap();
    let sent: Vec<u64> = ep
        .iter()
        .map(|e| e["requests"]["sent"].as_u64().unwrap())
        .collect();
    assert_eq!(sent, [600, 200, 200], "{ep:?}");
    // nginx saw each request as written: 3:1:1, every /b/{seq} distinct, POSTs with bodies.
    std::thread::sleep(Duration::from_millis(300));
    let log = std::fs::read_to_string(&nginx.access_log).unwrap();
    let count = |pat: &str| log.lines().filter(|l| l.contains(pat)).count();
    assert_eq!(count("\"GET /a HTTP/2.0\""), 600);
    assert_eq!(count("\"POST /p HTTP/2.0\""), 200);
    let mut bs: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split('"').nth(1))
        .filter(|r| r.starts_with("GET /b/"))
        .collect();
    assert_eq!(bs.len(), 200);
    bs.sort();
    bs.dedup();
    assert_eq!(
        bs.len(),
        200,
        "{{seq}} renders a different path per request"
    );
}
