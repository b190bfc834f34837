//! `volley history check`: this commit's runs against the baseline's history.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Args;

use super::read::FilterArgs;
use super::select::{
    changepoints, commit_of, history_path, measure, measure_arg, percent, table, usable, write_to,
};
use super::{open_existing, ExitCode};
use crate::config::suite::HistoryTable;
use crate::history::check::{self, Call, Entry, Finding, Settings, Test};
use crate::history::git;
use crate::history::measure::Measure;
use crate::history::series::{self, short};
use crate::history::Stored;
use crate::sys::files;

/// `volley history check`.
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The revision whose history is the baseline: a branch, tag or commit [default: the suite
    /// file's `[history] baseline`, else main].
    #[arg(long, value_name = "REV")]
    pub baseline: Option<String>,
    /// The commit whose runs are judged [default: HEAD].
    #[arg(long, value_name = "REV")]
    pub commit: Option<String>,
    /// A metric whose regression fails the check (repeatable) [default: throughput, p50,
    /// max_rate]. Tail percentiles given here gate too.
    #[arg(long, value_name = "M", value_parser = measure_arg)]
    pub metric: Vec<Measure>,
    /// A metric whose regression is only reported (repeatable) [default: p99].
    #[arg(long, value_name = "M", value_parser = measure_arg)]
    pub warn: Vec<Measure>,
    /// The smallest change called a regression, percent of the baseline [default: 5%].
    #[arg(long, value_name = "PCT")]
    pub min_effect: Option<String>,
    /// The tests' level: the commits' t test, or Mann-Whitney on one commit's repetitions
    /// [default: 0.005].
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,
    /// Read the rules of a suite file's `[history]` table (flags win).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
    /// Write the findings as JSON to PATH, or to stdout with `-`.
    #[arg(long, value_name = "PATH")]
    pub json: Option<String>,
}

/// The check's rules: flags, else the suite's `[history]`, else the defaults; the baseline
/// revision; and the table (for its `path`).
fn settings(a: &CheckArgs) -> Result<(Settings, String, HistoryTable), String> {
    let table = table(a.suite.as_deref())?;
    let mut s = Settings::default();
    let names = |flag: &str, v: &[String]| -> Result<Vec<Measure>, String> {
        v.iter().map(|n| measure(flag, n)).collect()
    };
    if !a.metric.is_empty() {
        s.gate = a.metric.clone();
    } else if let Some(g) = &table.gate {
        s.gate = names("[history] gate:", g)?;
    }
    if !a.warn.is_empty() {
        s.warn = a.warn.clone();
    } else if let Some(w) = &table.warn {
        s.warn = names("[history] warn:", w)?;
    }
    s.min_effect_pct = match &a.min_effect {
        Some(text) => percent("--min-effect", text)?,
        None => table.min_effect_pct.unwrap_or(s.min_effect_pct),
    };
    match a.alpha {
        Some(x) if !(x > 0.0 && x < 1.0) => {
            return Err(format!("--alpha {x}: must be between 0 and 1 (exclusive)"))
        }
        Some(x) => s.alpha = x,
        None => s.alpha = table.alpha.unwrap_or(s.alpha),
    }
    // A level is split only at a change the check would call.
    s.changepoint = changepoints(&table, s.min_effect_pct);
    let baseline = a
        .baseline
        .clone()
        .or(table.baseline.clone())
        .unwrap_or_else(|| "main".to_string());
    Ok((s, baseline, table))
}

/// The current commit's runs: those of its newest state, with uncommitted changes or
/// without (a local check after an edit judges the edit, not older clean runs).
fn current_runs<'a>(runs: &'a [Stored], commit: &str) -> Vec<&'a Stored> {
    let of: Vec<&Stored> = runs
        .iter()
        .filter(|r| r.record.git.as_ref().is_some_and(|g| g.commit == commit))
        .collect();
    let dirty = |r: &Stored| r.record.git.as_ref().is_some_and(|g| g.dirty);
    let newest_dirty = of.last().is_some_and(|r| dirty(r));
    of.into_iter()
        .filter(|r| dirty(r) == newest_dirty)
        .collect()
}

/// How messages name the baseline: by the flag or the suite key that gave it, or as the
/// default (a flag the user did not give is not named as the culprit).
fn baseline_named(a: &CheckArgs, table: &HistoryTable, rev: &str) -> String {
    if a.baseline.is_some() {
        format!("--baseline {rev}")
    } else if table.baseline.is_some() {
        format!("[history] baseline {rev}")
    } else {
        format!("baseline {rev} (the default; --baseline REV for another)")
    }
}

