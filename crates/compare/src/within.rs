//! `volley compare RESULTS --baseline NAME [--against NAME...]`: servers of one results folder
//! against its baseline server, each series paired with the baseline's series of the same
//! scenario, axes and load — repetitions interleaved in one suite, the fair experiment
//! (docs/contract.md, "Comparisons").

use super::loads::{self, LoadSeries};
use super::{judge, pairing, CompareError, Comparison, Options, Pair, Unpaired};
use volley_report::model::Report;

/// Which servers of one results folder to compare.
#[derive(Debug, Clone, Copy)]
pub struct Within<'a> {
    /// `--baseline`: the server every other is compared against (side A).
    pub baseline: &'a str,
    /// `--against`: the servers compared (side B); empty: every other server.
    pub against: &'a [String],
}

/// Compares the servers of `report` (read from `path`) against its baseline server.
pub fn compare_within(
    (path, report): (&str, &Report),
    w: Within<'_>,
    opts: Options,
) -> Result<Comparison, CompareError> {
    let all = loads::split(report.series());
    let mut present: Vec<String> = Vec::new();
    for s in &all {
        if !present.contains(&s.series.server) {
            present.push(s.series.server.clone());
        }
    }
    let unknown = |flag: &str, name: &str| CompareError::UnknownServer {
        path: path.into(),
        flag: flag.into(),
        name: name.into(),
        present: present.join(", "),
    };
    if !present.iter().any(|s| s == w.baseline) {
        return Err(unknown("--baseline", w.baseline));
    }
    if let Some(n) = w.against.iter().find(|n| !present.contains(n)) {
        return Err(unknown("--against", n));
    }
    if w.against.iter().any(|n| n == w.baseline) {
        return Err(CompareError::AgainstItself {
            name: w.baseline.into(),
        });
    }
    let is_b = |server: &str| {
        server != w.baseline && (w.against.is_empty() || w.against.iter().any(|n| n == server))
    };
    let sa: Vec<&LoadSeries> = all
        .iter()
        .filter(|s| s.series.server == w.baseline)
        .collect();
    let sb: Vec<&LoadSeries> = all.iter().filter(|s| is_b(&s.series.server)).collect();
    let mut matched: Vec<(&LoadSeries, &LoadSeries)> = Vec::new();
    let mut only_in_b: Vec<Unpaired> = Vec::new();
    for y in &sb {
        let cands: Vec<&&LoadSeries> = sa
            .iter()
            .filter(|x| x.series.base_label == y.series.base_label)
            .collect();
        let same_load = cands
            .iter()
            .find(|x| y.series.load_id.is_some() && x.series.load_id == y.series.load_id);
        match same_load.or((cands.len() == 1).then(|| &cands[0])) {
            Some(x) => matched.push((x, y)),
            None => only_in_b.push(unpaired(y)),
        }
    }
    let b_names = if w.against.is_empty() {
        "every other server".to_string()
    } else {
        w.against.join(", ")
    };
    if matched.is_empty() {
        return Err(CompareError::NothingPairs {
            a: format!("{path} (baseline {})", w.baseline),
            b: b_names,
            a_cells: pairing::describe(&sa.iter().map(|s| (*s).clone()).collect::<Vec<_>>()),
            b_cells: pairing::describe(&sb.iter().map(|s| (*s).clone()).collect::<Vec<_>>()),
        });
    }
    let differing: Vec<String> = matched
        .iter()
        .filter_map(|(x, y)| loads::difference(x, y))
        .collect();
    if !differing.is_empty() && !opts.force {
        return Err(CompareError::LoadsDiffer {
            a: format!("{path} (baseline {})", w.baseline),
            b: b_names,
            pairs: differing,
        });
    }
    if !matched
        .iter()
        .any(|(x, y)| !x.ok().is_empty() && !y.ok().is_empty())
    {
        return Err(CompareError::NoData {
            a: format!("{path} (baseline {})", w.baseline),
            b: b_names,
        });
    }
    let pairs: Vec<Pair> = matched
        .iter()
        .map(|(x, y)| judge::pair(x, y, opts))
        .collect();
    let only_in_a = sa
        .iter()
        .filter(|x| !matched.iter().any(|(m, _)| std::ptr::eq(*m, **x)))
        .map(|x| unpaired(x))
        .collect();
    let mut c = super::assemble((path, report), (path, report), opts, pairs);
    c.a_title = format!("{}, baseline server {}", report.title, w.baseline);
    c.b_title = format!("{}, {b_names}", report.title);
    c.only_in_a = only_in_a;
    c.only_in_b = only_in_b;
    Ok(c)
}

/// One series without a counterpart.
fn unpaired(s: &LoadSeries) -> Unpaired {
    Unpaired {
        label: s.series.label.clone(),
        server: s.series.server.clone(),
        finished: s.ok().len(),
    }
}
