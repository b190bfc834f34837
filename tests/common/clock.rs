//! Clock readings for tests that place another process's events on a run's clock: a result's
//! `started_at` and a process's start, both in ms since the Unix epoch.

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `started_at` (RFC 3339, 6 fractional digits, `Z` or `±HH:MM`) in ms since the Unix epoch.
pub fn rfc3339_ms(s: &str) -> f64 {
    let n = |a: usize, b: usize| s[a..b].parse::<i64>().unwrap();
    let days = days_from_civil(n(0, 4), n(5, 7), n(8, 10));
    let secs = days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    assert_eq!(&s[19..20], ".", "{s}");
    let frac: f64 = format!("0.{}", &s[20..26]).parse().unwrap();
    let tz = &s[26..];
    let off = if tz == "Z" {
        0
    } else {
        let sign = if tz.starts_with('-') { -1 } else { 1 };
        sign * (tz[1..3].parse::<i64>().unwrap() * 3600 + tz[4..6].parse::<i64>().unwrap() * 60)
    };
    ((secs - off) as f64 + frac) * 1e3
}

/// A process's start on the wall clock, ms since the epoch, as /proc tells it: now less its
/// age (time since boot less its start in clock ticks: 10 ms resolution at the usual 100 Hz).
pub fn process_start_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    // Field 22 (starttime) is the 20th after the command.
    let ticks: f64 = after.split_whitespace().nth(19).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the struct we own.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) },
        0
    );
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3;
    let up_s = ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9;
    now_ms - (up_s - ticks / hz) * 1e3
}
