//! Drives a load from a Rust program, without volley's command line: a closed loop of 8
//! connections for 3 seconds against an HTTP/1.1 server, then the counts and percentiles.
//!
//! ```text
//! volley serve --port 8080 &
//! cargo run --release -p volley-engine --example closed_loop -- 127.0.0.1:8080
//! ```

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use volley_engine::{Observers, Route};
use volley_plan::{IoChoice, LoadSpec, Plan, Target};

fn main() -> Result<(), String> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()
        .map_err(|e| format!("ADDR: {e} (give an address such as 127.0.0.1:8080)"))?;
    let spec = LoadSpec::closed_loop(Target::http(addr, "/"), 8, Duration::from_secs(3));
    // How the connections, and later the requests, are shared among the threads.
    let plan = Plan::new(&spec, 1);
    let route = Route::tcp(addr, IoChoice::Auto)?;
    // Ctrl-C would count here: the first press drains, the second stops.
    let interrupts = AtomicUsize::new(0);
    // Observers hear of every second as it ends (live views); none here.
    let out = volley_engine::run(&spec, plan, route, &interrupts, &mut Observers(Vec::new()))
        .map_err(|e| format!("the run could not start: {e}"))?;
    let totals = &out.agg.counts;
    if totals.completed == 0 {
        let why = out
            .first_connect_failure()
            .unwrap_or("refused or unreachable");
        return Err(format!("no response from {addr}: {why}"));
    }
    let latency = &out.agg.latency;
    println!(
        "{} responses in {:.1} s ({:.0}/s), {} errors; latency p50 {} us, p99 {} us",
        totals.completed,
        out.elapsed_s,
        totals.completed as f64 / out.elapsed_s,
        totals.errors.total(),
        latency.value_at_quantile(0.50),
        latency.value_at_quantile(0.99),
    );
    Ok(())
}
