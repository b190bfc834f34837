//! Capacity searches in reports (`volley.capacity/1`; docs/contract.md, "Capacity"): the
//! answer in words (`text`), the steps as CSV (`csv`), the ranking and steps as Markdown
//! (`markdown`) and the latency–throughput curve on the HTML page (`html`). One search is a
//! [`CapacityEntry`]: `volley capacity`'s result, or one cell of a suite's `capacity = {…}`
//! scenario. Entries of one scenario and axes form a [`Ranking`]: servers by the rate they
//! sustain within the SLO, beside their closed-loop maximum.

pub mod csv;
pub mod html;
pub(crate) mod markdown;
pub(crate) mod reproduce;
pub mod text;

use std::collections::BTreeMap;

use super::model::median;
use volley_model::result::capacity::{CapacityResult, LimitedBy};
use volley_model::result::CellStatus;

/// One search and where it ran.
#[derive(Debug, Clone)]
pub struct CapacityEntry {
    /// Server name (`volley capacity`: the target's `host:port`).
    pub server: String,
    /// Scenario name (`volley capacity`: `capacity`).
    pub scenario: String,
    /// Axis values of the cell.
    pub axes: BTreeMap<String, String>,
    /// Repetition, from 1.
    pub rep: u32,
    /// The cell's status.
    pub status: CellStatus,
    /// Why it failed.
    pub reason: Option<String>,
    /// The search's result, when it could be read.
    pub result: Option<CapacityResult>,
}

impl CapacityEntry {
    /// `connections=50`.
    pub fn axes_label(&self) -> String {
        volley_model::result::axes_label(&self.axes)
    }

    /// `get-capacity connections=50`.
    pub fn label(&self) -> String {
        let axes = self.axes_label();
        if axes.is_empty() {
            self.scenario.clone()
        } else {
            format!("{} {axes}", self.scenario)
        }
    }
}

/// One server's line of a ranking: medians over its repetitions.
#[derive(Debug, Clone)]
pub struct Place<'a> {
    /// The server.
    pub server: String,
    /// Its searches (every repetition).
    pub entries: Vec<&'a CapacityEntry>,
    /// Median of the rates found (None when none was).
    pub max_rate_rps: Option<f64>,
    /// The found rate is a lower bound (the client or `--max-rate` stopped the search).
    pub lower_bound: bool,
    /// Median closed-loop throughput.
    pub closed_loop_rps: Option<f64>,
    /// The client saturated in a closed-loop step: its throughput is a lower bound.
    pub closed_loop_saturated: bool,
    /// Median corrected p99 at the rate found, µs.
    pub p99_at_max_us: Option<f64>,
    /// Median server CPU per request at the rate found, µs.
    pub cpu_us_at_max: Option<f64>,
}

impl Place<'_> {
    /// Sustainable rate ÷ closed-loop maximum.
    pub fn share(&self) -> Option<f64> {
        let c = self.closed_loop_rps.filter(|c| *c > 0.0)?;
        Some(self.max_rate_rps? / c)
    }

    /// The first finished result (for the SLO and settings).
    pub(crate) fn first(&self) -> Option<&CapacityResult> {
        self.entries.iter().find_map(|e| e.result.as_ref())
    }

    /// Why there is no number: the first failure reason, or the search's own words.
    pub(crate) fn reason(&self) -> Option<String> {
        self.entries.iter().find_map(|e| {
            e.reason.clone().or_else(|| {
                let r = e.result.as_ref()?;
                r.max_rate_rps.is_none().then(|| text::summary(r))
            })
        })
    }

    /// `41,200`, `≥ 64,000`, or `–`.
    pub(crate) fn rate_text(&self) -> String {
        match self.max_rate_rps {
            Some(m) if self.lower_bound => format!("≥ {}", text::rps(m)),
            Some(m) => text::rps(m),
            None => "–".into(),
        }
    }

    /// `52,014` or `≥ 173,293` (the client saturated in the closed loop), or `–`.
    pub(crate) fn closed_loop_text(&self) -> String {
        match self.closed_loop_rps {
            Some(c) if self.closed_loop_saturated => format!("≥ {}", text::rps(c)),
            Some(c) => text::rps(c),
            None => "–".into(),
        }
    }

    /// `79%`, `≥ 23%` (the rate found is a lower bound), `≤ 40%` (the closed loop's is), or
    /// `–`; neither when both are bounds.
    pub(crate) fn share_text(&self) -> String {
        match (self.share(), self.lower_bound, self.closed_loop_saturated) {
            (Some(_), true, true) | (None, _, _) => "–".into(),
            (Some(s), true, false) => format!("≥ {:.0}%", s * 100.0),
            (Some(s), false, true) => format!("≤ {:.0}%", s * 100.0),
            (Some(s), false, false) => format!("{:.0}%", s * 100.0),
        }
    }

    /// What stopped the search, in a word or two: `SLO`, `client`, `--max-rate`, `busy
    /// machine`.
    pub(crate) fn limit_text(&self) -> String {
        let mut words: Vec<&str> = self
            .entries
            .iter()
            .filter_map(|e| e.result.as_ref()?.limited_by)
            .map(|l| match l {
                LimitedBy::Slo => "SLO",
                LimitedBy::Client => "client",
                LimitedBy::MaxRate => "--max-rate",
                LimitedBy::Machine => "busy machine",
            })
            .collect();
        words.dedup();
        if words.is_empty() {
            "–".into()
        } else {
            words.join(", ")
        }
    }
}

