//! The live one-line display on a terminal (stderr), redrawn every second of the run.

use std::io::Write as _;

use volley_model::stats::aggregate::FinishedBucket;
use volley_model::stats::observer::Observer;
use volley_model::units::{micros, opt_micros, rate, seconds, thousands};

/// The live one-line display on a terminal (stderr), redrawn every second.
pub struct LiveLine {
    enabled: bool,
    total_s: Option<f64>,
    drawn: bool,
}

impl LiveLine {
    /// A live line; `enabled` is false with `--quiet` or when stderr is not a terminal.
    pub fn new(enabled: bool, total_s: Option<f64>) -> Self {
        LiveLine {
            enabled,
            total_s,
            drawn: false,
        }
    }
}

impl Observer for LiveLine {
    fn second(&mut self, bucket: &FinishedBucket, elapsed_s: f64) {
        if !self.enabled {
            return;
        }
        let p = &bucket.point;
        let of = self
            .total_s
            .map(|t| format!("/{}", seconds(t)))
            .unwrap_or_default();
        let users = p
            .users
            .map(|u| format!("   {} users", thousands(u)))
            .unwrap_or_default();
        let line = format!(
            "  {:.0} s{of}{users}   {} req/s   p50 {}   p99 {}   max {}   errors {}",
            elapsed_s,
            rate(p.completed as f64 / p.interval_s.max(1e-9)),
            opt_micros(p.latency_p50_us),
            opt_micros(p.latency_p99_us),
            p.latency_max_us.map(micros).unwrap_or_else(|| "-".into()),
            thousands(p.errors)
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    fn done(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
