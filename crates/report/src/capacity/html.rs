//! Capacity searches on the HTML page: per scenario, the answer in words, the servers ranked
//! by sustainable rate beside their closed-loop maximum, **the latency–throughput curve**
//! (p50, p99 and p99.9 against the achieved rate on a log latency axis, the SLO's line, the
//! knee — the rate found — and the closed-loop maximum marked) and the server's CPU and
//! utilisation against the rate (USE: utilisation reaching 100 % of the server's cores is
//! where queueing starts), then every step. The numbers travel as [`CapacityData`]; the
//! page's script (`draw['capacity-latency']`, `draw['capacity-cpu']`) only draws.

use std::fmt::Write;

use serde::Serialize;

use super::text::{self, rps};
use super::{rankings, CapacityEntry, Ranking};
use crate::escape::escape_html as esc;
use crate::model::median;
use volley_model::metric::threshold;
use volley_model::metric::{Metric, Stat};
use volley_model::result::capacity::{CapacityResult, CapacityStep, ClosedLoopStep, Verdict};
use volley_model::units::{micros, rate};

/// The charts of one capacity scenario.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityData {
    /// Scenario and axes.
    pub label: String,
    /// Latency lines, one per server and statistic.
    pub lines: Vec<Line>,
    /// Server CPU lines (utilisation of its cores), one per server with a monitor.
    pub cpu: Vec<CpuLine>,
    /// The rate found per server: the knee.
    pub knees: Vec<Mark>,
    /// The closed-loop maximum per server.
    pub closed: Vec<Mark>,
    /// The SLO's latency limits, drawn across the chart.
    pub slo: Vec<SloLine>,
}

/// One statistic of one server against the achieved rate, points in the order run (offered
/// rate ascending), so an overloaded server's curve can bend back.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// `p50`, `p99`, `p99.9`.
    pub stat: String,
    /// Achieved rate, req/s.
    pub x: Vec<f64>,
    /// Latency, ms.
    pub y_ms: Vec<Option<f64>>,
    /// The offered rate of each point, req/s.
    pub target: Vec<f64>,
    /// Each point passed (the majority of its runs did).
    pub pass: Vec<bool>,
}

/// One server's CPU against the achieved rate.
#[derive(Debug, Clone, Serialize)]
pub struct CpuLine {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// Achieved rate, req/s.
    pub x: Vec<f64>,
    /// Server CPU, percent of the cores it may use (of one core when they are unknown).
    pub util_pct: Vec<Option<f64>>,
    /// The cores the percentages are of (null: one core).
    pub cores: Option<f64>,
}

/// A rate marked on the charts.
#[derive(Debug, Clone, Serialize)]
pub struct Mark {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// req/s.
    pub rps: f64,
    /// The rate is a lower bound.
    pub lower_bound: bool,
}

/// A latency SLO's limit.
#[derive(Debug, Clone, Serialize)]
pub struct SloLine {
    /// As written: `p99<10ms`.
    pub label: String,
    /// The statistic it limits: `p99`.
    pub stat: String,
    /// The limit, ms.
    pub ms: f64,
}

/// One point per offered rate: repeated runs of a rate are summarised by their medians.
struct Point {
    target: f64,
    achieved: f64,
    p50: Option<f64>,
    p99: Option<f64>,
    p99_9: Option<f64>,
    cpu_pct: Option<f64>,
    pass: bool,
}

