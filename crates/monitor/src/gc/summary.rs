//! From a window's pauses (on the run's clock) to `server.gc`: counts, pause percentiles,
//! the bounded event list, heap after collections and the allocation estimate.

use std::collections::BTreeMap;

use volley_model::result::gc::{
    CountersSpan, DroppedPauses, GcPause, GcPoint, GcSource, PausePercentiles, ServerGc,
};
use volley_model::stats::slowest::SlowRequest;

/// Pauses at least this long are always kept in `events`.
pub(crate) const KEEP_OVER_MS: f64 = 1.0;
/// Shorter pauses are kept while `events` holds fewer than this.
pub(crate) const KEEP_SHORT_UNTIL: usize = 1000;
/// At most this many events in all (a run of hours with a pause over 1 ms every 10 ms).
pub(crate) const MAX_EVENTS: usize = 100_000;

/// What a source found in the window, before summarizing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Window {
    /// Pauses in time order, seconds from t0.
    pub pauses: Vec<GcPause>,
    /// Collections by kind (several pauses may make one collection).
    pub collections_by_kind: BTreeMap<String, u64>,
    /// Bytes allocated in the window, when the source can tell.
    pub alloc_bytes: Option<u64>,
    /// Bytes allocated per second of the window (index k: [k, k+1) s).
    pub alloc_by_second: Vec<u64>,
    /// Heap after collections.
    pub heap_after_gc: Vec<GcPoint>,
    /// Lines that did not parse.
    pub unparsed_lines: u64,
    /// Runtime and collector.
    pub runtime: Option<String>,
    /// What the source cannot see.
    pub note: Option<String>,
    /// A counter file's first and last readings (what its counts cover).
    pub counters_span: Option<CountersSpan>,
}

fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// The nearest-rank percentile of sorted values.
fn rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

/// Summarizes `w` for a window of `window_s` seconds.
pub(crate) fn summarize(source: GcSource, w: Window, window_s: f64) -> ServerGc {
    let mut pause_windows: Vec<(f64, f64)> =
        w.pauses.iter().map(|p| (p.t_s, p.pause_ms / 1e3)).collect();
    pause_windows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut durations: Vec<f64> = w.pauses.iter().map(|p| p.pause_ms).collect();
    durations.sort_by(f64::total_cmp);
    let pause_total_ms: f64 = durations.iter().sum();
    let max = durations.last().copied().unwrap_or(0.0);
    let (events, dropped) = bound(w.pauses);
    let collections = w.collections_by_kind.values().sum();
    let alloc_rate_mb_s = w
        .alloc_bytes
        .filter(|_| window_s > 0.0)
        .map(|b| round(b as f64 / 1e6 / window_s, 3));
    let alloc_rate_series = w
        .alloc_by_second
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let end = ((k + 1) as f64).min(window_s.max(k as f64));
            let len = (end - k as f64).max(1e-3);
            GcPoint {
                t_s: round(end, 3),
                value: round(*b as f64 / 1e6 / len, 3),
            }
        })
        .collect();
    ServerGc {
        source,
        runtime: w.runtime,
        collections,
        collections_by_kind: w.collections_by_kind,
        pause_count: durations.len() as u64,
        pause_total_ms: round(pause_total_ms, 3),
        pause_max_ms: round(max, 3),
        pause_ms: PausePercentiles {
            p50: round(rank(&durations, 0.5), 3),
            p99: round(rank(&durations, 0.99), 3),
            max: round(max, 3),
        },
        alloc_bytes: w.alloc_bytes,
        alloc_rate_mb_s,
        alloc_rate_series,
        heap_after_gc: w.heap_after_gc,
        unparsed_lines: w.unparsed_lines,
        events_truncated: dropped.is_some(),
        events_kept_over_ms: KEEP_OVER_MS,
        events_dropped: dropped,
        events,
        slow_overlap_fraction: None,
        slow_requests_checked: None,
        note: w.note,
        counters_span: w.counters_span,
        pause_windows,
        unread: false,
    }
}

