//! The HotSpot performance-counter file (`/tmp/hsperfdata_USER/PID`, "hsperfdata"): a JVM
//! keeps its counters there by default (unless `-XX:-UsePerfData`), the same memory `jstat`
//! reads. [`parse`] reads one snapshot's counters (its doc gives the file's layout); what a run
//! reports from them is docs/contract.md, "GC pauses".
//!
//! The file is read, never trusted: every offset and length is checked against the buffer,
//! and a malformed entry ends the parse with an error naming its index.

use std::collections::BTreeMap;

/// The magic number at the start of the file.
const MAGIC: [u8; 4] = [0xca, 0xfe, 0xc0, 0xc0];
/// Bytes of the prologue that are read.
const PROLOGUE: usize = 32;
/// Bytes of an entry's fixed header.
const ENTRY_HEADER: usize = 20;

/// One counter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A 64-bit integer (`J`).
    Long(i64),
    /// A string (a `B` vector up to its first NUL).
    Text(String),
}

/// What a counter counts (HotSpot's `PerfData::Units`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// No unit (a count of things, or a string).
    None,
    /// Bytes.
    Bytes,
    /// Ticks of the high-resolution clock (`sun.os.hrt.frequency` per second).
    Ticks,
    /// Events.
    Events,
    /// A string.
    String,
    /// Hertz.
    Hertz,
    /// A code this reader does not know.
    Other(u8),
}

impl Units {
    fn of(code: u8) -> Units {
        match code {
            1 => Units::None,
            2 => Units::Bytes,
            3 => Units::Ticks,
            4 => Units::Events,
            5 => Units::String,
            6 => Units::Hertz,
            c => Units::Other(c),
        }
    }
}

/// A counter: its value and units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// The value.
    pub value: Value,
    /// Its units.
    pub units: Units,
}

/// Why a buffer is not a usable hsperfdata file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HsperfError {
    /// Shorter than the prologue, or without the magic number.
    #[error("not a HotSpot performance-counter file (no 0xcafec0c0 magic)")]
    NotHsperf,
    /// A format version this reader does not know.
    #[error("hsperfdata format version {0} is not supported (2 is)")]
    Version(u8),
    /// An entry whose offsets or lengths leave the buffer.
    #[error("hsperfdata entry {0} is malformed")]
    Entry(usize),
}

/// The counters of one snapshot of the file, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every counter read.
    pub counters: BTreeMap<String, Counter>,
}

impl Snapshot {
    /// An integer counter's value.
    pub(crate) fn long(&self, name: &str) -> Option<i64> {
        match self.counters.get(name)?.value {
            Value::Long(v) => Some(v),
            Value::Text(_) => None,
        }
    }

    /// A string counter's value.
    pub fn text(&self, name: &str) -> Option<&str> {
        match &self.counters.get(name)?.value {
            Value::Text(s) => Some(s),
            Value::Long(_) => None,
        }
    }

    /// A tick counter in seconds (`sun.os.hrt.frequency` ticks per second).
    pub fn seconds(&self, name: &str) -> Option<f64> {
        let hz = self.long("sun.os.hrt.frequency").filter(|f| *f > 0)?;
        Some(self.long(name)? as f64 / hz as f64)
    }
}

/// Reads the counters of an hsperfdata file's bytes.
///
/// Layout (HotSpot `perfMemory.hpp`, format version 2): a prologue — magic `0xcafec0c0`
/// (big-endian bytes), byte order (1: little-endian), major and minor version, accessible flag,
/// used and overflow sizes, a modification time stamp, the offset of the first entry and the
/// number of entries — then entries, each with its length, the offsets of its NUL-terminated
/// name and of its data (from the entry's start), a vector length (0 for a scalar), a type
/// (`J`: 64-bit integer, `B`: bytes, a string when a vector) and units (ticks convert to
/// seconds with `sun.os.hrt.frequency`: [`Snapshot::seconds`]).
pub fn parse(buf: &[u8]) -> Result<Snapshot, HsperfError> {
    if buf.len() < PROLOGUE || buf[..4] != MAGIC {
        return Err(HsperfError::NotHsperf);
    }
    let little = buf[4] == 1;
    if buf[5] != 2 {
        return Err(HsperfError::Version(buf[5]));
    }
    let r = Reader { buf, little };
    let first = r.u32(24).ok_or(HsperfError::NotHsperf)? as usize;
    let count = r.u32(28).ok_or(HsperfError::NotHsperf)? as usize;
    let mut snapshot = Snapshot::default();
    let mut at = first;
    for k in 0..count {
        let (name, counter, len) = r.entry(at).ok_or(HsperfError::Entry(k))?;
        snapshot.counters.insert(name, counter);
        at = at.checked_add(len).ok_or(HsperfError::Entry(k))?;
    }
    Ok(snapshot)
}

