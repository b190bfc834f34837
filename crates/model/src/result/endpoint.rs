//! `endpoints[]` of a RunResult: the results of each name of a workload (`--requests-file`):
//! a request's `name`, else its default `METHOD path`, else `other` past the cap, beside the
//! whole mix's numbers at the top level (docs/contract.md, "Workloads").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{ErrorCounts, Percentiles};

/// One named request's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointResult {
    /// Its `name` in the requests file, its default (`GET /items/{seq}`), or `other`.
    pub name: String,
    /// The method of its (first) request; empty for the `other` of the overflow (many
    /// templates).
    pub method: String,
    /// Its (first) request's path as written, placeholders included
    /// (`/items/{rand:1..10000}`); empty for the `other` of the overflow.
    pub path: String,
    /// Its counters (`sent = completed + errors − errors.connect + unfinished`, as at the top).
    pub requests: EndpointRequests,
    /// Its responses per status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Its errors by kind.
    pub errors: ErrorCounts,
    /// Its responses that failed a check, by check (`status`, `body_contains`, ...).
    pub checks: BTreeMap<String, u64>,
    /// Its corrected latency.
    pub latency_us: Percentiles,
    /// Its service time.
    pub service_time_us: Percentiles,
    /// `latency_us` histogram, HdrHistogram V2 compressed, base64 (what `merge` adds up).
    pub latency_hdr: String,
    /// `service_time_us` histogram, same encoding.
    pub service_time_hdr: String,
}

/// A named request's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointRequests {
    /// First byte written.
    pub sent: u64,
    /// Complete responses, any status.
    pub completed: u64,
    /// Σ errors.
    pub errors: u64,
    /// Completed responses with a status of 400 or more, or a failed check (each once).
    pub failed: u64,
    /// Still in flight after the drain.
    pub unfinished: u64,
    /// Completed responses that failed at least one check, whatever their status, each once;
    /// absent without checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_checks: Option<u64>,
    /// A journey's steps of this name not sent because their user lacked a value they need;
    /// absent without a journey.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
}
