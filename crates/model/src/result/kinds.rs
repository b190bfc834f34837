//! The small vocabularies of the file formats, typed: how a load was run, how open-loop
//! arrivals were spread, and what became of a suite's cells and builds. Serde writes them as
//! the lowercase words the JSON has always carried, so files do not change.

use serde::{Deserialize, Serialize};

/// The engine's I/O backend (`client.io`, `--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoBackend {
    /// io_uring: multishot receives into provided buffers, sends submitted with the wait.
    Uring,
    /// epoll: readiness, then `read`/`write`.
    Epoll,
}

impl IoBackend {
    /// The word in the JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            IoBackend::Uring => "uring",
            IoBackend::Epoll => "epoll",
        }
    }
}

/// How the load was driven (`load.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Each connection sends its next request when the previous response completes.
    Closed,
    /// Requests are due on a schedule (`-R`), whether or not earlier ones have finished.
    Open,
    /// Virtual users (`--users` or `--stages`), each a closed loop.
    Ramp,
}

impl Mode {
    /// The word written in the JSON (`closed`, `open`, `ramp`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Closed => "closed",
            Mode::Open => "open",
            Mode::Ramp => "ramp",
        }
    }

    /// Only the open loop measures latency from the due time (coordinated-omission corrected).
    pub fn is_open(self) -> bool {
        self == Mode::Open
    }

    /// The mode of a word [`Mode::as_str`] writes.
    pub fn parse(word: &str) -> Option<Mode> {
        [Mode::Closed, Mode::Open, Mode::Ramp]
            .into_iter()
            .find(|m| m.as_str() == word)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How request arrivals are spread in an open-loop (`-R`) run (`load.arrivals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced: request i is due at t0 + i/R (wrk2).
    Uniform,
    /// Exponential gaps (a Poisson process) from a seeded per-thread generator.
    Poisson,
}

impl Arrivals {
    /// The word written in the JSON and taken by `--arrivals`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Poisson => "poisson",
        }
    }
}

impl std::fmt::Display for Arrivals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What became of one cell of a suite (`rows[].status` in `suite.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Not run yet.
    Pending,
    /// Measured.
    Ok,
    /// The server would not build, start or answer, or died; see `reason`.
    Failed,
    /// Ctrl-C during the cell; what was measured up to then is kept.
    Interrupted,
    /// Never run: the suite was interrupted before it.
    Skipped,
}

impl CellStatus {
    /// The word written in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Pending => "pending",
            CellStatus::Ok => "ok",
            CellStatus::Failed => "failed",
            CellStatus::Interrupted => "interrupted",
            CellStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for CellStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What became of one server build (`builds[].status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildStatus {
    /// Not built yet.
    Pending,
    /// Built.
    Ok,
    /// The build command failed; the server's cells fail with it.
    Failed,
    /// Not run: a program the server requires is not installed; its cells are skipped.
    Skipped,
}

impl BuildStatus {
    /// The word written in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            BuildStatus::Pending => "pending",
            BuildStatus::Ok => "ok",
            BuildStatus::Failed => "failed",
            BuildStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for BuildStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a suite run is (`state` in `suite.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuiteState {
    /// Cells are still being run.
    Running,
    /// Every cell ran (or failed).
    Done,
    /// Ctrl-C ended the suite; the cells not run are `skipped`.
    Interrupted,
}

impl SuiteState {
    /// The word written in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SuiteState::Running => "running",
            SuiteState::Done => "done",
            SuiteState::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for SuiteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_words_do_not_change() {
        let words = |v: serde_json::Value| v.as_str().unwrap().to_string();
        for m in [Mode::Closed, Mode::Open, Mode::Ramp] {
            assert_eq!(words(serde_json::to_value(m).unwrap()), m.as_str());
        }
        for s in [
            CellStatus::Pending,
            CellStatus::Ok,
            CellStatus::Failed,
            CellStatus::Interrupted,
            CellStatus::Skipped,
        ] {
            assert_eq!(words(serde_json::to_value(s).unwrap()), s.as_str());
        }
        for a in [Arrivals::Uniform, Arrivals::Poisson] {
            assert_eq!(words(serde_json::to_value(a).unwrap()), a.as_str());
        }
        for io in [IoBackend::Uring, IoBackend::Epoll] {
            assert_eq!(words(serde_json::to_value(io).unwrap()), io.as_str());
        }
        assert_eq!(
            serde_json::to_string(&[SuiteState::Running, SuiteState::Done]).unwrap(),
            r#"["running","done"]"#
        );
        assert_eq!(
            serde_json::to_string(&BuildStatus::Failed).unwrap(),
            r#""failed""#
        );
    }
}
