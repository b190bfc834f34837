//! Confirming the answer before it is given: the rate found runs again and must pass by the
//! majority rule, the bracket's high end runs again and must not pass. A contradiction (the
//! answer fails now, or the rate above it passes now: a pass above a failure) moves the
//! bracket to what the runs now say and the search goes on from there; the new answer is
//! confirmed again, at most [`CONFIRM_ROUNDS`] times. An answer still contradicted after them
//! is given as not reproduced (`reproduced: false`), never silently.

use super::{whole, Found, Search, StepError, StepRunner, Tally};
use volley_model::result::capacity::{Confirmation, LimitedBy, Phase, Recheck, Verdict};

/// Rounds of confirmation before an answer is given as not reproduced.
pub const CONFIRM_ROUNDS: u32 = 3;

/// What a round of confirmation showed.
enum Round {
    /// Both ends held.
    Held,
    /// An end was contradicted; the bracket moved and the search went on.
    Moved,
    /// Nothing left to confirm (no rate passes any more).
    NoAnswer,
}

impl Search {
    /// Confirms `found`'s answer (when it has one; an interrupted or failed search has none to
    /// confirm), recording every recheck in `found.confirmation`.
    pub(super) fn confirm(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
    ) -> Result<(), StepError> {
        if found.bracket.low_rps.is_none() || found.limited_by.is_none() {
            return Ok(());
        }
        let mut c = Confirmation::default();
        let mut result = Ok(());
        while c.rounds < CONFIRM_ROUNDS {
            c.rounds += 1;
            match self.round(runner, found, &mut c) {
                Ok(Round::Held) => {
                    c.reproduced = true;
                    break;
                }
                Ok(Round::Moved) => {}
                Ok(Round::NoAnswer) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        found.confirmation = Some(c);
        result
    }

    /// One round: the answer again, then the rate above it.
    fn round(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
        c: &mut Confirmation,
    ) -> Result<Round, StepError> {
        let Some(low) = found.bracket.low_rps else {
            return Ok(Round::NoAnswer);
        };
        runner.phase(Phase::Confirm);
        let again = self.recheck(runner, found, low, c)?;
        if again.contradicts() {
            self.lower_the_answer(runner, found, low, again.now)?;
            return Ok(Round::Moved);
        }
        let high = found.bracket.high_rps.filter(|_| !found.client_high);
        if let Some(high) = high {
            let above = self.recheck(runner, found, high, c)?;
            if above.contradicts() {
                self.raise_the_answer(runner, found, high)?;
                return Ok(Round::Moved);
            }
            if above.now == Verdict::Client {
                // The rate above can no longer be measured: the answer is a lower bound, as
                // the search's own client limits are, and says so (`limited_by: client`).
                found.client_high = true;
                found.limited_by = Some(LimitedBy::Client);
            }
        }
        Ok(Round::Held)
    }

    /// Runs `rate` again by the majority rule and records it.
    fn recheck(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
        rate: f64,
        c: &mut Confirmation,
    ) -> Result<Recheck, StepError> {
        let was = found.decided_at(rate).unwrap_or(Verdict::Pass);
        let t = self.tally(runner, rate, Tally::default())?;
        let r = Recheck {
            rate_rps: rate,
            was,
            now: t.verdict,
            runs: t.runs,
            passes: t.passes,
        };
        c.rechecks.push(r);
        found.decide(rate, t.verdict);
        Ok(r)
    }

    /// The answer `low` did not pass again (`now`): it becomes the bracket's high end and the
    /// highest rate below it that passed its low end (none: the ramp goes down from half).
    fn lower_the_answer(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
        low: f64,
        now: Verdict,
    ) -> Result<(), StepError> {
        found.bracket.high_rps = Some(low);
        found.client_high = now == Verdict::Client;
        found.bracket.low_rps = found
            .decided
            .iter()
            .filter(|(r, v)| *r < low && *v == Verdict::Pass)
            .map(|(r, _)| *r)
            .reduce(f64::max);
        found.limited_by = None;
        match found.bracket.low_rps {
            Some(_) => self.narrow(runner, found),
            None if low <= 1.0 => Ok(()),
            None => self.search_from(runner, found, whole(low / 2.0)),
        }
    }

    /// The rate above the answer passed now: it becomes the bracket's low end, and the lowest
    /// rate above it that did not pass its high end (none: the ramp goes on up from it).
    fn raise_the_answer(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
        high: f64,
    ) -> Result<(), StepError> {
        found.bracket.low_rps = Some(high);
        found.bracket.high_rps = found
            .decided
            .iter()
            .filter(|(r, v)| *r > high && *v != Verdict::Pass)
            .map(|(r, _)| *r)
            .reduce(f64::min);
        found.client_high = found
            .bracket
            .high_rps
            .is_some_and(|h| found.decided_at(h) == Some(Verdict::Client));
        found.limited_by = None;
        if found.bracket.high_rps.is_some() {
            return self.narrow(runner, found);
        }
        // Nothing above it failed: the ramp goes on up from it, as far as --max-rate.
        let next = match self.max_rps.map(whole) {
            Some(max) if high >= max => {
                found.limited_by = Some(LimitedBy::MaxRate);
                return Ok(());
            }
            Some(max) => (high * 2.0).min(max),
            None => high * 2.0,
        };
        self.search_from(runner, found, whole(next))
    }

    /// Bisects the bracket as the search does.
    fn narrow(&self, runner: &mut dyn StepRunner, found: &mut Found) -> Result<(), StepError> {
        runner.phase(Phase::Bisect);
        self.bisect(runner, found)
    }
}
