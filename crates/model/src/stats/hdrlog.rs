//! `--hdr-log`: per-second latency histograms streamed in HdrHistogram's interval log format
//! (readable by HdrHistogram's HistogramLogProcessor, HdrHistogramVisualizer and the Rust
//! crate's `IntervalLogIterator`). Each line is written and flushed as its second finishes.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::histogram::{encode, Hist};

/// An open interval log.
pub struct HdrLog {
    out: Box<dyn Write + Send>,
}

impl HdrLog {
    /// Writes the header. `started_at` is t0; interval timestamps are seconds after it.
    pub fn begin(
        mut out: Box<dyn Write + Send>,
        started_at: SystemTime,
        comment: &str,
    ) -> io::Result<Self> {
        let t = started_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs_f64();
        let stamp = humantime::format_rfc3339_millis(started_at);
        for line in comment.lines() {
            writeln!(out, "#{line}")?;
        }
        writeln!(
            out,
            "#[Histogram values are in microseconds; Interval_Max is in milliseconds]"
        )?;
        writeln!(out, "#[StartTime: {t:.3} (seconds since epoch), {stamp}]")?;
        writeln!(out, "#[BaseTime: {t:.3} (seconds since epoch)]")?;
        writeln!(out, "#[MaxValueDivisor: 1000.000]")?;
        writeln!(out, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")?;
        out.flush()?;
        Ok(HdrLog { out })
    }

    /// Appends one interval starting `start_s` after t0.
    pub fn interval(&mut self, h: &Hist, start_s: f64, length_s: f64) -> io::Result<()> {
        let max_ms = if h.is_empty() {
            0.0
        } else {
            h.max() as f64 / 1000.0
        };
        writeln!(
            self.out,
            "{start_s:.3},{length_s:.3},{max_ms:.3},{}",
            encode(h)
        )?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram::new_hist;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_reference_log_reader_parses_it() {
        let sink = Sink::default();
        let t0 = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let mut log = HdrLog::begin(Box::new(sink.clone()), t0, "volley test").unwrap();
        let mut h = new_hist();
        h.record(1500).unwrap();
        h.record(2500).unwrap();
        log.interval(&h, 0.0, 1.0).unwrap();
        log.interval(&h, 1.0, 0.5).unwrap();
        let text = sink.0.lock().unwrap().clone();
        let entries: Vec<_> = IntervalLogIterator::new(&text)
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let mut hists = 0;
        for e in entries {
            match e {
                LogEntry::StartTime(t) => {
                    assert!((t.as_secs_f64() - 1_700_000_000.25).abs() < 0.01)
                }
                LogEntry::BaseTime(_) => {}
                LogEntry::Interval(iv) => {
                    hists += 1;
                    let back = crate::stats::histogram::decode(iv.encoded_histogram()).unwrap();
                    assert_eq!(back.len(), 2);
                    assert!((iv.max() - 2.5).abs() < 0.01);
                }
            }
        }
        assert_eq!(hists, 2);
    }
}
