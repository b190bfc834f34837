//! `volley run --profile` against real servers: Debian's nginx, a binary built without frame
//! pointers, whose user stacks must come from the call-frame information (`unwinding: dwarf`)
//! and reach from nginx's event loop to the request's handler and the syscall it makes; the Go
//! reference server, whose handler Go names natively; and the Node.js one, whose JIT-compiled
//! handler is named from the perf map `--perf-basic-prof` makes it write.

use crate::common;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use common::nginx;
use serde_json::Value;

#[test]
fn nginx_is_unwound_by_its_call_frame_information() {
    let dir = common::scratch("profile", "nginx");
    let port = nginx::free_port();
    let srv = nginx::start(
        &dir,
        &format!("server {{ listen 127.0.0.1:{port}; location / {{ return 200 '.'; }} }}"),
        &[port],
    );
    let (r, folded, text) = profiled(port, srv.pid(), "nginx");
    let p = &r["server"]["profile"];
    assert_eq!(p["processes"][0]["command"], "nginx", "{p}");
    assert_eq!(p["processes"][0]["unwinding"], "dwarf", "{p}");
    assert!(
        p["processes"][0]["median_depth"].as_u64().unwrap() >= 8,
        "{p}"
    );
    // The frame-pointer walk stops at nginx's first frame; the call-frame information goes on
    // from the event loop through the handler to the write.
    let deep = folded.lines().filter(|l| {
        l.contains(";ngx_process_events_and_timers;")
            && l.contains(";ngx_http_core_run_phases;")
            && l.contains("writev")
    });
    assert!(deep.count() > 0, "{folded}");
    assert!(!text.contains("its user stacks are shallow"), "{text}");
}

/// A reference server (`servers/`) on a free port, with `env` and `args`; killed when dropped.
struct Reference(Child, u16);

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn reference(program: &str, args: &[&str]) -> Reference {
    let port = nginx::free_port();
    // In a scratch folder: Node's --perf-basic-prof leaves isolate-*-v8.log files where it runs.
    let child = Command::new(program)
        .args(args)
        .current_dir(common::scratch("profile", &format!("reference-{port}")))
        .env("PORT", port.to_string())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e} (servers/install.sh builds the servers)"));
    for _ in 0..150 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Reference(child, port)
}

/// A profiled 3 s run of the server on `port` (process `pid`): its RunResult, its folded
/// stacks and its output.
fn profiled(port: u16, pid: u32, name: &str) -> (Value, String, String) {
    let json = common::scratch("profile", name).join("r.json");
    let url = format!("http://127.0.0.1:{port}/");
    let pid = pid.to_string();
    let o = common::volley(
        &[
            "run",
            &url,
            "-c",
            "4",
            "-d",
            "3s",
            "--pid",
            &pid,
            "--profile",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let folded = std::fs::read_to_string(json.with_extension("folded")).unwrap();
    (r, folded, text)
}

/// The folded stacks of a profiled 3 s run against `srv`.
fn folded_of(srv: &Reference, name: &str) -> String {
    profiled(srv.1, srv.0.id(), name).1
}

#[test]
fn go_names_its_handler() {
    // Built as the suites build it (`go build -o server .`), into this test's folder.
    let bin = common::scratch("profile", "go").join("server");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/go"))
        .status();
    match built {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("go build of servers/go failed: {s}"),
        Err(e) => {
            common::skip(&format!("go: {e} (servers/install.sh installs it)"));
            return;
        }
    }
    let srv = reference(bin.to_str().unwrap(), &[]);
    let folded = folded_of(&srv, "go");
    // servers/go/main.go's handler of `/` is `root`.
    assert!(folded.contains(";main.root;"), "{folded}");
    assert!(folded.contains("runtime."), "the runtime's frames too");
}

#[test]
fn node_names_its_jit_compiled_handler_from_its_perf_map() {
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/node/server.js");
    let srv = reference("node", &["--perf-basic-prof", js.to_str().unwrap()]);
    let folded = folded_of(&srv, "node");
    let pid = srv.0.id();
    drop(srv);
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    // server.js's request handler is `handle`, compiled by V8 and named in its perf map.
    assert!(
        folded
            .lines()
            .any(|l| l.contains("JS:") && l.contains("handle") && l.contains("server.js")),
        "{folded}"
    );
}
