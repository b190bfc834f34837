//! The HTML report in a real browser. `volley report` renders the fixtures (a real quick suite,
//! a suite of failing and control servers, a single open-loop run, a run of rate stages, all
//! of them together, a suite whose names are markup, and a capacity search), and `volley
//! capacity` writes the page of a short search of its own; headless Chromium loads each page
//! from a file, and the
//! page's own self-test (`#selftest`, written by report.js) says whether any script error,
//! console error, CSP violation or alert happened, how many charts were drawn with data, how
//! many script elements exist, and whether sorting works. A screenshot must not be blank.
//!
//! Chromium is required: when it is missing the browser tests fail and say how to install it.
//! The checks of the page's structure that need no browser (the verdict first, the columns a
//! single run leaves out, the style that keeps tables within the page) run without it; with
//! it, every page is measured at a 1400 px wide window: nothing may scroll sideways.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

/// One browser at a time: the machine has two cores and Chromium wants all of them.
pub(crate) static BROWSER: Mutex<()> = Mutex::new(());

/// Script elements of every page: the self-test hooks, the JSON data, uPlot, report.js.
pub(crate) const SCRIPTS: usize = 4;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report")
}

/// `volley report INPUTS --html OUT` in a temporary folder; returns the folder and the page.
fn render(inputs: &[PathBuf]) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["--html".into(), out.display().to_string()]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = common::volley(&argv, Duration::from_secs(60));
    assert!(
        o.status.success(),
        "volley {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    (dir, out, html)
}

/// The page cannot reach the network: the CSP is there, and no element refers to anything
/// but the page itself or `data:` (scripts and styles are inline).
pub(crate) fn assert_offline(html: &str) {
    assert!(
        html.contains(
            r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">"#
        ),
        "no CSP meta element"
    );
    let markup = without_element_content(html);
    let lower = markup.to_ascii_lowercase();
    assert!(!lower.contains("<script src"), "external script");
    assert!(!lower.contains("rel=\"stylesheet\""), "external stylesheet");
    assert!(!lower.contains("<iframe") && !lower.contains("<object"));
    // Text is escaped, so every `<` left starts a tag; look at attributes inside tags only.
    let mut tags = 0;
    for tag in lower.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or("");
        tags += 1;
        for attr in [
            " src=",
            " href=",
            " action=",
            " srcset=",
            " poster=",
            " formaction=",
        ] {
            let mut rest = tag;
            while let Some(i) = rest.find(attr) {
                let value = rest[i + attr.len()..].trim_start_matches(['"', '\'']);
                assert!(
                    value.starts_with('#') || value.starts_with("data:"),
                    "{attr} refers outside the page: <{tag}>"
                );
                rest = &rest[i + attr.len()..];
            }
        }
    }
    assert!(tags > 100, "the scan found the tags");
}

/// The HTML without the contents of script and style elements (their text is code, not
/// attributes).
fn without_element_content(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    loop {
        let lower = rest.to_ascii_lowercase();
        let next = ["<script", "<style"]
            .iter()
            .filter_map(|t| lower.find(t).map(|i| (i, *t)))
            .min();
        let Some((i, tag)) = next else {
            out.push_str(rest);
            return out;
        };
        let open_end = i + lower[i..].find('>').expect("tag closes");
        out.push_str(&rest[..=open_end]);
        let close = format!("</{}", &tag[1..]);
        let j = lower[open_end..].find(&close).expect("element closes") + open_end;
        rest = &rest[j..];
    }
}

/// What a page must show in the browser.
pub(crate) struct Expect {
    /// Chart slots the page has (each must become a chart with data, drawn).
    pub(crate) charts: usize,
    /// Whether a table must be sortable (pages with three comparable rows).
    pub(crate) sorts: bool,
}

/// Loads the page, checks its self-test against `expect`, and returns the DOM after the
/// scripts ran.
pub(crate) fn check_in_browser(page: &Path, html: &str, expect: Expect) -> String {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let out = common::cdp::headless(page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (attrs, text) = common::cdp::selftest(&dom);
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("self-test did not write data-{k}: {attrs:?}"))
    };
    assert_eq!(get("done"), "1");
    assert_eq!(get("errors"), "0", "script or console errors: {text}");
    assert_eq!(
        get("violations"),
        "0",
        "CSP violations (a request was tried): {text}"
    );
    assert_eq!(get("alerts"), "0", "an alert ran: injected script");
    assert_eq!(get("scripts"), SCRIPTS.to_string(), "script elements");
    let slots = html.matches("class=\"chart\"").count();
    assert_eq!(slots, expect.charts, "chart slots in the HTML");
    assert_eq!(get("slots"), slots.to_string());
    assert_eq!(get("charts"), slots.to_string(), "charts created");
    assert_eq!(get("with-data"), slots.to_string(), "charts with data");
    assert_eq!(
        get("drawn"),
        slots.to_string(),
        "charts with coloured pixels"
    );
    if expect.sorts {
        assert_eq!(get("sort"), "ok", "sorting a table");
    }
    dom
}

