//! The small vocabularies of the file formats, typed: how a load was run, how open-loop
//! arrivals were spread, and what became of a suite's cells and builds. Serde writes them as
//! the lowercase words the JSON has always carried, so files do not change.

use serde::{Deserialize, Serialize};

words! {
    /// The engine's I/O backend (`client.io`, `--io`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum IoBackend {
        /// io_uring: multishot receives into provided buffers, sends submitted with the wait.
        Uring = "uring",
        /// epoll: readiness, then `read`/`write`.
        Epoll = "epoll",
    }
}

words! {
    /// How the load was driven (`load.mode`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Mode {
        /// Each connection sends its next request when the previous response completes.
        Closed = "closed",
        /// Requests are due on a schedule (`-R`), whether or not earlier ones have finished.
        Open = "open",
        /// Virtual users (`--users` or `--stages`), each a closed loop.
        Ramp = "ramp",
    }
}

impl Mode {
    /// Only the open loop measures latency from the due time (coordinated-omission corrected).
    pub fn is_open(self) -> bool {
        self == Mode::Open
    }
}

words! {
    /// How request arrivals are spread in an open-loop (`-R`) run (`load.arrivals`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Arrivals {
        /// Evenly spaced: request i is due at t0 + i/R (wrk2).
        Uniform = "uniform",
        /// Exponential gaps (a Poisson process) from a seeded per-thread generator.
        Poisson = "poisson",
    }
}

words! {
    /// What became of one cell of a suite (`rows[].status` in `suite.json`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum CellStatus {
        /// Not run yet.
        Pending = "pending",
        /// Measured.
        Ok = "ok",
        /// The server would not build, start or answer, or died; see `reason`.
        Failed = "failed",
        /// Ctrl-C during the cell; what was measured up to then is kept.
        Interrupted = "interrupted",
        /// Never run: the suite was interrupted before it.
        Skipped = "skipped",
    }
}

words! {
    /// What became of one server build (`builds[].status`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum BuildStatus {
        /// Not built yet.
        Pending = "pending",
        /// Built.
        Ok = "ok",
        /// The build command failed; the server's cells fail with it.
        Failed = "failed",
        /// Not run: a program the server requires is not installed; its cells are skipped.
        Skipped = "skipped",
    }
}

words! {
    /// Where a suite run is (`state` in `suite.json`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum SuiteState {
        /// Cells are still being run.
        Running = "running",
        /// Every cell ran (or failed).
        Done = "done",
        /// Ctrl-C ended the suite; the cells not run are `skipped`.
        Interrupted = "interrupted",
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
