//! One window of a sweep's run as a result of its own: the seconds' histograms and counters
//! merged, volley's CPU seconds judged as a run's are, so that [`crate::verdict::judge_part`]
//! judges it by the same rules as a step; then the queue rule, which only a window needs
//! (docs/contract.md, "Capacity", "Sweep").

use volley_measure::client_check::ClientCheck;
use volley_model::result::capacity::Verdict;
use volley_model::result::{Requests, RunResult};
use volley_model::stats::aggregate::FinishedBucket;
use volley_model::stats::{new_hist, Counters, Hist, Percentiles};
use volley_monitor::client::ClientSample;

/// One finished second of the run, as the aggregator gave it.
pub(crate) struct Second {
    pub t_s: u64,
    pub latency: Hist,
    pub service: Hist,
    pub lag: Hist,
    pub counts: Counters,
}

impl Second {
    pub(crate) fn of(b: &FinishedBucket) -> Second {
        Second {
            t_s: b.point.t_s,
            latency: b.latency.clone(),
            service: b.service.clone(),
            lag: b.lag.clone(),
            counts: b.counts.clone(),
        }
    }
}

/// The seconds in order of their time, a second the observer was not told of (nothing
/// happened in it) filled in empty, up to the last one told.
pub(crate) fn laid_out(told: Vec<Second>) -> Vec<Second> {
    let mut out: Vec<Second> = Vec::with_capacity(told.len());
    for s in told {
        while (out.len() as u64) < s.t_s {
            out.push(Second {
                t_s: out.len() as u64,
                latency: new_hist(),
                service: new_hist(),
                lag: new_hist(),
                counts: Counters::default(),
            });
        }
        if s.t_s as usize == out.len() {
            out.push(s);
        }
    }
    out
}

/// The seconds of one window and what the schedule had due in it.
pub(crate) struct Part<'a> {
    /// Its first second (from t0).
    pub start_s: u64,
    /// Its seconds, in order.
    pub seconds: &'a [Second],
    /// volley's CPU over those seconds.
    pub samples: &'a [ClientSample],
    /// The requests due in it (the integral of the rate).
    pub due: f64,
    /// The cores volley's threads could use: its CPU's 100 %.
    pub capacity_cores: f64,
}

/// The queue rule: a window whose completions fell behind its writes by more than this share
/// of them...
pub(crate) const BEHIND_SHARE: f64 = 0.02;
/// ... and by at least this many requests, saw the server's queue grow: above its capacity.
pub(crate) const BEHIND_FLOOR: u64 = 5;

impl Part<'_> {
    /// Its length, seconds.
    pub(crate) fn duration_s(&self) -> f64 {
        self.seconds.len() as f64
    }

    /// Its mean target rate, req/s.
    pub(crate) fn target_rps(&self) -> f64 {
        self.due / self.duration_s().max(1.0)
    }

    /// The window as a RunResult: `whole` with the window's latency, service time, lag,
    /// counters, rates, time series, volley's CPU check and the server's CPU in place of the
    /// run's (its warnings dropped: they speak of the whole run).
    pub(crate) fn result(&self, whole: &RunResult) -> RunResult {
        let (mut latency, mut service, mut lag) = (new_hist(), new_hist(), new_hist());
        let mut c = Counters::default();
        for s in self.seconds {
            // Auto-resizing histograms take any value.
            let _ = latency.add(&s.latency);
            let _ = service.add(&s.service);
            let _ = lag.add(&s.lag);
            c.merge(&s.counts);
        }
        let dur = self.duration_s().max(1.0);
        let end = self.start_s + self.seconds.len() as u64;
        let mut r = whole.clone();
        r.latency_us = Percentiles::of(&latency);
        r.service_time_us = Percentiles::of(&service);
        r.schedule_lag_us = whole
            .schedule_lag_us
            .as_ref()
            .map(|_| Percentiles::of(&lag));
        r.requests = Requests {
            sent: c.sent,
            completed: c.completed,
            errors: c.errors.total(),
            unfinished: 0,
            unsent: 0,
            failed: c.failed(),
            failed_checks: whole.requests.failed_checks.map(|_| c.failed_checks),
            skipped: whole.requests.skipped.map(|_| c.skipped),
        };
        r.elapsed_s = dur;
        r.throughput_rps = c.completed as f64 / dur;
        r.achieved_rps = Some(c.sent as f64 / dur);
        r.timeseries
            .retain(|p| p.t_s >= self.start_s && p.t_s < end);
        r.warnings.clear();
        self.client(&mut r);
        server(&mut r, self.start_s as f64, end as f64);
        r
    }

    /// volley's CPU over the window, judged as a run's is.
    fn client(&self, r: &mut RunResult) {
        let lag = r.schedule_lag_us.as_ref().and_then(|l| l.p99);
        let check = ClientCheck::of(
            self.samples,
            self.capacity_cores,
            lag,
            r.client.busiest_others.clone(),
        );
        let c = &mut r.client;
        c.saturated = check.by_cpu;
        c.saturated_fraction = check.fraction;
        c.starved = check.starved;
        c.starved_fraction = check.starved_fraction;
        c.wait_pct_max = check.wait_pct_max;
        c.cpu_pct_max = check.cpu_pct_max;
    }
}

