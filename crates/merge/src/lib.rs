//! `volley merge A.json B.json... -o OUT.json [--force]`: the RunResults of shards of one load
//! (several machines, or several copies on one, each sending its share) become one RunResult,
//! by the rules of docs/contract.md, "Merging shards": HDR histograms added (lossless) and every
//! percentile recomputed from them with [`Percentiles::of`], as `volley run` does; counters
//! summed; time series aligned by wall-clock second; what cannot be derived exactly null with a
//! warning, never an estimate.
//!
//! One file per part of the result, as the contract lists them: `refusals` (inputs that are not
//! shards of one load), `histograms`, `counters`, `load`, `timeseries`, `client`, `server`,
//! `warnings` (the shards' own) and `shards` (the list of inputs).

mod client;
mod counters;
mod endpoints;
mod histograms;
mod load;
mod refusals;
mod server;
mod shard_set;
mod shards;
mod timeseries;
mod warnings;

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use volley_config::threshold::{self, Threshold};
use volley_model::result::identity::{load_id, LoadKey};
use volley_model::result::{
    Checked, H2Info, RunResult, SetupTimes, TargetInfo, TlsInfo, RUN_SCHEMA,
};
use volley_model::stats::histogram::encode;
use volley_model::stats::Percentiles;

pub use timeseries::{align_timeseries, Aligned};

/// Shards whose `started_at` differ by this much or more did not start together (`--force`).
pub(crate) const MAX_START_SPREAD_US: i64 = 10_000;

/// Why shards cannot be merged; every message names the files.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// An input cannot be read or is not a RunResult (exit 2).
    #[error("{path}: {message}")]
    Input {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The shards did not start together (exit 2 without `--force`).
    #[error("started_at differs by {spread_ms:.1} ms (the limit is 10 ms): {list}; these are not shards of one load started together (--force merges them anyway, aligning their time series to the nearest second)")]
    Start {
        /// Latest minus earliest start, milliseconds.
        spread_ms: f64,
        /// `path (started_at)`, each file.
        list: String,
    },
    /// The shards loaded different targets (exit 2, always).
    #[error("different targets (method and URL path must match): {list}")]
    Target {
        /// `path: METHOD /path`, each file.
        list: String,
    },
    /// The shards used different load modes (exit 2, always).
    #[error("different load modes (closed, open, ramp) cannot be merged: {list}")]
    Mode {
        /// `path: mode`, each file.
        list: String,
    },
    /// The output cannot be written (exit 3).
    #[error("-o {path}: {message}")]
    Write {
        /// The output file.
        path: String,
        /// Why.
        message: String,
    },
}

/// `started_at` (RFC 3339, `Z` or a numeric offset) as microseconds since the Unix epoch.
pub fn parse_started_at(s: &str) -> Result<i64, String> {
    let bad = || format!("started_at `{s}` is not an RFC 3339 timestamp");
    let (base, offset_s) = if s.ends_with('Z') || s.ends_with('z') {
        (s.to_string(), 0i64)
    } else {
        let cut = s.len().checked_sub(6).ok_or_else(bad)?;
        let (base, off) = (s.get(..cut).ok_or_else(bad)?, s.get(cut..).ok_or_else(bad)?);
        let sign = match off.as_bytes()[0] {
            b'+' => 1,
            b'-' => -1,
            _ => return Err(bad()),
        };
        let h: i64 = off.get(1..3).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let m: i64 = off.get(4..6).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        (format!("{base}Z"), sign * (h * 3600 + m * 60))
    };
    let t = humantime::parse_rfc3339(&base).map_err(|_| bad())?;
    let d = t.duration_since(UNIX_EPOCH).map_err(|_| bad())?;
    // Local time = UTC + offset.
    Ok(d.as_micros() as i64 - offset_s * 1_000_000)
}

