use super::*;
use crate::buckets::upper_index;
use crate::metrics::Names;
use volley_model::stats::histogram::new_hist;

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

/// OTLP's bucket of `v` seconds at [`SCALE`].
fn otlp_index(v: f64) -> i32 {
    upper_index(v, SCALE) - 1
}

#[test]
fn buckets_follow_the_scale() {
    assert_eq!(otlp_index(1.0), -1, "1 is the upper bound of bucket -1");
    assert_eq!(otlp_index(1.0001), 0);
    assert_eq!(otlp_index(2.0), 31);
    assert_eq!(otlp_index(0.5), -33);
    assert_eq!(otlp_index(0.001), -319, "1 ms: (2^(-319/32), 2^(-318/32)]");
    let base = 2f64.powf(2f64.powi(-SCALE));
    assert!(base - 1.0 < 0.022, "buckets 2.2 % wide: {base}");
    for us in [1u64, 7, 99, 1_000, 12_345, 250_000, 3_000_000, 60_000_000] {
        let v = us as f64 / 1e6;
        let i = otlp_index(v);
        assert!(
            base.powi(i) < v * (1.0 + 1e-12) && v <= base.powi(i + 1) * (1.0 + 1e-12),
            "{v} in bucket {i}"
        );
    }
}

#[test]
fn counts_land_in_their_buckets_and_add_up() {
    let mut h = new_hist();
    for (v, n) in [(0u64, 2u64), (1_000, 3), (1_001, 1), (4_000, 5)] {
        h.record_n(v, n).unwrap();
    }
    let p = exponential(&h);
    assert_eq!((p.count, p.zero_count, p.scale), (11, 2, SCALE));
    let b = p.positive.as_ref().unwrap();
    assert_eq!(b.offset, -319, "the first bucket is 1 ms's");
    assert_eq!(
        b.bucket_counts.iter().sum::<u64>() + p.zero_count,
        p.count,
        "every observation in a bucket"
    );
    let at = |v: f64| b.bucket_counts[(otlp_index(v) - b.offset) as usize];
    assert_eq!(at(0.001), 4, "1 ms and 1.001 ms share a 2.2 % bucket");
    assert_eq!(at(0.004001), 5);
    assert_eq!(
        b.bucket_counts.len() as i32,
        otlp_index(0.004001) - b.offset + 1
    );
    assert_eq!((p.min, p.max), (Some(0.0), Some(0.004001)));
    let sum = p.sum.unwrap();
    assert!(
        (sum - (0.003 + 0.001001 + 5.0 * 0.004)).abs() < 1e-4,
        "{sum}"
    );
}

#[test]
fn an_empty_histogram_has_no_min_or_max() {
    let p = exponential(&new_hist());
    assert_eq!((p.count, p.zero_count, p.min, p.max), (0, 0, None, None));
    assert!(p.positive.unwrap().bucket_counts.is_empty());
}

#[test]
fn urls_are_bases_as_the_sdks_take_them() {
    for (given, want) in [
        ("http://h:4318", "http://h:4318/v1/metrics"),
        ("http://h:4318/", "http://h:4318/v1/metrics"),
        ("https://h/otlp", "https://h/otlp/v1/metrics"),
        ("http://h:4318/v1/metrics", "http://h:4318/v1/metrics"),
        ("http://h/v1/metrics/?a=1", "http://h/v1/metrics?a=1"),
        ("http://h/p?a=1", "http://h/p/v1/metrics?a=1"),
    ] {
        assert_eq!(Target::new(given, env(&[])).unwrap().url(), want, "{given}");
    }
    let e = Target::new("https://key:secret@h/", env(&[])).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("--otlp-endpoint "), "{text}");
    assert!(text.contains("OTEL_EXPORTER_OTLP_HEADERS") && !text.contains("secret"));
    assert!(Target::new("grpc://h:4317", env(&[])).is_err());
}

