//! `volley merge A.json B.json... -o OUT.json [--force]`: the shards of one load as one result.

use std::path::PathBuf;

use clap::Args;

use super::ExitCode;
use crate::merge::{self, MergeError};

/// `volley merge` flags.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// RunResult JSON files of the shards (two or more).
    #[arg(required = true, num_args = 2..)]
    pub inputs: Vec<PathBuf>,

    /// Where to write the merged RunResult.
    #[arg(short = 'o', long = "output", value_name = "OUT.json")]
    pub output: PathBuf,

    /// Merge even when the shards' started_at differ by 10 ms or more (their time series are
    /// then aligned to the nearest second).
    #[arg(long)]
    pub force: bool,
}

/// Runs `volley merge`: 0 written, 1 written but the merged responses failed their checks
/// beyond the implied bound, 2 bad or mismatched inputs, 3 the output cannot be written.
pub(crate) fn execute(args: &MergeArgs, argv: Vec<String>) -> ExitCode {
    match merge::merge_files(&args.inputs, &args.output, argv, args.force) {
        Ok(m) => {
            for w in &m.warnings {
                stderrln!("volley merge: warning: {w}");
            }
            stderrln!(
                "volley merge: {} shards, {} completed in {:.3} s ({} req/s); wrote {}",
                args.inputs.len(),
                crate::units::thousands(m.requests.completed),
                m.elapsed_s,
                crate::units::rate(m.throughput_rps),
                args.output.display()
            );
            judged(&m)
        }
        Err(e) => {
            stderrln!("volley merge: {e}");
            exit_code(&e)
        }
    }
}

/// 1 when the merged responses broke the bound their checks imply (the file is written), else
/// 0.
fn judged(m: &crate::result::RunResult) -> ExitCode {
    let broken: Vec<_> = m.thresholds.iter().filter(|t| !t.pass).collect();
    for t in &broken {
        let measured = t.actual.map_or("no data".into(), |a| format!("{a:.3}%"));
        stderrln!(
            "volley merge: threshold broken: {} (implied by the checks; measured {measured})",
            t.threshold
        );
    }
    if broken.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::NoResponse
    }
}

/// 3 when the output cannot be written; 2 for anything about the inputs.
fn exit_code(e: &MergeError) -> ExitCode {
    match e {
        MergeError::Write { .. } => ExitCode::Failed,
        _ => ExitCode::Usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_usage_errors_and_the_output_a_failure() {
        let mode = MergeError::Mode {
            list: "a.json: closed".into(),
        };
        assert_eq!(exit_code(&mode), ExitCode::Usage);
        let write = MergeError::Write {
            path: "out.json".into(),
            message: "disk full".into(),
        };
        assert_eq!(exit_code(&write), ExitCode::Failed);
    }

    #[test]
    fn a_broken_implied_threshold_exits_1_after_writing() {
        let text = include_str!("../../tests/fixtures/report/open-loop.json");
        let mut m = crate::result::RunResult::from_json(text).unwrap();
        m.thresholds.clear();
        assert_eq!(judged(&m), ExitCode::Ok);
        m.thresholds.push(crate::result::Checked {
            threshold: "checks<=1%".into(),
            actual: Some(2.0),
            pass: false,
            implied: true,
        });
        assert_eq!(judged(&m), ExitCode::NoResponse);
    }
}
