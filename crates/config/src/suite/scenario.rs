//! `[[scenario]]` tables: each key turned into its `volley run` flags, a list into an axis of
//! the matrix, and the `[suite]` defaults added where they apply. The matrix itself is
//! `matrix`'s business.

use std::collections::BTreeSet;
use std::ops::Range;

use clap::Args;
use toml::de::{DeArray, DeTable, DeValue};

use super::capacity::{self, CapacitySpec, SET_BY_THE_SEARCH};
use super::matrix::{self, Axis, Choice};
use super::suite_table::{SuiteDefault, SuiteTable};
use super::toml_reader::{ArrayTable, TomlReader, Val};
use super::{Protocol, Scenario, ServerSpec, SuiteError};
use crate::shard::MAX_SHARDS;
use crate::RunFlags;

/// `volley run` flags a scenario may not set: the harness sets them per cell.
const HARNESS_FLAGS: &[&str] = &[
    "url",
    "json",
    "hdr_log",
    "pid",
    "gc_log",
    "quiet",
    "csv",
    "markdown",
    "html",
    "profile_out",
];

/// Keys that sample the server's stacks (`profile`, `profile_frequency`): only of cells run in
/// volley's own process, one run each (not a capacity search, not shards).
const PROFILE_KEYS: &[&str] = &["profile", "profile_frequency"];

/// `volley run` flags suites do not take yet: a cell does not record its server's off-CPU
/// waits.
const RUN_ONLY_FLAGS: &[&str] = &["profile_off_cpu"];

/// `volley run` flags that are scenario keys under another name and shape (`keepalive`,
/// `headers`, `thresholds`), so their own names are not keys.
const RENAMED_FLAGS: &[&str] = &["no_keepalive", "header", "threshold"];

/// `volley run`'s HTTP version flags, which a scenario says with `protocol` (the value given).
const VERSION_FLAGS: &[(&str, &str)] = &[
    ("http1.1", "\"http/1.1\" or \"https\""),
    ("http2", "\"h2\""),
    ("h2c", "\"h2c\""),
];

/// Scenario keys that are not the name of a `volley run` flag (besides `name`, `servers` and
/// `capacity`).
const OWN_KEYS: &[&str] = &[
    "path",
    "keepalive",
    "headers",
    "thresholds",
    "protocol",
    "shards",
];

/// `volley run` flags a scenario with `shards` may not set: the harness gives each of a cell's
/// processes its `--shard i/N`, one `--start-at` and `--clock-budget off` (they share this
/// host's clock).
const SET_FOR_SHARDS: &[&str] = &["shard", "start_at", "clock_budget"];

/// What every scenario is read against.
struct Context<'s, 'a> {
    r: &'s TomlReader<'s>,
    defaults: &'s [SuiteDefault<'a>],
    servers: &'s [ServerSpec],
    /// Long names of every `volley run` flag.
    run_flags: Vec<String>,
    /// CPUs a cell may use, for the checks that depend on them.
    cores: usize,
}

/// A scenario's keys other than `name`: its axes in file order, its path when that is not an
/// axis, and its `servers`.
struct ScenarioKeys<'a> {
    axes: Vec<Axis<'a>>,
    path: String,
    servers: Option<Vec<String>>,
    /// `capacity = {…}` and where it is.
    capacity: Option<(CapacitySpec, Range<usize>)>,
}

/// Every `[[scenario]]` of `doc` in file order, expanded into cells that may use `cores` CPUs;
/// a suite needs at least one.
pub(super) fn read_scenarios<'a>(
    r: &TomlReader,
    doc: &'a DeTable<'a>,
    suite: &SuiteTable<'a>,
    servers: &[ServerSpec],
    cores: usize,
) -> Result<Vec<Scenario>, SuiteError> {
    let cx = Context {
        r,
        defaults: &suite.defaults,
        servers,
        run_flags: run_long_flags(),
        cores,
    };
    let tables = r.array_of_tables(doc.get("scenario"), ArrayTable::Scenario)?;
    if tables.is_empty() {
        return Err(r.err(r.end(), None, "the suite has no [[scenario]]".into()));
    }
    let mut scenarios: Vec<Scenario> = Vec::new();
    for sv in tables {
        let taken: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
        let scenario = read_scenario(&cx, sv, &taken)?;
        scenarios.push(scenario);
    }
    Ok(scenarios)
}

