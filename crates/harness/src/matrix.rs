//! The order of a suite's cells (rep -> server -> scenario -> cell) and their names.

use std::collections::BTreeSet;

use volley_config::suite::{Cell, Protocol, ServerKind, SuiteConfig};
use volley_model::result::{CellStatus, SuiteRow};

/// One cell to run, with everything needed to name and record it.
#[derive(Debug, Clone)]
pub struct PlannedCell {
    /// File-name-safe, unique: `<server>__<scenario>[__<axes>]__r<rep>`.
    pub id: String,
    /// Repetition, from 1.
    pub rep: u32,
    /// Server name.
    pub server: String,
    /// Index into `SuiteConfig::servers`.
    pub server_idx: usize,
    /// Scenario name.
    pub scenario: String,
    /// The cell.
    pub cell: Cell,
    /// A control server's cell.
    pub control: bool,
}

impl PlannedCell {
    /// The row of `suite.json` before the cell runs.
    pub(crate) fn pending_row(&self) -> SuiteRow {
        SuiteRow {
            server: self.server.clone(),
            scenario: self.scenario.clone(),
            axes: self.cell.axes.iter().cloned().collect(),
            rep: self.rep,
            status: CellStatus::Pending,
            reason: None,
            stderr_tail: Vec::new(),
            notes: Vec::new(),
            control: self.control,
            path: None,
            log: None,
            flags: volley_model::result::redact::argv(&self.cell.flags),
            headline: None,
            wall_s: None,
            capacity: None,
        }
    }
}

