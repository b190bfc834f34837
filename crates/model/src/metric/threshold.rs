//! Thresholds (`--threshold 'p99<10ms'`, suite `thresholds = [...]`): pass/fail criteria on a
//! run's results, in the forms k6 users write (`failed<1%` is k6's `http_req_failed`). A broken
//! threshold makes the run exit 1. The syntax and what each metric counts are docs/contract.md,
//! "Thresholds"; the metrics are [`Metric`]'s.
//!
//! Declared checks imply `checks<=1%` unless a threshold names `checks`: whoever writes an
//! expectation expects a run that does not meet it to fail ([`with_implied`], [`implied_for`]).

use super::{Metric, Unit};
use crate::result::{Checked, RunResult};
use crate::units::{parse_decimal, parse_duration};

/// A parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written (trimmed).
    pub text: String,
    /// What is compared.
    pub metric: Metric,
    /// How.
    pub op: Op,
    /// The limit in the metric's unit: µs, req/s, a count or a percentage.
    pub limit: f64,
    /// Not written by the user: the bound declared checks imply.
    pub implied: bool,
}

/// The share of the responses that may fail a check when checks are declared and no threshold
/// names `checks`, percent: the failed-checks headline's "more than 1 %", with the same
/// comparison, so exactly 1 % passes and does not warn.
pub(crate) const IMPLIED_CHECKS_PCT: f64 = 1.0;

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

impl Op {
    /// Whether `actual OP limit` holds.
    pub(crate) fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
        }
    }
}

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
    let metric = match Metric::parse(name) {
        Some(Metric::Errors) if value.ends_with('%') => Metric::ErrorRate,
        Some(Metric::Failed) if value.ends_with('%') => Metric::FailedRate,
        Some(Metric::Checks) if value.ends_with('%') => Metric::CheckRate,
        Some(m) => m,
        None => {
            return Err(format!(
                "`{t}`: unknown metric `{name}` (use min, mean, max, p50 … p99.999, service_p99 …, rps, errors, failed, checks, cpu_per_request, starved)"
            ))
        }
    };
    let limit = match metric.unit() {
        Unit::Micros => {
            let d = parse_duration(value).map_err(|e| format!("`{t}`: {e}"))?;
            d.as_nanos() as f64 / 1000.0
        }
        Unit::Percent => {
            let p = value.strip_suffix('%').unwrap_or(value).trim();
            parse_decimal(p).map_err(|e| format!("`{t}`: {e}"))?
        }
        Unit::PerSecond | Unit::Count => parse_decimal(value).map_err(|e| format!("`{t}`: {e}"))?,
    };
    if limit < 0.0 || !limit.is_finite() {
        return Err(format!("`{t}`: the limit must be a number from 0 up"));
    }
    Ok(Threshold {
        text: t.to_string(),
        metric,
        op,
        limit,
        implied: false,
    })
}

/// `given` and, when checks are declared (`checks_declared`) and none of `given` names
/// `checks`, the bound they imply.
pub fn with_implied(mut given: Vec<Threshold>, checks_declared: bool) -> Vec<Threshold> {
    if checks_declared && !given.iter().any(Threshold::on_checks) {
        given.push(Threshold::implied_checks());
    }
    given
}

/// The bound a result's checks imply when it is judged by `given`: the result was checked
/// (`requests.failed_checks` is there only when checks were declared; results of versions
/// that did not count it are not judged) and none of `given` names `checks`.
pub fn implied_for(r: &RunResult, given: &[Threshold]) -> Option<Threshold> {
    (r.requests.failed_checks.is_some() && !given.iter().any(Threshold::on_checks))
        .then(Threshold::implied_checks)
}

impl Threshold {
    /// `checks<=1%`, implied by declared checks.
    pub fn implied_checks() -> Threshold {
        Threshold {
            text: format!("checks<={IMPLIED_CHECKS_PCT}%"),
            metric: Metric::CheckRate,
            op: Op::Le,
            limit: IMPLIED_CHECKS_PCT,
            implied: true,
        }
    }

    /// Whether it judges the responses' checks (`checks<10`, `checks<5%`).
    pub(crate) fn on_checks(&self) -> bool {
        matches!(self.metric, Metric::Checks | Metric::CheckRate)
    }

    /// The measured value in the threshold's unit.
    pub fn actual(&self, r: &RunResult) -> Option<f64> {
        self.metric.value(r)
    }

