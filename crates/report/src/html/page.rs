//! A report's series grouped for the page: scenario groups in order of first appearance, one
//! row per server with the repetitions that finished, and the chart data of every group.

use super::data::{group_data, PageData, Spread};
use crate::model::{Cell, Series};
use volley_model::result::{CellStatus, RunResult};

/// One server's line of a scenario group, with everything the tables and charts need.
pub struct Row<'a> {
    /// The cells (every repetition).
    pub series: &'a Series<'a>,
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetitions that finished, with their numbers.
    pub ok: Vec<(u32, &'a RunResult)>,
    /// req/s over `ok` (None when nothing finished).
    pub rps: Option<Spread>,
}

impl Row<'_> {
    /// The results that finished.
    pub(crate) fn results(&self) -> Vec<&RunResult> {
        self.ok.iter().map(|(_, r)| *r).collect()
    }

    /// The repetition with the median throughput: the one the over-time charts show.
    pub(crate) fn representative(&self) -> Option<(u32, &RunResult)> {
        let mut v = self.ok.clone();
        v.sort_by(|a, b| a.1.throughput_rps.total_cmp(&b.1.throughput_rps));
        v.get(v.len().saturating_sub(1) / 2).copied()
    }

    /// Cells that did not finish (failed, skipped, pending, interrupted).
    pub(crate) fn failures(&self) -> Vec<&Cell> {
        self.series
            .cells
            .iter()
            .copied()
            .filter(|c| c.status != CellStatus::Ok)
            .collect()
    }
}

/// A scenario group: its label and one row per server.
pub struct Group<'a> {
    /// `scenario axes`.
    pub label: String,
    /// One row per server.
    pub rows: Vec<Row<'a>>,
}

/// The report's groups and the data the charts draw.
pub struct Page<'a> {
    /// Scenario groups in order of first appearance.
    pub groups: Vec<Group<'a>>,
    /// The JSON the script reads.
    pub data: PageData,
}

impl<'a> Page<'a> {
    /// Groups a report's series (`Report::series`) by scenario and computes the chart data.
    pub fn of(series: &'a [Series<'a>]) -> Page<'a> {
        let mut servers: Vec<String> = Vec::new();
        let mut groups: Vec<Group> = Vec::new();
        for s in series {
            let server = match servers.iter().position(|n| *n == s.server) {
                Some(i) => i,
                None => {
                    servers.push(s.server.clone());
                    servers.len() - 1
                }
            };
            let ok: Vec<(u32, &RunResult)> = s
                .cells
                .iter()
                .filter(|c| c.status == CellStatus::Ok)
                .filter_map(|c| c.result.as_ref().map(|r| (c.rep, r)))
                .collect();
            let rps = Spread::of(&ok.iter().map(|(_, r)| r.throughput_rps).collect::<Vec<_>>());
            let row = Row {
                series: s,
                server,
                ok,
                rps,
            };
            match groups.iter_mut().find(|g| g.label == s.label) {
                Some(g) => g.rows.push(row),
                None => groups.push(Group {
                    label: s.label.clone(),
                    rows: vec![row],
                }),
            }
        }
        let data = PageData {
            servers,
            groups: groups.iter().map(group_data).collect(),
            capacity: Vec::new(),
            flames: Vec::new(),
        };
        Page { groups, data }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::*;

    #[test]
    fn representative_repetition_has_the_median_throughput() {
        let report = fixture("faults");
        let series = report.series();
        let page = Page::of(&series);
        for g in &page.groups {
            for row in g.rows.iter().filter(|r| r.ok.len() == 2) {
                let (rep, r) = row.representative().unwrap();
                let lower = row
                    .ok
                    .iter()
                    .map(|(_, r)| r.throughput_rps)
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(r.throughput_rps, lower, "even count: the lower middle");
                assert!(row.ok.iter().any(|(n, _)| *n == rep));
            }
        }
    }
}