/// Keeps only the servers and scenarios named by `--only` (a name may be either). A server
/// filter and a scenario filter combine; a name that matches nothing is an error.
pub(crate) fn apply_only(suite: &mut SuiteConfig, only: &[String]) -> Result<(), String> {
    if only.is_empty() {
        return Ok(());
    }
    let servers: BTreeSet<&str> = suite.servers.iter().map(|s| s.name.as_str()).collect();
    let scenarios: BTreeSet<&str> = suite.scenarios.iter().map(|s| s.name.as_str()).collect();
    for n in only {
        if !servers.contains(n.as_str()) && !scenarios.contains(n.as_str()) {
            return Err(format!(
                "`{n}` is neither a server ({}) nor a scenario ({}) of the suite",
                servers.iter().copied().collect::<Vec<_>>().join(", "),
                scenarios.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let wanted = |name: &str| only.iter().any(|o| o == name);
    if suite.servers.iter().any(|s| wanted(&s.name)) {
        suite.servers.retain(|s| wanted(&s.name));
    }
    if suite.scenarios.iter().any(|s| wanted(&s.name)) {
        suite.scenarios.retain(|s| wanted(&s.name));
    }
    Ok(())
}

/// One note per server whose `protocols` leave out cells of its scenarios, which are not
/// planned: `java: its h2, h2c cells are not run (protocols = ["http/1.1", "https"])`.
pub(crate) fn unspoken(suite: &SuiteConfig) -> Vec<String> {
    let mut notes = Vec::new();
    for server in &suite.servers {
        let left_out: BTreeSet<Protocol> = suite
            .scenarios
            .iter()
            .filter(|s| s.runs_on(&server.name))
            .flat_map(|s| s.cells.iter().map(|c| c.protocol))
            .filter(|p| !server.speaks(*p))
            .collect();
        if left_out.is_empty() {
            continue;
        }
        let names: Vec<&str> = left_out.iter().map(|p| p.as_str()).collect();
        let spoken: Vec<String> = server
            .protocols
            .iter()
            .map(|p| format!("\"{}\"", p.as_str()))
            .collect();
        notes.push(format!(
            "{}: its {} cells are not run (protocols = [{}])",
            server.name,
            names.join(", "),
            spoken.join(", ")
        ));
    }
    notes
}

/// Every cell in run order: repetition, then server, then scenario and its cells, but the
/// cells of a protocol the server does not speak (its `protocols`). A server gets every cell
/// of a repetition before the next server starts, so a slow or failing server delays
/// nobody's comparison within a repetition.
pub fn plan(suite: &SuiteConfig) -> Vec<PlannedCell> {
    let mut out = Vec::new();
    let mut used = BTreeSet::new();
    for rep in 1..=suite.repetitions {
        for (si, server) in suite.servers.iter().enumerate() {
            for scenario in suite.scenarios.iter().filter(|s| s.runs_on(&server.name)) {
                for cell in scenario.cells.iter().filter(|c| server.speaks(c.protocol)) {
                    let mut id = format!("{}__{}", server.name, scenario.name);
                    let axes = sanitize(
                        &cell
                            .axes
                            .iter()
                            .map(|(k, v)| format!("{k}-{v}"))
                            .collect::<Vec<_>>()
                            .join("_"),
                    );
                    if !axes.is_empty() {
                        id.push_str("__");
                        id.push_str(&axes);
                    }
                    id.push_str(&format!("__r{rep}"));
                    // Axis values that differ only in punctuation would collide.
                    let mut unique = id.clone();
                    let mut k = 2;
                    while !used.insert(unique.clone()) {
                        unique = format!("{id}-{k}");
                        k += 1;
                    }
                    out.push(PlannedCell {
                        id: unique,
                        rep,
                        server: server.name.clone(),
                        server_idx: si,
                        scenario: scenario.name.clone(),
                        cell: cell.clone(),
                        control: matches!(server.kind, ServerKind::ClosedPort),
                    });
                }
            }
        }
    }
    out
}

/// Letters, digits, `.` and `-` kept; anything else becomes `-`; at most 80 characters.
fn sanitize(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '-'
            }
        })
        .take(80)
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn suite() -> SuiteConfig {
        SuiteConfig::parse(
            "[suite]\nname = \"t\"\nrepetitions = 2\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[server]]\nname = \"none\"\ncontrol = \"closed-port\"\n[[scenario]]\nname = \"get\"\nconnections = [1, 2]\n[[scenario]]\nname = \"post\"\nheaders = [[\"X: a/b\"], [\"X: a b\"]]\n",
            Path::new("t.toml"),
            2,
        )
        .unwrap()
    }

    #[test]
    fn order_is_rep_then_server_then_cell() {
        let s = suite();
        let p = plan(&s);
        assert_eq!(p.len(), 2 * 2 * 4);
        let ids: Vec<&str> = p.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids[0], "a__get__connections-1__r1");
        assert_eq!(ids[1], "a__get__connections-2__r1");
        assert_eq!(ids[2], "a__post__headers-X-a-b__r1");
        assert_eq!(
            ids[3], "a__post__headers-X-a-b__r1-2",
            "punctuation collisions get a suffix"
        );
        assert_eq!(ids[4], "none__get__connections-1__r1");
        assert!(p[4].control && !p[0].control);
        assert_eq!(ids[8], "a__get__connections-1__r2");
    }

    #[test]
    fn only_filters_servers_and_scenarios() {
        let mut s = suite();
        apply_only(&mut s, &["none".into(), "post".into()]).unwrap();
        assert_eq!(s.servers.len(), 1);
        assert_eq!(s.scenarios.len(), 1);
        let mut s = suite();
        let e = apply_only(&mut s, &["nope".into()]).unwrap_err();
        assert!(
            e.contains("`nope`") && e.contains("a, none") && e.contains("get, post"),
            "{e}"
        );
    }

    #[test]
    fn cells_of_a_protocol_a_server_does_not_speak_are_not_planned() {
        let s = SuiteConfig::parse(
            "[suite]\nname = \"t\"\nduration = \"1s\"\n[[server]]\nname = \"java\"\nstart = \"x\"\nprotocols = [\"http/1.1\", \"https\"]\n[[server]]\nname = \"go\"\nstart = \"x\"\n[[scenario]]\nname = \"p\"\nprotocol = [\"http/1.1\", \"h2\", \"h2c\"]\n",
            Path::new("t.toml"),
            2,
        )
        .unwrap();
        let ids: Vec<String> = plan(&s).into_iter().map(|c| c.id).collect();
        assert_eq!(
            ids,
            [
                "java__p__protocol-http-1.1__r1",
                "go__p__protocol-http-1.1__r1",
                "go__p__protocol-h2__r1",
                "go__p__protocol-h2c__r1"
            ]
        );
        assert_eq!(s.cells_per_rep(), 4);
        assert_eq!(
            unspoken(&s),
            ["java: its h2, h2c cells are not run (protocols = [\"http/1.1\", \"https\"])"]
        );
    }

    #[test]
    fn each_cell_keeps_its_checked_load() {
        // The descriptor limit and the progress estimate read the cell's checked config.
        let s = suite();
        let p = plan(&s);
        assert_eq!(p[1].cell.config.load.connections, 2);
        assert_eq!(p[2].cell.config.load.connections, 10);
    }
}
