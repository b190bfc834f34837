//! The engine against servers that misbehave: every case ends in a bounded time with the
//! right counters, the invariant holds, and server-side counts agree with volley's.

use crate::common;

use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(20);

fn u(j: &serde_json::Value, path: &str) -> u64 {
    let mut v = j;
    for k in path.split('.') {
        v = &v[k];
    }
    v.as_u64()
        .unwrap_or_else(|| panic!("{path} is not a number in {j}"))
}

#[test]
fn normal_server_counts_agree() {
    let s = normal();
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "4", "-d", "1s"], LIMIT);
    assert_eq!(code, 0);
    assert_invariant(&j);
    assert!(u(&j, "requests.completed") > 100);
    assert_eq!(u(&j, "errors.timeout") + u(&j, "requests.errors"), 0);
    assert_eq!(u(&j, "requests.unfinished"), 0);
    assert_eq!(
        s.requests(),
        u(&j, "requests.sent"),
        "server-side count = sent"
    );
    assert_eq!(u(&j, "status_codes.200"), u(&j, "requests.completed"));
    assert_eq!(u(&j, "connections.opened"), 4);
}

#[test]
fn request_count_mode_sends_exactly_n() {
    let s = normal();
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "3", "-n", "1000"], LIMIT);
    assert_eq!(code, 0);
    assert_eq!(u(&j, "requests.sent"), 1000);
    assert_eq!(u(&j, "requests.completed"), 1000);
    assert_eq!(s.requests(), 1000);
    // Open loop with -n sends requests 0..N-1.
    let s = normal();
    let (_, j, _) = volley_json(
        &["run", &s.url("/"), "-c", "3", "-n", "300", "-R", "1000"],
        LIMIT,
    );
    assert_eq!(u(&j, "requests.completed"), 300);
    assert_eq!(s.requests(), 300);
    let el = j["elapsed_s"].as_f64().unwrap();
    assert!(
        (0.25..1.5).contains(&el),
        "300 requests at 1000/s took {el} s"
    );
}

#[test]
fn warmup_is_excluded() {
    let s = normal();
    let (_, j, _) = volley_json(
        &[
            "run",
            &s.url("/"),
            "-c",
            "2",
            "-n",
            "200",
            "--warmup",
            "500ms",
        ],
        LIMIT,
    );
    assert_eq!(u(&j, "requests.completed"), 200);
    let warm = u(&j, "warmup.completed");
    assert!(warm > 0);
    assert_eq!(s.requests(), 200 + u(&j, "warmup.sent"));
}

#[test]
fn reset_mid_response() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
            std::thread::sleep(Duration::from_millis(5));
            c.reset();
        }
    });
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "2", "-d", "1s"], LIMIT);
    assert_eq!(code, 1, "no complete response at all");
    assert_invariant(&j);
    assert!(u(&j, "errors.reset") > 0, "{}", j["errors"]);
    assert_eq!(u(&j, "requests.completed"), 0);
    assert!(
        j["latency_us"]["p50"].is_null(),
        "empty histogram statistics are null"
    );
}

#[test]
fn garbage_bytes_are_protocol_errors() {
    let s = answering(
        b"SSH-2.0-OpenSSH_9.2

",
    );
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "2", "-d", "1s"], LIMIT);
    assert_eq!(code, 1);
    assert_invariant(&j);
    assert!(u(&j, "errors.protocol") > 0);
}

#[test]
fn never_answering_server_times_out() {
    let s = spawn(|mut c, _| while c.read_request() {});
    let (code, j, _) = volley_json(
        &[
            "run",
            &s.url("/"),
            "-c",
            "3",
            "-d",
            "1s",
            "--timeout",
            "300ms",
        ],
        LIMIT,
    );
    assert_eq!(code, 1);
    assert_invariant(&j);
    // Each connection times out about every 300 ms over the 1 s window, then its
    // replacement's request times out in the drain.
    let t = u(&j, "errors.timeout");
    assert!((6..=20).contains(&t), "timeouts {t}");
    assert_eq!(u(&j, "requests.unfinished"), 0, "timeouts end in the drain");
    let el = j["elapsed_s"].as_f64().unwrap();
    assert!(el <= 1.5, "elapsed {el}");
}

