//! "vs baseline": with `[suite] baseline = "v1"`, every other server of the suite against v1 on
//! the same scenario, axes and load — the ratio of the medians of the headline metric
//! (throughput in closed loop and ramp, corrected p99 in open loop), the Hodges-Lehmann shift
//! with its 95 % interval, and the Mann-Whitney call (`stats::ab`), as `volley compare RESULTS
//! --baseline v1` judges them.

use super::model::{Report, Series};
use volley_model::metric::Metric;
use volley_model::result::Mode;
use volley_model::stats::ab::{self, Call, Versus};

/// The significance level of the calls (the one `volley compare` uses).
const ALPHA: f64 = 0.05;

/// One server of a scenario cell against the baseline's series of the same cell and load.
#[derive(Debug, Clone)]
pub struct VsLine {
    /// Scenario and axes.
    pub label: String,
    /// The server compared.
    pub server: String,
    /// The baseline server.
    pub baseline: String,
    /// The metric judged.
    pub metric: Metric,
    /// Median of the server's values ÷ median of the baseline's.
    pub ratio: Option<f64>,
    /// The test and the effect.
    pub versus: Versus,
    /// Repetitions with the metric: baseline, server.
    pub n: (usize, usize),
}

impl VsLine {
    /// The call in words: `slower (p=0.012)`, `no significant difference (p=0.40)`,
    /// `cannot be called (n=3/3)`; "slower" and "faster" in the metric's direction.
    pub fn verdict(&self) -> String {
        let p = self
            .versus
            .p_value
            .map_or(String::new(), |p| format!(" (p={p:.3})"));
        match self.versus.call {
            Call::Faster => format!("faster{p}"),
            Call::Slower => format!("slower{p}"),
            Call::NoDifference => format!("no significant difference{p}"),
            Call::TooFew => format!("cannot be called (n={}/{})", self.n.0, self.n.1),
        }
    }

    /// The shift of the server against the baseline in % of the baseline's median, signed,
    /// with its 95 % interval: `-10.0% (95% CI -13.0 to -7.0%)`; `-` when not measured.
    pub(crate) fn shift_text(&self) -> String {
        let Some(e) = self.versus.effect else {
            return "-".into();
        };
        match (e.low_pct, e.high_pct) {
            (Some(lo), Some(hi)) => {
                format!("{:+.1}% (95% CI {lo:+.1} to {hi:+.1}%)", e.pct)
            }
            _ => format!("{:+.1}% (no CI)", e.pct),
        }
    }

    /// `×0.900` (or `-`).
    pub(crate) fn ratio_text(&self) -> String {
        self.ratio.map_or("-".into(), |r| format!("×{r:.3}"))
    }
}

/// The suite's baseline server, when its index names one.
pub(crate) fn baseline(report: &Report) -> Option<&str> {
    match report.suites.as_slice() {
        [one] => one.baseline.as_deref(),
        _ => None,
    }
}

/// Every other server's series against the baseline's, in the report's order; empty without
/// a baseline.
pub(crate) fn lines(report: &Report) -> Vec<VsLine> {
    let Some(base) = baseline(report) else {
        return Vec::new();
    };
    let series = report.series();
    let mut out = Vec::new();
    for y in series.iter().filter(|s| s.server != base && !s.control()) {
        let cands: Vec<&Series> = series
            .iter()
            .filter(|x| x.server == base && x.base_label == y.base_label)
            .collect();
        let same = cands
            .iter()
            .find(|x| y.load_id.is_some() && x.load_id == y.load_id);
        let Some(x) = same.or((cands.len() == 1).then(|| &cands[0])) else {
            continue;
        };
        if x.load_id.is_some() && y.load_id.is_some() && x.load_id != y.load_id {
            continue;
        }
        out.push(line(x, y, base));
    }
    out
}

/// One series against the baseline's.
fn line(x: &Series, y: &Series, base: &str) -> VsLine {
    let (ra, rb) = (x.ok(), y.ok());
    let mode = ra
        .first()
        .or(rb.first())
        .map_or(Mode::Closed, |r| r.load.mode);
    let metric = Metric::headline(mode);
    let va: Vec<f64> = ra.iter().filter_map(|r| metric.value(r)).collect();
    let vb: Vec<f64> = rb.iter().filter_map(|r| metric.value(r)).collect();
    let ratio = match (super::model::median(&va), super::model::median(&vb)) {
        (Some(a), Some(b)) if a != 0.0 => Some(b / a),
        _ => None,
    };
    VsLine {
        label: y.label.clone(),
        server: y.server.clone(),
        baseline: base.to_string(),
        metric,
        ratio,
        versus: ab::versus(&va, &vb, ALPHA, metric.higher_is_better()),
        n: (va.len(), vb.len()),
    }
}

/// The lines as text under the terminal table: a heading, then one line per server and cell.
pub fn text(lines: &[VsLine]) -> String {
    let Some(first) = lines.first() else {
        return String::new();
    };
    let mut out = format!(
        "\nvs {} (baseline): ratio of the medians; shift: Hodges-Lehmann, in % of the \
         baseline's median, with its 95% CI; calls: Mann-Whitney U, α = 0.05, 5+ repetitions \
         a side\n",
        first.baseline
    );
    for l in lines {
        out += &format!(
            "  {} · {} vs {}: {} {}, shift {}: {}\n",
            l.label,
            l.server,
            l.baseline,
            l.metric.label(),
            l.ratio_text(),
            l.shift_text(),
            l.verdict()
        );
    }
    out
}
