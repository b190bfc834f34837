//! Flame graphs in a real browser: pages written by `report::html::flame_page` from the folded
//! fixtures (tests/fixtures/report/flame: a C server's real profiles before and after a
//! regression, and names that are markup) load in headless Chromium offline, without a
//! script error, console error or CSP violation; their boxes are drawn, a click zooms, the
//! reset button returns, hovering shows a tooltip, the search box highlights and states the
//! matched share, a diff colours what grew red, and hostile names stay text.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use volley::report::flame::{Folded, Profile, Sections};

use super::html::{assert_offline, check_in_browser, check_screenshot, Expect, BROWSER, SCRIPTS};
use crate::common;

/// 499 Hz, as the fixtures were recorded.
const PERIOD_US: f64 = 1e6 / 499.0;
/// The requests served while each profile was sampled (the fixtures' README).
const V1_REQUESTS: u64 = 29_219;
const V2_REQUESTS: u64 = 23_166;
const EVIL: &str = "</script><img src=x onerror=alert(1)>";

fn fixture(name: &str) -> Folded {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report/flame")
        .join(name);
    Folded::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The page of `sections` in a temporary folder: the folder, the file and its text.
fn write(title: &str, sections: Sections) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("flame.html");
    let html = volley::report::html::flame_page(title, sections);
    std::fs::write(&page, &html).unwrap();
    (dir, page, html)
}

/// The self-test's `data-NAME` in a DOM dump.
fn selftest(dom: &str, name: &str) -> String {
    let (attrs, _) = common::cdp::selftest(dom);
    attrs
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no data-{name} in the self-test"))
        .1
}

/// The page open in a browser driven over DevTools, after its scripts ran.
fn open(page: &Path) -> common::cdp::Browser {
    let mut b = common::cdp::Browser::open(&format!("file://{}", page.display()));
    b.wait_for(
        "document.getElementById('selftest') && document.getElementById('selftest').getAttribute('data-done') === '1'",
        Duration::from_secs(20),
    );
    b
}

/// JS: the box of graph `k` whose name is `name`.
fn find(k: usize, name: &str) -> String {
    format!(
        "Array.from(document.querySelectorAll('#flame{k} .flame-node')).find(function (b) {{ return b.textContent === {}; }})",
        Value::from(name)
    )
}

/// Types `text` into graph `k`'s search box; the share the page states, as a fraction.
fn search(b: &mut common::cdp::Browser, k: usize, text: &str) -> (f64, String) {
    let js = format!(
        "(function () {{ var s = document.getElementById('flame{k}'); var i = s.querySelector('.flame-search'); \
         i.value = {}; i.dispatchEvent(new Event('input')); \
         return [s.getAttribute('data-matched'), s.querySelector('.flame-matched').textContent]; }})()",
        Value::from(text)
    );
    let v = b.eval(&js);
    let share = v[0].as_str().unwrap().parse().unwrap_or(f64::NAN);
    (share, v[1].as_str().unwrap().to_string())
}

