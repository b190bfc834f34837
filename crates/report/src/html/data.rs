//! What the page's script draws: per scenario group, the percentile curves, the throughput
//! bars, the per-second series and the server's resources, one entry per server. It travels
//! to the page as JSON; every number in it is computed here, so the script only draws.

use serde::Serialize;

use super::nines::{merged, merged_encoded, percentile_points};
use super::page::Group;
use crate::endpoints;
use crate::model::median;
use volley_model::result::RunResult;
use volley_model::stats::TimePoint;

/// What the page's script draws: serialized into the page's JSON block.
#[derive(Debug, Clone, Serialize)]
pub struct PageData {
    /// Every server in order of first appearance; the index is the server's colour everywhere.
    pub servers: Vec<String>,
    /// One entry per scenario group, in page order.
    pub groups: Vec<GroupData>,
    /// One entry per capacity scenario (empty without capacity searches).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<crate::capacity::html::CapacityData>,
    /// One entry per flame graph (`crate::flame::html::Sections`), in the order of their
    /// sections' `data-flame` indices (empty without profiles).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flames: Vec<crate::flame::html::FlameData>,
}

/// The charts of one scenario group (a scenario and its axis values), one line or bar per
/// server.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GroupData {
    /// Percentile curves of the repetitions' merged histograms.
    pub hdr: Vec<HdrLine>,
    /// Throughput across repetitions.
    pub throughput: Vec<ThroughputBar>,
    /// Per-second throughput and latency of one representative repetition.
    pub over_time: Vec<OverTime>,
    /// The server's CPU and memory over time, same repetition as `over_time`.
    pub resources: Vec<Resources>,
    /// The server runtime's GC pauses and allocation rate, same repetition as `over_time`
    /// (empty unless a result has `server.gc`).
    pub gc: Vec<GcSeries>,
    /// Percentile curves of each named request of a requests file, per server (empty
    /// without named requests).
    pub endpoints: Vec<EndpointLine>,
}

/// One line of the per-request percentile plot: a named request of one server, its
/// repetitions' histograms merged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointLine {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The request's name.
    pub name: String,
    /// Its position among the group's names (in order of first appearance), for its colour
    /// or dash.
    pub index: usize,
    /// Responses in the merged histogram.
    pub count: u64,
    /// Repetitions merged.
    pub runs: usize,
    /// Nines-scale positions: x = −log10(1 − q).
    pub x: Vec<f64>,
    /// Corrected latency at each x, µs.
    pub y_us: Vec<u64>,
}

/// The GC pauses and allocation rate of one repetition (`server.gc`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcSeries {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetition shown.
    pub rep: u32,
    /// Where they were read (`jvm-log`, `hsperfdata`, …).
    pub source: String,
    /// Each pause's start, seconds from t0 (the latency time series' clock).
    pub pause_t_s: Vec<f64>,
    /// Each pause's length, ms.
    pub pause_ms: Vec<f64>,
    /// Each pause's kind, as the runtime names it.
    pub pause_kind: Vec<String>,
    /// End of each allocation-rate second, seconds from t0.
    pub alloc_t_s: Vec<f64>,
    /// Allocation rate, MB/s.
    pub alloc_mb_s: Vec<f64>,
}

/// One line of the percentile plot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HdrLine {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// Service time (from the write) rather than corrected latency (from the due time).
    pub service: bool,
    /// Responses in the merged histogram.
    pub count: u64,
    /// Repetitions merged.
    pub runs: usize,
    /// Nines-scale positions: x = −log10(1 − q).
    pub x: Vec<f64>,
    /// Latency at each x, µs.
    pub y_us: Vec<u64>,
}

/// One bar of the throughput chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputBar {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// Median, smallest and largest req/s over the repetitions that finished.
    pub rps: Spread,
    /// Repetitions that finished.
    pub runs: usize,
}

