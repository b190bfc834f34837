//! Thresholds (`--threshold 'p99<10ms'`, suite `thresholds = [...]`): pass/fail criteria on a
//! run's results, as k6 users expect. A broken threshold makes the run exit 1.
//!
//! Syntax: `METRIC OP VALUE` with OP one of `<`, `<=`, `>`, `>=`:
//! - latency (corrected; service time in closed loop): `min mean max p50 p75 p90 p95 p99 p99.9
//!   p99.99 p99.999` against a duration (`10ms`, `500us`, `1.5s`);
//! - `service_p99` and the like: the same on the service time;
//! - `rps`: throughput in completed responses per second;
//! - `errors`: a count (`errors<10`) or a share of the requests that got an answer or an error
//!   (`errors<0.1%`);
//! - `cpu_per_request`: the server's CPU µs per request (needs the monitor), a duration.

use serde::{Deserialize, Serialize};

use crate::result::RunResult;
use crate::stats::Percentiles;

/// A parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written (trimmed).
    pub text: String,
    /// What is compared.
    pub metric: Metric,
    /// How.
    pub op: Op,
    /// The limit: µs for durations, req/s, a count, or a percentage with `percent`.
    pub limit: f64,
    /// `errors<0.1%`: the limit is a percentage.
    pub percent: bool,
}

/// A threshold's metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// A statistic of the corrected latency (`p99`, `mean`, ...): the RunResult key.
    Latency(&'static str),
    /// The same statistic of the service time.
    Service(&'static str),
    /// Throughput.
    Rps,
    /// Errors, as a count or a percentage.
    Errors,
    /// Server CPU per request.
    CpuPerRequest,
}

/// Comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A threshold checked against a result (kept in the RunResult's `thresholds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// The threshold as written.
    pub threshold: String,
    /// The measured value in the threshold's unit (µs, req/s, count or %); null when there
    /// was nothing to measure (no response, no monitor), which fails.
    pub actual: Option<f64>,
    /// Whether it held.
    pub pass: bool,
}

