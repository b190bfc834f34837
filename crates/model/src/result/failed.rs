//! Responses that failed (status ≥ 400): when a run's responses mostly failed, its numbers
//! describe error pages, not the service — a suite cell fails (`fail_on_status`) and a report
//! never calls it fastest.

use super::RunResult;

impl RunResult {
    /// More than half of the completed responses had a status of 400 or more (responses
    /// below 400 that failed a check are in `requests.failed` too, but the server answered
    /// them: the bound their checks imply judges them).
    pub fn mostly_failed(&self) -> bool {
        let completed = self.requests.completed;
        completed > 0 && self.error_pages() * 2 > completed
    }

    /// Completed responses with a status of 400 or more.
    fn error_pages(&self) -> u64 {
        self.status_codes
            .iter()
            .filter(|(s, _)| s.parse::<u16>().is_ok_and(|s| s >= 400))
            .map(|(_, n)| n)
            .sum()
    }

    /// What failed, in a few words: `404 on every response`, `503 on 62 % of responses`,
    /// `4xx/5xx on 70 % of responses`; `None` when nothing failed.
    pub fn failed_description(&self) -> Option<String> {
        let completed = self.requests.completed;
        let failed: Vec<(&str, u64)> = self
            .status_codes
            .iter()
            .filter(|(s, _)| s.parse::<u16>().is_ok_and(|s| s >= 400))
            .map(|(s, n)| (s.as_str(), *n))
            .collect();
        let total: u64 = failed.iter().map(|(_, n)| n).sum();
        if total == 0 || completed == 0 {
            return None;
        }
        let what = match failed.as_slice() {
            [(status, _)] => status.to_string(),
            _ => "4xx/5xx".to_string(),
        };
        Some(if total == completed {
            format!("{what} on every response")
        } else {
            format!(
                "{what} on {:.0} % of responses",
                total as f64 / completed as f64 * 100.0
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(codes: &[(&str, u64)]) -> RunResult {
        let text = include_str!("../../../../tests/fixtures/report/open-loop.json");
        let mut r = RunResult::from_json(text).unwrap();
        r.status_codes = codes.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        r.requests.completed = codes.iter().map(|(_, n)| n).sum();
        r.requests.failed = codes
            .iter()
            .filter(|(s, _)| s.starts_with(['4', '5']))
            .map(|(_, n)| n)
            .sum();
        r
    }

    #[test]
    fn mostly_failed_runs_are_described() {
        let all = run(&[("404", 10)]);
        assert!(all.mostly_failed());
        assert_eq!(all.failed_description().unwrap(), "404 on every response");
        let most = run(&[("200", 38), ("503", 62)]);
        assert!(most.mostly_failed());
        assert_eq!(
            most.failed_description().unwrap(),
            "503 on 62 % of responses"
        );
        let mixed = run(&[("200", 30), ("404", 35), ("500", 35)]);
        assert_eq!(
            mixed.failed_description().unwrap(),
            "4xx/5xx on 70 % of responses"
        );
        let half = run(&[("200", 50), ("500", 50)]);
        assert!(!half.mostly_failed(), "half is not more than half");
        // 200s that failed a check are not error pages.
        let mut checked = run(&[("200", 10)]);
        checked.requests.failed = 10;
        assert!(!checked.mostly_failed());
        assert_eq!(checked.failed_description(), None);
        assert_eq!(run(&[("200", 5)]).failed_description(), None);
    }
}
