//! The monitored server's on-CPU stacks, from folded stacks to what a reader sees: the
//! functions that cost the most CPU per request ([`top()`]), what changed between two runs
//! ([`diff()`]), and the flame graph of the HTML report ([`html`]). Pure: text in, text out.
//!
//! Samples become a cost per request by [`Profile`]: `samples × period_us ÷ requests`.

pub mod diff;
pub mod folded;
pub mod html;
pub mod top;
mod tree;

pub use diff::{diff, diff_markdown, diff_text, Diff, FunctionDiff};
pub use folded::{Folded, FoldedError};
pub(crate) use html::of_report;
pub use html::{FlameData, Sections};
pub use top::{top, top_markdown, top_text, FunctionCost};

/// A profile and what turns its samples into CPU time per request.
#[derive(Debug, Clone, Copy)]
pub struct Profile<'a> {
    /// The stacks sampled.
    pub folded: &'a Folded,
    /// CPU time one sample stands for, µs (1e6 ÷ the sampling rate in Hz).
    pub period_us: f64,
    /// Requests the run completed while it was sampled.
    pub requests: u64,
}

impl<'a> Profile<'a> {
    /// A profile of `folded` sampled every `period_us` over `requests` requests.
    pub fn new(folded: &'a Folded, period_us: f64, requests: u64) -> Profile<'a> {
        Profile {
            folded,
            period_us,
            requests,
        }
    }

    /// CPU µs per request that `samples` samples stand for; 0 without requests.
    pub fn us_per_request(&self, samples: u64) -> f64 {
        us_per_request(samples, self.period_us, self.requests)
    }
}

/// `samples × period_us ÷ requests`; 0 when no request completed.
fn us_per_request(samples: u64, period_us: f64, requests: u64) -> f64 {
    if requests == 0 {
        return 0.0;
    }
    samples as f64 * period_us / requests as f64
}

/// µs for a table: one decimal from 1 µs up, more digits below.
fn us(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A change in µs with its sign: `+4.1`, `-0.25`.
fn signed_us(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", us(v))
    } else {
        us(v)
    }
}

/// A name for a terminal: control characters (escape sequences) shown as `?`, and cut to
/// `max` characters with `…`.
fn printable(name: &str, max: usize) -> String {
    let mut o: String = name
        .chars()
        .take(max)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if name.chars().nth(max).is_some() {
        o.pop();
        o.push('…');
    }
    o
}

/// A name as a Markdown table cell: a code span (its HTML shown as text, its backticks
/// fenced) with its pipes escaped, which a table would otherwise split on.
fn markdown_name(name: &str) -> String {
    crate::escape::code_span(name).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_per_request_and_their_text() {
        let f = Folded::default();
        let p = Profile::new(&f, 1e6 / 499.0, 1000);
        assert!((p.us_per_request(499) - 1000.0).abs() < 1e-9);
        assert_eq!(Profile::new(&f, 2004.0, 0).us_per_request(10), 0.0);
        assert_eq!(us(12.04), "12.0");
        assert_eq!(us(0.25), "0.25");
        assert_eq!(us(0.012), "0.012");
        assert_eq!(signed_us(4.1), "+4.1");
        assert_eq!(signed_us(-4.1), "-4.1");
        assert_eq!(signed_us(0.0), "0.0");
    }

    #[test]
    fn names_for_a_terminal_cannot_send_escapes() {
        assert_eq!(printable("a\u{1b}[2Jb", 20), "a?[2Jb");
        assert_eq!(printable("abcdef", 4), "abc…");
        assert_eq!(printable("abcd", 4), "abcd");
    }

    #[test]
    fn names_in_markdown_cells_stay_text() {
        assert_eq!(markdown_name("a|b"), "`a\\|b`");
        assert_eq!(markdown_name("x`y"), "``x`y``");
        assert_eq!(markdown_name("<img src=x>"), "`<img src=x>`");
    }
}
