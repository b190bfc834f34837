//! `volley bench` with a server whose tools are not installed (`requires` names a program
//! that is not there): its build does not run, its cells are skipped with a note naming the
//! program, the suite goes on and exits 0; a suite of which nothing could run exits 3.

use crate::common;

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

use common::checked_suite_index as index;

use common::output_text as text;

/// A server that needs a program nobody has, with a build that would leave a trace.
const MISSING: &str =
    "[[server]]\nname = \"needs-tool\"\nrequires = [\"sh\", \"volley-no-such-tool\"]\n\
                       build = \"touch built-anyway\"\nstart = \"exec volley-no-such-tool\"\n\
                       version = \"volley-no-such-tool --version\"\n";

#[test]
fn a_server_whose_tools_are_missing_is_skipped_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"300ms\"\n{MISSING}\
         [[server]]\nname = \"fine\"\nrequires = \"sh\"\nstart = \"exec {VOLLEY} serve --port {{port}}\"\n\
         [[scenario]]\nname = \"g\"\nconnections = 2\n"
    );
    let (o, out) = common::bench_suite(dir.path(), &suite, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skipped needs-tool: not installed: `volley-no-such-tool` not found on PATH"),
        "{}",
        text(&o)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("needs-tool  skipped [1]"), "{stdout}");
    assert!(
        stdout.contains("1 ok, 0 failed, 1 skipped (needs-tool: not installed)"),
        "{stdout}"
    );
    assert!(!dir.path().join("built-anyway").exists(), "its build ran");
    let idx = index(&out);
    assert_eq!(idx["builds"][0]["status"], "skipped");
    assert_eq!(idx["env"]["tools"]["needs-tool"], "not installed");
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows[0]["server"], "needs-tool");
    assert_eq!(rows[0]["status"], "skipped");
    assert!(rows[0]["reason"]
        .as_str()
        .unwrap()
        .contains("`volley-no-such-tool`"));
    assert_eq!(rows[1]["status"], "ok");
}

#[test]
fn a_suite_of_which_nothing_can_run_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"300ms\"\n{MISSING}[[scenario]]\nname = \"g\"\n"
    );
    let (o, out) = common::bench_suite(dir.path(), &suite, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no cell could run"));
    assert_eq!(index(&out)["rows"][0]["status"], "skipped");
}

#[test]
fn requires_must_name_programs() {
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = common::bench_suite(
        dir.path(),
        "[suite]\nname = \"x\"\n[[server]]\nname = \"a\"\nstart = \"x\"\nrequires = [\"go build\"]\n[[scenario]]\nname = \"g\"\n",
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("suite.toml:6:") && err.contains("requires") && err.contains("`go build`"),
        "{err}"
    );
}