/// One `[[scenario]]`, whose name must not be among `taken`, with its cells.
fn read_scenario<'a>(
    cx: &Context<'_, 'a>,
    sv: &'a Val<'a>,
    taken: &[&str],
) -> Result<Scenario, SuiteError> {
    let t = cx.r.table(sv, "[[scenario]]", "scenario")?;
    let name = cx.r.name(t, sv, ArrayTable::Scenario, taken)?;
    let at = format!("[[scenario]] \"{name}\"");
    let ScenarioKeys {
        mut axes,
        path,
        servers,
        capacity,
    } = read_keys(cx, t, &at)?;
    check_shards(cx.r, &axes, capacity.as_ref().map(|c| &c.1), &at)?;
    check_profile(cx.r, &axes, capacity.is_some(), &at)?;
    add_defaults(&mut axes, cx.defaults);
    let Some((spec, span)) = capacity else {
        let cells = matrix::expand(cx.r, &at, sv.span(), &axes, &path, cx.cores)?;
        return Ok(Scenario {
            name,
            servers,
            cells,
        });
    };
    if let Some(a) = axes
        .iter()
        .find(|a| SET_BY_THE_SEARCH.contains(&a.key.as_str()))
    {
        return Err(cx.r.err(
            a.span.clone(),
            Some(&a.key),
            format!(
                "{at}: `{}` cannot be combined with `capacity` (the search sets the load of each step; its SLO judges it)",
                a.key
            ),
        ));
    }
    // Each cell is checked as an open loop at the start rate, the load of its first step;
    // the rate is the search's, so the cell's flags do not carry it.
    axes.push(Axis {
        key: "rate".into(),
        span,
        choices: vec![Choice {
            label: spec.start_rate.to_string(),
            flags: vec![format!("--rate={}", spec.start_rate)],
        }],
        is_axis: false,
        value: t.get("capacity").expect("capacity was read"),
    });
    let mut cells = matrix::expand(cx.r, &at, sv.span(), &axes, &path, cx.cores)?;
    for c in &mut cells {
        c.flags.retain(|f| !f.starts_with("--rate="));
        c.capacity = Some(spec.clone());
    }
    Ok(Scenario {
        name,
        servers,
        cells,
    })
}

/// `shards` runs a cell as processes of volley's own, started together: not a capacity search
/// (its steps run in volley's process) and not with the shard keys the harness sets for them.
fn check_shards(
    r: &TomlReader,
    axes: &[Axis],
    capacity: Option<&Range<usize>>,
    at: &str,
) -> Result<(), SuiteError> {
    let Some(shards) = axes.iter().find(|a| a.key == "shards") else {
        return Ok(());
    };
    if capacity.is_some() {
        return Err(r.err(
            shards.span.clone(),
            Some("shards"),
            format!("{at}: `shards` cannot be combined with `capacity` (a capacity search runs each step in volley's own process)"),
        ));
    }
    if let Some(a) = axes
        .iter()
        .find(|a| SET_FOR_SHARDS.contains(&a.key.as_str()))
    {
        return Err(r.err(
            a.span.clone(),
            Some(&a.key),
            format!(
                "{at}: `{}` cannot be combined with `shards` (the harness gives each of a cell's processes its --shard i/N, one --start-at and --clock-budget off)",
                a.key
            ),
        ));
    }
    Ok(())
}

/// `profile` samples the server of one run: not the steps of a capacity search, nor a cell
/// split into shard processes.
fn check_profile(
    r: &TomlReader,
    axes: &[Axis],
    capacity: bool,
    at: &str,
) -> Result<(), SuiteError> {
    let Some(p) = axes.iter().find(|a| PROFILE_KEYS.contains(&a.key.as_str())) else {
        return Ok(());
    };
    let why = if capacity {
        "`capacity` (a search's steps are not profiled: profile a run at the rate it finds)"
    } else if axes.iter().any(|a| a.key == "shards") {
        "`shards` (the stacks are sampled by the run in volley's own process)"
    } else {
        return Ok(());
    };
    Err(r.err(
        p.span.clone(),
        Some(&p.key),
        format!("{at}: `{}` cannot be combined with {why}", p.key),
    ))
}

/// The keys of scenario table `t`, each checked and turned into its alternatives.
fn read_keys<'a>(
    cx: &Context<'_, 'a>,
    t: &'a DeTable<'a>,
    at: &str,
) -> Result<ScenarioKeys<'a>, SuiteError> {
    let mut keys = ScenarioKeys {
        axes: Vec::new(),
        path: "/".to_string(),
        servers: None,
        capacity: None,
    };
    for (k, v) in t.iter() {
        let key = k.get_ref().to_string();
        if key == "name" {
            continue;
        }
        if key == "capacity" {
            keys.capacity = Some((capacity::read(cx.r, v, at)?, v.span()));
            continue;
        }
        if key == "servers" {
            keys.servers = Some(server_names(cx.r, v, at, cx.servers)?);
            continue;
        }
        check_key(cx, &key, k.span(), at)?;
        let axis = read_axis(cx.r, key, v, at)?;
        if axis.key == "path" && !axis.is_axis {
            keys.path = axis.choices[0].label.clone();
        }
        keys.axes.push(axis);
    }
    Ok(keys)
}

