//! The `[history]` table of a suite file: whether `volley bench` saves its results in the run
//! history, where, and how `volley history check` judges them ([`HistoryTable`], every key
//! optional). The keys, the flags they stand for and their defaults are docs/contract.md, "Run
//! history". The thresholds live here, in the repository, never only in the database: deleting a
//! line removes its rule.

use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use super::toml_reader::{TomlReader, Val};
use super::SuiteError;

const KEYS: &[&str] = &[
    "save",
    "path",
    "baseline",
    "gate",
    "warn",
    "min_effect",
    "alpha",
    "max_pvalue",
    "window",
];

/// `[history]`, checked; every key optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryTable {
    /// `save`: `volley bench` saves every result.
    pub save: bool,
    /// `path`: the history file, relative to the current directory (as `--history`).
    pub path: Option<PathBuf>,
    /// `baseline`: the revision `history check` compares with.
    pub baseline: Option<String>,
    /// `gate`: metric names whose regression fails the check.
    pub gate: Option<Vec<String>>,
    /// `warn`: metric names whose regression is reported only.
    pub warn: Option<Vec<String>>,
    /// `min_effect`, percent.
    pub min_effect_pct: Option<f64>,
    /// `alpha`.
    pub alpha: Option<f64>,
    /// `max_pvalue`.
    pub max_pvalue: Option<f64>,
    /// `window`.
    pub window: Option<usize>,
}

impl HistoryTable {
    /// Only the `[history]` table of a suite file (what `volley history check --suite` reads).
    pub fn load(path: &Path) -> Result<HistoryTable, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Read {
            path: path.display().to_string(),
            source: e,
        })?;
        let r = TomlReader::new(&text, path);
        let (doc, _) = r.document()?;
        HistoryTable::read(&r, doc.get_ref())
    }

    /// Reads `[history]` of `doc` (the default when there is none).
    pub(super) fn read(r: &TomlReader, doc: &DeTable) -> Result<HistoryTable, SuiteError> {
        let Some(v) = doc.get("history") else {
            return Ok(HistoryTable::default());
        };
        let t = r.table(v, "[history]", "history")?;
        r.known(t, KEYS, "[history]")?;
        let at = "[history]";
        let mut h = HistoryTable::default();
        if let Some(v) = t.get("save") {
            h.save = r.bool(v, at, "save")?;
        }
        if let Some(v) = t.get("path") {
            h.path = Some(PathBuf::from(r.str(v, at, "path")?));
        }
        if let Some(v) = t.get("baseline") {
            h.baseline = Some(r.str(v, at, "baseline")?);
        }
        h.gate = t.get("gate").map(|v| metrics(r, v, "gate")).transpose()?;
        h.warn = t.get("warn").map(|v| metrics(r, v, "warn")).transpose()?;
        if let Some(v) = t.get("min_effect") {
            h.min_effect_pct = Some(percent(r, v)?);
        }
        for (key, slot) in [("alpha", &mut h.alpha), ("max_pvalue", &mut h.max_pvalue)] {
            if let Some(v) = t.get(key) {
                let p = float(r, v, key)?;
                if !(p > 0.0 && p < 1.0) {
                    return Err(r.err(
                        v.span(),
                        Some(key),
                        format!("{at}: {key}: must be between 0 and 1 (exclusive), not {p}"),
                    ));
                }
                *slot = Some(p);
            }
        }
        if let Some(v) = t.get("window") {
            let n = r.int(v, at, "window")?;
            if !(2..=1000).contains(&n) {
                return Err(r.err(
                    v.span(),
                    Some("window"),
                    format!("{at}: window: must be from 2 to 1000, not {n}"),
                ));
            }
            h.window = Some(n as usize);
        }
        Ok(h)
    }
}

/// The names of metrics history knows: `volley_model::metric`'s and `max_rate`.
pub(crate) fn known_metric(name: &str) -> bool {
    name == "max_rate" || volley_model::metric::Metric::parse(name).is_some()
}

