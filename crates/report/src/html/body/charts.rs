//! The chart slots of a group: empty figures the page's script fills from the JSON data.

use std::fmt::Write;

use crate::html::{escape_html as esc, GroupData};

/// Chart slots; the page's script fills each from `PageData` by group and index.
pub(super) fn charts(o: &mut String, i: usize, d: &GroupData, servers: &[String]) {
    let slots = slots(d);
    if slots.is_empty() {
        return;
    }
    o.push_str("<div class=\"charts\">");
    for (title, kind) in &slots {
        let _ = write!(
            o,
            "<figure><figcaption>{}</figcaption><div class=\"chart\" data-chart=\"{kind}\" data-group=\"{i}\"></div></figure>",
            esc(title)
        );
    }
    o.push_str("</div>\n");
    cpu_charts(o, i, d, servers);
}

/// The charts the data can draw, as (caption, kind): a chart that would show nothing the
/// tables do not is left out.
fn slots(d: &GroupData) -> Vec<(String, &'static str)> {
    // A chart needs a line, and a line two points: a single value is in the tables already.
    let line = |v: &[Option<u64>]| v.iter().filter(|x| x.is_some()).count() >= 2;
    let mut slots: Vec<(String, &'static str)> = Vec::new();
    if d.hdr.iter().any(|l| l.x.len() >= 2) {
        let dashed = if d.hdr.iter().any(|l| l.service) {
            "; solid: corrected latency (from the due time), dashed: service time (from the write)"
        } else {
            ""
        };
        slots.push((
            format!("Latency by percentile, repetitions merged{dashed}"),
            "hdr",
        ));
    }
    // One bar of one run says nothing the table does not.
    if d.throughput.len() > 1 || d.throughput.iter().any(|b| b.runs > 1) {
        slots.push((
            "Throughput, req/s: median (bar) and min–max over the repetitions (whisker)".into(),
            "throughput",
        ));
    }
    if d.over_time
        .iter()
        .any(|s| s.rps.iter().filter(|x| x.is_some()).count() >= 2)
    {
        let staged = if d.over_time.iter().any(|s| s.target_rps.is_some()) {
            "; rate stages: completed (thick), sent (thin) and the target of the stages (dashed)"
        } else {
            ""
        };
        slots.push((
            format!("Throughput over time, req/s (the median-throughput repetition){staged}"),
            "rps-time",
        ));
    }
    let pauses = d.gc.iter().any(|g| !g.pause_ms.is_empty());
    if d.over_time.iter().any(|s| line(&s.p50_us)) {
        let markers = if pauses {
            "; GC pauses: diamonds on stems at their start, height = pause length (right axis, ms)"
        } else {
            ""
        };
        slots.push((
            format!("Latency over time: p50 (solid) and p99 (dashed) per second{markers}"),
            "latency-time",
        ));
    }
    if pauses {
        slots.push((
            "GC pauses: each pause at its start, by length (ms)".into(),
            "gc-pauses",
        ));
    }
    if d.gc.iter().any(|g| g.alloc_mb_s.len() >= 2) {
        slots.push((
            "Allocation rate over time, MB/s (from the heap before and after collections)".into(),
            "gc-alloc",
        ));
    }
    if !d.resources.is_empty() {
        slots.push((
            "Server memory over time: resident set size (Σ over the process tree)".into(),
            "rss-time",
        ));
    }
    slots
}

/// One small CPU chart per server with monitor samples, under the others.
fn cpu_charts(o: &mut String, i: usize, d: &GroupData, servers: &[String]) {
    if d.resources.is_empty() {
        return;
    }
    o.push_str("<h3>Server CPU over time: user and system, stacked (% of one core)</h3><div class=\"charts small\">");
    for (k, r) in d.resources.iter().enumerate() {
        let _ = write!(
            o,
            "<figure><figcaption><span class=\"swatch s{}\"></span>{} <small>(rep {})</small></figcaption><div class=\"chart\" data-chart=\"cpu\" data-group=\"{i}\" data-index=\"{k}\"></div></figure>",
            r.server % 10,
            esc(&servers[r.server]),
            r.rep
        );
    }
    o.push_str("</div>\n");
}
