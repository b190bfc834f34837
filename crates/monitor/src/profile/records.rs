//! The perf ring buffer's records the profiler asks for, parsed from their bytes (pure):
//! samples (`IP | TID | TIME | CPU | PERIOD | CALLCHAIN | REGS_USER | STACK_USER`), executable mappings (`MMAP2`), command
//! names (`COMM`), process creation (`FORK`), lost records (`LOST`) and, for the off-CPU view,
//! context switches (`SWITCH`, and `SWITCH_CPU_WIDE` of the on-CPU event, which times each
//! sample's share of a late timer). Layouts are the kernel's `include/uapi/linux/perf_event.h`;
//! side records carry the `sample_id_all` trailer (`pid tid, time, cpu`) after their body.
//! Every read is bounds-checked: a short or odd record is skipped, never a panic.

/// `PERF_SAMPLE_*` bits of the samples the profiler opens.
pub(crate) const SAMPLE_TYPE: u64 = SAMPLE_IP
    | SAMPLE_TID
    | SAMPLE_TIME
    | SAMPLE_CALLCHAIN
    | SAMPLE_CPU
    | SAMPLE_PERIOD
    | SAMPLE_REGS_USER
    | SAMPLE_STACK_USER;
const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_PERIOD: u64 = 1 << 8;
const SAMPLE_REGS_USER: u64 = 1 << 12;
const SAMPLE_STACK_USER: u64 = 1 << 13;

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;
const RECORD_SWITCH: u32 = 14;
const RECORD_SWITCH_CPU_WIDE: u32 = 15;
/// `misc` of a SWITCH record: the thread switched out (else in).
pub(crate) const MISC_SWITCH_OUT: u16 = 1 << 13;
/// `misc` of a switch-out: the thread was preempted while runnable (it did not block).
pub(crate) const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// `misc` of an MMAP2 record that carries a build id instead of the device and inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// Values at or above this in a callchain are context markers (`PERF_CONTEXT_KERNEL`, …).
pub(crate) const CONTEXT_MAX: u64 = (-4095i64) as u64;
/// `PERF_CONTEXT_USER`: the user frames follow.
pub(crate) const CONTEXT_USER: u64 = (-512i64) as u64;
/// `PERF_CONTEXT_KERNEL`: the kernel frames follow.
#[cfg(test)]
pub(crate) const CONTEXT_KERNEL: u64 = (-128i64) as u64;

/// One record the profiler uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// A stack: the process (`pid`, the thread group) and its callchain, leaf first, with
    /// context markers.
    Sample {
        pid: u32,
        tid: u32,
        time: u64,
        /// The CPU time the sample stands for (the event's period at the time), ns.
        period: u64,
        chain: Vec<u64>,
        /// The user registers and stack copy, when the sample was in a user context.
        user: Option<UserRegs>,
    },
    /// An executable mapping of `pid`: `[addr, addr + len)` maps `path` from `pgoff`.
    Mmap {
        pid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        path: String,
    },
    /// A thread's command name (`pid` its process).
    Comm { pid: u32, tid: u32, comm: String },
    /// A process or thread created by `ppid`.
    Fork { pid: u32, ppid: u32 },
    /// Records the kernel dropped: the ring was full.
    Lost { lost: u64 },
    /// Thread `tid` switched out (`out`; `preempted` when it was still runnable) or in, at
    /// `time` ns.
    Switch {
        pid: u32,
        tid: u32,
        time: u64,
        out: bool,
        preempted: bool,
    },
    /// Process `pid` (0: idle) began (`out` false) or stopped (`out`) running on the ring's
    /// CPU at `time` ns.
    CpuSwitch { pid: u32, time: u64, out: bool },
}

/// A sample's user registers and the copy of its user stack from the stack pointer up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserRegs {
    pub bp: u64,
    pub sp: u64,
    pub ip: u64,
    pub stack: Vec<u8>,
}

/// Little-endian reads at an offset, `None` past the end.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u32(&self, at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(self.0.get(at..at + 4)?.try_into().ok()?))
    }

    fn u64(&self, at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(self.0.get(at..at + 8)?.try_into().ok()?))
    }

    /// A NUL-terminated string from `at` to the record's end.
    fn cstr(&self, at: usize) -> Option<String> {
        let tail = self.0.get(at..)?;
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        Some(String::from_utf8_lossy(&tail[..end]).into_owned())
    }
}

/// The longest callchain kept (the kernel's own default limit is 127 frames).
const MAX_FRAMES: u64 = 512;

