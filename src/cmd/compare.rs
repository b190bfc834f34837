//! `volley compare A B [--metric M] [--fail-if-slower PCT [--allow-single]] [--force] [--wide]
//! [--json PATH|-]`: B against A, cell by cell; `volley compare RESULTS --baseline NAME
//! [--against NAME...]`: servers of one results folder against one of them. Exit 0, 1 on a
//! regression beyond `--fail-if-slower`, 2 for inputs that cannot be compared (different loads
//! without `--force`, A and B the same results, an unknown server), 3 when the JSON cannot be
//! written.

use std::path::{Path, PathBuf};

use clap::Args;

use super::ExitCode;
use crate::compare::{self, CompareError, Comparison, Layout, Options, Within};
use crate::metric::Metric;
use crate::report::model::Report;

/// `volley compare` flags.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The baseline: a RunResult JSON file, a suite.json or a `volley bench` results folder
    /// (with --baseline: the one results folder whose servers are compared).
    pub a: PathBuf,

    /// The candidate, compared against A (same kinds of input); none with --baseline.
    pub b: Option<PathBuf>,

    /// Compare the servers inside one results folder: NAME is the baseline server (side A),
    /// paired with every other server on the same scenario and axes.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,

    /// With --baseline: only these servers against the baseline [default: every other].
    #[arg(long, value_name = "NAME", num_args = 1.., requires = "baseline")]
    pub against: Vec<String>,

    /// The metric judged [default: throughput in closed loop and ramp, corrected p99 in open loop].
    #[arg(long, value_parser = metric_parser())]
    pub metric: Option<Metric>,

    /// Exit 1 when B's metric is worse than A's by more than PCT in a pair whose difference the
    /// test calls slower (5+ repetitions a side), e.g. 5%.
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub fail_if_slower: Option<f64>,

    /// With --fail-if-slower: also fail pairs with fewer than 5 repetitions a side, on their
    /// medians alone (a difference that cannot be called).
    #[arg(long, requires = "fail_if_slower")]
    pub allow_single: bool,

    /// Compare pairs whose sides ran different loads (load_id: path, method, body, mode, rate,
    /// connections, duration, ...); without it they are refused. The lines say so.
    #[arg(long)]
    pub force: bool,

    /// One line per pair with every detail (ranges, U, p50, p99, errors, CPU/req of both
    /// sides) instead of a table that fits 100 columns.
    #[arg(long)]
    pub wide: bool,

    /// Write the comparison as JSON to PATH, or to stdout with `-` (the table then goes to stderr).
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<String>,

    /// Write the verdict page to PATH: the answer first, then both sides' percentile plots
    /// overlaid, req/s per repetition and the settings (self-contained HTML).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
}

/// Runs `volley compare`: 0 no regression, 1 a regression beyond `--fail-if-slower`, 2 bad
/// input, 3 the JSON could not be written.
pub(crate) fn execute(args: &CompareArgs) -> ExitCode {
    if let Err(e) = check_inputs(args) {
        stderrln!("volley compare: {e}");
        return ExitCode::Usage;
    }
    let opts = Options {
        metric: args.metric,
        fail_pct: args.fail_if_slower,
        allow_single: args.allow_single,
        force: args.force,
    };
    let run = || -> Result<(Comparison, Report, Option<Report>), CompareError> {
        let a = compare::load(&args.a)?;
        let a_name = args.a.display().to_string();
        match (&args.baseline, &args.b) {
            (Some(baseline), _) => {
                let within = Within {
                    baseline,
                    against: &args.against,
                };
                let c = compare::compare_within((&a_name, &a), within, opts)?;
                Ok((c, a, None))
            }
            (None, Some(b_path)) => {
                let b = compare::load(b_path)?;
                let c = compare::compare((&a_name, &a), (&b_path.display().to_string(), &b), opts)?;
                Ok((c, a, Some(b)))
            }
            (None, None) => unreachable!("check_inputs requires B without --baseline"),
        }
    };
    let (c, a, b) = match run() {
        Ok(v) => v,
        Err(e) => {
            stderrln!("volley compare: {e}");
            return ExitCode::Usage;
        }
    };
    let mut code = ExitCode::Ok;
    if let Some(path) = &args.html {
        // With --baseline both sides are servers of the one results folder.
        let page = compare::page::render(&c, &a, b.as_ref().unwrap_or(&a));
        if let Err(e) = crate::sys::files::write_atomically(path, page.as_bytes()) {
            stderrln!("volley compare: --html {}: {e}", path.display());
            code = ExitCode::Failed;
        }
    }
    let layout = if args.wide {
        Layout::Wide
    } else {
        Layout::Fitted
    };
    // Where both sides were profiled: which functions' CPU per request changed.
    let table = compare::render(&c, layout) + &compare::why_text(&c, &a, b.as_ref().unwrap_or(&a));
    if c.regression {
        code = code.max_precedence(ExitCode::NoResponse);
    }
    let mut json = serde_json::to_string_pretty(&c).expect("a comparison always serializes");
    json.push('\n');
    match args.json.as_deref() {
        Some("-") => {
            stderr!("{table}");
            use std::io::Write;
            let mut so = std::io::stdout().lock();
            if so
                .write_all(json.as_bytes())
                .and_then(|_| so.flush())
                .is_err()
            {
                code = code.max_precedence(ExitCode::Failed);
            }
        }
        Some(path) => {
            print!("{table}");
            if let Err(e) = crate::sys::files::write_atomically(Path::new(path), json.as_bytes()) {
                stderrln!("volley compare: --json {path}: {e}");
                code = code.max_precedence(ExitCode::Failed);
            }
        }
        None => print!("{table}"),
    }
    code
}

