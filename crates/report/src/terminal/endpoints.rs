//! The summary's workload part (`--requests-file`, `--expect-*`): which file ran, the checks
//! that failed, and a table of the named requests — their share of the mix, throughput,
//! corrected latency, failed responses and errors.

use std::fmt::Write as _;

use volley_model::result::RunResult;
use volley_model::units::{opt_micros, thousands};

/// `  Requests file  mix.toml (3 requests, weighted, 2 named; sha256 1a2b3c4d…)`.
pub(crate) fn requests_file(o: &mut String, r: &RunResult) {
    let Some(f) = &r.target.requests_file else {
        return;
    };
    let _ = writeln!(
        o,
        "  Workload     {} ({} request{}, {}, {} named; sha256 {}…)",
        f.path,
        f.requests,
        if f.requests == 1 { "" } else { "s" },
        f.order,
        f.names,
        &f.sha256[..f.sha256.len().min(8)]
    );
}

/// `  Checks       failed: body_contains 200 · status 3` (or `all passed`).
pub(crate) fn checks(o: &mut String, r: &RunResult) {
    if r.checks.is_empty() {
        return;
    }
    let failed: Vec<String> = r
        .checks
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {}", thousands(*n)))
        .collect();
    let _ = writeln!(
        o,
        "  Checks       {}",
        if failed.is_empty() {
            "every response passed".to_string()
        } else {
            format!(
                "failed: {} ({} responses in requests.failed)",
                failed.join(" · "),
                thousands(r.requests.failed)
            )
        }
    );
}

/// `  Journey      8 users started · 96 steps skipped (a value they need was not captured) ·
/// captures missed: not_json 50` (the words: `report::journey`).
pub(crate) fn journey(o: &mut String, r: &RunResult) {
    let Some(j) = &r.journey else {
        return;
    };
    let _ = writeln!(o, "  Journey      {}", crate::journey::parts(j).join(" · "));
}

/// The named requests, one line each.
pub fn table(o: &mut String, r: &RunResult) {
    if r.endpoints.is_empty() {
        return;
    }
    let total: u64 = r.requests.sent.max(1);
    let elapsed = r.elapsed_s.max(1e-9);
    let journey = r.journey.is_some();
    let mut rows: Vec<Vec<String>> = vec![vec![
        "name".into(),
        "request".into(),
        "share".into(),
        "req/s".into(),
        "p50".into(),
        "p99".into(),
        "p99.9".into(),
        "failed".into(),
        "errors".into(),
    ]];
    if journey {
        rows[0].push("skipped".into());
    }
    for e in &r.endpoints {
        rows.push(vec![
            e.name.clone(),
            request_of(e),
            format!("{:.1} %", e.requests.sent as f64 / total as f64 * 100.0),
            volley_model::units::rate(e.requests.completed as f64 / elapsed),
            opt_micros(e.latency_us.p50),
            opt_micros(e.latency_us.p99),
            opt_micros(e.latency_us.p99_9),
            thousands(e.requests.failed),
            thousands(e.requests.errors),
        ]);
        if journey {
            let row = rows.last_mut().expect("just pushed");
            row.push(thousands(e.requests.skipped.unwrap_or(0)));
        }
    }
    let mut width = vec![0usize; rows[0].len()];
    for row in &rows {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let _ = writeln!(
        o,
        "\n  By request   (named requests of the file; the numbers above are the whole mix)"
    );
    for row in &rows {
        let mut line = String::from("    ");
        for (k, (c, w)) in row.iter().zip(width.iter().copied()).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            if k < 2 {
                line += &format!("{c}{pad}  ");
            } else {
                line += &format!("{pad}{c}  ");
            }
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

/// `METHOD path`, or what `other` holds when it took the templates past the cap (its method
/// and path are empty: it has no one of each).
fn request_of(e: &volley_model::result::endpoint::EndpointResult) -> String {
    if e.method.is_empty() && e.path.is_empty() {
        "(templates past the first 100 names)".into()
    } else {
        format!("{} {}", e.method, e.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_model::result::journey::JourneyResult;

    fn mix() -> RunResult {
        RunResult::from_json(include_str!("../../../../tests/fixtures/report/mix.json")).unwrap()
    }

    fn journey_line(r: &RunResult) -> String {
        let mut o = String::new();
        journey(&mut o, r);
        o
    }

    #[test]
    fn a_run_without_a_journey_has_no_journey_line() {
        assert_eq!(journey_line(&mix()), "");
    }

    #[test]
    fn the_journey_line_says_the_users_started_and_that_nothing_was_skipped() {
        let mut r = mix();
        r.journey = Some(JourneyResult {
            users_started: 8,
            ..Default::default()
        });
        assert_eq!(
            journey_line(&r),
            "  Journey      8 users started · no step skipped\n"
        );
    }

    #[test]
    fn the_journey_line_says_what_was_skipped_and_which_captures_missed() {
        let mut r = mix();
        r.journey = Some(JourneyResult {
            users_started: 1,
            skipped: 2_400,
            captures_missed: [
                ("not_json".to_string(), 11_227),
                ("no_value".to_string(), 3),
            ]
            .into_iter()
            .collect(),
            values_cut: 1,
            cookies_refused: 2,
            ..Default::default()
        });
        assert_eq!(
            journey_line(&r),
            "  Journey      1 user started · 2,400 steps skipped (a value they need was not \
             captured) · captures missed: no_value 3, not_json 11,227 · 1 value cut at 4 KiB · \
             2 cookies refused\n"
        );
        // The open loop counts its arrivals first, and those that never started.
        let j = r.journey.as_mut().unwrap();
        j.arrivals = Some(1_000);
        j.arrivals_unsent = Some(12);
        let line = journey_line(&r);
        assert!(
            line.starts_with("  Journey      1,000 arrivals (12 never started) · 1 user started"),
            "{line}"
        );
    }
}
