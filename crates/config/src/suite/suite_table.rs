//! The `[suite]` table: the suite's name, repetitions, the `warmup`/`duration` defaults of every
//! scenario, and the CPU lists of servers and client.

use toml::de::{DeTable, DeValue};

use super::toml_reader::{TomlReader, Val};
use super::SuiteError;
use volley_model::sys::cpus::{self, CpuList};
use volley_model::units;

/// Keys of `[suite]`.
const SUITE_KEYS: &[&str] = &[
    "name",
    "repetitions",
    "warmup",
    "duration",
    "server_cpus",
    "client_cpus",
    "fail_on_status",
    "baseline",
];

/// The `[suite]` table, checked.
pub(super) struct SuiteTable<'a> {
    /// `name`: names the results folder.
    pub name: String,
    /// `repetitions` (default 1).
    pub repetitions: u32,
    /// `warmup` and `duration`, in that order, for every scenario they can apply to.
    pub defaults: Vec<SuiteDefault<'a>>,
    /// `server_cpus`.
    pub server_cpus: Option<CpuList>,
    /// `client_cpus`.
    pub client_cpus: Option<CpuList>,
    /// `fail_on_status` (default true): a cell whose responses mostly failed (status ≥ 400)
    /// is a failed cell.
    pub fail_on_status: bool,
    /// `baseline`: the server the reports compare every other with (checked against the
    /// servers by [`check_baseline`]).
    pub baseline: Option<(String, &'a Val<'a>)>,
}

/// A `[suite]` value that scenarios inherit (`warmup = "2s"`).
pub(super) struct SuiteDefault<'a> {
    /// The key, which is also the scenario key it stands for.
    pub key: &'static str,
    /// The value as written (a checked duration).
    pub text: String,
    /// The value in the file, for errors about the cells it ends up in.
    pub value: &'a Val<'a>,
}

impl SuiteDefault<'_> {
    /// Whether this default applies to a scenario that sets the keys for which `has` is true:
    /// not when the scenario sets it itself, and not where it cannot apply (no warm-up with a
    /// ramp, no duration with a request count or stages).
    pub(super) fn applies(&self, has: impl Fn(&str) -> bool) -> bool {
        let ramp = has("users") || has("stages");
        let can = match self.key {
            "warmup" => !ramp,
            "duration" => !has("requests") && !has("stages") && !has("rate_stages"),
            _ => true,
        };
        can && !has(self.key)
    }
}

impl<'a> SuiteTable<'a> {
    /// Reads and checks `[suite]` of `doc`, which every suite must have.
    pub(super) fn read(r: &TomlReader, doc: &'a DeTable<'a>) -> Result<Self, SuiteError> {
        let (suite, span) = match doc.get("suite") {
            Some(v) => (r.table(v, "[suite]", "suite")?, v.span()),
            None => {
                return Err(r.err(
                    0..0,
                    None,
                    "missing [suite] table (with at least `name`)".into(),
                ))
            }
        };
        r.known(suite, SUITE_KEYS, "[suite]")?;
        let name = r.req_str(suite, "name", "[suite]", span)?;
        if name.trim().is_empty() || name.contains(['/', '\\', '\0']) {
            let v = suite.get("name").unwrap();
            return Err(r.err(
                v.span(),
                Some("name"),
                "[suite]: name must be non-empty, without `/` (it names the results folder)".into(),
            ));
        }
        Ok(SuiteTable {
            name,
            repetitions: repetitions(r, suite)?,
            defaults: defaults(r, suite)?,
            server_cpus: cpu_list(r, suite, "server_cpus")?,
            client_cpus: cpu_list(r, suite, "client_cpus")?,
            fail_on_status: match suite.get("fail_on_status") {
                Some(v) => r.bool(v, "[suite]", "fail_on_status")?,
                None => true,
            },
            baseline: match suite.get("baseline") {
                Some(v) => Some((r.str(v, "[suite]", "baseline")?, v)),
                None => None,
            },
        })
    }
}

/// `baseline` names one of the `[[server]]`s (`names`, in file order).
pub(super) fn check_baseline(
    r: &TomlReader,
    baseline: &Option<(String, &Val)>,
    names: &[&str],
) -> Result<Option<String>, SuiteError> {
    let Some((name, v)) = baseline else {
        return Ok(None);
    };
    if names.contains(&name.as_str()) {
        return Ok(Some(name.clone()));
    }
    Err(r.err(
        v.span(),
        Some("baseline"),
        format!(
            "[suite]: baseline = \"{name}\" names no [[server]]; the servers are: {}",
            names.join(", ")
        ),
    ))
}