/// The monitored server's CPU over `[from, to)` s, from the samples that cover it.
fn server(r: &mut RunResult, from: f64, to: f64) {
    let completed = r.requests.completed;
    let Some(s) = r.server.as_mut() else {
        return;
    };
    let interval = if s.sample_interval_s > 0.0 {
        s.sample_interval_s
    } else {
        1.0
    };
    // A sample covers the interval before its time: it is the window's when its middle is.
    let inside: Vec<_> = s
        .samples
        .iter()
        .filter(|p| (from..to).contains(&(p.t_s - interval / 2.0)))
        .collect();
    let user_s: f64 = inside
        .iter()
        .map(|p| p.cpu_user_pct / 100.0 * interval)
        .sum();
    let sys_s: f64 = inside
        .iter()
        .map(|p| p.cpu_sys_pct / 100.0 * interval)
        .sum();
    s.window_s = inside.len() as f64 * interval;
    s.cpu_user_s = user_s;
    s.cpu_sys_s = sys_s;
    s.per_request.cpu_us =
        (completed > 0 && !inside.is_empty()).then(|| (user_s + sys_s) / completed as f64 * 1e6);
}

/// The queue rule, for a window that passed every rule a step has: its completions fell
/// behind its writes (by more than [`BEHIND_SHARE`] of them and [`BEHIND_FLOOR`] requests),
/// so the server's queue grew during it. A step would see this as its latency rising second
/// by second (drift, or a broken SLO); a window is too short to.
pub(crate) fn behind(r: &RunResult) -> Option<(Verdict, String)> {
    let (sent, done) = (r.requests.sent, r.requests.completed + r.requests.errors);
    let gap = sent.saturating_sub(done);
    (gap >= BEHIND_FLOOR && gap as f64 > sent as f64 * BEHIND_SHARE).then(|| {
        (
            Verdict::Unstable,
            format!(
                "the server fell behind: {done} of {sent} requests written in the window were answered in it (its queue grew by {gap})"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(sent: u64, completed: u64) -> RunResult {
        let text = include_str!("../../../../tests/fixtures/report/open-loop.json");
        let mut r: RunResult = serde_json::from_str(text).unwrap();
        r.requests.sent = sent;
        r.requests.completed = completed;
        r.requests.errors = 0;
        r
    }

    #[test]
    fn a_queue_that_grew_by_more_than_2_percent_is_behind() {
        assert!(behind(&result(1000, 985)).is_none(), "15 of 1000: jitter");
        let (v, why) = behind(&result(1000, 975)).expect("25 of 1000 behind");
        assert_eq!(v, Verdict::Unstable);
        assert!(
            why.contains("975 of 1000") && why.contains("grew by 25"),
            "{why}"
        );
        // A few requests at a low rate are the window's edge, not a queue.
        assert!(behind(&result(100, 96)).is_none());
        assert!(behind(&result(100, 94)).is_some());
    }

    #[test]
    fn a_second_nothing_happened_in_is_laid_out_empty() {
        let second = |t_s: u64| Second {
            t_s,
            latency: new_hist(),
            service: new_hist(),
            lag: new_hist(),
            counts: Counters {
                sent: 1,
                ..Counters::default()
            },
        };
        let v = laid_out(vec![second(0), second(2), second(3)]);
        let ts: Vec<u64> = v.iter().map(|s| s.t_s).collect();
        assert_eq!(ts, [0, 1, 2, 3]);
        assert_eq!(v[1].counts.sent, 0);
        assert_eq!(v[2].counts.sent, 1);
    }

    #[test]
    fn a_window_is_the_sum_of_its_seconds() {
        let whole = result(3000, 3000);
        let second = |t_s: u64, lat: u64, sent: u64| {
            let mut latency = new_hist();
            let mut lag = new_hist();
            let mut counts = Counters::default();
            for _ in 0..sent {
                latency.record(lat).unwrap();
                lag.record(20).unwrap();
            }
            counts.sent = sent;
            counts.completed = sent;
            Second {
                t_s,
                latency,
                service: new_hist(),
                lag,
                counts,
            }
        };
        let seconds = [second(4, 1_000, 100), second(5, 9_000, 300)];
        let part = Part {
            start_s: 4,
            seconds: &seconds,
            samples: &[],
            due: 402.0,
            capacity_cores: 1.0,
        };
        assert_eq!(part.target_rps(), 201.0);
        let r = part.result(&whole);
        assert_eq!((r.requests.sent, r.requests.completed), (400, 400));
        assert_eq!(r.achieved_rps, Some(200.0));
        assert_eq!(r.elapsed_s, 2.0);
        let p50 = r.latency_us.p50.unwrap();
        assert!((8_900..=9_100).contains(&p50), "{p50}");
        assert!(r.timeseries.iter().all(|p| (4..6).contains(&p.t_s)));
        assert!(r.warnings.is_empty());
        assert!(!r.client.saturated && !r.client.starved);
    }
}
