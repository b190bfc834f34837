//! `--metrics-addr`: the run's numbers in the OpenMetrics text format at `/metrics`, for a
//! Prometheus scrape during a long run. The totals are updated once a second by the live
//! observer (from the aggregator's finished seconds, never from a worker) and encoded on each
//! scrape by the Prometheus org's `prometheus-client`.
//!
//! Histograms: the text format carries classic buckets only, so the run's HDR histograms
//! (corrected latency, service time) are cut at [`BOUNDS_S`]: each bucket counts the values
//! whose HDR bucket lies at or under its bound (HDR's 3 significant digits: a value within
//! 0.1 % above a bound may be counted under it). The sum is HDR's mean × count.

use std::borrow::Cow;
use std::io;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::http::{self, Handler, Request};
use volley_model::stats::histogram::{new_hist, Hist};
use volley_model::stats::recorder::Counters;

/// Classic bucket bounds, seconds: 100 µs to 10 s, then +Inf.
pub const BOUNDS_S: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// What `/metrics` shows, as of the last finished second.
#[derive(Debug)]
pub struct Totals {
    /// The run's corrected latency so far, µs.
    pub latency: Hist,
    /// Its service time so far, µs.
    pub service: Hist,
    /// Its counters so far.
    pub counts: Counters,
    /// `-R`, when the run has one.
    pub target_rps: Option<f64>,
    /// Responses in the last finished second, per second.
    pub achieved_rps: f64,
    /// Virtual users active in the last second (ramp mode).
    pub users: Option<u64>,
    /// Volley's CPU seconds so far (user + system).
    pub client_cpu_s: f64,
    /// The monitored server's last second (`--pid`).
    pub server: Option<super::observer::ServerJson>,
    /// The labels of the run being measured.
    pub names: Names,
    /// When these totals started counting (a counter's start, for OTLP).
    pub since: SystemTime,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            latency: new_hist(),
            service: new_hist(),
            counts: Counters::default(),
            target_rps: None,
            achieved_rps: 0.0,
            users: None,
            client_cpu_s: 0.0,
            server: None,
            names: Names::default(),
            since: SystemTime::now(),
        }
    }
}

impl Totals {
    /// Requests written and not yet answered (nor failed after their write).
    pub(crate) fn inflight(&self) -> u64 {
        let e = &self.counts.errors;
        let ended = self.counts.completed + e.timeout + e.reset + e.protocol + e.closed;
        self.counts.sent.saturating_sub(ended)
    }
}

/// The labels every series carries besides `run_id` (set on the registry).
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// `run`, or the suite's scenario.
    pub scenario: String,
    /// The request's path, or `*` for a requests file's mix.
    pub endpoint: String,
}

/// The collector a scrape encodes.
#[derive(Debug)]
struct Snapshot {
    totals: Arc<Mutex<Totals>>,
}

/// A gauge: its name, its help, and its value when it has one.
type Gauge = (&'static str, &'static str, fn(&Totals) -> Option<f64>);

/// The gauges, in the order they are shown (the server's only with `--pid`).
const GAUGES: [Gauge; 10] = [
    (
        "volley_target_rate",
        "The requested rate (-R), requests per second",
        |t| t.target_rps,
    ),
    (
        "volley_achieved_rate",
        "Responses in the last finished second",
        |t| Some(t.achieved_rps),
    ),
    (
        "volley_inflight",
        "Requests written and not yet answered",
        |t| Some(t.inflight() as f64),
    ),
    (
        "volley_users",
        "Virtual users active in the last finished second",
        |t| t.users.map(|u| u as f64),
    ),
    (
        "volley_server_cpu_user_cores",
        "The monitored server's user CPU in its last second, in cores",
        |t| t.server.as_ref().map(|s| s.cpu_user_pct / 100.0),
    ),
    (
        "volley_server_cpu_system_cores",
        "The monitored server's system CPU in its last second, in cores",
        |t| t.server.as_ref().map(|s| s.cpu_sys_pct / 100.0),
    ),
    (
        "volley_server_resident_memory_bytes",
        "The monitored server's resident memory (its process tree)",
        |t| t.server.as_ref().map(|s| s.rss_bytes as f64),
    ),
    (
        "volley_server_threads",
        "The monitored server's threads",
        |t| t.server.as_ref().map(|s| s.threads as f64),
    ),
    (
        "volley_server_syscalls_per_second",
        "The monitored server's syscalls in its last second",
        |t| t.server.as_ref().and_then(|s| s.syscalls_per_s),
    ),
    (
        "volley_server_context_switches_per_second",
        "The monitored server's context switches in its last second",
        |t| t.server.as_ref().map(|s| s.ctx_switches_per_s),
    ),
];

