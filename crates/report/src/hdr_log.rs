//! `--hdr-log`: an observer that streams each second's corrected-latency histogram into an
//! HdrHistogram interval log ([`volley_model::stats::hdrlog`]) as the run goes. A write that fails
//! stops the log and is kept as its error; the run goes on.

use std::io::Write;
use std::time::SystemTime;

use volley_model::stats::aggregate::FinishedBucket;
use volley_model::stats::hdrlog::HdrLog;
use volley_model::stats::observer::Observer;

/// The interval log of one run.
pub struct HdrLogWriter {
    out: Option<Box<dyn Write + Send>>,
    comment: String,
    log: Option<HdrLog>,
    error: Option<String>,
}

impl HdrLogWriter {
    /// A log to `out`, headed by `comment` (volley's version and command line).
    pub fn new(out: Box<dyn Write + Send>, comment: String) -> Self {
        HdrLogWriter {
            out: Some(out),
            comment,
            log: None,
            error: None,
        }
    }

    /// Why the log stopped, if it did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

impl Observer for HdrLogWriter {
    fn start(&mut self, started_at: SystemTime) {
        if let Some(out) = self.out.take() {
            match HdrLog::begin(out, started_at, &self.comment) {
                Ok(log) => self.log = Some(log),
                Err(e) => self.error = Some(e.to_string()),
            }
        }
    }

    fn second(&mut self, b: &FinishedBucket, _elapsed_s: f64) {
        if let (Some(log), None) = (self.log.as_mut(), self.error.as_ref()) {
            if let Err(e) = log.interval(&b.latency, b.point.t_s as f64, b.point.interval_s) {
                self.error = Some(e.to_string());
            }
        }
    }
}
