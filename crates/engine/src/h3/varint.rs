//! QUIC variable-length integers (RFC 9000 §16): the two high bits of the first byte give
//! the length (1, 2, 4 or 8 bytes), the rest is the value, big-endian, up to 2^62 − 1.
//! HTTP/3 writes frame types, lengths, stream types and settings with them.

/// The largest value a variable-length integer holds (2^62 − 1).
pub const MAX: u64 = (1 << 62) - 1;

/// A value over [`MAX`]: it has no encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} is over 2^62 - 1, the largest QUIC variable-length integer")]
pub struct TooLarge(pub u64);

/// How many bytes `v` takes (its shortest encoding), or `None` over [`MAX`].
pub fn len(v: u64) -> Option<usize> {
    match v {
        0..=0x3f => Some(1),
        0x40..=0x3fff => Some(2),
        0x4000..=0x3fff_ffff => Some(4),
        0x4000_0000..=MAX => Some(8),
        _ => None,
    }
}

/// Appends the shortest encoding of `v`.
pub fn encode(v: u64, out: &mut Vec<u8>) -> Result<(), TooLarge> {
    match len(v).ok_or(TooLarge(v))? {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
    Ok(())
}

/// Appends `v`, which the caller knows fits: a constant, a clamped value, or the length of
/// something held in memory (no slice reaches 2^62 bytes: no 64-bit target addresses more
/// than 2^57).
pub(crate) fn put(v: u64, out: &mut Vec<u8>) {
    let fits = encode(v, out);
    debug_assert!(fits.is_ok(), "{v} does not fit");
}

/// The integer at the start of `b` and how many bytes it took, or `None` when `b` ends
/// before it does (every first byte starts a valid integer).
pub fn decode(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let n = 1usize << (first >> 6);
    let bytes = b.get(..n)?;
    let v = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &x| (v << 8) | u64::from(x));
    Some((v, n))
}

/// Takes the integer at the start of `b` off it (`None`: `b` ends first, and is left as it
/// was).
pub fn take(b: &mut &[u8]) -> Option<u64> {
    let (v, n) = decode(b)?;
    *b = &b[n..];
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_9000_sample_encodings() {
        // RFC 9000 Appendix A.1.
        let samples: [(&[u8], u64); 5] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37), // not the shortest, still valid
        ];
        for (bytes, v) in samples {
            assert_eq!(decode(bytes), Some((v, bytes.len())));
        }
        for (bytes, v) in &samples[..4] {
            let mut out = Vec::new();
            encode(*v, &mut out).unwrap();
            assert_eq!(out, *bytes);
        }
    }

    #[test]
    fn round_trips_at_every_boundary_and_refuses_what_does_not_fit() {
        for v in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, MAX] {
            let mut out = Vec::new();
            encode(v, &mut out).unwrap();
            assert_eq!(Some(out.len()), len(v));
            assert_eq!(decode(&out), Some((v, out.len())));
            // Every shorter prefix is incomplete, not wrong.
            for cut in 0..out.len() {
                assert_eq!(decode(&out[..cut]), None);
            }
        }
        let mut out = Vec::new();
        assert_eq!(encode(MAX + 1, &mut out), Err(TooLarge(MAX + 1)));
        assert!(out.is_empty());
        let mut b: &[u8] = &[0x40];
        assert_eq!(take(&mut b), None);
        assert_eq!(b, [0x40]);
    }
}