/// A family's name (counters without `_total`, histograms without `_seconds`: the encoder
/// adds them) and its help.
type Family = (&'static str, &'static str);

/// Volley's CPU so far: a counter (it only grows), `volley_client_cpu_seconds_total`.
const CLIENT_CPU: Family = (
    "volley_client_cpu_seconds",
    "Volley's own CPU time so far (user + system)",
);
const REQUESTS: Family = ("volley_requests", "Responses completed, by status class");
const ERRORS: Family = (
    "volley_errors",
    "Requests or connections that ended without a response, by kind",
);
const DURATION: Family = (
    "volley_request_duration",
    "Corrected latency: from each request's due time (its send in a closed loop) to its response",
);
const SERVICE: Family = (
    "volley_service_time",
    "Service time: from each request's write to its response",
);
const GC_PAUSES: Family = (
    "volley_server_gc_pauses",
    "The monitored server's stop-the-world pauses since t0 (a JVM's counters or --gc-log)",
);
const GC_SECONDS: Family = ("volley_server_gc_pause_seconds", "Their total time");

/// What a pushed series holds.
#[derive(Debug)]
pub(crate) enum Value<'a> {
    /// A counter: it only grows during a run.
    Counter(f64),
    /// A gauge.
    Gauge(f64),
    /// A histogram of µs (pushed in seconds).
    Histogram(&'a Hist),
}

/// One series as the pushes send it (remote write, OTLP).
#[derive(Debug)]
pub(crate) struct Series<'a> {
    /// Its full name, as scraped (`volley_requests_total`, `…_seconds`).
    pub name: String,
    /// Its family's help.
    pub help: &'static str,
    /// Its labels besides `run_id`.
    pub labels: Vec<(&'static str, String)>,
    /// Its value.
    pub value: Value<'a>,
}

/// Every series of the totals, as `/metrics` shows them: the pushes send the same.
pub(crate) fn series(t: &Totals) -> Vec<Series<'_>> {
    let named = || {
        vec![
            ("scenario", t.names.scenario.clone()),
            ("endpoint", t.names.endpoint.clone()),
        ]
    };
    let one = |(family, help): Family, suffix: &str, labels, value| Series {
        name: format!("{family}{suffix}"),
        help,
        labels,
        value,
    };
    let mut out = Vec::new();
    for (class, n) in status_classes(&t.counts) {
        let mut labels = named();
        labels.push(("status_class", class.to_string()));
        out.push(one(REQUESTS, "_total", labels, Value::Counter(n as f64)));
    }
    for (kind, n) in error_kinds(&t.counts.errors) {
        let labels = vec![("kind", kind.to_string())];
        out.push(one(ERRORS, "_total", labels, Value::Counter(n as f64)));
    }
    for (name, help, value) in GAUGES {
        if let Some(v) = value(t) {
            out.push(one((name, help), "", vec![], Value::Gauge(v)));
        }
    }
    if let Some(gc) = t.server.as_ref().and_then(|s| s.gc) {
        let pauses = Value::Counter(gc.pause_count as f64);
        out.push(one(GC_PAUSES, "_total", vec![], pauses));
        let seconds = Value::Counter(gc.pause_total_ms / 1e3);
        out.push(one(GC_SECONDS, "_total", vec![], seconds));
    }
    let cpu = Value::Counter(t.client_cpu_s);
    out.push(one(CLIENT_CPU, "_total", vec![], cpu));
    for (family, h) in [(DURATION, &t.latency), (SERVICE, &t.service)] {
        out.push(one(family, "_seconds", named(), Value::Histogram(h)));
    }
    out
}

