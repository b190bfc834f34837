//! A capacity cell (`capacity = {…}` scenario): one server started once, then volley
//! capacity's search over it — the closed-loop reference and open-loop steps, with an idle wait
//! before each — each step's RunResult in `runs/<cell>/`, the search's `capacity.json` beside
//! them (docs/contract.md, "Capacity", "Suites").

use std::time::SystemTime;

use super::cell::{cell_argv, cell_config, CellOutcome, Given};
use super::matrix::PlannedCell;
use super::Harness;
use volley_capacity::session::{self, About, Searched};
use volley_capacity::{Search, Steps};
use volley_config::suite::capacity::CapacitySpec;
use volley_model::result::capacity::Phase;
use volley_model::result::CellStatus;
use volley_model::sys::cpus;
use volley_report::capacity::text;

impl Harness<'_> {
    /// Searches the capacity of the server at `url` with the cell's load; `given` is what the
    /// harness gave the server it started (its process group is monitored and idle-waited on).
    pub(super) fn search_cell(
        &mut self,
        cell: &PlannedCell,
        spec: &CapacitySpec,
        url: &str,
        cores: usize,
        given: Option<Given>,
    ) -> CellOutcome {
        let pid = given.as_ref().map(|g| g.pid);
        let gc_log = given.as_ref().and_then(|g| g.gc_log.clone());
        let (base, flags) = match cell_config(cell, url, given) {
            Ok(c) => c,
            Err(reason) => return CellOutcome::failed(reason, Vec::new()),
        };
        let rel = format!("runs/{}", cell.id);
        let out = self.out_dir.join(&rel);
        if let Err(e) = std::fs::create_dir_all(&out) {
            return CellOutcome::failed(format!("{}: {e}", out.display()), Vec::new());
        }
        let cpu_list = self
            .suite
            .client_cpus
            .as_ref()
            .map_or_else(|| cpus::allowed().1, |c| c.text.clone());
        let server_cpus = self.suite.server_cpus.as_ref().map(|c| c.text.clone());
        let argv = cell_argv(url, &flags, pid, gc_log.as_ref());
        let about = About {
            argv: volley_model::result::redact::argv(&argv),
            url: volley_model::result::redact::url(url).into_owned(),
            slo: spec.slo.iter().map(|t| t.text.clone()).collect(),
            started_at: SystemTime::now(),
        };
        let search = Search {
            start_rps: spec.start_rate as f64,
            max_rps: spec.max_rate.map(|m| m as f64),
            precision: spec.precision,
            repeat: spec.repeat,
        };
        let log = &mut *self.log;
        let mut n = 0;
        let mut steps = Steps {
            base,
            argv,
            step: cell.cell.step_duration(),
            slo: spec.slo.clone(),
            cores,
            cpu_list,
            server_cpus,
            interrupts: self.interrupts,
            out,
            shown_out: rel.clone().into(),
            done: Vec::new(),
            notes: Vec::new(),
            on_step: Box::new(|s| {
                n += 1;
                log.line(&format!("      {}", text::step_line(n, s)));
            }),
            env: None,
            live: None,
            phase: Phase::Ramp,
        };
        let Searched { found, result } = if spec.sweep {
            let setup = session::sweep::SweepSetup {
                from_rps: spec.start_rate as f64,
                to_rps: spec.max_rate.map(|m| m as f64),
                duration: spec.sweep_duration,
                window: spec.sweep_window,
                confirm: spec.confirm,
            };
            let closed = spec.closed_loop;
            session::sweep::run(&mut steps, &setup, &search, closed, about, &mut |_| {})
        } else {
            session::run(&mut steps, &search, spec.closed_loop, about, &mut |_| {})
        };
        drop(steps);
        let (status, reason) = if found.interrupted {
            (
                CellStatus::Interrupted,
                Some("interrupted (the finished steps are kept)".to_string()),
            )
        } else if let Some(e) = &found.error {
            (
                CellStatus::Failed,
                Some(format!("a step could not run: {e}")),
            )
        } else {
            (CellStatus::Ok, None)
        };
        let mut notes = result.notes.clone();
        notes.push(text::summary(&result));
        notes.extend(text::versus_closed_loop(&result));
        CellOutcome {
            status,
            reason,
            stderr_tail: Vec::new(),
            notes,
            result: None,
            capacity: Some(result),
            folded: None,
        }
    }
}
