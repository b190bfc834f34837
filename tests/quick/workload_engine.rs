//! A workload through the engine as a library (no requests file: the model is built by hand):
//! the server sees the weights exactly, each request with its own method, path, headers and
//! body; HEAD requests in a mix are parsed without a body; a sequence arrives in order on each
//! connection; named requests get their own numbers.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use volley::engine::{self, Route};
use volley::plan::workload::{Body, Checks, Entry, Order, Part, Template, Workload};
use volley::plan::{LoadSpec, Plan, Target};

use crate::common;

fn spec(addr: std::net::SocketAddr, w: Workload, requests: u64, pipeline: usize) -> LoadSpec {
    LoadSpec {
        threads: 2,
        duration: None,
        requests: Some(requests),
        seed: Some(7),
        headers: vec![("X-All".into(), "yes".into())],
        pipeline,
        timeout: Duration::from_secs(5),
        workload: Some(Arc::new(w)),
        ..LoadSpec::closed_loop(Target::http(addr, "/"), 4, Duration::ZERO)
    }
}

fn entry(method: &str, path: Template, weight: u64, endpoint: Option<u16>, body: Body) -> Entry {
    Entry {
        endpoint,
        method: method.into(),
        path,
        headers: Vec::new(),
        body,
        weight,
        checks: Checks::default(),
        step: Default::default(),
    }
}

fn workload(entries: Vec<Entry>, order: Order, names: &[&str]) -> Workload {
    let mut w = Workload {
        entries,
        order,
        endpoints: names.iter().map(|s| s.to_string()).collect(),
        other: None,
        data: None,
        cycle: Vec::new(),
        hash: "test".into(),
        source: "test".into(),
        files: Vec::new(),
        journey: Default::default(),
    };
    w.build_cycle();
    w
}

fn run(spec: &LoadSpec, addr: std::net::SocketAddr) -> engine::EngineOutput {
    engine::run(
        spec,
        Plan::new(spec, 7),
        Route::tcp(addr, spec.io).unwrap(),
        &AtomicUsize::new(0),
        &mut engine::Observers(vec![]),
    )
    .unwrap()
}

#[test]
fn the_server_sees_the_weights_and_each_request_as_written() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let w = workload(
        vec![
            entry("GET", Template::literal("/hello"), 80, Some(0), Body::None),
            entry(
                "POST",
                Template::literal("/"),
                15,
                Some(1),
                Body::Template(Template {
                    parts: vec![Part::Lit(b"order-".to_vec()), Part::Seq],
                }),
            ),
            // HEAD in the middle of keep-alive and pipelined requests: its response has no
            // body, the next one's bytes follow at once.
            entry(
                "HEAD",
                Template::literal("/bytes?n=1000"),
                5,
                None,
                Body::None,
            ),
        ],
        Order::Weighted,
        &["hello", "order"],
    );
    for pipeline in [1, 8] {
        let before = server.paths.totals();
        let spec = spec(server.addr, w.clone(), 20_000, pipeline);
        let out = run(&spec, server.addr);
        let c = &out.agg.counts;
        assert_eq!(c.errors.total(), 0, "pipeline {pipeline}: {:?}", c.errors);
        assert_eq!(c.completed, 20_000);
        let after = server.paths.totals();
        let got =
            |k: &str| after.get(k).copied().unwrap_or(0) - before.get(k).copied().unwrap_or(0);
        // Exactly the weights: 20,000 requests are 200 whole cycles of 100.
        assert_eq!(got("GET /hello"), 16_000, "{after:?}");
        assert_eq!(got("POST /"), 3_000, "{after:?}");
        assert_eq!(got("HEAD /bytes"), 1_000, "{after:?}");
        // Named requests have their own numbers; the HEAD is in the whole only.
        let mut ep = volley::stats::endpoints::Endpoints::default();
        for e in &out.ends {
            ep.merge(&e.endpoints);
        }
        let hello = ep.stats[0].as_ref().unwrap();
        let order = ep.stats[1].as_ref().unwrap();
        assert_eq!(
            (hello.counts.sent, hello.counts.completed),
            (16_000, 16_000)
        );
        assert_eq!((order.counts.sent, order.counts.completed), (3_000, 3_000));
        assert_eq!(hello.latency.len(), 16_000);
        assert_eq!(order.counts.status[200], 3_000);
        assert_eq!(ep.stats.len(), 2);
    }
}

