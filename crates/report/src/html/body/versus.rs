//! With `[suite] baseline`: every other server against the baseline (`report::versus`), a
//! row per server and scenario cell, under the page's verdict.

use super::{esc, tend, thead, txt};
use crate::model::Report;
use crate::versus::lines;
use std::fmt::Write;
use volley_model::stats::ab::Call;

/// The "vs baseline" table; nothing without a baseline.
pub(super) fn versus(o: &mut String, report: &Report) {
    let lines = lines(report);
    let Some(first) = lines.first() else {
        return;
    };
    let _ = write!(
        o,
        "<div class=\"versus\"><h2>vs {} (baseline)</h2>",
        esc(&first.baseline)
    );
    thead(
        o,
        &[
            "scenario",
            "server",
            "metric",
            "ratio",
            "shift (95% CI)",
            "verdict",
        ],
    );
    for l in &lines {
        o.push_str("<tr>");
        txt(o, &l.label);
        txt(o, &l.server);
        txt(o, l.metric.label());
        txt(o, &l.ratio_text());
        txt(o, &l.shift_text());
        let class = match l.versus.call {
            Call::Slower => "bad",
            Call::Faster => "good",
            Call::NoDifference | Call::TooFew => "",
        };
        let _ = write!(o, "<td class=\"{class}\">{}</td></tr>", esc(&l.verdict()));
    }
    tend(o);
    let _ = writeln!(
        o,
        "<p>ratio: median of the server ÷ median of {0}; shift: the Hodges-Lehmann estimate \
         (median of every difference) in % of {0}'s median, with its 95% confidence interval; \
         slower or faster only when a two-sided Mann-Whitney U test calls it (p &lt; 0.05, 5+ \
         repetitions a side).</p></div>",
        esc(&first.baseline)
    );
}
