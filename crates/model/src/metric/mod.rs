//! One vocabulary of metrics: what `--threshold 'p99<10ms'`, `volley compare --metric` and the
//! reports call a number, where it is in a RunResult, how it is shown, and which way is
//! better. Adding a metric here makes it a threshold and a comparison at once.
//!
//! Names as people write them: `min mean max p50 p75 p90 p95 p99 p99.9 p99.99 p99.999`
//! (corrected latency), the same with `service_` (service time), `throughput` (or `rps`),
//! `errors`, `failed`, `checks`, `cpu_per_request`, `starved` (the share of the measured
//! seconds other processes starved volley, a percentage). A threshold on `errors` (`failed`,
//! `checks`) with a `%` limit is [`Metric::ErrorRate`] ([`Metric::FailedRate`],
//! [`Metric::CheckRate`]). A bound on one of them is a [`threshold`].

pub mod threshold;

use crate::result::endpoint::EndpointResult;
use crate::result::{Mode, RunResult};
use crate::stats::Percentiles;
use crate::units::{micros, micros_f, rate};

/// A statistic of a latency distribution: a key of the RunResult's percentile blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stat {
    /// Smallest value.
    Min,
    /// Arithmetic mean.
    Mean,
    /// Largest value.
    Max,
    /// Median.
    P50,
    /// 75th percentile.
    P75,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P99_9,
    /// 99.99th percentile.
    P99_99,
    /// 99.999th percentile.
    P99_999,
}

/// Every statistic: (statistic, name as written, JSON key).
const STATS: [(Stat, &str, &str); 11] = [
    (Stat::Min, "min", "min"),
    (Stat::Mean, "mean", "mean"),
    (Stat::Max, "max", "max"),
    (Stat::P50, "p50", "p50"),
    (Stat::P75, "p75", "p75"),
    (Stat::P90, "p90", "p90"),
    (Stat::P95, "p95", "p95"),
    (Stat::P99, "p99", "p99"),
    (Stat::P99_9, "p99.9", "p99_9"),
    (Stat::P99_99, "p99.99", "p99_99"),
    (Stat::P99_999, "p99.999", "p99_999"),
];

impl Stat {
    /// The percentiles the reports list, in order (p50 … p99.999).
    pub const PERCENTILES: [Stat; 8] = [
        Stat::P50,
        Stat::P75,
        Stat::P90,
        Stat::P95,
        Stat::P99,
        Stat::P99_9,
        Stat::P99_99,
        Stat::P99_999,
    ];

    fn entry(self) -> &'static (Stat, &'static str, &'static str) {
        STATS
            .iter()
            .find(|e| e.0 == self)
            .expect("every Stat is listed")
    }

    /// The name people write (`p99.9`).
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The RunResult key (`p99_9`).
    pub fn key(self) -> &'static str {
        self.entry().2
    }

    /// The statistic named `name` (`p99.9`), if any.
    pub fn parse(name: &str) -> Option<Stat> {
        STATS.iter().find(|e| e.1 == name).map(|e| e.0)
    }

    /// Its position in [`STATS`] (and in the prefixed name lists).
    fn index(self) -> usize {
        STATS.iter().position(|e| e.0 == self).unwrap_or(0)
    }

    /// Its value in a percentile block, µs; `None` for an empty histogram.
    pub fn of(self, p: &Percentiles) -> Option<f64> {
        let int = |v: Option<u64>| v.map(|v| v as f64);
        match self {
            Stat::Min => int(p.min),
            Stat::Mean => p.mean,
            Stat::Max => int(p.max),
            Stat::P50 => int(p.p50),
            Stat::P75 => int(p.p75),
            Stat::P90 => int(p.p90),
            Stat::P95 => int(p.p95),
            Stat::P99 => int(p.p99),
            Stat::P99_9 => int(p.p99_9),
            Stat::P99_99 => int(p.p99_99),
            Stat::P99_999 => int(p.p99_999),
        }
    }
}

/// A number of a run that can be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// A statistic of the corrected latency (the service time in closed loop), µs.
    Latency(Stat),
    /// A statistic of the service time (from the write), µs.
    Service(Stat),
    /// Completed responses per second.
    Throughput,
    /// Errors of every kind, a count.
    Errors,
    /// Errors in percent of the requests that got an answer or an error.
    ErrorRate,
    /// Failed responses (status ≥ 400), a count (`requests.failed`).
    Failed,
    /// Failed responses in percent of the completed ones (k6's `http_req_failed`).
    FailedRate,
    /// Responses that failed at least one check (`--expect-*`), a count
    /// (`requests.failed_checks`).
    Checks,
    /// Responses that failed at least one check in percent of the completed ones.
    CheckRate,
    /// The server's CPU time per completed request, µs (needs the monitor).
    CpuPerRequest,
    /// A statistic of the connect times (`connect_us`), µs.
    Connect(Stat),
    /// A statistic of the TLS handshake times (`tls_handshake_us`), µs.
    Handshake(Stat),
    /// The measured seconds in which other processes starved volley (`client.starved_fraction`
    /// as a percentage): `--threshold 'starved<10%'` fails a run the machine disturbed.
    Starved,
}

