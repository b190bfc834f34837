//! CSV: one row per cell with every scalar of its RunResult, flattened with dotted names, RFC
//! 4180 quoting; a key absent from a cell is an empty field. Lists and the base64 histograms are
//! left out; the one list kept is the named requests of a `--requests-file` (`endpoints`), as
//! `endpoints.<name>.<key>` columns after every other. The columns, their order and the quoting
//! are docs/contract.md, "Reports". A report of capacity searches alone is their steps' CSV
//! (`capacity::csv`) instead.

use serde_json::Value;

use super::model::Report;
use super::Reporter;

/// CSV reporter.
pub(crate) struct CsvReporter;

/// The columns that say which cell a row is, before the cell's scalars.
const IDENTITY: [&str; 7] = [
    "server", "scenario", "axes", "rep", "status", "reason", "control",
];

impl Reporter for CsvReporter {
    fn render(&self, report: &Report) -> String {
        // Capacity searches alone: their steps (`report::capacity::csv`). A suite's capacity
        // steps go to a file of their own (`capacity.csv`), as their columns differ.
        if report.cells.is_empty() && !report.capacity.is_empty() {
            return super::capacity::csv::render(&report.capacity);
        }
        let mut columns: Vec<String> = Vec::new();
        // Per-endpoint columns, kept apart so that each name's columns stay together after
        // the others: (index of the name in `names`, column).
        let mut names: Vec<String> = Vec::new();
        let mut by_name: Vec<(usize, String)> = Vec::new();
        let mut rows: Vec<Vec<(String, String)>> = Vec::new();
        for c in &report.cells {
            let mut fields = Vec::new();
            let mut endpoint_fields = Vec::new();
            if let Some(r) = &c.result {
                let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
                let endpoints = v.as_object_mut().and_then(|m| m.remove("endpoints"));
                flatten("", &v, &mut fields);
                for e in endpoints
                    .as_ref()
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let name = e.get("name").and_then(Value::as_str).unwrap_or_default();
                    let k = match names.iter().position(|n| n == name) {
                        Some(k) => k,
                        None => {
                            names.push(name.to_string());
                            names.len() - 1
                        }
                    };
                    // Its name is in the column's; the rest are its scalars.
                    let mut e = e.clone();
                    if let Some(m) = e.as_object_mut() {
                        m.remove("name");
                    }
                    let mut own = Vec::new();
                    flatten(&format!("endpoints.{}", names[k]), &e, &mut own);
                    endpoint_fields.extend(own.into_iter().map(|f| (k, f)));
                }
            }
            for (k, _) in &fields {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
            for (k, (col, _)) in &endpoint_fields {
                if !by_name.iter().any(|(_, c)| c == col) {
                    by_name.push((*k, col.clone()));
                }
            }
            fields.extend(endpoint_fields.into_iter().map(|(_, f)| f));
            rows.push(fields);
        }
        // Stable: within a name, the order of first appearance.
        by_name.sort_by_key(|(k, _)| *k);
        columns.extend(by_name.into_iter().map(|(_, c)| c));
        let mut out = String::new();
        let header: Vec<String> = IDENTITY
            .iter()
            .map(|s| s.to_string())
            .chain(columns.iter().cloned())
            .collect();
        line(&mut out, &header);
        for (c, fields) in report.cells.iter().zip(rows) {
            let mut rec = vec![
                c.server.clone(),
                c.scenario.clone(),
                c.axes_label(),
                c.rep.to_string(),
                c.status.to_string(),
                c.reason.clone().unwrap_or_default(),
                c.control.to_string(),
            ];
            for col in &columns {
                rec.push(
                    fields
                        .iter()
                        .find(|(k, _)| k == col)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default(),
                );
            }
            line(&mut out, &rec);
        }
        out
    }
}

/// Scalars of `v` under `prefix`, depth first, in key order.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let name = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k.ends_with("_hdr") || k == "schema" {
                    continue;
                }
                flatten(&name(k), x, out);
            }
        }
        Value::Array(_) => {}
        Value::Null => out.push((prefix.to_string(), String::new())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Bool(b) => out.push((prefix.to_string(), b.to_string())),
        Value::Number(n) => out.push((prefix.to_string(), n.to_string())),
    }
}