/// Statistic names and their RunResult keys.
const STATS: &[(&str, &str)] = &[
    ("min", "min"),
    ("mean", "mean"),
    ("max", "max"),
    ("p50", "p50"),
    ("p75", "p75"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("p99.9", "p99_9"),
    ("p99.99", "p99_99"),
    ("p99.999", "p99_999"),
];

/// Parses one threshold.
pub fn parse(text: &str) -> Result<Threshold, String> {
    let t = text.trim();
    let pos = t.find(['<', '>']).ok_or_else(|| {
        format!(
            "`{t}`: expected METRIC<VALUE or METRIC>VALUE, e.g. p99<10ms, errors<0.1%, rps>5000"
        )
    })?;
    let name = t[..pos].trim();
    let (op, rest) = match (&t[pos..pos + 1], t[pos + 1..].starts_with('=')) {
        ("<", true) => (Op::Le, &t[pos + 2..]),
        ("<", false) => (Op::Lt, &t[pos + 1..]),
        (">", true) => (Op::Ge, &t[pos + 2..]),
        _ => (Op::Gt, &t[pos + 1..]),
    };
    let value = rest.trim();
    if value.is_empty() {
        return Err(format!("`{t}`: no value after the comparison"));
    }
    let stat = |n: &str| STATS.iter().find(|(s, _)| *s == n).map(|(_, k)| *k);
    let duration = |v: &str| -> Result<f64, String> {
        let d = crate::units::parse_duration(v).map_err(|e| format!("`{t}`: {e}"))?;
        Ok(d.as_nanos() as f64 / 1000.0)
    };
    let number = |v: &str| -> Result<f64, String> {
        crate::units::parse_decimal(v).map_err(|e| format!("`{t}`: {e}"))
    };
    let (metric, limit, percent) = if let Some(k) = stat(name) {
        (Metric::Latency(k), duration(value)?, false)
    } else if let Some(k) = name.strip_prefix("service_").and_then(stat) {
        (Metric::Service(k), duration(value)?, false)
    } else {
        match name {
            "rps" | "throughput" => (Metric::Rps, number(value)?, false),
            "errors" => match value.strip_suffix('%') {
                Some(p) => (Metric::Errors, number(p.trim())?, true),
                None => (Metric::Errors, number(value)?, false),
            },
            "cpu_per_request" => (Metric::CpuPerRequest, duration(value)?, false),
            other => {
                return Err(format!(
                    "`{t}`: unknown metric `{other}` (use min, mean, max, p50 … p99.999, service_p99 …, rps, errors, cpu_per_request)"
                ))
            }
        }
    };
    if limit < 0.0 || !limit.is_finite() {
        return Err(format!("`{t}`: the limit must be a number from 0 up"));
    }
    Ok(Threshold {
        text: t.to_string(),
        metric,
        op,
        limit,
        percent,
    })
}

fn stat_of(p: &Percentiles, key: &str) -> Option<f64> {
    let v = serde_json::to_value(p).ok()?;
    v.get(key)?.as_f64()
}

impl Threshold {
    /// The measured value in the threshold's unit.
    pub fn actual(&self, r: &RunResult) -> Option<f64> {
        match &self.metric {
            Metric::Latency(k) => stat_of(&r.latency_us, k),
            Metric::Service(k) => stat_of(&r.service_time_us, k),
            Metric::Rps => Some(r.throughput_rps),
            Metric::Errors => {
                let e = r.requests.errors as f64;
                if self.percent {
                    let n = r.requests.completed as f64 + e;
                    (n > 0.0).then(|| e / n * 100.0)
                } else {
                    Some(e)
                }
            }
            Metric::CpuPerRequest => r.server.as_ref()?.per_request.cpu_us,
        }
    }

    /// Checks the threshold against a result.
    pub fn check(&self, r: &RunResult) -> Checked {
        let actual = self.actual(r);
        let pass = actual.is_some_and(|a| match self.op {
            Op::Lt => a < self.limit,
            Op::Le => a <= self.limit,
            Op::Gt => a > self.limit,
            Op::Ge => a >= self.limit,
        });
        Checked {
            threshold: self.text.clone(),
            actual: actual.map(|a| (a * 1000.0).round() / 1000.0),
            pass,
        }
    }

    /// How the measured value is shown next to the threshold (`p99 = 8.21 ms`).
    pub fn show(&self, actual: Option<f64>) -> String {
        let Some(a) = actual else {
            return "no data".into();
        };
        match self.metric {
            Metric::Latency(_) | Metric::Service(_) | Metric::CpuPerRequest => {
                crate::units::micros_f(a)
            }
            Metric::Rps => format!("{} req/s", crate::units::rate(a)),
            Metric::Errors if self.percent => format!("{a:.3}%"),
            Metric::Errors => format!("{a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_k6_users_write() {
        let t = parse("p99<10ms").unwrap();
        assert_eq!(
            (t.metric.clone(), t.op, t.limit),
            (Metric::Latency("p99"), Op::Lt, 10_000.0)
        );
        let t = parse(" errors < 0.1% ").unwrap();
        assert_eq!(
            (t.metric.clone(), t.limit, t.percent),
            (Metric::Errors, 0.1, true)
        );
        let t = parse("rps>=5000").unwrap();
        assert_eq!(
            (t.metric.clone(), t.op, t.limit),
            (Metric::Rps, Op::Ge, 5000.0)
        );
        assert_eq!(
            parse("p99.9<=1.5s").unwrap().metric,
            Metric::Latency("p99_9")
        );
        assert_eq!(parse("service_p50<500us").unwrap().limit, 500.0);
        assert!(!parse("errors<10").unwrap().percent);
        assert!(parse("p99").unwrap_err().contains("expected METRIC"));
        assert!(parse("p98<1ms")
            .unwrap_err()
            .contains("unknown metric `p98`"));
        assert!(parse("p99<fast").is_err());
        assert!(parse("rps>").is_err());
    }
}
