//! The client self-check: from volley's sampled seconds (its CPU and its worker threads' time
//! on a CPU and waiting on run queues, `monitor::client`), whether the numbers describe volley
//! (saturated), other processes (starved) or neither (docs/contract.md, "Time series,
//! histograms, client check").

use volley_model::result::OtherProcess;
use volley_monitor::client::{saturation, starvation, ClientSample};

/// How the client self-check judged volley's own load.
pub struct ClientCheck {
    /// Fraction of the 1 s samples that were saturated.
    pub fraction: f64,
    /// Saturated by CPU (more than half of the samples).
    pub by_cpu: bool,
    /// Capacity in cores: min(worker threads, cores volley may use).
    pub capacity: f64,
    /// Schedule lag p99 above 1 ms (open loop).
    pub lag_hot: bool,
    /// Fraction of the 1 s samples in which volley was starved (a worker waited for a CPU
    /// without volley being busy).
    pub starved_fraction: f64,
    /// Starved: other processes took volley's CPUs, enough to matter — in a run that was
    /// late, or in more than half of its seconds.
    pub starved: bool,
    /// Seconds sampled.
    pub seconds: usize,
    /// The longest 1 s run-queue wait of a worker thread, percent of the second.
    pub wait_pct_max: f64,
    /// volley's highest 1 s CPU, percent of a core.
    pub cpu_pct_max: f64,
    /// Who else used the CPU during the window.
    pub busiest_others: Vec<OtherProcess>,
}

impl ClientCheck {
    /// Judges `samples` of a run of `capacity` cores whose send lag p99 was `lag_p99_us`:
    /// saturated by CPU in more than half of the seconds; starved when not saturated and
    /// starved seconds came with late sends or made more than half of the run. A late run
    /// that was neither (a hiccup) is neither.
    pub fn of(
        samples: &[ClientSample],
        capacity: f64,
        lag_p99_us: Option<u64>,
        busiest_others: Vec<OtherProcess>,
    ) -> ClientCheck {
        let (fraction, by_cpu) = saturation(samples, capacity);
        let lag_hot = lag_p99_us.is_some_and(|p| p > 1000);
        let starved_fraction = starvation(samples, capacity);
        ClientCheck {
            fraction,
            by_cpu,
            capacity,
            lag_hot,
            starved_fraction,
            starved: !by_cpu && starved_fraction > 0.0 && (lag_hot || starved_fraction > 0.5),
            seconds: samples.len(),
            wait_pct_max: samples.iter().map(|s| s.max_wait_pct).fold(0.0, f64::max),
            cpu_pct_max: samples.iter().map(|s| s.cpu_pct).fold(0.0, f64::max),
            busiest_others,
        }
    }
}
