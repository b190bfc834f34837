//! Request mixes end to end: the real `volley` binary with `--requests-file`, `--expect-*` and
//! `--verify` against in-process servers (`volley::serve` and recording servers below), checking
//! what the server received and what the RunResult says (docs/contract.md, "Workloads").
//!
//! Runs are short (`-n` where possible) so the whole file stays well under a minute in a debug
//! build.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use volley::stats::histogram::{decode, sum, Hist};

use common::{output_text, read_request, scratch, volley, volley_json, Seen};

const LIMIT: Duration = Duration::from_secs(60);

// ------------------------------------------------------------------------------------ helpers

/// A folder of this test process for `name`'s files.
fn dir(name: &str) -> PathBuf {
    scratch("workloads", name)
}

/// Writes `text` to `dir/name` and returns its path as a string.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `GET /_volley/counts` of a `volley serve`: requests answered by `METHOD path`.
fn counts(addr: SocketAddr) -> BTreeMap<String, u64> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /_volley/counts HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap()
}

fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr}: {:?}", v.pointer(ptr)))
}

fn hist(v: &Value, key: &str) -> Hist {
    decode(
        v[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {:?}", v[key])),
    )
    .unwrap()
}

/// The endpoint of `name` in a RunResult.
fn endpoint<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["endpoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no endpoints: {r:#}"))
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no endpoint {name}: {:#}", r["endpoints"]))
}

/// A run that must succeed: its RunResult.
fn run_ok(args: &[&str]) -> Value {
    run_exits(0, args)
}

/// A run without errors that must exit `code`: its RunResult.
fn run_exits(code: i32, args: &[&str]) -> Value {
    let (got, json, stderr) = volley_json(args, LIMIT);
    assert_eq!(got, code, "volley {args:?}\n{stderr}");
    assert_eq!(
        u(&json, "/requests/errors"),
        0,
        "{args:?}: {:#}",
        json["errors"]
    );
    common::assert_invariant(&json);
    json
}

type Reply = dyn Fn(&Seen, u64) -> Vec<u8> + Send + Sync;

/// One connection's requests, in order.
type Connection = Arc<Mutex<Vec<Seen>>>;

/// A server that records every request (method, target, headers, body) per connection, in
/// the order they arrived, before answering it with `reply(request, n)` (`n`: 1-based count
/// over all connections).
struct Recorder {
    addr: SocketAddr,
    conns: Arc<Mutex<Vec<Connection>>>,
}

const EMPTY_OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