/// The unit a metric's values (and a threshold's limit) are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds; limits are written as durations (`10ms`).
    Micros,
    /// Requests per second; limits are plain numbers (`5000`, `5k`).
    PerSecond,
    /// A count.
    Count,
    /// A percentage; limits end in `%`.
    Percent,
}

/// Every name [`Metric::parse`] takes, for help texts and messages.
pub fn names() -> impl Iterator<Item = &'static str> {
    ["throughput", "rps"]
        .into_iter()
        .chain(STATS.iter().map(|e| e.1))
        .chain(SERVICE_NAMES)
        .chain(["errors", "failed", "checks", "cpu_per_request", "starved"])
        .chain(CONNECT_NAMES)
        .chain(HANDSHAKE_NAMES)
}

impl Metric {
    /// The metric called `name` (see the module's list); `ErrorRate` has no name of its own.
    pub fn parse(name: &str) -> Option<Metric> {
        if let Some(s) = Stat::parse(name) {
            return Some(Metric::Latency(s));
        }
        if let Some(s) = name.strip_prefix("service_").and_then(Stat::parse) {
            return Some(Metric::Service(s));
        }
        if let Some(s) = name.strip_prefix("connect_").and_then(Stat::parse) {
            return Some(Metric::Connect(s));
        }
        if let Some(s) = name.strip_prefix("tls_handshake_").and_then(Stat::parse) {
            return Some(Metric::Handshake(s));
        }
        match name {
            "throughput" | "rps" => Some(Metric::Throughput),
            "errors" => Some(Metric::Errors),
            "failed" => Some(Metric::Failed),
            "checks" => Some(Metric::Checks),
            "cpu_per_request" => Some(Metric::CpuPerRequest),
            "starved" => Some(Metric::Starved),
            _ => None,
        }
    }

