//! The summary's lines for runs that used to print them wrong: a closed-loop table header, a
//! client with no measured window, a warm-up cut short by Ctrl-C.

use super::summary;
use volley_model::result::{RunResult, Warning};

/// A closed-loop run of the quick suite (50 connections, 4 s after a 1 s warm-up).
fn closed_loop_run() -> RunResult {
    let text = include_str!("../../../../../tests/fixtures/report/quick/runs/go__get__r1.json");
    let mut r = RunResult::from_json(text).expect("fixture");
    r.warnings = vec![Warning::closed_loop()];
    r
}

fn line_of<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in\n{text}"))
}

#[test]
fn the_closed_loop_table_is_headed_once_and_the_warning_said_once() {
    let s = summary(&closed_loop_run());
    assert_eq!(line_of(&s, "Latency"), "  Latency", "{s}");
    assert!(!s.to_lowercase().contains("latency latency"), "{s}");
    assert_eq!(s.matches("coordinated omission").count(), 1, "{s}");
}

#[test]
fn a_run_without_a_measured_window_shows_no_cores() {
    // `-n 1` against a port with no listener: nothing answered, so the window is 0 s while
    // the CPU time covers the connect attempts.
    let mut r = closed_loop_run();
    r.elapsed_s = 0.0;
    r.client.cpu_user_s = 0.0;
    r.client.cpu_sys_s = 0.003;
    let line = line_of(&summary(&r), "Client").to_string();
    assert!(!line.contains("cores"), "{line}");
    assert!(line.contains("CPU 0.00 s"), "{line}");
    r.elapsed_s = 4.0;
    r.client.cpu_sys_s = 2.0;
    let line = line_of(&summary(&r), "Client").to_string();
    assert!(line.contains("= 0.50 cores"), "{line}");
}

#[test]
fn a_warm_up_cut_short_says_how_long_it_ran() {
    let mut r = closed_loop_run();
    r.load.warmup_s = 5.0;
    r.interrupted = true;
    if let Some(w) = r.warmup.as_mut() {
        w.duration_s = 1.004;
    }
    let line = line_of(&summary(&r), "Warm-up").to_string();
    assert!(
        line.contains("Warm-up      1.0 s of 5 s, interrupted:"),
        "{line}"
    );
    // A warm-up that ran to its end is given as it was asked for.
    let line = line_of(&summary(&closed_loop_run()), "Warm-up").to_string();
    assert!(line.contains("Warm-up      1 s:"), "{line}");
}
