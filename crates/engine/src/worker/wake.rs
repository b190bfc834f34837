//! The open loop's timed wake-ups when they would cost most of a core (docs/contract.md,
//! "Phases and time": the open loop). Each timed wait arms a kernel timer; on a virtual
//! machine that costs 9–25 µs of CPU (BENCHMARKS.md, "Open loop at 100k req/s"), so one
//! wake-up per request saturates a core at 40–100k req/s with nothing else done. When the
//! worker's thread has been busy for most of its recent time, the wake-ups for due requests
//! come at most once per quantum: the requests that fell due since the last wake-up go
//! together at the next one, late by less than the quantum (counted in `schedule_lag_us`).
//! Wake-ups for responses are never delayed: what is read is timed when it arrives.

use crate::clock::thread_cpu_ns;

/// The thread's CPU share over a window without the quantum at or above which it engages.
const ENGAGE_BUSY: f64 = 0.75;
/// The window over which the thread's CPU share is read.
const WINDOW_NS: u64 = 100_000_000;
/// Windows the quantum stays engaged before one without it measures the thread again (the
/// rate may have fallen, or the load changed).
const ENGAGED_WINDOWS: u32 = 9;
/// The default quantum: at most 20,000 timed wake-ups a second.
pub(crate) const DEFAULT_QUANTUM_NS: u64 = 50_000;

/// When a worker's next timed wake-up for due requests may come.
pub(super) struct WakeQuantum {
    quantum_ns: u64,
    engaged: bool,
    /// Engaged windows left before the next one without the quantum.
    engaged_left: u32,
    last_wake_ns: u64,
    window_start_ns: u64,
    window_cpu_ns: u64,
}

impl WakeQuantum {
    /// A quantum of `quantum_ns` (0: every due request has its own wake-up).
    pub(super) fn new(quantum_ns: u64) -> WakeQuantum {
        WakeQuantum {
            quantum_ns,
            engaged: false,
            engaged_left: 0,
            last_wake_ns: 0,
            window_start_ns: 0,
            window_cpu_ns: 0,
        }
    }

    /// The loop woke (for any reason) at `now`.
    #[inline]
    pub(super) fn woke(&mut self, now: u64) {
        self.last_wake_ns = now;
    }

    /// When to wake for a request due at `due`.
    #[inline]
    pub(super) fn wake_for(&self, due: u64) -> u64 {
        if self.engaged {
            due.max(self.last_wake_ns + self.quantum_ns)
        } else {
            due
        }
    }

    /// Called at housekeeping: at the end of each window, engages by the thread's CPU share
    /// over a window without the quantum, and after [`ENGAGED_WINDOWS`] engaged lets go for
    /// one window to measure again.
    pub(super) fn review(&mut self, now: u64) {
        if self.quantum_ns == 0 || now < self.window_start_ns + WINDOW_NS {
            return;
        }
        let Some(cpu) = thread_cpu_ns() else {
            return;
        };
        if self.window_start_ns > 0 {
            let busy = cpu.saturating_sub(self.window_cpu_ns) as f64
                / now.saturating_sub(self.window_start_ns).max(1) as f64;
            (self.engaged, self.engaged_left) = decide(self.engaged, self.engaged_left, busy);
        }
        self.window_start_ns = now;
        self.window_cpu_ns = cpu;
    }
}

/// (engaged, engaged windows left) after a window of `busy` CPU share.
fn decide(engaged: bool, left: u32, busy: f64) -> (bool, u32) {
    match (engaged, left) {
        (true, 0) => (false, 0),
        (true, n) => (true, n - 1),
        (false, _) if busy >= ENGAGE_BUSY => (true, ENGAGED_WINDOWS),
        (false, _) => (false, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engages_when_busy_and_measures_again_without_it_every_second() {
        assert_eq!(decide(false, 0, 0.5), (false, 0));
        let mut state = decide(false, 0, 0.8);
        assert_eq!(state, (true, ENGAGED_WINDOWS));
        for _ in 0..ENGAGED_WINDOWS {
            state = decide(state.0, state.1, 0.3);
            assert!(state.0, "engaged windows are not judged");
        }
        assert_eq!(
            decide(state.0, state.1, 0.3),
            (false, 0),
            "a window without it"
        );
    }

    #[test]
    fn an_engaged_quantum_spaces_the_wake_ups_never_earlier_than_due() {
        let mut q = WakeQuantum::new(50_000);
        q.woke(1_000_000);
        assert_eq!(
            q.wake_for(1_010_000),
            1_010_000,
            "not engaged: at the due time"
        );
        q.engaged = true;
        assert_eq!(
            q.wake_for(1_010_000),
            1_050_000,
            "a quantum after the last wake-up"
        );
        assert_eq!(
            q.wake_for(1_070_000),
            1_070_000,
            "never before the due time"
        );
    }
}
