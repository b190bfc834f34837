//! `--otlp-endpoint URL`: the metrics remote write sends, pushed by [`crate::push`] as OTLP/HTTP
//! protobuf (an `ExportMetricsServiceRequest`) every [`crate::push::PUSH_EVERY`] and once at
//! the end, for the OpenTelemetry Collector, Grafana Alloy, Datadog or Honeycomb. Counters are
//! cumulative monotonic sums, gauges gauges, the latencies exponential histograms at
//! [`SCALE`]. The URL is a base as `OTEL_EXPORTER_OTLP_ENDPOINT` is (`/v1/metrics` added);
//! headers and compression come from the OpenTelemetry SDKs' variables ([`HEADERS_ENV`],
//! [`COMPRESSION_ENV`]); header values are credentials and are never shown.

pub mod proto;

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use super::metrics::{self, Series, Totals, Value};
use super::push::{self, Encode, Endpoint, EndpointError, Via};
use proto::{
    AnyValue, Buckets, Data, ExponentialHistogramDataPoint, KeyValue, Metric, NumberDataPoint,
};
use volley_model::stats::histogram::Hist;

/// The exponential histograms' scale: 2^5 = 32 buckets per power of two, each 2.2 % wide
/// (a value is within 1.1 % of its bucket's middle).
pub const SCALE: i32 = 5;
/// The path an OTLP/HTTP receiver takes metrics at, added to a base URL.
pub const METRICS_PATH: &str = "/v1/metrics";
/// Headers (`key=value,key2=value2`, values percent-encoded): the first set is used.
pub const HEADERS_ENV: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_HEADERS",
];
/// Compression (`gzip` or `none`): the first set is used.
pub const COMPRESSION_ENV: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
];
/// Headers volley sets itself.
const OWN_HEADERS: [&str; 6] = [
    "content-type",
    "content-encoding",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
];

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct Target {
    pub(crate) endpoint: Endpoint,
    gzip: bool,
}

impl Target {
    /// Checks `url` (http or https, no credentials in it) and reads the headers and the
    /// compression from the environment through `env`.
    pub fn new(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<Target, EndpointError> {
        let instead = format!("put them in {}", HEADERS_ENV[1]);
        push::check_url(Via::Otlp, url, &instead)?;
        let err = |why: String| EndpointError::new(Via::Otlp, url, why);
        let first = |vars: [&'static str; 2]| {
            vars.into_iter().find_map(|k| {
                let v = env(k)?;
                (!v.trim().is_empty()).then_some((k, v))
            })
        };
        let mut headers = vec![("Content-Type".to_string(), "application/x-protobuf".into())];
        if let Some((var, text)) = first(HEADERS_ENV) {
            headers.extend(parse_headers(&text).map_err(|e| err(format!("{var}: {e}")))?);
        }
        let gzip = match first(COMPRESSION_ENV) {
            None => false,
            Some((var, v)) => match v.trim() {
                "gzip" => true,
                "none" => false,
                other => return Err(err(format!("{var}: `{other}` is not gzip or none"))),
            },
        };
        if gzip {
            headers.push(("Content-Encoding".into(), "gzip".into()));
        }
        Ok(Target {
            endpoint: Endpoint {
                url: metrics_url(url),
                headers,
            },
            gzip,
        })
    }

    /// The URL the pushes go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

/// `url` with [`METRICS_PATH`] added to its path, unless its path already ends with it.
fn metrics_url(url: &str) -> String {
    let split = url.find(['?', '#']).unwrap_or(url.len());
    let (base, rest) = url.split_at(split);
    let base = base.trim_end_matches('/');
    if base.ends_with(METRICS_PATH) {
        format!("{base}{rest}")
    } else {
        format!("{base}{METRICS_PATH}{rest}")
    }
}

/// `key=value,key2=value2` as the OpenTelemetry SDKs read it (values percent-decoded). An
/// error names the key, never the value.
fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((key, value)) = entry.split_once('=') else {
            return Err("an entry without `=` (the form is key=value,key2=value2)".into());
        };
        let key = key.trim();
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if key.is_empty() || !key.chars().all(token) {
            return Err(format!("`{key}` is not a header name"));
        }
        if OWN_HEADERS.iter().any(|h| key.eq_ignore_ascii_case(h)) {
            return Err(format!("{key}: volley sets that header itself"));
        }
        let value = String::from_utf8(volley_model::units::percent_decode(value.trim()))
            .ok()
            .filter(|v| !v.chars().any(|c| c.is_control()))
            .ok_or_else(|| format!("{key}: the value is not text on one line"))?;
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// The OTLP encoding of the totals of run `run_id`.
pub(crate) struct Otlp {
    run_id: String,
    gzip: bool,
}

impl Otlp {
    pub(crate) fn new(target: &Target, run_id: &str) -> Otlp {
        Otlp {
            run_id: run_id.to_string(),
            gzip: target.gzip,
        }
    }
}

impl Encode for Otlp {
    fn body(&self, t: &Totals, now: SystemTime, _last: bool) -> Result<Vec<u8>, String> {
        let bytes = request(t, &self.run_id, now).encode_to_vec();
        if !self.gzip {
            return Ok(bytes);
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes)
            .and_then(|()| gz.finish())
            .map_err(|e| format!("gzip: {e}"))
    }

    fn accepted(&self, answer: &[u8]) -> Result<(), String> {
        let Ok(r) = proto::ExportMetricsServiceResponse::decode(answer) else {
            return Ok(());
        };
        match r.partial_success {
            Some(p) if p.rejected_data_points > 0 => Err(format!(
                "{} data points refused: {}",
                p.rejected_data_points,
                push::text(p.error_message.as_bytes())
            )),
            _ => Ok(()),
        }
    }

    fn refusal(&self, answer: &[u8]) -> String {
        match proto::Status::decode(answer) {
            Ok(s) if !s.message.is_empty() => push::text(s.message.as_bytes()),
            _ => push::text(answer),
        }
    }
}

fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            string_value: Some(value.to_string()),
        }),
    }
}

