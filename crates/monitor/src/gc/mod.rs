//! The server's runtime as the monitor sees it: garbage-collection counters and, later, pause
//! logs (issue: GC pauses on the latency timeline). [`hsperfdata`] reads the HotSpot
//! performance-counter file a JVM keeps without any flag (what `jstat` reads); [`gotrace`],
//! [`jvmlog`] and [`nodetrace`] read the pause logs of Go (`GODEBUG=gctrace=1`), of a JVM
//! (`-Xlog:gc…`, [`jvmlog::xlog_option`]) and of Node (`--trace-gc`, set by the preload
//! [`nodetrace::NODE_PRELOAD_JS`]).

pub mod counters;
pub mod gotrace;
pub mod hsperfdata;
pub mod jvmlog;
pub(crate) mod logfile;
pub mod nodetrace;
pub mod summary;
pub mod watch;

/// One collection as a runtime's log reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct GcEvent {
    /// When it started, in seconds on the log's own clock (Go and JVM: since the process
    /// started; Node: since the isolate started).
    pub t_s: f64,
    /// The runtime's name for it (Go: `gc` or `forced`).
    pub kind: String,
    /// How long the application was stopped, in milliseconds.
    pub pause_ms: f64,
    /// Heap in use when it started.
    pub heap_before_bytes: Option<u64>,
    /// Heap in use after it (Go: the live heap it marked).
    pub heap_after_bytes: Option<u64>,
    /// When it started on the wall clock, in milliseconds since the Unix epoch, when the log
    /// tells (JVM: a `timemillis`/`time`/`utctime` decorator; Node: the preload's anchor).
    pub unix_ms: Option<f64>,
}

/// What a log gave: its collections, and how many of its GC lines did not parse (a line
/// that does not match is counted, never fatal).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GcLog {
    /// Collections in the order logged.
    pub events: Vec<GcEvent>,
    /// GC lines that did not match the format.
    pub unparsed_lines: u64,
    /// The wall-clock time, in milliseconds since the Unix epoch, at which the log's own
    /// clock (`t_s`) reads 0, when the log tells (Node: the preload's anchor line; JVM: a line
    /// carrying both an uptime and a wall-clock decorator). `None` for Go.
    pub anchor_unix_ms: Option<f64>,
}
