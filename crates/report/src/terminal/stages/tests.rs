//! The rate-stage block: a row per second (or per group of seconds in a long run), its sums
//! kept, and nothing at all for the runs without targets.

use super::{bar, over_time};
use crate::terminal::summary;
use volley_model::result::{RateStageInfo, RunResult};
use volley_model::stats::TimePoint;

/// The saved open-loop run (2,000 req/s for 3 s), made a run of `stages` with `points`
/// as its seconds.
fn staged(stages: &[(f64, f64)], points: Vec<TimePoint>) -> RunResult {
    let text = include_str!("../../../../../tests/fixtures/report/open-loop.json");
    let mut r = RunResult::from_json(text).expect("fixture");
    r.load.rate_stages = Some(
        stages
            .iter()
            .map(|&(duration_s, rate_rps)| RateStageInfo {
                duration_s,
                rate_rps,
            })
            .collect(),
    );
    r.timeseries = points;
    r
}

/// Second `t` with its target, sent and completed.
fn second(t: u64, target: f64, sent: u64, completed: u64) -> TimePoint {
    TimePoint {
        sent,
        completed,
        target: Some(target),
        ..TimePoint::empty(t)
    }
}

fn block(r: &RunResult) -> String {
    let mut o = String::new();
    over_time(&mut o, r);
    o
}

#[test]
fn each_second_is_a_row_of_its_target_sent_and_completed() {
    // 0 → 2,000/s over 2 s, then 2,000/s for 1 s; the last second fell short, then the drain.
    let mut drain = second(3, 0.0, 0, 212);
    drain.interval_s = 0.05;
    let r = staged(
        &[(2.0, 2000.0), (1.0, 2000.0)],
        vec![
            second(0, 500.0, 500, 499),
            second(1, 1500.0, 1499, 1500),
            second(2, 2000.0, 1500, 1290),
            drain,
        ],
    );
    let want = [
        "  Stages       each second: target (requests due by the stages) beside sent and completed",
        "    seconds          target      sent  completed   sent %  sent, | target",
        "    0–1               500.0       500        499  100.0 %  █████",
        "    1–2             1,500.0     1,499      1,500   99.9 %  ███████████████",
        "    2–3             2,000.0     1,500      1,290   75.0 %  ███████████████    |",
        "    3–3.05              0.0         0        212        -",
        "",
        "",
    ];
    assert_eq!(block(&r), want.join("\n"));
    // In the summary, after the throughput and before the latency table.
    let s = summary(&r);
    let (stages, latency) = (s.find("  Stages  ").unwrap(), s.find("  Latency").unwrap());
    assert!(
        s.find("  Throughput").unwrap() < stages && stages < latency,
        "{s}"
    );
}

#[test]
fn a_long_run_is_grouped_into_at_most_twenty_rows() {
    let points: Vec<TimePoint> = (0..95)
        .map(|t| second(t, 100.5, 100 + t % 2, 100))
        .collect();
    let sent: u64 = points.iter().map(|p| p.sent).sum();
    let r = staged(&[(95.0, 100.5)], points);
    let text = block(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("each 5 s: target"), "{text}");
    let rows = &lines[2..lines.len() - 1];
    assert_eq!(rows.len(), 19, "{text}");
    assert!(
        rows[0].starts_with("    0–5  ") && rows[0].contains("    502.5  "),
        "{text}"
    );
    assert!(rows[18].starts_with("    90–95  "), "{text}");
    let summed: u64 = rows
        .iter()
        .map(|l| {
            let sent = l.split_whitespace().nth(2).unwrap().replace(',', "");
            sent.parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(summed, sent, "the groups add up to the run:\n{text}");
}

#[test]
fn runs_without_targets_draw_nothing() {
    // An open loop at one rate.
    let text = include_str!("../../../../../tests/fixtures/report/open-loop.json");
    let plain = RunResult::from_json(text).expect("fixture");
    assert!(block(&plain).is_empty());
    assert!(!summary(&plain).contains("Stages"));
    // Stages whose seconds carry no target (a merge of shards keeps none).
    let mut merged = staged(&[(3.0, 2000.0)], plain.timeseries.clone());
    assert!(block(&merged).is_empty());
    // Targets without stages (not written by volley) are not drawn either.
    merged.load.rate_stages = None;
    merged.timeseries[0].target = Some(1.0);
    assert!(block(&merged).is_empty());
}

#[test]
fn the_bar_is_sent_in_eighths_with_the_target_marked_beyond_it() {
    assert_eq!(bar(400.0, 400.0, 400.0), "█".repeat(20));
    // 150 of 400: 7½ cells; the target of 200 ends at cell 10.
    assert_eq!(bar(150.0, 200.0, 400.0), "███████▌ |");
    // The target within the bar: no mark.
    assert_eq!(bar(200.0, 190.0, 400.0), "██████████");
    assert_eq!(bar(0.0, 20.0, 400.0), "|");
    assert_eq!(bar(0.0, 0.0, 0.0), "");
}
