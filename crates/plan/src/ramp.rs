//! Virtual-user ramps (`--users N --spawn-rate R`, or k6-style `--stages`): how many users are
//! active at each moment. Pure: time is plain nanoseconds from t0.

use volley_model::units::StageSpec;

/// A piecewise-linear user schedule starting from 0 users at t0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ramp {
    /// (stage end in ns from t0, users at the start of the stage, users at its end).
    segments: Vec<(u64, u64, u64)>,
    /// `--shard`: this shard's share of the whole schedule's users at every moment.
    shard: Option<super::shard::ShardSpec>,
}

impl Ramp {
    /// From k6-style stages.
    pub fn from_stages(stages: &[StageSpec]) -> Self {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut t, mut prev) = (0u64, 0u64);
        for s in stages {
            t += s.duration.as_nanos() as u64;
            segments.push((t, prev, s.users));
            prev = s.users;
        }
        Ramp {
            segments,
            shard: None,
        }
    }

    /// The same schedule as shard `s` runs it: its segment-rule share of the users at every
    /// moment (the shards' users add up to the whole's at every moment).
    pub(crate) fn scaled(&self, s: super::shard::ShardSpec) -> Self {
        Ramp {
            segments: self.segments.clone(),
            shard: Some(s),
        }
    }

    /// Locust-style: `users` added at `spawn_rate` per second, then held until `total_ns`.
    pub fn spawn(users: u64, spawn_rate: f64, total_ns: u64) -> Self {
        let ramp_ns = ((users as f64 / spawn_rate) * 1e9) as u64;
        Ramp {
            segments: vec![(ramp_ns, 0, users), (total_ns.max(ramp_ns), users, users)],
            shard: None,
        }
    }

    /// How long the whole schedule lasts.
    pub fn total_ns(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.0)
    }

    /// The most users at any time (the connections needed).
    pub fn max_users(&self) -> u64 {
        let whole = self
            .segments
            .iter()
            .map(|s| s.1.max(s.2))
            .max()
            .unwrap_or(0);
        self.shard.map_or(whole, |s| s.share(whole))
    }

    /// Users active at `t_ns` after t0. A ramp up adds user i at the moment the line reaches
    /// i (rounding up, so the first user starts at once); a ramp down removes them as late as
    /// the line allows.
    pub fn users_at(&self, t_ns: u64) -> u64 {
        let whole = self.whole_users_at(t_ns);
        self.shard.map_or(whole, |s| s.share(whole))
    }

    fn whole_users_at(&self, t_ns: u64) -> u64 {
        let mut start = 0u64;
        for &(end, from, to) in &self.segments {
            if t_ns < end {
                let frac = (t_ns - start) as f64 / (end - start) as f64;
                let v = from as f64 + (to as f64 - from as f64) * frac;
                return (v.ceil() as u64).min(from.max(to));
            }
            start = end;
        }
        self.segments.last().map_or(0, |s| s.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const S: u64 = 1_000_000_000;

    #[test]
    fn spawn_rate_adds_users_steadily_then_holds() {
        // 10,000 users at 100/s: 100 s of ramp, held until 150 s.
        let r = Ramp::spawn(10_000, 100.0, 150 * S);
        assert_eq!(r.users_at(0), 0);
        assert_eq!(r.users_at(S / 100), 1);
        assert_eq!(r.users_at(S / 100 + 1), 2);
        assert_eq!(r.users_at(S), 100);
        assert_eq!(r.users_at(50 * S), 5_000);
        assert_eq!(r.users_at(100 * S), 10_000);
        assert_eq!(r.users_at(149 * S), 10_000);
        assert_eq!(r.total_ns(), 150 * S);
        assert_eq!(r.max_users(), 10_000);
    }

    #[test]
    fn stages_interpolate_like_k6() {
        let st = |d: u64, u: u64| StageSpec {
            duration: Duration::from_secs(d),
            users: u,
        };
        let r = Ramp::from_stages(&[st(10, 100), st(10, 100), st(10, 0)]);
        assert_eq!(r.users_at(5 * S), 50);
        assert_eq!(r.users_at(15 * S), 100);
        assert_eq!(r.users_at(25 * S), 50);
        assert_eq!(r.users_at(29 * S + S / 2), 5);
        assert_eq!(r.users_at(30 * S), 0);
        assert_eq!(r.users_at(99 * S), 0);
        assert_eq!(r.total_ns(), 30 * S);
        assert_eq!(r.max_users(), 100);
        // An instant jump: a 0 s stage.
        let r = Ramp::from_stages(&[st(0, 40), st(5, 40)]);
        assert_eq!(r.users_at(0), 40);
        assert_eq!(r.users_at(4 * S), 40);
    }

    #[test]
    fn never_overshoots_or_goes_negative() {
        let st = |d: u64, u: u64| StageSpec {
            duration: Duration::from_secs(d),
            users: u,
        };
        let r = Ramp::from_stages(&[st(3, 7), st(3, 2), st(3, 9)]);
        let mut t = 0;
        while t < 10 * S {
            assert!(r.users_at(t) <= 9);
            t += S / 7;
        }
    }

    #[test]
    fn users_are_dealt_round_robin() {
        use crate::pacer::share_of_indices;
        let shares: Vec<u64> = (0..3).map(|k| share_of_indices(10, k, 3)).collect();
        assert_eq!(shares, vec![4, 3, 3]);
        assert_eq!(shares.iter().sum::<u64>(), 10);
        assert_eq!(share_of_indices(1, 1, 2), 0);
    }
}