fn metrics(r: &TomlReader, v: &Val, key: &str) -> Result<Vec<String>, SuiteError> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(r.err(
            v.span(),
            Some(key),
            format!(
                "[history]: {key}: must be a list of metric names, like [\"throughput\", \"p50\"]"
            ),
        ));
    };
    let mut out = Vec::new();
    for item in items {
        let name = r.str(item, "[history]", key)?;
        if !known_metric(&name) {
            return Err(r.err(
                item.span(),
                Some(key),
                format!(
                    "[history]: {key}: unknown metric `{name}` (known: {}, max_rate)",
                    volley_model::metric::names().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        out.push(name);
    }
    Ok(out)
}

fn float(r: &TomlReader, v: &Val, key: &str) -> Result<f64, SuiteError> {
    match v.get_ref() {
        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().map_err(|_| {
            r.err(
                v.span(),
                Some(key),
                format!("[history]: {key}: not a number"),
            )
        }),
        DeValue::Integer(_) => Ok(r.int(v, "[history]", key)? as f64),
        other => Err(r.err(
            v.span(),
            Some(key),
            format!(
                "[history]: {key}: must be a number, not a {}",
                other.type_str()
            ),
        )),
    }
}

/// A minimum effect as written (`5%`, `5`, `2.5 %`): percent, from 0 to below 100.
pub fn parse_percent(text: &str) -> Option<f64> {
    let p = volley_model::units::parse_decimal(text.trim().trim_end_matches('%')).ok()?;
    (0.0..100.0).contains(&p).then_some(p)
}

/// `min_effect`: `"5%"` or a number of percent.
fn percent(r: &TomlReader, v: &Val) -> Result<f64, SuiteError> {
    let p = match v.get_ref() {
        DeValue::String(s) => parse_percent(s),
        _ => Some(float(r, v, "min_effect")?).filter(|p| (0.0..100.0).contains(p)),
    };
    match p {
        Some(p) => Ok(p),
        None => Err(r.err(
            v.span(),
            Some("min_effect"),
            "[history]: min_effect: must be a percentage from 0 to below 100, like \"5%\"".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<HistoryTable, SuiteError> {
        let r = TomlReader::new(text, Path::new("s.toml"));
        let (doc, _) = r.document()?;
        HistoryTable::read(&r, doc.get_ref())
    }

    #[test]
    fn every_key_is_read() {
        let h = read(
            "[history]\nsave = true\npath = \"h.db\"\nbaseline = \"main\"\ngate = [\"throughput\", \"max_rate\"]\nwarn = [\"p99\"]\nmin_effect = \"3%\"\nalpha = 0.05\nmax_pvalue = 0.01\nwindow = 30\n",
        )
        .unwrap();
        assert!(h.save);
        assert_eq!(h.path, Some(PathBuf::from("h.db")));
        assert_eq!(h.gate.unwrap(), ["throughput", "max_rate"]);
        assert_eq!(h.min_effect_pct, Some(3.0));
        assert_eq!(
            (h.alpha, h.max_pvalue, h.window),
            (Some(0.05), Some(0.01), Some(30))
        );
        assert_eq!(
            read("[suite]\nname = \"x\"\n").unwrap(),
            HistoryTable::default()
        );
    }

    #[test]
    fn bad_values_name_their_line_and_key() {
        let e = read("[history]\ngate = [\"p99.5\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:2:9:") && e.contains("unknown metric `p99.5`"),
            "{e}"
        );
        let e = read("[history]\nmin_effect = \"lots\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.toml:2:") && e.contains("min_effect"), "{e}");
        let e = read("[history]\nalpha = 2.0\n").unwrap_err().to_string();
        assert!(e.contains("alpha: must be between 0 and 1"), "{e}");
        let e = read("[history]\nthreshold = 1\n").unwrap_err().to_string();
        assert!(e.contains("threshold"), "{e}");
    }
}
