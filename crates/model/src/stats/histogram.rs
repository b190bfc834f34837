//! HDR histogram helpers: one shape for every latency histogram (µs, 3 significant digits),
//! the percentile summary of a RunResult (docs/contract.md, "RunResult keys"), and the lossless V2-compressed base64 encoding.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency histogram in microseconds.
pub type Hist = Histogram<u64>;

/// A new empty histogram: 1 µs .. 60 s at 3 significant digits, growing if a value is larger
/// (open-loop latency from the due time can exceed any fixed bound when the server stalls).
pub fn new_hist() -> Hist {
    let mut h =
        Histogram::new_with_bounds(1, 60_000_000, 3).expect("static histogram bounds are valid");
    h.auto(true);
    h
}

/// Records `v` in `h`, growing it as needed (histograms are made with auto-resize). Never
/// `saturating_record` on the measured path: it clamps to the highest value the histogram was
/// made for (60 s for [`new_hist`]) instead of growing, so an overloaded open loop's corrected
/// latencies past a minute were recorded as a minute.
#[inline]
pub fn record(h: &mut Hist, v: u64) {
    if h.record(v).is_err() {
        // Only a value beyond what a u64 histogram can grow to: the largest it can hold.
        h.saturating_record(v);
    }
}

/// Percentiles, min, mean, stdev and max in µs; every field is null for an empty histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Smallest recorded value.
    pub min: Option<u64>,
    /// Arithmetic mean.
    pub mean: Option<f64>,
    /// Standard deviation.
    pub stdev: Option<f64>,
    /// Largest recorded value.
    pub max: Option<u64>,
    /// Median.
    pub p50: Option<u64>,
    /// 75th percentile.
    pub p75: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 95th percentile.
    pub p95: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
    /// 99.9th percentile.
    pub p99_9: Option<u64>,
    /// 99.99th percentile.
    pub p99_99: Option<u64>,
    /// 99.999th percentile.
    pub p99_999: Option<u64>,
}

impl Percentiles {
    /// Summarizes `h` (all null when it is empty).
    pub fn of(h: &Hist) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |p: f64| Some(h.value_at_quantile(p));
        Percentiles {
            min: Some(h.min()),
            mean: Some(round2(h.mean())),
            stdev: Some(round2(h.stdev())),
            max: Some(h.max()),
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            p99_999: q(0.99999),
        }
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Encodes `h` in HdrHistogram's V2 compressed format, base64 (as the Java, C, Go and Python
/// implementations read it).
pub fn encode(h: &Hist) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Why text is not a histogram volley can use.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not base64.
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Not the V2 encoding (unknown cookie, no header, corrupt or oversized compression).
    #[error("not an HdrHistogram{0}")]
    Format(String),
    /// The counts add up past what a u64 holds (no recorder gets there: a forged file).
    #[error("the histogram's counts add up to more than 2^64")]
    Overflow,
}

/// The sum of several histograms (lossless: counts per bucket add), as `merge` adds shards and
/// the reports add repetitions.
pub fn sum<'a>(hists: impl IntoIterator<Item = &'a Hist>) -> Hist {
    let mut total = new_hist();
    for h in hists {
        total
            .add(h)
            .expect("auto-resizing histograms accept any value");
    }
    total
}

/// Decodes a histogram written by `encode` or by another HdrHistogram implementation.
pub fn decode(text: &str) -> Result<Hist, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    let mut v2 = uncompressed_v2(&bytes)?;
    // The deserializer allocates the payload length the header declares before reading it, so
    // a length from a file (up to 4 GiB in 100 bytes of base64) must not exceed the bytes
    // present. HdrHistogram_c (and writers following it) declare a length that includes the
    // 40-byte header; the C and Python readers accept that, so volley clamps too.
    let present = (v2.len() - V2_HEADER_BYTES) as u32;
    let declared = u32::from_be_bytes([v2[4], v2[5], v2[6], v2[7]]);
    if declared > present {
        v2[4..8].copy_from_slice(&present.to_be_bytes());
    }
    let mut h: Hist = Deserializer::new()
        .deserialize(&mut v2.as_slice())
        .map_err(|e| DecodeError::Format(format!(": {e:?}")))?;
    // Counts come from a file: their sum may not fit a u64 (hdrhistogram then saturates the
    // total, and its quantile scan overflows and panics). No recorder gets there; refuse it.
    h.iter_recorded()
        .try_fold(0u64, |sum, v| sum.checked_add(v.count_at_value()))
        .ok_or(DecodeError::Overflow)?;
    h.auto(true);
    Ok(h)
}

// V2 cookies carry the word size in bits 4-7 (0x1c849314 for 8-byte counts); compare without it.
const COOKIE_MASK: u32 = 0xffff_ff0f;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304;
const V2_COOKIE: u32 = 0x1c84_9303;
const V2_HEADER_BYTES: usize = 40;
/// The most an inflated V2 histogram may take: every bucket of the widest histogram (1 to
/// 2^63 at 5 significant digits, 8.4 million counts) at 9 bytes a count fits.
const MAX_V2_BYTES: u64 = 80 << 20;

/// The uncompressed V2 encoding (header and payload) of V2 or V2-compressed bytes.
fn uncompressed_v2(bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
    use std::io::Read as _;
    let cookie = |b: &[u8]| {
        b.get(0..4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    };
    let v2 = match cookie(bytes).map(|c| c & COOKIE_MASK) {
        Some(V2_COMPRESSED_COOKIE) => {
            let mut inner = Vec::new();
            flate2::read::ZlibDecoder::new(bytes.get(8..).unwrap_or_default())
                .take(MAX_V2_BYTES + 1)
                .read_to_end(&mut inner)
                .map_err(|e| DecodeError::Format(format!(": {e}")))?;
            if inner.len() as u64 > MAX_V2_BYTES {
                return Err(DecodeError::Format(format!(
                    ": inflates past {} MiB",
                    MAX_V2_BYTES >> 20
                )));
            }
            inner
        }
        Some(V2_COOKIE) => bytes.to_vec(),
        _ => return Err(DecodeError::Format(" V2 (unknown cookie)".into())),
    };
    if v2.len() < V2_HEADER_BYTES || cookie(&v2).map(|c| c & COOKIE_MASK) != Some(V2_COOKIE) {
        return Err(DecodeError::Format(": no V2 header".into()));
    }
    Ok(v2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_histogram_has_null_statistics() {
        let p = Percentiles::of(&new_hist());
        assert_eq!(p, Percentiles::default());
        assert!(p.p50.is_none() && p.mean.is_none());
    }

    #[test]
    fn percentiles_and_round_trip() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        h.record(120_000_000).unwrap(); // beyond the initial bound: auto-resize
        let p = Percentiles::of(&h);
        assert_eq!(p.min, Some(1));
        assert_eq!(p.p50, Some(501));
        assert!(p.max.unwrap() >= 120_000_000);
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(Percentiles::of(&back), p);
        assert!(decode("not base64!").is_err());
        // A header declaring a 4 GiB payload over 2 bytes: read as the 2 bytes present (the
        // deserializer used to allocate the declared 4 GiB first).
        let h = decode("HISTFAAAAB94nJNpmSz8////DwwQwAylGcGcye0M9jAZLgDcbQeO").unwrap();
        assert_eq!((h.len(), h.max()), (5, 1));
        assert!(decode("aGVsbG8=").is_err());
    }
}