/// The baseline's runs: committed runs of the commits `rev` reaches, or recorded on a branch
/// named `rev`, without the current commit; messages name it as `named`.
fn baseline_runs<'a>(
    runs: &'a [Stored],
    (rev, named): (&str, &str),
    commit: &str,
    path: &Path,
) -> Result<Vec<&'a Stored>, String> {
    let history: BTreeSet<String> = git::history_of(rev, 100_000)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let on_branch = |r: &Stored| {
        r.record
            .git
            .as_ref()
            .is_some_and(|g| g.branch.as_deref() == Some(rev))
    };
    if history.is_empty() && !runs.iter().any(on_branch) {
        let not_rev = if git::toplevel().is_some() {
            "not a revision of this repository"
        } else {
            "not in a git repository to read it"
        };
        return Err(format!(
            "{named}: {not_rev}, and no saved run was recorded on a branch of that name"
        ));
    }
    let base: Vec<&Stored> = runs
        .iter()
        .filter(|r| {
            r.record.git.as_ref().is_some_and(|g| {
                g.commit != commit && !g.dirty && (history.contains(&g.commit) || on_branch(r))
            })
        })
        .collect();
    if base.is_empty() {
        return Err(format!(
            "{named}: no saved run of its history in {} to compare with (save runs of {rev} with --save first)",
            path.display()
        ));
    }
    Ok(base)
}

pub(super) fn check(a: &CheckArgs, explicit: Option<&Path>) -> Result<ExitCode, String> {
    let (s, baseline, table) = settings(a)?;
    let path = history_path(explicit, &table);
    let store = open_existing(&path)?;
    let runs = usable(&store, &a.filter)?;
    let rev = a.commit.as_deref().unwrap_or("HEAD");
    let commit = commit_of(a.commit.as_deref(), &runs)?;
    let current = current_runs(&runs, &commit);
    if current.is_empty() {
        return Err(format!(
            "no saved run of commit {} ({rev}) in {}: run the suite with --save first",
            short(&commit, 12),
            path.display()
        ));
    }
    let named = baseline_named(a, &table, &baseline);
    let base = baseline_runs(&runs, (&baseline, &named), &commit, &path)?;
    let entries = check::check(
        &series::group(current.iter().copied()),
        &series::group(base.iter().copied()),
        &s,
    );
    let base_commits: BTreeSet<&str> = base
        .iter()
        .filter_map(|r| r.record.git.as_ref().map(|g| g.commit.as_str()))
        .collect();
    let regressions = entries.iter().filter(|e| e.regressed()).count();
    let compared = entries.iter().filter(|e| e.refused.is_none()).count();
    if let Some(j) = &a.json {
        let v = check_json(&entries, &commit, &baseline, &s, regressions);
        let text = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
        write_to("--json", j, &text)?;
    }
    let mut out = format!(
        "volley history check: {} ({rev}) against {baseline} ({} commit{}, {} run{}) in {}\n",
        short(&commit, 7),
        base_commits.len(),
        plural(base_commits.len()),
        base.len(),
        plural(base.len()),
        path.display()
    );
    for e in &entries {
        out += &entry_text(e, &s);
    }
    out += &format!(
        "\n{regressions} series regressed; {compared} of {} series compared (gates: {}; warns: {}; min effect {}%)\n",
        entries.len(),
        s.gate.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        s.warn.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        s.min_effect_pct
    );
    if a.json.as_deref() == Some("-") {
        stderr!("{out}");
    } else {
        files::stdout(&out);
    }
    if compared == 0 {
        stderrln!(
            "volley history check: no series of this commit could be compared (reasons above)"
        );
        return Ok(ExitCode::Usage);
    }
    // 1: a called regression (the code `volley compare` gives one).
    Ok(if regressions > 0 {
        ExitCode::NoResponse
    } else {
        ExitCode::Ok
    })
}

