//! CSV: one row per cell with every scalar of its RunResult (RFC 4180 quoting).
//!
//! Columns: the cell's identity (`server, scenario, axes, rep, status, reason, control`), then
//! every scalar of the RunResult flattened with dotted names (`latency_us.p99`,
//! `server.per_request.cpu_us`, `status_codes.200`), in the order they first appear. Lists
//! (time series, samples, argv, warnings) and the base64 histograms are left out: they are not
//! scalars. A key absent from a cell is an empty field.

use serde_json::Value;

use super::model::Report;
use super::Reporter;

/// CSV reporter.
pub struct CsvReporter;

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
        let mut rows: Vec<Vec<(String, String)>> = Vec::new();
        for c in &report.cells {
            let mut fields = Vec::new();
            if let Some(r) = &c.result {
                let v = serde_json::to_value(r).unwrap_or(Value::Null);
                flatten("", &v, &mut fields);
            }
            for (k, _) in &fields {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
            rows.push(fields);
        }
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
