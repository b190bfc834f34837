//! A worker's virtual users in a journey (docs/contract.md, "Journeys"): each user's
//! variables, cookie jar and place in the journey, which step it takes next (skipping those
//! whose variables it lacks), and what a response gives it. A user has at most one request
//! in flight: its steps go one after another.

use super::capture::{self, Offered};
use super::cookies::CookieJar;
use volley_plan::workload::{Order, Workload};

/// No user (a run without a journey).
pub const NO_USER: u32 = u32::MAX;

/// One virtual user.
#[derive(Debug, Default)]
pub struct User {
    /// Values by variable (empty until captured).
    pub vars: Vec<Vec<u8>>,
    /// Bit `k`: variable `k` holds a value.
    pub set: u64,
    /// Its cookies.
    pub jar: CookieJar,
    /// A request of its is in flight.
    pub busy: bool,
    /// `once` steps taken.
    once_taken: usize,
    /// Loop steps taken (a sequence's walk).
    walked: u64,
    /// It has taken a step since it (re)started.
    pub started: bool,
    /// It left while its request was in flight (a ramp down) and a new user took its place:
    /// the old request's response is not the new user's, and the new user starts once it
    /// ends.
    pub replaced: bool,
}

impl User {
    /// A user of a journey of `vars` variables, before its first step.
    pub fn new(vars: usize) -> Self {
        User {
            vars: vec![Vec::new(); vars],
            ..Default::default()
        }
    }

    /// A new user in the same place: no values, no cookies, its once steps to run again.
    pub fn restart(&mut self) {
        for v in &mut self.vars {
            v.clear();
        }
        self.set = 0;
        self.jar.clear();
        self.once_taken = 0;
        self.walked = 0;
        self.started = false;
        self.replaced = false;
    }
}

/// What became of a response's captures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Captured {
    /// The captures that found no value, by [`Missed`](super::capture::Missed).
    pub missed: [u32; 5],
    /// Values cut at the size limit.
    pub cut: u32,
    /// Set-Cookie fields the jar refused.
    pub refused_cookies: u32,
}

/// A worker's users.
#[derive(Debug)]
pub struct Users {
    /// Users by number: in the closed loop, slot `i`'s are `i·per_slot ..`.
    pub(crate) list: Vec<User>,
    /// Users per connection slot (its pipeline window or streams).
    pub per_slot: usize,
    /// Open loop: users whose iteration is over, to be the next arrivals.
    gone: Vec<u32>,
    /// Variables per user.
    vars: usize,
}

impl Users {
    /// `slots × per_slot` users for a journey of `vars` variables.
    pub fn new(slots: usize, per_slot: usize, vars: usize) -> Self {
        let per_slot = per_slot.max(1);
        let list = (0..slots * per_slot)
            .map(|_| User {
                vars: vec![Vec::new(); vars],
                ..Default::default()
            })
            .collect();
        Users {
            list,
            per_slot,
            gone: Vec::new(),
            vars,
        }
    }

    /// Open loop: a new user for an arrival (one whose iteration ended, started over, or
    /// one more).
    pub fn arrive(&mut self) -> u32 {
        let u = match self.gone.pop() {
            Some(u) => u,
            None => self.add(),
        };
        self.list[u as usize].restart();
        u
    }

    /// Open loop: user `u`'s iteration is over.
    pub fn leave(&mut self, u: u32) {
        self.list[u as usize].busy = false;
        self.gone.push(u);
    }

    /// A user of slot `i` free to take a request, else any free user of the slots in use
    /// (`active`): a request that went again on another connection keeps its user busy there.
    pub fn free_user(&self, i: usize, active: usize) -> Option<u32> {
        let own = i * self.per_slot..(i + 1) * self.per_slot;
        let idle = |u: &usize| self.list.get(*u).is_some_and(|x| !x.busy);
        own.clone()
            .find(idle)
            .or_else(|| (0..(active * self.per_slot).min(self.list.len())).find(idle))
            .map(|u| u as u32)
    }

    /// A new user (one more than the slots hold), its number.
    pub fn add(&mut self) -> u32 {
        self.list.push(User {
            vars: vec![Vec::new(); self.vars],
            ..Default::default()
        });
        (self.list.len() - 1) as u32
    }

    /// Slot `i`'s users start over (a virtual user arrives in a ramp).
    pub fn restart_slot(&mut self, i: usize) {
        let from = i * self.per_slot;
        for u in self.list.iter_mut().skip(from).take(self.per_slot) {
            if u.busy {
                // Its request is still out: the new user starts when that one ends.
                u.replaced = true;
            } else {
                u.restart();
            }
        }
    }
}