/// Parses one whole record (header included); `None` for a kind the profiler does not use
/// or a record too short for its kind.
pub(crate) fn parse(rec: &[u8]) -> Option<Record> {
    let b = Bytes(rec);
    let kind = b.u32(0)?;
    let misc = u16::from_le_bytes(rec.get(4..6)?.try_into().ok()?);
    match kind {
        RECORD_SAMPLE => sample(&b),
        RECORD_MMAP2 => mmap2(&b, misc),
        RECORD_COMM => Some(Record::Comm {
            pid: b.u32(8)?,
            tid: b.u32(12)?,
            comm: b.cstr(16)?,
        }),
        RECORD_FORK => Some(Record::Fork {
            pid: b.u32(8)?,
            ppid: b.u32(12)?,
        }),
        RECORD_LOST => Some(Record::Lost { lost: b.u64(16)? }),
        // No body: the `sample_id_all` trailer (`pid tid, time, cpu`) follows the header.
        RECORD_SWITCH => Some(Record::Switch {
            pid: b.u32(8)?,
            tid: b.u32(12)?,
            time: b.u64(16)?,
            out: misc & MISC_SWITCH_OUT != 0,
            preempted: misc & MISC_SWITCH_OUT_PREEMPT != 0,
        }),
        // `NEXT_PREV_PID NEXT_PREV_TID`, then the trailer of the process it is about.
        RECORD_SWITCH_CPU_WIDE => Some(Record::CpuSwitch {
            pid: b.u32(16)?,
            time: b.u64(24)?,
            out: misc & MISC_SWITCH_OUT != 0,
        }),
        _ => None,
    }
}

/// `IP, PID TID, TIME, CPU RES, PERIOD, NR, IPS[NR]` after the 8-byte header.
fn sample(b: &Bytes) -> Option<Record> {
    let pid = b.u32(16)?;
    let tid = b.u32(20)?;
    let time = b.u64(24)?;
    let period = b.u64(40)?;
    let nr = b.u64(48)?;
    let kept = nr.min(MAX_FRAMES) as usize;
    let mut chain = Vec::with_capacity(kept);
    for k in 0..kept {
        chain.push(b.u64(56 + 8 * k)?);
    }
    if chain.is_empty() {
        // No callchain: the sampled instruction alone.
        chain.push(b.u64(8)?);
    }
    let after = 56usize.checked_add(8usize.checked_mul(usize::try_from(nr).ok()?)?)?;
    Some(Record::Sample {
        pid,
        tid,
        time,
        period,
        chain,
        user: user_regs(b, after),
    })
}

/// `ABI, REGS[3] (BP SP IP), SIZE, DATA[SIZE], DYN_SIZE` from `at`; none without a user
/// context (ABI 0) or a stack.
fn user_regs(b: &Bytes, at: usize) -> Option<UserRegs> {
    if b.u64(at)? == 0 {
        return None;
    }
    let (bp, sp, ip) = (b.u64(at + 8)?, b.u64(at + 16)?, b.u64(at + 24)?);
    let size = usize::try_from(b.u64(at + 32)?).ok()?;
    let data = at + 40;
    let dyn_size = usize::try_from(b.u64(data.checked_add(size)?)?).ok()?;
    let stack = b.0.get(data..data + dyn_size.min(size))?.to_vec();
    Some(UserRegs { bp, sp, ip, stack })
}

