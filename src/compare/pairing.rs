//! Which series of A and B pair up: by scenario, axes and server, or the only series of each
//! side with the other whatever their names (docs/contract.md, "Comparisons").

use super::Unpaired;
use crate::report::model::Series;

/// Indexes `(in A, in B)` of the series that pair up, in A's order.
pub(super) fn matches(sa: &[Series], sb: &[Series]) -> Vec<(usize, usize)> {
    if sa.len() == 1 && sb.len() == 1 {
        // Two single runs (or one cell each): there is only one thing to compare.
        return vec![(0, 0)];
    }
    sa.iter()
        .enumerate()
        .filter_map(|(i, s)| {
            sb.iter()
                .position(|t| t.label == s.label && t.server == s.server)
                .map(|j| (i, j))
        })
        .collect()
}

/// Whether some pair has a finished run on both sides (otherwise there is nothing to judge).
pub(super) fn any_finished(sa: &[Series], sb: &[Series], matched: &[(usize, usize)]) -> bool {
    matched
        .iter()
        .any(|&(i, j)| !sa[i].ok().is_empty() && !sb[j].ok().is_empty())
}

/// The series of A, then of B, that pair with nothing.
pub(super) fn unpaired(
    sa: &[Series],
    sb: &[Series],
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
fn unpaired_one(s: &Series) -> Unpaired {
    Unpaired {
        label: s.label.clone(),
        server: s.server.clone(),
        finished: s.ok().len(),
    }
}

/// The series of one side as a list for an error message (`no cells` for none).
pub(super) fn describe(series: &[Series]) -> String {
    if series.is_empty() {
        return "no cells".into();
    }
    series
        .iter()
        .map(|s| format!("`{} · {}`", s.label, s.server))
        .collect::<Vec<_>>()
        .join(", ")
}