#[test]
fn a_profile_and_a_diff_in_a_browser() {
    let (v1, v2) = (fixture("cserver-v1.folded"), fixture("cserver-v2.folded"));
    let (a, b) = (
        Profile::new(&v1, PERIOD_US, V1_REQUESTS),
        Profile::new(&v2, PERIOD_US, V2_REQUESTS),
    );
    let mut sections = Sections::new();
    sections
        .profile("cserver v1", a)
        .diff("cserver v1 → v2", a, b);
    let (_dir, page, html) = write("cserver", sections);
    assert_offline(&html);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 0,
            sorts: true,
        },
    );
    assert_eq!(selftest(&dom, "flames"), "2");
    assert_eq!(
        selftest(&dom, "flames-drawn"),
        "2",
        "both graphs drew boxes"
    );
    assert!(dom.contains(">burn</div>"), "burn's box");
    assert!(dom.contains("<code>serialize_json</code>"), "in the tables");
    let shot = check_screenshot(&page);
    eprintln!("screenshot: {}", shot.display());

    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let mut br = open(&page);
    let boxes = br.eval("document.querySelectorAll('#flame0 .flame-node').length");
    assert!(boxes.as_u64().unwrap() > 20, "{boxes} boxes");
    // The search states burn's share: its samples over all (about 73 %).
    let burn = volley::report::flame::top(&v1, PERIOD_US, V1_REQUESTS, 100)
        .into_iter()
        .find(|c| c.name == "burn")
        .unwrap();
    let (share, text) = search(&mut br, 0, "BURN");
    assert!(
        (share * 100.0 - burn.total_pct).abs() < 0.5,
        "{share} vs {}",
        burn.total_pct
    );
    assert!(
        text.starts_with(&format!("matched: {:.1} % of the samples", share * 100.0)),
        "{text}"
    );
    let lit = br.eval("document.querySelectorAll('#flame0 .flame-node.match').length");
    assert!(lit.as_u64().unwrap() >= 1, "burn highlighted");
    assert_eq!(search(&mut br, 0, "no such function").0, 0.0);
    assert!(
        search(&mut br, 0, "").1.is_empty(),
        "an empty search states nothing"
    );
    // Hovering a box shows its numbers; clicking zooms into it, the reset button returns.
    let tip = br.eval(&format!(
        "(function () {{ var b = {}; var r = b.getBoundingClientRect(); \
         b.dispatchEvent(new MouseEvent('mousemove', {{bubbles: true, clientX: r.left + 5, clientY: r.top + 5}})); \
         var t = document.querySelector('.flame-tip'); return t.hidden ? null : t.textContent; }})()",
        find(0, "serialize_json")
    ));
    let tip = tip.as_str().expect("a tooltip");
    assert!(
        tip.starts_with("serialize_json\n")
            && tip.contains(" samples, ")
            && tip.contains(" µs/request"),
        "{tip}"
    );
    let zoom = br.eval(&format!(
        "(function () {{ {}.click(); var z = {}; \
         return [z.style.width, document.querySelector('#flame0 .flame-reset').disabled, \
         document.querySelectorAll('#flame0 .flame-node').length]; }})()",
        find(0, "serialize_json"),
        find(0, "serialize_json")
    ));
    assert_eq!(zoom[0], "100%", "the box zoomed into spans the graph");
    assert_eq!(zoom[1], false, "reset enabled");
    assert!(zoom[2].as_u64().unwrap() < boxes.as_u64().unwrap());
    let back = br.eval(
        "(function () { var r = document.querySelector('#flame0 .flame-reset'); r.click(); \
         return [r.disabled, document.querySelectorAll('#flame0 .flame-node').length]; })()",
    );
    assert_eq!(back[0], true);
    assert_eq!(back[1], boxes);
    // The diff colours serialize_json (twice the work) red, and burn hardly at all.
    let colour = |br: &mut common::cdp::Browser, name: &str| -> Vec<u64> {
        let c = br.eval(&format!(
            "getComputedStyle({}).backgroundColor",
            find(1, name)
        ));
        let c = c
            .as_str()
            .unwrap()
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .to_string();
        c.split(", ").map(|v| v.parse().unwrap()).collect()
    };
    let json = colour(&mut br, "serialize_json");
    assert!(
        json[0] > 240 && json[1] < 200 && json[2] < 200,
        "red: {json:?}"
    );
    let burn = colour(&mut br, "burn");
    assert!(burn[2] >= burn[0], "burn did not grow: {burn:?}");
    // Nothing scrolls sideways: the graphs fit the window.
    let width = br.eval(
        "[document.documentElement.scrollWidth, window.innerWidth, \
         Math.max.apply(null, Array.from(document.querySelectorAll('.flame')).map(function (f) { return f.scrollWidth - f.clientWidth; }))]",
    );
    assert!(
        width[0].as_u64() <= width[1].as_u64() && width[2] == 0,
        "{width}"
    );
    let errors = br.eval("window.volleySelftest.errors.concat(window.volleySelftest.violations)");
    assert_eq!(
        errors,
        Value::Array(Vec::new()),
        "after zooming and searching"
    );
}

#[test]
fn hostile_names_are_text_in_a_browser() {
    let f = fixture("hostile.folded");
    let p = Profile::new(&f, PERIOD_US, 100);
    let mut sections = Sections::new();
    sections
        .profile(EVIL, p)
        .diff("a|b \"quoted\" 'single'", p, p);
    let (_dir, page, html) = write(EVIL, sections);
    assert_offline(&html);
    for raw in ["<img", "<svg", "<b>bold", "<!-- not"] {
        assert!(!html.contains(raw), "unescaped `{raw}` in the HTML");
    }
    assert_eq!(html.matches("<script").count(), SCRIPTS);
    assert_eq!(html.matches("</script").count(), SCRIPTS);
    let dom = check_in_browser(
        &page,
        &html,
        Expect {
            charts: 0,
            sorts: true,
        },
    );
    assert_eq!(selftest(&dom, "flames-drawn"), "2");
    for element in ["<img", "<svg", "<b>"] {
        assert!(!dom.contains(element), "`{element}` became an element");
    }
    // The names are the boxes' text, escaped in the DOM's serialization.
    assert!(dom.contains(">srv&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</div>"));
    assert!(dom.contains(">&lt;svg onload=alert(2)&gt;</div>"));
    assert!(dom.contains(">__proto__</div>") && dom.contains(">constructor</div>"));

    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let mut br = open(&page);
    let process = format!("srv{EVIL}");
    let text = br.eval(&format!("{}.textContent", find(0, &process)));
    assert_eq!(text, Value::from(process), "the name as text");
    let (share, _) = search(&mut br, 0, "<img");
    assert_eq!(
        share, 1.0,
        "every sample is under the process named with markup"
    );
    let (share, _) = search(&mut br, 0, "a|b");
    assert!((share - 30.0 / 115.0).abs() < 1e-9, "{share}");
    let alerts =
        br.eval("window.volleySelftest.alerts + document.querySelectorAll('img, svg').length");
    assert_eq!(alerts, Value::from(0));
}
