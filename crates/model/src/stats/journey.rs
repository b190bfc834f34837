//! What a journey's users met in the measured phase: users started, captures that found no
//! value (by reason), values cut, cookies refused (docs/contract.md, "Journeys"). Counted by
//! each worker, summed for the RunResult's `journey`.

/// Why a capture found no value, in the order [`JourneyCounts::missed`] counts them.
pub const MISSED_NAMES: [&str; 5] = ["not_json", "no_value", "no_match", "no_header", "no_cookie"];

/// One worker's (or the run's) journey counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JourneyCounts {
    /// Captures that found no value, by reason ([`MISSED_NAMES`] order).
    pub missed: [u64; 5],
    /// Values cut at the size limit.
    pub cut: u64,
    /// `Set-Cookie` fields the users' jars refused.
    pub refused_cookies: u64,
    /// Users that started (took their first step).
    pub users_started: u64,
    /// Open loop: arrivals taken from the schedule (each a new user's iteration).
    pub arrivals: u64,
    /// Open loop: arrivals due in the send window that never started.
    pub arrivals_unsent: u64,
}

impl JourneyCounts {
    /// Adds another worker's.
    pub fn merge(&mut self, o: &JourneyCounts) {
        for (a, b) in self.missed.iter_mut().zip(o.missed) {
            *a += b;
        }
        self.cut += o.cut;
        self.refused_cookies += o.refused_cookies;
        self.users_started += o.users_started;
        self.arrivals += o.arrivals;
        self.arrivals_unsent += o.arrivals_unsent;
    }
}
