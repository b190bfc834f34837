//! Which runs are repetitions of one test: those whose `load_id` is equal (docs/contract.md,
//! "Load identity"). `Report::series` keeps runs of different loads apart, named by what
//! differs; here two series of a pair that ran different loads are named by what differs, for
//! the refusal or the `--force` note.

use volley_model::result::identity::{self, LoadKey};
use volley_model::result::{CellStatus, RunResult};
use volley_report::model::Series;

/// A series whose finished runs share one load: the unit `compare` pairs and judges.
#[derive(Debug, Clone)]
pub(super) struct LoadSeries<'a> {
    /// The cells; its label names the load when the report's series held several.
    pub series: Series<'a>,
    /// The load as the first finished run's keys record it, for naming differences.
    pub key: Option<LoadKey>,
}

impl<'a> LoadSeries<'a> {
    /// The results of the repetitions that finished.
    pub fn ok(&self) -> Vec<&'a RunResult> {
        self.series
            .cells
            .iter()
            .filter(|c| c.status == CellStatus::Ok)
            .filter_map(|c| c.result.as_ref())
            .collect()
    }
}

/// The report's series as `compare` pairs them: the report already keeps runs of different
/// loads apart (`Report::series`), labelled by what differs; this adds the load's recorded
/// keys, for naming differences across A and B.
pub(super) fn split(series: Vec<Series<'_>>) -> Vec<LoadSeries<'_>> {
    series
        .into_iter()
        .map(|s| {
            let key = s.ok().first().map(|r| LoadKey::of_result(r));
            LoadSeries { key, series: s }
        })
        .collect()
}

/// When A's series `x` and B's series `y` ran different loads: the pair's name and what
/// differs (`run · 127.0.0.1:8080: A /, -d 3s; B /api/items, -d 2s`).
/// None when the loads are equal or a side has no finished run.
pub(super) fn difference(x: &LoadSeries, y: &LoadSeries) -> Option<String> {
    let (Some(ia), Some(ib)) = (&x.series.load_id, &y.series.load_id) else {
        return None;
    };
    if ia == ib {
        return None;
    }
    Some(format!(
        "{} · {}: {}",
        x.series.label,
        x.series.server,
        what_differs(x, y)
    ))
}

/// `A /, -d 3s; B /api/items, -d 2s`, or, when the recorded keys are
/// alike, that the difference lies in what results do not record.
pub(super) fn what_differs(x: &LoadSeries, y: &LoadSeries) -> String {
    let (Some(ka), Some(kb)) = (&x.key, &y.key) else {
        return "loads differ".into();
    };
    let names = identity::labels(&[ka.clone(), kb.clone()]);
    if names.iter().all(String::is_empty) {
        return format!(
            "A load {}, B load {} (they differ in request headers or body content, which \
             results do not show)",
            x.series.load_id.as_deref().unwrap_or("?"),
            y.series.load_id.as_deref().unwrap_or("?")
        );
    }
    format!("A {}; B {}", names[0], names[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use volley_report::model::Report;

    fn run() -> RunResult {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/report/open-loop.json");
        RunResult::from_json(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// A report of one series holding the given runs as repetitions.
    fn report(runs: Vec<RunResult>) -> Report {
        let mut report = Report::single(runs[0].clone());
        let cell = report.cells[0].clone();
        report.cells = runs
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let mut c = cell.clone();
                c.rep = i as u32 + 1;
                c.result = Some(r);
                c
            })
            .collect();
        report
    }

    #[test]
    fn runs_of_one_load_stay_one_series() {
        let r = report(vec![run(), run(), run()]);
        let s = split(r.series());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].ok().len(), 3);
        assert_eq!(s[0].series.label, s[0].series.base_label);
        assert_eq!(s[0].series.load_id, Some(identity::load_id(&run())));
    }

    #[test]
    fn runs_of_other_loads_are_not_pooled() {
        let mut other = run();
        other.load_id = None;
        other.load.duration_s = Some(2.0);
        let mut failed = run();
        failed.load.connections = 99;
        let mut r = report(vec![run(), other.clone(), run(), failed]);
        r.cells[3].status = CellStatus::Failed;
        let s = split(r.series());
        assert_eq!(s.len(), 2, "one series per load");
        assert_eq!(s[0].ok().len(), 2);
        assert_eq!(s[1].ok().len(), 1);
        assert_eq!(
            s[0].series.cells.len(),
            3,
            "the failed cell stays with the first"
        );
        assert!(
            s[0].series.label.starts_with("run (-d "),
            "{}",
            s[0].series.label
        );
        assert!(
            s[1].series.label.ends_with("-d 2s)"),
            "{}",
            s[1].series.label
        );
        let d = difference(&s[0], &s[1]).unwrap();
        assert!(d.contains("A -d ") && d.contains("; B -d 2s"), "{d}");
        assert_eq!(difference(&s[0], &s[0]), None);
    }

    #[test]
    fn differences_outside_the_recorded_keys_are_said_so() {
        let mut other = run();
        other.load_id = Some("0123456789abcdef".into());
        let (ra, rb) = (report(vec![run()]), report(vec![other]));
        let (a, b) = (split(ra.series()), split(rb.series()));
        let d = difference(&a[0], &b[0]).unwrap();
        assert!(d.contains("headers or body content"), "{d}");
        assert!(d.contains("B load 0123456789abcdef"), "{d}");
    }
}
