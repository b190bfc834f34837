//! The warnings of `volley merge`: what cannot be added up exactly across shards.

use super::{Warning, WarningKind};

impl Warning {
    /// `merge`: the shards differ in `what` (a setting).
    pub fn shards_differ(what: &str) -> Self {
        Self::new(
            WarningKind::ShardsDiffer,
            format!("the shards differ in {what}; the merged load shows the first shard's"),
        )
    }

    /// `merge`: the shards' stages differ in length.
    pub fn stages_differ() -> Self {
        Self::new(
            WarningKind::StagesDiffer,
            "the shards' --stages differ in length; the merged load shows the first shard's".into(),
        )
    }

    /// `merge`: schedule lag cannot be merged.
    pub fn lag_not_merged() -> Self {
        Self::new(WarningKind::LagNotMerged, "schedule_lag_us is null: a RunResult holds no schedule-lag histogram, so the shards' lag cannot be merged exactly (each shard's file has its own)".into())
    }

    /// `merge`: per-second percentiles nulled in `seconds` seconds.
    pub fn series_percentiles_nulled(seconds: usize) -> Self {
        Self::new(WarningKind::SeriesPercentilesNulled, format!(
            "timeseries: latency_p50_us and latency_p99_us are null in the {seconds} second(s) where more than one shard had responses (percentiles of different shards cannot be combined; latency_max_us is exact)"
        ))
    }

    /// `merge --force`: the shards started up to `spread_s` apart.
    pub fn forced_merge(spread_s: f64) -> Self {
        Self::new(WarningKind::ForcedMerge, format!(
            "merged with --force: the shards started up to {spread_s:.3} s apart; each shard's seconds went to the merged second they overlap most, so per-second counts are off by up to the fraction of a second"
        ))
    }

    /// `merge`: one shard (`path`) monitored the server every shard loaded at `addr`.
    pub fn server_from_one_shard(path: &str, addr: &str) -> Self {
        Self::new(WarningKind::ServerFromOneShard, format!(
            "server: monitored by one shard ({path}); its per_request figures are divided by every shard's completed requests (all loaded {addr})"
        ))
    }

    /// `merge`: one shard (`path`) monitored a server other shards did not load.
    pub fn server_from_one_shard_elsewhere(path: &str) -> Self {
        Self::new(WarningKind::ServerFromOneShard, format!(
            "server: monitored by one shard ({path}) whose target.addr differs from other shards'; its per_request figures cover that shard's requests only"
        ))
    }

    /// `merge`: several shards (`paths`) monitored a server.
    pub fn server_not_merged(paths: &[&str]) -> Self {
        Self::new(WarningKind::ServerNotMerged, format!(
            "server is null: {} shards monitored a server ({}); their monitors cannot be merged into one (each shard's file has its own)",
            paths.len(),
            paths.join(", ")
        ))
    }

    /// `merge`: thresholds judged each shard alone.
    pub fn thresholds_not_carried() -> Self {
        Self::new(
            WarningKind::ThresholdsNotCarried,
            "the shards' --threshold results are not carried over: they judged each shard alone"
                .into(),
        )
    }

    /// `merge`: a shard's warning that not every shard had, with the files that had it.
    pub fn of_shards(holders: &[&str], w: &Warning) -> Self {
        Self::new(w.kind, format!("shard {}: {}", holders.join(", "), w.text))
    }
}
