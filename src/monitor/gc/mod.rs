//! The server's runtime as the monitor sees it: garbage-collection counters and, later, pause
//! logs (issue: GC pauses on the latency timeline). [`hsperfdata`] reads the HotSpot
//! performance-counter file a JVM keeps without any flag (what `jstat` reads).

pub mod gotrace;
pub mod hsperfdata;

/// One collection as a runtime's log reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct GcEvent {
    /// When it started, in seconds on the log's own clock (Go: since the process started).
    pub t_s: f64,
    /// The runtime's name for it (Go: `gc` or `forced`).
    pub kind: String,
    /// How long the application was stopped, in milliseconds.
    pub pause_ms: f64,
    /// Heap in use when it started.
    pub heap_before_bytes: Option<u64>,
    /// Heap in use after it (Go: the live heap it marked).
    pub heap_after_bytes: Option<u64>,
}

/// What a log gave: its collections, and how many of its GC lines did not parse (a line
/// that does not match is counted, never fatal).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GcLog {
    /// Collections in the order logged.
    pub events: Vec<GcEvent>,
    /// GC lines that did not match the format.
    pub unparsed_lines: u64,
}