impl Recorder {
    fn start(reply: impl Fn(&Seen, u64) -> Vec<u8> + Send + Sync + 'static) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let conns: Arc<Mutex<Vec<Connection>>> = Default::default();
        let registry = Arc::clone(&conns);
        let reply: Arc<Reply> = Arc::new(reply);
        let n = Arc::new(AtomicU64::new(0));
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(stream) = s else { continue };
                let _ = stream.set_nodelay(true);
                let mine: Connection = Default::default();
                registry.lock().unwrap().push(Arc::clone(&mine));
                let (reply, n) = (Arc::clone(&reply), Arc::clone(&n));
                std::thread::spawn(move || {
                    let mut w = stream.try_clone().unwrap();
                    let mut r = BufReader::new(stream);
                    while let Some(seen) = read_request(&mut r) {
                        let k = n.fetch_add(1, Ordering::SeqCst) + 1;
                        let bytes = reply(&seen, k);
                        mine.lock().unwrap().push(seen);
                        if w.write_all(&bytes).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Recorder { addr, conns }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// What each connection received, in order (connections without a request left out).
    fn per_connection(&self) -> Vec<Vec<Seen>> {
        self.conns
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.lock().unwrap().clone())
            .filter(|c| !c.is_empty())
            .collect()
    }

    fn all(&self) -> Vec<Seen> {
        self.per_connection().into_iter().flatten().collect()
    }
}

/// Exit 2 with `needles` in the message, no panic, nothing sent.
fn refused(args: &[&str], needles: &[&str]) {
    let out = volley(args, LIMIT);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "volley {args:?}\n{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{text}");
    for n in needles {
        assert!(stderr.contains(n), "volley {args:?}: no `{n}` in\n{stderr}");
    }
}

// -------------------------------------------------------------------------- the mix's shares

/// 80 / 15 / 5: two named reads, one of them templated, and a POST.
const MIX: &str = r#"
[[request]]
name = "hello"
path = "/hello"
weight = 80

[[request]]
name = "bytes"
path = "/bytes?n={rand:1..64}"
weight = 15
expect_status = 200

[[request]]
name = "post"
path = "/"
body = "order {seq}"
weight = 5
"#;

/// What a `volley serve` answered since `before`, by `METHOD path`.
fn since(addr: SocketAddr, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    counts(addr)
        .into_iter()
        .map(|(k, v)| {
            let was = before.get(&k).copied().unwrap_or(0);
            (k, v - was)
        })
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// The three shares at the server are the weights, within 1 % of the run's requests, and the
/// run's endpoints say the same. Returns whether they were exact.
fn assert_shares(label: &str, got: &BTreeMap<String, u64>, r: &Value) -> bool {
    let total: u64 = got.values().sum();
    assert_eq!(
        total,
        u(r, "/requests/completed"),
        "{label}: the server answered what the client completed: {got:?}"
    );
    let mut exact = true;
    for (key, name, weight) in [
        ("GET /hello", "hello", 80),
        ("GET /bytes", "bytes", 15),
        ("POST /", "post", 5),
    ] {
        let n = got.get(key).copied().unwrap_or(0);
        let want = total * weight / 100;
        assert!(
            n.abs_diff(want) * 100 <= total,
            "{label}: {key} {n}, want {want} (±1 % of {total}): {got:?}"
        );
        exact &= n == want && total.is_multiple_of(100);
        let e = endpoint(r, name);
        assert_eq!(u(e, "/requests/completed"), n, "{label}: endpoint {name}");
        assert_eq!(
            hist(e, "latency_hdr").len(),
            n,
            "{label}: {name}'s histogram"
        );
    }
    assert_eq!(got.len(), 3, "{label}: nothing else: {got:?}");
    // Every request is named: the endpoints' histograms are the run's, split.
    let parts: Vec<Hist> = ["hello", "bytes", "post"]
        .iter()
        .map(|n| hist(endpoint(r, n), "latency_hdr"))
        .collect();
    assert_same_hist(
        &sum(&parts),
        &hist(r, "latency_hdr"),
        &format!("{label}: the endpoints' latencies add up to the run's"),
    );
    exact
}

#[test]
fn the_server_sees_the_weights_closed_open_and_pipelined() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let d = dir("shares");
    let mix = write(&d, "mix.toml", MIX);
    for (label, extra) in [
        ("closed loop", &["-n", "100000", "-c", "8", "-t", "2"][..]),
        (
            "pipeline 8",
            &["-n", "100000", "-c", "4", "-t", "2", "--pipeline", "8"][..],
        ),
        (
            "open loop",
            &["-n", "10000", "-R", "10000", "-c", "8", "-t", "2"][..],
        ),
    ] {
        let before = counts(server.addr);
        let mut args = vec!["run", url.as_str(), "--requests-file", mix.as_str()];
        args.extend_from_slice(extra);
        let r = run_ok(&args);
        assert_eq!(
            u(&r, "/requests/completed"),
            extra[1].parse::<u64>().unwrap(),
            "{label}"
        );
        let got = since(server.addr, &before);
        assert_eq!(u(&r, "/requests/failed"), 0, "{label}");
        assert_eq!(r["endpoints"].as_array().unwrap().len(), 3, "{label}");
        let exact = assert_shares(label, &got, &r);
        assert!(exact, "{label}: not exactly 80/15/5: {got:?}");
    }
}

/// `a` and `b` hold the same values the same number of times (whatever bounds each was made
/// with); a difference names the first value whose count differs.
fn assert_same_hist(a: &Hist, b: &Hist, what: &str) {
    let recorded = |h: &Hist| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    let (ra, rb) = (recorded(a), recorded(b));
    if let Some(k) = (0..ra.len().max(rb.len())).find(|&k| ra.get(k) != rb.get(k)) {
        panic!(
            "{what}: {} values (min {}, max {}) vs {} (min {}, max {}); first difference at {:?} vs {:?}",
            a.len(),
            a.min(),
            a.max(),
            b.len(),
            b.min(),
            b.max(),
            ra.get(k),
            rb.get(k)
        );
    }
}

#[test]
fn each_endpoint_has_its_own_latencies_and_together_they_are_the_whole() {
    // A slow request (3 ms at the server) beside a fast one: the slow one's latencies are all
    // 3 ms or more, and when every request is named, the endpoints' histograms add up to the
    // run's own, bucket by bucket.
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let d = dir("latency");
    let file = write(
        &d,
        "slow.toml",
        "[[request]]\nname = \"fast\"\npath = \"/\"\nweight = 3\n\n[[request]]\nname = \"slow\"\npath = \"/delay?ms=3\"\nweight = 1\n",
    );
    let r = run_ok(&[
        "run",
        &url,
        "--requests-file",
        &file,
        "-n",
        "400",
        "-c",
        "4",
        "-t",
        "2",
    ]);
    let (fast, slow) = (endpoint(&r, "fast"), endpoint(&r, "slow"));
    assert_eq!(u(slow, "/requests/completed"), 100);
    assert_eq!(u(fast, "/requests/completed"), 300);
    for key in ["latency_hdr", "service_time_hdr"] {
        let h = hist(slow, key);
        assert_eq!(h.len(), 100);
        assert!(
            h.min() >= 3000,
            "slow {key}: min {} µs, below the server's 3 ms",
            h.min()
        );
        assert!(u(slow, "/latency_us/p50") >= 3000, "{slow:#}");
        let whole = hist(&r, key);
        let parts = sum([&hist(fast, key), &h]);
        assert_same_hist(
            &parts,
            &whole,
            &format!("{key}: the endpoints add up to the run"),
        );
    }
}

// --------------------------------------------------------------------------------- sequences

#[test]
fn a_sequence_arrives_in_order_on_every_connection() {
    let server = Recorder::start(|_, _| EMPTY_OK.to_vec());
    let d = dir("sequence");
    let file = write(
        &d,
        "journey.toml",
        r#"
[[request]]
name = "login"
method = "POST"
path = "/login"
body = "user={user}"
sequence = 1

[[request]]
name = "browse"
path = "/browse?c={conn}"
sequence = 2

[[request]]
name = "logout"
path = "/logout"
sequence = 3
"#,
    );
    let r = run_ok(&[
        "run",
        &server.url(),
        "--requests-file",
        &file,
        "-n",
        "900",
        "-c",
        "6",
        "-t",
        "3",
    ]);
    assert_eq!(u(&r, "/requests/completed"), 900);
    let conns = server.per_connection();
    assert_eq!(conns.len(), 6, "six connections");
    let mut conn_numbers = std::collections::BTreeSet::new();
    for c in &conns {
        for (k, s) in c.iter().enumerate() {
            let want = ["/login", "/browse", "/logout"][k % 3];
            assert!(
                s.target.starts_with(want),
                "request {k} of a connection was {} {}: {:?}",
                s.method,
                s.target,
                c.iter().map(|s| &s.target).collect::<Vec<_>>()
            );
        }
        // {conn} is one number per connection, {user} the same one without --users. A
        // connection that a busy machine let take only its login has no browse to compare.
        let browse: std::collections::BTreeSet<&str> = c
            .iter()
            .filter(|s| s.target.starts_with("/browse"))
            .map(|s| s.target.as_str())
            .collect();
        if browse.is_empty() {
            assert_eq!(c.len(), 1, "a walk without its browse: {c:?}");
            continue;
        }
        assert_eq!(browse.len(), 1, "{browse:?}");
        let n = browse.first().unwrap().trim_start_matches("/browse?c=");
        assert_eq!(c[0].body, format!("user={n}").as_bytes());
        assert_eq!(c[0].method, "POST");
        conn_numbers.insert(n.to_string());
    }
    // Every connection that browsed had a number of its own.
    let browsed = conns
        .iter()
        .filter(|c| c.iter().any(|s| s.target.starts_with("/browse")))
        .count();
    assert!(browsed >= 3, "{browsed} of 6 connections browsed");
    assert_eq!(conn_numbers.len(), browsed, "{conn_numbers:?}");
    // Each connection stops where the run's 900 requests ran out: at most one walk each
    // unfinished.
    let n: Vec<u64> = ["login", "browse", "logout"]
        .iter()
        .map(|name| u(endpoint(&r, name), "/requests/completed"))
        .collect();
    assert_eq!(n.iter().sum::<u64>(), 900);
    assert!(n[0] >= n[1] && n[1] >= n[2] && n[0] - n[2] <= 6, "{n:?}");
}

// -------------------------------------------------------------------------- vegeta's targets

/// The examples of vegeta's README ("HTTP format": simple targets, custom headers, custom
/// bodies, bodies and headers, comments), `goku:9090` rewritten to the test server and the
/// body files' absolute paths to this test's folder.
const VEGETA: &str = "\
# Simple targets
GET http://goku:9090/path/to/dragon?item=ball
GET http://user:password@goku:9090/path/to
HEAD http://goku:9090/path/to/success

# Targets with custom headers
GET http://user:password@goku:9090/path/to
X-Account-ID: 8675309

DELETE http://goku:9090/path/to/remove
Confirmation-Token: 90215
Authorization: Token DEADBEEF

# Targets with custom bodies
POST http://goku:9090/things
@/path/to/newthing.json

PATCH http://goku:9090/thing/71988591
@/path/to/thing-71988591.json

# Targets with custom bodies and headers
POST http://goku:9090/things
X-Account-ID: 99
@/path/to/newthing.json

# Add comments to the targets
# get a dragon ball
GET http://goku:9090/path/to/dragon?item=ball
# specify a test account
X-Account-ID: 99
";

#[test]
fn vegeta_targets_from_its_readme_arrive_as_written() {
    let server = Recorder::start(|_, _| EMPTY_OK.to_vec());
    let d = dir("vegeta");
    let newthing = r#"{"name": "newthing", "power": 9001}"#;
    let thing = r#"{"id": 71988591, "name": "thing"}"#;
    write(&d, "newthing.json", newthing);
    write(&d, "thing-71988591.json", thing);
    let text = VEGETA
        .replace("goku:9090", &server.addr.to_string())
        .replace("@/path/to/", &format!("@{}/", d.display()));
    let file = write(&d, "targets.txt", &text);
    // One connection: nine targets of weight 1 twice over, in the file's order.
    let r = run_ok(&[
        "run",
        &server.url(),
        "--requests-file",
        &file,
        "-n",
        "18",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(
        r["target"]["requests_file"]["requests"], 9,
        "{:#}",
        r["target"]
    );
    // vegeta's targets cannot be named: each is named by its method and path, query included.
    let named: Vec<(&str, u64)> = r["endpoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no endpoints: {r:#}"))
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), u(e, "/requests/sent")))
        .collect();
    assert_eq!(
        named,
        [
            ("GET /path/to/dragon?item=ball", 4),
            ("GET /path/to", 4),
            ("HEAD /path/to/success", 2),
            ("DELETE /path/to/remove", 2),
            ("POST /things", 4),
            ("PATCH /thing/71988591", 2),
        ]
    );
    let basic = "Basic dXNlcjpwYXNzd29yZA=="; // user:password
                                              // (method, target, headers, body) of each target, in the file's order.
    type Target<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, &'a str);
    let want: Vec<Target> = vec![
        ("GET", "/path/to/dragon?item=ball", vec![], ""),
        ("GET", "/path/to", vec![("authorization", basic)], ""),
        ("HEAD", "/path/to/success", vec![], ""),
        (
            "GET",
            "/path/to",
            vec![("x-account-id", "8675309"), ("authorization", basic)],
            "",
        ),
        (
            "DELETE",
            "/path/to/remove",
            vec![
                ("confirmation-token", "90215"),
                ("authorization", "Token DEADBEEF"),
            ],
            "",
        ),
        ("POST", "/things", vec![], newthing),
        ("PATCH", "/thing/71988591", vec![], thing),
        ("POST", "/things", vec![("x-account-id", "99")], newthing),
        (
            "GET",
            "/path/to/dragon?item=ball",
            vec![("x-account-id", "99")],
            "",
        ),
    ];
    let conns = server.per_connection();
    assert_eq!(conns.len(), 1);
    let seen = &conns[0];
    assert_eq!(seen.len(), 18);
    for (k, s) in seen.iter().enumerate() {
        let (method, target, headers, body) = &want[k % 9];
        let at = format!("request {k}: {s:?}");
        assert_eq!(&s.method, method, "{at}");
        assert_eq!(&s.target, target, "{at}");
        assert_eq!(s.body, body.as_bytes(), "{at}");
        for (n, v) in headers {
            assert_eq!(s.header(n), Some(*v), "{at}: {n}");
        }
        // Nothing else of the README leaked in: no Authorization where none was written.
        if !headers.iter().any(|(n, _)| *n == "authorization") {
            assert_eq!(s.header("authorization"), None, "{at}");
        }
        if !headers.iter().any(|(n, _)| *n == "x-account-id") {
            assert_eq!(s.header("x-account-id"), None, "{at}");
        }
        assert_eq!(s.header("host"), Some(server.addr.to_string().as_str()));
    }
}