    /// Checks the threshold against a result.
    pub fn check(&self, r: &RunResult) -> Checked {
        let actual = self.actual(r);
        Checked {
            threshold: self.text.clone(),
            actual: actual.map(|a| (a * 1000.0).round() / 1000.0),
            pass: actual.is_some_and(|a| self.op.holds(a, self.limit)),
            implied: self.implied,
        }
    }

    /// How the measured value is shown next to the threshold (`8.21 ms`, `no data`).
    pub fn show(&self, actual: Option<f64>) -> String {
        match actual {
            Some(a) => self.metric.show(a),
            None => "no data".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Stat;

    #[test]
    fn parses_the_forms_k6_users_write() {
        let t = parse("p99<10ms").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Latency(Stat::P99), Op::Lt, 10_000.0)
        );
        let t = parse(" errors < 0.1% ").unwrap();
        assert_eq!((t.metric, t.limit), (Metric::ErrorRate, 0.1));
        let t = parse("rps>=5000").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Throughput, Op::Ge, 5000.0)
        );
        assert_eq!(
            parse("p99.9<=1.5s").unwrap().metric,
            Metric::Latency(Stat::P99_9)
        );
        assert_eq!(parse("service_p50<500us").unwrap().limit, 500.0);
        assert_eq!(parse("errors<10").unwrap().metric, Metric::Errors);
        assert_eq!(parse("failed<1%").unwrap().metric, Metric::FailedRate);
        assert_eq!(parse("failed<=3").unwrap().metric, Metric::Failed);
        assert!(parse("p99").unwrap_err().contains("expected METRIC"));
        assert!(parse("p98<1ms")
            .unwrap_err()
            .contains("unknown metric `p98`"));
        assert_eq!(parse("checks<5%").unwrap().metric, Metric::CheckRate);
        assert_eq!(parse("checks<10").unwrap().metric, Metric::Checks);
        let starved = parse("starved<10%").unwrap();
        assert_eq!((starved.metric, starved.limit), (Metric::Starved, 10.0));
        let mut r = RunResult::from_json(include_str!(
            "../../../../tests/fixtures/report/open-loop.json"
        ))
        .unwrap();
        r.client.starved_fraction = 0.25;
        assert_eq!(Metric::Starved.value(&r), Some(25.0));
        assert!(parse("p99<fast").is_err());
        assert!(parse("rps>").is_err());
    }

    #[test]
    fn declared_checks_imply_one_percent_unless_a_threshold_names_checks() {
        let implied = Threshold::implied_checks();
        assert_eq!(implied.text, "checks<=1%");
        let written = parse(&implied.text).unwrap();
        assert_eq!(
            (written.metric, written.op, written.limit),
            (implied.metric, implied.op, implied.limit)
        );
        assert!(implied.implied && !written.implied);
        let p99 = parse("p99<10ms").unwrap();
        assert_eq!(with_implied(vec![p99.clone()], false), vec![p99.clone()]);
        assert_eq!(
            with_implied(vec![p99.clone()], true),
            vec![p99.clone(), implied.clone()]
        );
        let own = parse("checks<5%").unwrap();
        assert_eq!(with_implied(vec![own.clone()], true), vec![own.clone()]);
        assert_eq!(
            with_implied(vec![parse("checks<=3").unwrap()], true).len(),
            1
        );
    }

    #[test]
    fn the_implied_bound_judges_the_share_that_failed_a_check() {
        let text = include_str!("../../../../tests/fixtures/report/open-loop.json");
        let mut r = RunResult::from_json(text).unwrap();
        assert_eq!(implied_for(&r, &[]), None, "no checks declared");
        r.checks.insert("status".into(), 10);
        assert_eq!(
            implied_for(&r, &[]),
            None,
            "an earlier version's checked result"
        );
        r.requests.completed = 1000;
        r.requests.failed_checks = Some(10);
        let t = implied_for(&r, &[]).unwrap();
        let c = t.check(&r);
        assert!(c.pass && c.implied, "exactly 1 % passes: {c:?}");
        assert_eq!(c.actual, Some(1.0));
        r.requests.failed_checks = Some(11);
        assert!(!t.check(&r).pass, "above 1 % breaks it");
        assert_eq!(implied_for(&r, &[parse("checks<50%").unwrap()]), None);
        assert!(implied_for(&r, &[parse("p99<1s").unwrap()]).is_some());
    }
}
