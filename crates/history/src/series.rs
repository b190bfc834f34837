//! Like with like: runs are one series when they are the same test (suite, scenario, server,
//! axes and `load_id`) on the same machine (host fingerprint). A series' points are its
//! commits in the order they were first measured, each with the values of its repetitions.

use std::collections::BTreeMap;

use super::measure::Measure;
use super::record::Kind;
use super::store::Stored;
use volley_model::result::Mode;

/// What makes runs one series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Suite name (empty for `volley run`).
    pub suite: String,
    /// Scenario name.
    pub scenario: String,
    /// Server name.
    pub server: String,
    /// Axis values.
    pub axes: String,
    /// RunResult or capacity search.
    pub capacity: bool,
    /// The load identity.
    pub load_id: String,
    /// The host fingerprint.
    pub host_id: String,
}

impl Key {
    /// The key of a saved run.
    pub fn of(s: &Stored) -> Key {
        let r = &s.record;
        Key {
            suite: r.labels.suite.clone(),
            scenario: r.labels.scenario.clone(),
            server: r.labels.server.clone(),
            axes: r.labels.axes.clone(),
            capacity: r.kind == Kind::Capacity,
            load_id: r.load_id.clone(),
            host_id: r.host.id(),
        }
    }

    /// The test without the load and host: what a user calls "the same benchmark".
    pub(crate) fn test(&self) -> (String, String, String, String, bool) {
        (
            self.suite.clone(),
            self.scenario.clone(),
            self.server.clone(),
            self.axes.clone(),
            self.capacity,
        )
    }
}

/// One series: the runs of one test on one machine, oldest first.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// Its key.
    pub key: Key,
    /// The runs.
    pub runs: Vec<&'a Stored>,
}

impl Series<'_> {
    /// A name for people: `quick: hello on nginx [connections=3]`, or for a plain run its URL
    /// (and, after `·`, the load id).
    pub fn name(&self) -> String {
        let k = &self.key;
        let mut s = if k.scenario.is_empty() && k.server.is_empty() {
            self.runs
                .last()
                .map(|r| r.record.url.clone())
                .unwrap_or_default()
        } else {
            let suite = if k.suite.is_empty() {
                String::new()
            } else {
                format!("{}: ", k.suite)
            };
            format!("{suite}{} on {}", k.scenario, k.server)
        };
        if !k.axes.is_empty() {
            s += &format!(" [{}]", k.axes);
        }
        if k.capacity {
            s += " (capacity)";
        }
        s
    }

    /// A name fit for a file or a benchmark id: the name's words joined by `-`, then the load
    /// id's first 8 digits and the host fingerprint's first 6 (series of one test on two hosts
    /// are two benchmarks).
    pub fn slug(&self) -> String {
        let mut out = String::new();
        for c in self.name().chars() {
            if c.is_ascii_alphanumeric() || c == '.' {
                out.push(c.to_ascii_lowercase());
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        let out = out.trim_matches('-').to_string();
        format!(
            "{out}-{}-{}",
            short(&self.key.load_id, 8),
            short(&self.key.host_id, 6)
        )
    }

    /// How its newest run drove the load.
    pub fn mode(&self) -> Mode {
        self.runs.last().map_or(Mode::Closed, |r| r.record.mode)
    }

    /// The points of `m`: the runs grouped by commit (a run without a commit is a point of its
    /// own), in the order first measured; runs without a value of `m` left out.
    pub(crate) fn points(&self, m: Measure) -> Vec<Point> {
        let mut out: Vec<Point> = Vec::new();
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        for r in &self.runs {
            let Some(v) = m.value(&r.record.scalars) else {
                continue;
            };
            let git = r.record.git.as_ref();
            let id = key_of(git.map(|g| (g.commit.as_str(), g.dirty)), r.id);
            let i = *at.entry(id).or_insert_with(|| {
                out.push(Point {
                    commit: git.map(|g| g.commit.clone()),
                    dirty: git.is_some_and(|g| g.dirty),
                    branch: git.and_then(|g| g.branch.clone()),
                    subject: git.and_then(|g| g.subject.clone()),
                    time: r.record.started_at.clone(),
                    values: Vec::new(),
                    runs: Vec::new(),
                    files: Vec::new(),
                });
                out.len() - 1
            });
            out[i].values.push(v);
            out[i].runs.push(r.id);
            out[i].files.push(r.record.result_path.clone());
        }
        out
    }
}

/// One commit (or one run without a commit) of a series.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    /// The commit.
    pub commit: Option<String>,
    /// Measured with uncommitted changes.
    pub dirty: bool,
    /// Branch recorded with its first run.
    pub branch: Option<String>,
    /// The commit's subject.
    pub subject: Option<String>,
    /// Its first run's start.
    pub time: String,
    /// The repetitions' values.
    pub values: Vec<f64>,
    /// Their run ids.
    pub runs: Vec<i64>,
    /// Their result files, when known.
    pub files: Vec<Option<String>>,
}

impl Point {
    /// The median of the repetitions.
    pub fn median(&self) -> f64 {
        median(&self.values)
    }

    /// What tells it from every other point of its series: the full commit (`+` when dirty),
    /// or `#12` for a run without one.
    pub fn key(&self) -> String {
        key_of(
            self.commit.as_deref().map(|c| (c, self.dirty)),
            self.runs.first().copied().unwrap_or(0),
        )
    }

    /// `1a2b3c4` (`+` when dirty), or `run #12`: short, for people (not unique).
    pub fn label(&self) -> String {
        match &self.commit {
            Some(c) => format!("{}{}", short(c, 7), if self.dirty { "+" } else { "" }),
            None => format!("run #{}", self.runs.first().copied().unwrap_or(0)),
        }
    }
}

/// A point's key: the commit (`+` when dirty), else `#` and the id of its first run.
fn key_of(commit: Option<(&str, bool)>, first_run: i64) -> String {
    match commit {
        Some((c, dirty)) => format!("{c}{}", if dirty { "+" } else { "" }),
        None => format!("#{first_run}"),
    }
}

/// The first `n` characters of `s` (a commit or id shortened for people).
pub fn short(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The median of values (0 for none): the reports' median.
pub fn median(v: &[f64]) -> f64 {
    volley_report::model::median(v).unwrap_or(0.0)
}

/// The runs as series, in key order.
pub fn group<'a>(runs: impl IntoIterator<Item = &'a Stored>) -> Vec<Series<'a>> {
    let mut by: BTreeMap<Key, Vec<&Stored>> = BTreeMap::new();
    for r in runs {
        by.entry(Key::of(r)).or_default().push(r);
    }
    by.into_iter()
        .map(|(key, runs)| Series { key, runs })
        .collect()
}
