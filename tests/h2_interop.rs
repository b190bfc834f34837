//! The HTTP/2 connection state machine (`engine::h2`) against a real server: nginx speaking
//! h2c with prior knowledge. Requests on several streams at once, responses and their ends
//! decoded, the server's SETTINGS honoured. Needs nginx (the reference servers' suite does).

#[path = "common/nginx.rs"]
mod nginx;

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
