//! `--otlp-endpoint` against a receiver in this test that decodes each push as an OTLP
//! `ExportMetricsServiceRequest` (docs/contract.md, "Watching a run live"): the path, the
//! headers from the OpenTelemetry SDKs' variables, the counters, the exponential histograms,
//! the resource; and endpoints that refuse, stall or flood, which leave the run as it was.

use crate::common;
use crate::common::push::{after_the_load, receiver, run_json, warnings, Answer};
use crate::common::Seen;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use prost::Message;
use volley::live::otlp::proto::{Data, ExportMetricsServiceRequest, KeyValue, Metric};
use volley::live::push::FINAL_TIMEOUT;

/// A full success: an empty `ExportMetricsServiceResponse`.
const OK: Answer = Answer::With(
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
);
/// A refusal with a `google.rpc.Status` whose message is "overloaded".
const REFUSE: Answer = Answer::With(
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/x-protobuf\r\nContent-Length: 12\r\n\r\n\x12\x0aoverloaded",
);

/// A push's body, gunzipped when it says so.
fn decode(p: &Seen) -> ExportMetricsServiceRequest {
    let mut raw = Vec::new();
    match p.header("content-encoding") {
        Some("gzip") => {
            flate2::read::GzDecoder::new(&p.body[..])
                .read_to_end(&mut raw)
                .expect("gzip");
        }
        None => raw.clone_from(&p.body),
        Some(other) => panic!("content-encoding {other}"),
    }
    ExportMetricsServiceRequest::decode(&raw[..]).expect("an ExportMetricsServiceRequest")
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.string_value.as_deref())
}

fn metric<'a>(r: &'a ExportMetricsServiceRequest, name: &str) -> &'a Metric {
    r.resource_metrics[0].scope_metrics[0]
        .metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The request counter's points: (sum of the values, start time of each).
fn requests(r: &ExportMetricsServiceRequest) -> (f64, Vec<u64>) {
    let Some(Data::Sum(s)) = &metric(r, "volley_requests_total").data else {
        panic!("volley_requests_total is not a sum")
    };
    assert!(s.is_monotonic, "a counter");
    assert_eq!(s.aggregation_temporality, 2, "cumulative");
    let total = s.data_points.iter().filter_map(|p| p.as_double).sum();
    (
        total,
        s.data_points
            .iter()
            .map(|p| p.start_time_unix_nano)
            .collect(),
    )
}

#[test]
fn a_run_arrives_as_otlp_with_the_sdk_headers() {
    let server = common::normal();
    let (addr, posts) = receiver(OK, None);
    let secret = "s3cret-team-key";
    let headers = format!("x-honeycomb-team={secret},x-dataset=volley%20runs");
    let (target, url) = (server.url("/"), format!("http://{addr}"));
    let args = [
        "run",
        &target,
        "-c",
        "2",
        "-d",
        "3s",
        "-R",
        "200",
        "--otlp-endpoint",
        &url,
    ];
    let (code, j, _) = run_json(&args, &[("OTEL_EXPORTER_OTLP_HEADERS", &headers)]);
    assert_eq!(code, 0, "{}", warnings(&j));
    assert!(!warnings(&j).contains("OTLP"), "{}", warnings(&j));
    assert!(
        !j.to_string().contains(secret),
        "no header value in the result"
    );
    let posts = posts.lock().unwrap();
    assert!(
        (2..=3).contains(&posts.len()),
        "2 s apart over 3 s, then the end: {}",
        posts.len()
    );
    for p in posts.iter() {
        assert_eq!(p.target, "/v1/metrics", "the path added to a bare endpoint");
        assert_eq!(p.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(p.header("x-honeycomb-team"), Some(secret));
        assert_eq!(
            p.header("x-dataset"),
            Some("volley runs"),
            "percent-decoded"
        );
    }
    let all: Vec<ExportMetricsServiceRequest> = posts.iter().map(decode).collect();
    let counts: Vec<f64> = all.iter().map(|r| requests(r).0).collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "cumulative: {counts:?}"
    );
    let starts: Vec<u64> = all.iter().flat_map(|r| requests(r).1).collect();
    assert!(
        starts.windows(2).all(|w| w[0] == w[1] && w[0] > 0),
        "one start: {starts:?}"
    );
    let last = all.last().unwrap();
    let completed = j["requests"]["completed"].as_u64().unwrap();
    assert!(completed > 0);
    assert_eq!(
        requests(last).0,
        completed as f64,
        "the final count is the run's"
    );
    check_latency(last, completed);
    check_resource(last);
}

/// The latency's exponential histogram holds every completed request.
fn check_latency(r: &ExportMetricsServiceRequest, completed: u64) {
    let m = metric(r, "volley_request_duration_seconds");
    assert_eq!(m.unit, "s");
    let Some(Data::ExponentialHistogram(h)) = &m.data else {
        panic!("latency is not an exponential histogram")
    };
    assert_eq!(h.aggregation_temporality, 2, "cumulative");
    let p = &h.data_points[0];
    assert_eq!(p.count, completed);
    assert_eq!(p.scale, 5);
    let b = p.positive.as_ref().unwrap();
    assert_eq!(
        b.bucket_counts.iter().sum::<u64>() + p.zero_count,
        completed
    );
    let (min, max) = (p.min.unwrap(), p.max.unwrap());
    assert!(0.0 < min && min <= max && max < 1.0, "{min} {max}");
    let lowest = 2f64.powf(b.offset as f64 / 32.0);
    assert!(
        lowest < min * 1.03 && min < lowest * 1.03,
        "the first bucket holds the min"
    );
    assert_eq!(attr(&p.attributes, "scenario"), Some("run"));
    assert_eq!(attr(&p.attributes, "endpoint"), Some("/"));
}

