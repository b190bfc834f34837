//! `volley compare A B [--metric M] [--fail-if-slower PCT [--allow-single]] [--force]
//! [--wide] [--json PATH|-]`: B against A, cell by cell (docs/contract.md, "Comparisons").
//!
//! A and B are each a RunResult, a `suite.json` or a results folder. Series pair by scenario,
//! axes and server (`pairing`), split by load where their runs' `load_id`s differ (`loads`); per
//! pair the headline metric is judged, with at least [`MIN_REPETITIONS`] a side by a Mann-Whitney
//! U test at [`ALPHA`] ([`stats`]), with fewer not called (`judge`); named requests are compared
//! by name with the same rules (`endpoints`). Servers of one results folder against its baseline
//! are `within`; the table is `table`, the verdict page [`page`].

mod endpoints;
mod judge;
mod loads;
pub mod page;
mod pairing;
mod profiles;
pub use volley_model::stats::ab as stats;
mod table;
mod text;
mod within;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use endpoints::{EndpointPair, Endpoints, UnpairedEndpoint};
pub use judge::worse_pct;
pub use profiles::why_text;
pub use table::{format_p, render, Layout};
pub use within::{compare_within, Within};

use volley_model::metric::{Metric, Stat};
use volley_report::model::{LoadError, Report};

/// Schema identifier of the comparison JSON.
pub(crate) const COMPARE_SCHEMA: &str = "volley.compare/1";
/// Significance level of the verdicts.
pub const ALPHA: f64 = 0.05;
/// Repetitions each side needs before a verdict is given.
pub const MIN_REPETITIONS: usize = 5;

/// Why two inputs cannot be compared (exit 2); every message names the paths.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// An input is missing, unreadable or not a volley result.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// No cell of A has a counterpart in B.
    #[error("{a} and {b}: nothing pairs up (cells pair by scenario, axes and server): A has {a_cells}; B has {b_cells}")]
    NothingPairs {
        /// Path of A.
        a: String,
        /// Path of B.
        b: String,
        /// A's cells, listed.
        a_cells: String,
        /// B's cells, listed.
        b_cells: String,
    },
    /// Cells pair up, but none has a finished run on both sides.
    #[error("{a} and {b}: no pair of cells has a finished run on both sides")]
    NoData {
        /// Path of A.
        a: String,
        /// Path of B.
        b: String,
    },
    /// `--baseline` or `--against` names a server the results do not hold.
    #[error("{path}: {flag} {name}: no server of that name in these results; the servers are: {present}")]
    UnknownServer {
        /// The results folder.
        path: String,
        /// `--baseline` or `--against`.
        flag: String,
        /// The name given.
        name: String,
        /// The servers present, listed.
        present: String,
    },
    /// `--against` names the baseline itself.
    #[error("--against {name}: that is the baseline (--baseline {name}); name the other servers")]
    AgainstItself {
        /// The name given.
        name: String,
    },
    /// Pairs whose sides ran different loads (`load_id`), without `--force`.
    #[error(
        "{a} and {b}: {} ran a different load on each side (their load_id differs), so the \
         runs are not repetitions of one test:\n{}\n\
         --force compares them anyway, marking the lines whose loads differ",
        if pairs.len() == 1 { "a pair".to_string() } else { format!("{} pairs", pairs.len()) },
        pairs.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
    )]
    LoadsDiffer {
        /// Path of A.
        a: String,
        /// Path of B.
        b: String,
        /// Each refused pair: its name and what differs (`run · host:port: A path /, duration_s
        /// 3; B path /api/items, duration_s 2`).
        pairs: Vec<String>,
    },
}

/// How to compare: the flags of `volley compare` that change the result.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Options {
    /// `--metric`: overrides each pair's headline.
    pub metric: Option<Metric>,
    /// `--fail-if-slower` in percent.
    pub fail_pct: Option<f64>,
    /// `--allow-single`: with fewer than [`MIN_REPETITIONS`] a side, `--fail-if-slower` judges
    /// the medians alone instead of passing a difference that cannot be called.
    pub allow_single: bool,
    /// `--force`: compare pairs whose sides ran different loads, marking them.
    pub force: bool,
}