/// A screenshot of the page is neither blank nor a single colour.
pub(crate) fn check_screenshot(page: &Path) -> PathBuf {
    let shot = page.with_extension("png");
    {
        let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
        let out = common::cdp::headless(
            page,
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1280,2400",
            ],
        );
        assert!(
            out.status.success() && shot.is_file(),
            "no screenshot: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 2400));
    let channels = info.color_type.samples();
    assert!(channels >= 3, "colour screenshot");
    let pixels = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let (mut ink, mut coloured) = (0usize, 0usize);
    for px in pixels.chunks_exact(channels) {
        let (r, g, b) = (px[0], px[1], px[2]);
        colours.insert((r, g, b));
        if (r, g, b) != (255, 255, 255) {
            ink += 1;
        }
        if r.max(g).max(b) - r.min(g).min(b) > 60 {
            coloured += 1;
        }
    }
    let total = (info.width * info.height) as usize;
    assert!(
        ink > total / 20,
        "screenshot nearly blank: {ink} of {total} pixels not white"
    );
    assert!(colours.len() > 200, "only {} colours", colours.len());
    // The page without its script (no charts) has about 500 coloured pixels (links and
    // swatches); a single run's five charts about 8,000, a suite's tens of thousands.
    assert!(
        coloured > 4_000,
        "charts missing: {coloured} coloured pixels"
    );
    shot
}

#[test]
fn quick_suite_report_in_a_browser() {
    let (_dir, page, html) = render(&[fixtures().join("quick")]);
    assert_offline(&html);
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
    // Per scenario: percentile, throughput, rps and latency over time, RSS, and six CPU charts.
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 2 * (5 + 6),
            sorts: true,
        },
    );
    for server in ["go", "node", "python", "java", "rust", "nginx"] {
        assert!(
            dom.contains(&format!("</span>{server}</td>")),
            "{server} has no table cell"
        );
    }
    assert!(dom.contains("rust is fastest"), "no verdict");
    check_screenshot(&page);
}

#[test]
fn failing_servers_and_a_control_in_a_browser() {
    let (_dir, page, html) = render(&[fixtures().join("faults")]);
    assert_offline(&html);
    // Per scenario (connections 2 and 8): percentile, throughput (two repetitions: whiskers),
    // rps and latency over time, RSS, and one CPU chart (the control has no server).
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 2 * (5 + 1),
            sorts: true,
        },
    );
    assert!(dom.contains("0 of 2 runs finished"));
    assert!(dom.contains("failed: exited with status 4 before it was ready (reps 1, 2)"));
    assert!(dom.contains("fatal: config broken"), "stderr tail shown");
    assert!(dom.contains("class=\"badge control\""));
    assert!(dom.contains("connect 72"), "connect errors of the control");
    check_screenshot(&page);
}

#[test]
fn single_runs_in_a_browser() {
    // An open-loop run: the percentile plot has a service-time line too.
    let (_dir, page, html) = render(&[fixtures().join("open-loop.json")]);
    assert_offline(&html);
    assert!(html.contains("\"service\":true"), "service-time curve");
    // Percentile, rps and latency over time, RSS, one CPU chart: one bar is no chart.
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 5,
            sorts: false,
        },
    );
    assert!(
        dom.contains("2,000.0 req/s, uniform"),
        "open-loop rate shown"
    );
    check_screenshot(&page);

    // A run too short for lines over time (one second, one sample): those charts are left out
    // rather than drawn empty.
    let short = tempfile::tempdir().unwrap();
    let mut r: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("open-loop.json")).unwrap())
            .unwrap();
    r["timeseries"].as_array_mut().unwrap().truncate(1);
    r["server"]["samples"].as_array_mut().unwrap().truncate(1);
    let one = short.path().join("one-second.json");
    std::fs::write(&one, r.to_string()).unwrap();
    let (_dir, page, html) = render(&[one]);
    assert!(html.contains("Server cost per request"), "the tables stay");
    check_in_browser(
        &page,
        &html,
        Expect {
            charts: 1,
            sorts: false,
        },
    );

    // A closed-loop run out of a suite's folder.
    let (_dir, page, html) = render(&[fixtures().join("quick/runs/nginx__post-1k__r1.json")]);
    assert_offline(&html);
    assert!(!html.contains("\"service\":true"), "closed loop: one curve");
    check_in_browser(
        &page,
        &html,
        Expect {
            charts: 5,
            sorts: false,
        },
    );
}

