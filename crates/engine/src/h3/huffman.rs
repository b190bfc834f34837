//! The HPACK Huffman code (RFC 7541 Appendix B), which QPACK string literals use too
//! (RFC 9204 §4.1.2), decoding only: the client writes its strings raw.
//!
//! loona-hpack exposes its Huffman decoder, but it builds two levels of hash maps for every
//! decoder (its HPACK decoder builds one per string) and looks each bit up in them. The code
//! is canonical (codes of one length are consecutive, in symbol order), so the code lengths
//! alone give a decoder of a few arrays, built at compile time; a test checks every symbol
//! against loona-hpack's decoder.

/// The code length of each symbol, 256 being EOS (RFC 7541 Appendix B).
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    30,
];

/// The longest code.
const MAX_LEN: usize = 30;

/// The EOS symbol: never in a string.
const EOS: u16 = 256;

/// The canonical code's tables, per code length: the first code, how many codes, and where
/// their symbols start in `symbols` (sorted by length, then symbol).
struct Table {
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u16; MAX_LEN + 1],
    symbols: [u16; 257],
}

const fn build() -> Table {
    let mut count = [0u32; MAX_LEN + 1];
    let mut s = 0;
    while s < LENGTHS.len() {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; MAX_LEN + 1];
    let mut offset = [0u16; MAX_LEN + 1];
    let (mut code, mut at, mut len) = (0u32, 0u16, 1);
    while len <= MAX_LEN {
        code = (code + count[len - 1]) << 1;
        first[len] = code;
        offset[len] = at;
        at += count[len] as u16;
        len += 1;
    }
    let mut next = offset;
    let mut symbols = [0u16; 257];
    let mut s = 0;
    while s < LENGTHS.len() {
        let len = LENGTHS[s] as usize;
        symbols[next[len] as usize] = s as u16;
        next[len] += 1;
        s += 1;
    }
    Table {
        first,
        count,
        offset,
        symbols,
    }
}

static TABLE: Table = build();

/// Why a Huffman-coded string does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HuffmanError {
    /// The EOS symbol inside the string.
    #[error("EOS inside a Huffman-coded string")]
    Eos,
    /// Padding longer than 7 bits, or not the high bits of EOS (all ones).
    #[error("a Huffman-coded string padded wrongly")]
    Padding,
}

/// Appends the decoding of `src` to `out` (at most 8/5 of `src.len()` bytes: the shortest
/// code takes 5 bits).
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    out.reserve(src.len() * 8 / 5);
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in src {
        for bit in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> bit) & 1);
            len += 1;
            let i = code.wrapping_sub(TABLE.first[len]);
            if i < TABLE.count[len] {
                let symbol = TABLE.symbols[usize::from(TABLE.offset[len]) + i as usize];
                if symbol == EOS {
                    return Err(HuffmanError::Eos);
                }
                out.push(symbol as u8);
                (code, len) = (0, 0);
            }
            // The code is complete: every 30 bits end a code, so `len` stays within bounds.
        }
    }
    if len > 7 || code != (1 << len) - 1 {
        return Err(HuffmanError::Padding);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    /// The code of `symbol`, from the tables.
    fn code_of(symbol: u16) -> (u32, usize) {
        let len = usize::from(LENGTHS[usize::from(symbol)]);
        let from = usize::from(TABLE.offset[len]);
        let rank = TABLE.symbols[from..]
            .iter()
            .position(|&s| s == symbol)
            .unwrap();
        (TABLE.first[len] + rank as u32, len)
    }

    /// `symbols` coded, padded with ones.
    fn encoded(symbols: &[u16]) -> Vec<u8> {
        let (mut acc, mut bits, mut out) = (0u64, 0, Vec::new());
        for &s in symbols {
            let (code, len) = code_of(s);
            acc = (acc << len) | u64::from(code);
            bits += len;
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) as u8);
        }
        out
    }

    #[test]
    fn rfc_7541_examples() {
        // RFC 7541 C.4.1 and C.6.1.
        let www = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        assert_eq!(decoded(&www).unwrap(), b"www.example.com");
        assert_eq!(decoded(&[0x64, 0x02]).unwrap(), b"302");
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn every_symbol_matches_loona_hpack() {
        let mut theirs = loona_hpack::huffman::HuffmanDecoder::new();
        for s in 0..256u16 {
            let bytes = encoded(&[s, s, b'a'.into(), s]);
            let expected = theirs.decode(&bytes).unwrap();
            assert_eq!(expected, [s as u8, s as u8, b'a', s as u8]);
            assert_eq!(decoded(&bytes).unwrap(), expected, "symbol {s}");
        }
        assert_eq!(code_of(EOS), (0x3fff_ffff, 30));
    }

    #[test]
    fn malformed_strings() {
        // EOS coded in full.
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xfc]), Err(HuffmanError::Eos));
        // 8 bits of padding.
        let mut a = encoded(&[u16::from(b'a')]);
        assert_eq!(decoded(&a).unwrap(), b"a");
        a.push(0xff);
        assert_eq!(decoded(&a), Err(HuffmanError::Padding));
        // Padding of zeros: '0' is 00000, so 0x00 is '0' and 3 zero bits.
        assert_eq!(decoded(&[0x00]), Err(HuffmanError::Padding));
    }
}