fn points(r: &CapacityResult) -> Vec<Point> {
    let mut rates: Vec<f64> = r.steps.iter().map(|s| s.target_rps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
        .into_iter()
        .filter_map(|t| {
            // A client-limited run says nothing about the server: it is not on the curve.
            let runs: Vec<&CapacityStep> = r
                .steps
                .iter()
                .filter(|s| s.target_rps == t && s.verdict != Verdict::Client)
                .collect();
            let med = |f: &dyn Fn(&CapacityStep) -> Option<f64>| {
                median(&runs.iter().filter_map(|s| f(s)).collect::<Vec<_>>())
            };
            let ms = |v: Option<u64>| v.map(|v| v as f64 / 1000.0);
            let passes = runs.iter().filter(|s| s.verdict == Verdict::Pass).count();
            Some(Point {
                target: t,
                achieved: med(&|s| s.achieved_rps)?,
                p50: med(&|s| ms(s.latency_us.p50)),
                p99: med(&|s| ms(s.latency_us.p99)),
                p99_9: med(&|s| ms(s.latency_us.p99_9)),
                cpu_pct: med(&|s| s.server_cpu_pct),
                pass: passes * 2 > runs.len(),
            })
        })
        .collect()
}

/// The latency statistics of the SLO (`p99<10ms` → p99 at 10 ms).
fn slo_lines(slo: &[String]) -> Vec<SloLine> {
    slo.iter()
        .filter_map(|s| {
            let t = threshold::parse(s).ok()?;
            match t.metric {
                Metric::Latency(stat) => Some(SloLine {
                    label: t.text.clone(),
                    stat: stat.name().to_string(),
                    ms: t.limit / 1000.0,
                }),
                _ => None,
            }
        })
        .collect()
}

/// The chart data of a ranking; `server_index` gives each server's colour.
pub(crate) fn data(r: &Ranking, server_index: &dyn Fn(&str) -> usize) -> CapacityData {
    let slo = slo_lines(&r.slo);
    // One server: its p50, p99 and p99.9. Several: the SLO's statistic of each (p99 when
    // the SLO limits no percentile), so the lines stay readable.
    let stats: Vec<Stat> = if r.places.len() == 1 {
        vec![Stat::P50, Stat::P99, Stat::P99_9]
    } else {
        vec![slo
            .first()
            .and_then(|s| Stat::parse(&s.stat))
            .filter(|s| matches!(s, Stat::P50 | Stat::P99 | Stat::P99_9))
            .unwrap_or(Stat::P99)]
    };
    let mut d = CapacityData {
        label: r.label.clone(),
        lines: Vec::new(),
        cpu: Vec::new(),
        knees: Vec::new(),
        closed: Vec::new(),
        slo,
    };
    for p in &r.places {
        let server = server_index(&p.server);
        // The first repetition's curve: repetitions are in the tables.
        let Some(res) = p.first() else { continue };
        let pts = points(res);
        for stat in &stats {
            d.lines.push(Line {
                server,
                stat: stat.name().to_string(),
                x: pts.iter().map(|q| q.achieved).collect(),
                y_ms: pts
                    .iter()
                    .map(|q| match stat {
                        Stat::P50 => q.p50,
                        Stat::P99_9 => q.p99_9,
                        _ => q.p99,
                    })
                    .collect(),
                target: pts.iter().map(|q| q.target).collect(),
                pass: pts.iter().map(|q| q.pass).collect(),
            });
        }
        if pts.iter().any(|q| q.cpu_pct.is_some()) {
            let cores = res.server_cores;
            d.cpu.push(CpuLine {
                server,
                x: pts.iter().map(|q| q.achieved).collect(),
                util_pct: pts
                    .iter()
                    .map(|q| q.cpu_pct.map(|c| c / cores.unwrap_or(1.0)))
                    .collect(),
                cores,
            });
        }
        if let Some(m) = p.max_rate_rps {
            d.knees.push(Mark {
                server,
                rps: m,
                lower_bound: p.lower_bound,
            });
        }
        if let Some(c) = p.closed_loop_rps {
            d.closed.push(Mark {
                server,
                rps: c,
                lower_bound: false,
            });
        }
    }
    d
}

/// The capacity sections of a page: one per ranking, `first` the index of the first one in
/// `PageData::capacity`.
pub(crate) fn sections(
    o: &mut String,
    entries: &[CapacityEntry],
    server_index: &dyn Fn(&str) -> usize,
) -> Vec<CapacityData> {
    let mut out = Vec::new();
    for (k, r) in rankings(entries).iter().enumerate() {
        let d = data(r, server_index);
        section(o, k, r, &d, server_index);
        out.push(d);
    }
    out
}

fn section(
    o: &mut String,
    k: usize,
    r: &Ranking,
    d: &CapacityData,
    server_index: &dyn Fn(&str) -> usize,
) {
    // `volley capacity` alone names its one search `capacity`: no scenario to name.
    let title = if r.label == "capacity" {
        "Capacity".to_string()
    } else {
        format!("{} — capacity", esc(&r.label))
    };
    let _ = write!(
        o,
        "<section class=\"group capacity\" id=\"capacity{k}\"><h2>{title} within <code>{}</code></h2>",
        esc(&r.slo.join(", "))
    );
    o.push_str("<p class=\"verdict\">");
    for p in &r.places {
        for e in &p.entries {
            match &e.result {
                Some(res) => {
                    let who = if r.places.len() > 1 {
                        format!("<b>{}</b>: ", esc(&p.server))
                    } else {
                        String::new()
                    };
                    let _ = write!(o, "{who}{}", esc(&text::summary(res)));
                    if let Some(sw) = text::sweep_line(res) {
                        let _ = write!(o, " {}", esc(&sw));
                    }
                    if let Some(v) = text::versus_closed_loop(res) {
                        let _ = write!(o, " {}", esc(&v));
                    }
                    o.push_str("<br>");
                }
                None => {
                    let _ = write!(
                        o,
                        "<b>{}</b>: {}<br>",
                        esc(&p.server),
                        esc(e.reason.as_deref().unwrap_or("no result"))
                    );
                }
            }
        }
    }
    o.push_str("</p>\n");
    if r.places.len() > 1 {
        ranking_table(o, r, server_index);
    }
    charts(o, k, d);
    for p in &r.places {
        for e in &p.entries {
            if let Some(res) = &e.result {
                steps_table(o, &p.server, e.rep, res, r.places.len() > 1);
            }
        }
    }
    o.push_str("</section>\n");
}

fn charts(o: &mut String, k: usize, d: &CapacityData) {
    let enough = d.lines.iter().any(|l| l.x.len() >= 2);
    if !enough {
        return;
    }
    o.push_str("<div class=\"charts\">");
    let _ = write!(
        o,
        "<figure><figcaption>Latency against throughput (corrected latency, log scale; filled: \
         within the SLO, hollow: not; dashed line: the SLO; | the rate found; ┆ the closed-loop \
         maximum)</figcaption><div class=\"chart\" data-chart=\"capacity-latency\" data-capacity=\"{k}\"></div></figure>"
    );
    if d.cpu.iter().any(|c| c.x.len() >= 2) {
        let of = match d.cpu.first().and_then(|c| c.cores) {
            Some(c) if d.cpu.iter().all(|l| l.cores == Some(c)) => {
                format!("% of its {c} core{}", if c == 1.0 { "" } else { "s" })
            }
            _ => "% of the cores it may use".into(),
        };
        let _ = write!(
            o,
            "<figure><figcaption>Server CPU against throughput ({of}: at 100 % requests queue)</figcaption><div class=\"chart\" data-chart=\"capacity-cpu\" data-capacity=\"{k}\"></div></figure>"
        );
    }
    o.push_str("</div>\n");
}

fn ranking_table(o: &mut String, r: &Ranking, server_index: &dyn Fn(&str) -> usize) {
    o.push_str("<div class=\"wide\"><table class=\"sortable\"><thead><tr>");
    for c in [
        "server",
        "sustainable req/s",
        "limited by",
        "p99 at it",
        "closed-loop req/s",
        "share of closed loop",
        "server CPU/req at it",
    ] {
        let _ = write!(o, "<th>{c}</th>");
    }
    o.push_str("</tr></thead><tbody>\n");
    for p in &r.places {
        let _ = write!(
            o,
            "<tr{}><td class=\"server\" data-v=\"{0}\"><span class=\"swatch s{1}\"></span>{0}</td>",
            esc(&p.server),
            server_index(&p.server) % 10,
        );
        num(o, p.max_rate_rps, &esc(&p.rate_text()));
        let _ = write!(o, "<td>{}</td>", esc(&p.limit_text()));
        num(
            o,
            p.p99_at_max_us,
            &p.p99_at_max_us
                .map_or("–".into(), |v| micros(v.round() as u64)),
        );
        num(o, p.closed_loop_rps, &esc(&p.closed_loop_text()));
        num(o, p.share(), &esc(&p.share_text()));
        num(
            o,
            p.cpu_us_at_max,
            &p.cpu_us_at_max.map_or("–".into(), |v| format!("{v:.1} µs")),
        );
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
}

fn num(o: &mut String, v: Option<f64>, text: &str) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(o, "<td class=\"n\" data-v=\"{v}\">{text}</td>");
        }
        _ => o.push_str("<td class=\"n\" data-v=\"\">–</td>"),
    }
}