#[test]
fn a_rate_stage_run_in_a_browser() {
    // A real run of 0 → 2,000/s → 500/s: the throughput over time has what was sent and the
    // stages' target (dashed) beside the completed responses, from the page's data.
    let (_dir, page, html) = render(&[fixtures().join("rate-stages.json")]);
    assert_offline(&html);
    let data = page_data(&html);
    let s = &data["groups"][0]["over_time"][0];
    assert_eq!(
        s["target_rps"],
        serde_json::json!([500.0, 1500.0, 2000.0, 2000.0, 1250.0])
    );
    assert_eq!(numbers(&s["sent_rps"]), 5);
    assert!(html.contains("and the target of the stages (dashed)</figcaption>"));
    // Percentile, rps and latency over time, RSS, one CPU chart.
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 5,
            sorts: false,
        },
    );
    // uPlot's legend names the three series of the run.
    for series in ["completed", "sent", "target"] {
        assert!(
            dom.contains(&format!("(rep 1) {series}</div>")),
            "no {series} series in the legend"
        );
    }
    check_screenshot(&page);

    // A run at one rate keeps its one line a repetition.
    let (_dir, page, html) = render(&[fixtures().join("open-loop.json")]);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 5,
            sorts: false,
        },
    );
    assert!(!dom.contains("(rep 1) target</div>") && !dom.contains("(rep 1) sent</div>"));
}

#[test]
fn several_results_in_one_report() {
    let f = fixtures();
    let (_dir, page, html) = render(&[f.join("quick"), f.join("faults"), f.join("open-loop.json")]);
    assert_offline(&html);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 2 * 11 + 2 * 6 + 5,
            sorts: true,
        },
    );
    assert!(dom.contains("3 results"));
    assert!(dom.contains("suite quick (suites/quick.toml, done)"));
    assert!(dom.contains("suite smoke (s.toml, done)"));
}

#[test]
fn gc_pauses_in_a_browser() {
    // A JVM run with 40 G1 pauses over 10 s (`server.gc` from its log): pause markers on the
    // latency-over-time chart, a pause scatter, the allocation rate, and the GC table.
    let (_dir, page, html) = render(&[fixtures().join("gc-run.json")]);
    assert_offline(&html);
    assert!(
        html.contains("\"pause_ms\":[3.843"),
        "pauses in the page's data"
    );
    assert!(html.contains("data-chart=\"gc-pauses\""));
    assert!(html.contains("data-chart=\"gc-alloc\""));
    assert!(
        html.contains("GC pauses: diamonds on stems"),
        "markers named"
    );
    // Percentile, rps, latency over time (with the pauses), pause scatter, allocation rate,
    // RSS, one CPU chart.
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 7,
            sorts: false,
        },
    );
    assert!(dom.contains("<h3 id=\"gc\">Garbage collection</h3>"));
    assert!(dom.contains("<td>jvm-log</td>"));
    assert!(dom.contains(">71% of 20</td>"), "overlap share shown");
    assert!(
        dom.contains("safepoint time outside GC pauses"),
        "note shown"
    );
    check_screenshot(&page);

    // Without `server.gc` nothing of it appears.
    let (_dir, _page, html) = render(&[fixtures().join("open-loop.json")]);
    // (report.js, inline in every page, names the chart kinds: look at the markup and data.)
    for absent in [
        "<h3 id=\"gc\">",
        "data-chart=\"gc-pauses\"",
        "data-chart=\"gc-alloc\"",
        "GC pauses: diamonds",
    ] {
        assert!(!html.contains(absent), "{absent} in a page without GC");
    }
    assert!(html.contains("\"gc\":[]"), "no GC series in the data");
}

