//! `capacity = { slo = ["p99<10ms"], … }` of a `[[scenario]]`: its cells search for the highest
//! open-loop rate each server sustains within the SLO (`volley capacity`'s search, one search
//! per cell) instead of measuring one load. The keys are `volley capacity`'s flags in
//! snake_case; the scenario's other keys describe the load of every step.

use std::time::Duration;

use toml::de::DeValue;

use super::toml_reader::{TomlReader, Val};
use super::SuiteError;
use crate::threshold::{self, Threshold};
use volley_model::units::{parse_duration, parse_percent};

/// The keys of a `capacity` table.
pub(crate) const CAPACITY_KEYS: &[&str] = &[
    "slo",
    "step_duration",
    "start_rate",
    "max_rate",
    "precision",
    "repeat",
    "closed_loop",
    "sweep",
    "sweep_duration",
    "sweep_window",
    "confirm",
];

/// Scenario keys a capacity scenario cannot have: the search sets the load of each step, and
/// the SLO judges it.
pub(crate) const SET_BY_THE_SEARCH: &[&str] = &[
    "rate",
    "rate_stages",
    "requests",
    "users",
    "spawn_rate",
    "stages",
    "thresholds",
];

/// A capacity scenario's search settings (docs/contract.md, "Capacity").
#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySpec {
    /// The SLO, checked.
    pub slo: Vec<Threshold>,
    /// Measured time of a step; none: the scenario's `duration` (or the suite's), else 10 s.
    pub step_duration: Option<Duration>,
    /// First rate of the ramp, req/s.
    pub start_rate: u64,
    /// Highest rate tried, req/s.
    pub max_rate: Option<u64>,
    /// Bracket width relative to its low end at which the search stops (0.05 for 5 %).
    pub precision: f64,
    /// Runs of each bisection rate (majority rule).
    pub repeat: u32,
    /// Measure the closed-loop reference first.
    pub closed_loop: bool,
    /// `sweep = true`: the knee in one run instead of a search.
    pub sweep: bool,
    /// The sweep's ramp.
    pub sweep_duration: Duration,
    /// Each window of the sweep.
    pub sweep_window: Duration,
    /// After the sweep, bisection and confirmation with steps.
    pub confirm: bool,
}

/// `--sweep-duration`'s default.
pub const SWEEP_DURATION: Duration = Duration::from_secs(30);
/// `--sweep-window`'s default.
pub const SWEEP_WINDOW: Duration = Duration::from_secs(1);

/// What is wrong with a sweep's settings (`volley capacity --sweep`, `capacity = { sweep =
/// true }`), if anything: the setting at fault (snake_case: `sweep_window`, `max_rate`, …)
/// and why. Whole-second windows, at least three of them, a top above the start rate — given,
/// or 1.5 × the closed loop, which must then run.
pub fn sweep_problem(
    start_rate: u64,
    max_rate: Option<u64>,
    (duration, window): (Duration, Duration),
    closed_loop: bool,
) -> Option<(&'static str, String)> {
    if window.is_zero() || window.subsec_nanos() != 0 {
        return Some((
            "sweep_window",
            "must be a whole number of seconds, at least 1s".into(),
        ));
    }
    if duration.subsec_nanos() != 0 || duration < 3 * window {
        return Some((
            "sweep_duration",
            format!(
                "must be whole seconds and at least three windows ({} s)",
                3 * window.as_secs()
            ),
        ));
    }
    match max_rate {
        Some(m) if m <= start_rate => Some((
            "max_rate",
            format!("the sweep ramps from the start rate {start_rate} up to it: it must be above it"),
        )),
        None if !closed_loop => Some((
            "sweep",
            "needs max_rate for its top, or closed_loop = true to take 1.5 × the closed-loop maximum".into(),
        )),
        _ => None,
    }
}

