//! The client self-check: volley watches its own CPU once a second, so a run can say when the
//! numbers describe the load generator rather than the server (docs/contract.md, "Time series, histograms, client check"),
//! and the machine's CPU split from /proc/stat.

use super::others;
use super::procfs::{self, CpuTimes};
use volley_model::result::{MachineSample, OtherProcess};
use volley_model::stats::observer::Observer;

/// One second of volley's own CPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClientSample {
    /// Whole process, percent of one core.
    pub cpu_pct: f64,
    /// The busiest worker thread, percent of one core.
    pub max_thread_pct: f64,
    /// The longest any worker thread was runnable but waited on a run queue (another task had
    /// its CPU), percent of the second: the kernel's own account of starvation.
    pub max_wait_pct: f64,
    /// How long the busiest worker thread (by time on a CPU) waited on a run queue, percent of
    /// the second: on a CPU most of the second and runnable the rest, it was saturated even
    /// where others took a share.
    pub busiest_wait_pct: f64,
}

/// A second in which a worker thread waited at least this long (percent of the second) for a
/// CPU, without volley being saturated, is a starved one: 100 ms, thirty times the 3 ms
/// hiccup that changes nothing.
pub const STARVED_WAIT_PCT: f64 = 10.0;

/// Process CPU time from getrusage, in seconds (user, system), and peak RSS in bytes.
///
/// The peak comes from `VmHWM` in /proc/self/status, not from getrusage's `ru_maxrss`: Linux
/// carries `ru_maxrss` across execve, so a volley started by a large process (a test runner,
/// a CI agent) would report its parent's peak as its own.
pub fn rusage_self() -> (f64, f64, u64) {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| procfs::parse_status_kib(&t, "VmHWM"))
        .map(|kib| kib * 1024)
        .unwrap_or(ru.ru_maxrss as u64 * 1024);
    (secs(ru.ru_utime), secs(ru.ru_stime), peak)
}

/// Reads a worker thread's schedstat (`/proc/self/task/TID/schedstat`: time on a CPU, time
/// runnable but waiting, timeslices); tests give a fake one.
pub(crate) type SchedstatSource = Box<dyn FnMut(i32) -> Option<String> + Send>;

/// The kernel's schedstat of a thread of volley.
fn proc_schedstat(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()
}

/// Samples volley's CPU (process and worker threads) and the machine once a second.
pub struct ClientSampler {
    tids: Vec<i32>,
    schedstat: SchedstatSource,
    /// Each thread's (on CPU, waiting) nanoseconds at the last sample.
    last_thread_ns: Vec<Option<(u64, u64)>>,
    /// The machine's CPU pressure (µs) at the last sample, and when it was read.
    last_pressure: Option<(u64, std::time::Instant)>,
    last_proc_s: f64,
    last_machine: Option<CpuTimes>,
    last_t_ns: u64,
    /// Process CPU at the start of the measured window (user, sys seconds).
    pub start_rusage: (f64, f64),
    /// Samples so far.
    pub samples: Vec<ClientSample>,
    /// Machine samples so far.
    pub machine: Vec<MachineSample>,
}

impl ClientSampler {
    /// Starts sampling at run time `now_ns` (the measured window's start).
    pub fn new(now_ns: u64) -> Self {
        Self::with_schedstat(now_ns, Box::new(proc_schedstat))
    }

    /// As [`ClientSampler::new`], with threads' schedstat read from `schedstat`.
    pub fn with_schedstat(now_ns: u64, schedstat: SchedstatSource) -> Self {
        let (u, s, _) = rusage_self();
        ClientSampler {
            tids: Vec::new(),
            schedstat,
            last_thread_ns: Vec::new(),
            last_pressure: read_cpu_pressure(),
            last_proc_s: u + s,
            last_machine: read_proc_stat(),
            last_t_ns: now_ns,
            start_rusage: (u, s),
            samples: Vec::new(),
            machine: Vec::new(),
        }
    }