/// Per-second series of one repetition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverTime {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetition shown (the one with the median throughput).
    pub rep: u32,
    /// Start of each one-second bucket, seconds from t0.
    pub t_s: Vec<f64>,
    /// Completed responses per second (completed / interval_s); null for a last bucket
    /// shorter than `MIN_RATE_INTERVAL_S` (the drain), whose rate would be noise.
    pub rps: Vec<Option<f64>>,
    /// Median latency of the bucket, µs (null without responses).
    pub p50_us: Vec<Option<u64>>,
    /// 99th percentile of the bucket, µs.
    pub p99_us: Vec<Option<u64>>,
    /// `--rate-stages`: requests written per second (sent / interval_s, null like `rps`);
    /// absent from a run without targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_rps: Option<Vec<Option<f64>>>,
    /// `--rate-stages`: the schedule's target per second (`timeseries[].target` /
    /// interval_s, null like `rps` and where a second has none); absent without targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<Vec<Option<f64>>>,
}

/// The server monitor's samples of one repetition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resources {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetition shown.
    pub rep: u32,
    /// End of each sample's interval, seconds from t0.
    pub t_s: Vec<f64>,
    /// User CPU, percent of one core.
    pub user_pct: Vec<f64>,
    /// System CPU, percent of one core.
    pub sys_pct: Vec<f64>,
    /// Σ RSS of the process tree.
    pub rss_bytes: Vec<u64>,
    /// Threads of the process tree.
    pub threads: Vec<u64>,
}

