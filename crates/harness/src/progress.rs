//! Progress of the whole matrix on stderr: cell n of N, elapsed, ETA, and each cell's
//! headline numbers. The estimate is the planned time left (warm-up + measured time of every
//! remaining cell) plus the overhead per cell seen so far (start, ready, drain, stop).

use std::path::Path;
use std::time::Duration;

use super::matrix::PlannedCell;
use volley_config::suite::SuiteConfig;
use volley_model::result::SuiteRow;
use volley_model::units::{bytes, opt_micros, rate};

/// Overhead assumed per cell before one has finished (start, ready, drain, stop).
pub(super) const FIRST_GUESS_OVERHEAD: Duration = Duration::from_secs(2);

/// The matrix's clock.
pub(crate) struct Progress {
    /// Each cell's warm-up and measured time; None for a cell that will not run.
    planned: Vec<Option<Duration>>,
    /// Capacity cells: their time is a guess, so it teaches nothing about the overhead.
    searches: Vec<bool>,
    done: usize,
    overhead_sum: Duration,
}

impl Progress {
    /// For the cells about to run.
    pub fn new(cells: &[PlannedCell]) -> Self {
        Progress {
            planned: cells.iter().map(|c| Some(c.cell.planned())).collect(),
            searches: cells.iter().map(|c| c.cell.capacity.is_some()).collect(),
            done: 0,
            overhead_sum: Duration::ZERO,
        }
    }

    /// The first line: what will run and where it goes.
    pub(crate) fn header(&self, suite: &SuiteConfig, out: &Path) -> String {
        format!(
            "volley bench {}: {} cells ({} per repetition × {} repetition{}, {} server{}), about {}; results in {}",
            suite.name,
            self.planned.len(),
            suite.cells_per_rep(),
            suite.repetitions,
            if suite.repetitions == 1 { "" } else { "s" },
            suite.servers.len(),
            if suite.servers.len() == 1 { "" } else { "s" },
            clock(self.eta(0)),
            out.display()
        )
    }

    /// Time left from the start of cell `i` on.
    pub(crate) fn eta(&self, i: usize) -> Duration {
        let overhead = if self.done == 0 {
            FIRST_GUESS_OVERHEAD
        } else {
            self.overhead_sum / self.done as u32
        };
        self.planned[i.min(self.planned.len())..]
            .iter()
            .flatten()
            .map(|p| *p + overhead)
            .sum()
    }

    /// Cell `i` will not run (its server is skipped): it leaves the estimate.
    pub(crate) fn skip(&mut self, i: usize) {
        self.planned[i] = None;
    }

    /// The line printed when cell `i` starts.
    pub(crate) fn starting(&self, i: usize, c: &PlannedCell, elapsed: Duration) -> String {
        let axes = c.cell.axes_label();
        let sharded = c.cell.shards > 1 && !c.cell.axes.iter().any(|(k, _)| k == "shards");
        format!(
            "[{:>w$}/{}] {} · {}{}{} · rep {} · elapsed {} · ETA {}",
            i + 1,
            self.planned.len(),
            c.server,
            c.scenario,
            if axes.is_empty() {
                String::new()
            } else {
                format!(" {axes}")
            },
            if sharded {
                format!(" · {} shards", c.cell.shards)
            } else {
                String::new()
            },
            c.rep,
            clock(elapsed),
            clock(self.eta(i)),
            w = self.planned.len().to_string().len()
        )
    }

    /// Cell `i` took `wall`.
    pub(crate) fn finished(&mut self, i: usize, wall: Duration) {
        if self.searches[i] {
            return;
        }
        self.done += 1;
        self.overhead_sum += wall.saturating_sub(self.planned[i].unwrap_or_default());
    }
}

/// The line after a cell: its headline numbers, or why it failed.
pub(crate) fn outcome_line(row: &SuiteRow) -> String {
    let mut s = match (&row.headline, row.status.as_str()) {
        (None, status) if row.capacity.is_some() => {
            // The search's own answer is the row's last note (`Max sustainable rate: …`).
            let answer = row
                .notes
                .iter()
                .rev()
                .find(|n| !n.starts_with("Closed-loop maximum"))
                .cloned()
                .unwrap_or_default();
            format!("      {status}: {answer}")
        }
        (Some(h), status) => {
            let mut s = format!(
                "      {status}: {} req/s · p50 {} · p99 {} · {} errors",
                rate(h.throughput_rps),
                opt_micros(h.latency_p50_us),
                opt_micros(h.latency_p99_us),
                h.errors
            );
            if let Some(cpu) = h.server_cpu_us_per_request {
                s += &format!(" · server {cpu:.1} µs CPU/req");
            }
            if let Some(rss) = h.server_rss_max_bytes {
                s += &format!(", {} RSS", bytes(rss));
            }
            if h.client_saturated {
                s += " · CLIENT SATURATED";
            }
            s
        }
        (None, status) => format!("      {status}"),
    };
    if let Some(r) = &row.reason {
        s += &format!(": {r}");
    }
    for l in &row.stderr_tail {
        s += &format!("\n      | {l}");
    }
    s
}

/// `1m05s`, `12s`, `1h02m`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_formats() {
        assert_eq!(clock(Duration::from_secs(12)), "12s");
        assert_eq!(clock(Duration::from_secs(65)), "1m05s");
        assert_eq!(clock(Duration::from_secs(3720)), "1h02m");
    }

    #[test]
    fn eta_learns_the_overhead() {
        let s = SuiteConfig::parse(
            "[suite]\nname = \"t\"\nduration = \"10s\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[scenario]]\nname = \"g\"\nconnections = [1, 2, 3]\n",
            Path::new("t.toml"),
            2,
        )
        .unwrap();
        let cells = super::super::matrix::plan(&s);
        let mut p = Progress::new(&cells);
        assert_eq!(p.eta(0), Duration::from_secs(36));
        p.finished(0, Duration::from_secs(14));
        assert_eq!(p.eta(1), Duration::from_secs(28));
        assert!(p
            .starting(1, &cells[1], Duration::from_secs(14))
            .starts_with("[2/3] a · g connections=2 · rep 1 · elapsed 14s · ETA 28s"));
    }
}