/// `v` rounded to `digits` decimals, as the merged JSON writes computed values.
fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// Merges shards (`(path, result)` in the order given) into one RunResult with `argv` as its
/// command line. Refuses different targets or load modes, and (without `force`) starts 10 ms or
/// more apart.
pub fn merge(
    inputs: &[(String, RunResult)],
    argv: Vec<String>,
    force: bool,
) -> Result<RunResult, MergeError> {
    // A complete set of shards that started at one --start-at is aligned on it: their
    // lateness is bounded by --max-late, not by the 10 ms started_at rule.
    let kind = shard_set::check(inputs)?;
    let together = kind == shard_set::Kind::StartedTogether;
    let starts = refusals::check(inputs, force || together)?;
    let hists = histograms::add(inputs)?;
    let endpoints = endpoints::merge(inputs)?;
    let rs: Vec<&RunResult> = inputs.iter().map(|(_, r)| r).collect();
    let elapsed_s = timeseries::window_s(&rs, &starts.offsets_s);
    let counters = counters::sum(&rs);
    // The warnings come in the order of the steps below, the shards' own first.
    let mut warnings = warnings::of_shards(inputs);
    let load = load::merge(&rs, &mut warnings);
    let schedule_lag_us = histograms::schedule_lag(&rs, &mut warnings);
    let timeseries = timeseries::merge(&rs, &starts, elapsed_s, &mut warnings);
    let server = server::merge(inputs, counters.requests.completed, &mut warnings);
    warnings::thresholds_dropped(&rs, &mut warnings);
    // env, target and machine are the earliest shard's: its machine samples are timed from
    // the merged started_at.
    let base = rs[starts.earliest];
    let mut merged = RunResult {
        schema: RUN_SCHEMA.to_string(),
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        argv,
        started_at: base.started_at.clone(),
        interrupted: rs.iter().any(|r| r.interrupted),
        env: base.env.clone(),
        target: merged_target(&rs, base),
        load,
        load_id: Some(merged_load_id(&rs, kind)),
        elapsed_s,
        throughput_rps: throughput_rps(counters.requests.completed, elapsed_s),
        achieved_rps: sum_achieved(&rs),
        requests: counters.requests,
        bytes: counters.bytes,
        status_codes: counters.status_codes,
        errors: counters.errors,
        checks: checks_sum(&rs),
        connections: counters.connections,
        latency_us: Percentiles::of(&hists.latency),
        latency_lower_bound: rs.iter().any(|r| r.latency_lower_bound),
        service_time_us: Percentiles::of(&hists.service),
        schedule_lag_us,
        setup: SetupTimes::add(&rs.iter().map(|r| &r.setup).collect::<Vec<_>>()),
        latency_hdr: encode(&hists.latency),
        service_time_hdr: encode(&hists.service),
        timeseries,
        client: client::merge(&rs),
        machine: base.machine.clone(),
        server,
        warmup: counters::warmup(&rs),
        warnings,
        thresholds: Vec::new(),
        shards: shards::list(&rs),
        endpoints,
        journey: rs
            .iter()
            .filter_map(|r| r.journey.as_ref())
            .fold(None, |m, j| {
                let mut m = m.unwrap_or_default();
                volley_model::result::journey::JourneyResult::add(&mut m, j);
                Some(m)
            }),
        shard: None,
    };
    merged.thresholds = implied_checks(&rs, &merged);
    Ok(merged)
}

/// The bound the checks imply, judged on the merged responses (a shard leaves it to the
/// merge), unless a shard's own thresholds named `checks` (they are dropped with the others).
fn implied_checks(rs: &[&RunResult], merged: &RunResult) -> Vec<Checked> {
    let given: Vec<Threshold> = rs
        .iter()
        .flat_map(|r| &r.thresholds)
        .filter(|c| !c.implied)
        .filter_map(|c| threshold::parse(&c.threshold).ok())
        .collect();
    threshold::implied_for(merged, &given)
        .map(|t| t.check(merged))
        .into_iter()
        .collect()
}

/// Responses that failed each check, added over the shards.
fn checks_sum(rs: &[&RunResult]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for r in rs {
        for (k, n) in &r.checks {
            *out.entry(k.clone()).or_insert(0) += n;
        }
    }
    out
}

/// The earliest shard's target, with TLS handshake counts of every shard: the resumed fraction
/// is the share of all their handshakes.
fn merged_target(rs: &[&RunResult], base: &RunResult) -> TargetInfo {
    let mut target = base.target.clone();
    if let Some(tls) = target.tls.as_mut() {
        let infos: Vec<&TlsInfo> = rs.iter().filter_map(|r| r.target.tls.as_ref()).collect();
        let handshakes: u64 = infos.iter().map(|t| t.handshakes).sum();
        let resumed: f64 = infos
            .iter()
            .map(|t| t.resumed_fraction.unwrap_or(0.0) * t.handshakes as f64)
            .sum();
        tls.handshakes = handshakes;
        tls.resumed_fraction = (handshakes > 0).then(|| resumed / handshakes as f64);
    }
    if let Some(h2) = target.h2.as_mut() {
        let infos: Vec<&H2Info> = rs.iter().filter_map(|r| r.target.h2.as_ref()).collect();
        h2.connections = infos.iter().map(|h| h.connections).sum();
        h2.goaways = infos.iter().map(|h| h.goaways).sum();
        h2.max_concurrent_streams = infos.iter().filter_map(|h| h.max_concurrent_streams).min();
        h2.streams_per_connection = infos
            .iter()
            .map(|h| h.streams_per_connection)
            .min()
            .unwrap_or(h2.streams_per_connection);
    }
    target
}

