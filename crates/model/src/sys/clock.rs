//! The wall clock's own error bound, as the kernel keeps it for NTP (chrony, ntpd,
//! systemd-timesyncd): `adjtimex(2)` with no change asked.

/// What the kernel says of its wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockStatus {
    /// Maximum error, µs (`maxerror`: grows by 500 ppm a second until a sync resets it).
    pub maxerror_us: u64,
    /// A time service keeps it synchronised (`STA_UNSYNC` clear and not `TIME_ERROR`).
    pub synchronised: bool,
}

/// `STA_UNSYNC` of `timex.status`: the clock is not synchronised.
const STA_UNSYNC: i32 = 0x0040;
/// adjtimex's return when the clock is not synchronised.
const TIME_ERROR: i32 = 5;

/// The clock's status now; `None` when the kernel will not say.
pub fn status() -> Option<ClockStatus> {
    // SAFETY: a zeroed timex with modes 0 only reads; adjtimex fills the struct we own.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut t) };
    if state < 0 {
        return None;
    }
    Some(ClockStatus {
        maxerror_us: t.maxerror.max(0) as u64,
        synchronised: state != TIME_ERROR && (t.status & STA_UNSYNC) == 0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kernel_answers() {
        let s = super::status().expect("adjtimex reads without privilege");
        // An unsynchronised clock reports the largest error (16 s on Linux), a synchronised
        // one far less; either way a number.
        assert!(s.maxerror_us <= 16_000_000, "{s:?}");
    }
}
