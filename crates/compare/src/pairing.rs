//! Which series of A and B pair up: by scenario, axes and server, or the only series of each
//! side with the other whatever their names (docs/contract.md, "Comparisons"). Where a
//! series of a side was split by load, its parts pair with the part of the other side that ran
//! the same load.

use super::loads::LoadSeries;
use super::Unpaired;

/// Indexes `(in A, in B)` of the series that pair up, in A's order.
pub(super) fn matches(sa: &[LoadSeries], sb: &[LoadSeries]) -> Vec<(usize, usize)> {
    if sa.len() == 1 && sb.len() == 1 {
        // Two single runs (or one cell each): there is only one thing to compare.
        return vec![(0, 0)];
    }
    let same_cell = |x: &LoadSeries, y: &LoadSeries| {
        x.series.base_label == y.series.base_label && x.series.server == y.series.server
    };
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, x) in sa.iter().enumerate() {
        let taken = |j: usize| out.iter().any(|m| m.1 == j);
        let candidates: Vec<usize> = (0..sb.len())
            .filter(|&j| same_cell(x, &sb[j]) && !taken(j))
            .collect();
        // The same load first; else, when each side holds this cell once, the two (whose
        // loads the caller then checks).
        let same_load = candidates
            .iter()
            .copied()
            .find(|&j| x.series.load_id.is_some() && sb[j].series.load_id == x.series.load_id);
        let alone = candidates.len() == 1 && sa.iter().filter(|t| same_cell(t, x)).count() == 1;
        if let Some(j) = same_load.or(alone.then(|| candidates[0])) {
            out.push((i, j));
        }
    }
    out
}

/// Whether some pair has a finished run on both sides (otherwise there is nothing to judge).
pub(super) fn any_finished(
    sa: &[LoadSeries],
    sb: &[LoadSeries],
    matched: &[(usize, usize)],
) -> bool {
    matched
        .iter()
        .any(|&(i, j)| !sa[i].ok().is_empty() && !sb[j].ok().is_empty())
}

/// The series of A, then of B, that pair with nothing.
pub(super) fn unpaired(
    sa: &[LoadSeries],
    sb: &[LoadSeries],
    matched: &[(usize, usize)],
) -> (Vec<Unpaired>, Vec<Unpaired>) {
    let only_in_a = (0..sa.len())
        .filter(|i| !matched.iter().any(|m| m.0 == *i))
        .map(|i| unpaired_one(&sa[i]))
        .collect();
    let only_in_b = (0..sb.len())
        .filter(|j| !matched.iter().any(|m| m.1 == *j))
        .map(|j| unpaired_one(&sb[j]))
        .collect();
    (only_in_a, only_in_b)
}

/// One series without a counterpart.
fn unpaired_one(s: &LoadSeries) -> Unpaired {
    Unpaired {
        label: s.series.label.clone(),
        server: s.series.server.clone(),
        finished: s.ok().len(),
    }
}

/// Series an error message names before it only counts the rest.
const LISTED: usize = 5;

/// The series of one side as a list for an error message (`no cells` for none): the first
/// few, then how many more — never a line as long as a big suite.
pub(super) fn describe(series: &[LoadSeries]) -> String {
    if series.is_empty() {
        return "no cells".into();
    }
    let mut list = series
        .iter()
        .take(LISTED)
        .map(|s| format!("`{} · {}`", s.series.label, s.series.server))
        .collect::<Vec<_>>()
        .join(", ");
    if series.len() > LISTED {
        list += &format!(" and {} more", series.len() - LISTED);
    }
    list
}