/// The merged load's identity. A complete set of `--shard` shards is the whole load they
/// were cut from: the id each of them carries, which a single process of that load has too
/// (so the two compare as repetitions of one test). Any other merge is the sum of its
/// inputs: a hash of their ids (sorted, so the order given does not matter), the same for
/// every repetition and never a single input's.
fn merged_load_id(rs: &[&RunResult], kind: shard_set::Kind) -> String {
    if kind != shard_set::Kind::Runs {
        if let Some(s) = rs.first().and_then(|r| r.shard.as_ref()) {
            return s.config_hash.clone();
        }
    }
    let mut ids: Vec<String> = rs.iter().map(|r| load_id(r)).collect();
    ids.sort();
    let mut key = LoadKey::new();
    key.push("shards", ids.join(","));
    key.id()
}

/// Open loop: the shards' achieved rates add up (null when any shard has none).
fn sum_achieved(rs: &[&RunResult]) -> Option<f64> {
    rs.iter()
        .map(|r| r.achieved_rps)
        .sum::<Option<f64>>()
        .map(|v| round(v, 2))
}

/// Completed responses per second of the merged window, as `volley run` rounds it.
fn throughput_rps(completed: u64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        round(completed as f64 / elapsed_s, 2)
    } else {
        0.0
    }
}

/// Reads one shard, naming the file in any error.
pub fn read_shard(path: &Path) -> Result<RunResult, MergeError> {
    let err = |message: String| MergeError::Input {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    RunResult::from_json(&text).map_err(|m| err(format!("not a volley RunResult: {m}")))
}

/// Reads the shards, merges them and writes the result.
pub fn merge_files(
    paths: &[PathBuf],
    output: &Path,
    argv: Vec<String>,
    force: bool,
) -> Result<RunResult, MergeError> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut inputs = Vec::new();
    for p in paths {
        let r = read_shard(p)?;
        refusals::given_once(&mut seen, p)?;
        inputs.push((p.display().to_string(), r));
    }
    let merged = merge(&inputs, argv, force)?;
    let mut text = serde_json::to_string_pretty(&merged).expect("results always serialize");
    text.push('\n');
    volley_model::sys::files::write_atomically(output, text.as_bytes()).map_err(|e| {
        MergeError::Write {
            path: output.display().to_string(),
            message: e.to_string(),
        }
    })?;
    Ok(merged)
}

/// Microseconds since the Unix epoch as `started_at` is written (RFC 3339, UTC, µs).
pub fn format_started_at(us_since_epoch: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_micros(us_since_epoch.max(0) as u64);
    humantime::format_rfc3339_micros(t).to_string()
}

#[cfg(test)]
mod test_shards;

#[cfg(test)]
mod tests {
    use super::test_shards::{shard, T0};
    use super::*;
    use volley_model::stats::histogram::decode;

    #[test]
    fn the_merged_load_has_its_own_id_whatever_the_order() {
        let mut a = shard(T0, &[100, 200]);
        let mut b = shard(T0 + 1_000, &[300]);
        a.load_id = Some("aaaaaaaaaaaaaaaa".into());
        b.load_id = Some("bbbbbbbbbbbbbbbb".into());
        b.achieved_rps = Some(10.0);
        a.achieved_rps = Some(20.5);
        a.requests.failed = 1;
        b.latency_lower_bound = true;
        let argv = vec!["volley".to_string()];
        let ab = merge(
            &[("a".into(), a.clone()), ("b".into(), b.clone())],
            argv.clone(),
            false,
        )
        .unwrap();
        let ba = merge(
            &[("b".into(), b), ("a".into(), a.clone())],
            argv.clone(),
            false,
        )
        .unwrap();
        assert_eq!(ab.load_id, ba.load_id);
        let aa = merge(
            &[("a".into(), a.clone()), ("a2".into(), a.clone())],
            argv,
            false,
        )
        .unwrap();
        assert_ne!(aa.load_id, a.load_id, "two shards are not one shard's load");
        assert_ne!(aa.load_id, ab.load_id);
        assert_eq!(ab.achieved_rps, Some(30.5));
        assert_eq!(ab.requests.failed, 1);
        assert!(ab.latency_lower_bound);
    }

