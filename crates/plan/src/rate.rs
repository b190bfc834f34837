//! A request rate that changes with time (`--rate-stages "10s:1000,60s:20000"`): stages that
//! each ramp linearly from the previous target to their own over their duration (k6's
//! ramping-arrival-rate; a stage of 0 s is a step). Request *i* is due at the instant the
//! integrated rate reaches *i*, so the schedule holds the shape exactly whatever the rate
//! (docs/contract.md, "Modes"). Pure: times in seconds from the phase's origin.

/// One stage: from `from_rps` to `to_rps` over `[start_s, start_s + dur_s)`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    start_s: f64,
    dur_s: f64,
    from_rps: f64,
    to_rps: f64,
    /// Requests due before it starts (the integral up to `start_s`).
    before: f64,
}

impl Segment {
    /// Requests due in its first `tau` seconds.
    fn integral(&self, tau: f64) -> f64 {
        let slope = if self.dur_s > 0.0 {
            (self.to_rps - self.from_rps) / self.dur_s
        } else {
            0.0
        };
        self.from_rps * tau + slope * tau * tau / 2.0
    }

    fn total(&self) -> f64 {
        self.integral(self.dur_s)
    }

    /// The first `tau` in `[0, dur_s]` where its integral reaches `n` (0 ≤ n ≤ total).
    fn time_of(&self, n: f64) -> f64 {
        if n <= 0.0 {
            return 0.0;
        }
        let a = if self.dur_s > 0.0 {
            (self.to_rps - self.from_rps) / self.dur_s / 2.0
        } else {
            0.0
        };
        let b = self.from_rps;
        // a·τ² + b·τ − n = 0, in the form without cancellation: τ = 2n / (b + √(b² + 4an)).
        let disc = (b * b + 4.0 * a * n).max(0.0);
        let tau = 2.0 * n / (b + disc.sqrt());
        tau.clamp(0.0, self.dur_s)
    }
}

/// `--rate-stages` as given and the rate it describes.
#[derive(Debug, Clone, PartialEq)]
pub struct RateStages {
    /// The stages, as given.
    pub stages: Vec<volley_model::units::RateStageSpec>,
    /// The rate over time (from 0 requests per second).
    pub shape: RateShape,
}

impl RateStages {
    /// The stages' rate, from 0.
    pub fn new(stages: Vec<volley_model::units::RateStageSpec>) -> Self {
        let pairs: Vec<_> = stages.iter().map(|s| (s.duration, s.rate_rps)).collect();
        RateStages {
            shape: RateShape::new(0.0, &pairs),
            stages,
        }
    }

    /// How long they last.
    pub fn duration(&self) -> std::time::Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// Their mean rate: the requests due over them ÷ their length.
    pub fn mean_rps(&self) -> f64 {
        self.shape.total() / self.shape.duration_s().max(1e-9)
    }
}

/// A rate over time, as stages.
#[derive(Debug, Clone, PartialEq)]
pub struct RateShape {
    segments: Vec<Segment>,
}