#[test]
fn a_profiled_run_in_a_browser() {
    // A run whose server.profile names folded stacks beside it, with markup in the names: the
    // report's flame graph draws them as text, after the run's other charts.
    let dir = tempfile::tempdir().unwrap();
    let mut r: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("gc-run.json")).unwrap())
            .unwrap();
    r["server"]["profile"] = serde_json::json!({
        "path": "r.folded", "event": "cpu-clock", "frequency_hz": 499, "samples": 115,
        "lost": 0, "dropped": 0, "cpu_us_per_request": 12.5, "processes": [], "top": []
    });
    let json = dir.path().join("r.json");
    std::fs::write(&json, serde_json::to_string(&r).unwrap()).unwrap();
    std::fs::copy(
        fixtures().join("flame/hostile.folded"),
        dir.path().join("r.folded"),
    )
    .unwrap();
    let (_out, page, html) = render(&[json]);
    assert_offline(&html);
    for raw in ["<img", "<svg", "<b>bold"] {
        assert!(!html.contains(raw), "unescaped `{raw}` in the HTML");
    }
    assert!(html.contains("CPU went"), "no flame graph section");
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 7,
            sorts: true,
        },
    );
    let (attrs, _) = common::cdp::selftest(&dom);
    let drawn = attrs
        .iter()
        .find(|(k, _)| k == "flames-drawn")
        .map(|a| a.1.as_str());
    assert_eq!(drawn, Some("1"), "{attrs:?}");
    for element in ["<img", "<svg", "<b>bold"] {
        assert!(!dom.contains(element), "`{element}` became an element");
    }
    assert!(
        dom.contains(">&lt;svg onload=alert(2)&gt;</div>"),
        "a name as text"
    );
    check_screenshot(&page);
}

#[test]
fn named_requests_in_a_browser() {
    // A real run of three named requests: the per-request percentile plot (one line each,
    // from their histograms) and their table, besides the run's own percentile plot, rps and
    // latency over time.
    let (_dir, page, html) = render(&[fixtures().join("mix.json")]);
    assert_offline(&html);
    let data = page_data(&html);
    let lines = data["groups"][0]["endpoints"].as_array().unwrap();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hello", "post", "missing"]);
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("mix.json")).unwrap())
            .unwrap();
    for (l, e) in lines.iter().zip(run["endpoints"].as_array().unwrap()) {
        assert!(numbers(&l["y_us"]) >= 20, "a curve of points: {l}");
        assert_eq!(
            l["count"], e["requests"]["completed"],
            "its whole histogram"
        );
        assert_eq!(
            l["y_us"].as_array().unwrap().last(),
            Some(&e["latency_us"]["max"]),
            "ending at its max"
        );
    }
    assert_eq!(html.matches("data-chart=\"endpoints\"").count(), 1);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 4,
            sorts: false,
        },
    );
    assert!(dom.contains(">By request</h3>"));
    assert!(
        dom.contains("<td>GET /nope/{rand:1..5}</td>"),
        "the request as written"
    );
    assert!(
        dom.contains(">body_regex 18,685</td>"),
        "the check that failed"
    );
    assert!(dom.contains(">11,227</td>"), "missing's failed responses");
    assert!(dom.contains("requests file mix.toml (3 requests, weighted)"));
    check_screenshot(&page);

    // Without named requests, no chart slot and no table; names that are markup stay text.
    let input = tempfile::tempdir().unwrap();
    let mut none = run.clone();
    none["endpoints"] = Value::Array(Vec::new());
    let none_path = input.path().join("none.json");
    std::fs::write(&none_path, none.to_string()).unwrap();
    let (_dir, page, html) = render(&[none_path]);
    assert!(!html.contains("data-chart=\"endpoints\"") && !html.contains("By request</h3>"));
    check_in_browser(
        &page,
        &html,
        Expect {
            charts: 3,
            sorts: false,
        },
    );
    let mut evil = run;
    evil["endpoints"][0]["name"] = "<img src=x onerror=alert(1)>".into();
    evil["endpoints"][1]["path"] = "/</script><script>alert(2)</script>".into();
    let evil_path = input.path().join("evil.json");
    std::fs::write(&evil_path, evil.to_string()).unwrap();
    let (_dir, page, html) = render(&[evil_path]);
    assert!(!html.contains("<img src=x") && !html.contains("<script>alert(2)"));
    assert_eq!(html.matches("<script").count(), SCRIPTS);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 4,
            sorts: false,
        },
    );
    assert!(dom.contains("<td>&lt;img src=x onerror=alert(1)&gt;</td>"));
    assert!(!dom.contains("<img"), "a name became an element");
}

