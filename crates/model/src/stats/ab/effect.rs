//! The effect of B against A in percent of A's median, its wording ("19.0% slower, 95% CI
//! 12.1–25.3%"), and one call of a pair of samples ([`versus`]) for the reports that show
//! servers "vs" a suite's baseline.

use super::{hodges_lehmann, mann_whitney_u};

/// Repetitions each side needs before a call is made (the test and the interval).
pub const MIN_CALL_N: usize = 5;

/// The Hodges-Lehmann shift of B against A in percent of A's median (positive: B higher).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    /// The shift's estimate.
    pub pct: f64,
    /// Lower end of the confidence interval; `None` below 5 values a side.
    pub low_pct: Option<f64>,
    /// Upper end.
    pub high_pct: Option<f64>,
}

/// The effect of `b` against `a` at level `1 − alpha`; `None` when a sample is empty or not
/// finite, or A's median is 0 (no percentage of it).
pub fn effect(a: &[f64], b: &[f64], alpha: f64) -> Option<Effect> {
    let s = hodges_lehmann(a, b, alpha)?;
    let m = median(a)?;
    if m == 0.0 {
        return None;
    }
    let pct = |v: f64| v / m.abs() * 100.0;
    Some(Effect {
        pct: pct(s.estimate),
        low_pct: s.low.map(pct),
        high_pct: s.high.map(pct),
    })
}

/// The median of finite values; `None` for none.
fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

/// The effect in words, in the metric's direction: `19.0% slower, 95% CI 12.1–25.3%` (or
/// `faster`; the interval left out when there is none). `higher_is_better` reads a rise as
/// faster (throughput) or slower (latency).
pub fn effect_words(e: &Effect, higher_is_better: bool, alpha: f64) -> String {
    let worse = |v: f64| if higher_is_better { -v } else { v };
    let w = worse(e.pct);
    let word = if w > 0.0 { "slower" } else { "faster" };
    // Both ends in the same direction as the estimate's word (negative: the other way).
    let dir = |v: f64| if w > 0.0 { worse(v) } else { -worse(v) };
    let mut out = format!("{:.1}% {word}", dir(e.pct));
    if let (Some(lo), Some(hi)) = (e.low_pct, e.high_pct) {
        let (x, y) = (dir(lo), dir(hi));
        let level = (1.0 - alpha) * 100.0;
        out += &format!(", {level:.0}% CI {:.1}–{:.1}%", x.min(y), x.max(y));
    }
    out
}

/// The call on a pair of samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// B significantly better in the metric's direction.
    Faster,
    /// B significantly worse.
    Slower,
    /// The test finds no difference at alpha.
    NoDifference,
    /// Fewer than [`MIN_CALL_N`] values on a side: no test.
    TooFew,
}

/// B against A in one go: the test at `alpha`, read in the metric's direction, and the effect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Versus {
    /// The call.
    pub call: Call,
    /// Two-sided p-value (`None` without a test).
    pub p_value: Option<f64>,
    /// The effect in percent of A's median.
    pub effect: Option<Effect>,
}

/// Judges `b` against `a`; `higher_is_better` gives the metric's direction.
pub fn versus(a: &[f64], b: &[f64], alpha: f64, higher_is_better: bool) -> Versus {
    let effect = effect(a, b, alpha);
    if a.len() < MIN_CALL_N || b.len() < MIN_CALL_N {
        return Versus {
            call: Call::TooFew,
            p_value: None,
            effect,
        };
    }
    let Some(t) = mann_whitney_u(a, b) else {
        return Versus {
            call: Call::TooFew,
            p_value: None,
            effect,
        };
    };
    let call = if t.p_value >= alpha {
        Call::NoDifference
    } else if t.b_tends_larger() == higher_is_better {
        Call::Faster
    } else {
        Call::Slower
    };
    Versus {
        call,
        p_value: Some(t.p_value),
        effect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_the_metric_direction() {
        let e = Effect {
            pct: -19.0,
            low_pct: Some(-25.0),
            high_pct: Some(-12.0),
        };
        assert_eq!(
            effect_words(&e, true, 0.05),
            "19.0% slower, 95% CI 12.0–25.0%"
        );
        assert_eq!(
            effect_words(&e, false, 0.05),
            "19.0% faster, 95% CI 12.0–25.0%"
        );
        let e = Effect {
            pct: 10.0,
            low_pct: None,
            high_pct: None,
        };
        assert_eq!(effect_words(&e, false, 0.05), "10.0% slower");
    }

    #[test]
    fn versus_calls_a_clear_shift() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b: Vec<f64> = a.iter().map(|x| x * 0.8).collect();
        let v = versus(&a, &b, 0.05, true);
        assert_eq!(v.call, Call::Slower);
        let e = v.effect.unwrap();
        assert!((e.pct + 20.0).abs() < 1.0, "{e:?}");
        assert_eq!(versus(&a, &a, 0.05, true).call, Call::NoDifference);
        assert_eq!(versus(&a[..3], &a, 0.05, true).call, Call::TooFew);
        assert!(effect(&[0.0], &[1.0], 0.05).is_none());
    }
}
