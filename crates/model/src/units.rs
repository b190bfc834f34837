//! Human units, both ways. Parsing what people type on the command line and in suite files:
//! durations ("10s", "500ms", "1m30s", a bare number means seconds as in wrk), sizes ("1KiB",
//! "4k", "100MiB"), counts ("10k", "1.5M") and k6-style stages. Formatting what volley prints:
//! latencies in the most readable unit, rates and counts with separators, bytes in binary
//! units. Pure functions; the caller names the flag in its error.

use std::time::Duration;

/// Parses a duration such as `10s`, `250ms`, `1m30s`, `2h`, `1.5s` or a bare `10` (seconds).
///
/// ```
/// use std::time::Duration;
/// use volley_model::units::parse_duration;
/// assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
/// assert!(parse_duration("10x").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return secs_to_duration(secs, text);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!(
                "`{text}` is not a duration (expected e.g. 10s, 500ms, 1m30s)"
            ));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("`{text}` is not a duration (bad number)"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "" => {
                return Err(format!(
                    "`{text}`: a unit is needed after {value} (s, ms, m, h)"
                ))
            }
            other => {
                return Err(format!(
                    "`{text}`: unknown duration unit `{other}` (use ns, us, ms, s, m, h)"
                ))
            }
        };
        total += value * scale;
    }
    secs_to_duration(total, text)
}

fn secs_to_duration(secs: f64, text: &str) -> Result<Duration, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{text}` is not a non-negative duration"));
    }
    if secs > 365.0 * 24.0 * 3600.0 {
        return Err(format!("`{text}` is longer than a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a byte size: `1024`, `1KiB`, `4k` (= 4 KiB), `1KB` (= 1000), `100MiB`, `1GiB`.
///
/// ```
/// assert_eq!(volley_model::units::parse_size("4KiB"), Ok(4096));
/// ```
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (expected e.g. 1024, 1KiB, 4MiB)"))?;
    let scale: f64 = match unit.trim() {
        "" | "B" | "b" => 1.0,
        "k" | "K" | "KiB" | "kiB" | "Ki" => 1024.0,
        "KB" | "kB" => 1000.0,
        "m" | "M" | "MiB" | "Mi" => 1024.0 * 1024.0,
        "MB" => 1e6,
        "g" | "G" | "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        "GB" => 1e9,
        other => {
            return Err(format!(
                "`{text}`: unknown size unit `{other}` (use B, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    let bytes = value * scale;
    if !bytes.is_finite() || !(0.0..=1e15).contains(&bytes) {
        return Err(format!("`{text}` is out of range"));
    }
    if bytes.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// Parses a count: `1000`, `10k`, `1.5M`, `2G` (decimal multipliers, as k6 and oha read them).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let v = parse_decimal(text)?;
    if v.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole number"));
    }
    Ok(v as u64)
}

/// Parses a non-negative decimal with an optional k/M/G multiplier (`20000`, `20k`, `0.5`).
pub fn parse_decimal(text: &str) -> Result<f64, String> {
    let s = text.trim();
    if s.starts_with('-') {
        return Err(format!("`{text}` is negative"));
    }
    let (num, mul) = match s.chars().last() {
        Some('k') | Some('K') => (&s[..s.len() - 1], 1e3),
        Some('M') | Some('m') => (&s[..s.len() - 1], 1e6),
        Some('G') | Some('g') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a number (expected e.g. 1000, 10k, 1.5M)"))?;
    let v = v * mul;
    if !v.is_finite() || !(0.0..=1e15).contains(&v) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(v)
}

/// `%XX` escapes decoded; anything else as it is.
pub fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes() {
        assert_eq!(percent_decode("a%40b%2C"), b"a@b,");
        assert_eq!(percent_decode("%4"), b"%4");
        assert_eq!(percent_decode("%zz%41"), b"%zzA");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("10x")
            .unwrap_err()
            .contains("unknown duration unit"));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("1s5").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024").unwrap(), 1024);
        assert_eq!(parse_size("1KiB").unwrap(), 1024);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("1KB").unwrap(), 1000);
        assert_eq!(parse_size("100MiB").unwrap(), 100 << 20);
        assert_eq!(parse_size("0").unwrap(), 0);
        assert!(parse_size("1.5B").is_err());
        assert!(parse_size("1XB").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("10k").unwrap(), 10_000);
        assert_eq!(parse_count("1.5M").unwrap(), 1_500_000);
        assert_eq!(parse_count("7").unwrap(), 7);
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("-3").is_err());
        assert_eq!(parse_decimal("0.5").unwrap(), 0.5);
        assert!(parse_decimal("x").is_err());
    }
}