/// Copies the faults suite with every name, reason, warning and stderr line turned into markup.
fn hostile_suite(dir: &Path) {
    let evil = "<script>alert(1)</script>";
    let img = "\"><img src=x onerror=alert(2)>";
    let src = fixtures().join("faults");
    let rename = |s: &str| match s {
        "volley-serve" => evil.to_string(),
        other => other.to_string(),
    };
    let mut index: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("suite.json")).unwrap()).unwrap();
    for row in index["rows"].as_array_mut().unwrap() {
        row["server"] = Value::from(rename(row["server"].as_str().unwrap()));
        row["scenario"] = Value::from(format!("get{img}"));
        if row["status"] != "ok" {
            row["reason"] = Value::from("</script><script>alert(3)</script>");
            row["stderr_tail"] = serde_json::json!(["<b>bold</b>", "<svg onload=alert(4)>"]);
        }
    }
    for s in index["suite"]["server"].as_array_mut().unwrap() {
        s["name"] = Value::from(rename(s["name"].as_str().unwrap()));
    }
    index["suite"]["suite"]["name"] = Value::from(format!("smoke{evil}"));
    index["env"]["tools"][evil] = Value::from("<i>version</i>");
    std::fs::create_dir_all(dir.join("runs")).unwrap();
    std::fs::write(dir.join("suite.json"), index.to_string()).unwrap();
    for e in std::fs::read_dir(src.join("runs")).unwrap() {
        let p = e.unwrap().path();
        let mut r: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        r["warnings"]
            .as_array_mut()
            .unwrap()
            .push(Value::from("warned <svg onload=alert(5)>"));
        r["status_codes"]["<u>599</u>"] = Value::from(1);
        r["target"]["url"] = Value::from("http://127.0.0.1:1/</script><script>alert(6)</script>");
        if p.to_string_lossy()
            .contains("volley-serve__get__connections-2__r1")
        {
            r["client"]["saturated"] = Value::from(true);
            r["thresholds"] = serde_json::json!([
                {"threshold": "p99<1ms<img src=x onerror=alert(7)>", "actual": 2.5, "pass": false}
            ]);
        }
        std::fs::write(dir.join("runs").join(p.file_name().unwrap()), r.to_string()).unwrap();
    }
}

#[test]
fn markup_in_names_renders_as_text() {
    let input = tempfile::tempdir().unwrap();
    hostile_suite(input.path());
    let (_dir, page, html) = render(&[input.path().to_path_buf()]);
    assert_offline(&html);
    for raw in [
        "<script>alert",
        "<img src=x",
        "<svg",
        "<b>bold",
        "<i>version",
        "<u>599",
    ] {
        assert!(!html.contains(raw), "unescaped `{raw}` in the HTML");
    }
    assert_eq!(html.matches("<script").count(), SCRIPTS);
    assert_eq!(html.matches("</script").count(), SCRIPTS);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 2 * (5 + 1),
            sorts: false,
        },
    );
    // The server's name is text in its table cell, and nothing was turned into an element.
    assert!(
        dom.contains("</span>&lt;script&gt;alert(1)&lt;/script&gt;"),
        "escaped server name not in a cell"
    );
    assert!(dom.contains("&lt;b&gt;bold&lt;/b&gt;"));
    for element in ["<img", "<svg", "<b>bold", "<i>", "<u>"] {
        assert!(!dom.contains(element), "`{element}` became an element");
    }
    // The flags are still there for what they warn about.
    assert!(dom.contains("client saturated"));
    assert!(dom.contains("FAIL"));
}

/// `open-loop.json` as `volley run --threshold ... --html` would have written it with three
/// thresholds (one broken) and two headline warnings.
fn single_run_with_verdict(dir: &Path) -> PathBuf {
    let mut r: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("open-loop.json")).unwrap())
            .unwrap();
    r["thresholds"] = serde_json::json!([
        {"threshold": "p99<1us", "actual": 1459199.0, "pass": false},
        {"threshold": "errors<1", "actual": 0.0, "pass": true},
        {"threshold": "rps>100", "actual": 2000.0, "pass": true}
    ]);
    let warnings = r["warnings"].as_array_mut().unwrap();
    warnings.insert(0, Value::from(LOWER_BOUND));
    warnings.insert(0, Value::from(FAILED));
    let path = dir.join("verdict.json");
    std::fs::write(&path, r.to_string()).unwrap();
    path
}

/// Headline warnings, as `volley run` words them.
const LOWER_BOUND: &str = "corrected percentiles are lower bounds: they include 220,991 requests \
                           due but never sent, each at its wait until the end of the send window";
const FAILED: &str =
    "all 79,009 responses were 404; they count as requests.failed (threshold `failed<1%`), not as errors";

/// The page's own style sheet (report.css), out of a rendered page.
fn page_css(html: &str) -> &str {
    let start = html
        .find("<style>/* volley HTML report")
        .expect("report.css is inlined");
    &html[start..start + html[start..].find("</style>").unwrap()]
}

