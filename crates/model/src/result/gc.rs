//! `server.gc`: the monitored server's garbage collections over the measured window, on the
//! run's clock (docs/contract.md, "GC pauses"). Made by `monitor::gc` from the HotSpot counter
//! file or from the runtime's own log; the correlation with the slowest requests is added when
//! the result is assembled.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

words! {
    /// Where the collections were read.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum GcSource {
        /// The HotSpot performance-counter file sampled by the monitor (no flag on the JVM):
        /// per-sample totals, not single pauses.
        Hsperfdata = "hsperfdata",
        /// JVM unified logging (`-Xlog:gc…`): one event per pause.
        JvmLog = "jvm-log",
        /// Go `GODEBUG=gctrace=1`: one event per collection (its two stop-the-world phases).
        GoGctrace = "go-gctrace",
        /// Node.js `--trace-gc`: one event per collection (main-thread time).
        NodeTraceGc = "node-trace-gc",
    }
}

impl GcSource {
    /// Whether each event is one pause with its own duration (logs), rather than a sample's
    /// total (hsperfdata).
    pub fn per_pause(self) -> bool {
        self != GcSource::Hsperfdata
    }
}

/// Pause percentiles, milliseconds (the long-tail study's table: p50, p99, max).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PausePercentiles {
    /// Median pause.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Longest pause.
    pub max: f64,
}

/// One pause (or, from hsperfdata, one collection of a sample: see `GcSource`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GcPause {
    /// When it started, seconds from t0 (from hsperfdata: the middle of the sample it fell in).
    pub t_s: f64,
    /// The runtime's name for it (`Pause Young (Normal)`, `Scavenge`, `gc`, …).
    pub kind: String,
    /// How long the application was stopped, milliseconds.
    pub pause_ms: f64,
    /// Heap in use before it, bytes (when the source says).
    pub heap_before_bytes: Option<u64>,
    /// Heap in use after it, bytes (when the source says).
    pub heap_after_bytes: Option<u64>,
}

/// Pauses left out of `events` (the short ones of a long run), summarized.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DroppedPauses {
    /// How many.
    pub count: u64,
    /// Their total, milliseconds.
    pub pause_total_ms: f64,
    /// The longest of them, milliseconds (below `events_kept_over_ms`).
    pub pause_max_ms: f64,
}

/// A point of a GC time series, seconds from t0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GcPoint {
    /// Seconds from t0 (the end of the second for rates).
    pub t_s: f64,
    /// The value (bytes for heap, MB/s for allocation).
    pub value: f64,
}

/// What a JVM's counter file covered (hsperfdata): its counts are the differences between its
/// first and its last reading, so the collections counted are those between the two, wherever
/// the window's edges fell. Seconds from t0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CountersSpan {
    /// When the first reading began.
    pub from_s: f64,
    /// When the last reading ended.
    pub to_s: f64,
    /// The longer of those two readings, milliseconds: each reading took the counters at
    /// some instant within it, so each edge is known to this much, inside the span.
    pub edge_ms: f64,
}

/// The server's collections in the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerGc {
    /// Where they were read.
    pub source: GcSource,
    /// The runtime and collector when known (`OpenJDK 17.0.15, G1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Collections (a ZGC cycle is one collection of three pauses).
    pub collections: u64,
    /// Collections by the runtime's name for their kind.
    #[serde(default)]
    pub collections_by_kind: BTreeMap<String, u64>,
    /// Stop-the-world pauses.
    pub pause_count: u64,
    /// Their total, milliseconds.
    pub pause_total_ms: f64,
    /// The longest, milliseconds.
    pub pause_max_ms: f64,
    /// Pause percentiles over every pause of the window (not only those kept in `events`).
    pub pause_ms: PausePercentiles,
    /// Bytes allocated in the window (estimated from the heap before and after collections);
    /// null when the source cannot tell.
    pub alloc_bytes: Option<u64>,
    /// `alloc_bytes` over the window, MB (10^6 bytes) per second.
    pub alloc_rate_mb_s: Option<f64>,
    /// Allocation rate per second of the window, MB/s.
    #[serde(default)]
    pub alloc_rate_series: Vec<GcPoint>,
    /// Heap in use after each collection (bytes), over time.
    #[serde(default)]
    pub heap_after_gc: Vec<GcPoint>,
    /// GC lines of the log that did not parse (counted, never fatal).
    pub unparsed_lines: u64,
    /// The pauses, in time order: every one of at least `events_kept_over_ms`, and shorter
    /// ones while fewer than a thousand events are kept.
    pub events: Vec<GcPause>,
    /// Some pauses are not in `events` (see `events_dropped`).
    pub events_truncated: bool,
    /// Pauses kept from `events` when it is always kept, milliseconds (1).
    #[serde(default)]
    pub events_kept_over_ms: f64,
    /// What was left out of `events`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_dropped: Option<DroppedPauses>,
    /// Of the requests at or above the run's p99.9 latency, the fraction whose
    /// send-to-response window overlapped a pause; null when there are no per-pause events or
    /// no such requests.
    pub slow_overlap_fraction: Option<f64>,
    /// How many of those slowest requests were checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_requests_checked: Option<u64>,
    /// What this source cannot see, or why figures are missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// hsperfdata: when the counter file was first and last read (what the counts cover).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_span: Option<CountersSpan>,
    /// Every pause of the window as (start, length) in seconds from t0, in time order, for
    /// the correlation when the result is assembled (not written: `events` is the bounded
    /// list).
    #[serde(skip)]
    pub pause_windows: Vec<(f64, f64)>,
    /// The source could not be read (its `note` says why): no pause is known, so nothing is
    /// said of the slowest requests either.
    #[serde(skip)]
    pub unread: bool,
}
