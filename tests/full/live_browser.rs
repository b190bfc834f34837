//! The dashboard in headless Chromium during a real run: the page connects and its charts
//! update every second, a reload mid-run replays the earlier seconds, the percentiles of a
//! selected window equal those of the seconds' histograms merged here independently, a
//! hostile URL is shown as text, and at the end the page becomes the report.

use crate::common;

use std::time::Duration;

use std::sync::Mutex;

use common::cdp::Browser;
use common::live::{events, Running};
use serde_json::Value;

/// One browser and one load at a time: on two cores, runs side by side would saturate the
/// client and stretch a capacity search past its limits.
static SERIAL: Mutex<()> = Mutex::new(());

/// The page turns into the report, volley exits 0, and no script of either page failed.
fn becomes_the_report(b: &mut Browser, run: &mut Running, limit: Duration) {
    if !b.becomes_true("document.title.endsWith('volley report')", limit) {
        panic!(
            "the page is not the report after {limit:?}; volley said:\n{}",
            run.stderr_so_far()
        );
    }
    assert_eq!(run.wait(Duration::from_secs(20)), 0);
    assert_eq!(
        b.eval("volleySelftest.errors.length"),
        Value::from(0),
        "{}",
        b.eval("JSON.stringify(volleySelftest)")
    );
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn the_dashboard_in_a_browser() {
    let _one = serial();
    let server = common::normal();
    // A URL whose query is markup: the page must show it, never run it.
    let hostile = "/p?q=<img/src=x/onerror=alert(1)>\"'";
    let url = server.url(hostile);
    // Chromium starts before the run (seconds on a loaded runner): the reload below must
    // come while the run is still live.
    let mut b = Browser::open("about:blank");
    let mut run = Running::start(&[
        "run",
        &url,
        "-c",
        "4",
        "-d",
        "12s",
        "-R",
        "300",
        "--dashboard",
        "--quiet",
    ]);
    let (addr, token) = run.door();
    let page_url = run.dashboard.clone().unwrap();
    // The test's own reader: every tick, to merge the histograms independently.
    let reader = std::thread::spawn(move || {
        events(addr, &token, None, |e| {
            e.last().is_some_and(|e| e.kind == "end")
        })
    });

    b.eval(&format!(
        "location.href = {}",
        serde_json::to_string(&page_url).unwrap()
    ));
    b.wait_for(
        "window.volleyLive && volleyLive.ticks >= 2",
        Duration::from_secs(15),
    );
    let (ticks, draws) = (b.eval("volleyLive.ticks"), b.eval("volleyLive.draws"));
    std::thread::sleep(Duration::from_millis(2100));
    let (ticks2, draws2) = (b.eval("volleyLive.ticks"), b.eval("volleyLive.draws"));
    assert!(
        ticks2.as_u64() >= Some(ticks.as_u64().unwrap() + 1),
        "a tick a second: {ticks} then {ticks2}"
    );
    assert!(
        draws2.as_u64() >= Some(draws.as_u64().unwrap() + 2),
        "charts redrawn each second: {draws} then {draws2}"
    );
    assert_eq!(
        b.eval("document.getElementById('title').textContent"),
        Value::from(format!("http://{addr_of}{hostile}", addr_of = server.addr))
    );
    assert_eq!(
        b.eval("document.querySelectorAll('img').length"),
        Value::from(0),
        "the URL's markup is text"
    );

    // A reload mid-run: the new page replays every second so far at once.
    let before = b.eval("volleyLive.ticks").as_u64().unwrap();
    // The old page is marked: the wait below must see the new one, not the old one's count.
    b.eval("window.volleyOldPage = true; location.reload()");
    b.wait_for(
        &format!("!window.volleyOldPage && window.volleyLive && volleyLive.ticks >= {before}"),
        Duration::from_secs(10),
    );
    assert_eq!(
        b.eval("volleyLive.ended"),
        Value::Bool(false),
        "the run ended before the reloaded page could select a window:\n{}",
        run.stderr_so_far()
    );
    let window = b.eval("volleyLive.select(1, 4)");
    assert_eq!(window["seconds"], 3, "{window}");
    // The window is named by its seconds and by the time of day.
    let named = b.eval("document.getElementById('window-range').textContent");
    let named = named.as_str().unwrap();
    let wall =
        regex::Regex::new(r"seconds 0:01 to 0:04, \d\d:\d\d:\d\d to \d\d:\d\d:\d\d").unwrap();
    assert!(wall.is_match(named), "{named}");

    becomes_the_report(&mut b, &mut run, Duration::from_secs(20));
    assert_eq!(b.eval("volleySelftest.violations.length"), Value::from(0));
    assert_eq!(b.eval("volleySelftest.alerts"), Value::from(0));
    assert!(
        b.eval("document.getElementById('data') !== null") == Value::Bool(true),
        "the report's data"
    );

    // The page's window equals the merged histograms of seconds 1, 2 and 3.
    let evs = reader.join().unwrap();
    let hists: Vec<_> = evs
        .iter()
        .filter(|e| e.kind == "tick" && (1..4).contains(&e.data["t_s"].as_u64().unwrap()))
        .map(|e| volley::stats::histogram::decode(e.data["latency_hdr"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(hists.len(), 3);
    let merged = volley::stats::histogram::sum(hists.iter());
    assert!(
        merged.len() > 500,
        "{} responses in 3 s at 300/s",
        merged.len()
    );
    let c = &window["corrected"];
    assert_eq!(c["count"], merged.len(), "{window}");
    for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
        assert_eq!(
            c[key],
            merged.value_at_quantile(q),
            "{key} of the window: {window}"
        );
    }
    assert_eq!(c["max"], merged.max(), "{window}");
}

/// `volley capacity --dashboard`: each step is a run the page draws from zero, the table and
/// the curve grow as steps finish, and at the end the page becomes the capacity report.
#[test]
fn a_capacity_search_in_a_browser() {
    let _one = serial();
    let server = common::normal();
    let url = server.url("/");
    let out = tempfile::tempdir().unwrap();
    let mut run = Running::start(&[
        "capacity",
        &url,
        "--slo",
        "p99<500ms",
        "--step-duration",
        "2s",
        "--start-rate",
        "200",
        "--max-rate",
        "800",
        "-c",
        "4",
        "--no-closed-loop",
        "--dashboard",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let page_url = run.dashboard.clone().unwrap();
    let mut b = Browser::open(&page_url);
    b.wait_for(
        "window.volleyLive && volleyLive.steps >= 2",
        Duration::from_secs(30),
    );
    assert!(
        b.eval("volleyLive.runs").as_u64().unwrap() >= 2,
        "a run per step"
    );
    let rows = b
        .eval("document.querySelectorAll('#progress-rows tr').length")
        .as_u64()
        .unwrap();
    assert!(rows >= 2, "{rows} rows");
    let title = b.eval("document.getElementById('run-title').textContent");
    assert!(title.as_str().unwrap().starts_with("step "), "{title}");
    // The search's own bound: its steps of 2 s, and a step that other processes starved runs
    // again after waiting for an idle machine (at most MACHINE_MAX_WAIT), up to three times.
    let starved = volley::capacity::idle::MACHINE_MAX_WAIT + Duration::from_secs(2);
    becomes_the_report(&mut b, &mut run, Duration::from_secs(30) + starved * 3);
}

/// `volley bench --dashboard`: each cell is a run the page draws from zero, the table of
/// finished cells grows, and at the end the page becomes the suite's report.
#[test]
fn a_suite_in_a_browser() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        "[suite]\nname = \"live\"\nduration = \"2s\"\n[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n\
         [[scenario]]\nname = \"hello\"\npath = \"/hello\"\nconnections = 2\n\
         [[scenario]]\nname = \"paced\"\npath = \"/\"\nconnections = 2\nrate = 300\n",
        server.addr
    );
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out = dir.path().join("out");
    let mut run = Running::start(&[
        "bench",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--yes",
        "--dashboard",
    ]);
    let mut b = Browser::open(&run.dashboard.clone().unwrap());
    b.wait_for(
        "window.volleyLive && volleyLive.cells >= 1 && volleyLive.ticks >= 1",
        Duration::from_secs(30),
    );
    becomes_the_report(&mut b, &mut run, Duration::from_secs(30));
    assert!(out.join("suite.json").exists());
}
