//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B), decoded by hand four bits at a time:
//! a table built once from the code (the states are the inner nodes of the code's tree, 256
//! of them) gives, for a state and the next four bits, the state after them and the symbol they
//! completed, if any (a code is at least 5 bits long, so at most one). loona-hpack's decoder
//! hashes at every bit, and a bit at a time over per-length tables cost 15 % of a client's CPU
//! against nginx over HTTP/2 (BENCHMARKS.md, "HPACK decoding by hand"). Symbol 256 is EOS,
//! which a string must not hold.

use std::sync::OnceLock;

/// Inner nodes of the code's tree (257 leaves).
const STATES: usize = 256;

/// What four bits do from a state.
#[derive(Clone, Copy, Default)]
struct Step {
    /// The state after them.
    next: u8,
    /// The symbol they completed (`EMITS`), or a code that is not one (`FAILS`: EOS).
    flags: u8,
    symbol: u8,
}

const EMITS: u8 = 1;
const FAILS: u8 = 2;

struct Table {
    steps: Vec<Step>,
    /// Whether a string may end in the state: no bits pending, or at most 7 bits, all ones
    /// (the start of EOS, the padding).
    may_end: [bool; STATES],
}

/// The code's tree: inner nodes with their children (a child is an inner node or a leaf).
#[derive(Clone, Copy)]
enum Child {
    Node(u8),
    Leaf(u16),
    None,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build)
}

fn build() -> Table {
    // The tree: node 0 is the root.
    let mut nodes: Vec<[Child; 2]> = vec![[Child::None; 2]];
    let mut depth_ones: Vec<Option<u8>> = vec![Some(0)];
    for (symbol, &(code, len)) in CODE.iter().enumerate() {
        let mut at = 0usize;
        for k in (0..len).rev() {
            let bit = ((code >> k) & 1) as usize;
            if k == 0 {
                nodes[at][bit] = Child::Leaf(symbol as u16);
                break;
            }
            at = match nodes[at][bit] {
                Child::Node(n) => n as usize,
                _ => {
                    let n = nodes.len();
                    nodes.push([Child::None; 2]);
                    let ones = depth_ones[at].filter(|_| bit == 1).map(|d| d + 1);
                    depth_ones.push(ones);
                    nodes[at][bit] = Child::Node(n as u8);
                    n
                }
            };
        }
    }
    debug_assert_eq!(nodes.len(), STATES);
    let mut steps = vec![Step::default(); STATES * 16];
    for state in 0..STATES {
        for nibble in 0..16u8 {
            let mut step = Step::default();
            let mut at = state;
            for k in (0..4).rev() {
                match nodes[at][usize::from((nibble >> k) & 1)] {
                    Child::Node(n) => at = n as usize,
                    Child::Leaf(256) | Child::None => {
                        step.flags = FAILS;
                        break;
                    }
                    Child::Leaf(symbol) => {
                        step.flags = EMITS;
                        step.symbol = symbol as u8;
                        at = 0;
                    }
                }
            }
            step.next = at as u8;
            steps[state * 16 + usize::from(nibble)] = step;
        }
    }
    let mut may_end = [false; STATES];
    for (state, ones) in depth_ones.iter().enumerate() {
        may_end[state] = ones.is_some_and(|d| d <= 7);
    }
    Table { steps, may_end }
}

/// Appends the octets `bytes` code to `out`; `Err` for a code that is not one (EOS in the
/// string, a padding longer than 7 bits or not EOS's first bits).
pub(super) fn decode(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), ()> {
    let t = table();
    let mut state = 0usize;
    out.reserve(bytes.len() * 8 / 5);
    for &byte in bytes {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = t.steps[state * 16 + usize::from(nibble)];
            if step.flags & FAILS != 0 {
                return Err(());
            }
            if step.flags & EMITS != 0 {
                out.push(step.symbol);
            }
            state = usize::from(step.next);
        }
    }
    if t.may_end[state] {
        Ok(())
    } else {
        Err(())
    }
}

/// Each symbol's code and its length in bits (RFC 7541 Appendix B), symbols 0 to 256.
const CODE: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_decodes_as_the_reference_decodes_it() {
        let mut reference = loona_hpack::huffman::HuffmanDecoder::new();
        for (symbol, &(code, len)) in CODE.iter().enumerate().take(256) {
            // The code, then ones to the byte's end (EOS's first bits).
            let pad = (8 - len as u32 % 8) % 8;
            let bits = (u64::from(code) << pad) | ((1u64 << pad) - 1);
            let n = (len as u32 + pad) / 8;
            let bytes: Vec<u8> = (0..n).rev().map(|k| (bits >> (8 * k)) as u8).collect();
            let mut out = Vec::new();
            decode(&bytes, &mut out).unwrap();
            assert_eq!(out, [symbol as u8], "symbol {symbol}");
            assert_eq!(reference.decode(&bytes).unwrap(), out);
        }
        // "www.example.com" (RFC 7541 C.4.1).
        let mut out = Vec::new();
        decode(
            b"\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff",
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"www.example.com");
        for bad in [&b"\xff\xff\xff\xff"[..], b"\x00"] {
            assert!(decode(bad, &mut Vec::new()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn random_strings_decode_as_the_reference_decodes_them() {
        // Valid strings (symbols coded, then padded) and arbitrary bytes (mostly not a
        // code): the same text, or both refuse.
        let mut reference = loona_hpack::huffman::HuffmanDecoder::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..20_000 {
            let bytes: Vec<u8> = if round % 2 == 0 {
                let (mut bits, mut n) = (Vec::new(), 0u32);
                for _ in 0..next() % 12 {
                    let (code, len) = CODE[(next() % 256) as usize];
                    for k in (0..len).rev() {
                        bits.push((code >> k) & 1 == 1);
                    }
                    n += u32::from(len);
                }
                while n % 8 != 0 {
                    bits.push(true);
                    n += 1;
                }
                bits.chunks(8)
                    .map(|c| c.iter().fold(0u8, |b, &one| (b << 1) | u8::from(one)))
                    .collect()
            } else {
                (0..next() % 9).map(|_| next() as u8).collect()
            };
            let mut out = Vec::new();
            let ours = decode(&bytes, &mut out).map(|()| out);
            let theirs = reference.decode(&bytes).map_err(|_| ());
            assert_eq!(ours, theirs, "{bytes:02x?}");
        }
    }
}