/// Sets the fraction of the slowest requests (latency at least `threshold_us`, the run's
/// p99.9) whose window overlapped a pause. Only for sources with single pauses; a request
/// overlaps when it began before a pause ended and ended after it began.
pub fn correlate(gc: &mut ServerGc, slow: &[SlowRequest], threshold_us: u64) {
    if !gc.source.per_pause() || gc.unread {
        return;
    }
    let starts: Vec<f64> = gc.pause_windows.iter().map(|w| w.0).collect();
    let longest = gc.pause_windows.iter().map(|w| w.1).fold(0.0, f64::max);
    let mut checked = 0u64;
    let mut overlapped = 0u64;
    for r in slow.iter().filter(|r| r.latency_us >= threshold_us) {
        checked += 1;
        let (a, b) = r.window_s();
        // Pauses starting before the request ended, from the first that could still be
        // running when it began.
        let from = starts.partition_point(|s| *s < a - longest);
        let to = starts.partition_point(|s| *s <= b);
        if gc.pause_windows[from..to]
            .iter()
            .any(|(s, len)| s + len >= a && *s <= b)
        {
            overlapped += 1;
        }
    }
    if checked > 0 {
        gc.slow_overlap_fraction = Some(round(overlapped as f64 / checked as f64, 4));
        gc.slow_requests_checked = Some(checked);
    }
}

/// Keeps every pause of at least [`KEEP_OVER_MS`] (up to [`MAX_EVENTS`]) and shorter ones
/// while fewer than [`KEEP_SHORT_UNTIL`] are kept; the rest are summarized.
fn bound(pauses: Vec<GcPause>) -> (Vec<GcPause>, Option<DroppedPauses>) {
    let mut kept = Vec::with_capacity(pauses.len().min(KEEP_SHORT_UNTIL));
    let mut dropped = DroppedPauses::default();
    for p in pauses {
        let long = p.pause_ms >= KEEP_OVER_MS;
        if (long && kept.len() < MAX_EVENTS) || kept.len() < KEEP_SHORT_UNTIL {
            kept.push(p);
        } else {
            dropped.count += 1;
            dropped.pause_total_ms += p.pause_ms;
            dropped.pause_max_ms = dropped.pause_max_ms.max(p.pause_ms);
        }
    }
    dropped.pause_total_ms = round(dropped.pause_total_ms, 3);
    (kept, (dropped.count > 0).then_some(dropped))
}

