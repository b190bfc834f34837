//! A journey's users on the worker (docs/contract.md, "Journeys"): which user takes a request
//! and which step it sends, the user's values and cookies in its bytes, and what its response
//! gives it back. Only runs with a journey reach here; others keep no state per user.

use super::*;
use crate::check::CheckState;
use crate::journey::users::{absorb, loop_len, next_step, unix_now_s, Captured, CountCaptured};
use volley_plan::workload::{Checks, Context, Workload};

/// The users of a run whose workload is a journey: in the closed loop `slots × per_slot` of
/// them, `per_slot` being what one connection holds at once (its pipeline window, or its
/// streams); in the open loop as many as arrivals are under way.
pub(super) fn journey_users(shared: &Shared, slots: usize) -> Option<Users> {
    let mix = shared.mix.as_deref()?;
    let w = &mix.workload;
    if !w.is_journey() {
        return None;
    }
    let vars = w.journey.vars.len();
    if shared.open_loop {
        // Each arrival is a new user, made when it comes (and reused once gone).
        return Some(Users::new(0, 1, vars));
    }
    let streams = if shared.http.multiplexed() {
        shared.streams
    } else {
        1
    };
    Some(Users::new(slots, shared.pipeline.max(streams), vars))
}

/// What a request taken from the schedule became in a journey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chosen {
    /// A user sends its next step.
    Step,
    /// Open loop: the arrival's user had nothing it could send (each step skipped).
    Nothing,
}

impl Worker {
    /// The loop steps of one user's iteration in the open loop: one pass of a sequence, one
    /// request of a mix (`None` in the closed loop: users go on).
    fn iteration(&self, w: &Workload) -> Option<u64> {
        self.shared.open_loop.then(|| match w.order {
            volley_plan::workload::Order::Weighted => 1,
            volley_plan::workload::Order::Sequence => loop_len(w) as u64,
        })
    }

    /// `req`, taken from the schedule for slot `i`, goes to a user: in the closed loop a free
    /// user of the slot, in the open loop a new user (the arrival), who sends its next step,
    /// skipping those whose variables it lacks (each counted).
    pub(super) fn journey_choose(&mut self, i: usize, req: &mut InFlight) -> Chosen {
        let Some(mix) = self.shared.mix.clone() else {
            return Chosen::Nothing;
        };
        let iteration = self.iteration(&mix.workload);
        let users = self.users.as_mut().expect("a journey has users");
        let u = if iteration.is_some() {
            if req.phase == Phase::Measured {
                self.journey.arrivals += 1;
            }
            users.arrive()
        } else {
            // Users are as many as the slots hold requests, so one is free; should a request
            // that went again elsewhere hold one, a new user is made rather than a step sent
            // without its user's values.
            users
                .free_user(i, self.active)
                .unwrap_or_else(|| users.add())
        };
        req.user = u;
        match self.step_of(u, &mix, req.phase, req.start_ns) {
            Some(e) => {
                req.entry = e;
                Chosen::Step
            }
            None => {
                self.users.as_mut().expect("checked").leave(u);
                Chosen::Nothing
            }
        }
    }

    /// User `u`'s next step (counting those it skips), marking it busy; `None` when its
    /// open-loop iteration is over.
    fn step_of(&mut self, u: u32, mix: &volley_plan::Mix, phase: Phase, at_ns: u64) -> Option<u32> {
        let iteration = self.iteration(&mix.workload);
        let user = &mut self.users.as_mut()?.list[u as usize];
        let rec = &mut self.rec;
        let measured = phase == Phase::Measured;
        let turns = &mut self.mix_turns;
        let e = next_step(user, &mix.workload, turns, iteration, |e| {
            if measured {
                rec.skipped(at_ns, mix.workload.entries[e].endpoint);
            }
        });
        // A user that started over while choosing (its login failed) is a new user too.
        if e.is_some() && !user.started {
            user.started = true;
            if measured {
                self.journey.users_started += 1;
            }
        }
        user.busy = e.is_some();
        e.map(|e| e as u32)
    }

    /// A user's request ended (a response, or an error) at `now`. In the closed loop the
    /// user is free for its next step; in the open loop its next step follows after the
    /// step's think time (`think_ns`), or its iteration is over.
    pub(super) fn journey_done(&mut self, req: &InFlight, think_ns: u64, now: u64) {
        let Some(users) = self.users.as_mut() else {
            return;
        };
        let Some(user) = users.list.get_mut(req.user as usize) else {
            return;
        };
        if !self.shared.open_loop {
            user.busy = false;
            if user.replaced {
                // It left in a ramp while this was out: the new user in its place starts now.
                user.restart();
            }
            return;
        }
        let Some(mix) = self.shared.mix.clone() else {
            return;
        };
        if self.is_draining() || now + think_ns >= self.window_end_ns {
            // Its next step would be due after the send window: the iteration ends here.
            self.users.as_mut().expect("checked").leave(req.user);
            return;
        }
        let mut next = InFlight::new(now + think_ns, self.phase());
        match self.step_of(req.user, &mix, next.phase, now) {
            Some(e) => {
                next.index = self.taken * self.shared.threads as u64 + self.id as u64;
                self.taken += 1;
                next.entry = e;
                next.user = req.user;
                // Think times differ by step: kept in order of when each is due.
                let at = self.follow.partition_point(|r| r.start_ns <= next.start_ns);
                self.follow.insert(at, next);
            }
            None => self.users.as_mut().expect("checked").leave(req.user),
        }
    }

