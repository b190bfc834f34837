//! The results folder: its default name, the space check and preparing it before the start,
//! and the files rewritten as the suite goes (`suite.json`, reports) — each atomically, with
//! results a full disk refused kept in memory and retried (docs/contract.md, "Suites").

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::Harness;
use volley_report::{Format, Report};

/// Start of the note on a row whose result is not on disk yet.
pub(super) const UNSAVED: &str =
    "result not written yet (kept in memory, retried after every cell): ";

/// `results/<suite>-<UTC timestamp>/`.
pub(super) fn default_out(name: &str) -> PathBuf {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    PathBuf::from("results").join(format!("{name}-{stamp}"))
}

/// Creates the results folder; an existing non-empty one is refused (its results stay).
pub(super) fn prepare_out(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| e.to_string())?
            .next()
            .is_none();
        if !empty {
            return Err(
                "exists and is not empty (results are never overwritten; choose another folder)"
                    .into(),
            );
        }
    }
    for sub in ["", "runs", "logs"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Space a suite needs, roughly: a RunResult and logs per cell, and the reports (rewritten
/// through a temporary copy after every cell).
fn space_needed(cells: usize) -> u64 {
    16 * 1024 * 1024 + cells as u64 * 128 * 1024
}

/// Refuses to start when the results folder's file system cannot hold the suite's results.
pub(super) fn check_space(dir: &Path, cells: usize) -> Result<(), String> {
    // The folder may not exist yet: its nearest existing ancestor is on the same file system.
    let existing = dir
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    let Some(free) = free_bytes(existing) else {
        return Ok(());
    };
    let need = space_needed(cells);
    if free < need {
        return Err(format!(
            "only {} free; {cells} cells need about {} for their results and reports",
            volley_model::units::bytes(free),
            volley_model::units::bytes(need)
        ));
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on `dir`'s file system.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the struct we own from a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

impl Harness<'_> {
    /// Writes `suite.json` atomically (a reader never sees half a file).
    pub(super) fn save_index(&mut self) -> std::io::Result<()> {
        let mut json = serde_json::to_string_pretty(&self.index).map_err(std::io::Error::other)?;
        json.push('\n');
        volley_model::sys::files::write_atomically(
            &self.out_dir.join("suite.json"),
            json.as_bytes(),
        )
    }

    /// Writes `suite.json`; a failure is warned about and remembered, not fatal.
    pub(super) fn save_index_or_warn(&mut self) {
        let r = self.save_index();
        self.wrote("suite.json", r);
    }

    /// Keeps track of the files whose last write failed (warning once per failure, and when
    /// one is written again); the suite exits 3 if any is still unwritten at the end.
    fn wrote(&mut self, name: &'static str, r: std::io::Result<()>) {
        match r {
            Ok(()) => {
                if self.unwritten.remove(name) {
                    let line = format!(
                        "volley bench: wrote {} again",
                        self.out_dir.join(name).display()
                    );
                    self.log.line(&line);
                }
            }
            Err(e) => {
                if self.unwritten.insert(name) {
                    let line = format!(
                        "volley bench: cannot write {}: {e}",
                        self.out_dir.join(name).display()
                    );
                    self.log.line(&line);
                }
            }
        }
    }

    /// Tries again to write the results a full disk refused.
    pub(super) fn retry_unsaved(&mut self) {
        let pending: Vec<(usize, String, String)> = self
            .unsaved
            .iter()
            .map(|(i, (rel, json, _))| (*i, rel.clone(), json.clone()))
            .chain(
                self.unsaved_capacity
                    .iter()
                    .map(|(i, (rel, json, _))| (*i, rel.clone(), json.clone())),
            )
            .collect();
        for (i, rel, json) in pending {
            if volley_model::sys::files::write_atomically(&self.out_dir.join(&rel), json.as_bytes())
                .is_ok()
            {
                let row = &mut self.index.rows[i];
                row.path = Some(rel.clone());
                row.notes.retain(|n| !n.starts_with(UNSAVED));
                self.log
                    .line(&format!("volley bench: wrote {rel} (it failed before)"));
                self.unsaved.remove(&i);
                self.unsaved_capacity.remove(&i);
            }
        }
    }

    /// The report of everything so far, with the results still waiting to be written. Rows
    /// are the report's cells and capacity entries in order, each kind apart.
    pub(super) fn report(&self) -> Report {
        let mut report = Report::suite(self.index.clone(), &self.out_dir);
        let rows = &self.index.rows;
        let position = |i: usize, capacity: bool| {
            rows[..i]
                .iter()
                .filter(|r| r.capacity.is_some() == capacity)
                .count()
        };
        for (i, (_, _, r)) in &self.unsaved {
            if let Some(c) = report.cells.get_mut(position(*i, false)) {
                c.result = Some(r.clone());
            }
        }
        for (i, (_, _, r)) in &self.unsaved_capacity {
            if let Some(c) = report.capacity.get_mut(position(*i, true)) {
                c.result = Some(r.clone());
            }
        }
        report
    }

    /// `report.html`, `report.md` and `results.csv` of everything so far, after every cell, so
    /// a crash still leaves a report.
    pub(super) fn write_reports(&mut self) {
        let report = self.report();
        for (name, format) in [
            ("report.html", Format::Html),
            ("report.md", Format::Markdown),
            ("results.csv", Format::Csv),
        ] {
            let text = format.reporter().render(&report);
            let r = volley_model::sys::files::write_atomically(
                &self.out_dir.join(name),
                text.as_bytes(),
            );
            self.wrote(name, r);
        }
        // The capacity cells' steps: their columns are not a RunResult's.
        if !report.capacity.is_empty() {
            let name = "capacity.csv";
            let text = volley_report::capacity::csv::render(&report.capacity);
            let r = volley_model::sys::files::write_atomically(
                &self.out_dir.join(name),
                text.as_bytes(),
            );
            self.wrote(name, r);
        }
    }
}