/// The UCUM unit a name's suffix says.
fn unit(name: &str) -> &'static str {
    let name = name.trim_end_matches("_total");
    if name.ends_with("_seconds") {
        "s"
    } else if name.ends_with("_bytes") {
        "By"
    } else {
        ""
    }
}

/// The push of totals `t` at `now`: one resource (volley, the run), one scope, a metric per
/// name with a point per label set.
pub(crate) fn request(
    t: &Totals,
    run_id: &str,
    now: SystemTime,
) -> proto::ExportMetricsServiceRequest {
    let (start, now) = (unix_nanos(t.since), unix_nanos(now));
    let mut metrics: Vec<Metric> = Vec::new();
    for s in metrics::series(t) {
        let data = data(&s, start, now);
        match metrics.last_mut() {
            Some(m) if m.name == s.name => merge(m, data),
            _ => metrics.push(Metric {
                unit: unit(&s.name).into(),
                name: s.name,
                description: s.help.into(),
                data: Some(data),
            }),
        }
    }
    let resource = proto::Resource {
        attributes: vec![
            attribute("service.name", "volley"),
            attribute("service.version", env!("CARGO_PKG_VERSION")),
            attribute("service.instance.id", run_id),
            attribute("volley.run_id", run_id),
        ],
    };
    let scope = proto::InstrumentationScope {
        name: "volley".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    proto::ExportMetricsServiceRequest {
        resource_metrics: vec![proto::ResourceMetrics {
            resource: Some(resource),
            scope_metrics: vec![proto::ScopeMetrics {
                scope: Some(scope),
                metrics,
            }],
        }],
    }
}

/// One series as a metric's data with one point.
fn data(s: &Series, start: u64, now: u64) -> Data {
    let attributes: Vec<KeyValue> = s.labels.iter().map(|(k, v)| attribute(k, v)).collect();
    let number = |value: f64, start_time_unix_nano: u64| NumberDataPoint {
        attributes: attributes.clone(),
        start_time_unix_nano,
        time_unix_nano: now,
        as_double: Some(value),
    };
    match s.value {
        Value::Counter(v) => Data::Sum(proto::Sum {
            data_points: vec![number(v, start)],
            aggregation_temporality: proto::CUMULATIVE,
            is_monotonic: true,
        }),
        Value::Gauge(v) => Data::Gauge(proto::Gauge {
            data_points: vec![number(v, 0)],
        }),
        Value::Histogram(h) => {
            let mut p = exponential(h);
            (p.attributes, p.start_time_unix_nano, p.time_unix_nano) = (attributes, start, now);
            Data::ExponentialHistogram(proto::ExponentialHistogram {
                data_points: vec![p],
                aggregation_temporality: proto::CUMULATIVE,
            })
        }
    }
}

/// `data`'s points added to metric `m`'s (a name has one kind).
fn merge(m: &mut Metric, data: Data) {
    match (&mut m.data, data) {
        (Some(Data::Sum(a)), Data::Sum(b)) => a.data_points.extend(b.data_points),
        (Some(Data::Gauge(a)), Data::Gauge(b)) => a.data_points.extend(b.data_points),
        (Some(Data::ExponentialHistogram(a)), Data::ExponentialHistogram(b)) => {
            a.data_points.extend(b.data_points)
        }
        _ => {}
    }
}

/// `h` (µs) as an exponential histogram point in seconds at [`SCALE`] (no attributes, no
/// times): count, sum, min, max (HDR's, within 0.1 %), zeros, and the positive buckets.
pub(crate) fn exponential(h: &Hist) -> ExponentialHistogramDataPoint {
    let (zero, counts) = crate::buckets::counts(h, SCALE);
    // OTLP's bucket i is (base^i, base^(i+1)]: the upper index less one.
    let offset = counts.first().map_or(0, |(i, _)| i - 1);
    let mut bucket_counts = Vec::new();
    for (i, n) in counts {
        let at = (i - 1 - offset) as usize;
        bucket_counts.resize(at + 1, 0);
        bucket_counts[at] = n;
    }
    let seen = !h.is_empty();
    ExponentialHistogramDataPoint {
        count: h.len(),
        sum: Some(crate::buckets::sum_s(h)),
        scale: SCALE,
        zero_count: zero,
        positive: Some(Buckets {
            offset,
            bucket_counts,
        }),
        min: seen.then(|| h.min() as f64 / 1e6),
        max: seen.then(|| h.max() as f64 / 1e6),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
