//! HPACK decoding of a response's header block (RFC 7541), by hand on the hot path:
//! loona-hpack's decoder builds its Huffman decoder — two hash maps of the 257 codes — for
//! every Huffman-coded string, and nginx codes every value so (`server`, `date`,
//! `content-type`, `content-length`): four maps per response were 80 % of a request's client
//! CPU. Here a value is decoded only where it is read (the caller's `want`: `:status`,
//! `content-length`, the fields checks read) or where it enters the dynamic table (whose sizes
//! are the decoded ones), by a Huffman decoder of volley's own (`huffman`); a value that is skipped
//! counts towards the header list's bound at the most its code can hold (8 ÷ 5 of its bytes).

mod huffman;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

/// Why a header block does not decode (a COMPRESSION_ERROR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HpackError {
    /// An integer or a string runs past the block.
    Truncated,
    /// An index that names no entry (0, or past the dynamic table).
    BadIndex(u64),
    /// A dynamic table size update above what volley allows.
    TableTooLarge(u64),
    /// A Huffman code that is not one (padding, EOS).
    Huffman,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpackError::Truncated => f.write_str("an integer or string runs past the block"),
            HpackError::BadIndex(i) => write!(f, "index {i} names no table entry"),
            HpackError::TableTooLarge(n) => {
                write!(
                    f,
                    "a dynamic table size update to {n} bytes, above the size allowed"
                )
            }
            HpackError::Huffman => f.write_str("a string's Huffman code is invalid"),
        }
    }
}

/// One connection's decoding state: its dynamic table (newest first).
pub struct Hpack {
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The entries' size (RFC 7541 §4.1: name and value lengths plus 32 each).
    size: usize,
    /// The table's maximum size, as the server last set it.
    max: usize,
    /// The largest maximum the server may set (what volley's SETTINGS allow).
    allowed: usize,
    /// A wanted value that is not indexed, while its field is handed on.
    scratch: Vec<u8>,
    /// Evicted entries' buffers, reused by the next entries: a server that indexes a field of
    /// every response (nginx indexes `server`, `date`, `content-type` and `content-length`
    /// each time) costs no allocation once the table is full.
    spare: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Evicted entries kept for reuse at most.
const SPARE: usize = 16;

impl fmt::Debug for Hpack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hpack")
            .field("entries", &self.table.len())
            .field("size", &self.size)
            .field("max", &self.max)
            .finish()
    }
}

/// A string of a block: its bytes as sent and whether they are Huffman-coded.
struct Raw<'b> {
    bytes: &'b [u8],
    huffman: bool,
}

impl Hpack {
    /// A decoder whose dynamic table may grow to `allowed` bytes (its size at the start).
    pub fn new(allowed: usize) -> Self {
        Hpack {
            table: VecDeque::new(),
            size: 0,
            max: allowed,
            allowed,
            scratch: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Decodes `block`: `field(name, value, size)` for each field, its value only where
    /// `want(name)` (else `None`), `size` its name and value lengths (the value's at most,
    /// when it was not decoded). The table is kept in step whatever is wanted.
    pub fn decode(
        &mut self,
        block: &[u8],
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], Option<&[u8]>, usize),
    ) -> Result<(), HpackError> {
        let mut i = 0;
        while i < block.len() {
            let b = &block[i..];
            let o = b[0];
            if o & 0x80 != 0 {
                let (index, n) = int(b, 7).ok_or(HpackError::Truncated)?;
                i += n;
                let (name, value) = self.entry(index)?;
                let shown = want(name).then_some(value);
                field(name, shown, name.len() + value.len());
            } else if o & 0x20 != 0 && o & 0x40 == 0 {
                let (size, n) = int(b, 5).ok_or(HpackError::Truncated)?;
                i += n;
                self.resize(size)?;
            } else {
                let indexed = o & 0x40 != 0;
                i += self.literal(b, indexed, &want, &mut field)?;
            }
        }
        Ok(())
    }