type Labels<'a> = Vec<(&'static str, Cow<'a, str>)>;

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        let base = |extra: Labels<'static>| -> Labels<'static> {
            let mut l: Labels = vec![
                ("scenario", Cow::Owned(t.names.scenario.clone())),
                ("endpoint", Cow::Owned(t.names.endpoint.clone())),
            ];
            l.extend(extra);
            l
        };
        {
            let mut fam =
                enc.encode_descriptor(REQUESTS.0, REQUESTS.1, None, MetricType::Counter)?;
            for (class, n) in status_classes(&t.counts) {
                let labels = base(vec![("status_class", Cow::Borrowed(class))]);
                fam.encode_family(&labels)?
                    .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&n, None)?;
            }
        }
        {
            let mut fam = enc.encode_descriptor(ERRORS.0, ERRORS.1, None, MetricType::Counter)?;
            for (kind, n) in error_kinds(&t.counts.errors) {
                let labels = vec![("kind", Cow::Borrowed(kind))];
                fam.encode_family(&labels)?
                    .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&n, None)?;
            }
        }
        histogram(&mut enc, DURATION, &t.latency, &base(vec![]))?;
        histogram(&mut enc, SERVICE, &t.service, &base(vec![]))?;
        for (name, help, value) in GAUGES {
            if let Some(v) = value(&t) {
                enc.encode_descriptor(name, help, None, MetricType::Gauge)?
                    .encode_gauge(&v)?;
            }
        }
        if let Some(gc) = t.server.as_ref().and_then(|s| s.gc) {
            enc.encode_descriptor(GC_PAUSES.0, GC_PAUSES.1, None, MetricType::Counter)?
                .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                    &gc.pause_count,
                    None,
                )?;
            enc.encode_descriptor(GC_SECONDS.0, GC_SECONDS.1, None, MetricType::Counter)?
                .encode_counter::<prometheus_client::encoding::NoLabelSet, _, f64>(
                    &(gc.pause_total_ms / 1e3),
                    None,
                )?;
        }
        enc.encode_descriptor(CLIENT_CPU.0, CLIENT_CPU.1, None, MetricType::Counter)?
            .encode_counter::<prometheus_client::encoding::NoLabelSet, _, f64>(
                &t.client_cpu_s,
                None,
            )?;
        Ok(())
    }
}

fn histogram(
    enc: &mut DescriptorEncoder,
    (name, help): Family,
    h: &Hist,
    labels: &Labels,
) -> Result<(), std::fmt::Error> {
    let (sum_s, count, buckets) = classic_buckets(h);
    let mut fam = enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    fam.encode_family(labels)?
        .encode_histogram::<prometheus_client::encoding::NoLabelSet>(sum_s, count, &buckets, None)
}

/// The classic buckets of an HDR histogram of µs: (sum in seconds, count, [(bound, count in
/// that bucket alone)]) ending with +Inf.
pub(crate) fn classic_buckets(h: &Hist) -> (f64, u64, Vec<(f64, u64)>) {
    let count = h.len();
    let mut out = Vec::with_capacity(BOUNDS_S.len() + 1);
    let mut below = 0u64;
    for bound in BOUNDS_S {
        let us = (bound * 1e6) as u64;
        let upto = if count == 0 {
            0
        } else {
            h.count_between(0, us)
        };
        let upto = upto.min(count).max(below);
        out.push((bound, upto - below));
        below = upto;
    }
    out.push((f64::INFINITY, count - below));
    (super::buckets::sum_s(h), count, out)
}