/// One k6-style stage: ramp linearly from the previous stage's users to `users` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageSpec {
    /// How long the stage lasts.
    pub duration: Duration,
    /// Users at the end of the stage.
    pub users: u64,
}

/// Parses `--stages "30s:1000,60s:1000,10s:0"` (DURATION:USERS, comma-separated).
pub fn parse_stages(text: &str) -> Result<Vec<StageSpec>, String> {
    let mut out = Vec::new();
    for (k, part) in text.split(',').enumerate() {
        let part = part.trim();
        let (d, u) = part.split_once(':').ok_or_else(|| {
            format!(
                "stage {} `{part}` is not DURATION:USERS (e.g. 30s:1000)",
                k + 1
            )
        })?;
        let duration = parse_duration(d).map_err(|e| format!("stage {} `{part}`: {e}", k + 1))?;
        let users = parse_count(u).map_err(|e| format!("stage {} `{part}`: {e}", k + 1))?;
        out.push(StageSpec { duration, users });
    }
    if out.iter().all(|s| s.duration.is_zero()) {
        return Err("the stages last 0 s in total".into());
    }
    Ok(out)
}

/// One stage of a rate: ramp linearly from the previous stage's rate (the first from 0) to
/// `rate_rps` over `duration`; a stage of 0 s is a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStageSpec {
    /// How long the stage lasts.
    pub duration: Duration,
    /// Requests per second at the end of the stage.
    pub rate_rps: f64,
}

/// Parses `--rate-stages "10s:1000,60s:20k,0s:5000,30s:5000"` (DURATION:RATE, comma-separated;
/// a rate as `-R` takes it: `1000`, `10k`, `1.5M`).
pub fn parse_rate_stages(text: &str) -> Result<Vec<RateStageSpec>, String> {
    let mut out = Vec::new();
    for (k, part) in text.split(',').enumerate() {
        let part = part.trim();
        let (d, r) = part.split_once(':').ok_or_else(|| {
            format!(
                "stage {} `{part}` is not DURATION:RATE (e.g. 10s:1000)",
                k + 1
            )
        })?;
        let at = |e: String| format!("stage {} `{part}`: {e}", k + 1);
        let duration = parse_duration(d).map_err(at)?;
        let rate_rps = parse_decimal(r).map_err(at)?;
        if rate_rps > 100_000_000.0 {
            return Err(at("more than 100M requests per second".into()));
        }
        out.push(RateStageSpec { duration, rate_rps });
    }
    if out.iter().all(|s| s.duration.is_zero()) {
        return Err("the stages last 0 s in total".into());
    }
    Ok(out)
}

