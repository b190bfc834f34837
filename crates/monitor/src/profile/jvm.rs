//! Java virtual machines in the profiled tree: their JIT-compiled methods have no ELF symbols,
//! so at the window's end volley asks each JVM for its perf map (`jcmd PID
//! Compiler.perfmap`, which writes `/tmp/perf-PID.map`), and notes whether it runs with
//! `-XX:+PreserveFramePointer`, without which the callers of Java frames are not walked
//! (docs/contract.md, "Profile").

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::symbols::Map;
use volley_model::result::profile::JvmProfiling;

/// How long `jcmd` may take (it starts a JVM of its own, then attaches).
const JCMD_TIMEOUT: Duration = Duration::from_secs(20);

/// Whether `maps` are a HotSpot JVM's (it maps `libjvm.so`).
pub(crate) fn is_jvm(maps: &[Map]) -> bool {
    maps.iter().any(|m| m.path.ends_with("/libjvm.so"))
}

/// Asks the JVM `pid` for its perf map and notes how its frames can be walked.
pub(crate) fn profile(pid: u32) -> JvmProfiling {
    let error = ask_perf_map(pid).err();
    JvmProfiling {
        preserve_frame_pointer: preserves_frame_pointer(pid),
        perf_map: error.is_none(),
        perf_map_error: error,
    }
}

/// Whether `-XX:+PreserveFramePointer` is the last word on it in the JVM's command line or
/// the variables the JVM reads options from.
fn preserves_frame_pointer(pid: u32) -> bool {
    let read = |f: &str| std::fs::read(format!("/proc/{pid}/{f}")).unwrap_or_default();
    let environ = read("environ");
    let from_env = environ
        .split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| ["JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"].contains(k))
        .map(|(_, v)| v.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let cmdline = String::from_utf8_lossy(&read("cmdline")).replace('\0', " ");
    last_says_preserve(&format!("{from_env} {cmdline}"))
}

/// The last `-XX:±PreserveFramePointer` in `options` (`JAVA_TOOL_OPTIONS` is read before the
/// command line, which overrides it), false without one.
fn last_says_preserve(options: &str) -> bool {
    options
        .split_whitespace()
        .filter_map(|w| match w {
            "-XX:+PreserveFramePointer" => Some(true),
            "-XX:-PreserveFramePointer" => Some(false),
            _ => None,
        })
        .next_back()
        .unwrap_or(false)
}

/// `jcmd PID Compiler.perfmap`, with the `jcmd` beside the JVM's own `java` when there is one;
/// its last line of output when it fails.
fn ask_perf_map(pid: u32) -> Result<(), String> {
    let jcmd = jcmd_of(pid);
    let mut child = Command::new(&jcmd)
        .args([pid.to_string().as_str(), "Compiler.perfmap"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", jcmd.display()))?;
    let deadline = Instant::now() + JCMD_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} did not answer within {} s",
                    jcmd.display(),
                    JCMD_TIMEOUT.as_secs()
                ));
            }
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    // jcmd exits 0 even when the command failed inside the JVM: the map must be there.
    let written = Path::new(&format!("/tmp/perf-{pid}.map")).is_file();
    if out.status.success() && written {
        return Ok(());
    }
    let last = text.lines().rev().find(|l| !l.trim().is_empty());
    Err(format!(
        "jcmd {pid} Compiler.perfmap: {}",
        last.unwrap_or("wrote no /tmp/perf-PID.map").trim()
    ))
}

/// The `jcmd` of the JVM's own installation (`/proc/PID/exe` is its `bin/java`), else the one
/// on the PATH.
fn jcmd_of(pid: u32) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("jcmd")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("jcmd"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_preserve_frame_pointer_option_wins() {
        assert!(!last_says_preserve("-Xmx1g -cp out Server"));
        assert!(last_says_preserve(
            "-XX:+PreserveFramePointer -cp out Server"
        ));
        assert!(!last_says_preserve(
            "-XX:+PreserveFramePointer java -XX:-PreserveFramePointer Server"
        ));
    }

    #[test]
    fn a_jvm_is_known_by_its_libjvm() {
        let map = |path: &str| Map {
            start: 0,
            end: 1,
            pgoff: 0,
            path: path.into(),
        };
        assert!(is_jvm(&[
            map("/usr/bin/java"),
            map("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so")
        ]));
        assert!(!is_jvm(&[map("/usr/sbin/nginx")]));
    }
}
