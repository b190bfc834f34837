//! The latency and service-time histograms (docs/contract.md, "Merging shards", histograms):
//! decoded, added bucket by bucket and re-encoded, so the merged percentiles are computed from
//! every response exactly as `volley run` computes them, never averaged from the shards'.

use super::MergeError;
use volley_model::result::{RunResult, Warning};
use volley_model::stats::histogram::{self, decode, Hist};
use volley_model::stats::Percentiles;

/// The shards' histograms, added.
pub(super) struct Added {
    /// Corrected latency (`latency_hdr`).
    pub latency: Hist,
    /// Service time (`service_time_hdr`).
    pub service: Hist,
}

/// Adds the shards' histograms; a shard whose histogram cannot be decoded is refused.
pub(super) fn add(inputs: &[(String, RunResult)]) -> Result<Added, MergeError> {
    let latency = decode_all(inputs, "latency_hdr", |r| &r.latency_hdr)?;
    let service = decode_all(inputs, "service_time_hdr", |r| &r.service_time_hdr)?;
    Ok(Added {
        latency: histogram::sum(&latency),
        service: histogram::sum(&service),
    })
}

fn decode_all(
    inputs: &[(String, RunResult)],
    which: &str,
    get: impl Fn(&RunResult) -> &str,
) -> Result<Vec<Hist>, MergeError> {
    inputs
        .iter()
        .map(|(p, r)| {
            decode(get(r)).map_err(|m| MergeError::Input {
                path: p.clone(),
                message: format!("{which}: {m}"),
            })
        })
        .collect()
}

/// Always null: a RunResult keeps the schedule lag's percentiles but not its histogram, and
/// percentiles cannot be combined. Warns when a shard had one.
pub(super) fn schedule_lag(rs: &[&RunResult], warnings: &mut Vec<Warning>) -> Option<Percentiles> {
    if rs.iter().any(|r| r.schedule_lag_us.is_some()) {
        warnings.push(Warning::lag_not_merged());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::test_shards::hist;
    use super::*;
    use volley_model::stats::histogram::encode;

    #[test]
    fn histograms_add_exactly() {
        let a = hist(&[100, 200, 300, 40_000]);
        let b = hist(&[150, 250, 9_000_000]);
        let sum = histogram::sum([&a, &b]);
        assert_eq!(sum.len(), a.len() + b.len());
        assert_eq!(sum.max(), a.max().max(b.max()));
        assert_eq!(sum.min(), a.min().min(b.min()));
        // Through the JSON encoding too: what merge reads and writes.
        let back = decode(&encode(&sum)).unwrap();
        assert_eq!(back.len(), 7);
        assert_eq!(back.max(), sum.max());
        for v in [100u64, 150, 200, 250, 300, 40_000, 9_000_000] {
            assert_eq!(
                back.count_at(v),
                a.count_at(v) + b.count_at(v),
                "bucket of {v}"
            );
        }
    }
}
