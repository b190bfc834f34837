//! Real `volley run --json -` output checked against `schema/run.schema.json` (docs/contract.md:
//! "A JSON Schema for it lives in the repo and a test checks real output against it"), plus the
//! counter invariant and the lossless histogram encoding. Also `schema/capacity.schema.json`
//! against a saved capacity search, strictly: every key written must be in the schema (the
//! capacity e2e tests check fresh output the same way).

use std::process::Command;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

use crate::common::{proxy, PROXY_VARIABLES};

const SCHEMA_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/run.schema.json");

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let text = std::fs::read_to_string(SCHEMA_PATH).expect("schema/run.schema.json exists");
        let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
        jsonschema::draft202012::new(&schema).expect("the schema is a valid draft 2020-12 schema")
    })
}

/// All validation errors of `doc`, one line each (empty when valid).
fn errors(doc: &Value) -> Vec<String> {
    validator()
        .iter_errors(doc)
        .map(|e| format!("{}: {}", e.instance_path, e))
        .collect()
}

pub(crate) fn assert_valid(doc: &Value, what: &str) {
    let errs = errors(doc);
    assert!(
        errs.is_empty(),
        "{what}: real output violates the schema:\n{}",
        errs.join("\n")
    );
}

fn assert_invalid(doc: &Value, what: &str) {
    assert!(
        !validator().is_valid(doc),
        "{what}: a broken document passed the schema"
    );
}

/// Runs `volley run http://ADDR/ -c 2 <extra> --quiet --json -` against an in-process server
/// and returns the parsed stdout. Runs are serialized so they do not compete for the CPU.
fn run_volley(extra: &[&str]) -> Value {
    let mut args = vec!["-c", "2"];
    args.extend_from_slice(extra);
    run_volley_args(&args)
}

/// Runs `volley run URL ARGS --quiet --json -` against the built-in server.
fn run_volley_args(extra: &[&str]) -> Value {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = volley::serve::spawn("127.0.0.1:0").expect("built-in server starts");
    let url = format!("http://{}/", server.addr);
    let mut args = vec!["run", url.as_str()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--quiet", "--json", "-"]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    for var in PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    let out = cmd.args(&args).output().expect("volley binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "volley {args:?} exited with {}; stderr:\n{stderr}",
        out.status
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout of volley {args:?} is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the server saw no request"
    );
    doc
}

fn closed_loop_output() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| run_volley(&["-d", "1s"]))
}

fn u(doc: &Value, ptr: &str) -> u64 {
    doc.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} is not an unsigned integer: {:?}", doc.pointer(ptr)))
}

/// The checks every real output must pass.
fn check_real_output(doc: &Value, what: &str) {
    assert_valid(doc, what);

    // docs/contract.md, "Counters": sent = completed + (errors - errors.connect) + unfinished.
    let sent = u(doc, "/requests/sent");
    let completed = u(doc, "/requests/completed");
    let errors_total = u(doc, "/requests/errors");
    let connect = u(doc, "/errors/connect");
    let unfinished = u(doc, "/requests/unfinished");
    assert_eq!(
        sent,
        completed + (errors_total - connect) + unfinished,
        "{what}: requests.sent != completed + (errors - errors.connect) + unfinished in {}",
        doc["requests"]
    );
    // requests.errors is the sum of the error kinds.
    let kinds: u64 = ["connect", "timeout", "reset", "protocol", "closed"]
        .iter()
        .map(|k| u(doc, &format!("/errors/{k}")))
        .sum();
    assert_eq!(errors_total, kinds, "{what}: requests.errors != Σ errors");
    // Every complete response has exactly one status.
    let by_status: u64 = doc["status_codes"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        by_status, completed,
        "{what}: Σ status_codes != requests.completed"
    );
    assert!(completed > 0, "{what}: no response at all");

    // The histograms are lossless: they decode, hold one value per completed response, and
    // reproduce the percentile summaries printed next to them.
    for (hdr_key, summary_key) in [
        ("latency_hdr", "latency_us"),
        ("service_time_hdr", "service_time_us"),
    ] {
        let text = doc[hdr_key].as_str().unwrap();
        let h = volley::stats::histogram::decode(text)
            .unwrap_or_else(|e| panic!("{what}: {hdr_key} does not decode: {e}"));
        assert_eq!(
            h.len(),
            completed,
            "{what}: {hdr_key} count != requests.completed"
        );
        let summary = serde_json::to_value(volley::stats::Percentiles::of(&h)).unwrap();
        assert_eq!(
            summary, doc[summary_key],
            "{what}: {summary_key} disagrees with {hdr_key}"
        );
    }
}

