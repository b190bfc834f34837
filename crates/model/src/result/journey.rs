//! `journey` of the RunResult: what a journey's users met (docs/contract.md, "Journeys").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::journey::{JourneyCounts, MISSED_NAMES};

/// A journey's users over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JourneyResult {
    /// Users that started (took their first step): with once steps, how many logged in.
    pub users_started: u64,
    /// Steps not sent because their user lacked a value they need (a capture failed).
    pub skipped: u64,
    /// Captures that found no value, by reason (`not_json`, `no_value`, `no_match`,
    /// `no_header`, `no_cookie`; zero ones left out).
    pub captures_missed: BTreeMap<String, u64>,
    /// Captured values cut at 4 KiB.
    pub values_cut: u64,
    /// `Set-Cookie` fields the users' jars refused (too large, another domain, a Secure
    /// cookie over plain http, bad syntax).
    pub cookies_refused: u64,
    /// Open loop (`-R`): arrivals that started, each a new user's iteration (absent in the
    /// closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<u64>,
    /// Open loop: arrivals due in the send window that never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals_unsent: Option<u64>,
}

impl JourneyResult {
    /// From the summed counters and the steps skipped; `open`: an open-loop run.
    pub fn of(c: &JourneyCounts, skipped: u64, open: bool) -> Self {
        JourneyResult {
            arrivals: open.then_some(c.arrivals),
            arrivals_unsent: open.then_some(c.arrivals_unsent),
            users_started: c.users_started,
            skipped,
            captures_missed: MISSED_NAMES
                .iter()
                .zip(c.missed)
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            values_cut: c.cut,
            cookies_refused: c.refused_cookies,
        }
    }

    /// Adds another shard's (`volley merge`).
    pub fn add(&mut self, o: &JourneyResult) {
        self.users_started += o.users_started;
        self.skipped += o.skipped;
        for (k, n) in &o.captures_missed {
            *self.captures_missed.entry(k.clone()).or_default() += n;
        }
        self.values_cut += o.values_cut;
        self.cookies_refused += o.cookies_refused;
        self.arrivals = crate::result::add_counts(self.arrivals, o.arrivals);
        self.arrivals_unsent = crate::result::add_counts(self.arrivals_unsent, o.arrivals_unsent);
    }
}