/// The inputs fit the form: two results, or one with `--baseline`; A and B not the same.
fn check_inputs(args: &CompareArgs) -> Result<(), String> {
    let a = args.a.display();
    match (&args.baseline, &args.b) {
        (Some(_), Some(b)) => Err(format!(
            "--baseline compares the servers inside one results folder, but two inputs were \
             given ({a} and {}); give one, or drop --baseline to compare B against A",
            b.display()
        )),
        (None, None) => Err(format!(
            "only one input ({a}): give A and B, or --baseline NAME to compare the servers \
             inside {a} against NAME"
        )),
        (None, Some(b)) if same_results(&args.a, b) => Err(format!(
            "A and B are the same results ({a} and {}): every server would be paired with \
             itself; to compare the servers inside one results folder use `volley compare \
             {a} --baseline NAME`",
            b.display()
        )),
        _ => Ok(()),
    }
}

/// Whether two inputs name the same results: the same file or folder, also through other
/// paths, a folder and its `suite.json` counting as one.
fn same_results(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| -> Option<PathBuf> {
        let c = std::fs::canonicalize(p).ok()?;
        if c.file_name().is_some_and(|n| n == "suite.json") {
            return c.parent().map(Path::to_path_buf);
        }
        Some(c)
    };
    matches!((canon(a), canon(b)), (Some(x), Some(y)) if x == y)
}

fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a percentage (expected e.g. 5% or 5, not negative)"
        )),
    }
}

/// `--metric`: every name of the metric vocabulary is accepted; help lists the usual ones.
fn metric_parser() -> impl clap::builder::TypedValueParser<Value = Metric> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    const SHOWN: &[(&str, &str)] = &[
        (
            "throughput",
            "Completed responses per second (higher is better)",
        ),
        ("p50", "Corrected latency p50 (lower is better)"),
        ("p90", "Corrected latency p90"),
        ("p99", "Corrected latency p99"),
        ("p99.9", "Corrected latency p99.9"),
        ("p99.99", "Corrected latency p99.99"),
        ("max", "Largest corrected latency"),
        ("mean", "Mean corrected latency"),
        (
            "service_p99",
            "Service time p99 (from the write; lower is better)",
        ),
        (
            "cpu_per_request",
            "Server CPU µs per request (needs the server monitor; lower is better)",
        ),
        ("errors", "Errors of every kind (lower is better)"),
    ];
    let shown = SHOWN.iter().map(|(n, h)| PossibleValue::new(*n).help(*h));
    let hidden = crate::metric::names()
        .filter(|n| !SHOWN.iter().any(|(s, _)| s == n))
        .map(|n| PossibleValue::new(n).hide(true));
    PossibleValuesParser::new(shown.chain(hidden))
        .map(|name| Metric::parse(&name).expect("every possible value is a metric name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::args_from;

    /// `volley compare ARGS`.
    fn parse(args: &[&str]) -> Result<CompareArgs, clap::Error> {
        args_from(args)
    }

    fn metric(value: &str) -> Result<Option<Metric>, String> {
        parse(&["a", "b", "--metric", value])
            .map(|c| c.metric)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn metric_takes_the_threshold_names_and_refuses_others() {
        use crate::metric::Stat;
        assert_eq!(metric("p99").unwrap(), Some(Metric::Latency(Stat::P99)));
        assert_eq!(metric("p95").unwrap(), Some(Metric::Latency(Stat::P95)));
        assert_eq!(metric("rps").unwrap(), Some(Metric::Throughput));
        assert_eq!(
            metric("service_p99.9").unwrap(),
            Some(Metric::Service(Stat::P99_9))
        );
        let e = metric("p98").unwrap_err();
        assert!(e.contains("p98") && e.contains("--metric"), "{e}");
    }

    #[test]
    fn baseline_takes_one_input_and_against_needs_it() {
        let c = parse(&["dir", "--baseline", "v1", "--against", "v2", "v3"]).unwrap();
        assert_eq!(c.baseline.as_deref(), Some("v1"));
        assert_eq!(c.against, ["v2", "v3"]);
        assert!(c.b.is_none());
        assert!(check_inputs(&c).is_ok());
        let e = parse(&["dir", "--against", "v2"]).unwrap_err();
        assert!(e.to_string().contains("--baseline"), "{e}");
        let two = parse(&["a", "b", "--baseline", "v1"]).unwrap();
        assert!(check_inputs(&two)
            .unwrap_err()
            .contains("one results folder"));
        let one = parse(&["a"]).unwrap();
        assert!(check_inputs(&one).unwrap_err().contains("--baseline NAME"));
    }

    #[test]
    fn allow_single_needs_fail_if_slower() {
        let e = parse(&["a", "b", "--allow-single"]).unwrap_err();
        assert!(e.to_string().contains("--fail-if-slower"), "{e}");
        let c = parse(&["a", "b", "--fail-if-slower", "5", "--allow-single"]).unwrap();
        assert!(c.allow_single);
    }
}
