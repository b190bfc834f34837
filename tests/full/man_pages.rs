//! volley's manual pages as `man` shows them: `man -l` renders a page `volley man --dir`
//! wrote, with its synopsis and flags (man-db; scripts/install-test-deps.sh installs it).

use crate::common;

use std::process::Command;
use std::time::Duration;

#[test]
fn man_renders_the_page_of_a_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let o = common::volley(&["man", "--dir", &d], Duration::from_secs(30));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let Some(man) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|p| p.join("man"))
        .find(|p| p.is_file())
    else {
        return common::skip("no `man` (scripts/install-test-deps.sh installs man-db)");
    };
    for (page, words) in [
        (
            "volley-run.1",
            &[
                "volley-run - Load-test one URL",
                "-R|--rate",
                "--connections",
            ][..],
        ),
        (
            "volley-history-check.1",
            &["volley-history-check", "--baseline"][..],
        ),
    ] {
        let o = Command::new(&man)
            .args(["-l", &dir.path().join(page).display().to_string()])
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .env("MAN_KEEP_FORMATTING", "0")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{page}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = plain(&String::from_utf8_lossy(&o.stdout));
        for w in words {
            assert!(text.contains(w), "{page} lacks `{w}`:\n{text}");
        }
    }
}

/// Text with man's overstrike undone (`c\bc` for bold, `_\bc` for underline: a character
/// followed by a backspace is dropped).
fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out
}
