//! The server's GC over the window, for the `TreeSampler`: a JVM's counter file found in the
//! tree and sampled with it, or the runtime's log (`--gc-log`, or a suite cell's runtime) read
//! at the end and placed on the run's clock. The log wins when both exist: it has every pause.

use super::counters::{self, JvmCounters};
use super::logfile;
use super::summary::{self, Window};
use crate::config::GcLogConfig;
use crate::result::gc::{GcSource, ServerGc};

/// How a log's clock maps to the run's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Clocks {
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
pub struct GcWatch {
    log: Option<GcLogConfig>,
    jvm: Option<JvmCounters>,
    jvm_from_s: f64,
    looked_at_s: Option<f64>,
    clocks: Clocks,
}

impl GcWatch {
    /// Watches for a JVM, and reads `log` at the end when given.
    pub fn new(log: Option<GcLogConfig>) -> Self {
        GcWatch {
            log,
            ..GcWatch::default()
        }
    }

    /// The window's first edge.
    pub fn baseline(&mut self, pids: &[i32], clocks: Clocks) {
        self.clocks = clocks;
        self.look(0.0, pids);
    }

    /// A reading at `t_s` seconds from t0 over the tree's live `pids`.
    pub fn sample(&mut self, t_s: f64, pids: &[i32]) {
        match self.jvm.as_mut() {
            Some(j) => j.sample(t_s),
            None => {
                if self.looked_at_s.is_none_or(|at| t_s - at >= LOOK_EVERY_S) {
                    self.look(t_s, pids);
                }
            }
        }
    }

    fn look(&mut self, t_s: f64, pids: &[i32]) {
        self.looked_at_s = Some(t_s);
        if let Some(mut j) = counters::find(pids).and_then(|p| JvmCounters::open(&p)) {
            j.sample(t_s);
            self.jvm_from_s = t_s;
            self.jvm = Some(j);
        }
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
            return Some(logfile::read(log, clocks, window_s));
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
