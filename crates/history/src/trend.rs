//! `volley history trend`: a series' commits with their medians, the change points between
//! them and the noise band of each level; one model for the text, the JSON and the page.

use serde::Serialize;

use super::changepoint::{self, Settings as CpSettings};
use super::measure::Measure;
use super::series::Series;

/// One series' trend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// The series' name.
    pub name: String,
    /// Its file-safe name.
    pub slug: String,
    /// The metric.
    pub metric: String,
    /// More is better.
    pub higher_is_better: bool,
    /// The load identity.
    pub load_id: String,
    /// The host fingerprint.
    pub host_id: String,
    /// The CPU model of its newest run.
    pub cpu_model: Option<String>,
    /// How its newest run drove the load.
    pub mode: volley_model::result::Mode,
    /// Its commits, in the order measured.
    pub points: Vec<TrendPoint>,
    /// Its levels between change points.
    pub levels: Vec<Level>,
}

/// A commit of a trend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendPoint {
    /// `1a2b3c4` or `run #12`.
    pub label: String,
    /// Full hash.
    pub commit: Option<String>,
    /// The commit's subject.
    pub subject: Option<String>,
    /// Branch.
    pub branch: Option<String>,
    /// First run's start.
    pub time: String,
    /// Median of its repetitions.
    pub median: f64,
    /// The repetitions' values.
    pub values: Vec<f64>,
    /// Their run ids (`volley history show ID`).
    pub runs: Vec<i64>,
    /// Their result files, when known (absolute paths).
    pub files: Vec<Option<String>>,
    /// A change point starts here: the level's change in percent and the t-test's p-value.
    pub change: Option<Change>,
}

/// A change point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    /// After against before, percent of before's mean.
    pub pct: f64,
    /// The t-test's p-value.
    pub p_value: f64,
    /// Worse in the metric's direction.
    pub regression: bool,
}

/// The points between two change points: their mean and the noise band around it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Level {
    /// First point's index.
    pub from: usize,
    /// One past the last.
    pub to: usize,
    /// Mean of the medians.
    pub mean: f64,
    /// Their standard deviation (population); the band is mean ± 2 of them.
    pub std: f64,
}

/// The trend of `m` over `s`; `None` when no run of it has the metric.
pub fn trend(s: &Series<'_>, m: Measure, cp: &CpSettings) -> Option<Trend> {
    let points = s.points(m);
    if points.is_empty() {
        return None;
    }
    let medians: Vec<f64> = points.iter().map(|p| p.median()).collect();
    let cps = changepoint::detect(&medians, cp);
    let mut out: Vec<TrendPoint> = points
        .iter()
        .map(|p| TrendPoint {
            label: p.label(),
            commit: p.commit.clone(),
            subject: p.subject.clone(),
            branch: p.branch.clone(),
            time: p.time.clone(),
            median: p.median(),
            values: p.values.clone(),
            runs: p.runs.clone(),
            files: p.files.clone(),
            change: None,
        })
        .collect();
    for c in &cps {
        let pct = c.split.forward_change() * 100.0;
        out[c.index].change = Some(Change {
            pct,
            p_value: c.split.pvalue,
            regression: (pct < 0.0) == m.higher_is_better(),
        });
    }
    let mut levels = Vec::new();
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(cps.iter().map(|c| c.index));
    bounds.push(medians.len());
    for w in bounds.windows(2) {
        let v = &medians[w[0]..w[1]];
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        levels.push(Level {
            from: w[0],
            to: w[1],
            mean,
            std: var.sqrt(),
        });
    }
    let newest = s.runs.last().map(|r| &r.record);
    Some(Trend {
        name: s.name(),
        slug: s.slug(),
        metric: m.name().to_string(),
        higher_is_better: m.higher_is_better(),
        load_id: s.key.load_id.clone(),
        host_id: s.key.host_id.clone(),
        cpu_model: newest.and_then(|r| r.host.cpu_model.clone()),
        mode: s.mode(),
        points: out,
        levels,
    })
}

/// The trend as text: a line per commit, change points marked.
pub fn text(t: &Trend, m: Measure) -> String {
    let mut out = format!(
        "{} — {} ({} is better), load {}, host {}{}\n",
        t.name,
        t.metric,
        if t.higher_is_better {
            "higher"
        } else {
            "lower"
        },
        t.load_id,
        t.host_id,
        t.cpu_model
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    );
    for p in &t.points {
        let mark = match p.change {
            Some(c) => format!(
                "  ◆ change {:+.1}% (p={:.2e}){}",
                c.pct,
                c.p_value,
                if c.regression { " regression" } else { "" }
            ),
            None => String::new(),
        };
        out += &format!(
            "  {:<10} {:<20} {:>16}  n={}{}{}\n",
            p.label,
            p.time.get(..19).unwrap_or(&p.time),
            m.show(p.median),
            p.values.len(),
            p.subject
                .as_deref()
                .map(|s| format!("  {}", s.chars().take(48).collect::<String>()))
                .unwrap_or_default(),
            mark
        );
    }
    out
}
