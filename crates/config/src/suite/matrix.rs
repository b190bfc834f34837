//! A scenario's matrix: the cartesian product of its keys' alternatives, each cell checked by
//! `volley run`'s own validation, and a rejected cell's error pointed at the key (and, in a
//! list, the value) of the flag the check named.

use std::ops::Range;

use clap::{Args, FromArgMatches};
use toml::de::DeValue;

use super::toml_reader::{TomlReader, Val};
use super::{axes_label, Cell, CellError, Protocol, SuiteError, MAX_CELLS_PER_SCENARIO};
use crate::{ConfigError, Flag, RunConfig, RunFlags};

/// One scenario key with its alternatives: several when it is a list (an axis), else one.
pub(super) struct Axis<'a> {
    /// The scenario key (`connections`).
    pub key: String,
    /// Where its value is in the file.
    pub span: Range<usize>,
    /// Its alternatives, in file order.
    pub choices: Vec<Choice>,
    /// Whether the value is a list that makes cells (and appears in their names).
    pub is_axis: bool,
    /// The value in the file, to point at one element of a list.
    pub value: &'a Val<'a>,
}

/// One alternative of a key: what it is called in the cell's name and the flags it adds.
pub(super) struct Choice {
    /// The value as shown in cell names (`3`, `true`).
    pub label: String,
    /// The `volley run` flags it stands for (none for a default such as `rate = 0`).
    pub flags: Vec<String>,
}

/// A cell before its check: one choice of every axis.
struct Combination {
    /// `(key, label)` of each axis that is a list, in file order.
    labels: Vec<(String, String)>,
    /// The flags of every choice, in file order.
    flags: Vec<String>,
    /// Request path.
    path: String,
    /// `protocol`.
    protocol: Protocol,
    /// `shards`.
    shards: u32,
    /// The index of the choice taken on each axis.
    picks: Vec<usize>,
}

/// The cells of the scenario `at` (its table at `table`): every combination of `axes`, first
/// axis outermost, each checked as `volley run` would with `cores` CPUs.
pub(super) fn expand(
    r: &TomlReader,
    at: &str,
    table: Range<usize>,
    axes: &[Axis],
    path: &str,
    cores: usize,
) -> Result<Vec<Cell>, SuiteError> {
    refuse_too_large(r, at, table.clone(), axes)?;
    let mut out: Vec<Cell> = Vec::new();
    for mut c in combinations(axes, path) {
        // `max_late` is for sharded cells: in an axis `shards = [1, N]` the one-process cell
        // has no start to be late for.
        if c.shards <= 1 {
            c.flags.retain(|f| !f.starts_with("--max-late="));
        }
        // The scheme decides which checks apply (the TLS flags only mean something for https).
        let url = format!("{}://127.0.0.1:1{}", c.protocol.scheme(), c.path);
        match check_cell(&c, &url, cores) {
            Ok(mut config) => {
                share_body(&mut config, &out);
                share_workload(&mut config, &out);
                out.push(Cell {
                    axes: c.labels,
                    path: c.path,
                    protocol: c.protocol,
                    flags: c.flags,
                    config,
                    capacity: None,
                    shards: c.shards,
                });
            }
            Err(e) => return Err(cell_error(r, at, table, axes, &c, e)),
        }
    }
    Ok(out)
}

/// Cells are kept for the whole suite: a body equal to an earlier cell's is that cell's, so a
/// large `body_size` on an axis of other keys is held once, not once per cell.
fn share_body(config: &mut RunConfig, earlier: &[Cell]) {
    let body = &config.load.body;
    if let Some(same) = earlier
        .iter()
        .map(|c| &c.config.load.body)
        .find(|b| b.len() == body.len() && **b == *body)
    {
        config.load.body = same.clone();
    }
}

