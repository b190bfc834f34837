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

/// Runs `volley merge`: 0 written, 2 bad or mismatched inputs, 3 the output cannot be written.
pub fn execute(args: &MergeArgs, argv: Vec<String>) -> ExitCode {
    match merge::merge_files(&args.inputs, &args.output, argv, args.force) {
        Ok(m) => {
            for w in &m.warnings {
                eprintln!("volley merge: warning: {w}");
            }
            eprintln!(
                "volley merge: {} shards, {} completed in {:.3} s ({} req/s); wrote {}",
                args.inputs.len(),
                crate::units::thousands(m.requests.completed),
                m.elapsed_s,
                crate::units::rate(m.throughput_rps),
                args.output.display()
            );
            ExitCode::Ok
        }
        Err(e) => {
            eprintln!("volley merge: {e}");
            exit_code(&e)
        }
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
}