    /// A literal field at the start of `b` (with incremental indexing when `indexed`): its
    /// length in the block. Nothing is allocated for a field that is neither indexed nor has
    /// a name of its own: its name is the static table's, its value (when wanted) decoded into
    /// the decoder's scratch.
    fn literal(
        &mut self,
        b: &[u8],
        indexed: bool,
        want: &impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], Option<&[u8]>, usize),
    ) -> Result<usize, HpackError> {
        let (index, mut at) = int(b, if indexed { 6 } else { 4 }).ok_or(HpackError::Truncated)?;
        let name: Cow<'static, [u8]> = match index {
            0 => {
                let (raw, n) = string(&b[at..])?;
                at += n;
                let mut name = Vec::new();
                text(&raw, &mut name)?;
                Cow::Owned(name)
            }
            1..=61 => Cow::Borrowed(STATIC[index as usize - 1].0.as_bytes()),
            _ => Cow::Owned(self.entry(index)?.0.to_vec()),
        };
        let (raw, n) = string(&b[at..])?;
        at += n;
        let wanted = want(&name);
        if indexed {
            let (mut entry_name, mut value) = self.spare.pop().unwrap_or_default();
            entry_name.clear();
            entry_name.extend_from_slice(&name);
            value.clear();
            text(&raw, &mut value)?;
            field(
                &name,
                wanted.then_some(&value[..]),
                name.len() + value.len(),
            );
            self.insert(entry_name, value);
        } else if wanted {
            let mut value = std::mem::take(&mut self.scratch);
            value.clear();
            let r = text(&raw, &mut value);
            if r.is_ok() {
                field(&name, Some(&value[..]), name.len() + value.len());
            }
            self.scratch = value;
            r?;
        } else {
            let most = if raw.huffman {
                raw.bytes.len() * 8 / 5
            } else {
                raw.bytes.len()
            };
            field(&name, None, name.len() + most);
        }
        Ok(at)
    }

    /// Entry `index` of the static table, then the dynamic one.
    fn entry(&self, index: u64) -> Result<(&[u8], &[u8]), HpackError> {
        let bad = HpackError::BadIndex(index);
        let i = usize::try_from(index).map_err(|_| bad.clone())?;
        match i {
            0 => Err(bad),
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(i - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(bad),
        }
    }

    /// A dynamic table size update to `size`.
    fn resize(&mut self, size: u64) -> Result<(), HpackError> {
        let s = usize::try_from(size)
            .ok()
            .filter(|s| *s <= self.allowed)
            .ok_or(HpackError::TableTooLarge(size))?;
        self.max = s;
        self.evict(0);
        Ok(())
    }

    /// Adds an entry, evicting the oldest ones to make room (one larger than the table
    /// empties it and is not added, RFC 7541 §4.4).
    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + 32;
        if size > self.max {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front((name, value));
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + 32;
            if self.spare.len() < SPARE {
                self.spare.push((n, v));
            }
        }
    }
}

/// A string's octets, appended to `out`.
fn text(raw: &Raw, out: &mut Vec<u8>) -> Result<(), HpackError> {
    if raw.huffman {
        huffman::decode(raw.bytes, out).map_err(|()| HpackError::Huffman)
    } else {
        out.extend_from_slice(raw.bytes);
        Ok(())
    }
}

/// An HPACK integer with a `prefix`-bit prefix: its value and length (at most 5 bytes).
pub(crate) fn int(b: &[u8], prefix: u32) -> Option<(u64, usize)> {
    let mask = (1u64 << prefix) - 1;
    let first = u64::from(*b.first()?) & mask;
    if first < mask {
        return Some((first, 1));
    }
    let mut value = first;
    for (k, byte) in b.iter().enumerate().skip(1).take(4) {
        value += u64::from(byte & 0x7f) << (7 * (k - 1));
        if byte & 0x80 == 0 {
            return Some((value, k + 1));
        }
    }
    None
}

/// The string literal at the start of `b`, and its length in the block.
fn string(b: &[u8]) -> Result<(Raw<'_>, usize), HpackError> {
    let (len, n) = int(b, 7).ok_or(HpackError::Truncated)?;
    let len = usize::try_from(len).map_err(|_| HpackError::Truncated)?;
    let bytes = b.get(n..n + len).ok_or(HpackError::Truncated)?;
    let huffman = b.first().is_some_and(|o| o & 0x80 != 0);
    Ok((Raw { bytes, huffman }, n + len))
}