/// The searches of one scenario and axes, servers by sustainable rate (highest first; those
/// without one last, in run order).
#[derive(Debug, Clone)]
pub struct Ranking<'a> {
    /// Scenario and axes.
    pub label: String,
    /// The SLO, as written in the first result.
    pub slo: Vec<String>,
    /// One place per server.
    pub places: Vec<Place<'a>>,
}

fn med(v: impl Iterator<Item = f64>) -> Option<f64> {
    median(&v.collect::<Vec<_>>())
}

/// The rankings of `entries`, one per scenario and axes, in the order first seen.
pub(crate) fn rankings(entries: &[CapacityEntry]) -> Vec<Ranking<'_>> {
    let mut out: Vec<Ranking> = Vec::new();
    for e in entries {
        let label = e.label();
        let i = match out.iter().position(|r| r.label == label) {
            Some(i) => i,
            None => {
                out.push(Ranking {
                    label,
                    slo: Vec::new(),
                    places: Vec::new(),
                });
                out.len() - 1
            }
        };
        let r = &mut out[i];
        match r.places.iter_mut().find(|p| p.server == e.server) {
            Some(p) => p.entries.push(e),
            None => r.places.push(Place {
                server: e.server.clone(),
                entries: vec![e],
                max_rate_rps: None,
                lower_bound: false,
                closed_loop_rps: None,
                closed_loop_saturated: false,
                p99_at_max_us: None,
                cpu_us_at_max: None,
            }),
        }
    }
    for r in &mut out {
        for p in &mut r.places {
            let done: Vec<&CapacityResult> =
                p.entries.iter().filter_map(|e| e.result.as_ref()).collect();
            p.max_rate_rps = med(done.iter().filter_map(|c| c.max_rate_rps));
            p.lower_bound = done.iter().any(|c| {
                c.max_rate_rps.is_some()
                    && matches!(c.limited_by, Some(LimitedBy::Client | LimitedBy::MaxRate))
            });
            p.closed_loop_rps = med(done
                .iter()
                .filter_map(|c| Some(c.closed_loop_reference()?.throughput_rps)));
            p.closed_loop_saturated = done.iter().any(|c| {
                c.closed_loop_reference()
                    .is_some_and(|l| l.client_saturated)
            });
            p.p99_at_max_us = med(done
                .iter()
                .filter_map(|c| c.step_at_max()?.latency_us.p99.map(|v| v as f64)));
            p.cpu_us_at_max = med(done
                .iter()
                .filter_map(|c| c.step_at_max()?.server_cpu_us_per_request));
        }
        r.slo = r
            .places
            .iter()
            .find_map(|p| p.first().map(|f| f.slo.clone()))
            .unwrap_or_default();
        // A stable sort: servers without a rate keep their run order at the end.
        r.places
            .sort_by(|a, b| match (a.max_rate_rps, b.max_rate_rps) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_model::result::capacity::{Bracket, LimitedBy};

    fn entry(server: &str, max: Option<f64>, by: Option<LimitedBy>) -> CapacityEntry {
        let mut r = text::tests::result(
            vec![],
            Bracket {
                low_rps: max,
                high_rps: None,
            },
            by,
        );
        r.max_rate_rps = max;
        CapacityEntry {
            server: server.into(),
            scenario: "get".into(),
            axes: BTreeMap::new(),
            rep: 1,
            status: CellStatus::Ok,
            reason: None,
            result: Some(r),
        }
    }

    #[test]
    fn servers_rank_by_the_rate_they_sustain_and_those_without_one_come_last() {
        let entries = vec![
            entry("none", None, None),
            entry("slow", Some(1_000.0), Some(LimitedBy::Slo)),
            entry("fast", Some(8_000.0), Some(LimitedBy::Client)),
            entry("slow", Some(3_000.0), Some(LimitedBy::Slo)),
        ];
        let r = rankings(&entries);
        assert_eq!(r.len(), 1);
        let order: Vec<&str> = r[0].places.iter().map(|p| p.server.as_str()).collect();
        assert_eq!(order, ["fast", "slow", "none"]);
        // Two repetitions: the median of their rates.
        assert_eq!(r[0].places[1].max_rate_rps, Some(2_000.0));
        assert_eq!(r[0].places[0].rate_text(), "≥ 8,000");
        assert_eq!(r[0].places[0].limit_text(), "client");
        assert_eq!(r[0].places[2].rate_text(), "–");
        assert!(r[0].places[2].reason().unwrap().starts_with("No rate"));
    }
}