/// The metrics every pair shows beside its headline, without a verdict.
pub(crate) const SECONDARY: [Metric; 4] = [
    Metric::Latency(Stat::P50),
    Metric::Latency(Stat::P99),
    Metric::Errors,
    Metric::CpuPerRequest,
];

/// The call on one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// B is significantly better (higher throughput; lower latency, CPU or errors).
    #[serde(rename = "faster")]
    Faster,
    /// B is significantly worse.
    #[serde(rename = "slower")]
    Slower,
    /// The test finds no difference at α = 0.05.
    #[serde(rename = "no significant difference")]
    NoDifference,
    /// Fewer than 5 repetitions on a side: medians and ranges only.
    #[serde(rename = "too few repetitions")]
    TooFew,
    /// The metric is missing on a side (no finished run, no server monitor, no response).
    #[serde(rename = "not measured")]
    NotMeasured,
}

/// One metric of a pair: medians over the finished repetitions of each side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDiff {
    /// `throughput`, `p99`, ... (the `--metric` names).
    pub metric: Metric,
    /// Median of A (req/s, µs or a count); null when not measured.
    pub a: Option<f64>,
    /// Median of B.
    pub b: Option<f64>,
    /// b / a; null when a is 0 or either is missing.
    pub ratio: Option<f64>,
    /// (b / a − 1) · 100.
    pub change_pct: Option<f64>,
    /// `higher` or `lower`: the better direction.
    pub better: &'static str,
}

/// One metric judged over two sides (one value per repetition): the medians, their ranges,
/// the test and the shift. A pair's headline and each of its named requests are judged alike.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// The metric's medians.
    #[serde(flatten)]
    pub headline: MetricDiff,
    /// Smallest and largest value of A's repetitions.
    pub a_range: Option<[f64; 2]>,
    /// Smallest and largest value of B's repetitions.
    pub b_range: Option<[f64; 2]>,
    /// Repetitions of A with the metric.
    pub n_a: usize,
    /// Repetitions of B with the metric.
    pub n_b: usize,
    /// The call.
    pub verdict: Verdict,
    /// The smaller U of the test (null without a test).
    pub u: Option<f64>,
    /// Two-sided p-value (null without a test).
    pub p_value: Option<f64>,
    /// The Hodges-Lehmann shift of B against A (median of every difference b − a) in percent
    /// of A's median; null when a side lacks the metric or A's median is 0.
    pub effect_pct: Option<f64>,
    /// Lower end of the shift's 95 % confidence interval, in percent of A's median; null with
    /// fewer than 5 repetitions a side.
    pub ci_low_pct: Option<f64>,
    /// Upper end of the interval.
    pub ci_high_pct: Option<f64>,
}

/// One pair of series: the headline metric judged, secondary metrics shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// Scenario and axes (A's).
    pub label: String,
    /// Server (A's).
    pub server: String,
    /// B's label, when it differs (two single runs pair whatever their names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_label: Option<String>,
    /// B's server, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_server: Option<String>,
    /// The headline metric judged.
    #[serde(flatten)]
    pub judged: Judgement,
    /// B got worse than `--fail-if-slower` allows.
    pub regression: bool,
    /// Secondary metrics, no verdict.
    pub secondary: Vec<MetricDiff>,
    /// Remarks (load modes that differ, a metric that was not measured).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// B's median is worse than A's by more than `--fail-if-slower`, whether or not the
    /// difference could be called (false without the flag).
    pub beyond_limit: bool,
    /// The `load_id` of A's runs (null when none finished).
    pub a_load_id: Option<String>,
    /// The `load_id` of B's runs.
    pub b_load_id: Option<String>,
    /// The sides ran different loads and were compared only because of `--force`.
    pub loads_differ: bool,
    /// A's name: its server (the baseline with `--baseline`).
    pub a_name: String,
    /// B's name: its server.
    pub b_name: String,
    /// The named requests of a requests file compared by name with the same metric
    /// (`endpoints`, `endpoints_only_in_a`, `endpoints_only_in_b`); absent when neither side
    /// has named requests or the metric has no value per request.
    #[serde(flatten)]
    pub endpoints: Option<Endpoints>,
}

