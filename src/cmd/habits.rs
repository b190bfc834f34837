//! Habits from other load tools. Spellings that mean the same in volley are hidden aliases of
//! its flags (wrk's `--latency`, oha's and hey's `-z`, k6's `--vus`/`-u` and `--stage`, oha's
//! `--disable-keepalive` and `--no-tui`); this module answers the others — a flag volley does
//! not have, or has with another meaning — with a tip that names volley's way, in place of
//! clap's "a similar argument exists" (which sent wrk's `--latency` to `--rate`).

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, Error, ErrorKind};

/// Flags of other tools that `volley run` does not take, and what to use instead.
const TIPS: &[(&[&str], &str)] = &[
    (
        &["-s", "--script"],
        "volley runs no scripts (wrk's -s): set the request with -m, -H and --body or --body-file; k6's stages are --stages",
    ),
    (&["-D"], "a body from a file (oha's and hey's -D) is --body-file PATH"),
    (
        &["-T"],
        "a content type (oha's and hey's -T) is a header: -H 'Content-Type: TYPE'",
    ),
    (
        &["-a", "--basic-auth"],
        "basic auth (oha's and hey's -a) is a header: -H 'Authorization: Basic BASE64'",
    ),
    (
        &["--keepalive"],
        "keep-alive is volley's default; --no-keepalive turns it off",
    ),
    (&["-p"], "a POST body from a file (ab's -p) is --body-file PATH"),
    (
        &["--rps", "--qps", "--query-per-second"],
        "a request rate is -R/--rate RATE (an open loop: requests are due on a schedule, latency counted from then)",
    ),
    (
        &["-i", "--iterations"],
        "volley counts requests: -n/--requests N (a k6 iteration may hold several); ghz's -i import paths are --import-path DIR",
    ),
    (
        &["--latency-correction", "-U", "--u_latency"],
        "with -R/--rate latency is corrected for coordinated omission, and the uncorrected one is shown next to it as service time",
    ),
    (&["-v"], "volley's version is -V/--version"),
];

/// A value after `-q` that reads as a number: oha's and hey's rate, not volley's `--quiet`.
const QUIET_RATE_TIP: &str =
    "volley's -q is --quiet; a request rate (oha's and hey's -q) is -R/--rate RATE";

/// The tip for `arg` (an argument `volley run` does not take), if it is another tool's habit.
pub(crate) fn tip_for(arg: &str) -> Option<&'static str> {
    let name = arg.split('=').next().unwrap_or(arg);
    TIPS.iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, tip)| *tip)
}

/// The tip a `volley run` command line needs, given the argument clap stopped at: a habit
/// named in [`TIPS`], or `-q` given a number.
fn tip(argv: &[String], bad_arg: Option<&str>) -> Option<&'static str> {
    if let Some(t) = bad_arg.and_then(tip_for) {
        return Some(t);
    }
    let quiet_rate = argv
        .windows(2)
        .any(|w| w[0] == "-q" && w[1].parse::<f64>().is_ok());
    quiet_rate.then_some(QUIET_RATE_TIP)
}

/// Adds the tip for another tool's habit to a clap error of `volley run` (replacing clap's own
/// suggestion, which names a flag by spelling, not meaning); other errors pass unchanged.
pub fn explain(mut e: Error, argv: &[String]) -> Error {
    if argv.get(1).map(String::as_str) != Some("run") {
        return e;
    }
    if !matches!(
        e.kind(),
        ErrorKind::UnknownArgument | ErrorKind::InvalidValue | ErrorKind::ArgumentConflict
    ) {
        return e;
    }
    let bad_arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    if let Some(t) = tip(argv, bad_arg.as_deref()) {
        e.remove(ContextKind::SuggestedArg);
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![StyledStr::from(t.to_string())]),
        );
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn habits_get_volleys_flag() {
        assert!(tip_for("-s").unwrap().contains("--body"));
        assert!(tip_for("--script=x.lua").unwrap().contains("--body"));
        assert!(tip_for("-D").unwrap().contains("--body-file"));
        assert!(tip_for("--rps").unwrap().contains("--rate"));
        assert_eq!(tip_for("--nonsense"), None);
        assert_eq!(tip_for("-c"), None);
    }

    #[test]
    fn a_number_after_q_is_read_as_ohas_rate() {
        let a = argv(&["volley", "run", "-q", "100", "http://x/"]);
        assert_eq!(tip(&a, Some("http://x/")), Some(QUIET_RATE_TIP));
        let a = argv(&["volley", "run", "-q", "http://x/", "extra"]);
        assert_eq!(tip(&a, Some("extra")), None);
    }
}
