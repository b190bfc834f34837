//! A suite server's `runtime`: its GC log turned on through the environment, without touching
//! its start line (docs/contract.md, "GC pauses"), and where the harness then reads it; in a
//! cell with `profile = true`, also what lets its stacks be walked and named ("Profile").
//!
//! - `jvm`: `JAVA_TOOL_OPTIONS` gains `-Xlog:gc…` to a file in the cell's private folder
//!   (with wall-clock time on every line).
//! - `go`: `GODEBUG` gains `gctrace=1`; the runtime writes it to stderr, which the harness
//!   keeps in a file.
//! - `node`: `NODE_OPTIONS` gains `--require <folder>/gc.js`, a preload that turns
//!   `--trace-gc` on at start (the flag itself is not allowed in `NODE_OPTIONS`) and ties the
//!   log's clock to the wall clock; V8 prints to stdout, which the harness keeps in a file.
//! - profiled: a JVM gains `-XX:+PreserveFramePointer` (its perf map volley asks for with
//!   `jcmd`), Node `--perf-basic-prof` (V8 writes its perf map); Go keeps frame pointers.

use std::path::Path;

use volley_config::suite::Runtime;
use volley_config::GcLogConfig;
use volley_model::result::GcSource;
use volley_monitor::gc::{jvmlog, nodetrace};

/// The variables to set (after the server's own `env`, whose value is extended, not
/// replaced) and the log to read, for a server of `runtime` whose private folder is `dir`
/// and whose stdout and stderr go to `logs`; `profiled` when the cell samples its stacks.
pub(crate) fn runtime_env(
    runtime: Runtime,
    dir: &Path,
    logs: (&Path, &Path),
    own_env: &[(String, String)],
    profiled: bool,
) -> Result<(Vec<(String, String)>, GcLogConfig), String> {
    let extend = |var: &str, add: String, sep: &str| {
        let before = own_env
            .iter()
            .rev()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(var).ok())
            .filter(|v| !v.trim().is_empty());
        let value = match before {
            Some(v) => format!("{v}{sep}{add}"),
            None => add,
        };
        (var.to_string(), value)
    };
    Ok(match runtime {
        Runtime::Jvm => {
            let path = dir.join("gc.log");
            let mut add = jvmlog::xlog_option(&path);
            if profiled {
                add.push_str(" -XX:+PreserveFramePointer");
            }
            let var = extend("JAVA_TOOL_OPTIONS", add, " ");
            (vec![var], log(path, GcSource::JvmLog))
        }
        Runtime::Go => {
            let var = extend("GODEBUG", "gctrace=1".into(), ",");
            (vec![var], log(logs.1.to_path_buf(), GcSource::GoGctrace))
        }
        Runtime::Node => {
            let preload = dir.join("gc.js");
            std::fs::write(&preload, nodetrace::NODE_PRELOAD_JS)
                .map_err(|e| format!("cannot write {}: {e}", preload.display()))?;
            let mut add = format!("--require {}", preload.display());
            if profiled {
                add.push_str(" --perf-basic-prof");
            }
            let var = extend("NODE_OPTIONS", add, " ");
            (vec![var], log(logs.0.to_path_buf(), GcSource::NodeTraceGc))
        }
    })
}

fn log(path: std::path::PathBuf, format: GcSource) -> GcLogConfig {
    GcLogConfig {
        path,
        format: Some(format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_runtime_extends_its_own_variable() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let own = vec![("GODEBUG".to_string(), "madvdontneed=1".to_string())];
        let (vars, log) = runtime_env(Runtime::Go, dir.path(), (&out, &err), &own, true).unwrap();
        assert_eq!(
            vars,
            [("GODEBUG".into(), "madvdontneed=1,gctrace=1".into())]
        );
        assert_eq!(
            (log.path, log.format),
            (err.clone(), Some(GcSource::GoGctrace))
        );

        let (vars, log) = runtime_env(Runtime::Jvm, dir.path(), (&out, &out), &[], false).unwrap();
        assert_eq!(vars[0].0, "JAVA_TOOL_OPTIONS");
        assert!(vars[0].1.contains("-Xlog:gc"), "{}", vars[0].1);
        assert!(!vars[0].1.contains("PreserveFramePointer"), "{}", vars[0].1);
        assert_eq!(log.path, dir.path().join("gc.log"));

        let (vars, log) = runtime_env(Runtime::Node, dir.path(), (&out, &err), &[], false).unwrap();
        assert!(vars[0].1.starts_with("--require ") && vars[0].1.ends_with("gc.js"));
        assert!(dir.path().join("gc.js").is_file());
        assert_eq!(log.path, out);
    }

    #[test]
    fn a_profiled_cell_turns_on_what_walks_and_names_the_runtimes_frames() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let logs = (out.as_path(), err.as_path());
        let (vars, _) = runtime_env(Runtime::Jvm, dir.path(), logs, &[], true).unwrap();
        assert!(
            vars[0].1.ends_with(" -XX:+PreserveFramePointer"),
            "{}",
            vars[0].1
        );
        let (vars, _) = runtime_env(Runtime::Node, dir.path(), logs, &[], true).unwrap();
        assert!(
            vars[0].1.ends_with("gc.js --perf-basic-prof"),
            "{}",
            vars[0].1
        );
        let (vars, _) = runtime_env(Runtime::Go, dir.path(), logs, &[], true).unwrap();
        assert_eq!(vars, [("GODEBUG".into(), "gctrace=1".into())]);
    }
}