#[test]
fn a_sequence_arrives_in_order_on_every_connection() {
    // A server that records, per connection, the paths in the order they arrive.
    let seen: Arc<std::sync::Mutex<Vec<Vec<String>>>> = Default::default();
    let log = Arc::clone(&seen);
    let server = common::spawn(move |mut c, _| {
        let mut mine = Vec::new();
        while let Some(path) = c.read_request_path() {
            mine.push(path);
            if !c.write(common::OK) {
                break;
            }
        }
        log.lock().unwrap().push(mine);
    });
    let addr: std::net::SocketAddr = server
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let w = workload(
        vec![
            entry("GET", Template::literal("/login"), 0, Some(0), Body::None),
            entry(
                "GET",
                Template {
                    parts: vec![Part::Lit(b"/browse?c=".to_vec()), Part::Conn],
                },
                0,
                Some(1),
                Body::None,
            ),
            entry("GET", Template::literal("/logout"), 0, Some(2), Body::None),
        ],
        Order::Sequence,
        &["login", "browse", "logout"],
    );
    let spec = spec(addr, w, 600, 1);
    let out = run(&spec, addr);
    assert_eq!(out.agg.counts.completed, 600);
    drop(server);
    std::thread::sleep(Duration::from_millis(200));
    let seen = seen.lock().unwrap();
    let mut per_conn: BTreeMap<String, usize> = BTreeMap::new();
    for conn in seen.iter().filter(|c| !c.is_empty()) {
        for (k, p) in conn.iter().enumerate() {
            let want = ["/login", "/browse", "/logout"][k % 3];
            assert!(
                p.starts_with(want),
                "request {k} of a connection was {p}: {conn:?}"
            );
        }
        // {conn} is the same on every request of one connection.
        let browse: Vec<&String> = conn.iter().filter(|p| p.starts_with("/browse")).collect();
        assert!(browse.windows(2).all(|w| w[0] == w[1]), "{browse:?}");
        *per_conn.entry(browse[0].clone()).or_insert(0) += 1;
    }
    assert_eq!(
        per_conn.len(),
        4,
        "four connections, four {{conn}} values: {per_conn:?}"
    );
}

#[test]
fn a_check_that_fails_on_every_tenth_response_is_counted_exactly() {
    // Every 10th response (by the server's own count) says "bad" instead of "ok", chunked
    // every other time so the body check crosses chunk framing too.
    let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = Arc::clone(&n);
    let server = common::spawn(move |mut c, _| {
        while c.read_request() {
            let k = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let word = if k.is_multiple_of(10) { "bad" } else { "ok!" };
            let reply = if k.is_multiple_of(2) {
                format!("HTTP/1.1 200 OK\r\nX-Id: {k}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n1\r\n{}\r\n0\r\n\r\n", &word[..2], &word[2..])
            } else {
                format!("HTTP/1.1 200 OK\r\nX-Id: {k}\r\nContent-Length: 3\r\n\r\n{word}")
            };
            if !c.write(reply.as_bytes()) {
                return;
            }
        }
    });
    let addr: std::net::SocketAddr = server
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let w = workload(
        vec![entry("GET", Template::literal("/"), 1, Some(0), Body::None)],
        Order::Weighted,
        &["root"],
    );
    let mut spec = spec(addr, w, 2_000, 4);
    let checks = Checks {
        status: vec![(200, 200)],
        body_contains: vec![b"ok".to_vec()],
        headers: vec![("x-id".into(), None)],
        ..Default::default()
    };
    // The workload's entries carry the checks (the command line's merged into each).
    let mut wl = (**spec.workload.as_ref().unwrap()).clone();
    wl.entries[0].checks = checks.clone();
    spec.workload = Some(Arc::new(wl));
    let out = run(&spec, addr);
    let c = &out.agg.counts;
    assert_eq!(c.completed, 2_000);
    assert_eq!(c.errors.total(), 0);
    // body_contains is index 1 of CHECK_NAMES; nothing else failed.
    assert_eq!(c.checks, [0, 200, 0, 0, 0, 0, 0, 0], "{:?}", c.checks);
    assert_eq!(c.failed_checks_only, 200);
    let mut ep = volley::stats::endpoints::Endpoints::default();
    for e in &out.ends {
        ep.merge(&e.endpoints);
    }
    let root = ep.stats[0].as_ref().unwrap();
    assert_eq!(root.failed, 200);
    assert_eq!(root.checks_failed, vec![("body_contains", 200)]);
    // A failed check is a complete response: its latency is in the histogram.
    assert_eq!(root.latency.len(), 2_000);

    // The same checks on a run of one request (no requests file).
    let mut single = spec.clone();
    single.workload = None;
    single.checks = checks;
    let out = run(&single, addr);
    assert_eq!(out.agg.counts.checks[1], 200);
}
