//! A/B statistics behind `volley compare`'s verdicts and the suites' "vs baseline" lines: a
//! two-sided Mann-Whitney U test (Wilcoxon rank-sum) with the normal approximation, the tie
//! correction of the variance and a continuity correction of 0.5 — what R's
//! `wilcox.test(a, b, exact = FALSE, correct = TRUE)` and SciPy's
//! `mannwhitneyu(a, b, method="asymptotic", use_continuity=True)` compute — and the
//! Hodges-Lehmann shift with its distribution-free confidence interval (`shift`).
//! Pure functions only; nothing here knows about RunResults.

mod effect;
mod shift;

pub use effect::{effect, effect_words, versus, Call, Effect, Versus, MIN_CALL_N};
pub use shift::{hodges_lehmann, Shift, MIN_INTERVAL_N};

/// The outcome of a two-sided Mann-Whitney U test of sample A against sample B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of A: the pairs (a, b) with a > b, a tie counting one half (R's `W`).
    pub u_a: f64,
    /// U of B: `n_a · n_b − u_a`.
    pub u_b: f64,
    /// The standardized statistic after the continuity correction (positive: A tends larger).
    pub z: f64,
    /// Two-sided p-value of "A and B come from the same distribution" (1 when every value
    /// of both samples is equal: nothing to tell apart).
    pub p_value: f64,
}

impl MannWhitney {
    /// The smaller of the two U values, the one tables of critical values use.
    pub fn u(&self) -> f64 {
        self.u_a.min(self.u_b)
    }

    /// Whether B tends to be larger than A (more of the pairs have b > a).
    pub fn b_tends_larger(&self) -> bool {
        self.u_b > self.u_a
    }
}

/// Runs the test. `None` when a sample is empty or holds a value that is not finite.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let (n_a, n_b) = (a.len() as f64, b.len() as f64);
    let n = n_a + n_b;
    let (ranks, tie_term) = ranks(&a.iter().chain(b).copied().collect::<Vec<_>>());
    let rank_sum_a: f64 = ranks[..a.len()].iter().sum();
    let u_a = rank_sum_a - n_a * (n_a + 1.0) / 2.0;
    let u_b = n_a * n_b - u_a;
    let mean = n_a * n_b / 2.0;
    let variance = n_a * n_b / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        // Every value is the same: the samples cannot be told apart.
        return Some(MannWhitney {
            u_a,
            u_b,
            z: 0.0,
            p_value: 1.0,
        });
    }
    let d = u_a - mean;
    // R's sign(): 0 for 0 (f64::signum gives ±1 for ±0, which would move a z of 0).
    let correction = if d > 0.0 {
        0.5
    } else if d < 0.0 {
        -0.5
    } else {
        0.0
    };
    let z = (d - correction) / variance.sqrt();
    let p_value = erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0);
    Some(MannWhitney {
        u_a,
        u_b,
        z,
        p_value,
    })
}

/// Ranks from 1 (ties get the mean of the ranks they span) and Σ (t³ − t) over tie groups.
fn ranks(values: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold equal values: ranks start+1 ..= end, averaged.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    (ranks, tie_term)
}

