//! The suite index (`suite.json`) as it starts — the environment, a pending row per cell and
//! build — and the versions of the servers, recorded after the builds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::matrix::PlannedCell;
use super::Harness;
use volley_config::suite::{ServerKind, SuiteConfig};
use volley_model::result::{
    BuildRow, BuildStatus, SuiteEnv, SuiteIndex, SuitePinning, SuiteState, SUITE_SCHEMA,
};
use volley_model::sys::cpus;
use volley_monitor::procfs;

/// The index of a suite about to run: its environment, and every build and cell pending.
pub(super) fn new_index(suite: &SuiteConfig, only: &[String], cells: &[PlannedCell]) -> SuiteIndex {
    SuiteIndex {
        schema: SUITE_SCHEMA.to_string(),
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        suite_file: suite.path.display().to_string(),
        suite: {
            let mut raw = suite.raw.clone();
            volley_model::result::redact::json(&mut raw);
            raw
        },
        baseline: suite.baseline.clone(),
        only: only.to_vec(),
        env: environment(suite),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        finished_at: None,
        state: SuiteState::Running,
        builds: pending_builds(suite),
        rows: cells.iter().map(|c| c.pending_row()).collect(),
    }
}

/// The machine, the pinning asked for and volley's version (the servers' come later).
fn environment(suite: &SuiteConfig) -> SuiteEnv {
    let text = |p: &str| std::fs::read_to_string(p).ok();
    let mut tools = BTreeMap::new();
    tools.insert("volley".to_string(), env!("CARGO_PKG_VERSION").to_string());
    SuiteEnv {
        cpu_model: text("/proc/cpuinfo").and_then(|t| procfs::parse_cpu_model(&t)),
        cores: cpus::online(),
        kernel: text("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
        pinning: SuitePinning {
            client_cpus: suite.client_cpus.as_ref().map(|c| c.text.clone()),
            server_cpus: suite.server_cpus.as_ref().map(|c| c.text.clone()),
        },
        tools,
    }
}

/// A pending row for every managed server with a build line.
fn pending_builds(suite: &SuiteConfig) -> Vec<BuildRow> {
    suite
        .servers
        .iter()
        .filter_map(|s| match &s.kind {
            ServerKind::Managed(m) if m.build.is_some() => Some(BuildRow {
                server: s.name.clone(),
                status: BuildStatus::Pending,
                reason: None,
                log: format!("logs/{}.build.log", s.name),
                wall_s: None,
            }),
            _ => None,
        })
        .collect()
}

impl Harness<'_> {
    /// First output line of each server's `version` command (10 s at most); a server
    /// `skipped` for a missing program is `not installed`.
    pub(super) fn record_versions(&mut self, skipped: &BTreeMap<String, String>) {
        for s in &self.suite.servers {
            let Some(cmd) = &s.version else { continue };
            if skipped.contains_key(&s.name) {
                let v = "not installed".to_string();
                self.index.env.tools.insert(s.name.clone(), v);
                continue;
            }
            let dir = match &s.kind {
                ServerKind::Managed(m) => m.dir.clone(),
                _ => PathBuf::from("."),
            };
            let v = version_of(cmd, &dir).unwrap_or_else(|e| format!("unknown ({e})"));
            self.index.env.tools.insert(s.name.clone(), v);
        }
    }
}

/// Runs a `version` command in `dir` through `sh -c`: the first non-empty line of its output
/// (stderr too, where many tools print their version), at most 200 characters.
fn version_of(cmd: &str, dir: &Path) -> Result<String, String> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} 2>&1"))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("timed out".into());
            }
        }
    }
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut so, &mut out);
    }
    out.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(200).collect())
        .ok_or_else(|| "no output".to_string())
}