#[test]
fn a_single_run_leads_with_its_verdict_and_only_the_columns_that_say_something() {
    let dir = tempfile::tempdir().unwrap();
    let (_out, _page, html) = render(&[single_run_with_verdict(dir.path())]);
    let verdict = html
        .find("<section id=\"verdict\"")
        .expect("a verdict block");
    let first_chart = html.find("class=\"chart\"").expect("charts");
    let first_number = html.find("<section class=\"group\"").unwrap();
    assert!(
        verdict < first_chart && verdict < first_number,
        "the verdict comes first"
    );
    let block = &html[verdict..verdict + html[verdict..].find("</section>").unwrap()];
    assert!(block.contains("Thresholds: 1 of 3 broken"), "{block}");
    assert!(
        block.contains("<code>p99&lt;1us</code>: measured 1.46 s"),
        "{block}"
    );
    assert!(
        block.contains("<code>rps&gt;100</code>: measured 2,000.0 req/s"),
        "{block}"
    );
    for w in [LOWER_BOUND, FAILED] {
        let w = w.replace('`', "&#96;").replace('<', "&lt;");
        assert!(
            block.contains(&w) || block.contains(&w.replace("&#96;", "`")),
            "headline warning missing from the verdict: {w}\n{block}"
        );
    }
    assert_eq!(
        html.matches("corrected percentiles are lower bounds")
            .count(),
        1,
        "a headline warning is shown once, at the top"
    );
    // One run: no comparison with itself, no median of one, no range of one value.
    for noise in [
        "vs fastest",
        "(median of 1)",
        "<th>min</th><th>max</th>",
        "<th>runs</th>",
    ] {
        assert!(!html.contains(noise), "`{noise}` on a single run's page");
    }
    assert!(
        html.contains("2,000.0 req/s."),
        "the single run's throughput sentence"
    );
    // Tables stay within the page: text wraps, headers wrap, no cell has a minimum width.
    let css = page_css(&html);
    assert!(css.contains("overflow-wrap: anywhere"), "{css}");
    assert!(
        css.match_indices("min-width:")
            .all(|(i, _)| css[i..].starts_with("min-width: 0;")),
        "a minimum width can push a table past the page: {css}"
    );
    let th = &css[css.find("\nth {").expect("a th rule")..];
    let th = &th[..th.find('}').unwrap()];
    assert!(th.contains("white-space: normal"), "headers wrap: {th}");
}

#[test]
fn a_suite_keeps_its_comparisons() {
    let (_dir, _page, html) = render(&[fixtures().join("quick")]);
    assert!(html.contains("<th>vs fastest</th>"));
    assert!(
        html.contains("No threshold was set"),
        "the verdict says nothing broke"
    );
    assert!(html.find("id=\"verdict\"").unwrap() < html.find("class=\"chart\"").unwrap());
}

/// Loads `page` in a `width` px wide window, opens every `<details>`, and returns the
/// document's scroll width and a description of every box that scrolls sideways.
fn measure_width(page: &Path, html: &str, width: u32) -> (u32, Vec<String>) {
    let script = r#"<script>
setTimeout(function () {
  Array.prototype.forEach.call(document.querySelectorAll('details'), function (d) { d.open = true; });
  var wide = [];
  Array.prototype.forEach.call(document.querySelectorAll('body *'), function (el) {
    if (getComputedStyle(el).overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 1) {
      var th = Array.prototype.map.call(el.querySelectorAll('th'), function (t) { return t.textContent; });
      wide.push(el.tagName + ' ' + el.scrollWidth + ' > ' + el.clientWidth + ' px: ' + th.join(', '));
    }
  });
  var m = document.createElement('div');
  m.id = 'measured';
  m.setAttribute('data-scroll-width', document.documentElement.scrollWidth);
  m.textContent = wide.join(' | ');
  document.body.appendChild(m);
}, 600);
</script></body>"#;
    let measured = page.with_extension("measure.html");
    std::fs::write(&measured, html.replacen("</body>", script, 1)).unwrap();
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let out = common::cdp::headless(
        &measured,
        &["--dump-dom", &format!("--window-size={width},1000")],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<div id=\"measured\"").unwrap_or_else(|| {
        panic!(
            "the measuring script did not run:\n{}",
            common::cdp::tail(&dom)
        )
    });
    let tag = &dom[start..start + dom[start..].find('>').unwrap()];
    let scroll: u32 = tag
        .split("data-scroll-width=\"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .and_then(|v| v.parse().ok())
        .expect("a scroll width");
    let text_start = start + dom[start..].find('>').unwrap() + 1;
    let text = &dom[text_start..text_start + dom[text_start..].find("</div>").unwrap()];
    let wide = text
        .split(" | ")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    (scroll, wide)
}

#[test]
fn every_page_fits_1400_pixels() {
    let f = fixtures();
    let input = tempfile::tempdir().unwrap();
    let hostile = input.path().join("hostile");
    hostile_suite(&hostile);
    let pages: Vec<Vec<PathBuf>> = vec![
        vec![single_run_with_verdict(input.path())],
        vec![f.join("quick")],
        vec![f.join("faults")],
        vec![f.join("quick"), f.join("faults"), f.join("open-loop.json")],
        vec![hostile],
        vec![f.join("gc-run.json")],
        vec![f.join("capacity")],
        vec![f.join("mix.json")],
    ];
    for inputs in pages {
        let (_dir, page, html) = render(&inputs);
        let (scroll, wide) = measure_width(&page, &html, 1400);
        assert!(
            scroll <= 1400 && wide.is_empty(),
            "{inputs:?} at 1400 px: document {scroll} px wide; scrolling sideways: {wide:#?}"
        );
    }
}

/// `volley compare A B --html`: the answer first, then both sides' series, drawn offline.
#[test]
fn a_verdict_page_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        fixtures().join("quick/runs/go__get__r1.json"),
        dir.path().join("v2.json"),
    );
    std::fs::copy(&a, &b).unwrap();
    let page = dir.path().join("verdict.html");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_offline(&html);
    let answer = html.find("id=\"ab-verdict\"").expect("the answer");
    assert!(
        answer < html.find("class=\"chart\"").unwrap(),
        "before any chart"
    );
    // A's file is in a results folder: its server's name; B's is not: its file's name.
    assert!(
        html.contains("A: go") && html.contains("B: v2"),
        "sides named"
    );
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: html.matches("class=\"chart\"").count(),
            sorts: false,
        },
    );
    assert!(dom.contains("cannot be called"), "the call is on the page");
}