#[test]
fn slow_drip_completes_with_its_latency() {
    let s = spawn(|mut c, _| {
        while c.read_request() {
            for b in b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc" {
                if !c.write(&[*b]) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "1", "-n", "3"], LIMIT);
    assert_eq!(code, 0);
    assert_eq!(u(&j, "requests.completed"), 3);
    assert!(
        u(&j, "latency_us.min") >= 150_000,
        "42 bytes at 5 ms each: {}",
        j["latency_us"]
    );
}

#[test]
fn chunked_with_trailer_http10_and_100_continue() {
    let chunked = answering(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nX-Sum: 9\r\n\r\n");
    let (_, j, _) = volley_json(&["run", &chunked.url("/"), "-c", "2", "-n", "50"], LIMIT);
    assert_eq!(u(&j, "requests.completed"), 50);
    assert_eq!(u(&j, "requests.errors"), 0);

    let http10 = spawn(|mut c, _| {
        if c.read_request() {
            c.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nclose-delimited body");
        }
    });
    let (_, j, _) = volley_json(&["run", &http10.url("/"), "-c", "2", "-n", "50"], LIMIT);
    assert_eq!(u(&j, "requests.completed"), 50);
    assert_eq!(u(&j, "requests.errors"), 0);
    assert!(
        u(&j, "connections.opened") >= 50,
        "a new connection per response"
    );
    assert_eq!(http10.requests(), 50);

    let cont = answering(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    );
    let (_, j, _) = volley_json(
        &["run", &cont.url("/"), "-c", "2", "-n", "50", "--body", "x"],
        LIMIT,
    );
    assert_eq!(u(&j, "status_codes.201"), 50);
    assert!(
        j["status_codes"].get("100").is_none(),
        "interim responses are not counted"
    );
}

#[test]
fn connection_close_is_followed_not_an_error() {
    let s = spawn(|mut c, _| {
        if c.read_request() {
            c.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n.");
        }
    });
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "2", "-n", "100"], LIMIT);
    assert_eq!(code, 0);
    assert_eq!(u(&j, "requests.completed"), 100);
    assert_eq!(u(&j, "requests.errors"), 0);
    assert!(u(&j, "connections.closed_by_server") >= 98);
}

/// Answers `n` requests per connection, then reads the next one and closes without a byte.
fn silent_after(n: u64) -> TestServer {
    spawn(move |mut c, _| {
        for _ in 0..n {
            if !c.read_request() || !c.write(OK) {
                return;
            }
        }
        let _ = c.read_request();
    })
}

#[test]
fn silent_close_resends_idempotent_requests_once() {
    let s = silent_after(3);
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "2", "-n", "200"], LIMIT);
    assert_eq!(code, 0);
    assert_invariant(&j);
    assert_eq!(
        u(&j, "requests.completed"),
        200,
        "GET is resent after a silent close"
    );
    assert_eq!(u(&j, "requests.errors"), 0);
    assert!(u(&j, "connections.closed_by_server") >= 60);
    // The server read more requests than volley counts as sent: the resends.
    assert!(s.requests() > 200);
}

#[test]
fn silent_close_fails_non_idempotent_requests() {
    let s = silent_after(3);
    let (_, j, _) = volley_json(
        &[
            "run",
            &s.url("/"),
            "-c",
            "2",
            "-n",
            "200",
            "-m",
            "POST",
            "--body",
            "x",
        ],
        LIMIT,
    );
    assert_invariant(&j);
    assert!(
        u(&j, "errors.closed") > 0,
        "POST is not resent: {}",
        j["errors"]
    );
    assert_eq!(u(&j, "requests.completed") + u(&j, "errors.closed"), 200);
}

#[test]
fn a_server_that_closes_every_fresh_connection_counts_closed() {
    let s = spawn(|mut c, _| {
        let _ = c.read_request();
    });
    let (code, j, _) = volley_json(&["run", &s.url("/"), "-c", "2", "-d", "500ms"], LIMIT);
    assert_eq!(code, 1);
    assert_invariant(&j);
    assert!(u(&j, "errors.closed") > 0);
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let s = normal();
    let (code, j, _) = volley_json(
        &["run", &s.url("/"), "-c", "2", "-n", "100", "--no-keepalive"],
        LIMIT,
    );
    assert_eq!(code, 0);
    assert_eq!(u(&j, "requests.completed"), 100);
    assert_eq!(u(&j, "connections.opened"), 100);
    assert_eq!(
        u(&j, "connections.closed_by_server"),
        0,
        "we asked for the close"
    );
}

#[test]
fn pipelining_keeps_a_window_outstanding() {
    let s = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", s.addr);
    let (code, j, _) = volley_json(
        &["run", &url, "-c", "2", "-n", "2000", "--pipeline", "8"],
        LIMIT,
    );
    assert_eq!(code, 0);
    assert_eq!(u(&j, "requests.completed"), 2000);
    assert_eq!(s.requests.load(std::sync::atomic::Ordering::SeqCst), 2000);
}

#[test]
fn post_bodies_arrive_whole() {
    let s = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", s.addr);
    let (code, j, _) = volley_json(
        &["run", &url, "-c", "2", "-n", "100", "--body-size", "4KiB"],
        LIMIT,
    );
    assert_eq!(code, 0);
    assert_eq!(j["target"]["method"], "POST");
    assert_eq!(u(&j, "target.body_bytes"), 4096);
    assert_eq!(u(&j, "requests.completed"), 100);
    assert!(u(&j, "bytes.sent") >= 100 * 4096);
}