/// The complementary error function, to about 1e-13 relative: the Maclaurin series of erf
/// below 2.5, the continued fraction of erfc above (where 1 − erf would lose the digits).
pub(crate) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.5 {
        // erf(x) = 2/√π Σ (−1)ⁿ x^(2n+1) / (n! (2n+1))
        let x2 = x * x;
        let mut term = x; // (−1)ⁿ x^(2n+1) / n!
        let mut sum = x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - sum * std::f64::consts::FRAC_2_SQRT_PI;
    }
    // erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))),
    // evaluated from the tail, which converges quickly for x ≥ 2.5.
    let mut f = x;
    for k in (1..=120).rev() {
        f = x + (k as f64 / 2.0) / f;
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs()
    }

    /// Reference values from Python 3.11's `math.erfc`.
    #[test]
    fn erfc_matches_the_reference() {
        for (x, want) in [
            (0.1, 0.8875370839817152),
            (0.5, 0.4795001221869535),
            (1.0, 0.15729920705028513),
            (2.0, 0.004677734981047265),
            (2.5, 0.0004069520174449589),
            (3.0, 2.2090496998585438e-05),
            (4.0, 1.541725790028002e-08),
            (6.0, 2.1519736712498916e-17),
        ] {
            let got = erfc(x);
            assert!(close(got, want, 1e-12), "erfc({x}) = {got}, want {want}");
            assert!(close(erfc(-x), 2.0 - want, 1e-12));
        }
        assert_eq!(erfc(0.0), 1.0);
    }

    /// Expected U and p from SciPy 1.17's
    /// `mannwhitneyu(a, b, alternative="two-sided", use_continuity=True, method="asymptotic")`,
    /// which computes what R's `wilcox.test(a, b, exact = FALSE, correct = TRUE)` does
    /// (U of A = R's W). The first pair is the two-sample example of R's `?wilcox.test`
    /// (Hollander & Wolfe); checked by hand too: W = 35, σ = √(10·5·16/12) = 8.165,
    /// z = (35 − 25 − 0.5)/8.165 = 1.1635, p = 2·(1 − Φ(1.1635)) = 0.2446.
    #[test]
    fn p_values_match_the_reference() {
        // (what, A, B, U of A, p)
        type Case<'a> = (&'a str, &'a [f64], &'a [f64], f64, f64);
        let cases: [Case; 5] = [
            (
                "R ?wilcox.test example",
                &[0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46],
                &[1.15, 0.88, 0.90, 0.74, 1.21],
                35.0,
                0.24462360512698333,
            ),
            (
                "completely separated, 5 a side",
                &[1.0, 2.0, 3.0, 4.0, 5.0],
                &[6.0, 7.0, 8.0, 9.0, 10.0],
                0.0,
                0.012185780355344813,
            ),
            (
                "ties across the samples",
                &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0],
                &[2.0, 3.0, 4.0, 4.0, 5.0],
                5.5,
                0.08871369199677616,
            ),
            (
                "interleaved",
                &[10.1, 10.4, 9.8, 10.0, 10.2],
                &[10.3, 9.9, 10.5, 10.6, 10.05],
                8.0,
                0.4033953048926283,
            ),
            (
                "throughput-like, 6 against 5",
                &[51234.1, 50100.0, 52000.0, 51800.5, 50990.2, 51500.0],
                &[48100.2, 47000.0, 49000.0, 50150.0, 48800.7],
                29.0,
                0.01371083007813322,
            ),
        ];
        for (what, a, b, u_a, p) in cases {
            let t = mann_whitney_u(a, b).unwrap();
            assert_eq!(t.u_a, u_a, "{what}: U of A");
            assert_eq!(t.u_a + t.u_b, (a.len() * b.len()) as f64, "{what}");
            assert!(
                close(t.p_value, p, 1e-9),
                "{what}: p = {}, want {p}",
                t.p_value
            );
            // The test is symmetric: swapping the samples swaps the U values, not p.
            let s = mann_whitney_u(b, a).unwrap();
            assert_eq!(s.u_a, t.u_b, "{what}: swapped");
            assert!(close(s.p_value, t.p_value, 1e-12), "{what}: swapped p");
            assert_eq!(s.z, -t.z, "{what}: swapped z");
        }
    }

    #[test]
    fn direction_and_degenerate_samples() {
        let t = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(t.b_tends_larger());
        assert_eq!(t.u(), 0.0);
        assert!(t.z < 0.0);
        // The same sample on both sides: U is exactly n_a·n_b/2, so z = 0 and p = 1.
        let v = [980.0, 1000.0, 1010.0, 1020.0, 990.0];
        let twins = mann_whitney_u(&v, &v).unwrap();
        assert_eq!((twins.u_a, twins.z, twins.p_value), (12.5, 0.0, 1.0));
        let same = mann_whitney_u(&[3.0; 5], &[3.0; 5]).unwrap();
        assert_eq!(same.p_value, 1.0);
        assert_eq!(same.u_a, 12.5);
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        assert!(mann_whitney_u(&[f64::NAN], &[1.0]).is_none());
    }

    #[test]
    fn ranks_average_ties() {
        let (r, t) = ranks(&[10.0, 20.0, 10.0, 30.0, 10.0]);
        assert_eq!(r, vec![2.0, 4.0, 2.0, 5.0, 2.0]);
        assert_eq!(t, 24.0); // one group of 3: 27 − 3
    }
}