// ----------------------------------------------------------------------------- CSV-driven

const USERS: &str = "\
id,email
1,ada@example.com
2,\"grace,hopper@example.com\"
3,alan@example.com
4,edsger@example.com
5,barbara@example.com
6,ken@example.com
7,dennis@example.com
";

fn users() -> Vec<(String, String)> {
    let mut r = csv::Reader::from_reader(USERS.as_bytes());
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            (rec[0].to_string(), rec[1].to_string())
        })
        .collect()
}

fn csv_mix(order: &str) -> String {
    format!(
        r#"
[data]
file = "users.csv"
order = "{order}"

[[request]]
name = "user"
path = "/users/{{row.id}}"
headers = {{ X-Email = "{{row.email}}" }}
"#
    )
}

/// (id, email) of each request the server saw, checking the two came from one row.
fn rows_seen(seen: &[Seen]) -> Vec<(String, String)> {
    seen.iter()
        .map(|s| {
            let id = s.target.strip_prefix("/users/").unwrap().to_string();
            let email = s.header("x-email").unwrap().to_string();
            (id, email)
        })
        .collect()
}

#[test]
fn csv_rows_fill_a_path_and_a_header_in_order_or_at_random() {
    let server = Recorder::start(|_, _| EMPTY_OK.to_vec());
    let d = dir("csv");
    write(&d, "users.csv", USERS);
    let rows = users();
    assert_eq!(rows[1].1, "grace,hopper@example.com", "a quoted value");
    let sequential = write(&d, "sequential.toml", &csv_mix("sequential"));
    let url = server.url();

    // One connection: the rows in the file's order, twice.
    run_ok(&[
        "run",
        &url,
        "--requests-file",
        &sequential,
        "-n",
        "14",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    let once = rows_seen(&server.all());
    let twice: Vec<_> = rows.iter().chain(rows.iter()).cloned().collect();
    assert_eq!(once, twice);

    // Several connections and threads: over whole passes every row exactly as often.
    let before = server.all().len();
    run_ok(&[
        "run",
        &url,
        "--requests-file",
        &sequential,
        "-n",
        "700",
        "-c",
        "4",
        "-t",
        "2",
    ]);
    let seen = server.all();
    let mut got = rows_seen(&seen[before..]);
    got.sort();
    let mut want: Vec<_> = (0..100).flat_map(|_| rows.iter().cloned()).collect();
    want.sort();
    assert_eq!(got.len(), 700);
    assert!(got == want, "each row 100 times");

    // Random: every row turns up, and id and email still come from one row.
    let random = write(&d, "random.toml", &csv_mix("random"));
    let before = server.all().len();
    run_ok(&[
        "run",
        &url,
        "--requests-file",
        &random,
        "-n",
        "700",
        "-c",
        "4",
        "-t",
        "2",
    ]);
    let seen = server.all();
    let got = rows_seen(&seen[before..]);
    let mut by_row: BTreeMap<(String, String), u64> = BTreeMap::new();
    for pair in got {
        assert!(rows.contains(&pair), "{pair:?} is not a row of the file");
        *by_row.entry(pair).or_default() += 1;
    }
    assert_eq!(by_row.len(), rows.len(), "every row drawn: {by_row:?}");
    assert!(
        by_row.values().any(|&n| n != 100),
        "random, not the sequential rotation: {by_row:?}"
    );
}

// ---------------------------------------------------------------------------------- checks

/// Every 10th response (by the server's count) says `bad` instead of `ok!`.
fn every_tenth_bad(_: &Seen, n: u64) -> Vec<u8> {
    let word = if n.is_multiple_of(10) { "bad" } else { "ok!" };
    format!("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{word}").into_bytes()
}

/// The only threshold of a RunResult.
fn only_threshold(r: &Value) -> &Value {
    let t = r["thresholds"]
        .as_array()
        .unwrap_or_else(|| panic!("no thresholds: {r:#}"));
    assert_eq!(t.len(), 1, "{t:#?}");
    &t[0]
}

#[test]
fn a_check_failing_every_tenth_response_is_counted_exactly() {
    let d = dir("checks");
    // The flag, on a single URL: 10 % failed, above the 1 % the checks imply.
    let server = Recorder::start(every_tenth_bad);
    let r = run_exits(
        1,
        &[
            "run",
            &server.url(),
            "-n",
            "1000",
            "-c",
            "4",
            "-t",
            "2",
            "--expect-body-contains",
            "ok",
        ],
    );
    assert_eq!(u(&r, "/requests/completed"), 1000);
    assert_eq!(u(&r, "/requests/failed"), 100, "{:#}", r["requests"]);
    assert_eq!(u(&r, "/requests/failed_checks"), 100, "{:#}", r["requests"]);
    let t = only_threshold(&r);
    assert_eq!(
        (&t["threshold"], &t["actual"], &t["pass"], &t["implied"]),
        (
            &"checks<=1%".into(),
            &10.0.into(),
            &false.into(),
            &true.into()
        ),
        "{t:#}"
    );
    assert_eq!(u(&r, "/checks/body_contains"), 100, "{:#}", r["checks"]);
    for other in ["status", "body_regex", "header", "size"] {
        assert_eq!(
            r["checks"][other].as_u64().unwrap_or(0),
            0,
            "{:#}",
            r["checks"]
        );
    }
    assert_eq!(u(&r, "/status_codes/200"), 1000);
    assert_eq!(hist(&r, "latency_hdr").len(), 1000, "every response timed");
    assert_eq!(hist(&r, "service_time_hdr").len(), 1000);

    // A request's own check in a requests file: the same count, at the top and in its
    // endpoint.
    let server = Recorder::start(every_tenth_bad);
    let file = write(
        &d,
        "checked.toml",
        "[[request]]\nname = \"ok\"\npath = \"/ok\"\nexpect_body_contains = \"ok\"\nexpect_status = 200\n",
    );
    let r = run_ok(&[
        "run",
        &server.url(),
        "--requests-file",
        &file,
        "-n",
        "1000",
        "-c",
        "4",
        "-t",
        "2",
        "--threshold",
        "checks<50%",
    ]);
    assert_eq!(u(&r, "/requests/failed"), 100, "{:#}", r["requests"]);
    let t = only_threshold(&r);
    assert_eq!(t["threshold"], "checks<50%", "the user's bound, no other");
    assert!(t["pass"] == true && t.get("implied").is_none(), "{t:#}");
    assert_eq!(u(&r, "/checks/body_contains"), 100, "{:#}", r["checks"]);
    let e = endpoint(&r, "ok");
    assert_eq!(u(e, "/requests/failed"), 100, "{e:#}");
    assert_eq!(u(e, "/requests/failed_checks"), 100, "{e:#}");
    assert_eq!(u(e, "/checks/body_contains"), 100, "{e:#}");
    assert_eq!(u(e, "/requests/errors"), 0);
    assert_eq!(hist(e, "latency_hdr").len(), 1000);
}

/// Every 10th response (by the server's count) is a 404.
fn every_tenth_missing(_: &Seen, n: u64) -> Vec<u8> {
    let status = if n.is_multiple_of(10) {
        "404 Not Found"
    } else {
        "200 OK"
    };
    format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").into_bytes()
}

#[test]
fn declared_checks_fail_the_run_above_one_percent_unless_a_threshold_says_otherwise() {
    // Issue 34: `--expect-status 200` on a path that is not there.
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let missing = format!("http://{}/no/such/page", server.addr);
    let args = ["run", &missing, "-n", "200", "-c", "2", "-t", "1"];
    let out = volley(&[&args[..], &["--expect-status", "200"]].concat(), LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        stdout.contains("BROKEN (exit code 1)")
            && stdout.contains("FAIL checks<=1%")
            && stdout.contains("measured 100.000% (implied by the checks)"),
        "{stdout}"
    );
    // Without checks a 404 changes no exit code, and nothing is implied.
    let r = run_ok(&args);
    assert_eq!(u(&r, "/status_codes/404"), 200);
    assert!(
        r.get("thresholds").is_none() && r.get("checks").is_none(),
        "{r:#}"
    );
    assert!(r["requests"].get("failed_checks").is_none(), "{r:#}");

    // 10 % of 404s: above the implied 1 %, within the user's own 50 %.
    let server = Recorder::start(every_tenth_missing);
    let url = server.url();
    let args = [
        "run",
        &url,
        "-n",
        "1000",
        "-c",
        "2",
        "-t",
        "1",
        "--expect-status",
        "200",
    ];
    let r = run_exits(1, &args);
    assert_eq!(u(&r, "/requests/failed_checks"), 100, "{:#}", r["requests"]);
    assert_eq!(u(&r, "/checks/status"), 100, "{:#}", r["checks"]);
    let t = only_threshold(&r);
    assert!(t["implied"] == true && t["pass"] == false, "{t:#}");
    let r = run_ok(&[&args[..], &["--threshold", "checks<50%"]].concat());
    let t = only_threshold(&r);
    assert!(
        t["threshold"] == "checks<50%" && t["actual"] == 10.0,
        "{t:#}"
    );
    // A count names checks too.
    let r = run_exits(1, &[&args[..], &["--threshold", "checks<100"]].concat());
    assert_eq!(only_threshold(&r)["threshold"], "checks<100");
}

// ---------------------------------------------------------------------------------- verify

#[test]
fn verify_stops_at_a_404_before_the_load_and_lets_a_good_mix_through() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let d = dir("verify");
    let good = "\
[[request]]
name = \"hello\"
path = \"/hello\"
weight = 3

[[request]]
method = \"POST\"
path = \"/\"
body = \"x\"
";
    let bad = format!("{good}\n[[request]]\nname = \"missing\"\npath = \"/no/such/page\"\n");
    let bad = write(&d, "bad.toml", &bad);
    let out = volley(
        &[
            "run",
            &url,
            "--requests-file",
            &bad,
            "--verify",
            "-n",
            "1000",
        ],
        LIMIT,
    );
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--verify: 1 of 3 requests failed"),
        "{stderr}"
    );
    assert!(stderr.contains("the load did not start"), "{stderr}");
    assert!(
        stderr.contains("missing") && stderr.contains("/no/such/page") && stderr.contains("404"),
        "the failed request is named with its status: {stderr}"
    );
    let seen = counts(server.addr);
    let want: BTreeMap<String, u64> = [("GET /hello", 1), ("POST /", 1), ("GET /no/such/page", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(seen, want, "one request per entry, no load");

    let good = write(&d, "good.toml", good);
    let before = counts(server.addr);
    let (code, r, stderr) = volley_json(
        &[
            "run",
            &url,
            "--requests-file",
            &good,
            "--verify",
            "-n",
            "1000",
            "-c",
            "2",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("--verify: 2 requests answered as expected; the load starts"),
        "{stderr}"
    );
    assert_eq!(u(&r, "/requests/completed"), 1000);
    let got = since(server.addr, &before);
    assert_eq!(
        got.values().sum::<u64>(),
        1002,
        "two verified, then the load: {got:?}"
    );
    assert_eq!(got["GET /hello"], 1 + 750, "{got:?}");
    assert_eq!(got["POST /"], 1 + 250, "{got:?}");
}

// ------------------------------------------------------------------- merge and repetitions

#[test]
fn endpoint_histograms_merge_exactly_across_shards_and_suite_repetitions() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let d = dir("merge");
    let mix = write(&d, "mix.toml", MIX);
    let (a, b, m) = (d.join("a.json"), d.join("b.json"), d.join("merged.json"));
    for path in [&a, &b] {
        let out = volley(
            &[
                "run",
                &url,
                "--requests-file",
                &mix,
                "-n",
                "4000",
                "-c",
                "4",
                "-t",
                "2",
                "--quiet",
                "--json",
                path.to_str().unwrap(),
            ],
            LIMIT,
        );
        assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    }
    // Run one after the other: their starts are further apart than shards', hence --force.
    let out = volley(
        &[
            "merge",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "-o",
            m.to_str().unwrap(),
            "--force",
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (ra, rb, rm) = (read(&a), read(&b), read(&m));
    assert_eq!(ra["load_id"], rb["load_id"], "one load");
    let names: Vec<&str> = rm["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hello", "bytes", "post"]);
    let mut completed = 0;
    for name in names {
        let (ea, eb, em) = (
            endpoint(&ra, name),
            endpoint(&rb, name),
            endpoint(&rm, name),
        );
        for key in [
            "/requests/sent",
            "/requests/completed",
            "/requests/errors",
            "/requests/failed",
            "/requests/unfinished",
            "/status_codes/200",
        ] {
            assert_eq!(u(em, key), u(ea, key) + u(eb, key), "{name} {key}");
        }
        completed += u(em, "/requests/completed");
        for key in ["latency_hdr", "service_time_hdr"] {
            let (ha, hb, hm) = (hist(ea, key), hist(eb, key), hist(em, key));
            assert_eq!(hm.len(), ha.len() + hb.len(), "{name} {key}: total count");
            assert_eq!(hm.max(), ha.max().max(hb.max()), "{name} {key}: max");
            assert!(hm == sum([&ha, &hb]), "{name} {key}: bucket by bucket");
        }
        for (summary, key) in [
            ("latency_us", "latency_hdr"),
            ("service_time_us", "service_time_hdr"),
        ] {
            assert_eq!(
                u(em, &format!("/{summary}/max")),
                hist(em, key).max(),
                "{name}: {summary} recomputed from the merged histogram"
            );
        }
    }
    assert_eq!(completed, 8000);
    assert_eq!(u(&rm, "/requests/completed"), 8000);

    // A suite with two repetitions of a requests_file scenario: endpoints in each cell's
    // RunResult, of one load.
    let suite = format!(
        "[suite]\nname = \"mix\"\nrepetitions = 2\n\n[[server]]\nname = \"serve\"\nurl = \"{url}\"\n\n[[scenario]]\nname = \"mix\"\nrequests_file = \"{mix}\"\nrequests = 2000\nconnections = 2\nexpect_status = \"2xx\"\n"
    );
    let (out, results) = common::bench_suite(&d, &suite, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let idx = common::suite_index(&results);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{idx:#}");
    let mut ids = Vec::new();
    for row in rows {
        assert_eq!(row["status"], "ok", "{row:#}");
        let r = read(&results.join(row["path"].as_str().unwrap()));
        assert_eq!(u(&r, "/requests/completed"), 2000);
        let mut n = 0;
        for (name, share) in [("hello", 80), ("bytes", 15), ("post", 5)] {
            let e = endpoint(&r, name);
            let c = u(e, "/requests/completed");
            assert_eq!(hist(e, "latency_hdr").len(), c, "{name}");
            assert!(c.abs_diff(2000 * share / 100) <= 20, "{name}: {c}");
            n += c;
        }
        assert_eq!(n, 2000);
        ids.push(r["load_id"].clone());
    }
    assert_eq!(ids[0], ids[1], "repetitions of one load");
}

// ------------------------------------------------------------------------------- bad input

#[test]
fn bad_requests_files_exit_2_with_file_line_and_key() {
    let d = dir("bad");
    write(&d, "users.csv", USERS);
    let url = "http://127.0.0.1:9/";
    let names: String = (1..=101)
        .map(|k| format!("[[request]]\nname = \"n{k}\"\npath = \"/{k}\"\n"))
        .collect();
    let cases: Vec<(&str, String, &str, &[&str])> = vec![
        (
            "unknown_key.toml",
            "[[request]]\npath = \"/\"\nwieght = 3\n".into(),
            ":3:1:",
            &["[[request]] 1: unknown key `wieght`"],
        ),
        (
            "weight_zero.toml",
            "[[request]]\npath = \"/a\"\n\n[[request]]\npath = \"/b\"\nweight = 0\n".into(),
            ":6:10:",
            &["[[request]] 2: weight", "not 0"],
        ),
        (
            "weight_negative.toml",
            "[[request]]\npath = \"/a\"\nweight = -2\n".into(),
            ":3:10:",
            &["[[request]] 1: weight", "not -2"],
        ),
        (
            "empty.toml",
            "request = []\n".into(),
            ":1:11:",
            &["no [[request]]"],
        ),
        (
            "no_column.toml",
            "[data]\nfile = \"users.csv\"\n\n[[request]]\npath = \"/u/{row.name}\"\n".into(),
            ":5:12:",
            &["[[request]] 1: path", "no column `name`", "id, email"],
        ),
        (
            "unclosed.toml",
            "[[request]]\npath = \"/items/{seq\"\n".into(),
            ":2:16:",
            &["[[request]] 1: path", "`{seq` never closes"],
        ),
        (
            "regex.toml",
            "[[request]]\npath = \"/\"\nexpect_body_regex = \"(x\"\n".into(),
            ":3:21:",
            &["[[request]] 1: expect_body_regex", "`(x` is not a regex"],
        ),
        (
            "other_host.toml",
            "[[request]]\nurl = \"http://127.0.0.2:9/x\"\n".into(),
            ":2:7:",
            &["[[request]] 1: url", "127.0.0.2:9", "127.0.0.1:9"],
        ),
        (
            "names.toml",
            names,
            ":302:8:",
            &["[[request]] 101: name", "`n101` would be the 101st name"],
        ),
    ];
    for (name, text, at, keys) in &cases {
        let f = write(&d, name, text);
        let mut needles = vec![format!("--requests-file {f}{at}")];
        needles.extend(keys.iter().map(|k| k.to_string()));
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        refused(&["run", url, "--requests-file", &f, "-n", "10"], &needles);
    }
}

#[test]
fn a_file_of_100000_unnamed_requests_runs_each_once_under_101_names() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let d = dir("many");
    let mut text = String::with_capacity(4 << 20);
    for k in 0..100_000 {
        text.push_str(&format!("[[request]]\npath = \"/r/{k}\"\n"));
    }
    let file = write(&d, "many.toml", &text);
    // One thread walks the cycle once: each request exactly once.
    let r = run_ok(&[
        "run",
        &url,
        "--requests-file",
        &file,
        "-n",
        "100000",
        "-c",
        "8",
        "-t",
        "1",
    ]);
    assert_eq!(u(&r, "/requests/completed"), 100_000);
    // Named by method and path: the first 100 paths, then `other` for the rest; every request
    // counted under exactly one name.
    let eps = r["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 101);
    assert_eq!(eps[0]["name"], "GET /r/0");
    assert_eq!(eps[99]["name"], "GET /r/99");
    let other = &eps[100];
    assert_eq!(
        (
            other["name"].as_str(),
            other["method"].as_str(),
            other["path"].as_str()
        ),
        (Some("other"), Some(""), Some(""))
    );
    assert_eq!(u(other, "/requests/sent"), 99_900);
    let sent: u64 = eps.iter().map(|e| u(e, "/requests/sent")).sum();
    let completed: u64 = eps.iter().map(|e| u(e, "/requests/completed")).sum();
    assert_eq!((sent, completed), (100_000, 100_000));
    assert_eq!(r["target"]["requests_file"]["names"], 101);
    assert_eq!(r["target"]["requests_file"]["requests"], 100_000);
    let got = counts(server.addr);
    assert_eq!(got.len(), 100_000, "every path once");
    assert!(got.values().all(|&n| n == 1));
    assert_eq!(got.get("GET /r/99999"), Some(&1));
}

// ---------------------------------------------------------------------------- load identity

#[test]
fn the_requests_file_and_its_data_are_part_of_the_load_id() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let d = dir("identity");
    write(&d, "users.csv", USERS);
    let text = "[data]\nfile = \"users.csv\"\n\n[[request]]\npath = \"/hello?u={row.id}\"\nweight = 3\n\n[[request]]\npath = \"/\"\n";
    let file = write(&d, "mix.toml", text);
    let id = || {
        let r = run_ok(&[
            "run",
            &url,
            "--requests-file",
            &file,
            "-n",
            "100",
            "-c",
            "2",
        ]);
        r["load_id"].as_str().unwrap().to_string()
    };
    let first = id();
    assert_eq!(first.len(), 16);
    assert_eq!(id(), first, "the same file, the same load");
    write(&d, "mix.toml", &text.replace("weight = 3", "weight = 4"));
    let reweighted = id();
    assert_ne!(reweighted, first, "another weight, another load");
    write(&d, "mix.toml", text);
    assert_eq!(id(), first, "back to the first file");
    write(&d, "users.csv", &USERS.replace("ken@", "kenneth@"));
    assert_ne!(id(), first, "another data file, another load");
    // Without the file: another load again.
    let single = run_ok(&["run", &url, "-n", "100", "-c", "2"]);
    assert_ne!(single["load_id"].as_str().unwrap(), first);
}

// ------------------------------------------------------------------------------ the example

#[test]
fn the_example_mix_runs_clean_against_volley_serve() {
    // examples/mix: every check passes against the reference contract's paths, and the
    // server gets the weights (60/20/10/5/5 of 2,000 with one thread: exact).
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mix/mix.toml");
    let (code, r, stderr) = volley_json(
        &[
            "run",
            &url,
            "--requests-file",
            file,
            "--verify",
            "-n",
            "2000",
            "-c",
            "10",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("--verify: 5 requests answered as expected"),
        "{stderr}"
    );
    assert_eq!(u(&r, "/requests/completed"), 2000);
    assert_eq!(u(&r, "/requests/failed"), 0, "{:#}", r["checks"]);
    let got = counts(server.addr);
    // The verify requests (one each) come first.
    for (key, n) in [
        ("GET /", 1200),
        ("GET /hello", 400),
        ("GET /bytes", 200),
        ("POST /", 100),
        ("GET /delay", 100),
    ] {
        assert_eq!(got.get(key), Some(&(n + 1)), "{key}: {got:?}");
    }
    let slow = endpoint(&r, "slow");
    assert!(u(slow, "/latency_us/min") >= 1000, "{slow:#}");
}

#[test]
fn json_checks_read_fields_of_the_body() {
    let body: &'static [u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 44\r\nContent-Type: application/json\r\n\r\n{\"data\": {\"id\": 7, \"name\": \"a\"}, \"ok\": true}";
    let server = common::answering(body);
    let url = server.url("/");
    let base = ["run", url.as_str(), "-n", "50", "-c", "1"];
    let passing = [
        "--expect-json",
        "/data/id=7",
        "--expect-json",
        "$.data.name=a",
        "--expect-json",
        "/ok",
    ];
    let r = run_ok(&[&base[..], &passing[..]].concat());
    assert_eq!(u(&r, "/checks/json"), 0, "{:#}", r["checks"]);
    assert_eq!(u(&r, "/requests/failed"), 0);
    for wrong in ["/data/id=8", "/data/missing", "$.ok=false"] {
        let r = run_exits(1, &[&base[..], &["--expect-json", wrong][..]].concat());
        assert_eq!(u(&r, "/checks/json"), 50, "{wrong}: {:#}", r["checks"]);
    }
    // A body that is not JSON fails the check; a check that is not a pointer is named.
    let server = common::answering(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnot");
    let url = server.url("/");
    let r = run_exits(1, &["run", &url, "-n", "10", "--expect-json", "/a"]);
    assert_eq!(u(&r, "/checks/json"), 10, "{:#}", r["checks"]);
    let o = volley(
        &["run", &url, "--expect-json", "data.id=1"],
        Duration::from_secs(10),
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("--expect-json: `data.id`"), "{text}");
}
