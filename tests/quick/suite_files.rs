//! Every suite file the repository ships (`suites/`, `examples/`) is valid: a key renamed or a
//! value refused later would otherwise surface only when someone runs that suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use volley::config::suite::{Protocol, ServerKind, SuiteConfig};

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

/// Every shipped suite file, parsed.
fn shipped() -> Vec<(PathBuf, SuiteConfig)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    suite_files(&root.join("suites"), &mut files);
    suite_files(&root.join("examples"), &mut files);
    files
        .into_iter()
        .map(|f| {
            let suite = SuiteConfig::load(&f, 2).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f, suite)
        })
        .collect()
}

#[test]
fn every_shipped_suite_file_parses() {
    let suites = shipped();
    assert!(
        suites
            .iter()
            .any(|(f, _)| f.ends_with("suites/protocols.toml")),
        "{:?}",
        suites.iter().map(|(f, _)| f).collect::<Vec<_>>()
    );
    for (f, suite) in &suites {
        assert!(!suite.servers.is_empty(), "{}", f.display());
    }
}

/// A reference server (a folder under `servers/`) speaks the same protocols in every suite,
/// and the protocols suite runs each server in every protocol it speaks: h2 and h2c for the
/// four stacks that have HTTP/2, h3 too for rust, HTTP/1.1 and HTTPS only for java and
/// python, cleartext HTTP/1.1 only for the JVM servers jetty and netty (in seeds.toml only).
#[test]
fn reference_servers_list_the_same_protocols_everywhere() {
    let mut seen: BTreeMap<String, (Vec<Protocol>, String)> = BTreeMap::new();
    for (file, suite) in shipped() {
        for s in &suite.servers {
            let ServerKind::Managed(m) = &s.kind else {
                continue;
            };
            let Ok(dir) = m.dir.strip_prefix("servers") else {
                continue;
            };
            let dir = dir.display().to_string();
            let here = file.display().to_string();
            let (first, where_) = seen
                .entry(dir.clone())
                .or_insert_with(|| (s.protocols.clone(), here.clone()));
            assert_eq!(
                &s.protocols, first,
                "servers/{dir}: protocols in {here} differ from {where_}"
            );
        }
    }
    let http1_only = [Protocol::Http1, Protocol::Https];
    let cleartext_http1 = [Protocol::Http1];
    // The default: HTTP/1.1 and HTTP/2, with and without TLS; only rust's server speaks
    // HTTP/3, only go's has a WebSocket echo.
    let default: Vec<Protocol> = Protocol::ALL
        .iter()
        .copied()
        .filter(|p| p.by_default())
        .collect();
    let with = |more: &[Protocol]| [&default[..], more].concat();
    let (rust, go) = (with(&[Protocol::H3]), with(&[Protocol::Ws, Protocol::Wss]));
    for (dir, (protocols, _)) in &seen {
        let want: &[Protocol] = match dir.as_str() {
            "java" | "python" => &http1_only,
            "jetty" | "netty" => &cleartext_http1,
            "rust" => &rust,
            "go" => &go,
            // gRPC only: its calls go over HTTP/2 (suites/grpc.toml).
            "grpc" => &[Protocol::H2, Protocol::H2c],
            _ => &default,
        };
        assert_eq!(protocols, want, "servers/{dir}");
    }
    assert_eq!(seen.len(), 9, "{seen:?}");

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = SuiteConfig::load(&root.join("suites/protocols.toml"), 2).unwrap();
    let used: Vec<Protocol> = suite
        .scenarios
        .iter()
        .flat_map(|s| s.cells.iter().map(|c| c.protocol))
        .collect();
    for p in Protocol::ALL.iter() {
        assert!(
            used.contains(p),
            "protocols.toml has no {} cell",
            p.as_str()
        );
    }
    // Each of its servers runs in every protocol it speaks.
    for s in &suite.servers {
        for p in &s.protocols {
            assert!(
                suite
                    .scenarios
                    .iter()
                    .any(|sc| sc.cells.iter().any(|c| c.protocol == *p)),
                "protocols.toml runs {} in no {} cell",
                s.name,
                p.as_str()
            );
        }
    }
}

/// Every reference server on a runtime with a garbage collector declares it in every suite,
/// so each of its cells records the GC pauses from the runtime's own log (docs/contract.md,
/// "GC pauses"); the others declare none.
#[test]
fn reference_servers_turn_their_gc_log_on_everywhere() {
    use volley::config::suite::Runtime;
    for (file, suite) in shipped() {
        for s in &suite.servers {
            let ServerKind::Managed(m) = &s.kind else {
                continue;
            };
            let Ok(dir) = m.dir.strip_prefix("servers") else {
                continue;
            };
            let want = match dir.to_str().unwrap_or("") {
                "go" => Some(Runtime::Go),
                "node" => Some(Runtime::Node),
                "java" | "jetty" | "netty" => Some(Runtime::Jvm),
                _ => None,
            };
            assert_eq!(
                m.runtime,
                want,
                "servers/{} in {}",
                dir.display(),
                file.display()
            );
        }
    }
}

/// The commented `shards` example at the end of quick.toml is a valid scenario once its `# `
/// are taken away, and leaves the suite's own 12 cells as they are.
#[test]
fn the_commented_sharded_example_of_quick_toml_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/quick.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find("# [[scenario]]")
        .expect("quick.toml has a commented scenario");
    let example: String = text[start..]
        .lines()
        .map(|l| l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')))
        .collect::<Vec<_>>()
        .join("\n");
    let shipped = SuiteConfig::parse(&text, &path, 2).unwrap();
    assert_eq!(shipped.cells_per_rep(), 12);
    let suite = SuiteConfig::parse(&format!("{text}\n{example}\n"), &path, 2)
        .unwrap_or_else(|e| panic!("{e}"));
    let sharded = suite
        .scenarios
        .iter()
        .find(|s| s.name == "get-sharded")
        .unwrap();
    assert_eq!(sharded.cells[0].shards, 4);
}