#[test]
fn schema_file_compiles_and_is_draft_2020_12() {
    let text = std::fs::read_to_string(SCHEMA_PATH).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        schema["properties"]["schema"]["const"],
        volley::result::RUN_SCHEMA
    );
    let _ = validator();
}

#[test]
fn closed_loop_output_matches_schema() {
    let doc = closed_loop_output();
    check_real_output(doc, "closed loop");
    assert_eq!(doc["load"]["mode"], "closed");
    assert!(doc["schedule_lag_us"].is_null());
}

#[test]
fn open_loop_output_matches_schema() {
    let doc = run_volley(&["-d", "1s", "-R", "500"]);
    check_real_output(&doc, "open loop");
    assert_eq!(doc["load"]["mode"], "open");
    assert_eq!(doc["load"]["rate_rps"], json!(500.0));
    assert!(
        doc["schedule_lag_us"].is_object(),
        "open loop reports schedule lag"
    );
}

#[test]
fn ramp_output_matches_schema() {
    let doc = run_volley_args(&["--stages", "500ms:2,500ms:2"]);
    check_real_output(&doc, "ramp");
    assert_eq!(doc["load"]["mode"], "ramp");
    assert!(doc["timeseries"][0]["users"].is_u64());
    let mut no_users = doc.clone();
    no_users["load"].as_object_mut().unwrap().remove("users");
    assert_invalid(&no_users, "ramp without load.users");
}

#[test]
fn warmup_and_request_count_output_matches_schema() {
    let doc = run_volley(&["--warmup", "1s", "-n", "200"]);
    check_real_output(&doc, "warm-up + -n");
    assert_eq!(u(&doc, "/requests/completed"), 200);
    assert_eq!(u(&doc, "/load/requests"), 200);
    assert!(
        doc["load"]["duration_s"].is_null(),
        "-n run has no duration"
    );
    assert!(
        doc["warmup"].is_object(),
        "a warm-up run reports its warm-up counters"
    );
    assert!(u(&doc, "/warmup/completed") > 0);
}

#[test]
fn checked_output_matches_schema() {
    let doc = run_volley(&["-n", "200", "--expect-status", "200", "--expect-size", "1"]);
    assert_valid(&doc, "checks");
    assert_eq!(u(&doc, "/requests/failed_checks"), 0);
    assert_eq!(doc["thresholds"][0]["threshold"], "checks<=1%");
    assert_eq!(doc["thresholds"][0]["implied"], true);
    let bad = broken(&doc, |d| d["thresholds"][0]["implied"] = "yes".into());
    assert_invalid(&bad, "implied not a boolean");
}

#[test]
fn a_proxied_output_matches_schema() {
    let px = proxy::start(proxy::Behaviour::Honest);
    let doc = run_volley(&["-n", "100", "-x", &px.url(), "--proxytunnel"]);
    check_real_output(&doc, "proxied");
    assert_eq!(doc["target"]["proxy"]["mode"], "tunnel");
    assert!(doc["proxy_connect_hdr"].is_string());
    let bad = broken(&doc, |d| d["target"]["proxy"]["mode"] = "socks".into());
    assert_invalid(&bad, "an unknown proxy mode");
}

#[test]
fn a_requests_file_of_150_unnamed_paths_matches_schema() {
    // 100 default names and `other`: the most endpoints a result can hold.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("paths.toml");
    let text: String = (0..150)
        .map(|k| format!("[[request]]\npath = \"/p/{k}\"\n"))
        .collect();
    std::fs::write(&file, text).unwrap();
    let doc = run_volley(&["-n", "300", "--requests-file", file.to_str().unwrap()]);
    check_real_output(&doc, "150 unnamed paths");
    let eps = doc["endpoints"].as_array().unwrap();
    assert_eq!((eps.len(), eps[100]["name"].as_str()), (101, Some("other")));
    let sent: u64 = eps.iter().map(|e| u(e, "/requests/sent")).sum();
    assert_eq!(sent, u(&doc, "/requests/sent"));
    let mut more = doc.clone();
    let extra = more["endpoints"][0].clone();
    more["endpoints"].as_array_mut().unwrap().push(extra);
    assert_invalid(&more, "102 endpoints");
}

