//! `--shard I/N`: shard I (0-based) of N generators that act as one load. Pure: each shard's
//! exact share of the whole load, so the shares add up to it ([`LoadSpec::shard_share`]). The
//! rules are docs/contract.md, "Shards": whole numbers by k6's execution-segment rule
//! ([`ShardSpec::share`]), the open loop's schedule interleaved (shard *i* takes the requests
//! g ≡ i (mod N) at R/N, phase i/R: [`ShardSpec::interleaved`], [`ShardSpec::phase_ns`]),
//! Poisson arrivals as N processes of rate R/N, each from its own seed.

use super::spec::LoadSpec;
use super::StageSpec;

/// Which shard of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// This shard, from 0.
    pub index: u64,
    /// How many shards the whole load has.
    pub count: u64,
}

impl ShardSpec {
    /// k6's segment rule: this shard's share of `total` whole things.
    ///
    /// ```
    /// use volley_plan::shard::ShardSpec;
    /// let shares: Vec<u64> = (0..3).map(|i| ShardSpec { index: i, count: 3 }.share(10)).collect();
    /// assert_eq!(shares, [3, 4, 3]);
    /// assert_eq!(shares.iter().sum::<u64>(), 10);
    /// ```
    pub fn share(&self, total: u64) -> u64 {
        round_ratio(total, self.index + 1, self.count) - round_ratio(total, self.index, self.count)
    }

    /// How many of the indexes `0..total` are ≡ this shard (mod the count): its share of an
    /// open loop's `-n`.
    pub fn interleaved(&self, total: u64) -> u64 {
        super::pacer::share_of_indices(total, self.index, self.count)
    }

    /// The open loop's phase: this shard's first request is due `index / rate` after the
    /// whole load's first, in ns (`rate` the whole load's, req/s).
    pub fn phase_ns(&self, whole_rate_rps: f64) -> u64 {
        (self.index as f64 * 1e9 / whole_rate_rps) as u64
    }

    /// `I/N` as written.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// round(total · num / den), halves up, without overflow for any u64 `total` and shard
/// counts below 2^32.
fn round_ratio(total: u64, num: u64, den: u64) -> u64 {
    ((total as u128 * num as u128 * 2 + den as u128) / (den as u128 * 2)) as u64
}

/// Why a shard's share cannot run: a part of the load too small to split `count` ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareError {
    /// The flag whose value is too small (`-c/--connections`, ...).
    pub what: &'static str,
    /// Its whole value.
    pub total: u64,
}

impl LoadSpec {
    /// This shard's own part of the whole load (the whole load itself without `--shard`):
    /// what its engine runs. The shard stays set, so the pacer takes its phase.
    pub fn shard_share(&self) -> Result<LoadSpec, ShareError> {
        let Some(s) = self.shard else {
            return Ok(self.clone());
        };
        let mut l = self.clone();
        // Every shard needs some of each part, not only this one: the shards of one load
        // then fail or run alike.
        let whole = |what: &'static str, total: u64| -> Result<u64, ShareError> {
            if total < s.count {
                return Err(ShareError { what, total });
            }
            Ok(s.share(total))
        };
        // What the user gave first: connections may be derived from users or -n, and the
        // error should name the flag that was given.
        if let Some(u) = self.ramp.as_ref().and_then(|r| r.users) {
            whole("--users", u)?;
        }
        if let (Some(n), false) = (self.requests, self.is_open()) {
            whole("-n/--requests", n)?;
        }
        l.connections = whole("-c/--connections", self.connections as u64)? as usize;
        l.max_connections = match self.max_connections {
            Some(m) => Some(whole("--max-connections", m as u64)? as usize),
            None => None,
        };
        l.requests = match (self.requests, self.is_open()) {
            (Some(n), true) => Some(match s.interleaved(n) {
                0 => {
                    return Err(ShareError {
                        what: "-n/--requests",
                        total: n,
                    })
                }
                k => k,
            }),
            (Some(n), false) => Some(whole("-n/--requests", n)?),
            (None, _) => None,
        };
        l.rate_rps = self.rate_rps.map(|r| r / s.count as f64);
        if let Some(ramp) = l.ramp.as_mut() {
            if let Some(u) = ramp.users {
                ramp.users = Some(whole("--users", u)?);
            }
            ramp.spawn_rate = ramp.spawn_rate.map(|r| r / s.count as f64);
            if let Some(stages) = ramp.stages.as_mut() {
                for st in stages.iter_mut() {
                    *st = StageSpec {
                        users: s.share(st.users),
                        ..*st
                    };
                }
            }
            ramp.ramp = ramp.ramp.scaled(s);
        }
        l.threads = l.threads.min(l.most_connections()).max(1);
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_the_whole_and_differ_by_one_at_most() {
        for total in [0u64, 1, 7, 10, 50, 1_000, 999_983] {
            for count in 1..=9u64 {
                let shares: Vec<u64> = (0..count)
                    .map(|index| ShardSpec { index, count }.share(total))
                    .collect();
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {count}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{total} over {count}: {shares:?}");
                let inter: u64 = (0..count)
                    .map(|index| ShardSpec { index, count }.interleaved(total))
                    .sum();
                assert_eq!(inter, total);
            }
        }
        // k6's documented example: 10 VUs over 3 segments.
        let s: Vec<u64> = (0..3)
            .map(|i| ShardSpec { index: i, count: 3 }.share(10))
            .collect();
        assert_eq!(s, [3, 4, 3]);
    }

    #[test]
    fn phases_interleave_the_shards_schedules_evenly() {
        // 1,000 req/s over 4 shards: shard i's requests at (i + 4k) ms.
        let mut due: Vec<u64> = Vec::new();
        for index in 0..4 {
            let s = ShardSpec { index, count: 4 };
            let phase = s.phase_ns(1000.0);
            due.extend((0..250).map(|k| phase + k * 4_000_000));
        }
        due.sort();
        for (g, t) in due.iter().enumerate() {
            assert_eq!(*t, g as u64 * 1_000_000);
        }
    }
}