/// Refuses a key the harness sets and a key that is not a scenario key.
fn check_key(cx: &Context, key: &str, span: Range<usize>, at: &str) -> Result<(), SuiteError> {
    if HARNESS_FLAGS.contains(&key) {
        return Err(cx.r.err(
            span,
            Some(key),
            format!(
                "{at}: `{key}` is set by the harness for every cell and cannot be a scenario key"
            ),
        ));
    }
    if RUN_ONLY_FLAGS.contains(&key) {
        return Err(cx.r.err(
            span,
            Some(key),
            format!("{at}: `{key}` is not a scenario key yet: a suite's cells do not record their server's off-CPU waits (`volley run --pid PID --profile --profile-off-cpu` does)"),
        ));
    }
    if let Some((_, protocol)) = VERSION_FLAGS.iter().find(|(f, _)| *f == key) {
        return Err(cx.r.err(
            span,
            Some(key),
            format!("{at}: `{key}` is said with `protocol = {protocol}` in a suite (the harness sets the HTTP version flag of each cell)"),
        ));
    }
    let flag_name = key.replace('_', "-");
    let known = OWN_KEYS.contains(&key)
        || (!RENAMED_FLAGS.contains(&key) && cx.run_flags.contains(&flag_name));
    if known {
        return Ok(());
    }
    Err(cx.r.err(
        span,
        Some(key),
        format!("{at}: unknown key `{key}` (scenario keys are `volley run` long flags in snake_case: {})", scenario_keys(&cx.run_flags).join(", ")),
    ))
}

/// Every scenario key, sorted, for the message about an unknown one.
fn scenario_keys(run_flags: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = run_flags
        .iter()
        .map(|f| f.replace('-', "_"))
        .filter(|k| {
            !HARNESS_FLAGS.contains(&k.as_str())
                && !RUN_ONLY_FLAGS.contains(&k.as_str())
                && !RENAMED_FLAGS.contains(&k.as_str())
                && !VERSION_FLAGS.iter().any(|(f, _)| f == k)
        })
        .collect();
    keys.extend(OWN_KEYS.iter().map(|k| k.to_string()));
    keys.push("servers".into());
    keys.push("capacity".into());
    keys.sort();
    keys
}

/// Scenario keys whose list of strings is several flags of one cell, not an axis: the
/// repeatable `volley run` flags (a list of lists is an axis of them).
const REPEATED_KEYS: &[&str] = &[
    "headers",
    "thresholds",
    "expect_body_contains",
    "expect_header",
    "expect_json",
];

/// Key `key` with value `v` as an axis of alternatives. A list is an axis, except a list of
/// strings under one of [`REPEATED_KEYS`] (several headers or thresholds of one cell).
fn read_axis<'a>(
    r: &TomlReader,
    key: String,
    v: &'a Val<'a>,
    at: &str,
) -> Result<Axis<'a>, SuiteError> {
    let list = match v.get_ref() {
        DeValue::Array(a)
            if !REPEATED_KEYS.contains(&key.as_str())
                || a.iter().any(|e| !matches!(e.get_ref(), DeValue::String(_))) =>
        {
            if a.is_empty() {
                return Err(r.err(
                    v.span(),
                    Some(&key),
                    format!("{at}: {key}: an empty list leaves no cell to run"),
                ));
            }
            Some(a.iter().collect::<Vec<_>>())
        }
        _ => None,
    };
    let is_axis = list.is_some();
    let mut choices = Vec::new();
    for item in list.unwrap_or_else(|| vec![v]) {
        choices.push(flags_for(r, &key, item, at)?);
    }
    Ok(Axis {
        key,
        span: v.span(),
        choices,
        is_axis,
        value: v,
    })
}

/// Adds the `[suite]` defaults the scenario does not set and that can apply to it, as
/// one-choice axes pointing at the `[suite]` value.
fn add_defaults<'a>(axes: &mut Vec<Axis<'a>>, defaults: &[SuiteDefault<'a>]) {
    let keys: BTreeSet<String> = axes.iter().map(|a| a.key.clone()).collect();
    let has = |k: &str| keys.contains(k);
    for d in defaults {
        if d.applies(has) {
            axes.push(Axis {
                key: d.key.to_string(),
                span: d.value.span(),
                choices: vec![Choice {
                    label: d.text.clone(),
                    flags: vec![format!("--{}={}", d.key, d.text)],
                }],
                is_axis: false,
                value: d.value,
            });
        }
    }
}

/// `servers = ["a", "b"]` of a scenario: names of servers defined above.
fn server_names(
    r: &TomlReader,
    v: &Val,
    at: &str,
    servers: &[ServerSpec],
) -> Result<Vec<String>, SuiteError> {
    let DeValue::Array(a) = v.get_ref() else {
        return Err(r.err(
            v.span(),
            Some("servers"),
            format!("{at}: servers: must be a list of server names"),
        ));
    };
    let mut out = Vec::new();
    for e in a.iter() {
        let name = r.str(e, at, "servers")?;
        if !servers.iter().any(|s| s.name == name) {
            let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
            return Err(r.err(
                e.span(),
                Some("servers"),
                format!(
                    "{at}: servers: no [[server]] is named `{name}` (there are: {})",
                    known.join(", ")
                ),
            ));
        }
        out.push(name);
    }
    if out.is_empty() {
        return Err(r.err(
            v.span(),
            Some("servers"),
            format!("{at}: servers: an empty list runs nothing"),
        ));
    }
    Ok(out)
}

/// One value of scenario key `key` as its label and `volley run` flags.
fn flags_for(r: &TomlReader, key: &str, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    match key {
        "path" => path_choice(r, v, at),
        "keepalive" => keepalive_choice(r, v, at),
        "protocol" => protocol_choice(r, v, at),
        "shards" => shards_choice(r, v, at),
        "thresholds" => thresholds_choice(r, v, at),
        "expect_body_contains" | "expect_header" | "expect_json" => repeated_choice(r, key, v, at),
        "headers" => headers_choice(r, v, at),
        _ => flag_choice(r, key, v, at),
    }
}