/// A series of one side without a counterpart on the other.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unpaired {
    /// Scenario and axes.
    pub label: String,
    /// Server.
    pub server: String,
    /// Repetitions that finished.
    pub finished: usize,
}

/// The whole comparison (`--json`, `"schema": "volley.compare/1"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Always `volley.compare/1`.
    pub schema: &'static str,
    /// Version of volley that compared.
    pub volley_version: &'static str,
    /// The baseline as given.
    pub a: String,
    /// The candidate as given.
    pub b: String,
    /// What A is (`GET http://…` for a run, the suite's name), for the table only.
    #[serde(skip)]
    pub a_title: String,
    /// What B is.
    #[serde(skip)]
    pub b_title: String,
    /// `--metric`; null: each pair's headline by its load mode.
    pub metric: Option<Metric>,
    /// Significance level.
    pub alpha: f64,
    /// Repetitions a side needed for a verdict.
    pub min_repetitions: usize,
    /// `--fail-if-slower` in percent; null without it.
    pub fail_if_slower_pct: Option<f64>,
    /// `--allow-single`: pairs with too few repetitions to call fail on their medians.
    pub allow_single: bool,
    /// `--force`: pairs of different loads were compared.
    pub force: bool,
    /// Any pair is a regression (the exit code is then 1).
    pub regression: bool,
    /// The pairs, in A's order.
    pub pairs: Vec<Pair>,
    /// Series of A that B lacks.
    pub only_in_a: Vec<Unpaired>,
    /// Series of B that A lacks.
    pub only_in_b: Vec<Unpaired>,
}

/// Compares B against A with the given [`Options`].
pub fn compare(
    (a_name, a): (&str, &Report),
    (b_name, b): (&str, &Report),
    opts: Options,
) -> Result<Comparison, CompareError> {
    let sa = loads::split(a.series());
    let sb = loads::split(b.series());
    let matched = pairing::matches(&sa, &sb);
    if matched.is_empty() {
        return Err(CompareError::NothingPairs {
            a: a_name.into(),
            b: b_name.into(),
            a_cells: pairing::describe(&sa),
            b_cells: pairing::describe(&sb),
        });
    }
    let differing: Vec<String> = matched
        .iter()
        .filter_map(|&(i, j)| loads::difference(&sa[i], &sb[j]))
        .collect();
    if !differing.is_empty() && !opts.force {
        return Err(CompareError::LoadsDiffer {
            a: a_name.into(),
            b: b_name.into(),
            pairs: differing,
        });
    }
    let pairs: Vec<Pair> = matched
        .iter()
        .map(|&(i, j)| judge::pair(&sa[i], &sb[j], opts))
        .collect();
    if !pairing::any_finished(&sa, &sb, &matched) {
        return Err(CompareError::NoData {
            a: a_name.into(),
            b: b_name.into(),
        });
    }
    let (only_in_a, only_in_b) = pairing::unpaired(&sa, &sb, &matched);
    let mut c = assemble((a_name, a), (b_name, b), opts, pairs);
    c.only_in_a = only_in_a;
    c.only_in_b = only_in_b;
    Ok(c)
}

/// The comparison of judged pairs (nothing unpaired yet).
fn assemble(
    (a_name, a): (&str, &Report),
    (b_name, b): (&str, &Report),
    opts: Options,
    pairs: Vec<Pair>,
) -> Comparison {
    Comparison {
        schema: COMPARE_SCHEMA,
        volley_version: env!("CARGO_PKG_VERSION"),
        a: a_name.into(),
        b: b_name.into(),
        a_title: a.title.clone(),
        b_title: b.title.clone(),
        metric: opts.metric,
        alpha: ALPHA,
        min_repetitions: MIN_REPETITIONS,
        fail_if_slower_pct: opts.fail_pct,
        allow_single: opts.allow_single,
        force: opts.force,
        regression: pairs.iter().any(|p| p.regression),
        pairs,
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
    }
}

/// Loads one side (a RunResult, suite.json or results folder).
pub fn load(path: &Path) -> Result<Report, CompareError> {
    Ok(Report::load(&[PathBuf::from(path)])?)
}