#[test]
fn headers_and_compression_come_from_the_sdk_variables() {
    let headers = |t: &Target| t.endpoint.headers.clone();
    let t = Target::new(
        "http://h",
        env(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-generic=1"),
            (
                "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
                " x-honeycomb-team = abc%2Cdef , DD-API-KEY=k=v,",
            ),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ]),
    )
    .unwrap();
    let want: Vec<(String, String)> = [
        ("Content-Type", "application/x-protobuf"),
        ("x-honeycomb-team", "abc,def"),
        ("DD-API-KEY", "k=v"),
        ("Content-Encoding", "gzip"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(headers(&t), want, "the metrics' variable wins, whole");
    assert!(t.gzip);
    assert!(
        !format!("{t:?}").contains("abc"),
        "Debug shows no header value"
    );
    for (var, text, why) in [
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "novalue-s3cret",
            "without `=`",
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "bad key=s3cret",
            "not a header name",
        ),
        ("OTEL_EXPORTER_OTLP_HEADERS", "k=s3cret%0A", "one line"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Content-Type=s3cret",
            "sets that",
        ),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "not gzip or none"),
    ] {
        let e = Target::new("http://h", env(&[(var, text)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains(var) && e.contains(why), "{e}");
        assert!(!e.contains("s3cret"), "the value is never shown: {e}");
    }
}

fn totals() -> Totals {
    let mut t = Totals {
        names: Names {
            scenario: "run".into(),
            endpoint: "/".into(),
        },
        ..Default::default()
    };
    for v in [800, 1_000, 1_200] {
        t.latency.record(v).unwrap();
        t.service.record(v / 2).unwrap();
    }
    t.counts.status[200] = 2;
    t.counts.status[503] = 1;
    t.counts.errors.timeout = 4;
    t.target_rps = Some(50.0);
    t
}

fn metric<'a>(r: &'a proto::ExportMetricsServiceRequest, name: &str) -> &'a Metric {
    let m = &r.resource_metrics[0].scope_metrics[0].metrics;
    m.iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.string_value.as_deref())
}

#[test]
fn the_request_carries_the_remote_write_series() {
    let t = totals();
    let now = t.since + std::time::Duration::from_secs(3);
    let bytes = request(&t, "r1", now).encode_to_vec();
    let r = proto::ExportMetricsServiceRequest::decode(&bytes[..]).unwrap();
    let res = r.resource_metrics[0].resource.as_ref().unwrap();
    assert_eq!(attr(&res.attributes, "service.name"), Some("volley"));
    assert_eq!(attr(&res.attributes, "volley.run_id"), Some("r1"));
    assert_eq!(attr(&res.attributes, "service.instance.id"), Some("r1"));
    let scope = r.resource_metrics[0].scope_metrics[0]
        .scope
        .as_ref()
        .unwrap();
    assert_eq!(scope.name, "volley");
    let Some(Data::Sum(s)) = &metric(&r, "volley_requests_total").data else {
        panic!("requests are a sum")
    };
    assert!(s.is_monotonic && s.aggregation_temporality == proto::CUMULATIVE);
    assert_eq!(s.data_points.len(), 5, "one point per status class");
    let total: f64 = s.data_points.iter().filter_map(|p| p.as_double).sum();
    assert_eq!(total, 3.0);
    let ok = &s.data_points[1];
    assert_eq!(attr(&ok.attributes, "status_class"), Some("2xx"));
    assert_eq!(attr(&ok.attributes, "endpoint"), Some("/"));
    assert_eq!(ok.start_time_unix_nano, unix_nanos(t.since));
    assert_eq!(ok.time_unix_nano, unix_nanos(now));
    let Some(Data::Gauge(g)) = &metric(&r, "volley_target_rate").data else {
        panic!("the target rate is a gauge")
    };
    assert_eq!(g.data_points[0].as_double, Some(50.0));
    let m = metric(&r, "volley_request_duration_seconds");
    assert_eq!(m.unit, "s");
    let Some(Data::ExponentialHistogram(h)) = &m.data else {
        panic!("latency is an exponential histogram")
    };
    assert_eq!(h.aggregation_temporality, proto::CUMULATIVE);
    assert_eq!(h.data_points[0].count, 3);
    assert_eq!(attr(&h.data_points[0].attributes, "scenario"), Some("run"));
    let errors = metric(&r, "volley_errors_total");
    assert_eq!(errors.unit, "");
    assert_eq!(metric(&r, "volley_client_cpu_seconds_total").unit, "s");
}

#[test]
fn answers_say_what_was_refused() {
    let target = Target::new("http://h", env(&[])).unwrap();
    let o = Otlp::new(&target, "r1");
    let partial = proto::ExportMetricsServiceResponse {
        partial_success: Some(proto::ExportMetricsPartialSuccess {
            rejected_data_points: 3,
            error_message: "too old".into(),
        }),
    };
    let e = o.accepted(&partial.encode_to_vec()).unwrap_err();
    assert_eq!(e, "3 data points refused: too old");
    assert!(o.accepted(b"").is_ok(), "an empty answer is a full success");
    let status = proto::Status {
        code: 3,
        message: "bad scale".into(),
    };
    assert_eq!(o.refusal(&status.encode_to_vec()), "bad scale");
    assert_eq!(o.refusal(b"plain words"), "plain words");
}

#[test]
fn gzip_when_asked() {
    let target = Target::new(
        "http://h",
        env(&[("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip")]),
    )
    .unwrap();
    let t = totals();
    let body = Otlp::new(&target, "r1").body(&t, t.since, false).unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut raw).unwrap();
    assert!(proto::ExportMetricsServiceRequest::decode(&raw[..]).is_ok());
}
