//! Recording a cell: its RunResult is saved at once, and its row of `suite.json` and the
//! reports are rewritten, so a failure later loses nothing (docs/contract.md, "Suites").

use std::time::Duration;

use super::cell::CellOutcome;
use super::folder::UNSAVED;
use super::matrix::PlannedCell;
use super::{round3, Harness};
use volley_model::result::capacity::CapacityResult;
use volley_model::result::{CapacityRow, Headline, RunResult, WarningKind};
use volley_report::Format;

impl Harness<'_> {
    /// Saves the cell's RunResult at once and updates its row and `suite.json`.
    pub(super) fn record(
        &mut self,
        i: usize,
        cell: &PlannedCell,
        mut o: CellOutcome,
        wall: Duration,
    ) {
        self.retry_unsaved();
        let folded_note = match (o.folded.take(), o.result.as_mut()) {
            (Some(f), Some(r)) => self.save_folded(cell, &f, r),
            _ => None,
        };
        let saved = match (&o.result, &o.capacity) {
            (Some(r), _) => Some(self.save_result(i, cell, r)),
            (None, Some(c)) => Some(self.save_capacity(i, cell, c)),
            (None, None) => None,
        };
        let (path, unsaved_note) = match saved {
            Some(Ok(rel)) => (Some(rel), None),
            Some(Err(note)) => (None, Some(note)),
            None => (None, None),
        };
        let mut notes = o.notes;
        if let Some(r) = &o.result {
            notes.extend(warning_notes(r));
            let broken = threshold_notes(r);
            self.thresholds_broken |= !broken.is_empty();
            notes.extend(broken);
        }
        notes.extend(unsaved_note);
        notes.extend(folded_note);
        let log = format!("logs/{}.stderr", cell.id);
        let log = self.out_dir.join(&log).is_file().then_some(log);
        let row = &mut self.index.rows[i];
        row.status = o.status;
        row.reason = o.reason;
        row.stderr_tail = o.stderr_tail;
        row.notes = notes;
        row.path = path;
        row.headline = o.result.as_ref().map(Headline::of);
        row.capacity = o.capacity.as_ref().map(|c| CapacityRow {
            slo: c.slo.clone(),
            max_rate_rps: c.max_rate_rps,
            limited_by: c.limited_by,
            closed_loop_rps: c.closed_loop_reference().map(|l| l.throughput_rps),
            steps: c.steps.len(),
        });
        row.wall_s = Some(round3(wall.as_secs_f64()));
        if log.is_some() {
            row.log = log;
        }
        self.save_index_or_warn();
        self.write_reports();
    }

    /// Writes the result of row `i` to `runs/<cell>.json`: its path, or the row's note when
    /// the write failed.
    fn save_result(
        &mut self,
        i: usize,
        cell: &PlannedCell,
        r: &RunResult,
    ) -> Result<String, String> {
        let rel = format!("runs/{}.json", cell.id);
        let json = Format::Json.render_run(r);
        match volley_model::sys::files::write_atomically(&self.out_dir.join(&rel), json.as_bytes())
        {
            Ok(()) => Ok(rel),
            Err(e) => {
                // A full disk must not lose the measurement: it stays in memory, is tried
                // again after every cell, and is in the final table either way.
                self.log.line(&format!(
                    "volley bench: cannot write {rel}: {e}; kept in memory, retried after every cell"
                ));
                self.unsaved.insert(i, (rel, json, r.clone()));
                Err(format!("{UNSAVED}{e}"))
            }
        }
    }
}

impl Harness<'_> {
    /// Writes a profiled cell's folded stacks to `runs/<cell>.folded`, beside its RunResult,
    /// and names the file in `server.profile.path` (relative to the JSON's folder, as
    /// `volley run --json` does); the row's note when the write failed.
    fn save_folded(
        &mut self,
        cell: &PlannedCell,
        folded: &str,
        r: &mut RunResult,
    ) -> Option<String> {
        let rel = format!("runs/{}.folded", cell.id);
        let path = self.out_dir.join(&rel);
        if let Err(e) = volley_model::sys::files::write_atomically(&path, folded.as_bytes()) {
            let note = format!(
                "cannot write {rel}: {e}; the profile's stacks are lost (its summary is kept)"
            );
            self.log.line(&format!("volley bench: {note}"));
            return Some(note);
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(p) = r.server.as_mut().and_then(|s| s.profile.as_mut()) {
            p.path = name;
        }
        None
    }

    /// Writes a capacity cell's search to `runs/<cell>/capacity.json` (its steps are there
    /// already): its path, or the row's note when the write failed (kept in memory and tried
    /// again after every cell, as a RunResult is).
    fn save_capacity(
        &mut self,
        i: usize,
        cell: &PlannedCell,
        c: &CapacityResult,
    ) -> Result<String, String> {
        let rel = format!("runs/{}/capacity.json", cell.id);
        let json = serde_json::to_string_pretty(c).unwrap_or_default() + "\n";
        match volley_model::sys::files::write_atomically(&self.out_dir.join(&rel), json.as_bytes())
        {
            Ok(()) => Ok(rel),
            Err(e) => {
                self.log.line(&format!(
                    "volley bench: cannot write {rel}: {e}; kept in memory, retried after every cell"
                ));
                self.unsaved_capacity.insert(i, (rel, json, c.clone()));
                Err(format!("{UNSAVED}{e}"))
            }
        }
    }
}

/// The run's warnings as row notes; the closed-loop one is left out, as every closed-loop cell
/// would carry it.
fn warning_notes(r: &RunResult) -> impl Iterator<Item = String> + '_ {
    r.warnings
        .iter()
        .filter(|w| w.kind() != WarningKind::ClosedLoop)
        .map(|w| w.text().to_string())
}

/// A note per threshold the run broke.
fn threshold_notes(r: &RunResult) -> Vec<String> {
    r.thresholds
        .iter()
        .filter(|t| !t.pass)
        .map(|t| {
            format!(
                "threshold broken: {}{} (measured {})",
                t.threshold,
                if t.implied {
                    ", implied by the checks"
                } else {
                    ""
                },
                t.actual.map_or("nothing".into(), |a| a.to_string())
            )
        })
        .collect()
}
