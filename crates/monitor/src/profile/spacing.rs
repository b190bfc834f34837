//! The CPU time each sample stands for (docs/contract.md, "Profile").

use std::collections::HashMap;

use super::records::Record;

/// The longest gap between two samples of one CPU taken as the CPU time the second stands
/// for; past it (the event stopped, the CPU offline) the kernel's nominal period is kept.
const MAX_GAP_NS: u64 = 100_000_000;

/// Counts, per process, the CPU time its late samples leave unsampled. The kernel times
/// `cpu-clock` samples with an hrtimer and gives each the nominal period (1/499 s), but a timer that fires late by more than a period (seen on a
/// 2-CPU VM under a Node server's load, gaps of 2 to 15 periods) drops the periods it overran:
/// 16 to 30 % of the server's CPU went unsampled. The CPU's context switches (the event's
/// `SWITCH_CPU_WIDE` records, in the same ring, in time order) say how long the late
/// sample's process ran in the gap, never counting the idle time or another process's. What
/// it ran beyond the nominal period is that process's time unsampled; it is spread over the
/// process's stacks in proportion to their samples (`Gathered::spread`), not given to the late
/// sample's own stack: a timer held back fires where interrupts come back on (the
/// scheduler's `finish_task_switch`), which says nothing of what ran meanwhile.
pub(super) struct Spacing {
    cpus: Vec<Cpu>,
    /// Per process, the CPU time its late samples stood for beyond their periods, ns.
    pub(super) unsampled: HashMap<u32, u64>,
}

/// One CPU's view since its previous sample.
#[derive(Clone, Default)]
struct Cpu {
    /// The previous sample's time.
    last: Option<u64>,
    /// The process running and since when (its switch-in, or a sample of it), if known.
    run: Option<(u32, u64)>,
    /// Time each process ran in runs that ended since the previous sample.
    ran: Vec<(u32, u64)>,
}

impl Cpu {
    /// Adds the run of `pid` from `start` to `end` (clipped to the previous sample).
    fn add(&mut self, pid: u32, start: u64, end: u64) {
        let from = self.last.map_or(start, |l| start.max(l));
        let ns = end.saturating_sub(from);
        if let Some(e) = self.ran.iter_mut().find(|(p, _)| *p == pid) {
            e.1 += ns;
        } else if self.ran.len() < 64 {
            // A late timer's gap holds a few runs; the list is cleared at each sample.
            self.ran.push((pid, ns));
        }
    }
}

impl Spacing {
    pub(super) fn new(cpus: usize) -> Spacing {
        Spacing {
            cpus: vec![Cpu::default(); cpus],
            unsampled: HashMap::new(),
        }
    }

    /// Follows a CPU's context switches, and counts what a late sample left unsampled.
    pub(super) fn follow(&mut self, cpu: usize, rec: &Record) {
        let Some(c) = self.cpus.get_mut(cpu) else {
            return;
        };
        match rec {
            Record::CpuSwitch { pid, time, out } => {
                if *out {
                    if let Some((p, start)) = c.run.take() {
                        c.add(p, start, *time);
                    }
                } else {
                    c.run = Some((*pid, *time));
                }
            }
            Record::Sample {
                time, period, pid, ..
            } => {
                if let Some(last) = c.last {
                    let gap = time.saturating_sub(last);
                    if gap > *period + *period / 2 && gap <= MAX_GAP_NS {
                        if let Some((p, start)) = c.run.filter(|(p, _)| p == pid) {
                            c.add(p, start, *time);
                        }
                        let ran = c.ran.iter().find(|(p, _)| p == pid).map_or(0, |e| e.1);
                        let beyond = ran.clamp(*period, gap) - *period;
                        if beyond > 0 {
                            *self.unsampled.entry(*pid).or_default() += beyond;
                        }
                    }
                }
                c.last = Some(*time);
                c.ran.clear();
                // No switch seen yet (it came before the event was on): the sample says who
                // runs now.
                if c.run.is_none() {
                    c.run = Some((*pid, *time));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOMINAL: u64 = 2_004_008;
    const MS: u64 = 1_000_000;

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

    fn switch(pid: u32, time: u64, out: bool) -> Record {
        Record::CpuSwitch { pid, time, out }
    }

    /// What the samples among `recs` (all of CPU 0) stood for: nominal periods, and then
    /// pid 7's time unsampled.
    fn follow(recs: Vec<Record>) -> Vec<u64> {
        let mut s = Spacing::new(1);
        let mut out: Vec<u64> = recs
            .into_iter()
            .filter_map(|r| {
                s.follow(0, &r);
                match r {
                    Record::Sample { period, .. } => Some(period),
                    _ => None,
                }
            })
            .collect();
        // The last sample's share: its period and what it left unsampled.
        *out.last_mut().unwrap() += s.unsampled.get(&7).copied().unwrap_or(0);
        out
    }

    #[test]
    fn a_late_sample_stands_for_its_process_run_in_the_gap() {
        // pid 7 runs throughout: 10 ms late, the sample stands for all 10 ms, whether its
        // switch-in was seen or only its samples were.
        let whole = follow(vec![switch(7, 0, false), sample(7, MS), sample(7, 11 * MS)]);
        assert_eq!(whole, [NOMINAL, 10 * MS]);
        let unseen = follow(vec![sample(7, MS), sample(7, 11 * MS)]);
        assert_eq!(unseen, [NOMINAL, 10 * MS]);
        // Idle (pid 0), or another process, for 6 ms of the gap: 4 ms of it are 7's.
        for between in [0, 8] {
            let parted = follow(vec![
                switch(7, 0, false),
                sample(7, MS),
                switch(7, 2 * MS, true),
                switch(between, 2 * MS, false),
                switch(between, 8 * MS, true),
                switch(7, 8 * MS, false),
                sample(7, 11 * MS),
            ]);
            assert_eq!(parted, [NOMINAL, 4 * MS], "pid {between} in between");
        }
    }

    #[test]
    fn on_time_or_without_switches_a_sample_keeps_the_nominal_period() {
        // On time (within 1.5 periods): nominal, whoever ran.
        let on_time = follow(vec![sample(7, 0), sample(7, NOMINAL + MS / 2)]);
        assert_eq!(on_time, [NOMINAL, NOMINAL]);
        // Late, but its process ran less than a period of the gap (it switched in 1 ms before
        // the sample): never less than the nominal period.
        let short = follow(vec![
            sample(7, 0),
            switch(7, 9 * MS, false),
            sample(7, 10 * MS),
        ]);
        assert_eq!(short, [NOMINAL, NOMINAL]);
        // Past the bound: nominal.
        let far = follow(vec![
            switch(7, 0, false),
            sample(7, 0),
            sample(7, 2 * MAX_GAP_NS),
        ]);
        assert_eq!(far, [NOMINAL, NOMINAL]);
    }
}
