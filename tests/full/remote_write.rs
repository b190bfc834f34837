//! `--prometheus-remote-write` against receivers in this test (plain and TLS; answering,
//! down, and never answering) and a real Prometheus on loopback (Debian's `prometheus`,
//! remote-write receiver and native histograms on), which also scrapes `--metrics-addr`.

use crate::common;
use crate::common::push::{after_the_load, receiver, run_json, warnings, Answer};
use crate::common::tls;
use crate::common::Seen;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use prost::Message;
use serde_json::Value;
use volley::live::remote::proto::WriteRequest;
use volley::live::remote::{FINAL_TIMEOUT, STALE_NAN};

/// What remote write answers.
const NO_CONTENT: Answer = Answer::With(b"HTTP/1.1 204 No Content\r\n\r\n");

/// A push's body: snappy's block format of a WriteRequest.
fn decode(p: &Seen) -> WriteRequest {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&p.body)
        .expect("snappy block format");
    WriteRequest::decode(&raw[..]).expect("a WriteRequest")
}

fn label<'a>(ts: &'a volley::live::remote::proto::TimeSeries, name: &str) -> Option<&'a str> {
    ts.labels
        .iter()
        .find(|l| l.name == name)
        .map(|l| l.value.as_str())
}

#[test]
fn pushes_every_two_seconds_and_ends_every_series_with_a_stale_marker() {
    let server = common::normal();
    let (addr, pushes) = receiver(NO_CONTENT, None);
    let url = format!("http://{addr}/api/v1/write");
    let (code, j, _) = run_json(
        &[
            "run",
            &server.url("/"),
            "-c",
            "2",
            "-d",
            "5s",
            "-R",
            "200",
            "--prometheus-remote-write",
            &url,
        ],
        &[("VOLLEY_REMOTE_WRITE_BEARER_TOKEN", "s3cret")],
    );
    assert_eq!(code, 0, "{}", warnings(&j));
    assert!(!warnings(&j).contains("remote write"), "{}", warnings(&j));
    let pushes = pushes.lock().unwrap();
    assert!(
        (3..=4).contains(&pushes.len()),
        "2 s apart over 5 s, then the end: {}",
        pushes.len()
    );
    for p in pushes.iter() {
        let h = |k: &str| p.header(k);
        assert_eq!(h("content-encoding"), Some("snappy"));
        assert_eq!(h("content-type"), Some("application/x-protobuf"));
        assert_eq!(h("x-prometheus-remote-write-version"), Some("0.1.0"));
        assert_eq!(
            h("authorization"),
            Some("Bearer s3cret"),
            "credentials from the environment"
        );
    }
    assert!(!j["argv"].to_string().contains("s3cret"));
    let last = &decode(pushes.last().unwrap());
    let completed = j["requests"]["completed"].as_u64().unwrap();
    let run_id = label(&last.timeseries[0], "run_id").unwrap().to_string();
    for ts in &last.timeseries {
        assert_eq!(label(ts, "run_id"), Some(run_id.as_str()));
        let stale = match (ts.samples.last(), ts.histograms.last()) {
            (Some(s), _) => s.value.to_bits(),
            (None, Some(h)) => h.sum.to_bits(),
            _ => panic!("an empty series"),
        };
        assert_eq!(stale, STALE_NAN, "{:?} ends stale", ts.labels);
        let name = label(ts, "__name__").unwrap();
        if name == "volley_requests_total" && label(ts, "status_class") == Some("2xx") {
            assert_eq!(
                ts.samples[0].value, completed as f64,
                "the final value is the run's"
            );
            assert!(ts.samples[0].timestamp < ts.samples[1].timestamp);
        }
        if name == "volley_request_duration_seconds" {
            let h = &ts.histograms[0];
            assert_eq!(
                h.count_int, completed,
                "the native histogram holds every response"
            );
            let buckets: i64 = h
                .positive_deltas
                .iter()
                .scan(0i64, |c, d| {
                    *c += d;
                    Some(*c)
                })
                .sum();
            assert_eq!(buckets as u64 + h.zero_count_int, completed);
        }
    }
    let names: Vec<&str> = last
        .timeseries
        .iter()
        .filter_map(|t| label(t, "__name__"))
        .collect();
    for want in [
        "volley_requests_total",
        "volley_errors_total",
        "volley_request_duration_seconds",
        "volley_service_time_seconds",
        "volley_target_rate",
        "volley_achieved_rate",
        "volley_inflight",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}

#[test]
fn an_endpoint_that_is_down_or_never_answers_neither_slows_nor_fails_the_run() {
    let server = common::normal();
    let down = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (hung, _) = receiver(Answer::Never, None);
    for addr in [down, hung] {
        let url = format!("http://{addr}/api/v1/write");
        let (code, j, exited) = run_starved_at_most_twice(&server.url("/"), &url);
        assert_eq!(code, 0, "{url}: {}", warnings(&j));
        let w = warnings(&j);
        assert!(
            w.contains("remote write:") && w.contains("pushes failed"),
            "{url}: {w}"
        );
        // The rate the schedule kept over the send window (what the pushes could slow),
        // not the throughput, whose span also runs to the drain's last response.
        let achieved = j["achieved_rps"].as_f64().unwrap();
        assert!(
            (achieved - 500.0).abs() < 5.0,
            "{url}: the rate held: {achieved}"
        );
        // After the load, the end's push waits at most FINAL_TIMEOUT and the 500 ms
        // Pusher::finish adds to it; then the result is written: a second for that, where a
        // push held past its bound would take the rest of PUSH_TIMEOUT (5 s) more. Measured
        // from the load's end, so volley's own start on a busy machine does not count.
        let after = after_the_load(&j, exited);
        eprintln!("{url}: exited {after:?} after the load");
        let bound = FINAL_TIMEOUT + Duration::from_millis(500 + 1000);
        assert!(after < bound, "{url}: exited {after:?} after the load");
    }
}

/// `volley run` of 500 req/s for 4 s pushing to `push`; a run that volley measured as starved
/// (its threads waited for CPUs other processes had) says nothing about the rate kept: it
/// runs again, at most twice, and says so.
fn run_starved_at_most_twice(target: &str, push: &str) -> (i32, Value, SystemTime) {
    let args = [
        "run",
        target,
        "-c",
        "2",
        "-d",
        "4s",
        "-R",
        "500",
        "--prometheus-remote-write",
        push,
    ];
    let mut runs = 0;
    loop {
        let (code, j, exited) = run_json(&args, &[]);
        runs += 1;
        if !j["client"]["starved"].as_bool().unwrap_or(false) || runs == 3 {
            return (code, j, exited);
        }
        eprintln!("run {runs} was starved, running again: {}", warnings(&j));
    }
}

#[test]
fn the_endpoint_certificate_is_always_verified() {
    let server = common::normal();
    let leaf = tls::self_signed(&["localhost"]);
    let (addr, pushes) = receiver(NO_CONTENT, Some(&leaf));
    let url = format!("https://localhost:{}/api/v1/write", addr.port());
    // -k is for the target: the endpoint's certificate is still checked.
    let (code, j, _) = run_json(
        &[
            "run",
            &server.url("/"),
            "-d",
            "1s",
            "-k",
            "--prometheus-remote-write",
            &url,
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert!(warnings(&j).contains("pushes failed"), "{}", warnings(&j));
    assert!(
        pushes.lock().unwrap().is_empty(),
        "nothing reached an unverified endpoint"
    );
    // Trusted through SSL_CERT_FILE, as curl and OpenSSL take it.
    let dir = tempfile::tempdir().unwrap();
    let ca = tls::write(dir.path(), "ca.pem", &leaf.pem);
    let (code, j, _) = run_json(
        &[
            "run",
            &server.url("/"),
            "-d",
            "1s",
            "--prometheus-remote-write",
            &url,
        ],
        &[("SSL_CERT_FILE", &ca)],
    );
    assert_eq!(code, 0);
    assert!(!warnings(&j).contains("remote write"), "{}", warnings(&j));
    assert!(!pushes.lock().unwrap().is_empty());
}

#[test]
fn credentials_in_the_url_are_refused_before_the_load() {
    let server = common::normal();
    let out = common::volley(
        &[
            "run",
            &server.url("/"),
            "-d",
            "1s",
            "--prometheus-remote-write",
            "https://user:pw@example.com/write",
        ],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--prometheus-remote-write")
            && err.contains("VOLLEY_REMOTE_WRITE_BEARER_TOKEN"),
        "{err}"
    );
    assert!(!err.contains(":pw@"), "{err}");
    assert_eq!(server.requests(), 0);
}

/// Debian's Prometheus on a free loopback port, scraping `scrape` every second, with the
/// remote-write receiver and native histograms on; `None` where it is not installed (outside
/// CI).
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(scrape: Option<SocketAddr>) -> Option<Prometheus> {
        let bin = std::env::var("PROMETHEUS").unwrap_or_else(|_| "/usr/bin/prometheus".into());
        if !std::path::Path::new(&bin).exists() {
            common::skip("no prometheus (scripts/install-test-deps.sh installs it)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n");
        if let Some(t) = scrape {
            cfg.push_str(&format!("scrape_configs:\n  - job_name: volley\n    static_configs:\n      - targets: ['{t}']\n"));
        }
        std::fs::write(dir.path().join("p.yml"), cfg).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new(bin)
            .arg(format!(
                "--config.file={}",
                dir.path().join("p.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .args([
                "--web.enable-remote-write-receiver",
                "--enable-feature=native-histograms",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let t = Instant::now();
        while p.get("/-/ready").0 != 200 {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "prometheus not ready"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        // Targets are applied a few seconds after start: wait for the first attempt (down,
        // nothing listens yet) so that the run's seconds are all scraped.
        while scrape.is_some() && !p.get("/api/v1/targets").1.contains("\"health\":\"down\"") {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "prometheus never scraped"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(p)
    }

    fn get(&self, target: &str) -> (u16, String) {
        let Ok(mut s) = TcpStream::connect(self.addr) else {
            return (0, String::new());
        };
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        let code = out
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (
            code,
            out.split_once("\r\n\r\n")
                .map_or(String::new(), |(_, b)| b.to_string()),
        )
    }

    /// The values of an instant query.
    fn query(&self, q: &str) -> Vec<Value> {
        let enc: String = q
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let (code, body) = self.get(&format!("/api/v1/query?query={enc}"));
        assert_eq!(code, 200, "{q}: {body}");
        let body = body
            .lines()
            .filter(|l| l.starts_with('{'))
            .collect::<String>();
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        v["data"]["result"].as_array().unwrap().clone()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_prometheus_receives_the_push_and_scrapes_metrics() {
    let metrics_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let Some(prom) = Prometheus::start(Some(metrics_port)) else {
        return;
    };
    let server = common::normal();
    let url = format!("http://{}/api/v1/write", prom.addr);
    let (code, j, _) = run_json(
        &[
            "run",
            &server.url("/"),
            "-c",
            "2",
            "-d",
            "5s",
            "-R",
            "200",
            "--prometheus-remote-write",
            &url,
            "--metrics-addr",
            &metrics_port.to_string(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{}", warnings(&j));
    assert!(!warnings(&j).contains("remote write"), "{}", warnings(&j));
    let completed = j["requests"]["completed"].as_f64().unwrap();
    // Pushed: the final value (the stale marker after it hides it from instant queries, not
    // from ranges).
    let pushed =
        prom.query("max_over_time(volley_requests_total{status_class=\"2xx\",job=\"\"}[5m])");
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    assert_eq!(
        pushed[0]["value"][1]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap(),
        completed
    );
    let run_id = pushed[0]["metric"]["run_id"].as_str().unwrap().to_string();
    assert!(
        prom.query(&format!(
            "volley_requests_total{{run_id=\"{run_id}\",job=\"\"}}"
        ))
        .is_empty(),
        "stale after the end"
    );
    // The native histogram as Prometheus stored it: its last sample counts every response.
    let series = prom.query(&format!(
        "volley_request_duration_seconds{{run_id=\"{run_id}\"}}[5m]"
    ));
    assert_eq!(series.len(), 1, "{series:?}");
    let hists = series[0]["histograms"]
        .as_array()
        .expect("native histogram samples");
    let last = &hists.last().unwrap()[1];
    assert_eq!(
        last["count"].as_str().unwrap().parse::<f64>().unwrap(),
        completed,
        "{last}"
    );
    let in_buckets: f64 = last["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[3].as_str().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(in_buckets, completed, "every response in a bucket");
    // Scraped: /metrics during the run, the same run.
    let scraped = prom.query(&format!("max_over_time(volley_requests_total{{job=\"volley\",run_id=\"{run_id}\",status_class=\"2xx\"}}[5m])"));
    assert_eq!(
        scraped.len(),
        1,
        "a scrape of the run: {scraped:?}; targets: {}",
        prom.get("/api/v1/targets").1
    );
    let n = scraped[0]["value"][1]
        .as_str()
        .unwrap()
        .parse::<f64>()
        .unwrap();
    assert!(n > 0.0 && n <= completed, "{n} of {completed}");
}
