//! `volley merge A.json B.json... -o OUT.json [--force]`: the RunResults of shards of one load
//! (several machines, or several copies on one, each sending its share) become one RunResult
//! (DESIGN §6 "More machines").
//!
//! Only mergeable parts are merged: HDR histograms are decoded, added and re-encoded (lossless)
//! and every percentile is recomputed from them with [`Percentiles::of`], as `volley run` does;
//! counters are summed; time series are aligned by wall-clock second. What cannot be derived
//! exactly — the schedule lag (no histogram in the JSON), a second's p50/p99 when several shards
//! had responses in it, several server monitors — becomes null with a warning, never an
//! estimate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::result::*;
use crate::stats::histogram::{self, decode, encode, Hist};
use crate::stats::{ErrorCounts, Percentiles, TimePoint};

/// Shards whose `started_at` differ by this much or more did not start together (`--force`).
pub const MAX_START_SPREAD_US: i64 = 10_000;

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

/// The method and the URL's path and query: what must match for shards to be one load.
fn target_key(r: &RunResult) -> (String, String) {
    let path = crate::config::parse_url(&r.target.url)
        .map(|t| t.path)
        .unwrap_or_else(|_| r.target.url.clone());
    (r.target.method.to_ascii_uppercase(), path)
}

fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// Merged time series and how many of its seconds lost p50/p99 because several shards had
/// responses in them.
#[derive(Debug, Clone, PartialEq)]
pub struct Aligned {
    /// One point per second of the merged window, no holes.
    pub series: Vec<TimePoint>,
    /// Seconds whose p50/p99 are null because more than one shard contributed latencies.
    pub nulled: usize,
}

/// Aligns the shards' series by wall clock. Each shard is (its start's offset from the earliest
/// start in seconds, its series); shard bucket k covers [start + k, start + k + 1) and goes to
/// the merged bucket it overlaps most: k + the offset rounded to the nearest second (so shards
/// within 10 ms map k → k). Counters and users add, the maximum is the maximum; p50/p99 are kept
/// only where a single shard had responses (the others' add no samples), since percentiles
/// cannot be combined. `elapsed_s` is the merged window: it sets the last bucket's length.
pub fn align_timeseries(shards: &[(f64, &[TimePoint])], elapsed_s: f64) -> Aligned {
    #[derive(Default)]
    struct Acc {
        sent: u64,
        completed: u64,
        errors: u64,
        users: Option<u64>,
        max: Option<u64>,
        with_latency: Vec<(Option<u64>, Option<u64>)>,
        interval_s: f64,
    }
    let mut buckets: BTreeMap<u64, Acc> = BTreeMap::new();
    for (offset_s, series) in shards {
        let shift = offset_s.max(0.0).round() as u64;
        for p in *series {
            let acc = buckets.entry(p.t_s + shift).or_default();
            acc.sent += p.sent;
            acc.completed += p.completed;
            acc.errors += p.errors;
            if let Some(u) = p.users {
                acc.users = Some(acc.users.unwrap_or(0) + u);
            }
            acc.max = acc.max.max(p.latency_max_us);
            if p.latency_p50_us.is_some() || p.latency_p99_us.is_some() {
                acc.with_latency.push((p.latency_p50_us, p.latency_p99_us));
            }
            acc.interval_s = acc.interval_s.max(p.interval_s);
        }
    }
    let mut series = Vec::new();
    let mut nulled = 0;
    let last = buckets.keys().next_back().copied();
    let Some(last) = last else {
        return Aligned { series, nulled };
    };
    for t in 0..=last {
        let Some(acc) = buckets.remove(&t) else {
            series.push(TimePoint::empty(t));
            continue;
        };
        let (p50, p99) = match acc.with_latency.as_slice() {
            [one] => *one,
            [] => (None, None),
            _ => {
                nulled += 1;
                (None, None)
            }
        };
        let left = elapsed_s - t as f64;
        let interval_s = if left >= 1.0 {
            1.0
        } else if left > 0.0 {
            round(left, 6)
        } else {
            // A forced merge moved a shard's last bucket past the merged window's end.
            acc.interval_s
        };
        series.push(TimePoint {
            t_s: t,
            interval_s,
            sent: acc.sent,
            completed: acc.completed,
            errors: acc.errors,
            latency_p50_us: p50,
            latency_p99_us: p99,
            latency_max_us: acc.max,
            users: acc.users,
        });
    }
    Aligned { series, nulled }
}

