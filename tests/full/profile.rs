//! `volley run --profile` against Debian's nginx, a binary built without frame pointers: its
//! user stacks must come from the call-frame information (`unwinding: dwarf`) and reach from
//! nginx's event loop to the request's handler and the syscall it makes.

use crate::common;

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
    let json = dir.join("r.json");
    let url = format!("http://127.0.0.1:{port}/");
    let pid = srv.pid().to_string();
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
    let p = &r["server"]["profile"];
    assert_eq!(p["processes"][0]["command"], "nginx", "{p}");
    assert_eq!(p["processes"][0]["unwinding"], "dwarf", "{p}");
    assert!(
        p["processes"][0]["median_depth"].as_u64().unwrap() >= 8,
        "{p}"
    );
    let folded = std::fs::read_to_string(dir.join("r.folded")).unwrap();
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