/// The entry `user` takes next (`turns`: the worker's count of mix picks, advanced by each),
/// counting each step it skips (its variables missing) with `skipped`. In the closed loop
/// (`iteration` is `None`) the user goes on for ever, and one that lacks a value its once
/// steps capture, or skipped a loop's worth of steps in a row, starts over as a new user: its
/// login failed, so it logs in again rather than going on without it. In the open loop a user walks one iteration, its once steps and
/// `iteration` loop steps, and `None` says it is over.
pub fn next_step(
    user: &mut User,
    w: &Workload,
    turns: &mut u64,
    iteration: Option<u64>,
    mut skipped: impl FnMut(usize),
) -> Option<usize> {
    let j = &w.journey;
    let round = loop_len(w);
    let mut skips = 0usize;
    loop {
        let e = if user.once_taken < j.once.len() {
            user.once_taken += 1;
            j.once[user.once_taken - 1] as usize
        } else {
            if iteration.is_some_and(|n| user.walked >= n) {
                return None;
            }
            // The worker's own count of mix picks: each worker's picks hold the weights.
            let e = w.pick(*turns, user.walked);
            *turns += 1;
            user.walked += 1;
            e
        };
        let missing = w.entries[e].step.needs & !user.set;
        if missing == 0 {
            return Some(e);
        }
        skipped(e);
        skips += 1;
        if iteration.is_none() && (missing & j.once_captures != 0 || skips >= round.max(1)) {
            // A value its once steps capture is missing (its login failed), or a loop's worth
            // went by unsent: a new user takes its place and logs in again.
            user.restart();
            skips = 0;
        }
    }
}

/// The steps of one pass of the loop: a sequence's steps, a weighted cycle's length.
pub fn loop_len(w: &Workload) -> usize {
    match w.order {
        Order::Weighted => w.cycle.len(),
        Order::Sequence if w.journey.steps.is_empty() => w.entries.len(),
        Order::Sequence => w.journey.steps.len(),
    }
}

/// Gives user `u` what a complete response offered: its `Set-Cookie` fields to the jar (for
/// a request to `path` on `host`), then its captures' values.
pub fn absorb(
    user: &mut User,
    checks: &volley_plan::workload::Checks,
    offered: &Offered,
    (host, path, secure): (&str, &[u8], bool),
    now_s: u64,
) -> Captured {
    let mut out = Captured::default();
    if checks.set_cookies {
        out.refused_cookies = offered.set_cookies_too_large;
        for f in offered.set_cookies {
            if user.jar.store(f, host, path, secure, now_s).is_err() {
                out.refused_cookies += 1;
            }
        }
    }
    let mut json = None;
    for (k, c) in checks.captures.iter().enumerate() {
        match capture::value(&c.from, k, offered, &mut json) {
            Ok((v, cut)) => {
                out.cut += u32::from(cut);
                user.vars[c.var as usize] = v;
                user.set |= 1 << c.var;
            }
            Err(m) => out.missed[m as usize] += 1,
        }
    }
    out
}

pub use volley_model::stats::journey::JourneyCounts;

/// Counting one response's captures.
pub(crate) trait CountCaptured {
    /// Adds what one response's captures met.
    fn add(&mut self, c: &Captured);
}

impl CountCaptured for JourneyCounts {
    fn add(&mut self, c: &Captured) {
        for (a, b) in self.missed.iter_mut().zip(c.missed) {
            *a += u64::from(b);
        }
        self.cut += u64::from(c.cut);
        self.refused_cookies += u64::from(c.refused_cookies);
    }
}

