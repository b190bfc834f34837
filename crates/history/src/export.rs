//! Export for other tools: bencher's metric format (BMF JSON) of one commit's runs, and Apache
//! Otava's CSV (a file per series, its commits as rows) with the `otava.yaml` that reads them.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::measure::Measure;
use super::series::{median, Series};
use volley_model::metric::{Metric, Stat};

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// bencher.dev's Bencher Metric Format: `{benchmark: {measure: {value, lower_value, upper_value}}}`.
    Bmf,
    /// Apache Otava's CSV test files and their `otava.yaml`.
    OtavaCsv,
}

/// A BMF measure: its slug, the metric, and the factor from volley's unit to bencher's
/// (latency in nanoseconds, throughput in operations per second).
const BMF: [(&str, Measure, f64); 4] = [
    ("throughput", Measure::Run(Metric::Throughput), 1.0),
    ("latency", Measure::Run(Metric::Latency(Stat::P50)), 1000.0),
    (
        "latency-p99",
        Measure::Run(Metric::Latency(Stat::P99)),
        1000.0,
    ),
    ("max-rate", Measure::MaxRate, 1.0),
];

/// BMF JSON of the runs of one commit: per series its median, with the repetitions' lowest
/// and highest as `lower_value` and `upper_value`. `commit` is the full hash whose runs count.
pub fn bmf(series: &[Series<'_>], commit: &str) -> Value {
    let mut out = Map::new();
    for s in series {
        let mut measures = Map::new();
        for (slug, m, factor) in BMF {
            let values: Vec<f64> = s
                .points(m)
                .into_iter()
                .filter(|p| p.commit.as_deref() == Some(commit))
                .flat_map(|p| p.values)
                .map(|v| v * factor)
                .collect();
            if values.is_empty() {
                continue;
            }
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            measures.insert(
                slug.to_string(),
                json!({"value": median(&values), "lower_value": lo, "upper_value": hi}),
            );
        }
        if !measures.is_empty() {
            out.insert(s.slug(), Value::Object(measures));
        }
    }
    Value::Object(out)
}

/// One series as Otava's CSV: `time,commit,branch,<metric>…`, a row per commit (the median of
/// its repetitions); metrics some commit lacks are left out. `None` when no metric is left.
pub fn otava_csv(s: &Series<'_>, metrics: &[Measure]) -> Option<(String, Vec<Measure>)> {
    let mut columns: Vec<(Measure, BTreeMap<String, f64>)> = Vec::new();
    let base = s.points(*metrics.first()?);
    for m in metrics {
        let by: BTreeMap<String, f64> =
            s.points(*m).iter().map(|p| (p.key(), p.median())).collect();
        if !base.is_empty() && base.iter().all(|p| by.contains_key(&p.key())) {
            columns.push((*m, by));
        }
    }
    if columns.is_empty() {
        return None;
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["time".to_string(), "commit".into(), "branch".into()];
    header.extend(columns.iter().map(|(m, _)| m.name().to_string()));
    w.write_record(&header).ok()?;
    for p in &base {
        let mut row = vec![
            p.time.clone(),
            p.commit.clone().unwrap_or_else(|| p.label()),
            p.branch.clone().unwrap_or_default(),
        ];
        row.extend(columns.iter().map(|(_, by)| format!("{}", by[&p.key()])));
        w.write_record(&row).ok()?;
    }
    let bytes = w.into_inner().ok()?;
    Some((
        String::from_utf8_lossy(&bytes).into_owned(),
        columns.into_iter().map(|(m, _)| m).collect(),
    ))
}

/// Otava's configuration for the exported files: `(slug, metrics)` per series.
pub fn otava_yaml(tests: &[(String, Vec<Measure>)]) -> String {
    let mut out = String::from("# Written by `volley history export --format otava-csv`.\n# OTAVA_CONFIG=otava.yaml otava analyze <test> (from this folder)\ntests:\n");
    for (slug, metrics) in tests {
        out += &format!(
            "  {slug}:\n    type: csv\n    file: {slug}.csv\n    time_column: time\n    attributes: [commit, branch]\n    metrics:\n"
        );
        for m in metrics {
            let direction = if m.higher_is_better() { 1 } else { -1 };
            out += &format!("      \"{}\":\n        direction: {direction}\n", m.name());
        }
    }
    out
}
