//! Every suite file the repository ships (`suites/`, `examples/`) is valid: a key renamed or a
//! value refused later would otherwise surface only when someone runs that suite.

use std::path::{Path, PathBuf};

use volley::config::suite::SuiteConfig;

fn suite_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            suite_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml")
            && std::fs::read_to_string(&path)
                .unwrap()
                .contains("[[scenario]]")
        {
            out.push(path);
        }
    }
}

#[test]
fn every_shipped_suite_file_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    suite_files(&root.join("suites"), &mut files);
    suite_files(&root.join("examples"), &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("suites/protocols.toml")),
        "{files:?}"
    );
    for f in &files {
        let suite = SuiteConfig::load(f, 2).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!suite.servers.is_empty(), "{}", f.display());
    }
}