/// Unix time in whole seconds (cookie expiry).
pub fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_plan::journey::{Journey, Step};
    use volley_plan::workload::{Body, Checks, Entry, Template};

    fn entry(needs: u64, once: bool) -> Entry {
        Entry {
            endpoint: None,
            method: "GET".into(),
            path: Template::literal("/"),
            headers: Vec::new(),
            body: Body::None,
            weight: 0,
            checks: Checks::default(),
            step: Step {
                once,
                think_ns: None,
                needs,
            },
        }
    }

    fn sequence(entries: Vec<Entry>) -> Workload {
        let once: Vec<u32> = (0..entries.len() as u32)
            .filter(|&k| entries[k as usize].step.once)
            .collect();
        let steps: Vec<u32> = (0..entries.len() as u32)
            .filter(|&k| !entries[k as usize].step.once)
            .collect();
        Workload {
            entries,
            order: Order::Sequence,
            endpoints: Vec::new(),
            other: None,
            data: None,
            cycle: Vec::new(),
            hash: String::new(),
            source: String::new(),
            files: Vec::new(),
            journey: Journey {
                vars: vec!["token".into()],
                cookies: false,
                once,
                steps,
                once_captures: 0,
            },
        }
    }

    #[test]
    fn once_steps_run_first_then_the_loop_and_missing_values_skip_steps() {
        // login (once, captures token) → me (needs token) → home.
        let w = sequence(vec![entry(0, true), entry(1, false), entry(0, false)]);
        let mut u = User {
            vars: vec![Vec::new()],
            ..Default::default()
        };
        let mut skipped = Vec::new();
        let mut turns = 0;
        let mut walk =
            |u: &mut User| next_step(u, &w, &mut turns, None, |e| skipped.push(e)).unwrap();
        assert_eq!(walk(&mut u), 0, "the login first");
        // Its capture failed: `me` is skipped, `home` goes.
        assert_eq!(walk(&mut u), 2);
        // Skipped again, and then a whole round is skipped only if nothing can go.
        u.set = 1;
        assert_eq!(walk(&mut u), 1);
        assert_eq!(walk(&mut u), 2);
        assert_eq!(walk(&mut u), 1);
        assert_eq!(skipped, [1]);
    }

    #[test]
    fn a_user_whose_login_failed_starts_over_even_beside_steps_that_need_nothing() {
        // login (once, captures token) → home (needs nothing) → me (needs the token).
        let mut w = sequence(vec![entry(0, true), entry(0, false), entry(1, false)]);
        w.journey.once_captures = 1;
        let mut u = User::new(1);
        let mut turns = 0;
        let mut n = 0;
        let mut step = |u: &mut User| next_step(u, &w, &mut turns, None, |_| n += 1);
        assert_eq!(step(&mut u), Some(0));
        assert_eq!(step(&mut u), Some(1), "home needs nothing");
        assert_eq!(
            step(&mut u),
            Some(0),
            "me lacks the login's token: a new user logs in"
        );
        assert_eq!(n, 1);
    }

    #[test]
    fn a_user_that_can_send_nothing_starts_over() {
        // Every loop step needs the token the once step failed to capture.
        let w = sequence(vec![entry(0, true), entry(1, false), entry(1, false)]);
        let mut u = User {
            vars: vec![Vec::new()],
            ..Default::default()
        };
        let mut n = 0;
        assert_eq!(next_step(&mut u, &w, &mut 0, None, |_| n += 1), Some(0));
        assert_eq!(
            next_step(&mut u, &w, &mut 0, None, |_| n += 1),
            Some(0),
            "it logs in again"
        );
        assert_eq!(n, 2, "after skipping both loop steps once");
    }

    #[test]
    fn in_the_open_loop_a_user_walks_one_iteration() {
        let w = sequence(vec![entry(0, true), entry(1, false), entry(0, false)]);
        let mut u = User {
            vars: vec![Vec::new()],
            ..Default::default()
        };
        let mut n = 0;
        let mut turns = 0;
        let mut step = |u: &mut User| next_step(u, &w, &mut turns, Some(2), |_| n += 1);
        assert_eq!(step(&mut u), Some(0));
        assert_eq!(
            step(&mut u),
            Some(2),
            "the login's capture failed: `me` is skipped"
        );
        assert_eq!(step(&mut u), None, "the iteration is over");
        u.restart();
        u.set = 1;
        assert_eq!(step(&mut u), Some(0));
        assert_eq!(step(&mut u), Some(1));
        assert_eq!(step(&mut u), Some(2));
        assert_eq!(step(&mut u), None);
        assert_eq!(n, 1);
    }

    #[test]
    fn each_value_cut_and_each_cookie_refused_is_counted() {
        use volley_plan::journey::{Capture, CaptureFrom, MAX_VALUE_BYTES};
        let header = |name: &str, var| Capture {
            var,
            from: CaptureFrom::Header(name.into()),
        };
        let checks = Checks {
            set_cookies: true,
            captures: vec![header("x-a", 0), header("x-b", 1)],
            ..Default::default()
        };
        let long = vec![b'a'; MAX_VALUE_BYTES + 10];
        let headers = [Some(long.clone()), Some(long)];
        let cookies = [b"ok=1".to_vec(), b"s=1; Secure".to_vec()];
        let offered = Offered {
            body: b"",
            headers: &headers,
            set_cookies: &cookies,
            set_cookies_too_large: 3,
        };
        let mut u = User {
            vars: vec![Vec::new(); 2],
            ..Default::default()
        };
        let got = absorb(&mut u, &checks, &offered, ("127.0.0.1", b"/", false), 0);
        assert_eq!(got.cut, 2, "two values cut");
        assert_eq!(
            got.refused_cookies, 4,
            "3 too large, not kept, and the Secure one"
        );
        assert_eq!(u.jar.len(), 1);
        assert!(u.vars.iter().all(|v| v.len() == MAX_VALUE_BYTES));
    }

    #[test]
    fn open_loop_users_are_reused_once_gone() {
        let mut us = Users::new(0, 1, 1);
        let a = us.arrive();
        let b = us.arrive();
        assert_ne!(a, b);
        us.list[a as usize].set = 1;
        us.leave(a);
        assert_eq!(us.arrive(), a);
        assert_eq!(us.list[a as usize].set, 0, "a new user");
        assert_eq!(us.list.len(), 2);
    }

    #[test]
    fn free_users_prefer_their_own_slot() {
        let mut us = Users::new(3, 2, 1);
        assert_eq!(us.free_user(1, 3), Some(2));
        us.list[2].busy = true;
        assert_eq!(us.free_user(1, 3), Some(3));
        us.list[3].busy = true;
        assert_eq!(us.free_user(1, 3), Some(0), "another slot's free user");
        for u in &mut us.list {
            u.busy = true;
        }
        assert_eq!(us.free_user(1, 3), None);
        us.list[2].set = 1;
        us.list[3].busy = false;
        us.list[3].set = 1;
        us.restart_slot(1);
        // A user with a request out is replaced once it ends; an idle one at once.
        assert!(us.list[2].replaced && us.list[2].set == 1);
        assert!(!us.list[3].replaced && us.list[3].set == 0);
    }
}
