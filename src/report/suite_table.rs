//! The table `volley bench` ends with: per scenario cell and server, the median over
//! repetitions of throughput, latency and server cost, with the throughput range.

use crate::report::format::{bytes, micros, rate};
use crate::result::{Headline, SuiteIndex};

/// Renders the suite's results as an aligned text table (empty when nothing was measured).
pub fn render(index: &SuiteIndex) -> String {
    let mut groups: Vec<(String, String, Vec<&str>)> = Vec::new(); // (scenario, axes, servers)
    for r in &index.rows {
        let axes = axes_label(&r.axes);
        let g = match groups
            .iter_mut()
            .find(|(s, a, _)| *s == r.scenario && *a == axes)
        {
            Some(g) => g,
            None => {
                groups.push((r.scenario.clone(), axes, Vec::new()));
                groups.last_mut().unwrap()
            }
        };
        if !g.2.contains(&r.server.as_str()) {
            g.2.push(&r.server);
        }
    }
    let header = [
        "scenario", "server", "req/s", "min-max", "p50", "p99", "errors", "CPU/req", "RSS", "runs",
    ];
    let mut lines: Vec<[String; 10]> = Vec::new();
    let mut notes: Vec<(String, String)> = Vec::new();
    for (scenario, axes, servers) in &groups {
        let label = if axes.is_empty() {
            scenario.clone()
        } else {
            format!("{scenario} {axes}")
        };
        for server in servers {
            let rows: Vec<_> = index
                .rows
                .iter()
                .filter(|r| {
                    &r.scenario == scenario && axes_label(&r.axes) == *axes && r.server == *server
                })
                .collect();
            let ok: Vec<&Headline> = rows
                .iter()
                .filter(|r| r.status == "ok")
                .filter_map(|r| r.headline.as_ref())
                .collect();
            let runs = format!("{}/{}", ok.len(), rows.len());
            if ok.is_empty() {
                // The reason goes under the table, once per server and reason.
                let why = rows
                    .iter()
                    .find_map(|r| r.reason.clone())
                    .unwrap_or_else(|| rows.first().map_or(String::new(), |r| r.status.clone()));
                let n = match notes.iter().position(|(s, w)| s == server && *w == why) {
                    Some(i) => i + 1,
                    None => {
                        notes.push((server.to_string(), why));
                        notes.len()
                    }
                };
                let status = rows.first().map_or("failed", |r| r.status.as_str());
                lines.push([
                    label.clone(),
                    server.to_string(),
                    format!("{status} [{n}]"),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    runs,
                ]);
                continue;
            }
            let tput: Vec<f64> = ok.iter().map(|h| h.throughput_rps).collect();
            let (lo, hi) = (
                tput.iter().cloned().fold(f64::INFINITY, f64::min),
                tput.iter().cloned().fold(0.0, f64::max),
            );
            let med_u = |f: &dyn Fn(&Headline) -> Option<u64>| {
                median(
                    &ok.iter()
                        .filter_map(|h| f(h).map(|v| v as f64))
                        .collect::<Vec<_>>(),
                )
            };
            let saturated = ok.iter().any(|h| h.client_saturated);
            lines.push([
                label.clone(),
                if rows.iter().any(|r| r.control) {
                    format!("{server} (control)")
                } else {
                    server.to_string()
                },
                format!(
                    "{}{}",
                    median(&tput).map_or("-".into(), rate),
                    if saturated { " (client saturated)" } else { "" }
                ),
                if ok.len() > 1 {
                    format!("{}-{}", rate(lo), rate(hi))
                } else {
                    String::new()
                },
                med_u(&|h| h.latency_p50_us).map_or("-".into(), |v| micros(v.round() as u64)),
                med_u(&|h| h.latency_p99_us).map_or("-".into(), |v| micros(v.round() as u64)),
                ok.iter().map(|h| h.errors).sum::<u64>().to_string(),
                median(
                    &ok.iter()
                        .filter_map(|h| h.server_cpu_us_per_request)
                        .collect::<Vec<_>>(),
                )
                .map_or("-".into(), |v| format!("{v:.1} µs")),
                ok.iter()
                    .filter_map(|h| h.server_rss_max_bytes)
                    .max()
                    .map_or("-".into(), bytes),
                runs,
            ]);
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut width = header.map(|h| h.chars().count());
    for l in &lines {
        for (w, c) in width.iter_mut().zip(l.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let fmt_line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(width.iter()).enumerate() {
            let pad = w - c.chars().count();
            // Text columns left, numbers right.
            if i < 2 {
                s += c;
                s += &" ".repeat(pad);
            } else {
                s += &" ".repeat(pad);
                s += c;
            }
            if i + 1 < cells.len() {
                s += "  ";
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = String::from("\n");
    out += &fmt_line(&header.map(String::from));
    out += &fmt_line(&width.map(|w| "-".repeat(w)));
    let mut last = String::new();
    for l in &lines {
        let mut l = l.clone();
        if l[0] == last {
            l[0] = String::new();
        } else {
            last = l[0].clone();
        }
        out += &fmt_line(&l);
    }
    for (i, (server, why)) in notes.iter().enumerate() {
        out += &format!("[{}] {server}: {why}\n", i + 1);
    }
    out += "\nreq/s, p50 and p99 (corrected latency) are medians over the repetitions that finished; CPU/req and RSS are the server's (median, peak).\n";
    out
}

fn axes_label(axes: &std::collections::BTreeMap<String, String>) -> String {
    axes.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}