/// The static table (RFC 7541 Appendix A), from index 1.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of `block` decoded by loona-hpack's decoder (the reference).
    fn reference(d: &mut loona_hpack::Decoder, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        d.decode(block).expect("the reference decodes it")
    }

    /// Every field of `block` decoded here, every value wanted.
    fn ours(h: &mut Hpack, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        h.decode(
            block,
            |_| true,
            |n, v, _| out.push((n.to_vec(), v.unwrap().to_vec())),
        )
        .unwrap();
        out
    }

    #[test]
    fn every_static_entry_is_the_references() {
        let mut d = loona_hpack::Decoder::new();
        let mut h = Hpack::new(4096);
        for k in 1..=61u8 {
            let block = [0x80 | k];
            assert_eq!(ours(&mut h, &block), reference(&mut d, &block), "index {k}");
        }
    }

    #[test]
    fn rfc_7541_c4_huffman_requests_share_a_dynamic_table() {
        // RFC 7541 C.4.1–C.4.3: three requests, Huffman-coded, with incremental indexing.
        let blocks = [
            &b"\x82\x86\x84\x41\x8c\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff"[..],
            &b"\x82\x86\x84\xbe\x58\x86\xa8\xeb\x10\x64\x9c\xbf"[..],
            &b"\x82\x87\x85\xbf\x40\x88\x25\xa8\x49\xe9\x5b\xa9\x7d\x7f\x89\x25\xa8\x49\xe9\x5b\xb8\xe8\xb4\xbf"[..],
        ];
        let mut d = loona_hpack::Decoder::new();
        let mut h = Hpack::new(4096);
        for b in blocks {
            assert_eq!(ours(&mut h, b), reference(&mut d, b));
        }
        assert_eq!(h.size, 164, "C.4.3's table size");
        let first = ours(&mut Hpack::new(4096), blocks[0]);
        assert_eq!(
            first[3],
            (b":authority".to_vec(), b"www.example.com".to_vec())
        );
    }

    #[test]
    fn encoded_lists_decode_as_the_reference_decodes_them_with_eviction() {
        let mut enc = loona_hpack::Encoder::new();
        let mut d = loona_hpack::Decoder::new();
        let mut h = Hpack::new(4096);
        // The table fills past its 4,096 bytes: entries are evicted as the lists go.
        for k in 0..200u32 {
            let value = format!("value-{}", k * 7919 % 1000).repeat((k % 5) as usize + 1);
            let list = vec![
                (&b":status"[..], &b"200"[..]),
                (b"x-custom", value.as_bytes()),
                (b"content-length", b"1"),
            ];
            let block = enc.encode(list);
            assert_eq!(ours(&mut h, &block), reference(&mut d, &block), "list {k}");
            assert!(h.size <= 4096);
        }
    }

    #[test]
    fn an_unwanted_value_is_not_decoded_and_bad_blocks_are_named() {
        // nginx's way: `server` by static name, its value Huffman-coded, without indexing.
        let block = b"\x88\x0f\x27\x86\xaa\x69\xd2\x9a\xfd\x7f";
        let mut h = Hpack::new(4096);
        let mut seen = Vec::new();
        h.decode(
            block,
            |n| n == b":status",
            |n, v, size| seen.push((n.to_vec(), v.map(<[u8]>::to_vec), size)),
        )
        .unwrap();
        assert_eq!(seen[0], (b":status".to_vec(), Some(b"200".to_vec()), 10));
        assert_eq!(
            (&seen[1].0[..], seen[1].1.is_none()),
            (&b"server"[..], true)
        );
        assert_eq!(seen[1].2, 6 + 6 * 8 / 5, "at most what its code can hold");
        let mut h = Hpack::new(4096);
        let cases: [(&[u8], HpackError); 4] = [
            (b"\x80", HpackError::BadIndex(0)),
            (b"\xbe", HpackError::BadIndex(62)),
            (b"\x0f\x27\x86\xaa", HpackError::Truncated),
            (b"\x3f\xe2\x1f", HpackError::TableTooLarge(4097)),
        ];
        for (block, e) in cases {
            assert_eq!(h.decode(block, |_| true, |_, _, _| {}), Err(e), "{block:?}");
        }
    }

    #[test]
    fn random_blocks_never_panic_and_decode_as_the_reference_where_both_do() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut h, mut d) = (Hpack::new(4096), loona_hpack::Decoder::new());
        for _ in 0..20_000 {
            let n = (next() % 24) as usize;
            let block: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            let mut mine = Vec::new();
            let r = h.decode(
                &block,
                |_| true,
                |n, v, _| mine.push((n.to_vec(), v.unwrap_or_default().to_vec())),
            );
            match (r, d.decode(&block)) {
                (Ok(()), Ok(theirs)) => assert_eq!(mine, theirs, "{block:x?}"),
                // Once one fails, the tables may differ: start both again.
                _ => (h, d) = (Hpack::new(4096), loona_hpack::Decoder::new()),
            }
        }
    }
}
