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
    // (A counted `while`, not `for _ in 0..N`: a debug build calls `Range::next` and its
    // helpers for every step, which would be most of the samples.)
    let mut x = 1u64;
    while std::time::Instant::now() < end {
        let mut k = 0u32;
        while k < 20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            k += 1;
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
    let p = match Profiler::start(me, 997, false) {
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

/// Sleeps `n` times 2 ms: a thread's waits, in a function the off-CPU view must name.
#[inline(never)]
fn sleep_for_the_off_cpu_view(n: u32) {
    for _ in 0..n {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn a_thread_created_after_the_start_is_followed_and_its_sleep_named() {
    // The thread is created after the events open: the kernel's inheritance must follow it.
    let me = std::process::id() as i32;
    let p = match Profiler::start(me, 97, true) {
        Ok(p) => p,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    p.enable();
    let t0 = std::time::Instant::now();
    std::thread::spawn(|| sleep_for_the_off_cpu_view(25))
        .join()
        .unwrap();
    let slept_us = t0.elapsed().as_micros() as u64;
    let off = p.finish(1).off_cpu.expect("the off-CPU view");
    let waited: u64 = off
        .folded
        .iter()
        .filter(|(s, _)| s.contains("sleep_for_the_off_cpu_view") && !s.contains("[preempted]"))
        .map(|(_, us)| us)
        .sum();
    // 25 sleeps of 2 ms: at least 50 ms blocked, and no more than the thread lived.
    assert!(
        (50_000..=slept_us).contains(&waited),
        "{waited} µs waited in sleep_for_the_off_cpu_view, the thread lived {slept_us} µs: {:?}; {:?}",
        off.info,
        off.folded.iter().filter(|(s, _)| s.contains("sleep")).collect::<Vec<_>>()
    );
}

/// The off-CPU pairing, on events made by hand with fake times (ns).
mod off_cpu {
    use super::super::offcpu::{Ev, Pairer};
    use super::*;

    const OUT: Ev = Ev::Out { preempted: false };

    #[test]
    fn waits_pair_per_thread_in_time_order_whatever_order_the_rings_were_read_in() {
        let mut p = Pairer::default();
        // Thread 8's switch-in (read first: another CPU's ring) before its stack and
        // switch-out; thread 7 blocked once, then was preempted; thread 9 switched in
        // without a switch-out in the window (it blocked before it began).
        p.push(1_100, 8, Ev::In);
        p.push(2_500, 7, Ev::In);
        p.push(9_000, 9, Ev::In);
        p.push(2_000, 7, Ev::Out { preempted: true });
        p.push(2_000, 7, Ev::Stack(1));
        p.push(100, 8, OUT);
        p.push(100, 8, Ev::Stack(0));
        p.push(300, 7, Ev::Stack(0));
        p.push(300, 7, OUT);
        p.push(800, 7, Ev::In);
        p.settle(u64::MAX);
        assert_eq!(p.waits[&(0, false)], (2, 1_000 + 500));
        assert_eq!(p.waits[&(1, true)], (1, 500));
        assert_eq!(p.waits.len(), 2);
        assert_eq!(p.unpaired, 0);
    }

    #[test]
    fn only_events_old_enough_are_paired_so_a_late_switch_out_still_finds_its_switch_in() {
        let mut p = Pairer::default();
        p.push(5_000, 3, Ev::In);
        // Every ring read up to 4,000: the switch-in waits.
        p.settle(4_000);
        assert!(p.waits.is_empty());
        // Its switch-out comes in a later read of another ring.
        p.push(1_000, 3, Ev::Stack(4));
        p.push(1_000, 3, OUT);
        p.settle(u64::MAX);
        assert_eq!(p.waits[&(4, false)], (1, 4_000));
    }

    #[test]
    fn a_lost_switch_in_or_stack_is_counted_not_guessed() {
        let mut p = Pairer::default();
        // The first switch-in was lost: the first wait is unpaired, the second measured.
        p.push(100, 5, Ev::Stack(0));
        p.push(100, 5, OUT);
        p.push(300, 5, Ev::Stack(1));
        p.push(300, 5, OUT);
        p.push(400, 5, Ev::In);
        // A switch-out whose sample was lost: no stack to give its time to.
        p.push(500, 5, OUT);
        p.push(900, 5, Ev::In);
        p.settle(u64::MAX);
        assert_eq!(p.waits.get(&(0, false)), None);
        assert_eq!(p.waits[&(1, false)], (1, 100));
        assert_eq!(p.unpaired, 2);
    }

    #[test]
    fn records_of_two_rings_fold_into_microseconds_of_waiting() {
        use records::tests::{sample_bytes, switch_bytes};
        use records::{MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT};
        let mut g = Gathered::default();
        g.comms.insert(42, "srv".into());
        // `sample_bytes` samples tid 43 at 7 ns; it switches back in 2 ms later, a record
        // read (from another ring) before the sample and its switch-out.
        let chain = [records::CONTEXT_USER, 0x401000, 0x402000];
        for bytes in [
            switch_bytes(42, 43, 2_000_007, 0),
            sample_bytes(42, &chain),
            switch_bytes(42, 43, 7, MISC_SWITCH_OUT),
        ] {
            g.take_off(records::parse(&bytes).unwrap());
        }
        // Then it is preempted for 30 µs with the same stack.
        g.take_off(records::parse(&switch_bytes(42, 43, 3_000_000, 0)).unwrap());
        g.off.pairer.settle(u64::MAX);
        let mut preempted = sample_bytes(42, &chain);
        preempted[24..32].copy_from_slice(&3_000_000u64.to_le_bytes()); // its time
        g.take_off(records::parse(&preempted).unwrap());
        let out = MISC_SWITCH_OUT | MISC_SWITCH_OUT_PREEMPT;
        g.take_off(records::parse(&switch_bytes(42, 43, 3_000_000, out)).unwrap());
        g.take_off(records::parse(&switch_bytes(42, 43, 3_030_000, 0)).unwrap());
        g.off.pairer.settle(u64::MAX);
        let p = offcpu::fold(&g, &symbols::Names::new(), 4);
        assert_eq!(
            p.folded,
            vec![
                ("srv;[preempted];[unknown];[unknown]".to_string(), 30),
                ("srv;[unknown];[unknown]".to_string(), 2_000),
            ]
        );
        assert_eq!(p.info.switches, 2);
        assert_eq!((p.info.blocked_ms, p.info.preempted_ms), (2.0, 0.03));
        assert_eq!(p.info.blocked_us_per_request, Some(500.0));
        assert_eq!(p.info.top[0].name, "[unknown]");
        assert_eq!(p.info.top[0].total_samples, 2_000);
    }

    #[test]
    fn unsampled_time_is_spread_over_the_process_stacks_by_weight() {
        let mut g = Gathered::default();
        let key = |pid: u32, ip: u64| (pid, vec![ip].into_boxed_slice());
        g.stacks.insert(key(7, 1), (3, 3_000));
        g.stacks.insert(key(7, 2), (1, 1_000));
        g.stacks.insert(key(8, 1), (1, 1_000));
        // pid 7 left 2 ms unsampled: ¾ to the stack with ¾ of its weight; pid 8 none.
        g.spread(&HashMap::from([(7, 2_000)]));
        assert_eq!(g.stacks[&key(7, 1)], (3, 4_500));
        assert_eq!(g.stacks[&key(7, 2)], (1, 1_500));
        assert_eq!(g.stacks[&key(8, 1)], (1, 1_000));
    }
}