/// Stages as `--rate-stages` writes them (`10s:1000,0s:5000`): for the load identity and
/// messages.
pub fn rate_stages_text(stages: &[RateStageSpec]) -> String {
    stages
        .iter()
        .map(|s| format!("{}:{}", duration_flag(s.duration), s.rate_rps))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod stage_tests {
    use super::*;

    #[test]
    fn stages() {
        let s = parse_stages("30s:1000, 1m:1k,10s:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[1],
            StageSpec {
                duration: Duration::from_secs(60),
                users: 1000
            }
        );
        assert!(parse_stages("30s").unwrap_err().contains("stage 1"));
        assert!(parse_stages("30s:10,x:5").unwrap_err().contains("stage 2"));
        assert!(parse_stages("30s:-5").is_err());
        assert!(parse_stages("0s:5").is_err());
        assert!(parse_stages("").is_err());
    }

    #[test]
    fn rate_stages() {
        let s = parse_rate_stages("10s:1000, 0s:5k,1m:2.5k").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].duration, Duration::ZERO);
        assert_eq!(s[1].rate_rps, 5000.0);
        assert_eq!(s[2].duration, Duration::from_secs(60));
        assert_eq!(rate_stages_text(&s), "10s:1000,0s:5000,60s:2500");
        assert!(parse_rate_stages("10s").unwrap_err().contains("stage 1"));
        assert!(parse_rate_stages("10s:5,x:5")
            .unwrap_err()
            .contains("stage 2"));
        assert!(parse_rate_stages("10s:-5").is_err());
        assert!(parse_rate_stages("10s:200M").unwrap_err().contains("100M"));
        assert!(parse_rate_stages("0s:5")
            .unwrap_err()
            .contains("0 s in total"));
    }
}

// Formatting for people.

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
        if i > 0 && (s.len() - i).is_multiple_of(3) {
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

/// A percentage above 0 and below 100, `5%` or `5`, as a fraction (0.05).
///
/// ```
/// use volley_model::units::parse_percent;
/// assert_eq!(parse_percent("5%"), Ok(0.05));
/// assert!(parse_percent("100%").is_err());
/// ```
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let v = parse_decimal(text.trim().trim_end_matches('%'))?;
    if v <= 0.0 || v >= 100.0 {
        return Err(format!("`{text}`: a percentage above 0 and below 100"));
    }
    Ok(v / 100.0)
}

/// A duration as a flag value that [`parse_duration`] reads back exactly: `10s`, `1500ms`,
/// `250us`.
///
/// ```
/// use std::time::Duration;
/// use volley_model::units::{duration_flag, parse_duration};
/// assert_eq!(duration_flag(Duration::from_secs(10)), "10s");
/// assert_eq!(duration_flag(Duration::from_millis(1500)), "1500ms");
/// assert_eq!(parse_duration(&duration_flag(Duration::from_micros(250))), Ok(Duration::from_micros(250)));
/// ```
pub fn duration_flag(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
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

/// Bytes a server sent, quoted for a warning: printable ASCII as is, `\r \n \t \" \\`
/// escaped, anything else as `\xNN`; cut after `max` bytes with `…`.
///
/// ```
/// use volley_model::units::quoted_bytes;
/// assert_eq!(quoted_bytes(b"SSH-2.0-x\r\n\x00", 64), r#""SSH-2.0-x\r\n\x00""#);
/// assert_eq!(quoted_bytes(b"abcdef", 3), "\"abc…\"");
/// ```
pub fn quoted_bytes(bytes: &[u8], max: usize) -> String {
    let mut out = String::from("\"");
    for &b in &bytes[..bytes.len().min(max)] {
        match b {
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    if bytes.len() > max {
        out.push('…');
    }
    out.push('"');
    out
}

#[cfg(test)]
mod format_tests {
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

    #[test]
    fn quoted_bytes_escape_everything_but_printable_ascii() {
        assert_eq!(
            quoted_bytes(b"SSH-2.0-OpenSSH_9.6\r\n", 64),
            "\"SSH-2.0-OpenSSH_9.6\\r\\n\""
        );
        assert_eq!(quoted_bytes(b"a\"b\\c\td", 64), "\"a\\\"b\\\\c\\td\"");
        assert_eq!(quoted_bytes(&[0x1b, b'[', 0xff], 64), "\"\\x1b[\\xff\"");
        assert_eq!(quoted_bytes(b"0123456789", 4), "\"0123…\"");
        assert_eq!(quoted_bytes(b"", 4), "\"\"");
    }
}
