//! What one saved run is: its labels (suite, scenario, server, axes), the load identity and the
//! host, the commit, every scalar of its result and its two HDR histograms. Built from a
//! RunResult or from a capacity search; pure (no database, no git).

use std::collections::BTreeMap;
use volley_model::words;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::git::GitInfo;
use super::host::Host;
use volley_model::result::capacity::CapacityResult;
use volley_model::result::identity::LoadKey;
use volley_model::result::{Mode, RunResult};

words! {
    /// What kind of result a record holds.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        /// A RunResult.
        Run = "run",
        /// A capacity search: its scalars are `max_rate_rps` and `closed_loop_rps` (and a
        /// sweep's `knee_rps` and `sweep_resolution_rps`).
        Capacity = "capacity",
    }
}

words! {
    /// Which command recorded it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Source {
        /// `volley run --save`.
        Run = "run",
        /// `volley bench --save`.
        Bench = "bench",
        /// `volley capacity --save`.
        Capacity = "capacity",
        /// `volley history import`.
        Import = "import",
    }
}

/// Where a run sits in a suite; all empty for a plain `volley run`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Labels {
    /// The suite's name (`[suite] name`).
    pub suite: String,
    /// Scenario name.
    pub scenario: String,
    /// Server name.
    pub server: String,
    /// Axis values, `connections=3,rate=500`.
    pub axes: String,
    /// Repetition, from 1.
    pub rep: Option<u32>,
}

/// One run, ready to be saved.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// RunResult or capacity search.
    pub kind: Kind,
    /// The command that recorded it.
    pub source: Source,
    /// The run's start, RFC 3339.
    pub started_at: String,
    /// The commit measured, when known.
    pub git: Option<GitInfo>,
    /// The machine.
    pub host: Host,
    /// volley's version that ran it.
    pub volley_version: String,
    /// The load identity: repetitions of one test share it.
    pub load_id: String,
    /// Suite, scenario, server, axes, repetition.
    pub labels: Labels,
    /// How the load was driven (a capacity search: open loop).
    pub mode: Mode,
    /// The URL (redacted, as in the result).
    pub url: String,
    /// Interrupted by Ctrl-C.
    pub interrupted: bool,
    /// Every number of the result by its JSON path (`latency_us.p99`, `server.rss_max_bytes`).
    pub scalars: BTreeMap<String, f64>,
    /// Corrected latency histogram (compressed V2, base64), as in the RunResult.
    pub latency_hdr: Option<String>,
    /// Service-time histogram.
    pub service_time_hdr: Option<String>,
    /// Headline warnings' texts (a number that cannot be trusted says so here too).
    pub warnings: Vec<String>,
    /// The file it was read from or written to.
    pub result_path: Option<String>,
    /// SHA-256 of the result's JSON: importing one file twice keeps one row.
    pub digest: String,
}

/// A run's labels and provenance, as the command knows them.
#[derive(Debug, Clone)]
pub struct Origin<'a> {
    /// The command.
    pub source: Source,
    /// The commit.
    pub git: Option<&'a GitInfo>,
    /// Suite labels.
    pub labels: Labels,
    /// The result file.
    pub path: Option<String>,
}

impl Record {
    /// The record of a RunResult.
    pub fn of_run(r: &RunResult, ctx: Origin<'_>) -> Record {
        let value = serde_json::to_value(r).unwrap_or(Value::Null);
        let load_id = r
            .load_id
            .clone()
            .unwrap_or_else(|| LoadKey::of_result(r).id());
        Record {
            kind: Kind::Run,
            source: ctx.source,
            started_at: r.started_at.clone(),
            git: ctx.git.cloned(),
            host: Host::of(&r.env),
            volley_version: r.volley_version.clone(),
            load_id,
            labels: ctx.labels,
            mode: r.load.mode,
            url: r.target.url.clone(),
            interrupted: r.interrupted,
            scalars: scalars(&value),
            latency_hdr: Some(r.latency_hdr.clone()).filter(|s| !s.is_empty()),
            service_time_hdr: Some(r.service_time_hdr.clone()).filter(|s| !s.is_empty()),
            warnings: r
                .warnings
                .iter()
                .filter(|w| w.kind().is_headline())
                .map(|w| w.text().to_string())
                .collect(),
            result_path: ctx.path,
            digest: digest(&value),
        }
    }