/// Sums of the optional values present, `None` when there are none.
fn sum_some<T: std::iter::Sum<T> + Copy>(v: impl Iterator<Item = Option<T>> + Clone) -> Option<T> {
    v.clone().any(|x| x.is_some()).then(|| v.flatten().sum())
}

/// Responses per status code over every shard.
fn sum_status_codes(rs: &[&RunResult]) -> BTreeMap<String, u64> {
    let mut sum = BTreeMap::new();
    for (code, count) in rs.iter().flat_map(|r| &r.status_codes) {
        *sum.entry(code.clone()).or_insert(0) += count;
    }
    sum
}

/// Merges shards (`(path, result)` in the order given) into one RunResult with `argv` as its
/// command line. Refuses different targets or load modes, and (without `force`) starts 10 ms or
/// more apart.
pub fn merge(
    inputs: &[(String, RunResult)],
    argv: Vec<String>,
    force: bool,
) -> Result<RunResult, MergeError> {
    let Some((_, first)) = inputs.first() else {
        return Err(MergeError::Input {
            path: String::new(),
            message: "no shard given".into(),
        });
    };
    let listing = |f: &dyn Fn(&RunResult) -> String| {
        inputs
            .iter()
            .map(|(p, r)| format!("{p}: {}", f(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if inputs
        .iter()
        .any(|(_, r)| target_key(r) != target_key(first))
    {
        return Err(MergeError::Target {
            list: listing(&|r| {
                let (m, p) = target_key(r);
                format!("{m} {p}")
            }),
        });
    }
    if inputs.iter().any(|(_, r)| r.load.mode != first.load.mode) {
        return Err(MergeError::Mode {
            list: listing(&|r| r.load.mode.to_string()),
        });
    }
    let starts: Vec<i64> = inputs
        .iter()
        .map(|(p, r)| {
            parse_started_at(&r.started_at).map_err(|m| MergeError::Input {
                path: p.clone(),
                message: m,
            })
        })
        .collect::<Result<_, _>>()?;
    let t0 = *starts.iter().min().expect("at least one shard");
    let spread_us = starts.iter().max().expect("at least one shard") - t0;
    if spread_us >= MAX_START_SPREAD_US && !force {
        return Err(MergeError::Start {
            spread_ms: spread_us as f64 / 1000.0,
            list: inputs
                .iter()
                .map(|(p, r)| format!("{p} ({})", r.started_at))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let earliest = starts
        .iter()
        .position(|&s| s == t0)
        .expect("the minimum is one of them");
    let offsets: Vec<f64> = starts.iter().map(|s| (s - t0) as f64 / 1e6).collect();
    let decode_all = |which: &str, get: &dyn Fn(&RunResult) -> &str| {
        inputs
            .iter()
            .map(|(p, r)| {
                decode(get(r)).map_err(|m| MergeError::Input {
                    path: p.clone(),
                    message: format!("{which}: {m}"),
                })
            })
            .collect::<Result<Vec<Hist>, _>>()
    };
    let latency = histogram::sum(&decode_all("latency_hdr", &|r| &r.latency_hdr)?);
    let service = histogram::sum(&decode_all("service_time_hdr", &|r| &r.service_time_hdr)?);

    let rs: Vec<&RunResult> = inputs.iter().map(|(_, r)| r).collect();
    let n = rs.len();
    let mut warnings: Vec<Warning> = Vec::new();

    // The shards' own warnings: once when every shard had it, else with the shard's file.
    let mut seen: Vec<&Warning> = Vec::new();
    for r in &rs {
        for w in &r.warnings {
            if seen.contains(&w) {
                continue;
            }
            seen.push(w);
            let holders: Vec<&str> = inputs
                .iter()
                .filter(|(_, o)| o.warnings.contains(w))
                .map(|(p, _)| p.as_str())
                .collect();
            warnings.push(if holders.len() == n {
                w.clone()
            } else {
                Warning::of_shards(&holders, w)
            });
        }
    }

    let elapsed_s = round(
        rs.iter()
            .zip(&offsets)
            .map(|(r, o)| o + r.elapsed_s)
            .fold(0.0, f64::max),
        6,
    );
    let requests: Requests = rs.iter().map(|r| r.requests).sum();
    let bytes: Bytes = rs.iter().map(|r| r.bytes).sum();
    let status_codes = sum_status_codes(&rs);
    let errors: ErrorCounts = rs.iter().map(|r| r.errors).sum();
    let connections: Connections = rs.iter().map(|r| r.connections).sum();
    let warmup = rs.iter().any(|r| r.warmup.is_some()).then(|| {
        let ws = rs.iter().filter_map(|r| r.warmup.as_ref());
        Warmup {
            duration_s: ws.clone().map(|w| w.duration_s).fold(0.0, f64::max),
            sent: ws.clone().map(|w| w.sent).sum(),
            completed: ws.clone().map(|w| w.completed).sum(),
            errors: ws.clone().map(|w| w.errors).sum(),
            connections_opened: ws.map(|w| w.connections_opened).sum(),
        }
    });

    // Load: what each shard carried adds up; the settings are the first shard's, with a
    // warning where shards disagree.
    let l0 = &first.load;
    let loads = rs.iter().map(|r| &r.load);
    for (what, differs) in [
        (
            "keep-alive",
            loads.clone().any(|l| l.keepalive != l0.keepalive),
        ),
        (
            "--pipeline",
            loads.clone().any(|l| l.pipeline != l0.pipeline),
        ),
        (
            "--arrivals",
            loads.clone().any(|l| l.arrivals != l0.arrivals),
        ),
        (
            "--timeout",
            loads.clone().any(|l| l.timeout_s != l0.timeout_s),
        ),
        (
            "--think-time",
            loads.clone().any(|l| l.think_time_s != l0.think_time_s),
        ),
        ("-d", loads.clone().any(|l| l.duration_s != l0.duration_s)),
        (
            "the request body",
            rs.iter()
                .any(|r| r.target.body_bytes != first.target.body_bytes),
        ),
        (
            "target.addr",
            rs.iter().any(|r| r.target.addr != first.target.addr),
        ),
    ] {
        if differs {
            warnings.push(Warning::shards_differ(what));
        }
    }
    let stages = match l0.stages.as_ref() {
        Some(st0)
            if loads.clone().all(|l| {
                l.stages.as_ref().is_some_and(|s| {
                    s.len() == st0.len()
                        && s.iter().zip(st0).all(|(a, b)| a.duration_s == b.duration_s)
                })
            }) =>
        {
            Some(
                st0.iter()
                    .enumerate()
                    .map(|(i, s)| StageInfo {
                        duration_s: s.duration_s,
                        users: loads
                            .clone()
                            .filter_map(|l| l.stages.as_ref().map(|st| st[i].users))
                            .sum(),
                    })
                    .collect(),
            )
        }
        Some(st0) => {
            warnings.push(Warning::stages_differ());
            Some(st0.clone())
        }
        None => None,
    };
    let load = LoadInfo {
        mode: l0.mode,
        connections: loads.clone().map(|l| l.connections).sum(),
        threads: loads.clone().map(|l| l.threads).sum(),
        rate_rps: sum_some(loads.clone().map(|l| l.rate_rps)).map(|v| round(v, 6)),
        arrivals: l0.arrivals,
        seed: if loads.clone().all(|l| l.seed == l0.seed) {
            l0.seed
        } else {
            None
        },
        duration_s: loads.clone().filter_map(|l| l.duration_s).reduce(f64::max),
        requests: if loads.clone().all(|l| l.requests.is_some()) {
            Some(loads.clone().filter_map(|l| l.requests).sum())
        } else {
            None
        },
        warmup_s: loads.clone().map(|l| l.warmup_s).fold(0.0, f64::max),
        keepalive: l0.keepalive,
        pipeline: l0.pipeline,
        timeout_s: l0.timeout_s,
        users: sum_some(loads.clone().map(|l| l.users)),
        spawn_rate: sum_some(loads.clone().map(|l| l.spawn_rate)).map(|v| round(v, 6)),
        stages,
        think_time_s: l0.think_time_s,
    };

    let schedule_lag_us = if rs.iter().any(|r| r.schedule_lag_us.is_some()) {
        warnings.push(Warning::lag_not_merged());
        None
    } else {
        None
    };

    let shard_series: Vec<(f64, &[TimePoint])> = rs
        .iter()
        .zip(&offsets)
        .map(|(r, o)| (*o, r.timeseries.as_slice()))
        .collect();
    let aligned = align_timeseries(&shard_series, elapsed_s);
    if aligned.nulled > 0 {
        warnings.push(Warning::series_percentiles_nulled(aligned.nulled));
    }
    if spread_us >= MAX_START_SPREAD_US {
        warnings.push(Warning::forced_merge(spread_us as f64 / 1e6));
    }

    let client = ClientInfo {
        cpu_user_s: round(rs.iter().map(|r| r.client.cpu_user_s).sum(), 6),
        cpu_sys_s: round(rs.iter().map(|r| r.client.cpu_sys_s).sum(), 6),
        rss_max_bytes: rs.iter().map(|r| r.client.rss_max_bytes).max().unwrap_or(0),
        cpu_pct_max: rs.iter().map(|r| r.client.cpu_pct_max).fold(0.0, f64::max),
        saturated: rs.iter().any(|r| r.client.saturated),
        saturated_fraction: rs
            .iter()
            .map(|r| r.client.saturated_fraction)
            .fold(0.0, f64::max),
    };

    let monitored: Vec<(&String, &ServerInfo)> = inputs
        .iter()
        .filter_map(|(p, r)| r.server.as_ref().map(|s| (p, s)))
        .collect();
    let server = match monitored.as_slice() {
        [] => None,
        [(path, s)] => {
            let mut s = (*s).clone();
            if rs.iter().all(|r| r.target.addr == first.target.addr) {
                // Every shard loaded the server that shard monitored: its costs are shared by
                // all their requests.
                let per = |v: f64| {
                    (requests.completed > 0).then(|| round(v / requests.completed as f64, 3))
                };
                let ctx = s.ctx_switches_voluntary + s.ctx_switches_involuntary;
                s.per_request = PerRequest {
                    cpu_us: per((s.cpu_user_s + s.cpu_sys_s) * 1e6),
                    user_us: per(s.cpu_user_s * 1e6),
                    sys_us: per(s.cpu_sys_s * 1e6),
                    ctx_switches: per(ctx as f64),
                    syscalls: s.syscalls.and_then(|v| per(v as f64)),
                };
                warnings.push(Warning::server_from_one_shard(path, &first.target.addr));
            } else {
                warnings.push(Warning::server_from_one_shard_elsewhere(path));
            }
            Some(s)
        }
        many => {
            let paths: Vec<&str> = many.iter().map(|(p, _)| p.as_str()).collect();
            warnings.push(Warning::server_not_merged(&paths));
            None
        }
    };
    if rs.iter().any(|r| !r.thresholds.is_empty()) {
        warnings.push(Warning::thresholds_not_carried());
    }
    let mut shards = Vec::new();
    for r in &rs {
        if r.shards.is_empty() {
            shards.push(Shard {
                argv: r.argv.clone(),
                started_at: r.started_at.clone(),
                env: r.env.clone(),
                client: r.client.clone(),
            });
        } else {
            // A merged input: list its shards, not the merge.
            shards.extend(r.shards.iter().cloned());
        }
    }
    let base = rs[earliest];
    let throughput_rps = if elapsed_s > 0.0 {
        round(requests.completed as f64 / elapsed_s, 2)
    } else {
        0.0
    };
    Ok(RunResult {
        schema: RUN_SCHEMA.to_string(),
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        argv,
        started_at: base.started_at.clone(),
        interrupted: rs.iter().any(|r| r.interrupted),
        env: base.env.clone(),
        target: base.target.clone(),
        load,
        elapsed_s,
        throughput_rps,
        requests,
        bytes,
        status_codes,
        errors,
        connections,
        latency_us: Percentiles::of(&latency),
        service_time_us: Percentiles::of(&service),
        schedule_lag_us,
        latency_hdr: encode(&latency),
        service_time_hdr: encode(&service),
        timeseries: aligned.series,
        client,
        machine: base.machine.clone(),
        server,
        warmup,
        warnings,
        thresholds: Vec::new(),
        shards,
    })
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
        let canonical = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if seen.contains(&canonical) {
            return Err(MergeError::Input {
                path: p.display().to_string(),
                message: "given twice (a shard would count double)".into(),
            });
        }
        seen.push(canonical);
        inputs.push((p.display().to_string(), r));
    }
    let merged = merge(&inputs, argv, force)?;
    let mut text = serde_json::to_string_pretty(&merged).expect("results always serialize");
    text.push('\n');
    crate::sys::files::write_atomically(output, text.as_bytes()).map_err(|e| {
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
mod tests {
    use super::*;
    use crate::stats::histogram::new_hist;

    fn hist(values: &[u64]) -> Hist {
        let mut h = new_hist();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    fn point(t_s: u64, completed: u64, p50: Option<u64>, max: Option<u64>) -> TimePoint {
        TimePoint {
            t_s,
            interval_s: 1.0,
            sent: completed,
            completed,
            errors: 0,
            latency_p50_us: p50,
            latency_p99_us: p50,
            latency_max_us: max,
            users: None,
        }
    }

    /// A closed-loop shard of `completed` responses with latencies `values`, started at
    /// `start_us`, 2 seconds long.
    fn shard(start_us: i64, values: &[u64]) -> RunResult {
        let h = hist(values);
        let n = values.len() as u64;
        RunResult {
            schema: RUN_SCHEMA.into(),
            volley_version: "0.1.0".into(),
            argv: vec!["volley".into(), "run".into()],
            started_at: format_started_at(start_us),
            interrupted: false,
            env: Env {
                cpu_model: None,
                cores: 2,
                kernel: None,
                pinning: Pinning {
                    client_cpus: "0-1".into(),
                    server_cpus: None,
                },
            },
            target: TargetInfo {
                url: "http://127.0.0.1:8080/".into(),
                addr: "127.0.0.1:8080".into(),
                method: "GET".into(),
                body_bytes: 0,
            },
            load: LoadInfo {
                mode: Mode::Closed,
                connections: 2,
                threads: 1,
                rate_rps: None,
                arrivals: None,
                seed: None,
                duration_s: Some(2.0),
                requests: None,
                warmup_s: 0.0,
                keepalive: true,
                pipeline: 1,
                timeout_s: 2.0,
                users: None,
                spawn_rate: None,
                stages: None,
                think_time_s: 0.0,
            },
            elapsed_s: 2.0,
            throughput_rps: n as f64 / 2.0,
            requests: Requests {
                sent: n,
                completed: n,
                errors: 0,
                unfinished: 0,
                unsent: 0,
            },
            bytes: Bytes {
                sent: 10 * n,
                received: 20 * n,
            },
            status_codes: [("200".to_string(), n)].into_iter().collect(),
            errors: ErrorCounts::default(),
            connections: Connections {
                opened: 2,
                closed_by_server: 0,
                unsolicited: 0,
            },
            latency_us: Percentiles::of(&h),
            service_time_us: Percentiles::of(&h),
            schedule_lag_us: None,
            latency_hdr: encode(&h),
            service_time_hdr: encode(&h),
            timeseries: vec![
                point(0, n / 2, Some(values[0]), Some(h.max())),
                point(1, n - n / 2, Some(values[0]), Some(h.max())),
            ],
            client: ClientInfo {
                cpu_user_s: 0.5,
                cpu_sys_s: 0.25,
                rss_max_bytes: 1000,
                cpu_pct_max: 40.0,
                saturated: false,
                saturated_fraction: 0.0,
            },
            machine: Machine {
                samples: Vec::new(),
            },
            server: None,
            warmup: None,
            warnings: vec!["closed loop".into()],
            thresholds: Vec::new(),
            shards: Vec::new(),
        }
    }

    const T0: i64 = 1_700_000_000_000_000;

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
    fn refusals_name_the_files() {
        let a = shard(T0, &[100]);
        let late = shard(T0 + 10_000, &[100]);
        let e = merge(
            &[
                ("a.json".into(), a.clone()),
                ("late.json".into(), late.clone()),
            ],
            vec![],
            false,
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, MergeError::Start { .. }), "{msg}");
        assert!(msg.contains("a.json") && msg.contains("late.json") && msg.contains("10.0 ms"));
        assert!(merge(
            &[("a.json".into(), a.clone()), ("late.json".into(), late)],
            vec![],
            true
        )
        .is_ok());
        let just_under = shard(T0 + 9_999, &[100]);
        assert!(merge(
            &[("a.json".into(), a.clone()), ("b.json".into(), just_under)],
            vec![],
            false
        )
        .is_ok());
        let mut other = shard(T0, &[100]);
        other.target.url = "http://10.0.0.2:8080/hello".into();
        let e = merge(
            &[("a.json".into(), a.clone()), ("o.json".into(), other)],
            vec![],
            true,
        )
        .unwrap_err();
        assert!(matches!(e, MergeError::Target { .. }));
        assert!(e.to_string().contains("o.json: GET /hello"), "{e}");
        let mut open = shard(T0, &[100]);
        open.load.mode = Mode::Open;
        let e = merge(
            &[("a.json".into(), a), ("o.json".into(), open)],
            vec![],
            true,
        )
        .unwrap_err();
        assert!(matches!(e, MergeError::Mode { .. }), "{e}");
    }

    #[test]
    fn timeseries_aligned_by_wall_clock() {
        let a = [
            point(0, 10, Some(5), Some(9)),
            point(1, 10, Some(5), Some(9)),
            point(2, 4, Some(5), Some(9)),
        ];
        let b = [point(0, 7, Some(6), Some(30)), point(1, 3, None, None)];
        // b started 1.3 s after a: its bucket 0 overlaps a's second 1 most.
        let m = align_timeseries(&[(0.0, &a), (1.3, &b)], 3.3);
        let completed: Vec<u64> = m.series.iter().map(|p| p.completed).collect();
        assert_eq!(completed, vec![10, 10 + 7, 4 + 3]);
        assert_eq!(
            m.series[0].latency_p50_us,
            Some(5),
            "one shard: its own p50 is exact"
        );
        assert_eq!(
            m.series[1].latency_p50_us, None,
            "two shards with responses"
        );
        assert_eq!(m.series[1].latency_max_us, Some(30));
        assert_eq!(
            m.series[2].latency_p50_us,
            Some(5),
            "b had no response in its second"
        );
        assert_eq!(m.series[2].interval_s, 1.0);
        assert_eq!(m.nulled, 1);
        // Within 10 ms, k -> k; a gap is filled with an empty second; the last is partial.
        let c = [point(0, 1, Some(1), Some(1)), point(3, 1, Some(1), Some(1))];
        let m = align_timeseries(&[(0.0, &c), (0.009, &c)], 3.5);
        assert_eq!(m.series.len(), 4);
        assert_eq!(m.series[1], TimePoint::empty(1));
        assert_eq!(m.series[3].completed, 2);
        assert_eq!(m.series[3].interval_s, 0.5);
        assert!(align_timeseries(&[], 1.0).series.is_empty());
    }

    #[test]
    fn one_server_monitor_is_kept_several_are_not() {
        let mut a = shard(T0, &[100, 200]);
        let b = shard(T0 + 1_000, &[100, 200]);
        a.server = Some(ServerInfo {
            pids: vec![42],
            cpu_user_s: 0.003,
            cpu_sys_s: 0.001,
            ctx_switches_voluntary: 6,
            ctx_switches_involuntary: 2,
            per_request: PerRequest {
                cpu_us: Some(2000.0),
                ..PerRequest::default()
            },
            ..ServerInfo::default()
        });
        let m = merge(
            &[("a.json".into(), a.clone()), ("b.json".into(), b)],
            vec![],
            false,
        )
        .unwrap();
        let s = m.server.as_ref().expect("one monitor: kept");
        assert_eq!(s.pids, vec![42]);
        // 4 ms of CPU over the 4 responses of both shards, which loaded the same address.
        assert_eq!(s.per_request.cpu_us, Some(1000.0));
        assert_eq!(s.per_request.ctx_switches, Some(2.0));
        assert!(m.warnings.iter().any(|w| w
            .text()
            .starts_with("server: monitored by one shard (a.json)")));
        let m = merge(
            &[("a.json".into(), a.clone()), ("a2.json".into(), a)],
            vec![],
            false,
        )
        .unwrap();
        assert!(m.server.is_none());
        assert!(m
            .warnings
            .iter()
            .any(|w| w.text().starts_with("server is null: 2 shards")));
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
