//! The shape of the workspace, enforced: imports point one way only, down the layers of
//! docs/architecture.md. A module may use modules of lower layers and nothing of its own layer
//! but itself; an upward (or sideways) import fails this test with the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers of the `volley` package itself, lowest first. Modules of one layer are siblings:
/// none imports another. The lowest are the workspace's crates, which src/lib.rs re-exports
/// under their old paths (their own order is CRATE_LAYERS below, which Cargo enforces).
const LAYERS: &[&[&str]] = &[
    &[
        "units", "sys", "stats", "result", "metric", "plan", "engine", "monitor", "config",
        "measure", "report", "merge", "compare", "shard", "history", "live", "capacity", "harness",
    ],
    &["serve"],
    &["cmd"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// One import that breaks the rule.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    from: String,
    to: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, b) = (layer_of(&self.from), layer_of(&self.to));
        let why = match (a, b) {
            (Some(a), Some(b)) if a == b => "a sibling of the same layer",
            (Some(_), Some(_)) => "a higher layer",
            _ => "a module missing from the layers (add it to LAYERS and docs/architecture.md)",
        };
        write!(
            f,
            "{}:{}: `{}` uses `crate::{}`, {why}",
            self.file, self.line, self.from, self.to
        )
    }
}

/// The source with comments, strings and character literals blanked (newlines kept, so line
/// numbers stay right).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) {
            // Raw string: r"..." or r#"..."#.
            let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            out.extend(b[i..end].iter().map(|c| blank(*c)));
            i = end;
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
                out.push(blank(b[i]));
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.extend(b"   ");
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            let end = b[i + 2..]
                .iter()
                .position(|c| *c == b'\'')
                .map_or(b.len(), |p| i + 3 + p);
            out.extend(std::iter::repeat_n(b' ', end - i));
            i = end;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of every item of a `{...}` group starting at `s` (after the `{`), with
/// its offset in `s`.
fn group_heads(s: &str) -> Vec<(usize, &str)> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && (c.is_ascii_alphabetic() || c == '_') && depth == 0 => {
                heads.push((i, ident_at(&s[i..])));
                item_start = false;
            }
            c if item_start && !c.is_whitespace() => item_start = false,
            _ => {}
        }
    }
    heads
}

/// Every top-level module `src` names through `crate::`, with the line it does so on.
fn crate_uses(src: &str) -> Vec<(usize, String)> {
    let code = code_only(src);
    let mut found = Vec::new();
    for (pos, _) in code.match_indices("crate::") {
        let before = code[..pos].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let after = pos + "crate::".len();
        let rest = &code[after..];
        let heads = match rest.strip_prefix('{') {
            Some(group) => group_heads(group)
                .into_iter()
                .map(|(off, h)| (after + 1 + off, h))
                .collect(),
            None => vec![(after, ident_at(rest))],
        };
        for (at, h) in heads
            .into_iter()
            .filter(|(_, h)| !h.is_empty() && *h != "self")
        {
            let line = code[..at].matches('\n').count() + 1;
            found.push((line, h.to_string()));
        }
    }
    found
}

/// The top-level module a source file belongs to (`src/harness/cell.rs` -> `harness`).
fn module_of(rel: &Path) -> Option<String> {
    let mut parts = rel.iter().map(|p| p.to_string_lossy().into_owned());
    let first = parts.next()?;
    match first.strip_suffix(".rs") {
        Some("lib") | Some("main") => None,
        Some(stem) => Some(stem.to_string()),
        None => Some(first),
    }
}