/// The same for a requests file: cells that read the same one with the same checks hold its
/// workload once (a file of 100,000 requests is not kept once per cell).
fn share_workload(config: &mut RunConfig, earlier: &[Cell]) {
    let Some(w) = &config.load.workload else {
        return;
    };
    if let Some(same) = earlier
        .iter()
        .filter_map(|c| c.config.load.workload.as_ref())
        .find(|e| e.hash == w.hash && e.source == w.source && ***e == **w)
    {
        config.load.workload = Some(same.clone());
    }
}

/// Refuses a matrix too large to run before building it: every cell is expanded and checked
/// here, so a few long lists (10 keys of 10 values: 10^10 cells) would otherwise take all
/// memory and time before a message could say why.
fn refuse_too_large(
    r: &TomlReader,
    at: &str,
    table: Range<usize>,
    axes: &[Axis],
) -> Result<(), SuiteError> {
    let planned = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.choices.len()))
        .filter(|n| *n <= MAX_CELLS_PER_SCENARIO);
    if planned.is_some() {
        return Ok(());
    }
    Err(r.err(
        table,
        None,
        format!(
            "{at}: its lists make more than {MAX_CELLS_PER_SCENARIO} cells ({}); split it or shorten the lists",
            axes.iter()
                .filter(|a| a.is_axis)
                .map(|a| format!("{} × {}", a.key, a.choices.len()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// The cartesian product of `axes`, first axis outermost.
fn combinations(axes: &[Axis], path: &str) -> Vec<Combination> {
    let mut cells = vec![Combination {
        labels: Vec::new(),
        flags: Vec::new(),
        path: path.to_string(),
        protocol: Protocol::default(),
        shards: 1,
        picks: Vec::new(),
    }];
    for axis in axes {
        let mut next = Vec::new();
        for cell in &cells {
            for (ci, choice) in axis.choices.iter().enumerate() {
                next.push(extend(cell, axis, ci, choice));
            }
        }
        cells = next;
    }
    cells
}

/// `cell` with choice `ci` of `axis` added.
fn extend(cell: &Combination, axis: &Axis, ci: usize, choice: &Choice) -> Combination {
    let mut labels = cell.labels.clone();
    if axis.is_axis {
        labels.push((axis.key.clone(), choice.label.clone()));
    }
    let mut flags = cell.flags.clone();
    flags.extend(choice.flags.iter().cloned());
    let path = if axis.key == "path" {
        choice.label.clone()
    } else {
        cell.path.clone()
    };
    let protocol = if axis.key == "protocol" {
        // Checked when the key was read.
        Protocol::parse(&choice.label).unwrap_or_default()
    } else {
        cell.protocol
    };
    let shards = if axis.key == "shards" {
        // Checked when the key was read.
        choice.label.parse().unwrap_or(1)
    } else {
        cell.shards
    };
    let mut picks = cell.picks.clone();
    picks.push(ci);
    Combination {
        labels,
        flags,
        path,
        protocol,
        shards,
        picks,
    }
}

/// The error of a cell rejected by `volley run`'s checks, at the key of the flag the check
/// named (at the scenario's table when it named none).
fn cell_error(
    r: &TomlReader,
    at: &str,
    table: Range<usize>,
    axes: &[Axis],
    cell: &Combination,
    e: CellError,
) -> SuiteError {
    let (span, key_name) = match blamed_axis(axes, &e) {
        Some(i) => (
            value_span(&axes[i], cell.picks[i]),
            Some(axes[i].key.clone()),
        ),
        None => (table, None),
    };
    let cell_label = if cell.labels.is_empty() {
        String::new()
    } else {
        format!(
            " (cell {})",
            axes_label(cell.labels.iter().map(|(k, v)| (k, v)))
        )
    };
    r.err(
        span,
        key_name.as_deref(),
        format!(
            "{at}{cell_label}: {}{}",
            key_name
                .as_deref()
                .map(|k| format!("{k}: "))
                .unwrap_or_default(),
            e.message
        ),
    )
}

/// The axis of the flag the check named; when it names several (a conflict), the later of
/// them in the file. `--shard` is the harness's, from the scenario's `shards`.
fn blamed_axis(axes: &[Axis], e: &CellError) -> Option<usize> {
    let names = |f: &Flag, key: &str| f.key() == key || (*f == Flag::Shard && key == "shards");
    axes.iter()
        .enumerate()
        .filter(|(_, a)| e.flags.iter().any(|f| names(f, &a.key)))
        .max_by_key(|(_, a)| a.span.start)
        .map(|(i, _)| i)
}

/// Where choice `pick` of `axis` is in the file: its element of a list, else the whole value.
fn value_span(axis: &Axis, pick: usize) -> Range<usize> {
    if !axis.is_axis {
        return axis.span.clone();
    }
    match axis.value.get_ref() {
        DeValue::Array(arr) => arr.get(pick).map(|e| e.span()).unwrap_or(axis.span.clone()),
        _ => axis.span.clone(),
    }
}

/// Checks a cell as `volley run` would run it against `url`. A cell of N shards is checked as
/// its shard 0 of N would be (`--shard 0/N --start-at … --clock-budget off`, what the harness
/// adds): a part of the load too small to split N ways is refused here, before anything
/// starts. Its configuration is then the whole load's again, as the harness's own process
/// sees it (for `--verify` and the estimate).
fn check_cell(c: &Combination, url: &str, cores: usize) -> Result<RunConfig, CellError> {
    if c.shards <= 1 {
        return check_flags(&c.flags, url, cores);
    }
    let mut flags = c.flags.clone();
    flags.extend([
        format!("--shard=0/{}", c.shards),
        format!("--start-at={SOME_START}"),
        "--clock-budget=off".to_string(),
    ]);
    let mut config = check_flags(&flags, url, cores)?;
    config.load.shard = None;
    config.start.at = None;
    config.start.at_text = None;
    Ok(config)
}

/// A `--start-at` for the check of a sharded cell (its time is the harness's, at the run).
const SOME_START: &str = "2000-01-01T00:00:00Z";

/// Checks a cell's flags exactly as `volley run` would, against `url`.
fn check_flags(flags: &[String], url: &str, cores: usize) -> Result<RunConfig, CellError> {
    let mut argv = vec![url.to_string()];
    argv.extend(flags.iter().cloned());
    let cmd = RunFlags::augment_args(clap::Command::new("run").no_binary_name(true));
    let parsed = cmd
        .try_get_matches_from(&argv)
        .and_then(|m| RunFlags::from_arg_matches(&m));
    let run_flags = parsed.map_err(|e| CellError {
        flags: clap_flag(&e).into_iter().collect(),
        message: e.kind().to_string() + &clap_detail(&e),
    })?;
    // `monitor_interval` and `profile` are for the server the harness starts, whose pid only
    // the harness knows: checked against a stand-in pid, then left for the harness to attach.
    let mut run_flags = run_flags;
    let stand_in =
        run_flags.pid.is_none() && (run_flags.monitor_interval.is_some() || run_flags.profile);
    if stand_in {
        run_flags.pid = Some(STAND_IN_PID);
    }
    let mut config =
        RunConfig::from_flags(&run_flags, cores).map_err(|e: ConfigError| CellError {
            flags: e.flags(),
            message: e.to_string(),
        })?;
    if stand_in {
        // Only the interval and the profile's frequency are kept: `harness::cell` replaces the
        // pid with the server's.
        if let Some(m) = config.monitor.as_mut() {
            m.pid = 0;
        }
    }
    Ok(config)
}

/// The pid a cell's flags are checked with when they set `monitor_interval` or `profile` (any
/// valid one).
const STAND_IN_PID: i64 = 1;

/// The flag a clap error is about (`--connections <CONNECTIONS>`, `<URL>`).
fn clap_flag(e: &clap::Error) -> Option<Flag> {
    let arg = e.get(clap::error::ContextKind::InvalidArg)?.to_string();
    if arg.starts_with("<URL") {
        return Some(Flag::Url);
    }
    arg.split(['/', ' ', '='])
        .find_map(|part| part.strip_prefix("--").and_then(Flag::from_long))
}

/// The value, flag and valid values a clap error carries, as a message tail.
fn clap_detail(e: &clap::Error) -> String {
    use clap::error::ContextKind;
    let mut s = String::new();
    if let Some(v) = e.get(ContextKind::InvalidValue) {
        s += &format!(": `{v}`");
    }
    if let Some(v) = e.get(ContextKind::InvalidArg) {
        s += &format!(" for {v}");
    }
    if let Some(v) = e.get(ContextKind::ValidValue) {
        s += &format!(" (valid: {v})");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::testing::{err, parse, BASE};
    use std::time::Duration;

    #[test]
    fn a_matrix_too_large_to_run_is_refused_before_it_is_built() {
        let list = |n: u32| {
            format!(
                "[{}]",
                (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            )
        };
        let ten = list(10);
        // 10^4 cells is the limit; one more list of two doubles it.
        let ok = format!("{BASE}[[scenario]]\nname = \"x\"\nconnections = {ten}\npipeline = {ten}\nseed = {ten}\nthreads = {ten}\n");
        assert_eq!(parse(&ok).unwrap().scenarios[0].cells.len(), 10_000);
        let huge = format!("{BASE}[[scenario]]\nname = \"x\"\nconnections = {ten}\npipeline = {ten}\nseed = {ten}\nthreads = {ten}\nrate = {ten}\nbody_size = {ten}\nrequests = {ten}\n");
        let (line, _, key, msg) = err(&huge);
        assert_eq!((line, key), (7, None));
        assert!(
            msg.contains("more than 10000 cells (connections × 10, pipeline × 10"),
            "{msg}"
        );
    }

    #[test]
    fn lists_are_axes_in_file_order() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconnections = [3, 100]\nkeepalive = [true, false]\nrate = [0, 500]\nbody_size = \"1KiB\"\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        assert_eq!(cells.len(), 8);
        assert_eq!(cells[0].axes_label(), "connections=3,keepalive=true,rate=0");
        assert_eq!(
            cells[7].axes_label(),
            "connections=100,keepalive=false,rate=500"
        );
        assert_eq!(
            cells[0].flags,
            vec!["--connections=3", "--body-size=1KiB", "--duration=2s"]
        );
        assert!(cells[7].flags.contains(&"--no-keepalive".to_string()));
        assert!(cells[7].flags.contains(&"--rate=500".to_string()));
        assert_eq!(cells[0].planned(), Duration::from_secs(2));
    }

    #[test]
    fn cells_with_the_same_body_hold_it_once() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconnections = [3, 100]\nbody_size = [\"1KiB\", \"2KiB\"]\n"
        ))
        .unwrap();
        let body = |i: usize| &s.scenarios[0].cells[i].config.load.body;
        // connections=3 and 100 with 1KiB, then with 2KiB.
        assert_eq!(
            (body(0).len(), body(1).len(), body(2).len()),
            (1024, 2048, 1024)
        );
        assert!(std::sync::Arc::ptr_eq(body(0), body(2)));
        assert!(std::sync::Arc::ptr_eq(body(1), body(3)));
        assert!(!std::sync::Arc::ptr_eq(body(0), body(1)));
    }

    #[test]
    fn bad_values_point_at_their_key() {
        let (line, col, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconnections = [3, 0]\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("connections")));
        assert_eq!(col, 19, "the 0 in the list");
        assert!(
            msg.contains("connections: ") && msg.contains("at least 1"),
            "{msg}"
        );

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nduration = \"fast\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("duration")));
        assert!(msg.contains("duration"), "{msg}");

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nusers = 10\nwarmup = \"1s\"\n"
        ));
        assert_eq!(line, 10);
        assert_eq!(key.as_deref(), Some("warmup"));
        assert!(msg.contains("--warmup"), "{msg}");

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\narrivals = \"bursty\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("arrivals")), "{msg}");
    }
}
