//! The named requests of a series (`endpoints[]` of runs with a `--requests-file`) as the
//! Markdown and HTML tables show them: one line per name, medians over the repetitions that
//! have it, like the rest of those reports (the terminal summary shows one run's own numbers,
//! `report::terminal::endpoints`).

use std::collections::BTreeMap;

use super::model::median;
use volley_model::metric::{Metric, Stat};
use volley_model::result::endpoint::EndpointResult;
use volley_model::result::RunResult;

/// One named request over a series' repetitions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EndpointFigures {
    /// Its name in the requests file.
    pub name: String,
    /// Its method (the first repetition's that has it).
    pub method: String,
    /// Its path as written, placeholders included.
    pub path: String,
    /// Its share of the run's requests sent, 0–1 (median).
    pub share: Option<f64>,
    /// Its completed responses per second of the run (median).
    pub rps: Option<f64>,
    /// Corrected latency, µs (medians): p50, p99, p99.9, p99.99, max.
    pub latency: [Option<f64>; 5],
    /// Some repetition's percentiles are lower bounds (`latency_lower_bound`): so are these.
    pub lower_bound: bool,
    /// Failed responses (status ≥ 400 or a failed check), summed over the repetitions.
    pub failed: u64,
    /// Errors, summed over the repetitions.
    pub errors: u64,
    /// Responses that failed each check (`capture` among them), summed over the repetitions.
    pub checks: BTreeMap<String, u64>,
    /// A journey's steps of this name not sent (a value they need was not captured), summed
    /// over the repetitions; None when none of them had a journey.
    pub skipped: Option<u64>,
    /// Repetitions that have it.
    pub runs: usize,
}

/// The statistics of [`EndpointFigures::latency`], in order.
pub(crate) const LATENCY: [Stat; 5] = [Stat::P50, Stat::P99, Stat::P99_9, Stat::P99_99, Stat::Max];

impl EndpointFigures {
    /// `GET /items/{rand:1..10}`.
    pub fn request(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// Responses that failed a check, every check added up (a response failing two checks
    /// counts twice).
    pub(crate) fn checks_failed(&self) -> u64 {
        self.checks.values().sum()
    }

    /// `body_regex 18,685 · status 3`, or empty when every check passed.
    pub(crate) fn checks_text(&self) -> String {
        self.checks
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {}", volley_model::units::thousands(*n)))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// The named requests of `results` (the finished repetitions of one series), in order of
/// first appearance; empty when no run had a requests file with names.
pub(crate) fn figures(results: &[&RunResult]) -> Vec<EndpointFigures> {
    let mut names: Vec<&str> = Vec::new();
    for e in results.iter().flat_map(|r| &r.endpoints) {
        if !names.contains(&e.name.as_str()) {
            names.push(&e.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let runs: Vec<(&RunResult, &EndpointResult)> = results
                .iter()
                .filter_map(|r| Some((*r, r.endpoints.iter().find(|e| e.name == name)?)))
                .collect();
            of_runs(name, &runs)
        })
        .collect()
}

/// One name's figures over the repetitions that have it (never empty).
fn of_runs(name: &str, runs: &[(&RunResult, &EndpointResult)]) -> EndpointFigures {
    let med = |f: &dyn Fn(&RunResult, &EndpointResult) -> Option<f64>| {
        median(&runs.iter().filter_map(|(r, e)| f(r, e)).collect::<Vec<_>>())
    };
    let mut checks: BTreeMap<String, u64> = BTreeMap::new();
    for (_, e) in runs {
        for (k, n) in &e.checks {
            *checks.entry(k.clone()).or_default() += n;
        }
    }
    let first = runs[0].1;
    EndpointFigures {
        name: name.to_string(),
        method: first.method.clone(),
        path: first.path.clone(),
        share: med(&|r, e| {
            (r.requests.sent > 0).then(|| e.requests.sent as f64 / r.requests.sent as f64)
        }),
        rps: med(&|r, e| rate(r, e)),
        latency: LATENCY.map(|s| med(&|_, e| s.of(&e.latency_us))),
        lower_bound: runs.iter().any(|(r, _)| r.latency_lower_bound),
        failed: runs.iter().map(|(_, e)| e.requests.failed).sum(),
        errors: runs.iter().map(|(_, e)| e.requests.errors).sum(),
        checks,
        skipped: runs
            .iter()
            .any(|(r, _)| r.journey.is_some())
            .then(|| runs.iter().filter_map(|(_, e)| e.requests.skipped).sum()),
        runs: runs.len(),
    }
}

/// A named request's completed responses per second of its run (as the run's own
/// `throughput_rps` is its completed responses over `elapsed_s`); None for a run of no time.
pub fn rate(r: &RunResult, e: &EndpointResult) -> Option<f64> {
    Metric::Throughput.endpoint_value(r, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix() -> RunResult {
        RunResult::from_json(include_str!("../../../tests/fixtures/report/mix.json")).unwrap()
    }

    #[test]
    fn one_run_gives_its_own_numbers() {
        let r = mix();
        let f = figures(&[&r]);
        let names: Vec<&str> = f.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["hello", "post", "missing"]);
        let post = &f[1];
        assert_eq!(post.request(), "POST /");
        assert_eq!(post.runs, 1);
        assert_eq!(post.failed, 18_685);
        assert_eq!(post.checks_text(), "body_regex 18,685");
        assert_eq!(post.latency[1], Some(227.0), "p99");
        let e = &r.endpoints[1];
        assert_eq!(
            post.share,
            Some(e.requests.sent as f64 / r.requests.sent as f64)
        );
        assert_eq!(post.rps, Some(e.requests.completed as f64 / r.elapsed_s));
        assert_eq!(f[0].checks_text(), "", "every check passed");
        assert!(figures(&[]).is_empty());
    }

    #[test]
    fn repetitions_give_medians_and_sums_by_name() {
        let a = mix();
        let mut b = a.clone();
        b.endpoints[1].latency_us.p99 = Some(1_000);
        b.endpoints[1].requests.failed = 15;
        b.endpoints.remove(0); // hello only in the first repetition
        let mut c = b.clone();
        c.endpoints[0].latency_us.p99 = Some(2_000);
        c.latency_lower_bound = true;
        let f = figures(&[&a, &b, &c]);
        assert_eq!(f[0].name, "hello");
        assert_eq!(f[0].runs, 1, "only the repetitions that have it");
        let post = &f[1];
        assert_eq!(post.runs, 3);
        assert_eq!(post.latency[1], Some(1_000.0), "median of 227, 1000, 2000");
        assert_eq!(post.failed, 18_685 + 15 + 15);
        assert_eq!(post.checks["body_regex"], 3 * 18_685);
        assert!(post.lower_bound);
        assert_eq!(post.skipped, None, "no journey");
    }

    #[test]
    fn a_journey_sums_the_steps_skipped_and_lists_the_capture_check() {
        let mut a = mix();
        a.journey = Some(Default::default());
        for e in &mut a.endpoints {
            e.requests.skipped = Some(0);
        }
        a.endpoints[1].requests.skipped = Some(40);
        a.endpoints[1].checks.insert("capture".into(), 7);
        let b = a.clone();
        let f = figures(&[&a, &b, &mix()]);
        assert_eq!(f[0].skipped, Some(0));
        assert_eq!(f[1].skipped, Some(80), "summed over the repetitions");
        assert_eq!(f[1].checks_text(), "body_regex 56,055 · capture 14");
        assert_eq!(f[1].checks_failed(), 56_055 + 14);
    }
}
