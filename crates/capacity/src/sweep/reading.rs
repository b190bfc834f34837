//! Where a sweep's windows say the server's limit lies, pure: the knee is the first window from
//! which every later window does not pass (one bad window among good ones is a hiccup, not the
//! limit); the answer is the last window that passed before it. Windows other processes starved
//! volley in (`machine`) say nothing and are left out (docs/contract.md, "Capacity", "Sweep").

use volley_model::result::capacity::{Bracket, LimitedBy, Verdict};

/// What the windows say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    /// The answer: the last window that passed before the knee (a lower bound when
    /// `limited_by` is `client` or `max_rate`).
    pub max_rps: Option<f64>,
    /// What ended the passes: `slo` (the server), `client` (volley could not write the knee's
    /// rate), `max_rate` (no knee: every window to the top passed), `machine` (too many
    /// starved windows to read), or none (no window passed).
    pub limited_by: Option<LimitedBy>,
    /// The answer and the knee.
    pub bracket: Bracket,
    /// The knee's rate.
    pub knee_rps: Option<f64>,
    /// Windows the machine starved volley in, by rate.
    pub starved: Vec<f64>,
}

/// More than this share of starved windows leaves nothing to read.
pub(crate) const STARVED_MAX_SHARE: f64 = 0.5;

/// Reads `(rate, verdict)` per window, in the order run (rates rising).
pub(crate) fn read(windows: &[(f64, Verdict)]) -> Reading {
    let starved: Vec<f64> = windows
        .iter()
        .filter(|(_, v)| *v == Verdict::Machine)
        .map(|(r, _)| *r)
        .collect();
    let judged: Vec<(f64, Verdict)> = windows
        .iter()
        .copied()
        .filter(|(_, v)| *v != Verdict::Machine)
        .collect();
    if windows.is_empty() || starved.len() as f64 > STARVED_MAX_SHARE * windows.len() as f64 {
        return Reading {
            max_rps: None,
            limited_by: (!windows.is_empty()).then_some(LimitedBy::Machine),
            bracket: Bracket::default(),
            knee_rps: None,
            starved,
        };
    }
    let last_pass = judged.iter().rposition(|(_, v)| *v == Verdict::Pass);
    let knee = match last_pass {
        Some(i) => judged.get(i + 1).copied(),
        None => judged.first().copied(),
    };
    let max_rps = last_pass.map(|i| judged[i].0);
    let limited_by = match (max_rps, knee) {
        (Some(_), None) => Some(LimitedBy::MaxRate),
        (_, Some((_, Verdict::Client))) => Some(LimitedBy::Client),
        (Some(_), Some(_)) => Some(LimitedBy::Slo),
        (None, _) => None,
    };
    Reading {
        max_rps,
        limited_by,
        bracket: Bracket {
            low_rps: max_rps,
            high_rps: knee.map(|k| k.0),
        },
        knee_rps: knee.map(|k| k.0),
        starved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::*;

    fn windows(vs: &[Verdict]) -> Vec<(f64, Verdict)> {
        vs.iter()
            .enumerate()
            .map(|(i, v)| (100.0 * (i + 1) as f64, *v))
            .collect()
    }

    #[test]
    fn the_knee_is_where_the_slo_breaks_and_stays_broken() {
        // A hiccup at 300 is not the limit: 500 passed after it.
        let r = read(&windows(&[
            Pass, Pass, Fail, Pass, Pass, Fail, Unstable, Fail,
        ]));
        assert_eq!(r.max_rps, Some(500.0));
        assert_eq!(r.knee_rps, Some(600.0));
        assert_eq!(r.limited_by, Some(LimitedBy::Slo));
        assert_eq!(
            r.bracket,
            Bracket {
                low_rps: Some(500.0),
                high_rps: Some(600.0)
            }
        );
    }

    #[test]
    fn starved_windows_say_nothing() {
        let r = read(&windows(&[Pass, Pass, Machine, Pass, Machine, Fail, Fail]));
        assert_eq!(r.max_rps, Some(400.0));
        assert_eq!(r.knee_rps, Some(600.0), "the starved 500 is no knee");
        assert_eq!(r.starved, vec![300.0, 500.0]);
        let busy = read(&windows(&[Machine, Pass, Machine, Machine, Fail]));
        assert_eq!(busy.limited_by, Some(LimitedBy::Machine));
        assert_eq!(busy.max_rps, None);
    }

    #[test]
    fn no_knee_is_a_lower_bound_at_the_top_and_a_client_knee_names_the_client() {
        let r = read(&windows(&[Pass, Pass, Pass]));
        assert_eq!(
            (r.max_rps, r.limited_by),
            (Some(300.0), Some(LimitedBy::MaxRate))
        );
        assert_eq!(r.knee_rps, None);
        let c = read(&windows(&[Pass, Pass, Client, Client]));
        assert_eq!(
            (r.max_rps.is_some(), c.limited_by),
            (true, Some(LimitedBy::Client))
        );
        assert_eq!(c.max_rps, Some(200.0));
    }

    #[test]
    fn no_pass_is_no_answer() {
        let r = read(&windows(&[Fail, Fail]));
        assert_eq!((r.max_rps, r.limited_by), (None, None));
        assert_eq!(r.knee_rps, Some(100.0));
        let c = read(&windows(&[Client, Client]));
        assert_eq!(c.limited_by, Some(LimitedBy::Client));
        assert_eq!(read(&[]).limited_by, None);
    }
}