/// `repetitions`: 1 to 1000, default 1.
fn repetitions(r: &TomlReader, suite: &DeTable) -> Result<u32, SuiteError> {
    let Some(v) = suite.get("repetitions") else {
        return Ok(1);
    };
    let n = r.int(v, "[suite]", "repetitions")?;
    if !(1..=1000).contains(&n) {
        return Err(r.err(
            v.span(),
            Some("repetitions"),
            "[suite]: repetitions must be from 1 to 1000".into(),
        ));
    }
    Ok(n as u32)
}

/// `warmup` and `duration`, checked as durations.
fn defaults<'a>(
    r: &TomlReader,
    suite: &'a DeTable<'a>,
) -> Result<Vec<SuiteDefault<'a>>, SuiteError> {
    let mut defaults = Vec::new();
    for key in ["warmup", "duration"] {
        if let Some(v) = suite.get(key) {
            let s = r.str(v, "[suite]", key)?;
            units::parse_duration(&s)
                .map_err(|m| r.err(v.span(), Some(key), format!("[suite]: {key}: {m}")))?;
            defaults.push(SuiteDefault {
                key,
                text: s,
                value: v,
            });
        }
    }
    Ok(defaults)
}

/// `server_cpus` or `client_cpus`: a CPU list (taskset syntax, a bare number allowed) of CPUs
/// this machine has.
fn cpu_list(r: &TomlReader, suite: &DeTable, key: &str) -> Result<Option<CpuList>, SuiteError> {
    let Some(v) = suite.get(key) else {
        return Ok(None);
    };
    let s = match v.get_ref() {
        DeValue::Integer(i) => i.as_str().to_string(),
        _ => r.str(v, "[suite]", key)?,
    };
    let list = cpus::parse_list(&s)
        .map_err(|m| r.err(v.span(), Some(key), format!("[suite]: {key}: {m}")))?;
    let online = cpus::online();
    if let Some(bad) = list.cpus.iter().find(|c| **c >= online) {
        return Err(r.err(
            v.span(),
            Some(key),
            format!(
                "[suite]: {key}: CPU {bad} does not exist (this machine has CPUs 0-{})",
                online.saturating_sub(1)
            ),
        ));
    }
    Ok(Some(list))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{err, parse};

    #[test]
    fn suite_defaults_yield_to_ramps_and_requests() {
        let s = parse(
            "[suite]\nname = \"t\"\nwarmup = \"1s\"\nduration = \"3s\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[scenario]]\nname = \"u\"\nusers = 10\nspawn_rate = 5\n[[scenario]]\nname = \"s\"\nstages = \"1s:5,1s:0\"\n[[scenario]]\nname = \"n\"\nrequests = 100\n",
        )
        .unwrap();
        assert_eq!(
            s.scenarios[0].cells[0].flags,
            vec!["--users=10", "--spawn-rate=5", "--duration=3s"]
        );
        assert_eq!(s.scenarios[1].cells[0].flags, vec!["--stages=1s:5,1s:0"]);
        assert_eq!(
            s.scenarios[2].cells[0].flags,
            vec!["--requests=100", "--warmup=1s"]
        );
        assert_eq!(
            s.scenarios[1].cells[0].planned(),
            std::time::Duration::from_secs(2)
        );
    }

    #[test]
    fn baseline_names_a_server() {
        let text = |b: &str| {
            format!("[suite]\nname = \"t\"\nbaseline = {b}\n[[server]]\nname = \"v1\"\nstart = \"x\"\n[[server]]\nname = \"v2\"\nstart = \"x\"\n[[scenario]]\nname = \"x\"\n")
        };
        assert_eq!(
            parse(&text("\"v1\"")).unwrap().baseline.as_deref(),
            Some("v1")
        );
        let (line, _, key, msg) = err(&text("\"v3\""));
        assert_eq!((line, key.as_deref()), (3, Some("baseline")));
        assert!(msg.contains("v3") && msg.contains("v1, v2"), "{msg}");
        let (line, _, key, _) = err(&text("3"));
        assert_eq!((line, key.as_deref()), (3, Some("baseline")));
    }

    #[test]
    fn suite_errors() {
        let (line, _, key, _) = err("[suite]\nname = \"t\"\nserver_cpus = \"9999\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("server_cpus")));

        let (line, _, key, _) = err("[suite]\nname = \"t\"\nrepetitions = 0\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("repetitions")));
    }
}