/// Allocation between collections, from the heap before each and after the one before: what
/// GC-log analysers do. Only consecutive pauses that both carry heap figures count; the
/// allocation before the window's first collection is unknown, so this is a lower bound.
/// Returns the total and its spread over the seconds of the window.
pub(crate) fn alloc_from_heap(pauses: &[GcPause], window_s: f64) -> Option<(u64, Vec<u64>)> {
    let seconds = window_s.max(0.0).ceil() as usize;
    let mut by_second = vec![0u64; seconds.max(1)];
    let mut total = 0u64;
    let mut any = false;
    let mut last_after: Option<u64> = None;
    for p in pauses {
        if let (Some(after_prev), Some(before)) = (last_after, p.heap_before_bytes) {
            let grown = before.saturating_sub(after_prev);
            total += grown;
            let k = (p.t_s.max(0.0) as usize).min(by_second.len() - 1);
            by_second[k] += grown;
            any = true;
        }
        if p.heap_after_bytes.is_some() {
            last_after = p.heap_after_bytes;
        }
    }
    any.then_some((total, by_second))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(t_s: f64, ms: f64, before: Option<u64>, after: Option<u64>) -> GcPause {
        GcPause {
            t_s,
            kind: "young".into(),
            pause_ms: ms,
            heap_before_bytes: before,
            heap_after_bytes: after,
        }
    }

    #[test]
    fn percentiles_and_totals_cover_every_pause() {
        let pauses: Vec<GcPause> = (1..=100)
            .map(|k| pause(k as f64 * 0.1, k as f64 * 0.1, None, None))
            .collect();
        let mut w = Window {
            pauses,
            ..Window::default()
        };
        w.collections_by_kind.insert("young".into(), 100);
        let g = summarize(GcSource::JvmLog, w, 10.0);
        assert_eq!((g.collections, g.pause_count), (100, 100));
        assert_eq!(g.pause_ms.p50, 5.0);
        assert_eq!(g.pause_ms.p99, 9.9);
        assert_eq!(g.pause_max_ms, 10.0);
        assert!((g.pause_total_ms - 505.0).abs() < 1e-9);
        assert!(!g.events_truncated);
    }

    #[test]
    fn short_pauses_of_a_long_run_are_summarized_and_long_ones_kept() {
        let mut pauses = Vec::new();
        for k in 0..5000 {
            let ms = if k % 100 == 0 { 4.0 } else { 0.2 };
            pauses.push(pause(k as f64 * 0.01, ms, None, None));
        }
        let g = summarize(
            GcSource::GoGctrace,
            Window {
                pauses,
                ..Window::default()
            },
            50.0,
        );
        assert_eq!(g.pause_count, 5000, "percentiles see every pause");
        assert!(g.events_truncated);
        let long = g.events.iter().filter(|e| e.pause_ms >= 1.0).count();
        assert_eq!(long, 50, "every pause over 1 ms is kept");
        let d = g.events_dropped.unwrap();
        assert_eq!(d.count as usize + g.events.len(), 5000);
        assert_eq!(d.pause_max_ms, 0.2);
    }

    #[test]
    fn slow_requests_overlapping_a_pause_are_counted() {
        let pauses = vec![pause(1.0, 20.0, None, None), pause(2.0, 5.0, None, None)];
        let mut g = summarize(
            GcSource::JvmLog,
            Window {
                pauses,
                ..Window::default()
            },
            3.0,
        );
        let req = |end_s: f64, lat_ms: u64| SlowRequest {
            latency_us: lat_ms * 1000,
            end_ns: (end_s * 1e9) as u64,
        };
        let slow = [
            req(1.015, 30), // inside the first pause
            req(1.100, 30), // began 1.070, after it ended (1.020)
            req(2.004, 3),  // below the threshold: not checked
            req(2.010, 12), // began 1.998, ended during the second
            req(0.990, 10), // ended before the first began
        ];
        correlate(&mut g, &slow, 10_000);
        assert_eq!(g.slow_requests_checked, Some(4));
        assert_eq!(g.slow_overlap_fraction, Some(0.5));
        // A log read with no pause in the window: none of them overlapped one.
        let mut quiet = summarize(GcSource::GoGctrace, Window::default(), 3.0);
        correlate(&mut quiet, &slow, 10_000);
        assert_eq!(quiet.slow_overlap_fraction, Some(0.0));
        // hsperfdata has no single pauses: no fraction.
        let mut h = summarize(GcSource::Hsperfdata, Window::default(), 3.0);
        correlate(&mut h, &slow, 10_000);
        assert_eq!(h.slow_overlap_fraction, None);
    }

    #[test]
    fn allocation_is_what_the_heap_grew_between_collections() {
        const M: u64 = 1 << 20;
        let p = [
            pause(0.5, 1.0, Some(30 * M), Some(5 * M)),
            pause(1.5, 1.0, Some(25 * M), Some(6 * M)),
            pause(1.9, 1.0, Some(16 * M), Some(4 * M)),
        ];
        let (total, by) = alloc_from_heap(&p, 2.0).unwrap();
        assert_eq!(total, 30 * M);
        assert_eq!(by, vec![0, 30 * M]);
        assert!(alloc_from_heap(&[pause(1.0, 1.0, None, None)], 2.0).is_none());
    }
}