/// A value of `key` that is not of a type it takes; `what` says which it takes.
fn wrong_type(r: &TomlReader, key: &str, v: &Val, at: &str, what: &str) -> SuiteError {
    r.err(
        v.span(),
        Some(key),
        format!("{at}: {key}: {what}, not a {}", v.get_ref().type_str()),
    )
}

/// `path = "/x"`: no flag; the harness puts it in the URL.
fn path_choice(r: &TomlReader, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let key = "path";
    let s = match v.get_ref() {
        DeValue::String(s) => s.to_string(),
        _ => return Err(wrong_type(r, key, v, at, "must be a string such as \"/\"")),
    };
    if !s.starts_with('/') {
        return Err(r.err(
            v.span(),
            Some(key),
            format!("{at}: path must start with `/`"),
        ));
    }
    Ok(Choice {
        label: s,
        flags: Vec::new(),
    })
}

/// `keepalive = false` is `--no-keepalive`; `true` is the default and adds nothing.
fn keepalive_choice(r: &TomlReader, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let (label, flags) = match v.get_ref() {
        DeValue::Boolean(true) => ("true", Vec::new()),
        DeValue::Boolean(false) => ("false", vec!["--no-keepalive".into()]),
        _ => return Err(wrong_type(r, "keepalive", v, at, "must be true or false")),
    };
    Ok(Choice {
        label: label.into(),
        flags,
    })
}

/// `protocol = "http/1.1" | "https" | "h2" | "h2c"`: the harness puts the scheme in the URL
/// (and gives a managed server a certificate, or `H2C=1`); `h2` adds `--http2` and `h2c` adds
/// `--h2c` to the cell's flags.
fn protocol_choice(r: &TomlReader, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let key = "protocol";
    let expected = Protocol::expected();
    let DeValue::String(s) = v.get_ref() else {
        let what = format!("must be {expected}");
        return Err(wrong_type(r, key, v, at, &what));
    };
    let Some(protocol) = Protocol::parse(s) else {
        return Err(r.err(
            v.span(),
            Some(key),
            format!("{at}: protocol: unknown protocol `{s}` (expected {expected})"),
        ));
    };
    Ok(Choice {
        label: s.to_string(),
        flags: protocol.flag().into_iter().map(String::from).collect(),
    })
}

/// `shards = N`: the cell runs as N `volley run --shard i/N` processes (N from 1, in volley's
/// own process, to [`MAX_SHARDS`]); no flag of the cell's own (the harness adds them per
/// process).
fn shards_choice(r: &TomlReader, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let key = "shards";
    let DeValue::Integer(i) = v.get_ref() else {
        let what = format!("must be a whole number from 1 to {MAX_SHARDS}");
        return Err(wrong_type(r, key, v, at, &what));
    };
    let text = i.as_str().replace('_', "");
    match u64::from_str_radix(&text, i.radix()) {
        Ok(n @ 1..=MAX_SHARDS) => Ok(Choice {
            label: n.to_string(),
            flags: Vec::new(),
        }),
        _ => Err(r.err(
            v.span(),
            Some(key),
            format!("{at}: shards: `{text}` is not from 1 to {MAX_SHARDS} (1 runs the cell in volley's own process; N runs it as N processes, one shard each)"),
        )),
    }
}

/// `thresholds`: one string or a list of them, each a `--threshold` of the same cell.
fn thresholds_choice(r: &TomlReader, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let key = "thresholds";
    let items: Vec<&Val> = match v.get_ref() {
        DeValue::String(_) => vec![v],
        DeValue::Array(a) => a.iter().collect(),
        _ => {
            return Err(wrong_type(
                r,
                key,
                v,
                at,
                "must be a string such as \"p99<10ms\" or a list of them",
            ))
        }
    };
    let mut flags = Vec::new();
    let mut label = Vec::new();
    for e in items {
        let t = r.str(e, at, key)?;
        label.push(t.clone());
        flags.push(format!("--threshold={t}"));
    }
    Ok(Choice {
        label: label.join("; "),
        flags,
    })
}

/// `expect_body_contains`, `expect_header`, `expect_json`: one string or a list of them, each a flag of the
/// same cell (all must hold).
fn repeated_choice(r: &TomlReader, key: &str, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let items: Vec<&Val> = match v.get_ref() {
        DeValue::String(_) => vec![v],
        DeValue::Array(a) => a.iter().collect(),
        _ => {
            return Err(wrong_type(
                r,
                key,
                v,
                at,
                "must be a string or a list of them",
            ))
        }
    };
    let flag = format!("--{}", key.replace('_', "-"));
    let mut flags = Vec::new();
    let mut label = Vec::new();
    for e in items {
        let t = r.str(e, at, key)?;
        label.push(t.clone());
        flags.push(format!("{flag}={t}"));
    }
    Ok(Choice {
        label: label.join("; "),
        flags,
    })
}