#[test]
fn monitored_output_matches_schema() {
    // The in-process server runs in this test process, so --pid is our own pid.
    let pid = std::process::id().to_string();
    let doc = run_volley(&["-d", "1500ms", "--pid", &pid]);
    check_real_output(&doc, "--pid");
    let s = &doc["server"];
    assert!(s.is_object(), "server block present");
    // `pids` is sorted, and a child forked after a pid wrap-around has a smaller one.
    let pids: Vec<u64> = s["pids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_u64())
        .collect();
    assert!(pids.contains(&(std::process::id() as u64)), "{pids:?}");
    assert!(!s["samples"].as_array().unwrap().is_empty());
    // Syscalls: counted, or null with the reason.
    assert!(s["syscalls"].is_u64() || s["syscalls_unavailable_reason"].is_string());
    for (what, broken_doc) in [
        (
            "server.per_request.cpu_us as a string",
            broken(&doc, |d| {
                d["server"]["per_request"]["cpu_us"] = json!("8.2")
            }),
        ),
        (
            "server without cpu_user_s",
            broken(&doc, |d| {
                d["server"].as_object_mut().unwrap().remove("cpu_user_s");
            }),
        ),
        (
            "server sample without t_s",
            broken(&doc, |d| {
                d["server"]["samples"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("t_s");
            }),
        ),
        (
            "syscalls_top entry without a count",
            broken(&doc, |d| {
                d["server"]["syscalls_top"] = json!([{"name": "read"}]);
            }),
        ),
        (
            "negative context switches",
            broken(&doc, |d| d["server"]["ctx_switches_voluntary"] = json!(-1)),
        ),
    ] {
        assert_invalid(&broken_doc, what);
    }
}

/// Returns a copy of `doc` with `f` applied.
fn broken(doc: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut d = doc.clone();
    f(&mut d);
    d
}

#[test]
fn schema_rejects_broken_documents() {
    let good = closed_loop_output();
    assert_valid(good, "baseline");

    let cases: Vec<(&str, Value)> = vec![
        (
            "latency_us.p99 as a string",
            broken(good, |d| d["latency_us"]["p99"] = json!("85")),
        ),
        (
            "requests missing",
            broken(good, |d| {
                d.as_object_mut().unwrap().remove("requests");
            }),
        ),
        (
            "requests.unsent missing",
            broken(good, |d| {
                d["requests"].as_object_mut().unwrap().remove("unsent");
            }),
        ),
        (
            "wrong schema id",
            broken(good, |d| d["schema"] = json!("volley.run/2")),
        ),
        (
            "load.mode outside the enum",
            broken(good, |d| d["load"]["mode"] = json!("burst")),
        ),
        (
            "percentile as a float",
            broken(good, |d| d["service_time_us"]["p50"] = json!(27.5)),
        ),
        (
            "mean as a string",
            broken(good, |d| d["latency_us"]["mean"] = json!("29.8")),
        ),
        (
            "percentile key missing",
            broken(good, |d| {
                d["latency_us"].as_object_mut().unwrap().remove("p99_999");
            }),
        ),
        (
            "status code key not 3 digits",
            broken(good, |d| d["status_codes"]["OK"] = json!(1)),
        ),
        (
            "status count negative",
            broken(good, |d| d["status_codes"]["200"] = json!(-1)),
        ),
        (
            "unknown error kind",
            broken(good, |d| d["errors"]["dns"] = json!(0)),
        ),
        (
            "error kind missing",
            broken(good, |d| {
                d["errors"].as_object_mut().unwrap().remove("reset");
            }),
        ),
        (
            "started_at without microseconds",
            broken(good, |d| d["started_at"] = json!("2024-01-02T03:04:05Z")),
        ),
        (
            "started_at with milliseconds",
            broken(good, |d| {
                d["started_at"] = json!("2024-01-02T03:04:05.123Z")
            }),
        ),
        (
            "timeseries latency as a string",
            broken(good, |d| d["timeseries"][0]["latency_p99_us"] = json!("85")),
        ),
        (
            "timeseries point missing t_s",
            broken(good, |d| {
                d["timeseries"][0].as_object_mut().unwrap().remove("t_s");
            }),
        ),
        (
            "server neither null nor object",
            broken(good, |d| d["server"] = json!("none")),
        ),
        (
            "server missing",
            broken(good, |d| {
                d.as_object_mut().unwrap().remove("server");
            }),
        ),
        (
            "histogram not V2 compressed base64",
            broken(good, |d| d["latency_hdr"] = json!("aGVsbG8=")),
        ),
        (
            "closed loop with schedule lag",
            broken(good, |d| d["schedule_lag_us"] = d["latency_us"].clone()),
        ),
        (
            "warmup without counters",
            broken(good, |d| d["warmup"] = json!({"duration_s": 1.0})),
        ),
        (
            "warnings not strings",
            broken(good, |d| d["warnings"] = json!([1])),
        ),
    ];
    for (what, doc) in &cases {
        assert_invalid(doc, what);
    }

    // What the contract allows must pass: unknown keys anywhere, empty histograms (all null),
    // a monitored server, optional `users`.
    let allowed: Vec<(&str, Value)> = vec![
        (
            "unknown top-level key",
            broken(good, |d| d["future_key"] = json!({"x": 1})),
        ),
        (
            "unknown nested key",
            broken(good, |d| d["requests"]["retried"] = json!(0)),
        ),
        (
            "empty histogram statistics are null",
            broken(good, |d| {
                for k in [
                    "min", "mean", "stdev", "max", "p50", "p75", "p90", "p95", "p99", "p99_9",
                    "p99_99", "p99_999",
                ] {
                    d["latency_us"][k] = Value::Null;
                }
            }),
        ),
        (
            "ramp users in the time series",
            broken(good, |d| d["timeseries"][0]["users"] = json!(10)),
        ),
        (
            "started_at with an offset",
            broken(good, |d| {
                d["started_at"] = json!("2024-01-02T03:04:05.123456+02:00")
            }),
        ),
        (
            "monitored server",
            broken(good, |d| {
                d["server"] = json!({
                    "pids": [1234], "cpu_user_s": 0.5, "cpu_sys_s": 0.25, "rss_max_bytes": 1048576,
                    "threads_max": 4, "ctx_switches_voluntary": 10, "ctx_switches_involuntary": 2,
                    "syscalls": null, "syscalls_top": [{"name": "epoll_wait", "count": 3}],
                    "io_calls_read": 1, "io_calls_write": 1, "io_bytes_read": 10, "io_bytes_written": 10,
                    "per_request": {"cpu_us": 1.5, "user_us": 1.0, "sys_us": 0.5, "ctx_switches": 0.01, "syscalls": null},
                    "samples": [{"t_s": 1.0, "cpu_user_pct": 150.0, "cpu_sys_pct": 20.0, "rss_bytes": 1048576, "threads": 4}],
                    "extra": true
                })
            }),
        ),
    ];
    for (what, doc) in &allowed {
        let errs = errors(doc);
        assert!(
            errs.is_empty(),
            "{what}: rejected although allowed:\n{}",
            errs.join("\n")
        );
    }
}

use crate::common;

/// `schema/capacity.schema.json` against `tests/fixtures/report/capacity/capacity.json` (a
/// real `volley capacity` with its closed loop and --pid; the e2e tests check fresh output):
/// the fixture passes and names no key the schema does not describe, a copy with an `error`
/// (written only when a step could not run) too; broken copies fail; a key the schema does
/// not name is allowed by the schema (readers ignore unknown keys) but reported.
#[test]
fn capacity_results_match_their_schema_which_names_every_key() {
    use common::capacity::capacity_schema_errors;
    use volley::result::capacity::CapacityResult;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/capacity/capacity.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let good: Value = serde_json::from_str(&text).unwrap();
    let errs = capacity_schema_errors(&good);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    // A sweep's (`sweep`, and steps with a `window`) too.
    let sweep = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/capacity-sweep/capacity.json"
    );
    let sweep: Value = serde_json::from_str(&std::fs::read_to_string(sweep).unwrap()).unwrap();
    assert!(sweep["sweep"].is_object() && sweep["steps"][0]["window"].is_object());
    let errs = capacity_schema_errors(&sweep);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    // Everything CapacityResult writes: the fixture read and written again, with the keys
    // that are written only sometimes.
    let mut r = CapacityResult::from_json(&text).unwrap();
    r.error = Some("the monitored server exited".into());
    r.notes = vec!["the server was still busy after 10 s before the 875 req/s step".into()];
    let written = serde_json::to_value(&r).unwrap();
    for key in ["error", "closed_loop", "env", "server_cores", "repeat_rule"] {
        assert!(!written[key].is_null(), "{key}");
    }
    let errs = capacity_schema_errors(&written);
    assert!(errs.is_empty(), "{}", errs.join("\n"));

    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/capacity.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let cases: Vec<(&str, Value)> = vec![
        (
            "wrong schema id",
            broken(&good, |d| d["schema"] = json!("volley.capacity/2")),
        ),
        (
            "steps missing",
            broken(&good, |d| {
                d.as_object_mut().unwrap().remove("steps");
            }),
        ),
        (
            "verdict outside the enum",
            broken(&good, |d| d["steps"][0]["verdict"] = json!("maybe")),
        ),
        (
            "limited_by outside the enum",
            broken(&good, |d| d["limited_by"] = json!("cpu")),
        ),
        (
            "a negative count",
            broken(&good, |d| d["steps"][0]["completed"] = json!(-1)),
        ),
        (
            "lag as a float",
            broken(&good, |d| d["steps"][0]["schedule_lag_p99_us"] = json!(1.5)),
        ),
        (
            "step latency without p99",
            broken(&good, |d| {
                d["steps"][0]["latency_us"]
                    .as_object_mut()
                    .unwrap()
                    .remove("p99");
            }),
        ),
        (
            "closed loop throughput as a string",
            broken(&good, |d| {
                d["closed_loop"]["throughput_rps"] = json!("954.9")
            }),
        ),
        (
            "closed loop without its file",
            broken(&good, |d| {
                d["closed_loop"].as_object_mut().unwrap().remove("path");
            }),
        ),
        (
            "server_cores zero",
            broken(&good, |d| d["server_cores"] = json!(0)),
        ),
        (
            "notes not strings",
            broken(&good, |d| d["notes"] = json!([1])),
        ),
        (
            "env without cores",
            broken(&good, |d| {
                d["env"].as_object_mut().unwrap().remove("cores");
            }),
        ),
        ("error as null", broken(&good, |d| d["error"] = Value::Null)),
    ];
    for (what, doc) in &cases {
        assert!(
            !v.is_valid(doc),
            "{what}: a broken document passed the schema"
        );
    }
    // Unknown keys: valid, and each named as undocumented.
    for (at, doc) in [
        ("/future_key", broken(&good, |d| d["future_key"] = json!(1))),
        (
            "/steps/2/retries",
            broken(&good, |d| d["steps"][2]["retries"] = json!(0)),
        ),
        (
            "/closed_loop/extra",
            broken(&good, |d| d["closed_loop"]["extra"] = json!(true)),
        ),
        (
            "/env/pinning/numa",
            broken(&good, |d| d["env"]["pinning"]["numa"] = json!("0")),
        ),
        (
            "/bracket/mid_rps",
            broken(&good, |d| d["bracket"]["mid_rps"] = json!(900)),
        ),
        (
            "/steps/0/latency_us/p99_9999",
            broken(&good, |d| {
                d["steps"][0]["latency_us"]["p99_9999"] = json!(1)
            }),
        ),
    ] {
        assert!(v.is_valid(&doc), "{at}: readers must accept unknown keys");
        assert_eq!(
            capacity_schema_errors(&doc),
            [format!("{at}: written but not in the schema")],
        );
    }
}