    #[test]
    fn merged_result_sums_and_recomputes() {
        let a = shard(T0, &[100, 200, 300, 400]);
        let b = shard(T0 + 4_000, &[1_000, 2_000, 50_000]);
        let m = merge(
            &[("a.json".into(), a.clone()), ("b.json".into(), b.clone())],
            vec!["volley".into(), "merge".into()],
            false,
        )
        .unwrap();
        let h = decode(&m.latency_hdr).unwrap();
        assert_eq!(h.len(), 7, "count = sum of counts");
        assert_eq!(
            h.max(),
            decode(&b.latency_hdr).unwrap().max(),
            "max = max of maxes"
        );
        assert_eq!(
            m.latency_us,
            Percentiles::of(&h),
            "percentiles from the merged histogram"
        );
        assert_eq!(m.latency_us.max, Some(h.max()));
        assert_eq!(m.requests.completed, 7);
        assert_eq!(m.status_codes["200"], 7);
        assert_eq!(m.bytes.received, 140);
        assert_eq!(m.load.connections, 4);
        assert_eq!(m.load.threads, 2);
        assert_eq!(m.started_at, a.started_at, "the earliest start");
        assert_eq!(m.elapsed_s, 2.004, "the later shard ends 4 ms later");
        assert_eq!(m.throughput_rps, round(7.0 / 2.004, 2));
        assert_eq!(m.client.cpu_user_s, 1.0);
        assert_eq!(m.client.rss_max_bytes, 1000);
        assert_eq!(m.shards.len(), 2);
        assert_eq!(m.shards[1].started_at, b.started_at);
        assert_eq!(
            m.warnings[0].text(),
            "closed loop",
            "a warning every shard had, once"
        );
        // Within 10 ms: bucket k -> k; both shards had responses in each second.
        assert_eq!(m.timeseries.len(), 2);
        assert_eq!(m.timeseries[0].completed, 2 + 1);
        assert_eq!(m.timeseries[1].completed, 2 + 2);
        assert_eq!(m.timeseries[0].latency_p50_us, None);
        assert_eq!(m.timeseries[1].latency_max_us, Some(h.max()));
        assert!(m
            .warnings
            .iter()
            .any(|w| w.text().contains("latency_p50_us")));
        // Merging the merge with a third shard lists three shards, not two.
        let c = shard(T0 + 1_000, &[7]);
        let mm = merge(
            &[("m.json".into(), m), ("c.json".into(), c)],
            vec!["volley".into()],
            false,
        )
        .unwrap();
        assert_eq!(mm.shards.len(), 3);
        assert_eq!(decode(&mm.latency_hdr).unwrap().len(), 8);
    }

    #[test]
    fn the_merged_responses_are_judged_by_the_bound_their_checks_imply() {
        let checked = |start: i64, failed: u64| {
            let mut s = shard(start, &[100; 50]);
            s.checks.insert("status".into(), failed);
            s.requests.failed_checks = Some(failed);
            s
        };
        let merged = |a: &RunResult, b: &RunResult| {
            let inputs = [("a".into(), a.clone()), ("b".into(), b.clone())];
            merge(&inputs, vec!["volley".into()], false).unwrap()
        };
        // 1 of 100 in all (2 % of one shard's share): exactly the bound, held.
        let (a, mut b) = (checked(T0, 1), checked(T0 + 1_000, 0));
        let m = merged(&a, &b);
        assert_eq!(m.thresholds.len(), 1, "{:?}", m.thresholds);
        let t = &m.thresholds[0];
        assert!(t.implied && t.pass && t.actual == Some(1.0), "{t:?}");
        b = checked(T0 + 1_000, 1);
        assert!(!merged(&a, &b).thresholds[0].pass, "2 of 100");
        // A shard's own bound on checks is dropped with its other thresholds, and replaces
        // the implied one.
        b.thresholds
            .push(threshold::parse("checks<5%").unwrap().check(&b));
        let m = merged(&a, &b);
        assert!(m.thresholds.is_empty(), "{:?}", m.thresholds);
        assert!(m.warnings.iter().any(|w| w.text().contains("not carried")));
        // Without checks, nothing is implied.
        let m = merged(&shard(T0, &[1]), &shard(T0, &[2]));
        assert!(m.thresholds.is_empty());
    }

    #[test]
    fn started_at_with_offsets() {
        let z = parse_started_at("2024-05-01T12:00:00.250000Z").unwrap();
        let plus = parse_started_at("2024-05-01T14:00:00.250000+02:00").unwrap();
        let minus = parse_started_at("2024-05-01T11:30:00.250000-00:30").unwrap();
        assert_eq!(z, plus);
        assert_eq!(z, minus);
        assert_eq!(format_started_at(z), "2024-05-01T12:00:00.250000Z");
        assert!(parse_started_at("yesterday").is_err());
    }
}