#[test]
fn localhost_uses_an_address_that_listens() {
    // Listen on the last address `localhost` resolves to, so that where it resolves to
    // several (127.0.0.1 and ::1), the first refuses and the fallback is exercised.
    let addrs: Vec<std::net::SocketAddr> =
        std::net::ToSocketAddrs::to_socket_addrs(&("localhost", 0))
            .unwrap()
            .collect();
    let last = *addrs.last().unwrap();
    let l = std::net::TcpListener::bind(last).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                ctx(s).answer_each(OK);
            });
        }
    });
    let (code, j, _) = volley_json(
        &[
            "run",
            &format!("http://localhost:{port}/"),
            "-c",
            "1",
            "-n",
            "10",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{j}");
    assert_eq!(
        j["target"]["addr"].as_str().unwrap(),
        std::net::SocketAddr::new(last.ip(), port).to_string()
    );
}

#[test]
fn refused_connections_end_requests_with_connect_errors() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, j, stderr) = volley_json(
        &[
            "run",
            &format!("http://127.0.0.1:{port}/"),
            "-c",
            "2",
            "-n",
            "20",
        ],
        LIMIT,
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("no response"), "{stderr}");
    assert_eq!(
        u(&j, "errors.connect"),
        20 + 2,
        "20 requests plus the 2 initial connects: {}",
        j["errors"]
    );
    assert_eq!(u(&j, "requests.sent"), 0);
    assert_invariant(&j);
}

#[test]
fn delayed_server_latency_includes_the_delay() {
    let s = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/delay?ms=20", s.addr);
    let (code, j, _) = volley_json(&["run", &url, "-c", "2", "-n", "20"], LIMIT);
    assert_eq!(code, 0);
    let p50 = u(&j, "latency_us.p50");
    assert!(
        (20_000..40_000).contains(&p50),
        "p50 {p50} µs for a 20 ms delay"
    );
    assert!(u(&j, "latency_us.min") >= 20_000);
}

#[test]
fn built_in_server_endpoints() {
    let s = volley::serve::spawn("127.0.0.1:0").unwrap();
    let get = |path: &str, extra: &[&str]| {
        let url = format!("http://{}{path}", s.addr);
        let mut args = vec!["run", url.as_str(), "-c", "1", "-n", "3"];
        args.extend_from_slice(extra);
        volley_json(&args, LIMIT).1
    };
    let j = get("/hello", &[]);
    assert_eq!(u(&j, "status_codes.200"), 3);
    let j = get("/bytes?n=100000", &[]);
    assert!(u(&j, "bytes.received") >= 300_000, "{}", j["bytes"]);
    let j = get("/nope", &[]);
    assert_eq!(u(&j, "status_codes.404"), 3);
    let j = get("/", &["-m", "HEAD"]);
    assert_eq!(u(&j, "status_codes.200"), 3);
    let j = get("/", &["-m", "DELETE"]);
    assert_eq!(u(&j, "status_codes.405"), 3);
}

#[test]
fn virtual_users_ramp_up_and_down_with_think_time() {
    let s = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", s.addr);
    let (code, j, _) = volley_json(
        &[
            "run",
            &url,
            "--stages",
            "1s:4,1s:4,1s:0",
            "--think-time",
            "50ms",
            "-t",
            "2",
        ],
        LIMIT,
    );
    assert_eq!(code, 0);
    assert_invariant(&j);
    assert_eq!(j["load"]["mode"], "ramp");
    assert_eq!(u(&j, "load.users"), 4);
    assert_eq!(
        u(&j, "connections.opened"),
        4,
        "each user holds one connection"
    );
    assert_eq!(u(&j, "requests.errors"), 0);
    let users: Vec<u64> = j["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["users"].as_u64().unwrap())
        .collect();
    assert!(users.contains(&4), "{users:?}");
    assert!(*users.last().unwrap() <= 1, "ramped down: {users:?}");
    // Four users thinking 50 ms between requests cannot exceed 4 × 20 per second.
    let peak = j["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["completed"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(peak <= 80, "peak {peak} req/s with think time");
    assert_eq!(
        s.requests.load(std::sync::atomic::Ordering::SeqCst),
        u(&j, "requests.sent")
    );
}

#[test]
fn users_without_spawn_rate_start_at_once() {
    let s = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", s.addr);
    let (code, j, _) = volley_json(&["run", &url, "--users", "6", "-d", "1s"], LIMIT);
    assert_eq!(code, 0);
    assert_eq!(j["timeseries"][0]["users"], 6);
    assert!(j["load"]["spawn_rate"].is_null());
}

#[test]
fn a_server_that_silently_closes_after_every_response_loses_no_request() {
    // Like a proxy that ends each forwarded exchange without `Connection: close`: every request
    // written after a response meets the close and goes again, on a new connection (where it
    // is the first request, which this server answers), never on another reused one.
    let s = silent_after(1);
    for _ in 0..3 {
        let args = ["run", &s.url("/"), "-c", "4", "-n", "500"];
        let (code, j, err) = volley_json(&args, LIMIT);
        assert_eq!(code, 0, "{err}");
        assert_invariant(&j);
        assert_eq!(u(&j, "requests.completed"), 500, "{}", j["errors"]);
        assert_eq!(u(&j, "requests.errors"), 0, "{}", j["errors"]);
    }
}
