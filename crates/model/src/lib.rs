//! volley's model: what every other crate of the workspace speaks. Units people type and
//! volley prints (`units`), the machine as volley sees it (`sys`), latency histograms and their
//! aggregation (`stats`), the result files (`result`, docs/contract.md, "RunResult") and one
//! vocabulary of metrics over them (`metric`). It depends on no other volley crate; the crate
//! map is docs/architecture.md.

/// `eprintln!` that cannot panic: std's panics when stderr cannot be written (`2>/dev/full`, a
/// closed pipe), and a benchmark must not crash over a diagnostic. A failed write is dropped.
/// What the commands and the engine write to stderr goes through it.
#[macro_export]
macro_rules! stderrln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `eprint!` that cannot panic (see [`stderrln!`]).
#[macro_export]
macro_rules! stderr {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

#[macro_use]
mod words;

pub mod metric;
pub mod result;
pub mod stats;
pub mod sys;
pub mod units;
