//! Number formatting shared by the human-readable reporters.

/// A latency in µs as the most readable unit: `812 µs`, `1.24 ms`, `2.50 s`.
pub fn micros(us: u64) -> String {
    let v = us as f64;
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.2} ms", v / 1e3)
    } else {
        format!("{:.2} s", v / 1e6)
    }
}

/// Like `micros` for a fractional value (mean, stdev).
pub fn micros_f(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.1} µs")
    } else {
        micros(us.round() as u64)
    }
}

/// An optional latency; "-" when there is none.
pub fn opt_micros(v: Option<u64>) -> String {
    v.map(micros).unwrap_or_else(|| "-".into())
}

/// An integer with thousands separators: 1,234,567.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with one decimal and separators: 118,532.4.
pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let whole = v.trunc() as u64;
    format!(
        "{}.{}",
        thousands(whole),
        ((v.fract() * 10.0).round() as u64).min(9)
    )
}

/// Bytes in binary units: 512 B, 1.5 KiB, 113.0 MiB.
pub fn bytes(n: u64) -> String {
    let v = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if v < 1024.0 * 1024.0 {
        format!("{:.1} KiB", v / 1024.0)
    } else if v < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", v / 1024.0 / 1024.0)
    } else {
        format!("{:.2} GiB", v / 1024.0 / 1024.0 / 1024.0)
    }
}

/// Seconds, compactly: 10 s, 1.5 s, 250 ms.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 || s == 0.0 {
        if (s - s.round()).abs() < 1e-9 {
            format!("{} s", s.round() as u64)
        } else {
            format!("{s:.2} s")
        }
    } else {
        format!("{} ms", (s * 1000.0).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(micros(812), "812 µs");
        assert_eq!(micros(1240), "1.24 ms");
        assert_eq!(micros(2_500_000), "2.50 s");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(rate(118532.44), "118,532.4");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(seconds(10.0), "10 s");
        assert_eq!(seconds(0.25), "250 ms");
        assert_eq!(micros_f(45.67), "45.7 µs");
    }
}
