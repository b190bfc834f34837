//! A journey's users (`journey` of a RunResult) in words, so the terminal summary, the
//! Markdown and the HTML reports say the same: users started, steps skipped and why, captures
//! missed by reason, values cut, cookies refused and, in the open loop, arrivals.

use volley_model::result::journey::JourneyResult;
use volley_model::result::RunResult;
use volley_model::units::thousands;

/// `8 users started`, `96 steps skipped (a value they need was not captured)`, `captures
/// missed: not_json 50`, …: what the users met, a part each (zero counts left out, but for
/// the steps skipped).
pub(crate) fn parts(j: &JourneyResult) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(n) = j.arrivals {
        parts.push(arrivals(n, j.arrivals_unsent.unwrap_or(0)));
    }
    parts.push(format!("{} started", count(j.users_started, "user")));
    parts.push(match j.skipped {
        0 => "no step skipped".to_string(),
        n => format!(
            "{} skipped (a value they need was not captured)",
            count(n, "step")
        ),
    });
    if !j.captures_missed.is_empty() {
        let missed: Vec<String> = j
            .captures_missed
            .iter()
            .map(|(k, n)| format!("{k} {}", thousands(*n)))
            .collect();
        parts.push(format!("captures missed: {}", missed.join(", ")));
    }
    if j.values_cut > 0 {
        parts.push(format!("{} cut at 4 KiB", count(j.values_cut, "value")));
    }
    if j.cookies_refused > 0 {
        parts.push(format!("{} refused", count(j.cookies_refused, "cookie")));
    }
    parts
}

/// `1,200 arrivals`, or `1,200 arrivals (30 never started)`.
fn arrivals(n: u64, unsent: u64) -> String {
    match unsent {
        0 => count(n, "arrival"),
        u => format!("{} ({} never started)", count(n, "arrival"), thousands(u)),
    }
}

/// `1 user`, `1,200 users`.
fn count(n: u64, what: &str) -> String {
    format!("{} {what}{}", thousands(n), if n == 1 { "" } else { "s" })
}

/// One server's journey over the repetitions that had one, summed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JourneyLine<'a> {
    /// The server (a series of a scenario group).
    pub server: &'a str,
    /// Repetitions with a journey.
    pub runs: usize,
    /// Their journeys added up.
    pub total: JourneyResult,
}

impl JourneyLine<'_> {
    /// ` (rust, 3 runs summed)`: the server when `named`, the repetitions when more than one;
    /// empty for one unnamed run.
    pub fn label(&self, named: bool) -> String {
        let mut l = Vec::new();
        if named {
            l.push(self.server.to_string());
        }
        if self.runs > 1 {
            l.push(format!("{} runs summed", self.runs));
        }
        if l.is_empty() {
            String::new()
        } else {
            format!(" ({})", l.join(", "))
        }
    }

    /// The parts, joined as the terminal joins them.
    pub fn text(&self) -> String {
        parts(&self.total).join(" · ")
    }
}

/// The journeys of a scenario group's servers (name, finished repetitions), in order: only
/// those whose runs had one.
pub(crate) fn lines<'a>(
    series: impl IntoIterator<Item = (&'a str, Vec<&'a RunResult>)>,
) -> Vec<JourneyLine<'a>> {
    series
        .into_iter()
        .filter_map(|(server, results)| {
            let mut journeys = results.iter().filter_map(|r| r.journey.as_ref());
            let mut total = journeys.next()?.clone();
            let mut runs = 1;
            for j in journeys {
                total.add(j);
                runs += 1;
            }
            Some(JourneyLine {
                server,
                runs,
                total,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journey() -> JourneyResult {
        JourneyResult {
            users_started: 1,
            skipped: 96,
            captures_missed: [("not_json".to_string(), 50), ("no_value".to_string(), 1)]
                .into_iter()
                .collect(),
            values_cut: 2,
            cookies_refused: 1_204,
            ..Default::default()
        }
    }

    #[test]
    fn every_count_is_said_and_zeros_are_left_out() {
        assert_eq!(
            parts(&journey()),
            [
                "1 user started",
                "96 steps skipped (a value they need was not captured)",
                "captures missed: no_value 1, not_json 50",
                "2 values cut at 4 KiB",
                "1,204 cookies refused",
            ]
        );
        let quiet = JourneyResult {
            users_started: 8,
            ..Default::default()
        };
        assert_eq!(parts(&quiet), ["8 users started", "no step skipped"]);
    }

    #[test]
    fn the_open_loop_counts_its_arrivals_first() {
        let mut j = JourneyResult {
            users_started: 1_200,
            arrivals: Some(1_200),
            arrivals_unsent: Some(0),
            ..Default::default()
        };
        assert_eq!(parts(&j)[..2], ["1,200 arrivals", "1,200 users started"]);
        j.arrivals = Some(1);
        j.arrivals_unsent = Some(30);
        assert_eq!(parts(&j)[0], "1 arrival (30 never started)");
    }

    #[test]
    fn repetitions_add_up_and_runs_without_a_journey_are_left_out() {
        let mix = include_str!("../../../tests/fixtures/report/mix.json");
        let plain = RunResult::from_json(mix).unwrap();
        let mut a = plain.clone();
        a.journey = Some(journey());
        let b = a.clone();
        let l = lines([("rust", vec![&a, &plain, &b]), ("go", vec![&plain])]);
        assert_eq!(l.len(), 1, "go had no journey");
        assert_eq!((l[0].server, l[0].runs), ("rust", 2));
        assert_eq!(l[0].total.skipped, 192);
        assert_eq!(l[0].total.captures_missed["not_json"], 100);
        assert_eq!(l[0].label(true), " (rust, 2 runs summed)");
        assert_eq!(l[0].label(false), " (2 runs summed)");
        let one = lines([("rust", vec![&a])]);
        assert_eq!(one[0].label(false), "");
        assert!(one[0]
            .text()
            .starts_with("1 user started · 96 steps skipped"));
    }
}