/// A verdict page that cannot be written: exit 3 naming `--html`, after the table.
#[test]
fn an_unwritable_verdict_page_is_named() {
    let a = fixtures().join("quick/runs/go__get__r1.json");
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("v2.json");
    std::fs::copy(&a, &b).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--html")
        .arg(dir.path().join("no/such/dir/page.html"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--html") && err.contains("page.html"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("cannot be called"));
}

/// The page's data block (`<script type="application/json" id="data">`), parsed.
fn page_data(html: &str) -> Value {
    let open = r#"<script type="application/json" id="data">"#;
    let start = html.find(open).expect("a data block") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("the data block is JSON")
}

/// Values of `v` (an array) that are numbers.
fn numbers(v: &Value) -> usize {
    v.as_array()
        .map_or(0, |a| a.iter().filter(|x| x.is_number()).count())
}

/// What a capacity page must draw from `data.capacity[0]`: a latency line per statistic and a
/// CPU line, each with a value at two rates at least (a chart is left out otherwise), the
/// SLO, the rate found and the closed-loop maximum; then the page in the browser, with exactly
/// the two capacity charts, both created, with data and drawn, and no script error or CSP
/// violation.
fn check_capacity_page(page: &Path, html: &str, found: f64, closed_loop: f64, slo_ms: f64) {
    assert_offline(html);
    assert_eq!(html.matches("data-chart=\"capacity-latency\"").count(), 1);
    assert_eq!(html.matches("data-chart=\"capacity-cpu\"").count(), 1);
    let data = page_data(html);
    let c = &data["capacity"][0];
    let stats: Vec<&str> = c["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["stat"].as_str().unwrap())
        .collect();
    assert_eq!(stats, ["p50", "p99", "p99.9"], "{c}");
    for l in c["lines"].as_array().unwrap() {
        assert!(numbers(&l["x"]) >= 2 && numbers(&l["y_ms"]) >= 2, "{l}");
    }
    let cpu = &c["cpu"][0];
    assert!(numbers(&cpu["util_pct"]) >= 2, "no server CPU to draw: {c}");
    assert_eq!(c["knees"][0]["rps"].as_f64(), Some(found));
    assert_eq!(c["closed"][0]["rps"].as_f64(), Some(closed_loop));
    assert_eq!(c["slo"][0]["stat"], "p99");
    assert_eq!(c["slo"][0]["ms"].as_f64(), Some(slo_ms));
    check_in_browser(
        page,
        html,
        Expect {
            charts: 2,
            sorts: true,
        },
    );
}

#[test]
fn a_capacity_search_in_a_browser() {
    // tests/fixtures/report/capacity: a real search of a CPU-bound server (1 ms of CPU a
    // request, pinned to one core) with its closed loop and --pid: 875 req/s within p99<20ms,
    // 955 closed loop, the server's CPU rising to 100 % of its core.
    let (_dir, page, html) = render(&[fixtures().join("capacity")]);
    assert!(
        html.contains("Max sustainable rate: 875 req/s"),
        "the answer"
    );
    assert!(html.contains("Closed-loop maximum over 16 connections: 955 req/s"));
    assert!(
        html.contains("Server CPU against throughput (% of its 1 core"),
        "utilisation of the server's one core"
    );
    let data = page_data(&html);
    // 27.4 % of one core at 250 req/s ... 100.3 % at 1,000: one point per rate offered, the
    // repeated rates as their median.
    let util = &data["capacity"][0]["cpu"][0]["util_pct"];
    assert_eq!(util.as_array().unwrap().len(), 5, "{util}");
    assert_eq!(util[0].as_f64(), Some(27.4));
    check_capacity_page(&page, &html, 875.0, 954.9, 20.0);
    check_screenshot(&page);

    // A fast server: the same search with every latency an eighth (p50 0.14 ms). The log
    // axis then starts at no power of ten unless the page rounds it to one, and uPlot's log
    // ticks overflowed an array ("Invalid array length"): no latency chart, a script error.
    let mut fast: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("capacity/capacity.json")).unwrap(),
    )
    .unwrap();
    let eighth = |l: &mut Value| {
        for (_, v) in l.as_object_mut().unwrap() {
            if let Some(us) = v.as_f64() {
                *v = Value::from((us / 8.0).round() as u64);
            }
        }
    };
    for s in fast["steps"].as_array_mut().unwrap() {
        eighth(&mut s["latency_us"]);
    }
    eighth(&mut fast["closed_loop"]["latency_us"]);
    let input = tempfile::tempdir().unwrap();
    let file = input.path().join("capacity.json");
    std::fs::write(&file, fast.to_string()).unwrap();
    let (_dir, page, html) = render(&[file]);
    check_capacity_page(&page, &html, 875.0, 954.9, 20.0);
}

#[test]
fn a_capacity_sweep_in_a_browser() {
    // tests/fixtures/report/capacity-sweep: a real sweep (10 windows of 1 s, its top from the
    // closed loop measured first, --pid): each window a point of the curve, the knee found at
    // 729 req/s, the windows in the table by where they lie in the run.
    let (_dir, page, html) = render(&[fixtures().join("capacity-sweep")]);
    assert!(
        html.contains("Max sustainable rate: 729 req/s"),
        "the answer"
    );
    assert!(
        html.contains("Sweep: 200 → 1,161 req/s"),
        "the sweep and its bias"
    );
    assert!(html.contains("One open-loop run (latency corrected for coordinated omission) over 8 connections whose rate rose linearly"));
    assert!(
        html.contains("window at 6 s</td>"),
        "the windows by where they lie"
    );
    let data = page_data(&html);
    let p99 = &data["capacity"][0]["lines"][1];
    assert_eq!(p99["stat"], "p99");
    assert_eq!(numbers(&p99["x"]), 10, "a point per window: {p99}");
    check_capacity_page(&page, &html, 729.0, 773.9, 20.0);
    check_screenshot(&page);
}

#[test]
fn a_real_capacity_search_in_a_browser() {
    // The report.html `volley capacity` writes itself, of a search monitored with --pid: the
    // server runs in this test process, so its pid is ours. No browser meanwhile (its
    // processes would be the "server's" too).
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let out = common::scratch("html-capacity", "search");
    let pid = std::process::id().to_string();
    let server = common::normal();
    let url = server.url("/");
    let (s, ()) = common::capacity::undisturbed(
        |attempt| {
            let args = [
                "--slo",
                "p99<50ms",
                "--start-rate",
                "100",
                "--max-rate",
                "400",
                "--repeat",
                "1",
                "-c",
                "4",
                "--pid",
                &pid,
            ];
            (
                common::capacity::capacity(&url, &out.join(format!("attempt-{attempt}")), &args),
                (),
            )
        },
        |_, _| None,
    );
    drop(_one);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    common::capacity::check_files(&s);
    let j = &s.json;
    assert_eq!(j["limited_by"], "max_rate", "{}", s.stderr);
    assert!(j["server_cores"].as_f64().is_some_and(|c| c >= 1.0), "{j}");
    assert_eq!(
        s.search_steps().len(),
        3,
        "100, 200, 400 req/s: {}",
        s.stderr
    );
    // Then the answer again (--repeat 1: one run), the report's fourth step.
    let again: Vec<(f64, &str)> = s
        .confirm_steps()
        .iter()
        .map(|st| {
            (
                st["target_rps"].as_f64().unwrap(),
                st["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(again, vec![(400.0, "pass")], "{}", s.stderr);
    let steps = s.steps();
    assert_eq!(steps.len(), 4, "{}", s.stderr);
    for step in steps {
        assert!(step["server_cpu_pct"].is_number(), "{step}");
    }
    let page = s.out.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    check_capacity_page(
        &page,
        &html,
        400.0,
        j["closed_loop"]["throughput_rps"].as_f64().unwrap(),
        50.0,
    );
}