impl Default for CapacitySpec {
    fn default() -> Self {
        CapacitySpec {
            slo: Vec::new(),
            step_duration: None,
            start_rate: 100,
            max_rate: None,
            precision: 0.05,
            repeat: 3,
            closed_loop: true,
            sweep: false,
            sweep_duration: SWEEP_DURATION,
            sweep_window: SWEEP_WINDOW,
            confirm: false,
        }
    }
}

/// Reads `capacity = {…}` of scenario `at`.
pub(super) fn read(r: &TomlReader, v: &Val, at: &str) -> Result<CapacitySpec, SuiteError> {
    let t = r.table(v, at, "capacity")?;
    let at = format!("{at}: capacity");
    r.known(t, CAPACITY_KEYS, &at)?;
    let mut spec = CapacitySpec::default();
    let Some(slo) = t.get("slo") else {
        return Err(r.err(
            v.span(),
            Some("slo"),
            format!("{at}: missing `slo` (e.g. slo = [\"p99<10ms\"])"),
        ));
    };
    spec.slo = read_slo(r, slo, &at)?;
    let text = |key: &str, val: &Val| -> Result<String, SuiteError> {
        match val.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            DeValue::Integer(i) => Ok(i.as_str().replace('_', "")),
            DeValue::Float(f) => Ok(f.as_str().replace('_', "")),
            other => Err(r.err(
                val.span(),
                Some(key),
                format!(
                    "{at}.{key}: must be a string or a number, not a {}",
                    other.type_str()
                ),
            )),
        }
    };
    let bad = |key: &str, val: &Val, why: String| {
        r.err(val.span(), Some(key), format!("{at}.{key}: {why}"))
    };
    for (k, val) in t.iter() {
        let key = k.get_ref().as_ref();
        match key {
            "step_duration" => {
                let d = parse_duration(&text(key, val)?).map_err(|e| bad(key, val, e))?;
                if d.is_zero() {
                    return Err(bad(key, val, "must be above 0".into()));
                }
                spec.step_duration = Some(d);
            }
            "start_rate" | "max_rate" => {
                let n = rate(&text(key, val)?).map_err(|e| bad(key, val, e))?;
                if key == "start_rate" {
                    spec.start_rate = n;
                } else {
                    spec.max_rate = Some(n);
                }
            }
            "precision" => {
                spec.precision = parse_percent(&text(key, val)?).map_err(|e| bad(key, val, e))?;
            }
            "repeat" => {
                let n = r.int(val, &at, key)?;
                if !(1..=9).contains(&n) {
                    return Err(bad(key, val, format!("{n} is not in 1..=9")));
                }
                spec.repeat = n as u32;
            }
            "closed_loop" => spec.closed_loop = r.bool(val, &at, key)?,
            "sweep" => spec.sweep = r.bool(val, &at, key)?,
            "confirm" => spec.confirm = r.bool(val, &at, key)?,
            "sweep_duration" | "sweep_window" => {
                let d = parse_duration(&text(key, val)?).map_err(|e| bad(key, val, e))?;
                if key == "sweep_duration" {
                    spec.sweep_duration = d;
                } else {
                    spec.sweep_window = d;
                }
            }
            _ => {}
        }
    }
    check_sweep(r, t, v, &at, &spec)?;
    Ok(spec)
}

/// The sweep's keys: only with `sweep = true`, and sound ([`sweep_problem`]); the error at the
/// key at fault.
fn check_sweep(
    r: &TomlReader,
    t: &toml::de::DeTable,
    v: &Val,
    at: &str,
    spec: &CapacitySpec,
) -> Result<(), SuiteError> {
    let span = |key: &str| t.get(key).map_or(v.span(), |x| x.span());
    if !spec.sweep {
        if let Some(key) = ["sweep_duration", "sweep_window", "confirm"]
            .into_iter()
            .find(|k| t.contains_key(*k))
        {
            return Err(r.err(
                span(key),
                Some(key),
                format!("{at}.{key}: needs sweep = true"),
            ));
        }
        return Ok(());
    }
    let problem = sweep_problem(
        spec.start_rate,
        spec.max_rate,
        (spec.sweep_duration, spec.sweep_window),
        spec.closed_loop,
    );
    match problem {
        Some((key, why)) => Err(r.err(span(key), Some(key), format!("{at}.{key}: {why}"))),
        None => Ok(()),
    }
}

