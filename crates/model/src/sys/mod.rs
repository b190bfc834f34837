//! The machine as volley sees it, beneath every other module: which CPUs exist and which
//! volley may use, descriptor limits, and writing files and standard output without
//! half-written results or panics. No dependency on anything else in the crate.

pub mod clock;
pub mod cpus;
pub mod files;
pub mod limits;
pub mod listeners;
