//! Folding and the top functions, on stacks made by hand; and a real profile of a thread of
//! this test burning CPU in a named function.

use super::*;
use volley_model::result::profile::top;

fn folded(lines: &[(&str, u64)]) -> Vec<(String, u64)> {
    lines.iter().map(|(s, n)| (s.to_string(), *n)).collect()
}

#[test]
fn self_and_total_time_per_request() {
    let f = folded(&[
        ("srv;main;handle;burn", 80),
        ("srv;main;handle;write_[k]", 15),
        ("srv;main;rec;rec;rec", 5),
    ]);
    // 100 samples of 1,000 µs over 1,000 requests: 100 µs a request in all.
    let t = top(f.iter().map(|(s, n)| (s.as_str(), *n)), 1000.0, 1000, 10);
    assert_eq!(t[0].name, "burn");
    assert_eq!((t[0].self_samples, t[0].total_samples), (80, 80));
    assert_eq!(t[0].self_us_per_request, Some(80.0));
    assert_eq!(t[0].self_pct, 80.0);
    let handle = t.iter().find(|c| c.name == "handle").unwrap();
    assert_eq!((handle.self_samples, handle.total_samples), (0, 95));
    // A recursion counts once on a stack.
    let rec = t.iter().find(|c| c.name == "rec").unwrap();
    assert_eq!((rec.self_samples, rec.total_samples), (5, 5));
    let main = t.iter().find(|c| c.name == "main").unwrap();
    assert_eq!(main.total_pct, 100.0);
    let stacks = || f.iter().map(|(s, n)| (s.as_str(), *n));
    assert_eq!(top(stacks(), 1000.0, 0, 10)[0].self_us_per_request, None);
    assert_eq!(top(stacks(), 1000.0, 1000, 2).len(), 2);
}

#[test]
fn frames_drop_markers_and_step_back_into_calls() {
    use records::{CONTEXT_KERNEL, CONTEXT_USER};
    let chain = [
        CONTEXT_KERNEL,
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0020,
        CONTEXT_USER,
        0x1000,
        0x2000,
    ];
    let v: Vec<u64> = frames(&chain).collect();
    assert_eq!(
        v,
        [0xffff_ffff_8100_0010, 0xffff_ffff_8100_001f, 0x1000, 0x1fff]
    );
    let named: HashMap<u64, String> = [
        (0xffff_ffff_8100_0010, "leaf_[k]".to_string()),
        (0xffff_ffff_8100_001f, "syscall_[k]".to_string()),
        (0x1000, "write;it".to_string()),
    ]
    .into_iter()
    .collect();
    let (line, user) = stack_line("srv", &chain, &named);
    assert_eq!(line, "srv;[unknown];write:it;syscall_[k];leaf_[k]");
    assert_eq!(user, 2);
}

/// Burns CPU in a function of its own for `ms`.
#[inline(never)]
fn burn_for_the_profile(ms: u64) -> u64 {
    let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    // Shifts and XORs only: no call in the loop, so its samples' leaf is this function even
    // where a callee without frame pointers would cut the stack (a debug build's).
    let mut x = 1u64;
    while std::time::Instant::now() < end {
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
    }
    x
}

/// This thread's CPU time, µs.
fn thread_cpu_us() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3
}

#[test]
fn a_busy_function_of_this_process_is_found_by_name_at_its_cpu_time() {
    // The test binary's other tests run beside it, so the function's share of the process is
    // not known; its own CPU time is: the thread measures it.
    let me = std::process::id() as i32;
    let p = match Profiler::start(me, 997) {
        Ok(p) => p,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    p.enable();
    let worker = std::thread::spawn(|| {
        let t0 = thread_cpu_us();
        burn_for_the_profile(800);
        thread_cpu_us() - t0
    });
    let cpu_us = worker.join().unwrap();
    // One "request": the costs per request are totals.
    let prof = p.finish(1);
    let info = &prof.info;
    let burn = info
        .top
        .iter()
        .find(|c| c.name.contains("burn_for_the_profile"))
        .unwrap_or_else(|| panic!("{:#?}", info.top));
    let sampled = burn.total_us_per_request.unwrap();
    assert!(
        (0.7 * cpu_us..=1.3 * cpu_us).contains(&sampled),
        "sampled {sampled:.0} µs in burn_for_the_profile, the thread used {cpu_us:.0} µs: {burn:?}; lost {}, dropped {}", info.lost, info.dropped
    );
    // Most of it in its own loop; the rest in the clock it reads (its callees).
    assert!(burn.self_samples * 2 >= burn.total_samples, "{burn:?}");
    assert!(prof
        .folded_text()
        .lines()
        .any(|l| l.contains("burn_for_the_profile")));
    assert!(info.processes.iter().any(|p| p.pid == me));
}