/// The resource is volley's and the run's; the scope is volley's.
fn check_resource(r: &ExportMetricsServiceRequest) {
    let rm = &r.resource_metrics[0];
    let res = &rm.resource.as_ref().unwrap().attributes;
    assert_eq!(attr(res, "service.name"), Some("volley"));
    let run_id = attr(res, "volley.run_id").expect("the run's id");
    assert_eq!(run_id.len(), 16, "{run_id}");
    assert_eq!(attr(res, "service.instance.id"), Some(run_id));
    let scope = rm.scope_metrics[0].scope.as_ref().unwrap();
    assert_eq!(scope.name, "volley");
    assert!(!scope.version.is_empty());
}

#[test]
fn gzip_and_a_full_metrics_url_as_the_sdk_variables_say() {
    let server = common::normal();
    let (addr, posts) = receiver(OK, None);
    let (code, j, _) = run_json(
        &[
            "run",
            &server.url("/"),
            "-n",
            "50",
            "--otlp-endpoint",
            &format!("http://{addr}/v1/metrics"),
        ],
        &[
            ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip"),
            (
                "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
                "authorization=Bearer t0ken",
            ),
        ],
    );
    assert_eq!(code, 0, "{}", warnings(&j));
    let posts = posts.lock().unwrap();
    let p = posts.last().expect("the end's push");
    assert_eq!(p.target, "/v1/metrics", "a metrics URL is used as it is");
    assert_eq!(p.header("content-encoding"), Some("gzip"));
    assert_eq!(p.header("authorization"), Some("Bearer t0ken"));
    assert_eq!(requests(&decode(p)).0, 50.0);
}

#[test]
fn an_endpoint_that_refuses_stalls_or_floods_leaves_the_run_alone() {
    let server = common::normal();
    let target = server.url("/");
    let alone = ["run", target.as_str(), "-n", "300", "-c", "2"];
    let (code, plain, _) = run_json(&alone, &[]);
    let down = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (refusing, _) = receiver(REFUSE, None);
    let (stalling, _) = receiver(Answer::Never, None);
    let (flooding, _) = receiver(Answer::Flood, None);
    for (addr, why) in [
        (down, "Connection refused"),
        (refusing, "HTTP 503: overloaded"),
        (stalling, "timeout"),
        (flooding, "an answer over 64 KiB"),
    ] {
        let url = format!("http://{addr}");
        let args = [&alone[..], &["--otlp-endpoint", &url]].concat();
        let (c, j, exited) = run_json(&args, &[]);
        assert_eq!(c, code, "{url}: the exit code is the run's");
        for key in ["sent", "completed", "errors"] {
            assert_eq!(j["requests"][key], plain["requests"][key], "{url}: {key}");
        }
        let w = warnings(&j);
        let (failed, pushes) = failed_of(&w).unwrap_or_else(|| panic!("{url}: {w}"));
        assert!(failed >= 1 && failed == pushes, "{url}: {w}");
        assert!(
            w.contains("the last values did not go") && w.contains(why),
            "{url}: {w}"
        );
        // The end's push waits at most FINAL_TIMEOUT, and Pusher::finish 500 ms more.
        let after = after_the_load(&j, exited);
        let bound = FINAL_TIMEOUT + Duration::from_millis(500 + 1500);
        assert!(after < bound, "{url}: exited {after:?} after the load");
    }
}

/// `OTLP export: F of N pushes failed` in the warnings: (F, N).
fn failed_of(warnings: &str) -> Option<(u64, u64)> {
    let rest = warnings.split("OTLP export: ").nth(1)?;
    let mut words = rest.split(' ');
    let failed = words.next()?.parse().ok()?;
    let pushes = words.nth(1)?.parse().ok()?;
    Some((failed, pushes))
}

#[test]
fn a_bad_endpoint_or_header_exits_2_before_the_load() {
    let server = common::normal();
    for (url, env, says) in [
        ("ftp://h/", None, "not an http:// or https:// URL"),
        ("http://key:pw@h/", None, "OTEL_EXPORTER_OTLP_HEADERS"),
        (
            "http://127.0.0.1:4318",
            Some("x-api-key:s3cret"),
            "OTEL_EXPORTER_OTLP_HEADERS: an entry without `=`",
        ),
    ] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_volley"));
        let args = ["run", &server.url("/"), "-n", "5", "--otlp-endpoint", url];
        cmd.args(args);
        if let Some(v) = env {
            cmd.env("OTEL_EXPORTER_OTLP_HEADERS", v);
        }
        let out = common::limited(&mut cmd, &args, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(
            err.contains("--otlp-endpoint") && err.contains(says),
            "{err}"
        );
        assert!(!err.contains(":pw@") && !err.contains("s3cret"), "{err}");
    }
    assert_eq!(server.requests(), 0, "nothing was sent");
}
