//! Observers: what watches a run while it happens — the live line, the HdrHistogram interval
//! log, volley's own CPU sampler — without being part of the engine's loop. The aggregator
//! calls them from its thread (never from a worker), in this order: `start`, `thread` per
//! worker, `measuring` once at t0, then `tick` and `second` as time passes, `done` last.

use std::time::SystemTime;

use super::aggregate::FinishedBucket;

/// Watches a run. Every method has an empty default, so an observer implements what it needs.
pub trait Observer {
    /// The run started; `started_at` is the wall clock of t0 (after the warm-up).
    fn start(&mut self, _started_at: SystemTime) {}

    /// A worker thread started with this kernel thread id.
    fn thread(&mut self, _tid: i32) {}

    /// The measured window began: t0 is `now_ns` on the run clock (or just before).
    fn measuring(&mut self, _now_ns: u64) {}

    /// Once a second of the measured window: `now_ns` on the run clock, `t_s` from t0.
    fn tick(&mut self, _now_ns: u64, _t_s: f64) {}

    /// A second of the measured window is complete (every worker reported it); `elapsed_s`
    /// is the time since t0.
    fn second(&mut self, _bucket: &FinishedBucket, _elapsed_s: f64) {}

    /// The run is over and every worker has stopped.
    fn done(&mut self) {}
}

/// Several observers as one, called in order.
pub struct Observers<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Observers<'_> {
    fn start(&mut self, started_at: SystemTime) {
        self.0.iter_mut().for_each(|o| o.start(started_at));
    }

    fn thread(&mut self, tid: i32) {
        self.0.iter_mut().for_each(|o| o.thread(tid));
    }

    fn measuring(&mut self, now_ns: u64) {
        self.0.iter_mut().for_each(|o| o.measuring(now_ns));
    }

    fn tick(&mut self, now_ns: u64, t_s: f64) {
        self.0.iter_mut().for_each(|o| o.tick(now_ns, t_s));
    }

    fn second(&mut self, bucket: &FinishedBucket, elapsed_s: f64) {
        self.0.iter_mut().for_each(|o| o.second(bucket, elapsed_s));
    }

    fn done(&mut self) {
        self.0.iter_mut().for_each(|o| o.done());
    }
}
