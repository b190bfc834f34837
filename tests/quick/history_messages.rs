//! What `volley history` says where the history tests' repository is not: outside a git
//! repository (no `HEAD` to check, runs without a commit in the trend page), the shift of a
//! check against one commit named as the Hodges-Lehmann estimate, the file a trend page was
//! written to, and the tip on a new history file git would list as untracked.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::history::{commit, repo, result, started};
use common::{normal, output_text, scratch, volley};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// volley in `dir`, with git kept from looking above it: outside a repository unless `dir`
/// holds one.
fn volley_in(dir: &Path, args: &[&str]) -> std::process::Output {
    common::limited(
        std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(args)
            .current_dir(dir)
            .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap()),
        args,
        LIMIT,
    )
}

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One real RunResult (a short run against an in-process server), as a template.
fn template(dir: &Path) -> Value {
    let server = normal();
    let json = dir.join("template.json");
    let url = server.url("/");
    let args = ["run", &url, "-n", "200", "-c", "2", "-q", "--json"];
    let o = volley(&[&args[..], &[json.to_str().unwrap()]].concat(), LIMIT);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// Writes a result per throughput (runs `first`, `first + 1`, …) and imports them with `extra`
/// arguments; the import's output.
fn import(
    dir: &Path,
    template: &Value,
    first: usize,
    rps: &[f64],
    extra: &[&str],
) -> std::process::Output {
    let mut paths = Vec::new();
    for (k, v) in rps.iter().enumerate() {
        let r = result(template, *v, 100, &started(first + k));
        let p = format!("r{}.json", first + k);
        std::fs::write(dir.join(&p), serde_json::to_string(&r).unwrap()).unwrap();
        paths.push(p);
    }
    let mut args = vec!["history", "import"];
    args.extend(extra);
    args.extend(paths.iter().map(String::as_str));
    let o = volley_in(dir, &args);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    o
}

const MAIN: &str = "1111111111111111111111111111111111111111";
const FEATURE: &str = "2222222222222222222222222222222222222222";

#[test]
fn outside_git_the_messages_say_what_there_is() {
    let dir = scratch("history-messages", "outside");
    let t = template(&dir);
    // Three runs saved without a commit: no tip (no work tree to keep the file out of).
    let o = import(&dir, &t, 0, &[10_000.0, 10_100.0, 9_900.0], &[]);
    assert!(!output_text(&o).contains("tip:"), "{}", output_text(&o));

    // No HEAD, and no --commit given: the message does not blame one.
    for args in [
        &["history", "check"][..],
        &["history", "export", "--format", "bmf"][..],
    ] {
        let o = volley_in(&dir, args);
        let text = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {}", output_text(&o));
        assert!(
            text.contains("not in a git repository, and no saved run has a commit")
                && text.contains("volley history import --commit HASH --branch NAME")
                && !text.contains("--commit HEAD"),
            "{args:?}: {text}"
        );
    }

    // The trend page counts runs, and says where it went.
    let o = volley_in(&dir, &["history", "trend", "--html", "trend.html"]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    assert!(
        stderr(&o).contains("volley history trend: wrote trend.html"),
        "{}",
        output_text(&o)
    );
    let html = std::fs::read_to_string(dir.join("trend.html")).unwrap();
    assert!(html.contains(" · 3 runs · "), "{html}");
    assert!(html.contains("2σ of the runs' values"), "{html}");
    assert!(!html.contains("3 commits"), "{html}");
    assert!(html.contains("<th>run</th>"), "{html}");

    // Saved commits (imported with their hashes): the message names the newest.
    let steady = [9_800.0, 9_900.0, 10_000.0, 10_100.0, 10_200.0];
    import(
        &dir,
        &t,
        3,
        &steady,
        &["--commit", MAIN, "--branch", "main"],
    );
    let slow = [6_000.0, 6_100.0, 5_900.0, 6_050.0, 7_400.0];
    import(&dir, &t, 8, &slow, &["--commit", FEATURE, "--branch", "f"]);
    let o = volley_in(&dir, &["history", "check"]);
    assert_eq!(code(&o), 2, "{}", output_text(&o));
    assert!(
        stderr(&o).contains(
            "not in a git repository, so HEAD names no commit: name a saved one with --commit \
             HASH (the newest saved: 222222222222)"
        ),
        "{}",
        output_text(&o)
    );
    // A --commit that no saved run has is named, as given.
    let o = volley_in(&dir, &["history", "check", "--commit", "abc"]);
    assert_eq!(code(&o), 2, "{}", output_text(&o));
    assert!(
        stderr(&o).contains("--commit abc: no saved run has such a commit (not in a git"),
        "{}",
        output_text(&o)
    );
    // The baseline is named by what gave it: the default, or the flag.
    for (args, words) in [
        (
            &["history", "check", "--commit", MAIN][..],
            "baseline main (the default; --baseline REV for another): no saved run of its history",
        ),
        (
            &[
                "history",
                "check",
                "--commit",
                FEATURE,
                "--baseline",
                "nope",
            ][..],
            "--baseline nope: not in a git repository to read it, and no saved run was recorded",
        ),
    ] {
        let o = volley_in(&dir, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", output_text(&o));
        assert!(stderr(&o).contains(words), "{args:?}: {}", output_text(&o));
    }
    shift_is_named(&dir);
}

/// Against one commit's repetitions the effect is the Hodges-Lehmann shift (-39.0 %), not the
/// medians' difference (-39.5 %): the text names it, the JSON keeps its keys.
fn shift_is_named(dir: &Path) {
    let o = volley_in(
        dir,
        &[
            "history", "check", "--commit", "2222222", "--json", "c.json",
        ],
    );
    let text = output_text(&o);
    assert_eq!(code(&o), 1, "{text}");
    assert!(text.contains("against main (1 commit, 5 runs)"), "{text}");
    assert!(text.contains("shift -39.0% (Hodges-Lehmann"), "{text}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("c.json")).unwrap()).unwrap();
    let f = &j["series"][0]["findings"][0];
    assert_eq!(f["test"], "t-test", "{f}");
    let effect = f["effect_pct"].as_f64().unwrap();
    assert!((effect + 39.0).abs() < 1e-9, "{f}");
    let mut keys: Vec<&str> = f.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "baseline_commits",
            "baseline_median",
            "baseline_n",
            "call",
            "ci_high_pct",
            "ci_low_pct",
            "current_median",
            "current_n",
            "effect_pct",
            "gating",
            "level_since",
            "metric",
            "p_value",
            "test"
        ]
    );
}

#[test]
fn a_new_history_in_a_work_tree_gets_one_tip() {
    let dir = scratch("history-messages", "tip");
    repo(&dir);
    let sha = commit(&dir, "first");
    let t = template(&dir);
    let tip = "volley history import: tip: add .volley/ to .gitignore";
    let o = import(&dir, &t, 0, &[10_000.0], &["--commit", &sha]);
    assert!(output_text(&o).contains(tip), "{}", output_text(&o));
    // Once: the file is there now.
    let o = import(&dir, &t, 1, &[10_100.0], &["--commit", &sha]);
    assert!(!output_text(&o).contains("tip:"), "{}", output_text(&o));
    // Another file is named as given; one git ignores has no tip.
    let o = import(&dir, &t, 2, &[10_200.0], &["--history", "h.db"]);
    assert!(
        output_text(&o).contains("tip: add h.db to .gitignore"),
        "{}",
        output_text(&o)
    );
    std::fs::write(dir.join(".gitignore"), "ignored/\n").unwrap();
    let o = import(&dir, &t, 3, &[10_300.0], &["--history", "ignored/h.db"]);
    assert!(!output_text(&o).contains("tip:"), "{}", output_text(&o));
}