/// Median, smallest and largest of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v`; None when it is empty.
    pub fn of(v: &[f64]) -> Option<Spread> {
        let median = median(v)?;
        Some(Spread {
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            median,
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Whether two ranges overlap: then repetitions cannot tell the two apart.
    pub(crate) fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// The charts of one scenario group: one line, bar or series per server that has data.
pub(super) fn group_data(g: &Group) -> GroupData {
    let mut d = GroupData::default();
    let mut names: Vec<String> = Vec::new();
    for row in &g.rows {
        let results = row.results();
        if results.is_empty() {
            continue;
        }
        d.hdr.extend(hdr_lines(row.server, &results));
        d.endpoints
            .extend(endpoint_lines(row.server, &results, &mut names));
        if let Some(rps) = row.rps {
            d.throughput.push(ThroughputBar {
                server: row.server,
                rps,
                runs: results.len(),
            });
        }
        if let Some((rep, r)) = row.representative() {
            d.over_time.extend(over_time(row.server, rep, r));
            d.resources.extend(resources(row.server, rep, r));
            d.gc.extend(gc(row.server, rep, r));
        }
    }
    d
}

/// The percentile curves of a server's merged repetitions: corrected latency, and service
/// time where it differs.
fn hdr_lines(server: usize, results: &[&RunResult]) -> Vec<HdrLine> {
    let mut lines = Vec::new();
    let corrected = merged(results, |r| &r.latency_hdr);
    let service = merged(results, |r| &r.service_time_hdr);
    if let Some((h, runs)) = &corrected {
        let pts = percentile_points(h);
        if !pts.is_empty() {
            lines.push(hdr_line(server, false, h.len(), *runs, &pts));
            // Closed loop with keep-alive records the same histogram twice: draw it once.
            if let Some((sh, sruns)) = &service {
                let spts = percentile_points(sh);
                if !spts.is_empty() && spts != pts {
                    lines.push(hdr_line(server, true, sh.len(), *sruns, &spts));
                }
            }
        }
    }
    lines
}

/// The percentile curve of each named request of a server, its repetitions' corrected latency
/// histograms merged; `names` holds the group's names so far (a name keeps its index across
/// servers).
fn endpoint_lines(
    server: usize,
    results: &[&RunResult],
    names: &mut Vec<String>,
) -> Vec<EndpointLine> {
    let mut lines = Vec::new();
    for e in endpoints::figures(results) {
        let index = match names.iter().position(|n| *n == e.name) {
            Some(k) => k,
            None => {
                names.push(e.name.clone());
                names.len() - 1
            }
        };
        let hdrs = results
            .iter()
            .filter_map(|r| r.endpoints.iter().find(|x| x.name == e.name))
            .map(|x| x.latency_hdr.as_str());
        let Some((h, runs)) = merged_encoded(hdrs) else {
            continue;
        };
        let pts = percentile_points(&h);
        if pts.is_empty() {
            continue;
        }
        lines.push(EndpointLine {
            server,
            name: e.name,
            index,
            count: h.len(),
            runs,
            x: pts.iter().map(|p| p.0).collect(),
            y_us: pts.iter().map(|p| p.1).collect(),
        });
    }
    lines
}

/// The per-second series of the representative repetition; None without a time series.
fn over_time(server: usize, rep: u32, r: &RunResult) -> Option<OverTime> {
    if r.timeseries.is_empty() {
        return None;
    }
    let staged = r.timeseries.iter().any(|p| p.target.is_some());
    let series = |count: fn(&TimePoint) -> Option<f64>| -> Vec<Option<f64>> {
        r.timeseries
            .iter()
            .map(|p| per_second(p, count(p)))
            .collect()
    };
    Some(OverTime {
        server,
        rep,
        t_s: r.timeseries.iter().map(|p| p.t_s as f64).collect(),
        rps: series(|p| Some(p.completed as f64)),
        p50_us: r.timeseries.iter().map(|p| p.latency_p50_us).collect(),
        p99_us: r.timeseries.iter().map(|p| p.latency_p99_us).collect(),
        sent_rps: staged.then(|| series(|p| Some(p.sent as f64))),
        target_rps: staged.then(|| series(|p| p.target)),
    })
}

/// A bucket's count as a rate; None for a bucket shorter than `MIN_RATE_INTERVAL_S`.
fn per_second(p: &TimePoint, count: Option<f64>) -> Option<f64> {
    let n = count?;
    (p.interval_s >= MIN_RATE_INTERVAL_S).then(|| round1(n / p.interval_s))
}

/// The server monitor's samples of the representative repetition. One sample is no line: a
/// run shorter than two seconds gets the tables only.
fn resources(server: usize, rep: u32, r: &RunResult) -> Option<Resources> {
    let s = r.server.as_ref().filter(|s| s.samples.len() >= 2)?;
    Some(Resources {
        server,
        rep,
        t_s: s.samples.iter().map(|p| p.t_s).collect(),
        user_pct: s.samples.iter().map(|p| p.cpu_user_pct).collect(),
        sys_pct: s.samples.iter().map(|p| p.cpu_sys_pct).collect(),
        rss_bytes: s.samples.iter().map(|p| p.rss_bytes).collect(),
        threads: s.samples.iter().map(|p| p.threads).collect(),
    })
}

/// The GC pauses and allocation rate of the representative repetition; None without
/// `server.gc` or with nothing to draw.
fn gc(server: usize, rep: u32, r: &RunResult) -> Option<GcSeries> {
    let g = r.server.as_ref()?.gc.as_ref()?;
    if g.events.is_empty() && g.alloc_rate_series.is_empty() {
        return None;
    }
    Some(GcSeries {
        server,
        rep,
        source: g.source.as_str().to_string(),
        pause_t_s: g.events.iter().map(|e| e.t_s).collect(),
        pause_ms: g.events.iter().map(|e| e.pause_ms).collect(),
        pause_kind: g.events.iter().map(|e| e.kind.clone()).collect(),
        alloc_t_s: g.alloc_rate_series.iter().map(|p| p.t_s).collect(),
        alloc_mb_s: g.alloc_rate_series.iter().map(|p| p.value).collect(),
    })
}

/// One line of the percentile plot from its points.
fn hdr_line(server: usize, service: bool, count: u64, runs: usize, pts: &[(f64, u64)]) -> HdrLine {
    HdrLine {
        server,
        service,
        count,
        runs,
        x: pts.iter().map(|p| p.0).collect(),
        y_us: pts.iter().map(|p| p.1).collect(),
    }
}

/// Buckets shorter than this (the drain after the send window) get no rate: a few responses
/// in a few milliseconds would plot as a spike or a cliff.
const MIN_RATE_INTERVAL_S: f64 = 0.5;

/// Rounded to one decimal, finer than a chart can show.
fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::Page;
    use crate::model::Report;
    use crate::Reporter as _;

    #[test]
    fn named_requests_merge_their_repetitions_and_keep_their_index_across_servers() {
        let text = include_str!("../../../../tests/fixtures/report/mix.json");
        let run = RunResult::from_json(text).unwrap();
        let mut report = Report::single(run.clone());
        let mut rep2 = report.cells[0].clone();
        rep2.rep = 2;
        let mut other = report.cells[0].clone();
        other.server = "other".into();
        let mut r = run.clone();
        r.endpoints.swap(0, 2); // `missing` first on this server
        r.endpoints.truncate(2);
        other.result = Some(r);
        report.cells.extend([rep2, other]);
        let series = report.series();
        let page = Page::of(&series);
        let lines = &page.data.groups[0].endpoints;
        let got: Vec<(usize, &str, usize, usize)> = lines
            .iter()
            .map(|l| (l.server, l.name.as_str(), l.index, l.runs))
            .collect();
        assert_eq!(
            got,
            [
                (0, "hello", 0, 2),
                (0, "post", 1, 2),
                (0, "missing", 2, 2),
                (1, "missing", 2, 1),
                (1, "post", 1, 1)
            ]
        );
        for (l, e) in lines.iter().zip(&run.endpoints) {
            assert_eq!(
                l.count,
                2 * e.requests.completed,
                "{}: counts add up",
                l.name
            );
            assert_eq!(l.y_us.last().copied(), e.latency_us.max, "{}", l.name);
        }
        // Runs without named requests draw none.
        let plain = Report::load(&[std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/report/open-loop.json")])
        .unwrap();
        let series = plain.series();
        assert!(Page::of(&series).data.groups[0].endpoints.is_empty());
    }

    #[test]
    fn a_rate_stage_run_draws_sent_and_its_target_per_second() {
        let report = crate::html::tests::fixture("rate-stages.json");
        let series = report.series();
        let page = Page::of(&series);
        let s = &page.data.groups[0].over_time[0];
        let want: Vec<Option<f64>> = [500.0, 1500.0, 2000.0, 2000.0, 1250.0].map(Some).to_vec();
        assert_eq!(s.target_rps.as_ref(), Some(&want), "0 → 2,000 → 500/s");
        assert_eq!(s.sent_rps.as_ref(), Some(&want), "the run followed them");
        assert_eq!(s.rps, want, "completed as before");
        let html = crate::html::HtmlReporter.render(&report);
        assert!(html.contains("sent (thin) and the target of the stages (dashed)</figcaption>"));
        // A drain shorter than half a second has no rate; a second without a target none.
        let mut r = report.cells[0].result.clone().unwrap();
        r.timeseries[1].target = None;
        let mut drain = r.timeseries[4].clone();
        (drain.t_s, drain.interval_s, drain.target) = (5, 0.05, Some(0.0));
        r.timeseries.push(drain);
        let s = over_time(0, 1, &r).unwrap();
        let target = s.target_rps.unwrap();
        assert_eq!(
            (target[1], target[4], target[5]),
            (None, Some(1250.0), None)
        );
        assert_eq!(s.sent_rps.unwrap()[5], None);
    }

    #[test]
    fn a_run_without_targets_has_no_sent_or_target_series() {
        let report = crate::html::tests::fixture("open-loop.json");
        let series = report.series();
        let page = Page::of(&series);
        let s = &page.data.groups[0].over_time[0];
        assert_eq!((&s.sent_rps, &s.target_rps), (&None, &None));
        let json = serde_json::to_string(&page.data).unwrap();
        assert!(!json.contains("sent_rps") && !json.contains("target_rps"));
        let html = crate::html::HtmlReporter.render(&report);
        assert!(html.contains("(the median-throughput repetition)</figcaption>"));
    }

    #[test]
    fn spread_median_min_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 10.0));
        assert!(Spread::of(&[]).is_none());
        let a = Spread::of(&[1.0, 2.0]).unwrap();
        assert!(a.overlaps(&Spread::of(&[2.0, 5.0]).unwrap()));
        assert!(!a.overlaps(&Spread::of(&[2.5, 5.0]).unwrap()));
    }
}