/// `headers`: a string `"Name: value"`, a list of them, or a table `{ Name = "value" }`, each
/// header a `--header` of the same cell.
fn headers_choice(r: &TomlReader, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let headers = match v.get_ref() {
        DeValue::String(s) => vec![s.to_string()],
        DeValue::Array(a) => header_list(r, a, at)?,
        DeValue::Table(t) => header_table(r, t, at)?,
        _ => {
            return Err(wrong_type(
                r,
                "headers",
                v,
                at,
                "must be a string \"Name: value\", a list of them, or a table",
            ))
        }
    };
    Ok(Choice {
        // The label names cells (file names, suite.json, progress, reports): no secrets.
        label: headers
            .iter()
            .map(|h| volley_model::result::redact::arg(h).into_owned())
            .collect::<Vec<_>>()
            .join("; "),
        flags: headers.iter().map(|h| format!("--header={h}")).collect(),
    })
}

/// `headers = ["Name: value", ...]`.
fn header_list(r: &TomlReader, a: &DeArray, at: &str) -> Result<Vec<String>, SuiteError> {
    let mut headers = Vec::new();
    for e in a.iter() {
        match e.get_ref() {
            DeValue::String(s) => headers.push(s.to_string()),
            _ => {
                return Err(r.err(
                    e.span(),
                    Some("headers"),
                    format!("{at}: headers: each header is a string \"Name: value\""),
                ))
            }
        }
    }
    Ok(headers)
}

/// `headers = { Name = "value" }`, as `Name: value` in table order.
fn header_table(r: &TomlReader, t: &DeTable, at: &str) -> Result<Vec<String>, SuiteError> {
    let mut headers = Vec::new();
    for (k, e) in t.iter() {
        match e.get_ref() {
            DeValue::String(s) => headers.push(format!("{}: {s}", k.get_ref())),
            _ => {
                return Err(r.err(
                    e.span(),
                    Some("headers"),
                    format!("{at}: headers.{}: must be a string", k.get_ref()),
                ))
            }
        }
    }
    Ok(headers)
}

/// Any other key: the `volley run` flag of the same name with the value as written.
fn flag_choice(r: &TomlReader, key: &str, v: &Val, at: &str) -> Result<Choice, SuiteError> {
    let flag = format!("--{}", key.replace('_', "-"));
    let text = match v.get_ref() {
        DeValue::String(s) => s.to_string(),
        DeValue::Integer(i) => i.as_str().replace('_', ""),
        DeValue::Float(f) => f.as_str().replace('_', ""),
        // A switch (`insecure = true`) is its flag, or nothing when false.
        DeValue::Boolean(b) if is_switch(key) => {
            return Ok(Choice {
                label: b.to_string(),
                flags: if *b { vec![flag] } else { Vec::new() },
            })
        }
        _ => return Err(wrong_type(r, key, v, at, "must be a string or a number")),
    };
    // rate = 0 is the closed loop (docs/contract.md, "Suites"): no `--rate` at all.
    if key == "rate" && text.parse::<f64>() == Ok(0.0) {
        return Ok(Choice {
            label: "0".into(),
            flags: Vec::new(),
        });
    }
    // `--flag=value`, so a value starting with `-` is not read as a flag.
    Ok(Choice {
        label: text.clone(),
        flags: vec![format!("{flag}={text}")],
    })
}

/// Whether scenario key `key` is a `volley run` flag that takes no value (`insecure`).
fn is_switch(key: &str) -> bool {
    let long = key.replace('_', "-");
    let cmd = RunFlags::augment_args(clap::Command::new("run"));
    let switch = cmd
        .get_arguments()
        .any(|a| a.get_long() == Some(long.as_str()) && !a.get_action().takes_values());
    switch
}