    /// The name written in JSON (`throughput`, `p99`, `service_p99`, `errors`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Latency(s) => s.name(),
            Metric::Service(s) => SERVICE_NAMES[s.index()],
            Metric::Connect(s) => CONNECT_NAMES[s.index()],
            Metric::Handshake(s) => HANDSHAKE_NAMES[s.index()],
            Metric::Throughput => "throughput",
            Metric::Errors | Metric::ErrorRate => "errors",
            Metric::Failed | Metric::FailedRate => "failed",
            Metric::Checks | Metric::CheckRate => "checks",
            Metric::CpuPerRequest => "cpu_per_request",
            Metric::Starved => "starved",
        }
    }

    /// The short label of tables (`req/s`, `p99`, `service p99`, `CPU/req`).
    pub fn label(self) -> &'static str {
        match self {
            Metric::Throughput => "req/s",
            Metric::Service(Stat::P99) => "service p99",
            Metric::CpuPerRequest => "CPU/req",
            other => other.name(),
        }
    }

    /// What its values are measured in.
    pub fn unit(self) -> Unit {
        match self {
            Metric::Latency(_)
            | Metric::Service(_)
            | Metric::Connect(_)
            | Metric::Handshake(_)
            | Metric::CpuPerRequest => Unit::Micros,
            Metric::Throughput => Unit::PerSecond,
            Metric::Errors | Metric::Failed | Metric::Checks => Unit::Count,
            Metric::ErrorRate | Metric::FailedRate | Metric::CheckRate | Metric::Starved => {
                Unit::Percent
            }
        }
    }

    /// Throughput is the only metric where more is better.
    pub fn higher_is_better(self) -> bool {
        self == Metric::Throughput
    }

    /// `"higher"` or `"lower"`: which way is better.
    pub fn better(self) -> &'static str {
        if self.higher_is_better() {
            "higher"
        } else {
            "lower"
        }
    }

    /// The value in a result, in [`Metric::unit`]; `None` when it was not measured (an empty
    /// histogram, no server monitor, no request for a rate).
    pub fn value(self, r: &RunResult) -> Option<f64> {
        match self {
            Metric::Latency(s) => s.of(&r.latency_us),
            Metric::Service(s) => s.of(&r.service_time_us),
            Metric::Throughput => Some(r.throughput_rps),
            Metric::Errors => Some(r.requests.errors as f64),
            Metric::ErrorRate => {
                let e = r.requests.errors as f64;
                let n = r.requests.completed as f64 + e;
                (n > 0.0).then(|| e / n * 100.0)
            }
            Metric::Failed => Some(r.requests.failed as f64),
            Metric::FailedRate => share(r.requests.failed, r.requests.completed),
            Metric::Checks => r.requests.failed_checks.map(|n| n as f64),
            Metric::CheckRate => share(r.requests.failed_checks?, r.requests.completed),
            Metric::CpuPerRequest => r.server.as_ref()?.per_request.cpu_us,
            Metric::Connect(s) => s.of(r.setup.connect_us.as_ref()?),
            Metric::Handshake(s) => s.of(r.setup.tls_handshake_us.as_ref()?),
            Metric::Starved => Some(r.client.starved_fraction * 100.0),
        }
    }

    /// Whether a named request of a requests file has its own value of this metric: every
    /// metric but the server's CPU per request and the connections' connect and handshake
    /// times, which belong to the whole run.
    pub fn per_request(self) -> bool {
        !matches!(
            self,
            Metric::CpuPerRequest | Metric::Connect(_) | Metric::Handshake(_) | Metric::Starved
        )
    }

    /// The value of the named request `e` of run `r` (one of `r.endpoints`), in
    /// [`Metric::unit`]: its latency percentiles, its completed responses over the run's
    /// `elapsed_s` (as the run's throughput is), its errors and failed responses; `None` when
    /// not measured (an empty histogram, no response for a rate) or not [`per_request`].
    ///
    /// [`per_request`]: Metric::per_request
    pub fn endpoint_value(self, r: &RunResult, e: &EndpointResult) -> Option<f64> {
        let q = &e.requests;
        match self {
            Metric::Latency(s) => s.of(&e.latency_us),
            Metric::Service(s) => s.of(&e.service_time_us),
            Metric::Throughput => (r.elapsed_s > 0.0).then(|| q.completed as f64 / r.elapsed_s),
            Metric::Errors => Some(q.errors as f64),
            Metric::ErrorRate => {
                let n = q.completed as f64 + q.errors as f64;
                (n > 0.0).then(|| q.errors as f64 / n * 100.0)
            }
            Metric::Failed => Some(q.failed as f64),
            Metric::FailedRate => share(q.failed, q.completed),
            Metric::Checks => q.failed_checks.map(|n| n as f64),
            Metric::CheckRate => share(q.failed_checks?, q.completed),
            Metric::CpuPerRequest | Metric::Connect(_) | Metric::Handshake(_) | Metric::Starved => {
                None
            }
        }
    }

    /// A value as a table shows it: `51,234.1`, `1.24 ms`, `812 µs`, `12.3 µs`, `7`.
    pub fn format(self, v: f64) -> String {
        match self {
            Metric::Throughput => rate(v),
            Metric::CpuPerRequest => format!("{v:.1} µs"),
            Metric::Errors | Metric::Failed | Metric::Checks => {
                if v.fract() == 0.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1}")
                }
            }
            Metric::ErrorRate | Metric::FailedRate | Metric::CheckRate => format!("{v:.3}%"),
            Metric::Starved => format!("{v:.1}%"),
            _ if v.fract() == 0.0 && v >= 0.0 => micros(v as u64),
            _ => micros_f(v),
        }
    }

    /// A value as a sentence shows it, unit included: `812.0 µs`, `5,000.0 req/s`, `0.100%`.
    pub fn show(self, v: f64) -> String {
        match self.unit() {
            Unit::Micros => micros_f(v),
            Unit::PerSecond => format!("{} req/s", rate(v)),
            Unit::Percent => format!("{v:.3}%"),
            Unit::Count => format!("{v}"),
        }
    }

    /// The metric a comparison judges by default: throughput in closed loop (and with virtual
    /// users, also closed loop), corrected p99 in open loop.
    pub fn headline(mode: Mode) -> Metric {
        if mode.is_open() {
            Metric::Latency(Stat::P99)
        } else {
            Metric::Throughput
        }
    }
}

/// `part` in percent of `whole`; `None` when `whole` is 0.
fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64 * 100.0)
}