/// One record: fields quoted where needed, CRLF at the end (RFC 4180).
pub(super) fn line(out: &mut String, fields: &[String]) {
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    out.push_str(&quoted.join(","));
    out.push_str("\r\n");
}

/// RFC 4180: fields with a comma, quote or line break are quoted, quotes doubled. A leading
/// `=`, `+`, `-` or `@` of a text field gets a `'` so spreadsheets do not run it as a formula.
fn quote(f: &str) -> String {
    let is_number = f.parse::<f64>().is_ok();
    let f = if !is_number && f.starts_with(['=', '+', '-', '@']) {
        format!("'{f}")
    } else {
        f.to_string()
    };
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("=cmd()"), "'=cmd()");
        assert_eq!(quote("-12.5"), "-12.5");
        assert_eq!(quote("plain"), "plain");
    }

    #[test]
    fn endpoints_are_columns_by_name_after_the_others() {
        let text = include_str!("../../../tests/fixtures/report/mix.json");
        let a = volley_model::result::RunResult::from_json(text).unwrap();
        let mut b = a.clone();
        // A status only the second cell's `hello` had, and a name only it has.
        b.endpoints[0].status_codes.insert("503".into(), 7);
        b.endpoints[2].name = "gone".into();
        let mut report = Report::single(a);
        let mut second = report.cells[0].clone();
        second.rep = 2;
        second.result = Some(b);
        report.cells.push(second);
        let csv = CsvReporter.render(&report);
        let lines: Vec<&str> = csv.split("\r\n").collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        let pos = |c: &str| {
            header
                .iter()
                .position(|h| *h == c)
                .unwrap_or_else(|| panic!("no column {c}: {header:?}"))
        };
        let first = header
            .iter()
            .position(|h| h.starts_with("endpoints."))
            .unwrap();
        assert!(
            header[first..].iter().all(|h| h.starts_with("endpoints.")),
            "after every other column: {header:?}"
        );
        assert!(pos("checks.body_regex") < first, "the run's checks flatten");
        // Names in order of first appearance, each name's columns together.
        assert!(
            header[first].starts_with("endpoints.hello."),
            "{}",
            header[first]
        );
        assert!(pos("endpoints.hello.status_codes.503") < pos("endpoints.post.method"));
        assert!(pos("endpoints.post.checks.body_regex") < pos("endpoints.missing.method"));
        assert!(pos("endpoints.missing.latency_us.p99") < pos("endpoints.gone.method"));
        assert!(!lines[0].contains(".name,") && !lines[0].contains("_hdr"));
        let field = |row: usize, col: &str| lines[row].split(',').nth(pos(col)).unwrap();
        assert_eq!(field(1, "endpoints.post.requests.failed"), "18685");
        assert_eq!(field(1, "endpoints.post.checks.body_regex"), "18685");
        assert_eq!(field(1, "endpoints.missing.status_codes.404"), "11227");
        assert_eq!(field(1, "endpoints.post.path"), "/");
        assert_eq!(
            field(1, "endpoints.gone.requests.sent"),
            "",
            "not in this cell"
        );
        assert_eq!(field(1, "endpoints.hello.status_codes.503"), "");
        assert_eq!(field(2, "endpoints.hello.status_codes.503"), "7");
        assert_eq!(field(2, "endpoints.gone.requests.sent"), "11227");
        assert_eq!(field(2, "endpoints.missing.requests.sent"), "");
    }

    #[test]
    fn flattens_scalars_only() {
        let v: Value =
            serde_json::json!({"a": 1, "b": {"c": null, "d": [1, 2], "e_hdr": "x"}, "f": "s"});
        let mut out = Vec::new();
        flatten("", &v, &mut out);
        assert_eq!(
            out,
            vec![
                ("a".to_string(), "1".to_string()),
                ("b.c".to_string(), String::new()),
                ("f".to_string(), "s".to_string())
            ]
        );
    }
}