/// Long names of every `volley run` flag, from the clap definition (so the suite keys never
/// drift from the command line).
fn run_long_flags() -> Vec<String> {
    let cmd = RunFlags::augment_args(clap::Command::new("run"));
    cmd.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{err, parse, BASE};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/requests");

    #[test]
    fn requests_files_and_checks_are_scenario_keys() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"mix\"\nrequests_file = \"{FIXTURES}/mix.toml\"\nexpect_status = \"200\"\nexpect_body_contains = [\"a\", \"b\"]\nexpect_header = \"content-type\"\nexpect_size = 12\nverify = true\nconnections = [1, 2]\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        assert_eq!(
            cells.len(),
            2,
            "a list of strings of a repeatable flag is one cell"
        );
        let load = &cells[0].config.load;
        assert_eq!(load.checks.status, [(200, 200)]);
        assert_eq!(load.checks.body_contains, [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(load.checks.headers, [("content-type".to_string(), None)]);
        assert_eq!(load.checks.size, Some(12));
        assert!(load.verify);
        let w = load.workload.as_ref().unwrap();
        assert_eq!(w.endpoints, ["item", "order", "GET /health"]);
        // Both cells read the same file with the same checks: they hold it once.
        let other = cells[1].config.load.workload.as_ref().unwrap();
        assert!(std::sync::Arc::ptr_eq(w, other));
    }

    #[test]
    fn max_late_applies_to_the_sharded_cells_of_an_axis_only() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"s\"\nshards = [1, 2]\nconnections = 2\nmax_late = \"250ms\"\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        assert!(!cells[0].flags.iter().any(|f| f.starts_with("--max-late")));
        assert!(
            cells[1].flags.contains(&"--max-late=250ms".to_string()),
            "{:?}",
            cells[1].flags
        );
    }

    #[test]
    fn profile_is_for_one_run_of_the_server_the_harness_starts() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nprofile = true\nprofile_frequency = 99\n"
        ))
        .unwrap();
        let cell = &s.scenarios[0].cells[0];
        assert!(
            cell.flags.contains(&"--profile".to_string()),
            "{:?}",
            cell.flags
        );
        let m = cell.config.monitor.clone().unwrap();
        assert_eq!((m.pid, m.profile_hz), (0, Some(99)));
        for (with, why) in [
            ("capacity = { slo = \"p99<10ms\" }\n", "`capacity`"),
            ("shards = 2\nconnections = 2\n", "`shards`"),
        ] {
            let (_, _, key, msg) = err(&format!(
                "{BASE}[[scenario]]\nname = \"p\"\nprofile = true\n{with}"
            ));
            assert_eq!(key.as_deref(), Some("profile"), "{msg}");
            assert!(
                msg.contains(&format!("cannot be combined with {why}")),
                "{msg}"
            );
        }
    }

    #[test]
    fn monitor_interval_is_for_the_server_the_harness_starts() {
        // No --pid in a scenario: the harness knows it. The interval is checked and kept.
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"m\"\nmonitor_interval = \"50ms\"\n"
        ))
        .unwrap();
        let m = s.scenarios[0].cells[0].config.monitor.clone().unwrap();
        assert_eq!(m.interval, std::time::Duration::from_millis(50));
        let (_, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"m\"\nmonitor_interval = \"1ms\"\n"
        ));
        assert_eq!(key.as_deref(), Some("monitor_interval"), "{msg}");
        assert!(msg.contains("must be from 10ms to 10s"), "{msg}");
    }

    #[test]
    fn a_bad_requests_file_in_a_cell_points_at_its_key_and_says_where_in_the_file() {
        let (line, col, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nrequests_file = \"{FIXTURES}/bad_weight.toml\"\n"
        ));
        assert_eq!((line, col, key.as_deref()), (9, 17, Some("requests_file")));
        assert!(
            msg.contains(&format!("--requests-file {FIXTURES}/bad_weight.toml:6:10: [[request]] 2: weight: must be a number above 0")),
            "{msg}"
        );
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nrequests_file = \"{FIXTURES}/mix.toml\"\nbody_size = \"1KiB\"\n"
        ));
        assert_eq!((line, key.as_deref()), (10, Some("body_size")));
        assert!(msg.contains("cannot be combined with --body-size"), "{msg}");
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\npath = \"/api\"\nrequests_file = \"{FIXTURES}/mix.toml\"\n"
        ));
        assert_eq!((line, key.as_deref()), (10, Some("requests_file")));
        assert!(
            msg.contains("the URL names the host; the file names the paths"),
            "{msg}"
        );
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nexpect_body_regex = \"(\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("expect_body_regex")));
        assert!(msg.contains("`(` is not a regex"), "{msg}");
    }

    #[test]
    fn headers_list_is_one_cell_and_list_of_lists_an_axis() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"h\"\nheaders = [\"A: 1\", \"B: 2\"]\n[[scenario]]\nname = \"h2\"\nheaders = [[\"A: 1\"], {{ B = \"2\" }}]\n"
        ))
        .unwrap();
        assert_eq!(s.scenarios[0].cells.len(), 1);
        assert_eq!(
            s.scenarios[0].cells[0].flags[..2],
            ["--header=A: 1", "--header=B: 2"]
        );
        assert_eq!(s.scenarios[1].cells.len(), 2);
        assert_eq!(s.scenarios[1].cells[1].flags[..1], ["--header=B: 2"]);
    }

    #[test]
    fn scenarios_may_name_their_servers() {
        let s = parse(&format!(
            "{BASE}[[server]]\nname = \"b\"\nstart = \"./b\"\n[[scenario]]\nname = \"p\"\nservers = [\"b\"]\n[[scenario]]\nname = \"q\"\n"
        ))
        .unwrap();
        assert!(s.scenarios[0].runs_on("b") && !s.scenarios[0].runs_on("a"));
        assert!(s.scenarios[1].runs_on("a"));
        assert_eq!(s.cells_per_rep(), 3);
        let (line, col, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nservers = [\"a\", \"c\"]\n"
        ));
        assert_eq!((line, col, key.as_deref()), (9, 17, Some("servers")));
        assert!(msg.contains("no [[server]] is named `c`"), "{msg}");
    }

    #[test]
    fn thresholds_are_several_flags_of_one_cell() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nthresholds = [\"p99<10ms\", \"errors<1%\"]\n"
        ))
        .unwrap();
        assert_eq!(s.scenarios[0].cells.len(), 1);
        assert_eq!(
            s.scenarios[0].cells[0].flags[..2],
            ["--threshold=p99<10ms", "--threshold=errors<1%"]
        );
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nthresholds = [\"p99<10ms\", \"p98<1s\"]\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("thresholds")));
        assert!(msg.contains("unknown metric `p98`"), "{msg}");
    }

    #[test]
    fn protocol_is_a_key_and_an_axis() {
        use super::super::Protocol;
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\n[[scenario]]\nname = \"s\"\nprotocol = \"https\"\n[[scenario]]\nname = \"m\"\nprotocol = [\"http/1.1\", \"https\"]\nconnections = [1, 2]\n"
        ))
        .unwrap();
        let p = &s.scenarios[0].cells[0];
        assert_eq!(p.protocol, Protocol::Http1);
        assert!(p.config.load.tls.is_none());
        let one = &s.scenarios[1].cells[0];
        assert_eq!(
            (one.protocol, one.axes_label()),
            (Protocol::Https, String::new())
        );
        assert_eq!(one.config.load.target.url, "https://127.0.0.1:1/");
        assert!(one.config.load.tls.as_ref().is_some_and(|t| t.verify));
        assert!(!one.flags.iter().any(|f| f.contains("protocol")));
        let m = &s.scenarios[2].cells;
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].axes_label(), "protocol=http/1.1,connections=1");
        assert_eq!(m[3].axes_label(), "protocol=https,connections=2");
        assert_eq!(
            m.iter().map(|c| c.protocol).collect::<Vec<_>>(),
            [
                Protocol::Http1,
                Protocol::Http1,
                Protocol::Https,
                Protocol::Https
            ]
        );
    }

    #[test]
    fn http2_protocols_give_their_scheme_and_version_flag() {
        use super::super::Protocol;
        use volley_plan::HttpVersion;
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nprotocol = [\"http/1.1\", \"https\", \"h2\", \"h2c\"]\n[[scenario]]\nname = \"s\"\nprotocol = [\"h2\", \"h2c\"]\nstreams = 10\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        let seen: Vec<_> = cells
            .iter()
            .map(|c| {
                (
                    c.protocol,
                    c.config.load.target.url.as_str(),
                    c.config.load.http,
                    c.flags.first().map(String::as_str),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    Protocol::Http1,
                    "http://127.0.0.1:1/",
                    HttpVersion::Http1,
                    Some("--duration=2s")
                ),
                (
                    Protocol::Https,
                    "https://127.0.0.1:1/",
                    HttpVersion::Http1,
                    Some("--http1.1")
                ),
                (
                    Protocol::H2,
                    "https://127.0.0.1:1/",
                    HttpVersion::H2,
                    Some("--http2")
                ),
                (
                    Protocol::H2c,
                    "http://127.0.0.1:1/",
                    HttpVersion::H2c,
                    Some("--h2c")
                ),
            ]
        );
        assert_eq!(cells[3].axes_label(), "protocol=h2c");
        assert!(cells[2].config.load.tls.is_some() && cells[3].config.load.tls.is_none());
        let streams = &s.scenarios[1].cells;
        assert_eq!(streams[1].flags[..2], ["--h2c", "--streams=10"]);
        assert_eq!(streams[1].config.load.h2.streams, 10);
    }

    #[test]
    fn unknown_protocols_and_version_flags_as_keys_point_at_themselves() {
        let (line, col, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nprotocol = [\"https\", \"spdy\"]\n"
        ));
        assert_eq!((line, col, key.as_deref()), (9, 22, Some("protocol")));
        assert!(
            msg.contains(
                "unknown protocol `spdy` (expected \"http/1.1\", \"https\", \"h2\", \"h2c\", \"h3\", \"ws\" or \"wss\")"
            ),
            "{msg}"
        );
        let (line, _, key, msg) = err(&format!("{BASE}[[scenario]]\nname = \"p\"\nprotocol = 2\n"));
        assert_eq!((line, key.as_deref()), (9, Some("protocol")), "{msg}");
        let (line, _, key, msg) = err(&format!("{BASE}[[scenario]]\nname = \"p\"\nhttp2 = true\n"));
        assert_eq!((line, key.as_deref()), (9, Some("http2")));
        assert!(msg.contains("`protocol = \"h2\"`"), "{msg}");
        let (_, _, key, _) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\n\"http1.1\" = true\n"
        ));
        assert_eq!(key.as_deref(), Some("http1.1"));
        // A flag that contradicts the protocol is blamed on the flag.
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nprotocol = \"https\"\nstreams = 4\n"
        ));
        assert_eq!((line, key.as_deref()), (10, Some("streams")), "{msg}");
    }

    #[test]
    fn shards_is_a_key_and_an_axis_with_the_whole_load_as_config() {
        // (max_late in an axis with shards = 1: max_late_applies_to_the_sharded_cells_of_an_axis_only)
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"one\"\n[[scenario]]\nname = \"s\"\nshards = 3\nrate = 600\nconnections = 6\n[[scenario]]\nname = \"m\"\nshards = [2, 4]\nconnections = 4\nmax_late = \"250ms\"\n"
        ))
        .unwrap();
        assert_eq!(s.scenarios[0].cells[0].shards, 1);
        let c = &s.scenarios[1].cells[0];
        assert_eq!((c.shards, c.axes_label()), (3, String::new()));
        assert_eq!(c.flags, ["--rate=600", "--connections=6", "--duration=2s"]);
        // The whole load, as the harness's own process sees it.
        assert_eq!(c.config.load.shard, None);
        assert_eq!(c.config.start.at, None);
        assert_eq!(c.config.load.connections, 6);
        assert_eq!(c.config.load.rate_rps, Some(600.0));
        let m = &s.scenarios[2].cells;
        assert_eq!(
            m.iter()
                .map(|c| (c.shards, c.axes_label()))
                .collect::<Vec<_>>(),
            [(2, "shards=2".to_string()), (4, "shards=4".to_string())]
        );
        assert_eq!(
            m[1].config.start.max_late,
            std::time::Duration::from_millis(250)
        );
    }

    #[test]
    fn bad_shards_point_at_their_key() {
        let case = |body: &str| err(&format!("{BASE}[[scenario]]\nname = \"p\"\n{body}"));
        for (value, col, says) in [
            (
                "\"3\"",
                10,
                "must be a whole number from 1 to 10000, not a string",
            ),
            (
                "2.0",
                10,
                "must be a whole number from 1 to 10000, not a float",
            ),
            ("true", 10, "not a boolean"),
            ("0", 10, "`0` is not from 1 to 10000"),
            ("10_001", 10, "`10001` is not from 1 to 10000"),
            ("-2", 10, "`-2` is not from 1 to 10000"),
            ("[2, 0]", 14, "`0` is not from 1 to 10000"),
            ("[]", 10, "an empty list leaves no cell to run"),
        ] {
            let (line, c, key, msg) = case(&format!("shards = {value}\n"));
            assert_eq!(
                (line, c, key.as_deref()),
                (9, col, Some("shards")),
                "{value}: {msg}"
            );
            assert!(msg.contains(says), "{value}: {msg}");
        }
        assert!(!case("shards = 0\n").3.contains("not a"));
        // Not with a capacity search, nor with the keys the harness sets for the processes.
        let (line, _, key, msg) =
            case("connections = 4\nshards = 2\ncapacity = { slo = \"p99<10ms\" }\n");
        assert_eq!((line, key.as_deref()), (10, Some("shards")));
        assert!(msg.contains("cannot be combined with `capacity`"), "{msg}");
        for run_key in [
            "shard = \"0/2\"",
            "start_at = \"2030-01-01T00:00:00Z\"",
            "clock_budget = \"off\"",
        ] {
            let (line, _, key, msg) = case(&format!("shards = 2\n{run_key}\n"));
            let name = run_key.split(' ').next().unwrap();
            assert_eq!((line, key.as_deref()), (10, Some(name)), "{msg}");
            assert!(
                msg.contains(&format!("`{name}` cannot be combined with `shards`")),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_load_too_small_to_split_is_refused_as_shard_0_would_refuse_it() {
        let case = |body: &str| err(&format!("{BASE}[[scenario]]\nname = \"p\"\n{body}"));
        // Blamed on the later of the two keys, as conflicts are.
        let (line, _, key, msg) = case("connections = 2\nshards = 3\n");
        assert_eq!((line, key.as_deref()), (10, Some("shards")));
        assert!(
            msg.starts_with("[[scenario]] \"p\": shards: ")
                && msg.contains("-c/--connections: 2 over 3 shards leaves a shard with none"),
            "{msg}"
        );
        let (line, col, key, msg) = case("shards = [2, 3]\nconnections = 2\n");
        assert_eq!((line, col, key.as_deref()), (10, 15, Some("connections")));
        assert!(msg.contains("(cell shards=3): connections: "), "{msg}");
        let (_, _, key, msg) = case("users = 2\nspawn_rate = 1\nduration = \"5s\"\nshards = 3\n");
        assert_eq!(key.as_deref(), Some("shards"));
        assert!(
            msg.contains(" 2 over 3 shards leaves a shard with none"),
            "{msg}"
        );
    }

    #[test]
    fn switches_take_booleans() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nprotocol = \"https\"\ninsecure = [true, false]\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        assert_eq!(cells[0].flags[..2], ["--http1.1", "--insecure"]);
        assert!(cells[0].config.load.tls.as_ref().is_some_and(|t| !t.verify));
        assert!(!cells[1].flags.iter().any(|f| f.contains("insecure")));
        assert!(cells[1].config.load.tls.as_ref().is_some_and(|t| t.verify));
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconnections = true\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("connections")));
        assert!(msg.contains("must be a string or a number"), "{msg}");
    }

    #[test]
    fn keys_that_are_not_scenario_keys_point_at_themselves() {
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconections = 3\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("conections")));
        assert!(msg.contains("unknown key `conections`"), "{msg}");

        let (_, _, key, msg) = err(&format!("{BASE}[[scenario]]\nname = \"p\"\npid = 3\n"));
        assert_eq!(key.as_deref(), Some("pid"));
        assert!(msg.contains("set by the harness"), "{msg}");

        let (_, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nprofile_out = \"x.folded\"\n"
        ));
        assert_eq!(key.as_deref(), Some("profile_out"));
        assert!(msg.contains("set by the harness"), "{msg}");

        let (line, _, key, _) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nkeepalive = \"no\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("keepalive")));
    }
}
