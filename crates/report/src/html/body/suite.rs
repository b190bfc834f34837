//! The suite files as run: `[suite]`, servers, scenarios and builds.

use std::fmt::Write;

use serde_json::Value;

use super::{num, opt_f, status_cell, tend, thead, txt};
use crate::html::escape_html as esc;
use crate::model::Report;
use volley_model::result::{BuildStatus, SuiteIndex};
use volley_model::units::seconds;

/// The suite files as run: `[suite]`, servers, scenarios, builds.
pub(super) fn suite_files(o: &mut String, report: &Report) {
    for s in &report.suites {
        let _ = write!(
            o,
            "<section class=\"suite\"><details><summary>Suite file {} as run</summary>",
            esc(&s.suite_file)
        );
        if !s.only.is_empty() {
            let _ = write!(o, "<p>--only {}</p>", esc(&s.only.join(" ")));
        }
        suite_table(o, s);
        for (key, title) in [("server", "[[server]]"), ("scenario", "[[scenario]]")] {
            if let Some(Value::Array(items)) = s.suite.get(key) {
                item_table(o, title, items);
            }
        }
        builds(o, s);
        o.push_str("</details></section>\n");
    }
}

/// The `[suite]` table: one row per key.
fn suite_table(o: &mut String, s: &SuiteIndex) {
    if let Some(Value::Object(m)) = s.suite.get("suite") {
        o.push_str("<h3>[suite]</h3>");
        thead(o, &["key", "value"]);
        for (k, v) in m {
            o.push_str("<tr>");
            txt(o, k);
            txt(o, &value_text(v));
            o.push_str("</tr>\n");
        }
        tend(o);
    }
}

/// `[[server]]` or `[[scenario]]`: one row per item, a column per key any item has.
fn item_table(o: &mut String, title: &str, items: &[Value]) {
    let mut cols: Vec<&String> = Vec::new();
    for it in items {
        if let Value::Object(m) = it {
            for k in m.keys() {
                if !cols.contains(&k) {
                    cols.push(k);
                }
            }
        }
    }
    // `name` first: it is what the rest of the page calls it.
    cols.sort_by_key(|k| *k != "name");
    let _ = write!(o, "<h3>{}</h3>", esc(title));
    thead(o, &cols.iter().map(|c| c.as_str()).collect::<Vec<_>>());
    for it in items {
        o.push_str("<tr>");
        for c in &cols {
            txt(o, &it.get(c.as_str()).map(value_text).unwrap_or_default());
        }
        o.push_str("</tr>\n");
    }
    tend(o);
}

/// The servers' builds with their status and wall time.
fn builds(o: &mut String, s: &SuiteIndex) {
    if s.builds.is_empty() {
        return;
    }
    o.push_str("<h3>Builds</h3>");
    thead(o, &["server", "status", "reason", "wall time"]);
    for b in &s.builds {
        o.push_str("<tr>");
        txt(o, &b.server);
        status_cell(o, b.status == BuildStatus::Ok, b.status);
        txt(o, b.reason.as_deref().unwrap_or(""));
        num(o, b.wall_s, &opt_f(b.wall_s, seconds));
        o.push_str("</tr>\n");
    }
    tend(o);
}

/// A TOML value as written: strings bare, everything else as JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
