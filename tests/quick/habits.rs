//! Command lines written for wrk, wrk2, oha, hey, k6 and ab: the spellings that mean the same
//! work (hidden from --help), the others fail with exit 2 and a tip naming volley's flag.

use crate::common;

use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(20);

/// Runs volley and returns (exit code, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = volley(args, LIMIT);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn other_tools_spellings_are_hidden_from_help() {
    let out = volley(&["run", "--help"], LIMIT);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--duration"), "{help}");
    for alias in [
        "--vus",
        "-z",
        "-u,",
        "--latency",
        "-L",
        "--stage ",
        "--disable-keepalive",
        "--no-tui",
    ] {
        assert!(!help.contains(alias), "--help shows {alias}:\n{help}");
    }
}

#[test]
fn a_wrk_command_line_runs_as_it_is() {
    let s = normal();
    let (code, j, stderr) = volley_json(
        &[
            "run",
            "-t",
            "1",
            "-c",
            "2",
            "-d",
            "1",
            "--timeout",
            "2",
            "-H",
            "X-A: 1",
            "--latency",
            &s.url("/"),
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["load"]["duration_s"], 1.0);
    assert_eq!(j["load"]["timeout_s"], 2.0);
    assert!(j["requests"]["completed"].as_u64().unwrap() > 0);
}

#[test]
fn spellings_with_the_same_meaning_are_accepted() {
    let s = normal();
    let url = s.url("/");
    // oha's and hey's -z, k6's --vus and -u, wrk2's -L.
    let (code, j, stderr) = volley_json(&["run", &url, "-z", "300ms", "--vus", "2", "-L"], LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["load"]["duration_s"], 0.3);
    assert_eq!(j["load"]["users"], 2);
    let (code, j, stderr) = volley_json(&["run", &url, "-u", "1", "-z", "300ms"], LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["load"]["users"], 1);
    // k6's --stage (one of them), oha's --disable-keepalive.
    let (code, j, stderr) = volley_json(&["run", &url, "--stage", "300ms:1"], LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["load"]["stages"][0]["users"], 1);
    let (code, j, stderr) = volley_json(&["run", &url, "--disable-keepalive", "-n", "5"], LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["load"]["keepalive"], false);
    // oha's --no-tui is --quiet.
    let (code, stderr) = run(&["run", &url, "--no-tui", "-n", "5"]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn spellings_with_another_meaning_get_volleys_flag() {
    let url = "http://127.0.0.1:9/";
    for (args, needle) in [
        // oha's -d is the body; volley's is the duration.
        (
            &["run", url, "-d", "{\"a\":1}"][..],
            "ghz's -d gRPC message, is --body)",
        ),
        // ghz's -t is its timeout; volley's the threads.
        (&["run", url, "-t", "20s"][..], "ghz's -t, is --timeout"),
        // ghz's -i are import paths.
        (&["run", url, "-i", "protos"][..], "--import-path DIR"),
        (&["run", url, "-s", "script.lua"][..], "--body-file"),
        (&["run", url, "-D", "body.json"][..], "--body-file"),
        (&["run", url, "-T", "application/json"][..], "Content-Type"),
        (&["run", "-q", "100", url][..], "-R/--rate"),
        (&["run", url, "--rps", "100"][..], "-R/--rate"),
        (&["run", url, "--iterations", "100"][..], "-n/--requests"),
    ] {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: no `{needle}` in\n{stderr}"
        );
        assert!(
            !stderr.contains("a similar argument exists"),
            "{args:?}: clap's guess kept:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Other subcommands keep clap's own errors: `volley serve -p` is its port.
    let (code, stderr) = run(&["serve", "-s"]);
    assert_eq!(code, Some(2));
    assert!(!stderr.contains("volley runs no scripts"), "{stderr}");
}