/// A p-value as read: `0.068`, or `3.5e-4` below 0.001.
fn p_text(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A finding's verdict in words.
fn verdict(f: &Finding, min_effect_pct: f64) -> String {
    let m = f.measure;
    let big = f.effect_pct.is_some_and(|p| p.abs() >= min_effect_pct);
    match (f.call, f.gating) {
        (Call::Regression, true) => "REGRESSION".to_string(),
        (Call::Regression, false) if m.is_tail() => format!(
            "slower (warns only: {} is a tail, noisy run to run; --metric {} to gate)",
            m.name(),
            m.name()
        ),
        (Call::Regression, false) => format!("slower (warns only; --metric {} to gate)", m.name()),
        (Call::Improvement, _) => "improvement".into(),
        (Call::NoChange, _) if f.baseline_n + f.current_n <= 2 => "too few runs to tell".into(),
        (Call::NoChange, _) if big => format!("not significant (p={})", p_text(f.p_value)),
        (Call::NoChange, _) => format!("no change of {min_effect_pct}% or more"),
    }
}

/// The effect with its interval: `-17.9% (CI -27.8…-7.9%)` against a level of commits (the
/// current median's distance from the level's mean, the two numbers shown beside it); against
/// one commit's repetitions the Hodges-Lehmann shift, named, since it is not the medians'
/// difference: `shift -50.0% (Hodges-Lehmann, CI -62.0…-41.0%)`.
fn effect_text(f: &Finding) -> String {
    let Some(p) = f.effect_pct else {
        return "—".into();
    };
    let ci = f.ci_pct.map(|(l, h)| format!("CI {l:+.1}…{h:+.1}%"));
    match (f.test, ci) {
        (Test::Commits, Some(ci)) => format!("{p:+.1}% ({ci})"),
        (Test::Commits, None) => format!("{p:+.1}%"),
        (_, Some(ci)) => format!("shift {p:+.1}% (Hodges-Lehmann, {ci})"),
        (_, None) => format!("shift {p:+.1}% (Hodges-Lehmann)"),
    }
}

fn entry_text(e: &Entry, s: &Settings) -> String {
    let mut out = format!("\n{}\n", e.name);
    if let Some(why) = &e.refused {
        out += &format!("  {why}\n");
        return out;
    }
    for f in &e.findings {
        let m = f.measure;
        let effect = effect_text(f);
        let test = match f.test {
            Test::Commits => format!("t (commits) p={}", p_text(f.p_value)),
            Test::MannWhitney => format!("Mann-Whitney p={}", p_text(f.p_value)),
            Test::TTest => format!("t-test p={}", p_text(f.p_value)),
        };
        let verdict = verdict(f, s.min_effect_pct);
        out += &format!(
            "  {:<12} {} (n={}, {} commit{}{}) → {} (n={})  {effect}  {test}  {verdict}\n",
            if f.gating {
                m.name().to_string()
            } else {
                format!("{} (warn)", m.name())
            },
            m.show(f.baseline_median),
            f.baseline_n,
            f.baseline_commits,
            if f.baseline_commits == 1 { "" } else { "s" },
            f.level_since
                .as_deref()
                .map(|c| format!(" since {c}"))
                .unwrap_or_default(),
            m.show(f.current_median),
            f.current_n,
        );
    }
    if e.findings.is_empty() {
        out += "  no metric of this series has values on both sides\n";
    }
    out
}

fn check_json(
    entries: &[Entry],
    commit: &str,
    baseline: &str,
    s: &Settings,
    regressions: usize,
) -> serde_json::Value {
    let call = |c: Call| match c {
        Call::Regression => "regression",
        Call::Improvement => "improvement",
        Call::NoChange => "no_change",
    };
    let items: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let findings: Vec<serde_json::Value> = e
                .findings
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "metric": f.measure.name(), "gating": f.gating, "call": call(f.call),
                        "baseline_median": f.baseline_median, "baseline_n": f.baseline_n,
                        "baseline_commits": f.baseline_commits, "level_since": f.level_since,
                        "current_median": f.current_median, "current_n": f.current_n,
                        "effect_pct": f.effect_pct,
                        "ci_low_pct": f.ci_pct.map(|c| c.0), "ci_high_pct": f.ci_pct.map(|c| c.1),
                        "p_value": f.p_value,
                        "test": match f.test { Test::Commits => "commits", Test::MannWhitney => "mann-whitney", Test::TTest => "t-test" },
                    })
                })
                .collect();
            serde_json::json!({
                "name": e.name, "suite": e.key.suite, "scenario": e.key.scenario,
                "server": e.key.server, "axes": e.key.axes, "load_id": e.key.load_id,
                "host_id": e.key.host_id, "refused": e.refused, "regressed": e.regressed(),
                "findings": findings,
            })
        })
        .collect();
    serde_json::json!({
        "schema": "volley.history-check/1",
        "commit": commit,
        "baseline": baseline,
        "min_effect_pct": s.min_effect_pct,
        "alpha": s.alpha,
        "max_pvalue": s.changepoint.max_pvalue,
        "regressions": regressions,
        "series": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Metric;

    fn finding(test: Test, ci: Option<(f64, f64)>) -> Finding {
        Finding {
            measure: Measure::Run(Metric::Throughput),
            gating: true,
            call: Call::NoChange,
            baseline_median: 100.0,
            baseline_n: 5,
            baseline_commits: 1,
            level_since: None,
            current_median: 38.5,
            current_n: 5,
            effect_pct: Some(-50.0),
            ci_pct: ci,
            p_value: 0.01,
            test,
        }
    }

    #[test]
    fn a_hodges_lehmann_shift_is_named_and_a_commits_effect_is_not() {
        let ci = Some((-62.0, -41.0));
        for test in [Test::MannWhitney, Test::TTest] {
            assert_eq!(
                effect_text(&finding(test, ci)),
                "shift -50.0% (Hodges-Lehmann, CI -62.0…-41.0%)"
            );
            assert_eq!(
                effect_text(&finding(test, None)),
                "shift -50.0% (Hodges-Lehmann)"
            );
        }
        // Against a level of commits the effect is the medians' distance from its mean.
        assert_eq!(
            effect_text(&finding(Test::Commits, ci)),
            "-50.0% (CI -62.0…-41.0%)"
        );
        let mut none = finding(Test::TTest, None);
        none.effect_pct = None;
        assert_eq!(effect_text(&none), "—");
    }
}
