//! The monitored server's on-CPU stacks, from folded stacks to what a reader sees: the
//! functions that cost the most CPU per request ([`top()`]), what changed between two runs
//! ([`diff()`]), and the flame graph of the HTML report ([`html`]). Pure: text in, text out.
//!
//! Samples become a cost per request by [`Profile`]: `samples × period_us ÷ requests`.

pub mod folded;

pub use folded::{Folded, FoldedError};
