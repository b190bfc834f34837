//! `volley merge` on real RunResults from the built-in server: shards run one after the other
//! are refused without --force, merged with it; counters add up, the merged histogram holds
//! every shard's responses, and the output passes `schema/run.schema.json`. Merges of saved
//! RunResults are compared byte for byte with golden files, rewritten with
//! `UPDATE_GOLDEN=1 cargo test --test tests quick::merge::` (review the diff before committing it).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use common::{assert_golden, scratch};
use serde_json::{json, Value};
use volley::result::{Checked, Mode, RunResult, StageInfo};
use volley::stats::histogram::decode;

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");
const SCHEMA_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/run.schema.json");

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn assert_valid(doc: &Value, what: &str) {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    let v = V.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(SCHEMA_PATH).unwrap()).unwrap();
        jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema")
    });
    let errs: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(
        errs.is_empty(),
        "{what} violates the schema:\n{}",
        errs.join("\n")
    );
}

/// `volley run URL -c 2 -d 1s ARGS --quiet --json PATH`, one at a time.
fn run_to(url: &str, extra: &[&str], path: &Path) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let o = Command::new(VOLLEY)
        .args(["run", url, "-c", "2", "-d", "1s"])
        .args(extra)
        .args(["--quiet", "--json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "volley run {url}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Two closed-loop runs against the same server, one after the other.
fn closed_shards() -> &'static (PathBuf, PathBuf) {
    static S: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    S.get_or_init(|| {
        let server = volley::serve::spawn("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", server.addr);
        let dir = scratch("merge", "closed");
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        run_to(&url, &[], &a);
        run_to(&url, &[], &b);
        (a, b)
    })
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn merge(inputs: &[&Path], out: &Path, extra: &[&str]) -> Output {
    Command::new(VOLLEY)
        .arg("merge")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

use common::output_text as text;

fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr}: {:?}", v.pointer(ptr)))
}

fn hist_len(v: &Value, key: &str) -> u64 {
    decode(v[key].as_str().unwrap()).unwrap().len()
}

#[test]
fn sequential_runs_are_refused_then_forced() {
    let (a, b) = closed_shards();
    let dir = scratch("merge", "forced");
    let out = dir.join("merged.json");
    let o = merge(&[a, b], &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(a.to_str().unwrap()) && err.contains(b.to_str().unwrap()),
        "{err}"
    );
    assert!(err.contains("started_at differs"), "{err}");
    assert!(!out.exists(), "nothing written when refused");

    let o = merge(&[a, b], &out, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (va, vb, m) = (read(a), read(b), read(&out));
    assert_valid(&m, "merged result");
    for key in [
        "/requests/sent",
        "/requests/completed",
        "/requests/errors",
        "/requests/unfinished",
        "/bytes/sent",
        "/bytes/received",
        "/connections/opened",
        "/status_codes/200",
        "/load/connections",
        "/load/threads",
    ] {
        assert_eq!(u(&m, key), u(&va, key) + u(&vb, key), "{key} is the sum");
    }
    // The merged histograms hold every shard's responses.
    let completed = u(&m, "/requests/completed");
    assert_eq!(hist_len(&m, "latency_hdr"), completed);
    assert_eq!(
        hist_len(&m, "latency_hdr"),
        hist_len(&va, "latency_hdr") + hist_len(&vb, "latency_hdr")
    );
    assert_eq!(
        hist_len(&m, "service_time_hdr"),
        hist_len(&va, "service_time_hdr") + hist_len(&vb, "service_time_hdr")
    );
    assert_eq!(
        u(&m, "/latency_us/max"),
        u(&va, "/latency_us/max").max(u(&vb, "/latency_us/max"))
    );
    assert_eq!(m["started_at"], va["started_at"], "the earliest start");
    // The second shard started a second or more later: elapsed covers both.
    let start = |v: &Value| {
        volley::merge::parse_started_at(v["started_at"].as_str().unwrap()).unwrap() as f64 / 1e6
    };
    let offset = start(&vb) - start(&va);
    assert!(offset >= 1.0, "sequential runs: {offset}");
    let elapsed = m["elapsed_s"].as_f64().unwrap();
    let want = (offset + vb["elapsed_s"].as_f64().unwrap()).max(va["elapsed_s"].as_f64().unwrap());
    assert!((elapsed - want).abs() < 2e-6, "{elapsed} vs {want}");
    let tput = m["throughput_rps"].as_f64().unwrap();
    assert!((tput - completed as f64 / elapsed).abs() < 0.01);
    // Every completion is in the series, and the second shard's seconds moved by its offset.
    let series = m["timeseries"].as_array().unwrap();
    let in_series: u64 = series
        .iter()
        .map(|p| p["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(in_series, completed);
    let shift = offset.round() as usize;
    assert_eq!(
        u(&m, &format!("/timeseries/{shift}/completed")),
        u(&vb, "/timeseries/0/completed")
            + if shift < va["timeseries"].as_array().unwrap().len() {
                u(&va, &format!("/timeseries/{shift}/completed"))
            } else {
                0
            }
    );
    assert_eq!(m["shards"].as_array().unwrap().len(), 2);
    assert_eq!(m["shards"][1]["started_at"], vb["started_at"]);
    assert_eq!(m["argv"][1], "merge");
    assert!(m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("--force")));
}

#[test]
fn shards_started_together_align_second_by_second() {
    let (a, b) = closed_shards();
    let dir = scratch("merge", "together");
    // The second shard as if it had started 3 ms after the first.
    let va = read(a);
    let mut vb = read(b);
    let t0 = volley::merge::parse_started_at(va["started_at"].as_str().unwrap()).unwrap();
    vb["started_at"] = json!(volley::merge::format_started_at(t0 + 3_000));
    let b3 = dir.join("b-3ms.json");
    write(&b3, &vb);
    let out = dir.join("merged.json");
    let o = merge(&[a, &b3], &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = read(&out);
    assert_valid(&m, "merged result");
    let (sa, sb) = (
        va["timeseries"].as_array().unwrap(),
        vb["timeseries"].as_array().unwrap(),
    );
    let series = m["timeseries"].as_array().unwrap();
    assert_eq!(series.len(), sa.len().max(sb.len()));
    for (k, p) in series.iter().enumerate() {
        let get = |s: &Vec<Value>, key: &str| s.get(k).map_or(0, |q| q[key].as_u64().unwrap());
        for key in ["sent", "completed", "errors"] {
            assert_eq!(
                p[key].as_u64().unwrap(),
                get(sa, key) + get(sb, key),
                "second {k} {key}"
            );
        }
        // Both shards had responses in the same second: no percentile can be derived.
        let both = get(sa, "completed") > 0 && get(sb, "completed") > 0;
        if both {
            assert_eq!(p["latency_p50_us"], Value::Null, "second {k}");
            assert_eq!(p["latency_p99_us"], Value::Null, "second {k}");
        }
        let max = [sa.get(k), sb.get(k)]
            .into_iter()
            .flatten()
            .filter_map(|q| q["latency_max_us"].as_u64())
            .max();
        assert_eq!(p["latency_max_us"].as_u64(), max, "second {k}");
    }
    assert!(m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("latency_p50_us")));
}

#[test]
fn open_loop_shards_lose_only_the_schedule_lag() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let dir = scratch("merge", "open");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    run_to(&url, &["-R", "200"], &a);
    run_to(&url, &["-R", "300"], &b);
    let out = dir.join("merged.json");
    let o = merge(&[&a, &b], &out, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = read(&out);
    assert_valid(&m, "merged open-loop result");
    assert_eq!(m["load"]["mode"], "open");
    assert_eq!(m["load"]["rate_rps"].as_f64(), Some(500.0), "rates add up");
    assert_eq!(m["schedule_lag_us"], Value::Null);
    assert!(m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().starts_with("schedule_lag_us is null")));
    assert_eq!(
        hist_len(&m, "latency_hdr"),
        hist_len(&read(&a), "latency_hdr") + hist_len(&read(&b), "latency_hdr")
    );
}

#[test]
fn mismatched_or_bad_inputs_are_refused() {
    let (a, b) = closed_shards();
    let dir = scratch("merge", "bad");
    let out = dir.join("merged.json");
    let vb = read(b);

    let mut other = vb.clone();
    other["target"]["url"] = json!("http://127.0.0.1:1/hello");
    let p = dir.join("other-target.json");
    write(&p, &other);
    let o = merge(&[a, &p], &out, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("different targets") && err.contains("other-target.json"),
        "{err}"
    );

    let mut open = vb.clone();
    open["load"]["mode"] = json!("ramp");
    let p = dir.join("ramp.json");
    write(&p, &open);
    let o = merge(&[a, &p], &out, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ramp.json: ramp"));

    let missing = dir.join("missing.json");
    let o = merge(&[a, &missing], &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.json"));

    let suite = dir.join("suite.json");
    std::fs::write(&suite, "{\"schema\": \"volley.suite/1\"}").unwrap();
    let o = merge(&[a, &suite], &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("suite.json: not a volley RunResult"));

    let o = merge(&[a, a], &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("given twice"));

    let o = merge(
        &[a, b],
        Path::new("/nonexistent-dir/merged.json"),
        &["--force"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir/merged.json"));

    // One input is not a merge.
    let o = Command::new(VOLLEY)
        .args(["merge"])
        .arg(a)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

fn fixture(name: &str) -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name);
    RunResult::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The merged JSON as `volley merge` writes it, from named shards.
fn merged_text(inputs: Vec<(&str, RunResult)>, force: bool) -> String {
    let inputs: Vec<(String, RunResult)> = inputs
        .into_iter()
        .map(|(name, r)| (name.to_string(), r))
        .collect();
    let argv = ["volley", "merge", "-o", "merged.json"]
        .into_iter()
        .map(String::from)
        .chain(inputs.iter().map(|(name, _)| name.clone()))
        .collect();
    let mut m = volley::merge::merge(&inputs, argv, force).unwrap();
    // A new version of volley alone must not rewrite the golden files.
    m.volley_version = "VERSION".into();
    let mut text = serde_json::to_string_pretty(&m).unwrap();
    text.push('\n');
    text
}

/// `r` started `us` microseconds after `of`.
fn started_after(mut r: RunResult, of: &RunResult, us: i64) -> RunResult {
    let t0 = volley::merge::parse_started_at(&of.started_at).unwrap();
    r.started_at = volley::merge::format_started_at(t0 + us);
    r
}

/// `r` as a ramp of `users` users over stages of `durations` seconds.
fn ramp(mut r: RunResult, users: u64, durations: &[f64]) -> RunResult {
    r.load.mode = Mode::Ramp;
    r.load.users = Some(users);
    r.load.spawn_rate = Some(users as f64 / 3.0);
    r.load.stages = Some(
        durations
            .iter()
            .map(|&duration_s| StageInfo { duration_s, users })
            .collect(),
    );
    r
}

#[test]
fn merges_of_saved_results_match_the_golden_files() {
    // Closed loop, forced (moved to start within seconds, to keep the series short): three
    // servers at three addresses, two of them monitored, one shard with connect errors and
    // warnings of its own.
    let rust = fixture("quick/runs/rust__get__r1.json");
    let go = started_after(fixture("quick/runs/go__get__r1.json"), &rust, 2_500_000);
    let no_server = started_after(
        fixture("faults/runs/no-server__get__connections-8__r1.json"),
        &rust,
        1_200_000,
    );
    let closed = merged_text(
        vec![
            ("rust.json", rust.clone()),
            ("go.json", go),
            ("no-server.json", no_server),
        ],
        true,
    );
    assert_golden("merge-closed.json", &closed);

    // Open loop, started 3 ms apart at one address, one monitor: rates add, the schedule lag
    // and the seconds both shards answered in lose their percentiles, arrivals that differ are
    // the first shard's.
    let a = fixture("open-loop.json");
    let mut b = started_after(a.clone(), &a, 3_000);
    b.server = None;
    b.load.rate_rps = Some(1000.0);
    b.load.arrivals = Some(volley::result::Arrivals::Poisson);
    b.load.seed = Some(42);
    assert_golden(
        "merge-open.json",
        &merged_text(vec![("a.json", a), ("b.json", b)], false),
    );

    // Ramps whose stages line up (users add) with settings that differ, one warm-up, another
    // status code, a threshold, and a monitor at another address than the other shard's.
    let a = ramp(
        fixture("faults/runs/volley-serve__get__connections-2__r1.json"),
        2,
        &[1.0, 1.0],
    );
    let mut b = started_after(
        ramp(
            fixture("faults/runs/volley-serve__get__connections-8__r1.json"),
            8,
            &[1.0, 1.0],
        ),
        &a,
        9_000,
    );
    b.server = None;
    b.load.keepalive = false;
    b.load.pipeline = 4;
    b.load.timeout_s = 5.0;
    b.load.think_time_s = 0.01;
    b.load.duration_s = Some(3.0);
    b.load.requests = Some(100);
    b.load.seed = Some(7);
    b.target.body_bytes = 1024;
    b.warmup = None;
    b.status_codes.insert("404".into(), 3);
    b.thresholds.push(Checked {
        threshold: "p99<10ms".into(),
        actual: Some(1.5),
        pass: true,
        implied: false,
    });
    assert_golden(
        "merge-ramp.json",
        &merged_text(vec![("a.json", a.clone()), ("b.json", b.clone())], false),
    );

    // Stages that do not line up keep the first shard's; a merged input lists its shards.
    let c = started_after(ramp(a.clone(), 3, &[2.0]), &a, 1_000);
    let nested: RunResult = serde_json::from_str(&closed).unwrap();
    let d = started_after(fixture("quick/runs/node__get__r1.json"), &rust, 400_000);
    assert_golden(
        "merge-stages-differ.json",
        &merged_text(vec![("a.json", a), ("b.json", b), ("c.json", c)], false),
    );
    assert_golden(
        "merge-nested.json",
        &merged_text(vec![("closed.json", nested), ("node.json", d)], true),
    );
}