impl RateShape {
    /// Stages `(duration, target rate)` from a rate of `start_rps`: each ramps linearly from
    /// the previous target (the first from `start_rps`) to its own.
    pub fn new(start_rps: f64, stages: &[(std::time::Duration, f64)]) -> Self {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut at, mut before, mut from) = (0.0, 0.0, start_rps);
        for &(d, to) in stages {
            let s = Segment {
                start_s: at,
                dur_s: d.as_secs_f64(),
                from_rps: from,
                to_rps: to,
                before,
            };
            before += s.total();
            at += s.dur_s;
            from = to;
            segments.push(s);
        }
        RateShape { segments }
    }

    /// Its length, seconds.
    pub fn duration_s(&self) -> f64 {
        self.segments.last().map_or(0.0, |s| s.start_s + s.dur_s)
    }

    /// Requests due over the whole shape.
    pub fn total(&self) -> f64 {
        self.segments.last().map_or(0.0, |s| s.before + s.total())
    }

    /// The target rate at `t_s` (a step takes its new rate at its instant).
    pub fn rate_at(&self, t_s: f64) -> f64 {
        match self.segment_at(t_s) {
            Some(s) if s.dur_s > 0.0 => {
                s.from_rps + (s.to_rps - s.from_rps) * ((t_s - s.start_s) / s.dur_s)
            }
            Some(s) => s.to_rps,
            None => 0.0,
        }
    }

    /// Requests due by `t_s` (the integral of the rate from 0), capped at the end.
    pub fn integral(&self, t_s: f64) -> f64 {
        match self.segment_at(t_s) {
            Some(s) => s.before + s.integral((t_s - s.start_s).clamp(0.0, s.dur_s)),
            None if t_s <= 0.0 => 0.0,
            None => self.total(),
        }
    }

    /// The first instant the integral reaches `n`; `None` past the end (not that many are due).
    pub fn time_of(&self, n: f64) -> Option<f64> {
        if n <= 0.0 {
            return Some(0.0);
        }
        if n > self.total() {
            return None;
        }
        // The last segment starting at or below n (those with nothing due are passed over:
        // a stretch at rate 0 schedules nothing).
        let k = self.segments.partition_point(|s| s.before < n);
        let s = &self.segments[k.saturating_sub(1)];
        Some(s.start_s + s.time_of(n - s.before))
    }

    /// The segment `t_s` falls in (the last one holds its end).
    fn segment_at(&self, t_s: f64) -> Option<&Segment> {
        if t_s < 0.0 || t_s > self.duration_s() {
            return None;
        }
        let k = self
            .segments
            .partition_point(|s| s.start_s + s.dur_s <= t_s);
        self.segments.get(k).or(self.segments.last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_ramp_and_a_plateau_integrate_exactly() {
        // 0 → 1000/s over 2 s, then 1000/s for 3 s: 1000 + 3000 requests.
        let r = RateShape::new(0.0, &[(secs(2.0), 1000.0), (secs(3.0), 1000.0)]);
        assert_eq!(r.duration_s(), 5.0);
        assert_eq!(r.total(), 4000.0);
        assert_eq!(r.rate_at(1.0), 500.0);
        assert_eq!(r.integral(1.0), 250.0);
        assert_eq!(r.integral(2.0), 1000.0);
        assert_eq!(r.integral(4.0), 3000.0);
        // The inverse: request i at the instant the integral reaches i.
        for i in [0.0, 1.0, 250.0, 999.0, 1000.0, 1001.0, 3999.0, 4000.0] {
            let t = r.time_of(i).unwrap();
            assert!((r.integral(t) - i).abs() < 1e-6, "{i}: t {t}");
        }
        assert!((r.time_of(250.0).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(r.time_of(4000.5), None);
    }

    #[test]
    fn a_step_is_a_zero_length_stage() {
        // 100/s for 1 s, a step to 1000/s, 1000/s for 1 s.
        let r = RateShape::new(
            100.0,
            &[(secs(1.0), 100.0), (secs(0.0), 1000.0), (secs(1.0), 1000.0)],
        );
        assert_eq!(r.total(), 1100.0);
        assert_eq!(r.rate_at(0.5), 100.0);
        assert_eq!(r.rate_at(1.5), 1000.0);
        assert!((r.time_of(100.0).unwrap() - 1.0).abs() < 1e-12);
        assert!((r.time_of(600.0).unwrap() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn a_ramp_down_and_a_pause_schedule_nothing_past_zero() {
        // 1000 → 0 over 1 s (500 requests), 0 for 1 s, 0 → 1000 over 1 s (500 more).
        let r = RateShape::new(
            1000.0,
            &[(secs(1.0), 0.0), (secs(1.0), 0.0), (secs(1.0), 1000.0)],
        );
        assert_eq!(r.total(), 1000.0);
        let t = r.time_of(500.0).unwrap();
        assert!(
            (t - 1.0).abs() < 1e-6,
            "the last of the ramp down at its end: {t}"
        );
        let t = r.time_of(500.5).unwrap();
        assert!(t > 2.0, "nothing during the pause: {t}");
        assert!((r.integral(t) - 500.5).abs() < 1e-6);
    }

    #[test]
    fn due_times_never_go_back() {
        let r = RateShape::new(
            10.0,
            &[
                (secs(3.0), 5000.0),
                (secs(0.0), 200.0),
                (secs(2.0), 200.0),
                (secs(1.0), 0.0),
            ],
        );
        let mut last = 0.0;
        let n = r.total().floor() as u64;
        for i in 0..=n {
            let t = r.time_of(i as f64).unwrap();
            assert!(t >= last, "{i}: {t} < {last}");
            last = t;
        }
        assert!(last <= r.duration_s());
    }
}
