//! The numbers history judges: every metric of `volley_model::metric` (read back from a saved run's
//! scalars) and a capacity search's `max_rate`.

use std::collections::BTreeMap;

use volley_model::metric::{Metric, Stat};

/// A metric of a saved run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// A metric of a RunResult.
    Run(Metric),
    /// The highest rate a capacity search found within its SLO, req/s.
    MaxRate,
}

impl Measure {
    /// `max_rate`, or a name `volley_model::metric::Metric::parse` takes; `None` otherwise.
    pub fn parse(name: &str) -> Option<Measure> {
        if name == "max_rate" {
            return Some(Measure::MaxRate);
        }
        Metric::parse(name).map(Measure::Run)
    }

    /// Every name [`Measure::parse`] takes, for messages.
    pub fn names() -> String {
        volley_model::metric::names()
            .chain(["max_rate"])
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Run(m) => m.name(),
            Measure::MaxRate => "max_rate",
        }
    }

    /// More is better (throughput, max rate).
    pub fn higher_is_better(self) -> bool {
        match self {
            Measure::Run(m) => m.higher_is_better(),
            Measure::MaxRate => true,
        }
    }

    /// A tail statistic (p90 and above, max): noisy run to run, so it warns rather than gates
    /// unless asked to gate.
    pub fn is_tail(self) -> bool {
        let tail = |s: Stat| {
            matches!(
                s,
                Stat::P90
                    | Stat::P95
                    | Stat::P99
                    | Stat::P99_9
                    | Stat::P99_99
                    | Stat::P99_999
                    | Stat::Max
            )
        };
        match self {
            Measure::Run(Metric::Latency(s) | Metric::Service(s)) => tail(s),
            Measure::Run(Metric::Connect(s) | Metric::Handshake(s)) => tail(s),
            _ => false,
        }
    }

    /// Applies to a saved result of this kind.
    pub fn applies_to(self, capacity: bool) -> bool {
        matches!(self, Measure::MaxRate) == capacity
    }

    /// A value as shown, unit included.
    pub fn show(self, v: f64) -> String {
        match self {
            Measure::Run(m) => m.show(v),
            Measure::MaxRate => Metric::Throughput.show(v),
        }
    }

    /// Its value in a saved run's scalars; `None` when not measured.
    pub fn value(self, s: &BTreeMap<String, f64>) -> Option<f64> {
        let get = |k: &str| s.get(k).copied();
        let pct = |block: &str, st: Stat| get(&format!("{block}.{}", st.key()));
        match self {
            Measure::MaxRate => get("max_rate_rps"),
            Measure::Run(m) => match m {
                Metric::Latency(st) => pct("latency_us", st),
                Metric::Service(st) => pct("service_time_us", st),
                Metric::Connect(st) => pct("connect_us", st),
                Metric::Handshake(st) => pct("tls_handshake_us", st),
                Metric::Throughput => get("throughput_rps"),
                Metric::Errors => get("requests.errors"),
                Metric::Failed => get("requests.failed"),
                Metric::CpuPerRequest => get("server.per_request.cpu_us"),
                Metric::ErrorRate => {
                    let e = get("requests.errors")?;
                    let n = get("requests.completed")? + e;
                    (n > 0.0).then(|| e / n * 100.0)
                }
                Metric::FailedRate => {
                    let n = get("requests.completed")?;
                    (n > 0.0).then(|| get("requests.failed").unwrap_or(0.0) / n * 100.0)
                }
                Metric::Checks => get("requests.failed_checks"),
                Metric::Starved => get("client.starved_fraction").map(|f| f * 100.0),
                Metric::CheckRate => {
                    let c = get("requests.failed_checks")?;
                    let n = get("requests.completed")?;
                    (n > 0.0).then(|| c / n * 100.0)
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tails() {
        assert_eq!(
            Measure::parse("rps"),
            Some(Measure::Run(Metric::Throughput))
        );
        assert_eq!(Measure::parse("max_rate"), Some(Measure::MaxRate));
        assert_eq!(Measure::parse("p99.5"), None);
        assert!(Measure::parse("p99").unwrap().is_tail());
        assert!(Measure::parse("service_max").unwrap().is_tail());
        assert!(!Measure::parse("p50").unwrap().is_tail());
        assert!(!Measure::parse("throughput").unwrap().is_tail());
        assert!(Measure::names().contains("max_rate"));
    }
}