impl serde::Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `service_` names in the order of [`STATS`] (static, so `name` needs no allocation).
const SERVICE_NAMES: [&str; 11] = [
    "service_min",
    "service_mean",
    "service_max",
    "service_p50",
    "service_p75",
    "service_p90",
    "service_p95",
    "service_p99",
    "service_p99.9",
    "service_p99.99",
    "service_p99.999",
];

/// `connect_` names in the order of [`STATS`].
const CONNECT_NAMES: [&str; 11] = [
    "connect_min",
    "connect_mean",
    "connect_max",
    "connect_p50",
    "connect_p75",
    "connect_p90",
    "connect_p95",
    "connect_p99",
    "connect_p99.9",
    "connect_p99.99",
    "connect_p99.999",
];

/// `tls_handshake_` names in the order of [`STATS`].
const HANDSHAKE_NAMES: [&str; 11] = [
    "tls_handshake_min",
    "tls_handshake_mean",
    "tls_handshake_max",
    "tls_handshake_p50",
    "tls_handshake_p75",
    "tls_handshake_p90",
    "tls_handshake_p95",
    "tls_handshake_p99",
    "tls_handshake_p99.9",
    "tls_handshake_p99.99",
    "tls_handshake_p99.999",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_a_metric_of_that_name() {
        let all: Vec<&str> = names().collect();
        assert_eq!(all.len(), 51);
        for n in all {
            let m = Metric::parse(n).unwrap_or_else(|| panic!("{n}"));
            let canonical = if n == "rps" { "throughput" } else { n };
            assert_eq!(m.name(), canonical);
        }
        assert_eq!(Metric::parse("p98"), None);
        assert_eq!(Metric::parse("service_"), None);
        assert_eq!(
            Metric::parse("tls_handshake_p99"),
            Some(Metric::Handshake(Stat::P99))
        );
        assert_eq!(
            Metric::parse("connect_max"),
            Some(Metric::Connect(Stat::Max))
        );
        assert_eq!(Stat::P99_9.key(), "p99_9");
    }

    #[test]
    fn a_named_request_has_its_own_values() {
        let text = include_str!("../../../../tests/fixtures/report/mix.json");
        let r = RunResult::from_json(text).unwrap();
        let post = &r.endpoints[1];
        let v = |m: &str| Metric::parse(m).unwrap().endpoint_value(&r, post);
        assert_eq!(v("p99"), Some(227.0));
        assert_eq!(v("service_p50"), post.service_time_us.p50.map(|x| x as f64));
        assert_eq!(
            v("throughput"),
            Some(post.requests.completed as f64 / r.elapsed_s)
        );
        assert_eq!(v("failed"), Some(18_685.0));
        assert_eq!(v("errors"), Some(0.0));
        assert_eq!(
            Metric::FailedRate.endpoint_value(&r, post),
            Some(18_685.0 / 33_683.0 * 100.0)
        );
        for m in ["cpu_per_request", "connect_p99", "tls_handshake_max"] {
            let m = Metric::parse(m).unwrap();
            assert!(!m.per_request());
            assert_eq!(m.endpoint_value(&r, post), None, "{m}");
        }
        assert!(Metric::Throughput.per_request());
    }

    #[test]
    fn stats_read_the_fields_they_name() {
        let p = Percentiles {
            min: Some(1),
            mean: Some(2.5),
            stdev: Some(0.5),
            max: Some(11),
            p50: Some(3),
            p75: Some(4),
            p90: Some(5),
            p95: Some(6),
            p99: Some(7),
            p99_9: Some(8),
            p99_99: Some(9),
            p99_999: Some(10),
        };
        let json = serde_json::to_value(&p).unwrap();
        for (s, _, key) in STATS {
            assert_eq!(s.of(&p), json[key].as_f64(), "{key}");
        }
    }

    #[test]
    fn formats_and_directions() {
        let p99 = Metric::Latency(Stat::P99);
        assert_eq!(p99.format(812.0), "812 µs");
        assert_eq!(p99.show(812.0), "812.0 µs");
        assert_eq!(p99.format(1240.0), "1.24 ms");
        assert_eq!(Metric::Throughput.format(5000.0), "5,000.0");
        assert_eq!(Metric::Throughput.show(5000.0), "5,000.0 req/s");
        assert_eq!(Metric::ErrorRate.show(0.1), "0.100%");
        assert_eq!(Metric::Errors.format(7.0), "7");
        assert!(Metric::Throughput.higher_is_better() && !p99.higher_is_better());
        assert_eq!(Metric::headline(Mode::Open), p99);
        assert_eq!(Metric::headline(Mode::Ramp), Metric::Throughput);
        assert_eq!(Metric::Service(Stat::P99).label(), "service p99");
    }
}