/// The upward and sideways imports of one file.
fn check_file(rel: &str, module: &str, src: &str) -> Vec<Violation> {
    let from = layer_of(module);
    crate_uses(src)
        .into_iter()
        .filter(|(_, to)| to != module)
        .filter(|(_, to)| match (from, layer_of(to)) {
            (Some(a), Some(b)) => b >= a,
            _ => true,
        })
        .map(|(line, to)| Violation {
            file: rel.to_string(),
            line,
            from: module.to_string(),
            to,
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn imports_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    let mut modules: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let Some(module) = module_of(rel) else {
            continue;
        };
        *modules.entry(module.clone()).or_default() += 1;
        let text = std::fs::read_to_string(f).unwrap();
        let shown = format!("src/{}", rel.display());
        violations.extend(check_file(&shown, &module, &text));
    }
    for m in modules.keys() {
        assert!(
            layer_of(m).is_some(),
            "module `{m}` is in no layer: add it to LAYERS here and to docs/architecture.md"
        );
    }
    assert!(
        violations.is_empty(),
        "imports that do not point down the layers (docs/architecture.md):\n{}",
        violations
            .iter()
            .map(|v| format!("  {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_check_finds_upward_and_sideways_imports() {
    let src = r#"
//! A doc comment naming crate::cmd is not an import.
use crate::result::RunResult;
use crate::{
    units::{self, micros},
    report::Format, // upward
};
fn f() -> crate::harness::Outcome { let s = "crate::cmd"; todo!() }
"#;
    let v = check_file("src/serve/x.rs", "serve", &src.replace("report", "cmd"));
    let to: Vec<(usize, &str)> = v.iter().map(|v| (v.line, v.to.as_str())).collect();
    assert_eq!(to, vec![(6, "cmd")]);
    let sideways = check_file("src/engine/mod.rs", "engine", "use crate::compare::x;");
    assert_eq!(sideways.len(), 1);
    assert!(sideways[0]
        .to_string()
        .contains("a sibling of the same layer"));
    assert!(check_file(
        "src/cmd/x.rs",
        "cmd",
        "use crate::cmd::y; use crate::units::z;"
    )
    .is_empty());
}

/// The workspace's crates in layers, lowest first (docs/architecture.md, "Crates"): a crate may
/// depend on crates of lower layers only. Cargo refuses a cycle, not a dependency on a
/// sibling or on a crate above; this is the check of that.
const CRATE_LAYERS: &[&[&str]] = &[
    &["volley-model"],
    &["volley-plan"],
    &["volley-engine", "volley-monitor"],
    &["volley-config"],
    &["volley-measure", "volley-report"],
    &["volley-merge", "volley-compare", "volley-shard"],
    &["volley-history", "volley-live"],
    &["volley-capacity"],
    &["volley-harness"],
    &["volley", "volley-fuzzing"],
];

fn crate_layer(name: &str) -> Option<usize> {
    CRATE_LAYERS.iter().position(|l| l.contains(&name))
}

/// Each crate's (normal and build) dependencies on other volley crates, from `cargo metadata`.
fn crate_dependencies() -> Vec<(String, Vec<String>)> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"].as_array().unwrap();
            let volley = deps
                .iter()
                .filter(|d| d["kind"] != "dev")
                .filter_map(|d| d["name"].as_str())
                .filter(|n| *n == "volley" || n.starts_with("volley-"))
                .map(String::from)
                .collect();
            (p["name"].as_str().unwrap().to_string(), volley)
        })
        .collect()
}

#[test]
fn crates_depend_only_on_the_crates_below_them() {
    let found = crate_dependencies();
    let mut wrong = Vec::new();
    for (name, deps) in &found {
        let Some(layer) = crate_layer(name) else {
            wrong.push(format!(
                "{name}: in no layer (add it to CRATE_LAYERS and to docs/architecture.md)"
            ));
            continue;
        };
        for d in deps {
            if crate_layer(d).is_none_or(|l| l >= layer) {
                wrong.push(format!("{name} depends on {d}, which is not below it"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let listed: usize = CRATE_LAYERS.iter().map(|l| l.len()).sum();
    assert_eq!(
        found.len(),
        listed,
        "every crate of CRATE_LAYERS is in the workspace"
    );
}
