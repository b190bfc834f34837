//! What the reports and the summary say, against real runs and saved results: each note said
//! once and true, counts formatted as in the summary, what a misbehaving server sent shown.

mod common;

use std::path::{Path, PathBuf};

use volley::report::{Format, Report};
use volley::result::Warning;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

#[test]
fn the_closed_loop_note_is_said_once_in_every_format() {
    let mut report = Report::load(&[fixture("quick/runs/rust__get__r1.json")]).unwrap();
    for c in &mut report.cells {
        if let Some(r) = c.result.as_mut() {
            r.warnings = vec![Warning::closed_loop()];
        }
    }
    for format in [Format::Terminal, Format::Markdown, Format::Html] {
        let text = format.reporter().render(&report);
        assert_eq!(
            text.matches("coordinated omission").count(),
            1,
            "{format:?}:\n{text}"
        );
        assert!(!text.contains("service time in closed loop"), "{format:?}");
    }
}
