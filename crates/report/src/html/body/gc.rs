//! The server runtime's garbage collections (`server.gc`): the long-tail study's table, one
//! row per server, with what each source cannot see underneath.

use std::fmt::Write;

use super::{num, opt_f, server_cell, tend, thead, txt};
use crate::html::{escape_html as esc, Group};
use crate::model::{pause_ms, GcFigures};

/// The GC table of a scenario group; nothing when no result has `server.gc`.
pub(super) fn gc_table(o: &mut String, g: &Group) {
    let rows: Vec<_> = g
        .rows
        .iter()
        .filter_map(|row| Some((row, GcFigures::of(&row.results())?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    o.push_str("<h3 id=\"gc\">Garbage collection</h3>");
    thead(
        o,
        &[
            "server",
            "source",
            "collections",
            "pause p50 (ms)",
            "pause p99 (ms)",
            "pause max (ms)",
            "allocated (GB)",
            "allocation rate (MB/s)",
            "requests ≥ p99.9 overlapping a pause",
        ],
    );
    for (row, f) in &rows {
        server_cell(o, row);
        txt(o, &f.source);
        num(
            o,
            Some(f.collections),
            &format!("{}", f.collections.round()),
        );
        for v in [f.p50_ms, f.p99_ms, f.max_ms] {
            num(o, Some(v), &pause_ms(v));
        }
        num(o, f.alloc_gb, &opt_f(f.alloc_gb, |v| format!("{v:.2}")));
        num(o, f.alloc_mb_s, &opt_f(f.alloc_mb_s, |v| format!("{v:.0}")));
        num(o, f.slow_overlap, &esc(&f.overlap_text()));
        o.push_str("</tr>\n");
    }
    tend(o);
    let notes: Vec<_> = rows
        .iter()
        .filter_map(|(row, f)| Some((&row.series.server, f.note.as_ref()?)))
        .collect();
    if !notes.is_empty() {
        o.push_str("<ul class=\"gc-notes\">");
        for (server, note) in notes {
            let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(server), esc(note));
        }
        o.push_str("</ul>\n");
    }
    o.push_str(
        "<p class=\"muted\">Medians over the repetitions with GC figures (the longest pause: of \
         them all). The overlap column: of the requests at or above the run's p99.9 latency, \
         the share whose send-to-response window overlapped a pause.</p>\n",
    );
}
