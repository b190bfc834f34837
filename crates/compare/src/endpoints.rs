//! A pair's named requests (`endpoints[]` of runs with a `--requests-file`) compared by name:
//! the pair's metric of each request, judged over the repetitions as the pair's headline is
//! (`judge::judge_values`: medians, ranges, the test with 5+ a side), and the names only one
//! side has (docs/contract.md, "Comparisons").

use serde::Serialize;

use super::judge::judge_values;
use super::Judgement;
use volley_model::metric::Metric;
use volley_model::result::RunResult;

/// One named request present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointPair {
    /// Its name in the requests file.
    pub name: String,
    /// Its method (A's).
    pub method: String,
    /// Its path as written (A's).
    pub path: String,
    /// The pair's metric judged for this request, as for the pair.
    #[serde(flatten)]
    pub judged: Judgement,
}

/// A named request only one side has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnpairedEndpoint {
    /// Its name.
    pub name: String,
    /// Its method.
    pub method: String,
    /// Its path as written.
    pub path: String,
    /// Repetitions of that side that have it.
    pub runs: usize,
}

/// A pair's named requests: those of both sides judged, and those of one side only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoints {
    /// Names on both sides, in A's order.
    pub endpoints: Vec<EndpointPair>,
    /// Names only A's runs have.
    pub endpoints_only_in_a: Vec<UnpairedEndpoint>,
    /// Names only B's runs have.
    pub endpoints_only_in_b: Vec<UnpairedEndpoint>,
}

/// The named requests of A's finished runs `ra` against B's `rb`, by `metric`; None when
/// neither side has named requests or the metric has no value per request (the caller
/// notes that).
pub(super) fn compare(metric: Metric, ra: &[&RunResult], rb: &[&RunResult]) -> Option<Endpoints> {
    let (na, nb) = (names(ra), names(rb));
    if (na.is_empty() && nb.is_empty()) || !metric.per_request() {
        return None;
    }
    let values = |runs: &[&RunResult], name: &str| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| {
                let e = r.endpoints.iter().find(|e| e.name == name)?;
                metric.endpoint_value(r, e)
            })
            .collect()
    };
    let endpoints = na
        .iter()
        .filter(|n| nb.contains(n))
        .map(|&name| {
            let (method, path) = request(ra, name);
            let j = judge_values(metric, &values(ra, name), &values(rb, name));
            pair(name, method, path, j)
        })
        .collect();
    let only = |mine: &[&str], theirs: &[&str], runs: &[&RunResult]| -> Vec<UnpairedEndpoint> {
        mine.iter()
            .filter(|n| !theirs.contains(n))
            .map(|&name| {
                let (method, path) = request(runs, name);
                UnpairedEndpoint {
                    name: name.to_string(),
                    method,
                    path,
                    runs: runs
                        .iter()
                        .filter(|r| r.endpoints.iter().any(|e| e.name == name))
                        .count(),
                }
            })
            .collect()
    };
    Some(Endpoints {
        endpoints,
        endpoints_only_in_a: only(&na, &nb, ra),
        endpoints_only_in_b: only(&nb, &na, rb),
    })
}

/// The names of the runs' named requests, in order of first appearance.
fn names<'a>(runs: &[&'a RunResult]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for e in runs.iter().flat_map(|r| &r.endpoints) {
        if !out.contains(&e.name.as_str()) {
            out.push(&e.name);
        }
    }
    out
}

/// The method and path of the first run's request called `name`.
fn request(runs: &[&RunResult], name: &str) -> (String, String) {
    runs.iter()
        .flat_map(|r| &r.endpoints)
        .find(|e| e.name == name)
        .map(|e| (e.method.clone(), e.path.clone()))
        .unwrap_or_default()
}

fn pair(name: &str, method: String, path: String, judged: Judgement) -> EndpointPair {
    EndpointPair {
        name: name.to_string(),
        method,
        path,
        judged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Verdict;
    use volley_model::metric::Stat;

    fn mix() -> RunResult {
        RunResult::from_json(include_str!("../../../tests/fixtures/report/mix.json")).unwrap()
    }

    #[test]
    fn requests_pair_by_name_and_are_judged_like_the_pair() {
        let a = mix();
        let mut b = a.clone();
        b.endpoints[1].latency_us.p99 = Some(454); // post twice as slow
        b.endpoints[2].name = "renamed".into();
        let p99 = Metric::Latency(Stat::P99);
        let e = compare(p99, &[&a], &[&b]).unwrap();
        let names: Vec<&str> = e.endpoints.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["hello", "post"]);
        let post = &e.endpoints[1];
        assert_eq!(
            (post.judged.headline.a, post.judged.headline.b),
            (Some(227.0), Some(454.0))
        );
        assert_eq!(post.judged.headline.ratio, Some(2.0));
        assert_eq!(post.judged.verdict, Verdict::TooFew, "one run a side");
        assert_eq!(e.endpoints[0].judged.headline.ratio, Some(1.0));
        assert_eq!(e.endpoints_only_in_a[0].name, "missing");
        assert_eq!(e.endpoints_only_in_a[0].path, "/nope/{rand:1..5}");
        assert_eq!(e.endpoints_only_in_b[0].name, "renamed");
        assert_eq!(e.endpoints_only_in_b[0].runs, 1);

        // Five repetitions a side, completely apart: called slower, as a pair would be.
        let runs = |base: &RunResult, p99s: [u64; 5]| -> Vec<RunResult> {
            p99s.iter()
                .map(|&v| {
                    let mut r = base.clone();
                    r.endpoints[1].latency_us.p99 = Some(v);
                    r
                })
                .collect()
        };
        let ra = runs(&a, [220, 225, 227, 230, 235]);
        let rb = runs(&a, [440, 450, 454, 460, 470]);
        let e = compare(
            p99,
            &ra.iter().collect::<Vec<_>>(),
            &rb.iter().collect::<Vec<_>>(),
        )
        .unwrap();
        let post = &e.endpoints[1];
        assert_eq!(post.judged.verdict, Verdict::Slower);
        assert_eq!((post.judged.n_a, post.judged.n_b), (5, 5));
        assert!(post.judged.p_value.unwrap() < 0.05);
        assert_eq!(
            e.endpoints[0].judged.verdict,
            Verdict::NoDifference,
            "hello unchanged"
        );
    }

    #[test]
    fn nothing_without_names_or_a_metric_per_request() {
        let a = mix();
        let mut plain = a.clone();
        plain.endpoints.clear();
        assert_eq!(compare(Metric::Throughput, &[&plain], &[&plain]), None);
        assert_eq!(compare(Metric::CpuPerRequest, &[&a], &[&a]), None);
        // One side with names: all of them are that side's alone.
        let e = compare(Metric::Throughput, &[&a], &[&plain]).unwrap();
        assert!(e.endpoints.is_empty());
        assert_eq!(e.endpoints_only_in_a.len(), 3);
    }
}