    /// `req` will not go (a warm-up request never written): its user neither waits for it nor
    /// goes on from it.
    pub(super) fn journey_drop(&mut self, req: &InFlight) {
        let open = self.shared.open_loop;
        let Some(users) = self.users.as_mut() else {
            return;
        };
        if req.user == NO_USER || req.user as usize >= users.list.len() {
            return;
        }
        if open {
            users.leave(req.user);
        } else {
            // Its step was taken but never sent (a login, perhaps): it starts over, so it
            // does not go on as if it had been.
            let user = &mut users.list[req.user as usize];
            user.busy = false;
            user.restart();
        }
    }

    /// Open loop: the users' next steps that are due go before new arrivals.
    #[inline]
    pub(super) fn follow_due(&mut self, now: u64) {
        while self.follow.front().is_some_and(|r| r.start_ns <= now) {
            let r = self.follow.pop_front().expect("checked");
            self.requeue.push_back(r);
        }
    }

    /// Fills `cookie_buf` with the `Cookie` value user `req.user`'s jar has for `req`'s path
    /// (empty: none applies).
    pub(super) fn journey_cookie(&mut self, i: usize, req: &InFlight) {
        self.cookie_buf.clear();
        let (Some(users), Some(mix)) = (self.users.as_mut(), self.shared.mix.as_deref()) else {
            return;
        };
        let (w, seed) = (&mix.workload, mix.seed);
        if !w.journey.cookies || req.user == NO_USER {
            return;
        }
        let user = &mut users.list[req.user as usize];
        if user.jar.is_empty() {
            return;
        }
        let ids = (self.id, self.shared.threads);
        render_path(&mut self.path_buf, ids, (w, seed), i, req, &user.vars);
        let secure = self.shared.tls.is_some();
        user.jar
            .header_value(&self.path_buf, secure, unix_now_s(), &mut self.cookie_buf);
    }

    /// `req`'s complete response offered `state` to its captures and the user's jar: the user
    /// takes them. True when a capture found no value (its `capture` check failed).
    pub(super) fn journey_absorb(
        &mut self,
        req: &InFlight,
        checks: &Checks,
        state: &CheckState,
    ) -> bool {
        let (Some(users), Some(mix)) = (self.users.as_mut(), self.shared.mix.as_deref()) else {
            return false;
        };
        let Some(user) = users.list.get_mut(req.user as usize) else {
            return false;
        };
        if user.replaced {
            return false; // the response of a user who left: not the new user's
        }
        self.path_buf.clear();
        if checks.set_cookies && !state.offered().set_cookies.is_empty() {
            // The request's path, for the cookies' default path (its slot is not kept: a
            // `{conn}` in it renders as connection 0's).
            let ids = (self.id, self.shared.threads);
            let w = (&*mix.workload, mix.seed);
            render_path(&mut self.path_buf, ids, w, 0, req, &user.vars);
        }
        let secure = self.shared.tls.is_some();
        let host = self.shared.cookie_host.as_str();
        let got: Captured = absorb(
            user,
            checks,
            &state.offered(),
            (host, &self.path_buf, secure),
            unix_now_s(),
        );
        if req.phase == Phase::Measured {
            self.journey.add(&got);
        }
        got.missed.iter().any(|&n| n > 0)
    }
}

/// Renders `req`'s path (its user's `vars` in it) into `out`.
fn render_path(
    out: &mut Vec<u8>,
    ids: (usize, usize),
    w: (&Workload, u64),
    i: usize,
    req: &InFlight,
    vars: &[Vec<u8>],
) {
    out.clear();
    let ctx = context(ids, w, i, req, Some(vars), None);
    w.0.entries[req.entry as usize].path.render(&ctx, out);
}

/// What `req`'s placeholders are filled from on slot `i`, with its user's variables (from
/// `users`) and the `Cookie` value `journey_cookie` left in `cookie_buf`.
pub(super) fn context_for<'a>(
    ids: (usize, usize),
    mix: &'a volley_plan::Mix,
    i: usize,
    req: &InFlight,
    users: Option<&'a Users>,
    cookie_buf: &'a [u8],
) -> Context<'a> {
    let vars = users.and_then(|u| u.list.get(req.user as usize));
    let cookie = (!cookie_buf.is_empty()).then_some(cookie_buf);
    context(
        ids,
        (&mix.workload, mix.seed),
        i,
        req,
        vars.map(|u| &u.vars[..]),
        cookie,
    )
}

/// What a request's placeholders are filled from: worker `id` of `threads`, the workload and
/// seed, connection slot `i`, the user's variables and the `Cookie` value.
pub(super) fn context<'a>(
    (id, threads): (usize, usize),
    (w, seed): (&'a Workload, u64),
    i: usize,
    req: &InFlight,
    vars: Option<&'a [Vec<u8>]>,
    cookie: Option<&'a [u8]>,
) -> Context<'a> {
    // Connections are numbered across threads as requests are: slot j of thread k is
    // connection j·T + k.
    let conn = i as u64 * threads as u64 + id as u64;
    // A journey's user is numbered the same way: user u of thread k is u·T + k.
    let user = match req.user {
        NO_USER => conn,
        u => u as u64 * threads as u64 + id as u64,
    };
    Context {
        index: req.index,
        conn,
        user,
        seed,
        row: w.row(req.index, seed),
        vars: vars.unwrap_or(&[]),
        cookie,
    }
}
