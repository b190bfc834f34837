//! volley at home in a shell (docs/contract.md, "Installing"): the completion scripts, the
//! manual pages (rendered by `man` in tests/full/man_pages.rs), `volley --version` and
//! `volley version --json`, and `make install-files` putting them where distributions expect
//! them.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{volley, volley_bin};

const LIMIT: Duration = Duration::from_secs(30);

fn stdout_of(args: &[&str]) -> String {
    let o = volley(args, LIMIT);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// What bash completes for the words `line` (the cursor after the last), with volley's script
/// loaded.
fn bash_completes(script: &Path, line: &[&str]) -> Vec<String> {
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let program = format!(
        "source '{}'; COMP_WORDS=({words}); COMP_CWORD={}; COMP_LINE='{}'; \
         COMP_POINT=${{#COMP_LINE}}; _volley volley '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        line.len() - 1,
        line.join(" "),
        line[line.len() - 1],
        line[line.len() - 2],
    );
    let o = Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("volley.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    assert_eq!(
        bash_completes(&script, &["volley", "run", "--rat"]),
        ["--rate", "--rate-stages"]
    );
    let subs = bash_completes(&script, &["volley", "comp"]);
    assert!(subs.contains(&"compare".to_string()), "{subs:?}");
    assert!(subs.contains(&"completions".to_string()), "{subs:?}");
    let check = bash_completes(&script, &["volley", "history", "check", "--min-e"]);
    assert_eq!(check, ["--min-effect"]);
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_is_refused() {
    for (shell, marker, rate) in [
        ("zsh", "#compdef volley", "--rate"),
        ("fish", "complete -c volley", "-l rate"),
        ("powershell", "Register-ArgumentCompleter", "--rate"),
        ("elvish", "edit:completion:arg-completer[volley]", "--rate"),
    ] {
        let text = stdout_of(&["completions", shell]);
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..200.min(text.len())]
        );
        assert!(text.contains(rate), "{shell} completes run's flags");
    }
    let o = volley(&["completions", "tcsh"], LIMIT);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("invalid value 'tcsh'") && err.contains("bash"),
        "{err}"
    );
}

#[test]
fn every_subcommand_has_a_manual_page() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    stdout_of(&["man", "--dir", &d]);
    for page in [
        "volley.1",
        "volley-run.1",
        "volley-bench.1",
        "volley-capacity.1",
        "volley-history.1",
        "volley-history-check.1",
        "volley-k8s-collect.1",
        "volley-completions.1",
        "volley-man.1",
    ] {
        assert!(dir.path().join(page).is_file(), "{page}");
    }
    assert!(
        stdout_of(&["man"]).starts_with(".ie"),
        "volley.1 on stdout, roff"
    );
}

#[test]
fn the_version_names_the_commit_and_what_volley_was_built_with() {
    let long = stdout_of(&["--version"]);
    assert!(
        long.starts_with(&format!("volley {} (git ", env!("CARGO_PKG_VERSION"))),
        "{long}"
    );
    assert!(
        long.contains("io_uring, epoll") && long.contains("rustls"),
        "{long}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&["version", "--json"])).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let commit = v["commit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{commit}"
    );
    assert_eq!(v["io"], serde_json::json!(["uring", "epoll"]));
    assert!(v["io_uring"]["available"].is_boolean());
    assert!(stdout_of(&["version"]).contains("io_uring"));
}

#[test]
fn make_install_files_puts_them_where_distributions_look() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("usr");
    let root = env!("CARGO_MANIFEST_DIR");
    let o = Command::new("make")
        .args(["-C", root, "install-files"])
        .arg(format!("VOLLEY={}", volley_bin()))
        .arg(format!("PREFIX={}", prefix.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for file in [
        "bin/volley",
        "share/man/man1/volley.1",
        "share/man/man1/volley-run.1",
        "share/bash-completion/completions/volley",
        "share/zsh/site-functions/_volley",
        "share/fish/vendor_completions.d/volley.fish",
    ] {
        assert!(prefix.join(file).is_file(), "{file}");
    }
    let installed = prefix.join("bin/volley");
    let o = Command::new(&installed).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("volley "));
}
