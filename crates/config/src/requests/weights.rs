//! Weights as written (`80`, `0.8`) turned into the whole numbers of the weighted cycle: scaled
//! by the smallest power of ten that makes every one whole (at most 10^3), then divided by
//! their greatest common divisor, so the cycle is as short as the shares allow.

/// The longest weighted cycle (Σ weights): the cycle holds one entry index per request of it.
pub const MAX_CYCLE: u64 = 1_000_000;

/// Most decimals a weight may have (10^3 is the largest scale).
const MAX_DECIMALS: u32 = 3;

/// Weights that cannot make a cycle.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum WeightError {
    /// Weight `index` has more than three decimals.
    Decimals {
        /// Its index in the list.
        index: usize,
    },
    /// The whole numbers add up to more than [`MAX_CYCLE`].
    TooLong {
        /// Σ of the whole weights.
        total: u128,
        /// The index of the largest weight.
        largest: usize,
    },
}

/// The whole weights of `weights` (each finite and above 0, checked by the caller).
pub(super) fn whole(weights: &[f64]) -> Result<Vec<u64>, WeightError> {
    let largest = weights
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i);
    let scale = (0..=MAX_DECIMALS)
        .map(|p| 10f64.powi(p as i32))
        .find(|s| weights.iter().all(|w| is_whole(w * s)));
    let Some(scale) = scale else {
        let s = 10f64.powi(MAX_DECIMALS as i32);
        let index = weights.iter().position(|w| !is_whole(w * s)).unwrap_or(0);
        return Err(WeightError::Decimals { index });
    };
    let too_long = |total: u128| WeightError::TooLong { total, largest };
    let mut scaled = Vec::with_capacity(weights.len());
    for w in weights {
        let x = (w * scale).round();
        // Above 2^63 a weight alone is far past any cycle.
        if x >= 9.2e18 {
            return Err(too_long(u128::MAX));
        }
        scaled.push(x as u64);
    }
    let g = scaled.iter().fold(0, |g, &w| gcd(g, w)).max(1);
    for w in &mut scaled {
        *w /= g;
    }
    let total: u128 = scaled.iter().map(|&w| w as u128).sum();
    if total > MAX_CYCLE as u128 {
        return Err(too_long(total));
    }
    Ok(scaled)
}

/// Whether `x` is a whole number, allowing for the binary rounding of decimals (0.15 × 100 is
/// 15.000000000000002).
fn is_whole(x: f64) -> bool {
    (x - x.round()).abs() <= 1e-9 * x.abs().max(1.0)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_scale_to_whole_numbers_and_common_factors_go() {
        // 0.8/0.15/0.05 is 80/15/5 at 10^2, which holds the same shares as 16/3/1.
        assert_eq!(whole(&[0.8, 0.15, 0.05]).unwrap(), [16, 3, 1]);
        assert_eq!(whole(&[0.8, 0.15, 0.04]).unwrap(), [80, 15, 4]);
        assert_eq!(whole(&[80.0, 15.0, 5.0]).unwrap(), [16, 3, 1]);
        assert_eq!(whole(&[1.0]).unwrap(), [1]);
        assert_eq!(whole(&[3.0, 3.0]).unwrap(), [1, 1]);
        assert_eq!(whole(&[0.001, 1.0]).unwrap(), [1, 1000]);
        assert_eq!(whole(&[2.5, 1.0]).unwrap(), [5, 2]);
        assert_eq!(whole(&[1.0; 100_000]).unwrap().len(), 100_000);
    }

    #[test]
    fn too_many_decimals_or_a_cycle_too_long_are_refused() {
        assert_eq!(
            whole(&[1.0, 0.0005]),
            Err(WeightError::Decimals { index: 1 })
        );
        assert_eq!(
            whole(&[999_999.0, 2.0, 1.0]),
            Err(WeightError::TooLong {
                total: 1_000_002,
                largest: 0
            })
        );
        assert_eq!(whole(&[999_999.0, 1.0]).unwrap(), [999_999, 1]);
        assert!(matches!(
            whole(&[1.0, 1e300]),
            Err(WeightError::TooLong { largest: 1, .. })
        ));
        assert!(matches!(
            whole(&[0.001, 2000.0]),
            Err(WeightError::TooLong {
                total: 2_000_001,
                ..
            })
        ));
    }
}