/// `slo = "p99<10ms"` or a list of them, each in `--threshold` syntax.
fn read_slo(r: &TomlReader, v: &Val, at: &str) -> Result<Vec<Threshold>, SuiteError> {
    let items: Vec<&Val> = match v.get_ref() {
        DeValue::String(_) => vec![v],
        DeValue::Array(a) if !a.is_empty() => a.iter().collect(),
        _ => {
            return Err(r.err(
                v.span(),
                Some("slo"),
                format!(
                    "{at}.slo: must be a string such as \"p99<10ms\" or a non-empty list of them"
                ),
            ))
        }
    };
    let mut out = Vec::new();
    for e in items {
        let s = r.str(e, at, "slo")?;
        out.push(
            threshold::parse(&s)
                .map_err(|m| r.err(e.span(), Some("slo"), format!("{at}.slo: {m}")))?,
        );
    }
    Ok(out)
}

/// A positive whole rate: `500`, `5k`.
fn rate(text: &str) -> Result<u64, String> {
    let n = volley_model::units::parse_count(text)?;
    if n == 0 {
        return Err("must be above 0".into());
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{err, parse, BASE};
    use std::time::Duration;

    #[test]
    fn a_capacity_scenario_reads_its_search_and_checks_each_cell_at_the_start_rate() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"c\"\nconnections = [10, 50]\ncapacity = {{ slo = [\"p99<10ms\", \"errors<0.1%\"], step_duration = \"5s\", start_rate = \"2k\", max_rate = 90000, precision = \"10%\", repeat = 5, closed_loop = false }}\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        assert_eq!(cells.len(), 2);
        let c = cells[0].capacity.as_ref().expect("a capacity cell");
        assert_eq!(c.slo.len(), 2);
        assert_eq!(c.slo[0].text, "p99<10ms");
        assert_eq!(c.step_duration, Some(Duration::from_secs(5)));
        assert_eq!((c.start_rate, c.max_rate), (2000, Some(90_000)));
        assert_eq!((c.precision, c.repeat, c.closed_loop), (0.1, 5, false));
        // The first step's load was checked; the rate is the search's, not a flag of the cell.
        assert_eq!(cells[0].config.load.rate_rps, Some(2000.0));
        assert!(
            cells[0].flags.iter().all(|f| !f.starts_with("--rate")),
            "{:?}",
            cells[0].flags
        );
        assert_eq!(cells[0].step_duration(), Duration::from_secs(5));
        // Without step_duration: the scenario's (here the suite's) duration.
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"c\"\ncapacity = {{ slo = \"p99<10ms\" }}\n"
        ))
        .unwrap();
        let cell = &s.scenarios[0].cells[0];
        assert_eq!(cell.step_duration(), Duration::from_secs(2));
        let c = cell.capacity.as_ref().unwrap();
        assert_eq!((c.start_rate, c.repeat, c.closed_loop), (100, 3, true));
        // A plain scenario is no capacity cell.
        let s = parse(&format!("{BASE}[[scenario]]\nname = \"p\"\n")).unwrap();
        assert!(s.scenarios[0].cells[0].capacity.is_none());
    }

    #[test]
    fn bad_capacity_tables_name_the_key_and_place() {
        let at = |rest: &str| err(&format!("{BASE}[[scenario]]\nname = \"c\"\n{rest}\n"));
        let (line, _, key, m) = at("capacity = { step_duration = \"5s\" }");
        assert_eq!((line, key.as_deref()), (9, Some("slo")));
        assert!(m.contains("missing `slo`"), "{m}");
        let (_, _, key, m) = at("capacity = { slo = \"p98<1ms\" }");
        assert_eq!(key.as_deref(), Some("slo"));
        assert!(m.contains("p98"), "{m}");
        let (_, _, key, m) = at("capacity = { slo = [] }");
        assert_eq!(key.as_deref(), Some("slo"));
        assert!(m.contains("non-empty"), "{m}");
        let (_, _, key, m) = at("capacity = { slo = \"p99<1ms\", precison = \"5%\" }");
        assert_eq!(key.as_deref(), Some("precison"));
        assert!(m.contains("unknown key") && m.contains("precision"), "{m}");
        let (_, _, key, m) = at("capacity = { slo = \"p99<1ms\", repeat = 10 }");
        assert_eq!(key.as_deref(), Some("repeat"));
        assert!(m.contains("1..=9"), "{m}");
        let (_, _, key, _) = at("capacity = { slo = \"p99<1ms\", precision = \"100%\" }");
        assert_eq!(key.as_deref(), Some("precision"));
        let (_, _, key, _) = at("capacity = { slo = \"p99<1ms\", start_rate = 0 }");
        assert_eq!(key.as_deref(), Some("start_rate"));
        let (_, _, key, _) = at("capacity = { slo = \"p99<1ms\", step_duration = \"0s\" }");
        assert_eq!(key.as_deref(), Some("step_duration"));
        let (line, _, key, m) = at("rate = 500\ncapacity = { slo = \"p99<1ms\" }");
        assert_eq!((line, key.as_deref()), (9, Some("rate")));
        assert!(m.contains("cannot be combined with `capacity`"), "{m}");
        let (_, _, key, _) = at("thresholds = \"p99<1ms\"\ncapacity = { slo = \"p99<1ms\" }");
        assert_eq!(key.as_deref(), Some("thresholds"));
        let (_, _, key, m) = at("capacity = \"p99<1ms\"");
        assert_eq!(key.as_deref(), Some("capacity"));
        assert!(m.contains("must be a table"), "{m}");
    }

    #[test]
    fn a_sweep_reads_its_keys_and_checks_them_as_the_flags_are() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"c\"\ncapacity = {{ slo = \"p99<10ms\", sweep = true, max_rate = 5000, sweep_duration = \"20s\", sweep_window = \"2s\", confirm = true }}\n"
        ))
        .unwrap();
        let cell = &s.scenarios[0].cells[0];
        let c = cell.capacity.as_ref().unwrap();
        assert!(c.sweep && c.confirm);
        assert_eq!(
            (c.sweep_duration, c.sweep_window),
            (Duration::from_secs(20), Duration::from_secs(2))
        );
        // The estimate (steps of the suite's 2 s, no warm-up): the closed loop, the sweep,
        // five steps of confirm.
        assert_eq!(cell.planned(), Duration::from_secs(2 + 20 + 2 * 5));
        let at = |rest: &str| err(&format!("{BASE}[[scenario]]\nname = \"c\"\n{rest}\n"));
        let (_, _, key, m) = at("capacity = { slo = \"p99<1ms\", confirm = true }");
        assert_eq!(key.as_deref(), Some("confirm"));
        assert!(m.contains("needs sweep = true"), "{m}");
        let (_, _, key, m) =
            at("capacity = { slo = \"p99<1ms\", sweep = true, sweep_window = \"1500ms\" }");
        assert_eq!(key.as_deref(), Some("sweep_window"));
        assert!(m.contains("whole number of seconds"), "{m}");
        let (_, _, key, _) =
            at("capacity = { slo = \"p99<1ms\", sweep = true, sweep_duration = \"2s\" }");
        assert_eq!(key.as_deref(), Some("sweep_duration"));
        let (_, _, key, m) =
            at("capacity = { slo = \"p99<1ms\", sweep = true, closed_loop = false }");
        assert_eq!(key.as_deref(), Some("sweep"));
        assert!(m.contains("max_rate"), "{m}");
        let (_, _, key, _) =
            at("capacity = { slo = \"p99<1ms\", sweep = true, start_rate = 900, max_rate = 900 }");
        assert_eq!(key.as_deref(), Some("max_rate"));
    }
}