    /// Registers a worker thread.
    pub fn add_thread(&mut self, tid: i32) {
        self.tids.push(tid);
        let now = self.thread_ns(tid);
        self.last_thread_ns.push(now);
    }

    /// A thread's (on CPU, waiting) nanoseconds so far.
    fn thread_ns(&mut self, tid: i32) -> Option<(u64, u64)> {
        procfs::parse_schedstat(&(self.schedstat)(tid)?)
    }

    /// Takes a sample; `t_s` is its time from t0. Ignored if less than 0.5 s passed.
    pub fn sample(&mut self, now_ns: u64, t_s: f64) {
        let dt_ns = now_ns.saturating_sub(self.last_t_ns);
        if dt_ns < 500_000_000 {
            return;
        }
        let dt = dt_ns as f64 / 1e9;
        let (u, s, _) = rusage_self();
        let cpu_pct = ((u + s) - self.last_proc_s) / dt * 100.0;
        self.last_proc_s = u + s;
        let mut sample = ClientSample {
            cpu_pct,
            ..ClientSample::default()
        };
        let pct = |a: u64, b: u64| b.saturating_sub(a) as f64 / dt_ns as f64 * 100.0;
        for k in 0..self.tids.len() {
            let now = self.thread_ns(self.tids[k]);
            if let (Some((run0, wait0)), Some((run, wait))) = (self.last_thread_ns[k], now) {
                let (run, wait) = (pct(run0, run), pct(wait0, wait));
                if run > sample.max_thread_pct {
                    sample.max_thread_pct = run;
                    sample.busiest_wait_pct = wait;
                }
                sample.max_wait_pct = sample.max_wait_pct.max(wait);
            }
            self.last_thread_ns[k] = now;
        }
        let max_wait_pct = sample.max_wait_pct;
        self.samples.push(sample);
        let pressure = read_cpu_pressure();
        if let (Some(a), Some(b)) = (self.last_machine, read_proc_stat()) {
            let mut m = machine_sample(&a, &b, t_s);
            m.cpu_pressure_pct = self
                .last_pressure
                .zip(pressure)
                .map(|(a, b)| round1(pressure_pct(a, b)));
            m.client_cpu_pct = Some(round1(cpu_pct));
            m.client_wait_pct = Some(round1(max_wait_pct));
            self.machine.push(m);
            self.last_machine = Some(b);
        }
        self.last_pressure = pressure;
        self.last_t_ns = now_ns;
    }
}

/// Volley's own CPU and the machine's over the measured window: an observer of the engine that
/// samples once a second from t0 and reads the process's CPU time at both ends.
#[derive(Default)]
pub struct ClientMonitor {
    tids: Vec<i32>,
    sampler: Option<ClientSampler>,
    end_rusage: Option<(f64, f64, u64)>,
    /// Every other process's CPU at the start of the window, and what they used by its end.
    others_start: Option<others::Snapshot>,
    busiest_others: Vec<OtherProcess>,
}

/// What the client monitor saw.
pub struct ClientReport {
    /// One sample a second of volley's CPU.
    pub samples: Vec<ClientSample>,
    /// One sample a second of the machine.
    pub machine: Vec<MachineSample>,
    /// Process CPU over the measured window (user, sys seconds) and peak RSS bytes.
    pub rusage: (f64, f64, u64),
    /// The other processes that used the most CPU during the window.
    pub busiest_others: Vec<OtherProcess>,
}

impl ClientMonitor {
    /// What was sampled, and the CPU used between t0 and the end (the whole run when it never
    /// reached t0).
    pub fn report(self) -> ClientReport {
        let (u, s, rss) = self.end_rusage.unwrap_or_else(rusage_self);
        let (u0, s0) = self.sampler.as_ref().map_or((u, s), |c| c.start_rusage);
        let (samples, machine) = match self.sampler {
            Some(c) => (c.samples, c.machine),
            None => (Vec::new(), Vec::new()),
        };
        ClientReport {
            samples,
            machine,
            rusage: (u - u0, s - s0, rss),
            busiest_others: self.busiest_others,
        }
    }
}