    /// The record of a capacity search. `first_step` (a RunResult of the search) gives the
    /// load: its identity without the rate, with the SLO and precision added, is the search's.
    pub fn of_capacity(
        c: &CapacityResult,
        first_step: Option<&RunResult>,
        ctx: Origin<'_>,
    ) -> Record {
        let value = serde_json::to_value(c).unwrap_or(Value::Null);
        let mut key = LoadKey::new();
        key.push("kind", "capacity");
        if let Some(r) = first_step {
            for (name, v) in LoadKey::of_result(r).fields() {
                if *name != "rate_rps" {
                    key.push(name, v);
                }
            }
        } else {
            key.push(
                "url",
                volley_model::result::identity::scheme_and_path(&c.url).1,
            );
        }
        key.push("slo", c.slo.join(";"))
            .push("precision_pct", c.precision_pct)
            .push("step_duration_s", c.step_duration_s);
        if first_step.is_none() {
            key.push("connections", c.connections);
        }
        // A sweep's answer is read from windows of one ramp: its own series, apart from the
        // bisection's.
        if let Some(sw) = &c.sweep {
            key.push("sweep_duration_s", sw.duration_s)
                .push("sweep_window_s", sw.window_s);
        }
        let mut s = BTreeMap::new();
        if let Some(m) = c.max_rate_rps {
            s.insert("max_rate_rps".to_string(), m);
        }
        if let Some(sw) = &c.sweep {
            s.insert("sweep_resolution_rps".to_string(), sw.resolution_rps);
            if let Some(k) = sw.knee_rps {
                s.insert("knee_rps".to_string(), k);
            }
        }
        if let Some(cl) = c.closed_loop_reference() {
            s.insert("closed_loop_rps".to_string(), cl.throughput_rps);
        }
        s.insert("steps".to_string(), c.steps.len() as f64);
        s.insert("wall_s".to_string(), c.wall_s);
        let env = c.env.clone().or_else(|| first_step.map(|r| r.env.clone()));
        Record {
            kind: Kind::Capacity,
            source: ctx.source,
            started_at: c.started_at.clone(),
            git: ctx.git.cloned(),
            host: env.as_ref().map(Host::of).unwrap_or_default(),
            volley_version: c.volley_version.clone(),
            load_id: key.id(),
            labels: ctx.labels,
            mode: Mode::Open,
            url: c.url.clone(),
            interrupted: c.interrupted,
            scalars: s,
            latency_hdr: None,
            service_time_hdr: None,
            warnings: c.notes.clone(),
            result_path: ctx.path,
            digest: digest(&value),
        }
    }
}

fn digest(v: &Value) -> String {
    let text = serde_json::to_string(v).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every number (and boolean, as 0 or 1) of a JSON object by its dotted path; arrays (time
/// series, shards, warnings) are not scalars and are left out.
pub(crate) fn scalars(v: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    walk(v, String::new(), &mut out);
    out
}

fn walk(v: &Value, path: String, out: &mut BTreeMap<String, f64>) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.insert(path, f);
            }
        }
        Value::Bool(b) if !path.is_empty() => {
            out.insert(path, if *b { 1.0 } else { 0.0 });
        }
        Value::Object(m) => {
            for (k, v) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(v, p, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_dotted_paths_of_numbers_and_flags() {
        let v = serde_json::json!({
            "throughput_rps": 10.5,
            "latency_us": {"p99": 120, "p50": null},
            "client": {"saturated": true},
            "timeseries": [{"t": 1}],
            "target": {"url": "http://x"}
        });
        let s = scalars(&v);
        assert_eq!(s.get("throughput_rps"), Some(&10.5));
        assert_eq!(s.get("latency_us.p99"), Some(&120.0));
        assert_eq!(s.get("client.saturated"), Some(&1.0));
        assert_eq!(s.len(), 3, "{s:?}");
    }

    fn sweep_result() -> CapacityResult {
        let path = format!(
            "{}/../../tests/fixtures/report/capacity-sweep/capacity.json",
            env!("CARGO_MANIFEST_DIR")
        );
        CapacityResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn record(c: &CapacityResult) -> Record {
        let ctx = Origin {
            source: Source::Capacity,
            git: None,
            labels: Labels::default(),
            path: None,
        };
        Record::of_capacity(c, None, ctx)
    }

    #[test]
    fn a_sweep_is_a_series_of_its_own_with_its_knee() {
        let c = sweep_result();
        let sweep = record(&c);
        assert!(
            sweep.scalars.contains_key("knee_rps"),
            "{:?}",
            sweep.scalars
        );
        assert!(sweep.scalars.contains_key("sweep_resolution_rps"));
        // The same answer from a bisection: another series, without a knee.
        let search = record(&CapacityResult { sweep: None, ..c });
        assert!(!search.scalars.contains_key("knee_rps"));
        assert_ne!(sweep.load_id, search.load_id);
    }
}
