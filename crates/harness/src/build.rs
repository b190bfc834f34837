//! Builds: every managed server with a build line is built once, before any cell; a failed
//! build fails only its server's cells (docs/contract.md, "Suites").

use std::collections::BTreeMap;
use std::time::Instant;

use super::{lifecycle, round3, Harness};
use volley_config::suite::{Managed, ServerKind};
use volley_model::result::BuildStatus;

/// Why a server's build failed, for each of its cells.
pub(super) struct FailedBuild {
    /// The reason, with the build log to see.
    pub reason: String,
    /// The last lines of the build's output.
    pub tail: Vec<String>,
}

impl Harness<'_> {
    /// Builds every managed server once, but those `skipped` (a required program is missing);
    /// returns the failed ones by server name.
    pub(super) fn build_all(
        &mut self,
        skipped: &BTreeMap<String, String>,
    ) -> BTreeMap<String, FailedBuild> {
        let mut failed = BTreeMap::new();
        for s in self.suite.servers.clone() {
            let ServerKind::Managed(m) = &s.kind else {
                continue;
            };
            if skipped.contains_key(&s.name) {
                continue;
            }
            let Some(line) = &m.build else { continue };
            let Some(bi) = self.index.builds.iter().position(|b| b.server == s.name) else {
                continue;
            };
            if self.interrupted() {
                let interrupted = FailedBuild {
                    reason: "interrupted".to_string(),
                    tail: Vec::new(),
                };
                failed.insert(s.name.clone(), interrupted);
                continue;
            }
            if let Err(f) = self.build_one(&s.name, m, line, bi) {
                failed.insert(s.name.clone(), f);
            }
            self.save_index_or_warn();
        }
        failed
    }

    /// Runs one build line, logging it and filling its row `bi` of the index.
    fn build_one(
        &mut self,
        name: &str,
        m: &Managed,
        line: &str,
        bi: usize,
    ) -> Result<(), FailedBuild> {
        self.log.part(&format!("build {name}: {line} ... "));
        let log = self.out_dir.join(&self.index.builds[bi].log);
        let t = Instant::now();
        let r = lifecycle::build(&m.dir, line, &log, self.interrupts);
        let b = &mut self.index.builds[bi];
        b.wall_s = Some(round3(t.elapsed().as_secs_f64()));
        match r {
            Ok(()) => {
                b.status = BuildStatus::Ok;
                self.log
                    .line(&format!("ok ({:.1} s)", t.elapsed().as_secs_f64()));
                Ok(())
            }
            Err(reason) => {
                b.status = BuildStatus::Failed;
                b.reason = Some(reason.clone());
                self.log.line(&format!("FAILED: {reason}"));
                let tail = lifecycle::tail(&log, lifecycle::TAIL_LINES, |_| true);
                for l in &tail {
                    self.log.line(&format!("  | {l}"));
                }
                Err(FailedBuild {
                    reason: format!("{reason} (see {})", self.index.builds[bi].log),
                    tail,
                })
            }
        }
    }
}