/// Errors by kind, as the `kind` label names them.
pub(crate) fn error_kinds(
    e: &volley_model::stats::recorder::ErrorCounts,
) -> [(&'static str, u64); 5] {
    [
        ("connect", e.connect),
        ("timeout", e.timeout),
        ("reset", e.reset),
        ("protocol", e.protocol),
        ("closed", e.closed),
    ]
}

/// Completed responses by status class (`1xx` … `5xx`).
pub(crate) fn status_classes(c: &Counters) -> Vec<(&'static str, u64)> {
    const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
    let mut n = [0u64; 5];
    for (code, count) in c.status.iter().enumerate() {
        if (100..600).contains(&code) {
            n[code / 100 - 1] += count;
        }
    }
    CLASSES.iter().copied().zip(n).collect()
}

/// Serves `/metrics` from the totals.
pub struct MetricsHandler {
    registry: Registry,
}

impl MetricsHandler {
    /// A handler for the run `run_id` whose totals the live observer updates.
    pub fn new(run_id: &str, names: Names, totals: Arc<Mutex<Totals>>) -> MetricsHandler {
        let labels = [(Cow::Borrowed("run_id"), Cow::Owned(run_id.to_string()))];
        let mut registry = Registry::with_labels(labels.into_iter());
        totals.lock().unwrap_or_else(|e| e.into_inner()).names = names;
        registry.register_collector(Box::new(Snapshot { totals }));
        MetricsHandler { registry }
    }

    /// The exposition text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Handler for MetricsHandler {
    fn respond(&self, req: &Request, out: &mut TcpStream) -> io::Result<()> {
        if req.path != "/metrics" {
            return http::status(out, 404, "volley serves /metrics here");
        }
        http::ok(
            out,
            req,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            "",
            self.text().as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_buckets_add_up_to_the_count() {
        let mut h = new_hist();
        for v in [50, 120, 900, 1_000, 30_000, 20_000_000] {
            h.record(v).unwrap();
        }
        let (sum, count, b) = classic_buckets(&h);
        assert_eq!(count, 6);
        assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 6);
        assert_eq!(b[0], (0.0001, 1), "50 µs under 100 µs");
        assert_eq!(b[1], (0.00025, 1), "120 µs under 250 µs");
        assert_eq!(b[3].1, 2, "900 µs and 1 ms under 1 ms");
        assert_eq!(b.last().unwrap().1, 1, "20 s past every bound");
        assert!((sum - 20.032).abs() < 0.05, "{sum}");
    }

    #[test]
    fn the_text_names_every_family_with_the_run_id() {
        let totals = Arc::new(Mutex::new(Totals::default()));
        {
            let mut t = totals.lock().unwrap();
            t.latency.record(1_500).unwrap();
            t.counts.completed = 1;
            t.counts.sent = 2;
            t.counts.status[200] = 1;
            t.target_rps = Some(100.0);
        }
        let names = Names {
            scenario: "run".into(),
            endpoint: "/".into(),
        };
        let text = MetricsHandler::new("abc123", names, totals).text();
        for want in [
            "volley_requests_total{run_id=\"abc123\",scenario=\"run\",endpoint=\"/\",status_class=\"2xx\"} 1",
            "volley_errors_total{run_id=\"abc123\",kind=\"timeout\"} 0",
            "volley_request_duration_seconds_bucket{run_id=\"abc123\",le=\"0.0025\",scenario=\"run\",endpoint=\"/\"} 1",
            "volley_request_duration_seconds_bucket{run_id=\"abc123\",le=\"0.001\",scenario=\"run\",endpoint=\"/\"} 0",
            "volley_target_rate{run_id=\"abc123\"} 100",
            "volley_inflight{run_id=\"abc123\"} 1",
            "# EOF",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
        assert!(!text.contains("volley_users"), "no users outside a ramp");
    }
}
