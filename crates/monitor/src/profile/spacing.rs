//! The CPU time each sample stands for (docs/contract.md, "Profile").

use super::records::Record;

/// The longest gap between two samples of one CPU taken as the CPU time the second stands
/// for; past it (the event stopped, the CPU offline) the kernel's nominal period is kept.
const MAX_GAP_NS: u64 = 100_000_000;

/// Weighs each sample by the time since its CPU's previous one when both are of the same
/// process. The kernel times `cpu-clock` samples with an hrtimer and gives each the nominal
/// period (1/499 s), but a timer that fires late by more than a period (seen on a 2-CPU VM
/// under a Node server's load, gaps of 2 to 15 periods) drops the periods it overran: 16 to
/// 30 % of the server's CPU went unsampled. Between two samples of one process the CPU most
/// likely ran it throughout; across a change of process (or idle) the gap is not known to be
/// either's, and the nominal period is kept.
pub(super) struct Spacing {
    last: Vec<Option<(u64, u32)>>,
}

impl Spacing {
    pub(super) fn new(cpus: usize) -> Spacing {
        Spacing {
            last: vec![None; cpus],
        }
    }

    /// Sets a sample's period from the gap to its CPU's previous one (see above).
    pub(super) fn weigh(&mut self, cpu: usize, rec: &mut Record) {
        let Record::Sample {
            time, period, pid, ..
        } = rec
        else {
            return;
        };
        let Some(last) = self.last.get_mut(cpu) else {
            return;
        };
        if let Some((t, p)) = *last {
            if let Some(gap) = time.checked_sub(t) {
                if p == *pid && *pid != 0 && gap > 0 && gap <= MAX_GAP_NS {
                    *period = gap;
                }
            }
        }
        *last = Some((*time, *pid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOMINAL: u64 = 2_004_008;

    fn sample(pid: u32, time: u64) -> Record {
        Record::Sample {
            pid,
            tid: pid,
            time,
            period: NOMINAL,
            chain: vec![1],
            user: None,
        }
    }

    fn period(r: &Record) -> u64 {
        match r {
            Record::Sample { period, .. } => *period,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_gap_within_one_process_counts_whole_and_across_processes_nominal() {
        let mut s = Spacing::new(2);
        let ms = 1_000_000;
        let weighed: Vec<u64> = [(0, 7, 0), (0, 7, 10 * ms), (1, 7, 3 * ms), (0, 8, 12 * ms)]
            .into_iter()
            .map(|(cpu, pid, t)| {
                let mut r = sample(pid, t);
                s.weigh(cpu, &mut r);
                period(&r)
            })
            .collect();
        // The first of a CPU: nominal; then 10 ms of pid 7 on CPU 0 (4 periods overran);
        // CPU 1's first; pid 8 after pid 7 on CPU 0: nominal.
        assert_eq!(weighed, [NOMINAL, 10 * ms, NOMINAL, NOMINAL]);
        // Idle on both sides, or a gap past the bound: nominal.
        let mut r = sample(8, 12 * ms + 2 * MAX_GAP_NS);
        s.weigh(0, &mut r);
        assert_eq!(period(&r), NOMINAL);
    }
}