/// `PID TID, ADDR, LEN, PGOFF, (MAJ MIN INO INO_GEN | BUILD_ID), PROT FLAGS, FILENAME`.
fn mmap2(b: &Bytes, misc: u16) -> Option<Record> {
    // Device and inode (24 bytes), or a build id of the same size: either way the name is at
    // 72 (`misc` only says which of the two the middle holds).
    let _ = misc & MISC_MMAP_BUILD_ID;
    Some(Record::Mmap {
        pid: b.u32(8)?,
        addr: b.u64(16)?,
        len: b.u64(24)?,
        pgoff: b.u64(32)?,
        path: b.cstr(72)?,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record's bytes: `kind`, `misc`, then `body`, its size in the header.
    pub(crate) fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut v = kind.to_le_bytes().to_vec();
        v.extend_from_slice(&misc.to_le_bytes());
        v.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    pub(crate) fn sample_bytes(pid: u32, chain: &[u64]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&chain.first().copied().unwrap_or(0).to_le_bytes()); // ip
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&(pid + 1).to_le_bytes()); // tid
        body.extend_from_slice(&7u64.to_le_bytes()); // time
        body.extend_from_slice(&1u32.to_le_bytes()); // cpu
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&1_000_000u64.to_le_bytes()); // period
        body.extend_from_slice(&(chain.len() as u64).to_le_bytes());
        for ip in chain {
            body.extend_from_slice(&ip.to_le_bytes());
        }
        body.extend_from_slice(&0u64.to_le_bytes()); // no user registers
        body.extend_from_slice(&0u64.to_le_bytes()); // no stack
        record(RECORD_SAMPLE, 0, &body)
    }

    #[test]
    fn a_sample_keeps_its_callchain_with_the_markers() {
        let chain = [
            CONTEXT_KERNEL,
            0xffff_ffff_8100_0000,
            CONTEXT_USER,
            0x401000,
            0x402000,
        ];
        let r = parse(&sample_bytes(42, &chain)).unwrap();
        assert_eq!(
            r,
            Record::Sample {
                pid: 42,
                tid: 43,
                time: 7,
                period: 1_000_000,
                chain: chain.to_vec(),
                user: None,
            }
        );
        // Cut short: no record, no panic.
        let bytes = sample_bytes(42, &chain);
        for n in 0..bytes.len() - 8 {
            let _ = parse(&bytes[..n]);
        }
    }

    #[test]
    fn mappings_names_and_forks() {
        let mut body = Vec::new();
        body.extend_from_slice(&9u32.to_le_bytes());
        body.extend_from_slice(&9u32.to_le_bytes());
        for v in [0x40_0000u64, 0x1000, 0x2000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&[0u8; 24]);
        body.extend_from_slice(&[5, 0, 0, 0, 2, 0, 0, 0]);
        body.extend_from_slice(b"/usr/sbin/nginx\0\0\0\0\0");
        assert_eq!(
            parse(&record(RECORD_MMAP2, 0, &body)).unwrap(),
            Record::Mmap {
                pid: 9,
                addr: 0x40_0000,
                len: 0x1000,
                pgoff: 0x2000,
                path: "/usr/sbin/nginx".into()
            }
        );
        let mut comm = 9u32.to_le_bytes().to_vec();
        comm.extend_from_slice(&10u32.to_le_bytes());
        comm.extend_from_slice(b"nginx\0\0\0");
        assert_eq!(
            parse(&record(RECORD_COMM, 0, &comm)).unwrap(),
            Record::Comm {
                pid: 9,
                tid: 10,
                comm: "nginx".into()
            }
        );
        let fork: Vec<u8> = [11u32, 9, 11, 9]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .chain(0u64.to_le_bytes())
            .collect();
        assert_eq!(
            parse(&record(RECORD_FORK, 0, &fork)).unwrap(),
            Record::Fork { pid: 11, ppid: 9 }
        );
        let lost: Vec<u8> = [1u64, 17].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            parse(&record(RECORD_LOST, 0, &lost)).unwrap(),
            Record::Lost { lost: 17 }
        );
        assert_eq!(parse(&record(99, 0, &[0; 8])), None);
    }

    /// A SWITCH record's body: its `sample_id_all` trailer (`pid tid, time, cpu res`).
    pub(crate) fn switch_bytes(pid: u32, tid: u32, time: u64, misc: u16) -> Vec<u8> {
        let mut body = pid.to_le_bytes().to_vec();
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&time.to_le_bytes());
        body.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        record(RECORD_SWITCH, misc, &body)
    }

    #[test]
    fn switches_out_preempted_and_in_and_a_short_one_is_skipped() {
        let out = MISC_SWITCH_OUT | MISC_SWITCH_OUT_PREEMPT;
        assert_eq!(
            parse(&switch_bytes(9, 10, 1_000, out)).unwrap(),
            Record::Switch {
                pid: 9,
                tid: 10,
                time: 1_000,
                out: true,
                preempted: true
            }
        );
        assert_eq!(
            parse(&switch_bytes(9, 10, 2_000, 0)).unwrap(),
            Record::Switch {
                pid: 9,
                tid: 10,
                time: 2_000,
                out: false,
                preempted: false
            }
        );
        // Cut anywhere before the time's end: no record, no panic.
        let bytes = switch_bytes(9, 10, 3_000, MISC_SWITCH_OUT);
        for n in 0..24 {
            assert_eq!(parse(&bytes[..n]), None, "{n} bytes");
        }
    }

    #[test]
    fn a_cpu_wide_switch_is_about_the_process_of_its_trailer() {
        // NEXT_PREV_PID TID (the other side of the switch), then the trailer.
        let mut body = [8u32, 8].map(u32::to_le_bytes).concat();
        body.extend_from_slice(&switch_bytes(9, 10, 5_000, 0)[8..]);
        let r = |misc| parse(&record(RECORD_SWITCH_CPU_WIDE, misc, &body));
        assert_eq!(
            r(MISC_SWITCH_OUT),
            Some(Record::CpuSwitch {
                pid: 9,
                time: 5_000,
                out: true
            })
        );
        assert_eq!(
            r(0),
            Some(Record::CpuSwitch {
                pid: 9,
                time: 5_000,
                out: false
            })
        );
        let bytes = record(RECORD_SWITCH_CPU_WIDE, 0, &body);
        for n in 0..32 {
            assert_eq!(parse(&bytes[..n]), None, "{n} bytes");
        }
    }
}
