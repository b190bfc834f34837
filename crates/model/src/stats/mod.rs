//! Statistics: per-thread recorders, HDR histogram helpers and the aggregator that turns
//! per-second intervals into totals and a time series. Everything merges.

pub mod ab;
pub mod aggregate;
pub mod endpoints;
pub mod hdrlog;
pub mod histogram;
pub mod journey;
pub mod observer;
pub mod recorder;
pub mod slowest;
pub mod transport;

pub use aggregate::{Aggregator, TimePoint};
pub use histogram::{new_hist, Hist, Percentiles};
pub use recorder::{Counters, ErrorCounts, ErrorKind, Recorder, WorkerReport};
