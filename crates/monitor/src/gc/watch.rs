//! The server's GC over the window, for the `TreeSampler`: a JVM's counter file found in the
//! tree and sampled with it, or the runtime's log (`--gc-log`, or a suite cell's runtime) read
//! at the end and placed on the run's clock. The log wins when both exist: it has every pause.

use std::time::Instant;

use super::counters::{self, JvmCounters};
use super::logfile;
use super::summary::{self, Window};
use crate::settings::GcLogConfig;
use volley_model::result::gc::{GcSource, ServerGc};

/// How a log's clock maps to the run's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Clocks {
    /// Wall-clock ms since the epoch at t0.
    pub t0_unix_ms: f64,
    /// When the monitored process started, wall-clock ms (from its start time in /proc, to
    /// the kernel's 10 ms tick).
    pub process_start_unix_ms: Option<f64>,
}

/// Seconds between two looks for a JVM's counter file while none is found.
const LOOK_EVERY_S: f64 = 1.0;

/// The GC sources of one monitored tree.
#[derive(Debug, Default)]
pub(crate) struct GcWatch {
    log: Option<GcLogConfig>,
    jvm: Option<JvmCounters>,
    jvm_from_s: f64,
    looked_at_s: Option<f64>,
    clocks: Clocks,
    /// t0 on the monotonic clock (`clocks.t0_unix_ms` on the wall clock).
    origin: Option<Instant>,
    /// The log followed for live views (its pauses since t0), and when it was last read.
    tail: Option<(logfile::Tail, f64)>,
    tailed: Option<counters::LiveGc>,
}

impl GcWatch {
    /// Watches for a JVM, and reads `log` at the end when given.
    pub fn new(log: Option<GcLogConfig>) -> Self {
        GcWatch {
            log,
            ..GcWatch::default()
        }
    }

    /// The window's first edge; `origin` is t0, the instant `clocks.t0_unix_ms` names.
    pub(crate) fn baseline(&mut self, pids: &[i32], clocks: Clocks, origin: Instant) {
        self.clocks = clocks;
        self.origin = Some(origin);
        self.look(0.0, pids);
        self.tail = self.log.as_ref().map(|l| (logfile::Tail::at_end(l), 0.0));
    }

    /// A reading at `t_s` seconds from t0 over the tree's live `pids`.
    pub fn sample(&mut self, t_s: f64, pids: &[i32]) {
        // The log, twice a second: its lines come in bursts, and the views tick once a second.
        if let Some((tail, at)) = self.tail.as_mut().filter(|(_, at)| t_s - *at >= 0.5) {
            *at = t_s;
            self.tailed = Some(tail.read());
        }
        match self.jvm.as_mut() {
            Some(j) => j.sample(),
            None => {
                if self.looked_at_s.is_none_or(|at| t_s - at >= LOOK_EVERY_S) {
                    self.look(t_s, pids);
                }
            }
        }
    }

    fn look(&mut self, t_s: f64, pids: &[i32]) {
        self.looked_at_s = Some(t_s);
        let origin = self.origin.unwrap_or_else(Instant::now);
        if let Some(mut j) = counters::find(pids).and_then(|p| JvmCounters::open(&p, origin)) {
            j.sample();
            self.jvm_from_s = t_s;
            self.jvm = Some(j);
        }
    }

    /// The pauses since t0 as read so far: a JVM's from its counters, otherwise those of the
    /// lines appended to `--gc-log` (`None` with neither).
    pub fn live(&self) -> Option<counters::LiveGc> {
        self.jvm.as_ref().map(|j| j.live()).or(self.tailed)
    }

    /// The window's collections after the last reading at `window_s`; `None` when the tree
    /// has no JVM and no log was given.
    pub fn finish(self, window_s: f64) -> Option<ServerGc> {
        let vm_start = self.jvm.as_ref().and_then(|j| j.vm_start_unix_ms);
        if let Some(log) = &self.log {
            let clocks = Clocks {
                process_start_unix_ms: vm_start.or(self.clocks.process_start_unix_ms),
                ..self.clocks
            };
            let mut g = logfile::read(log, clocks, window_s);
            if g.alloc_bytes.is_none() {
                if let Some(jvm) = self.jvm {
                    alloc_from_counters(&mut g, jvm.finish(), window_s);
                }
            }
            return Some(g);
        }
        let jvm = self.jvm?;
        let mut w: Window = jvm.finish();
        if self.jvm_from_s > 0.0 {
            let note = w.note.take().unwrap_or_default();
            w.note = Some(format!(
                "{note}; the JVM's counter file was found {:.1} s into the window, collections before are not counted",
                self.jvm_from_s
            ));
        }
        Some(summary::summarize(GcSource::Hsperfdata, w, window_s))
    }
}

/// A log that cannot tell the allocation (fewer than two collections with heap figures in
/// the window, or ZGC's pause lines) takes it from the JVM's counter file, saying so.
fn alloc_from_counters(g: &mut ServerGc, counters: Window, window_s: f64) {
    let Some(bytes) = counters.alloc_bytes else {
        return;
    };
    let from = summary::summarize(GcSource::Hsperfdata, counters, window_s);
    g.alloc_bytes = Some(bytes);
    g.alloc_rate_mb_s = from.alloc_rate_mb_s;
    g.alloc_rate_series = from.alloc_rate_series;
    let said = "allocation from the JVM's counter file (eden's occupancy)";
    g.note = Some(match g.note.take() {
        Some(n) => format!("{n}; {said}"),
        None => said.to_string(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_without_allocation_takes_it_from_the_counters_and_says_so() {
        let mut g = summary::summarize(GcSource::JvmLog, Window::default(), 2.0);
        let counters = Window {
            alloc_bytes: Some(4_000_000),
            alloc_by_second: vec![1_000_000, 3_000_000],
            ..Window::default()
        };
        alloc_from_counters(&mut g, counters, 2.0);
        assert_eq!(
            g.source,
            GcSource::JvmLog,
            "the pauses still come from the log"
        );
        assert_eq!(g.alloc_bytes, Some(4_000_000));
        assert_eq!(g.alloc_rate_mb_s, Some(2.0));
        assert_eq!(g.alloc_rate_series.len(), 2);
        assert!(g.note.unwrap().contains("counter file"));
        // Counters that cannot tell either leave it unknown.
        let mut g = summary::summarize(GcSource::JvmLog, Window::default(), 2.0);
        alloc_from_counters(&mut g, Window::default(), 2.0);
        assert_eq!((g.alloc_bytes, g.note), (None, None));
    }
}
