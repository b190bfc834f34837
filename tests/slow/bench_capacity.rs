//! `volley bench` with a `capacity = {…}` scenario: each cell searches the capacity of its
//! server (one server process for the whole search), keeps every step in `runs/<cell>/`, and
//! the suite's index, table, Markdown, CSV and HTML rank the servers by the rate they sustain
//! within the SLO beside their closed-loop maximum. The server is `volley serve`'s
//! `/delay?ms=N` over few connections: a known capacity of connections ÷ N ms.

use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::{bench_suite, checked_suite_index, output_text, scratch};

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

#[test]
fn a_capacity_scenario_ranks_servers_by_sustainable_rate() {
    let dir = scratch("bench-capacity", "rank");
    // Two servers of different capacities over 4 connections: 4 ÷ 5 ms = 800 req/s and
    // 4 ÷ 20 ms = 200 req/s at most (each connection waits for its response). One plain
    // scenario beside it keeps both kinds of cell in one folder.
    let suite = format!(
        r#"[suite]
name = "cap"
warmup = "500ms"
duration = "1s"

[[server]]
name = "fast"
start = "{VOLLEY} serve --port {{port}}"

[[server]]
name = "slow"
start = "{VOLLEY} serve --port {{port}}"

[[scenario]]
name = "plain"
path = "/"
connections = 2
servers = ["fast"]

[[scenario]]
name = "search"
path = "/delay?ms=5"
connections = 4
servers = ["fast"]
capacity = {{ slo = "p99<40ms", start_rate = 200, precision = "20%", repeat = 1 }}

[[scenario]]
name = "search-slow"
path = "/delay?ms=20"
connections = 4
servers = ["slow"]
capacity = {{ slo = "p99<100ms", start_rate = 50, precision = "20%", repeat = 1, closed_loop = false }}
"#
    );
    let (o, out) = bench_suite(&dir, &suite, &[]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let idx: Value = checked_suite_index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{text}");
    // The plain cell is a RunResult with a headline; the search cells are not.
    assert!(rows[0]["headline"].is_object() && rows[0]["capacity"].is_null());
    for (row, cap) in [(&rows[1], 800.0), (&rows[2], 200.0)] {
        assert_eq!(row["status"], "ok", "{row}");
        assert!(row["headline"].is_null());
        let c = &row["capacity"];
        let max = c["max_rate_rps"]
            .as_f64()
            .unwrap_or_else(|| panic!("{row}\n{text}"));
        // Within the precision of the known capacity (a little under it: sleeps overshoot,
        // and the knee of a 1 s step is soft), or a lower bound when the client was the limit.
        if c["limited_by"] == "slo" {
            assert!(
                (cap * 0.6..=cap * 1.2).contains(&max),
                "{max} vs {cap}: {row}"
            );
        } else {
            assert_eq!(c["limited_by"], "client", "{row}");
        }
        let path = out.join(row["path"].as_str().unwrap());
        assert!(path.ends_with("capacity.json"), "{path:?}");
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(j["schema"], "volley.capacity/1");
        let steps = j["steps"].as_array().unwrap();
        assert_eq!(c["steps"].as_u64(), Some(steps.len() as u64));
        // Every step is a RunResult in the cell's folder, monitored (the server's CPU).
        for s in steps {
            let p = out.join(s["path"].as_str().unwrap());
            assert!(p.starts_with(path.parent().unwrap()), "{p:?}");
            let r: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            assert_eq!(r["load"]["mode"], "open");
            assert_eq!(r["load"]["connections"], 4);
            assert!(
                r["server"].is_object(),
                "a step of a managed server is monitored"
            );
            assert!(
                r["argv"].as_array().unwrap().iter().any(|a| a == "-R"),
                "a step's argv names its rate: {}",
                r["argv"]
            );
        }
        assert!(s_cpu(steps), "server CPU per step: {steps:?}");
        assert!(j["server_cores"].is_number(), "{j}");
    }
    // The closed-loop reference where asked for, not where turned off.
    assert!(rows[1]["capacity"]["closed_loop_rps"].as_f64().unwrap() > 0.0);
    assert!(rows[2]["capacity"]["closed_loop_rps"].is_null());
    // The table ranks the servers of each search; the reports hold the same.
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("search: highest open-loop rate within p99<40ms"),
        "{all}"
    );
    assert!(
        all.contains("Max sustainable rate"),
        "the progress says each answer: {all}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("### search (capacity)") && md.contains("sustainable req/s"),
        "{md}"
    );
    let csv = std::fs::read_to_string(out.join("capacity.csv")).unwrap();
    assert!(
        csv.starts_with("server,scenario,axes,rep,step,target_rps"),
        "{csv}"
    );
    assert!(csv.contains(",closed-loop,"), "{csv}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("data-chart=\"capacity-latency\""),
        "the curve's slot"
    );
    // `volley report` of the folder renders the same ranking.
    let o = common::volley(&["report", out.to_str().unwrap()], Duration::from_secs(30));
    let again = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        again.contains("search-slow: highest open-loop rate"),
        "{}",
        output_text(&o)
    );
}

/// Some step has the server's CPU.
fn s_cpu(steps: &[Value]) -> bool {
    steps
        .iter()
        .any(|s| s["server_cpu_pct"].as_f64().is_some_and(|v| v > 0.0))
}

#[test]
fn a_capacity_scenario_cannot_set_the_rate() {
    let dir = scratch("bench-capacity", "rate");
    let suite = format!(
        "[suite]\nname = \"x\"\n[[server]]\nname = \"a\"\nstart = \"{VOLLEY} serve --port {{port}}\"\n[[scenario]]\nname = \"s\"\nrate = 100\ncapacity = {{ slo = \"p99<1ms\" }}\n"
    );
    let (o, _) = bench_suite(&dir, &suite, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("suite.toml:8:8") && e.contains("`rate` cannot be combined with `capacity`"),
        "{e}"
    );
}