impl Observer for ClientMonitor {
    fn thread(&mut self, tid: i32) {
        self.tids.push(tid);
        if let Some(s) = self.sampler.as_mut() {
            s.add_thread(tid);
        }
    }

    fn measuring(&mut self, now_ns: u64) {
        let mut s = ClientSampler::new(now_ns);
        for tid in &self.tids {
            s.add_thread(*tid);
        }
        self.sampler = Some(s);
        self.others_start = Some(others::snapshot());
    }

    fn tick(&mut self, now_ns: u64, t_s: f64) {
        if let Some(s) = self.sampler.as_mut() {
            s.sample(now_ns, t_s);
        }
    }

    fn done(&mut self) {
        self.end_rusage = Some(rusage_self());
        if let Some(start) = self.others_start.take() {
            self.busiest_others = others::busiest(&start, &others::snapshot());
        }
    }
}

/// Percentages between two /proc/stat readings.
pub(crate) fn machine_sample(a: &CpuTimes, b: &CpuTimes, t_s: f64) -> MachineSample {
    let total = b.total().saturating_sub(a.total()).max(1) as f64;
    let pct = |x: u64, y: u64| (y.saturating_sub(x) as f64 / total * 1000.0).round() / 10.0;
    MachineSample {
        t_s: (t_s * 1000.0).round() / 1000.0,
        user_pct: pct(a.user, b.user),
        system_pct: pct(a.system, b.system),
        softirq_pct: pct(a.softirq, b.softirq),
        iowait_pct: pct(a.iowait, b.iowait),
        idle_pct: pct(a.idle, b.idle),
        steal_pct: pct(a.steal, b.steal),
        cpu_pressure_pct: None,
        client_cpu_pct: None,
        client_wait_pct: None,
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Whether volley was saturated in second `s`: it used ≥ 90 % of its capacity, or one worker
/// ≥ 95 % of a core — or was on a CPU most of the second (≥ 75 %) and runnable the rest (it
/// never waited for work, only for the CPU others shared). A thread on a CPU for less than
/// that and waiting is starved, not saturated: how much it would use alone is not known.
fn saturated(s: &ClientSample, capacity_cores: f64) -> bool {
    s.cpu_pct >= 90.0 * capacity_cores
        || s.max_thread_pct >= 95.0
        || (s.max_thread_pct >= 75.0 && s.max_thread_pct + s.busiest_wait_pct >= 95.0)
}

/// The client check: the client is saturated when more than half of the samples are.
/// Returns (fraction of saturated samples, saturated by CPU).
pub fn saturation(samples: &[ClientSample], capacity_cores: f64) -> (f64, bool) {
    if samples.is_empty() {
        return (0.0, false);
    }
    let hot = samples
        .iter()
        .filter(|s| saturated(s, capacity_cores))
        .count();
    let frac = hot as f64 / samples.len() as f64;
    (frac, frac > 0.5)
}

/// The fraction of the samples in which volley was starved: a worker thread waited on a run
/// queue for at least [`STARVED_WAIT_PCT`] of the second while volley was not saturated
/// (other processes had its CPUs).
pub fn starvation(samples: &[ClientSample], capacity_cores: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let starved = samples
        .iter()
        .filter(|s| s.max_wait_pct >= STARVED_WAIT_PCT && !saturated(s, capacity_cores))
        .count();
    starved as f64 / samples.len() as f64
}

fn read_proc_stat() -> Option<CpuTimes> {
    procfs::parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The machine's CPU pressure (PSI `some`, µs) and when it was read.
fn read_cpu_pressure() -> Option<(u64, std::time::Instant)> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    Some((
        procfs::parse_cpu_pressure(&text)?,
        std::time::Instant::now(),
    ))
}

/// The share of the time between two pressure readings in which a task waited, percent: over
/// the readings' own interval, not the sample's (on a busy machine the reads come late by
/// different amounts), and at most the whole of it.
fn pressure_pct(a: (u64, std::time::Instant), b: (u64, std::time::Instant)) -> f64 {
    let waited_us = b.0.saturating_sub(a.0) as f64;
    let span_us = b.1.saturating_duration_since(a.1).as_secs_f64() * 1e6;
    if span_us <= 0.0 {
        return 0.0;
    }
    (waited_us / span_us * 100.0).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_is_a_share_of_its_own_readings_interval() {
        let t = std::time::Instant::now();
        let later = t + std::time::Duration::from_secs(1);
        assert_eq!(pressure_pct((0, t), (500_000, later)), 50.0);
        // A later second read than the sample's clock says: never above the whole.
        assert_eq!(pressure_pct((0, t), (1_003_000, later)), 100.0);
        assert_eq!(pressure_pct((7, t), (9, t)), 0.0);
    }

    #[test]
    fn saturation_rule() {
        let s = |cpu, thread| ClientSample {
            cpu_pct: cpu,
            max_thread_pct: thread,
            ..ClientSample::default()
        };
        // Two threads on two cores: 185% of 200% is 92.5% of capacity.
        assert_eq!(
            saturation(&[s(185.0, 93.0), s(185.0, 93.0), s(50.0, 25.0)], 2.0),
            (2.0 / 3.0, true)
        );
        // One thread pegged at 97% while the process uses half the capacity.
        assert!(saturation(&[s(100.0, 97.0), s(100.0, 97.0)], 2.0).1);
        // Half the samples is not more than half.
        assert!(!saturation(&[s(195.0, 97.0), s(10.0, 5.0)], 2.0).1);
        assert_eq!(saturation(&[], 2.0), (0.0, false));
    }

    #[test]
    fn starvation_is_waiting_for_a_cpu_without_being_busy() {
        let s = |cpu, thread, wait| ClientSample {
            cpu_pct: cpu,
            max_thread_pct: thread,
            max_wait_pct: wait,
            busiest_wait_pct: wait,
        };
        // Two seconds of a thread waiting 40 % of the second while volley used 16 % of a
        // core (a CPU hog on its core), one quiet second.
        let starved = [s(16.0, 15.0, 40.0), s(16.0, 15.0, 38.0), s(10.0, 9.0, 0.3)];
        assert!((starvation(&starved, 2.0) - 2.0 / 3.0).abs() < 1e-9);
        assert!(!saturation(&starved, 2.0).1, "starved is not saturated");
        // A 3 ms hiccup is neither.
        assert_eq!(starvation(&[s(5.0, 5.0, 0.3)], 2.0), 0.0);
        // A saturated thread waits too (the run queue behind it): that is saturation.
        let busy = [s(190.0, 97.0, 30.0), s(190.0, 97.0, 30.0)];
        assert_eq!(starvation(&busy, 2.0), 0.0);
        assert!(saturation(&busy, 2.0).1);
        // One thread on a CPU 80 % of the second and runnable the rest (others took 20 %): it
        // never waited for work, so it is saturated too.
        let squeezed = [s(80.0, 80.0, 20.0), s(86.0, 86.0, 13.0)];
        assert!(saturation(&squeezed, 1.0).1);
        assert_eq!(starvation(&squeezed, 1.0), 0.0);
        // On a CPU half the second and waiting the other half: whether it would need a whole
        // core alone is unknown; it was starved.
        let halved = [s(50.0, 50.0, 48.0), s(50.0, 50.0, 48.0)];
        assert!(!saturation(&halved, 1.0).1);
        assert_eq!(starvation(&halved, 1.0), 1.0);
        assert_eq!(starvation(&[], 2.0), 0.0);
    }

    #[test]
    fn machine_percentages() {
        let a = CpuTimes {
            user: 100,
            system: 100,
            idle: 800,
            ..Default::default()
        };
        let b = CpuTimes {
            user: 150,
            system: 130,
            idle: 820,
            softirq: 0,
            ..Default::default()
        };
        let m = machine_sample(&a, &b, 1.0);
        assert_eq!((m.user_pct, m.system_pct, m.idle_pct), (50.0, 30.0, 20.0));
    }
}
