//! volley's model: what every other crate of the workspace speaks. Units people type and
//! volley prints (`units`), the machine as volley sees it (`sys`), latency histograms and their
//! aggregation (`stats`), the result files (`result`, docs/contract.md, "RunResult") and one
//! vocabulary of metrics over them (`metric`). It depends on no other volley crate; the crate
//! map is docs/architecture.md.

// `eprintln!`/`eprint!` for every module below, shadowing std's: those panic when stderr
// cannot be written (`2>/dev/full`, a closed pipe), and a benchmark must not crash over a
// diagnostic. Failed writes to stderr are dropped. Exported for the crates above.
#[macro_export]
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

#[macro_export]
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod metric;
pub mod result;
pub mod stats;
pub mod sys;
pub mod units;
