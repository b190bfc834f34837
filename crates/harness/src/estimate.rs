//! What a suite will run and about how long it takes, before anything starts: the listing of
//! `volley bench --dry-run` and the size check that asks for confirmation (`--yes`) of a large
//! matrix (docs/contract.md, "Suites").

use std::collections::BTreeMap;
use std::time::Duration;

use super::matrix::PlannedCell;
use super::progress::{clock, FIRST_GUESS_OVERHEAD};
use volley_config::suite::SuiteConfig;

/// A matrix of more cells than this asks for confirmation.
pub const CONFIRM_CELLS: usize = 100;

/// A matrix estimated to take longer than this asks for confirmation.
pub const CONFIRM_WALL: Duration = Duration::from_secs(30 * 60);

/// What the estimate counts, said wherever it is shown.
pub const INCLUDES: &str =
    "warm-up + measured time + 2s per cell for start, readiness, drain and stop; builds not included";

/// The size of a planned matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Cells to run (every repetition).
    pub cells: usize,
    /// Estimated wall time of the cells (see [`INCLUDES`]).
    pub wall: Duration,
}

impl Estimate {
    /// The estimate of `cells`.
    pub fn of(cells: &[PlannedCell]) -> Self {
        Estimate {
            cells: cells.len(),
            wall: cells.iter().map(cell_wall).sum(),
        }
    }

    /// Over [`CONFIRM_CELLS`] cells or [`CONFIRM_WALL`]: run only when confirmed.
    pub fn needs_confirmation(&self) -> bool {
        self.cells > CONFIRM_CELLS || self.wall > CONFIRM_WALL
    }

    /// `120 cells, about 1h02m`.
    pub fn summary(&self) -> String {
        format!(
            "{} cell{}, about {}",
            self.cells,
            if self.cells == 1 { "" } else { "s" },
            clock(self.wall)
        )
    }
}

/// One cell's estimated wall time: its warm-up and measured time plus the overhead of a cell.
fn cell_wall(c: &PlannedCell) -> Duration {
    c.cell.planned() + FIRST_GUESS_OVERHEAD
}

/// The dry-run listing: one line per server and scenario (its axes, cells per repetition,
/// repetitions, time), then the total with what the estimate includes.
pub fn listing(suite: &SuiteConfig, cells: &[PlannedCell], skipped: &[String]) -> String {
    // (server index, scenario) -> (cells of repetition 1, wall of all repetitions)
    let mut groups: BTreeMap<(usize, usize), (usize, Duration)> = BTreeMap::new();
    for c in cells {
        let sc = suite
            .scenarios
            .iter()
            .position(|s| s.name == c.scenario)
            .unwrap_or(usize::MAX);
        let g = groups.entry((c.server_idx, sc)).or_default();
        if c.rep == 1 {
            g.0 += 1;
        }
        g.1 += cell_wall(c);
    }
    let reps = suite.repetitions;
    let mut out = format!(
        "volley bench {} --dry-run: {}, {} repetition{}\n",
        suite.name,
        Estimate::of(cells).summary(),
        reps,
        if reps == 1 { "" } else { "s" }
    );
    for ((si, sc), (per_rep, wall)) in &groups {
        let server = &suite.servers[*si].name;
        let scenario = suite.scenarios.get(*sc);
        let first = scenario.and_then(|s| s.cells.first());
        let axes = first
            .map(|c| c.axes.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .unwrap_or_default();
        // Shards that are not an axis are said once for the scenario.
        let shards = match first {
            Some(c) if c.shards > 1 && !axes.contains(&"shards") => {
                format!(" · {} shards each", c.shards)
            }
            _ => String::new(),
        };
        let axes = if axes.is_empty() {
            String::new()
        } else {
            format!(" ({})", axes.join(" × "))
        };
        let note = if skipped.contains(server) {
            " — skipped: a required program is not installed"
        } else {
            ""
        };
        out += &format!(
            "  {server} · {}{axes}{shards}: {per_rep} cell{} × {reps} = {}, about {}{note}\n",
            scenario.map_or("?", |s| s.name.as_str()),
            if *per_rep == 1 { "" } else { "s" },
            per_rep * reps as usize,
            clock(*wall)
        );
    }
    for note in super::matrix::unspoken(suite) {
        out += &format!("  {note}\n");
    }
    out += &format!("The estimate counts {INCLUDES}");
    if cells.iter().any(|c| c.cell.shards > 1) {
        out += "; a cell of N shards starts its processes 1 s + 5 ms × N ahead";
    }
    if cells.iter().any(|c| c.cell.capacity.is_some()) {
        out += &format!(
            "; a capacity cell is guessed at its closed-loop step and {} steps (its search decides how many)",
            volley_config::suite::CAPACITY_STEPS_GUESS
        );
    }
    out += ". Nothing was started.\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn suite(text: &str) -> SuiteConfig {
        SuiteConfig::parse(text, Path::new("t.toml"), 2).unwrap()
    }

    #[test]
    fn counts_cells_and_time() {
        let s = suite(
            "[suite]\nname = \"t\"\nrepetitions = 2\nwarmup = \"1s\"\nduration = \"3s\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[server]]\nname = \"b\"\ncontrol = \"closed-port\"\n[[scenario]]\nname = \"g\"\nconnections = [1, 2, 3]\n",
        );
        let cells = super::super::matrix::plan(&s);
        let e = Estimate::of(&cells);
        assert_eq!(e.cells, 12);
        assert_eq!(e.wall, Duration::from_secs(12 * (1 + 3 + 2)));
        assert!(!e.needs_confirmation());
        let text = listing(&s, &cells, &["b".to_string()]);
        assert!(
            text.contains("12 cells, about 1m12s, 2 repetitions"),
            "{text}"
        );
        assert!(
            text.contains("  a · g (connections): 3 cells × 2 = 6, about 36s\n"),
            "{text}"
        );
        assert!(
            text.contains("  b · g (connections): 3 cells × 2 = 6, about 36s — skipped"),
            "{text}"
        );
        assert!(text.contains("builds not included"), "{text}");
    }

    #[test]
    fn sharded_cells_say_so_and_count_their_lead() {
        let s = suite(
            "[suite]\nname = \"t\"\nduration = \"2s\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[scenario]]\nname = \"g\"\nshards = 4\nrate = 100\n[[scenario]]\nname = \"h\"\nshards = [1, 2]\n",
        );
        let cells = super::super::matrix::plan(&s);
        // 2 s + 2 s overhead each; the sharded ones start 1.02 s and 1.01 s later.
        assert_eq!(
            Estimate::of(&cells).wall,
            Duration::from_millis(3 * 4_000 + 1_020 + 1_010)
        );
        let text = listing(&s, &cells, &[]);
        assert!(
            text.contains("  a · g · 4 shards each: 1 cell × 1 = 1, about 5s\n"),
            "{text}"
        );
        assert!(
            text.contains("  a · h (shards): 2 cells × 1 = 2, about 9s\n"),
            "{text}"
        );
        assert!(text.contains("1 s + 5 ms × N ahead"), "{text}");
    }

    #[test]
    fn large_matrices_need_confirmation() {
        let e = |cells, secs| Estimate {
            cells,
            wall: Duration::from_secs(secs),
        };
        assert!(!e(100, 1800).needs_confirmation());
        assert!(e(101, 10).needs_confirmation());
        assert!(e(2, 1801).needs_confirmation());
    }
}
