//! Secrets in headers reach the server and no output: `Authorization`, `Proxy-Authorization`
//! and `Cookie` values are `<redacted>` in the RunResult, every report, the HDR log and a
//! suite's files (docs/contract.md, "Secrets").

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{bench_suite, volley};

const SECRETS: [&str; 3] = ["s3cret-token", "session=42", "proxy-pw"];

/// A server that answers 200 to everything and notes whether a request carried the token.
fn recording() -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&seen);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let flag = Arc::clone(&flag);
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                let mut pending = Vec::new();
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&pending).to_string();
                    if text.contains("Bearer s3cret-token") {
                        flag.store(true, Ordering::SeqCst);
                    }
                    let heads = text.matches("\r\n\r\n").count();
                    pending.clear();
                    for _ in 0..heads {
                        if s.write_all(common::OK).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (format!("http://{addr}/"), seen)
}

/// Every file under `dir` (recursively), with none of the secrets in it.
fn assert_no_secret_under(dir: &Path) -> usize {
    let mut files = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files += assert_no_secret_under(&p);
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).to_string();
        for s in SECRETS {
            assert!(!text.contains(s), "{} holds `{s}`", p.display());
        }
        files += 1;
    }
    files
}

#[test]
fn a_runs_outputs_hold_no_secret() {
    let (url, seen) = recording();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = |f: &str| d.join(f).display().to_string();
    let o = volley(
        &[
            "run",
            &url,
            "-c",
            "1",
            "-n",
            "20",
            "-H",
            "Authorization: Bearer s3cret-token",
            "--header=Cookie: session=42",
            "-HProxy-Authorization: proxy-pw",
            "--json",
            &path("r.json"),
            "--html",
            &path("r.html"),
            "--markdown",
            &path("r.md"),
            "--csv",
            &path("r.csv"),
            "--hdr-log",
            &path("r.hlog"),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        seen.load(Ordering::SeqCst),
        "the request on the wire keeps the header"
    );
    assert_eq!(assert_no_secret_under(d), 5);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!SECRETS.iter().any(|s| stdout.contains(s)), "{stdout}");
    let json = std::fs::read_to_string(d.join("r.json")).unwrap();
    assert!(json.contains("Authorization: <redacted>"), "{json}");
}

#[test]
fn a_suites_files_hold_no_secret() {
    let (url, seen) = recording();
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"s\"\nduration = \"1s\"\n[[server]]\nname = \"there\"\nurl = \"{url}\"\n[[scenario]]\nname = \"auth\"\nconnections = 1\nheaders = [\"Authorization: Bearer s3cret-token\", \"Cookie: session=42\"]\n"
    );
    let (o, out) = bench_suite(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(seen.load(Ordering::SeqCst));
    assert!(
        assert_no_secret_under(&out) >= 2,
        "suite.json and a run at least"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!SECRETS.iter().any(|s| stdout.contains(s)), "{stdout}");
}

#[test]
fn a_suite_varying_headers_names_cells_without_secrets() {
    let (url, _) = recording();
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"s\"\nduration = \"300ms\"\n[[server]]\nname = \"there\"\nurl = \"{url}\"\n[[scenario]]\nname = \"auth\"\nconnections = 1\nheaders = [[\"Authorization: Bearer s3cret-token\"], [\"X-A: b\"], {{ Cookie = \"session=42\" }}]\n"
    );
    let (o, out) = bench_suite(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        assert_no_secret_under(&out) >= 4,
        "suite.json and three runs"
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!SECRETS.iter().any(|s| all.contains(s)), "{all}");
}

/// Results written before redaction existed are redacted as they are read.
#[test]
fn old_results_are_redacted_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/open-loop.json"
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    v["argv"] = serde_json::json!([
        "volley",
        "run",
        "http://u:proxy-pw@127.0.0.1:1/",
        "-H",
        "Cookie: session=42"
    ]);
    v["target"]["url"] = "http://u:proxy-pw@127.0.0.1:1/".into();
    let old = dir.path().join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let old2 = dir.path().join("old2.json");
    std::fs::write(&old2, v.to_string()).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let p = |f: &str| out.join(f).display().to_string();
    let o = volley(
        &[
            "report",
            &old.display().to_string(),
            "--html",
            &p("r.html"),
            "--markdown",
            &p("r.md"),
            "--csv",
            &p("r.csv"),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = volley(
        &[
            "merge",
            &old.display().to_string(),
            &old2.display().to_string(),
            "-o",
            &p("m.json"),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(assert_no_secret_under(&out), 4);
}