struct Reader<'a> {
    buf: &'a [u8],
    little: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.buf.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u32(&self, at: usize) -> Option<u32> {
        let b = self.bytes::<4>(at)?;
        Some(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    fn i64(&self, at: usize) -> Option<i64> {
        let b = self.bytes::<8>(at)?;
        Some(if self.little {
            i64::from_le_bytes(b)
        } else {
            i64::from_be_bytes(b)
        })
    }

    /// The entry at `at`: its name, counter and length.
    fn entry(&self, at: usize) -> Option<(String, Counter, usize)> {
        let len = self.u32(at)? as usize;
        if len < ENTRY_HEADER || at.checked_add(len)? > self.buf.len() {
            return None;
        }
        let entry = &self.buf[at..at + len];
        let name_at = self.u32(at + 4)? as usize;
        let vector = self.u32(at + 8)? as usize;
        let (kind, units) = (entry[12], Units::of(entry[14]));
        let data_at = self.u32(at + 16)? as usize;
        let name = entry.get(name_at..)?;
        let name = &name[..name.iter().position(|b| *b == 0)?];
        let name = std::str::from_utf8(name).ok()?.to_string();
        let value = match (kind, vector) {
            (b'J', 0) => Value::Long(self.i64(at + data_at)?),
            (b'B', n) if n > 0 => {
                let raw = entry.get(data_at..data_at.checked_add(n)?)?;
                let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
                Value::Text(String::from_utf8_lossy(&raw[..end]).into_owned())
            }
            // Other vectors (none in HotSpot's GC counters) are kept as their length.
            (_, n) => Value::Long(n as i64),
        };
        Some((name, Counter { value, units }, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JDK 17 G1 JVM's file (`java -Xmx64m -XX:+UseG1GC`, after allocating 200 MB in 1 KiB
    /// arrays and one `System.gc()`), copied from `/tmp/hsperfdata_root/PID`.
    const JDK17_G1: &[u8] = include_bytes!("../../../../tests/fixtures/gc/hsperfdata-jdk17-g1.bin");

    #[test]
    fn a_jdk17_g1_file_gives_its_gc_counters() {
        let s = parse(JDK17_G1).unwrap();
        assert!(s.counters.len() > 100, "{}", s.counters.len());
        assert_eq!(
            s.text("sun.gc.collector.0.name"),
            Some("G1 young collection pauses")
        );
        let young = s.long("sun.gc.collector.0.invocations").unwrap();
        let full = s.long("sun.gc.collector.1.invocations").unwrap();
        assert!(young >= 1 && full >= 1, "young {young}, full {full}");
        let t = s.seconds("sun.gc.collector.0.time").unwrap();
        assert!(t > 0.0 && t < 10.0, "{t}");
        assert_eq!(
            s.counters["sun.gc.collector.0.time"].units,
            Units::Ticks,
            "GC time is in ticks"
        );
        assert!(s.long("sun.os.hrt.frequency").unwrap() > 0);
        assert!(s
            .text("java.property.java.vm.version")
            .is_some_and(|v| v.starts_with("17")));
    }

    #[test]
    fn a_damaged_file_is_refused_without_a_panic() {
        assert_eq!(parse(b"GIF89a"), Err(HsperfError::NotHsperf));
        let mut v = JDK17_G1.to_vec();
        v[5] = 3;
        assert_eq!(parse(&v), Err(HsperfError::Version(3)));
        // Every truncation and every corrupted byte of the prologue and the first entries
        // ends in a value or an error.
        for cut in (0..JDK17_G1.len()).step_by(97) {
            let _ = parse(&JDK17_G1[..cut]);
        }
        for i in 0..512 {
            let mut v = JDK17_G1.to_vec();
            v[i] ^= 0xff;
            let _ = parse(&v);
        }
    }
}