fn steps_table(o: &mut String, server: &str, rep: u32, r: &CapacityResult, named: bool) {
    let _ = write!(
        o,
        "<details{}><summary>Steps{} ({} run{}; {})</summary>",
        if named { "" } else { " open" },
        if named {
            format!(
                " of {}{}",
                esc(server),
                if rep > 1 {
                    format!(", repetition {rep}")
                } else {
                    String::new()
                }
            )
        } else {
            String::new()
        },
        r.steps.len(),
        if r.steps.len() == 1 { "" } else { "s" },
        esc(&match &r.sweep {
            Some(sw) => format!(
                "the sweep's windows of {} s, one run{}",
                sw.window_s,
                if r.steps.iter().any(|s| s.window.is_none()) {
                    format!(", then --confirm's steps: {}", r.repeat_rule)
                } else {
                    String::new()
                }
            ),
            None => r.repeat_rule.clone(),
        })
    );
    o.push_str("<div class=\"wide\"><table class=\"sortable\"><thead><tr>");
    for c in [
        "step",
        "target req/s",
        "achieved req/s",
        "verdict",
        "p50",
        "p99",
        "p99.9",
        "errors",
        "server CPU",
        "CPU/req",
        "idle wait",
        "reason",
    ] {
        let _ = write!(o, "<th>{c}</th>");
    }
    o.push_str("</tr></thead><tbody>\n");
    let loops = [
        ("closed loop", &r.closed_loop),
        ("closed loop, again", &r.closed_loop_again),
    ];
    for (label, c) in loops {
        if let Some(c) = c {
            closed_loop_row(o, label, c);
        }
    }
    for (n, s) in r.steps.iter().enumerate() {
        match s.window {
            Some(w) => write!(
                o,
                "<tr><td data-v=\"{}\">window at {} s</td>",
                n + 1,
                w.start_s
            ),
            None => write!(o, "<tr><td data-v=\"{0}\">{0}</td>", n + 1),
        }
        .unwrap_or_default();
        num(o, Some(s.target_rps), &rps(s.target_rps));
        num(o, s.achieved_rps, &s.achieved_rps.map_or("–".into(), rate));
        let good = s.verdict == Verdict::Pass;
        let _ = write!(
            o,
            "<td class=\"{}\">{}</td>",
            if good { "good" } else { "bad" },
            s.verdict.as_str()
        );
        for v in [s.latency_us.p50, s.latency_us.p99, s.latency_us.p99_9] {
            num(o, v.map(|v| v as f64), &v.map_or("–".into(), micros));
        }
        num(o, Some(s.errors as f64), &s.errors.to_string());
        num(
            o,
            s.server_cpu_pct,
            &s.server_cpu_pct.map_or("–".into(), |v| format!("{v:.0}%")),
        );
        num(
            o,
            s.server_cpu_us_per_request,
            &s.server_cpu_us_per_request
                .map_or("–".into(), |v| format!("{v:.1} µs")),
        );
        num(o, Some(s.idle_wait_s), &format!("{:.1} s", s.idle_wait_s));
        let _ = writeln!(o, "<td>{}</td></tr>", esc(&text::reason(s)));
    }
    o.push_str("</tbody></table></div>");
    if !r.notes.is_empty() {
        o.push_str("<ul class=\"warnings\">");
        for n in &r.notes {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>");
    }
    o.push_str("</details>\n");
}

/// The closed-loop reference's row of the steps table.
fn closed_loop_row(o: &mut String, label: &str, c: &ClosedLoopStep) {
    let _ = write!(o, "<tr><td data-v=\"0\">{label}</td>");
    num(o, None, "");
    num(o, Some(c.throughput_rps), &rate(c.throughput_rps));
    o.push_str("<td>reference</td>");
    for v in [c.latency_us.p50, c.latency_us.p99, c.latency_us.p99_9] {
        num(o, v.map(|v| v as f64), &v.map_or("–".into(), micros));
    }
    num(o, Some(c.errors as f64), &c.errors.to_string());
    num(
        o,
        c.server_cpu_pct,
        &c.server_cpu_pct.map_or("–".into(), |v| format!("{v:.0}%")),
    );
    num(o, None, "");
    num(o, None, "");
    o.push_str("<td>as fast as the server answers, over the same connections</td></tr>\n");
}
