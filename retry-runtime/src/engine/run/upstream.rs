//! The protocol's steps of a call on an [`Upstream`](crate::Upstream): before an attempt, how
//! long the call may wait for the upstream's pause or gate, and the announcement of that wait.
//! A child of the run, so that it reads the run's state without widening it.

use std::fmt;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Run;
use crate::class::Class;
use crate::clock::Clock;
use crate::draw::Draw;
use crate::engine::count::Count;
use crate::engine::source::Source;
use crate::ladder::{self, Decided, Failure, HoldAsked, Step};
use crate::meter::{self, UpstreamSeries};
use crate::notice::{Action, Reached};
use crate::policy::Policy;
use crate::turn::flight::Flight;
use crate::upstream::Upstream;
use crate::verdict::{GaveUp, StopReason};

impl<R: Source, A: Count> Run<R, A> {
    /// How long the call waits for its upstream before its next attempt (`pause`: a
    /// provider's pause this much longer; `None`: an open gate), or why it stops now: the
    /// ladder's decision on a hold ([`ladder::hold`]), from the call's turn, budget and waits
    /// so far. A cancelled turn cannot wait at all. `paced`: the pause is the upstream's
    /// pacer's, a slot reserved at its end, never spread.
    pub(crate) fn upstream_held(
        &mut self,
        pause: Option<Duration>,
        budget_spent: bool,
        paced: bool,
    ) -> Result<Duration, StopReason> {
        // The budget runs from the call's start, which a first try held back has had.
        self.start_once();
        let flight = self.flight();
        let deadline = self.deadline(flight.and_then(Flight::deadline));
        let now = self.source.clock().now();
        let held = HoldAsked {
            pause,
            waited: self.total_waited(),
            remaining: deadline.map(|deadline| deadline.saturating_duration_since(now)),
            cancelled: flight.is_some_and(Flight::is_cancelled),
            budget_spent,
        };
        let draw = match pause {
            Some(_) if !paced => self.source.clock().draw(),
            _ => Draw::IDEAL,
        };
        ladder::hold(self.source.policy(), held, draw)
    }

    /// The retry's clock: now, and a jitter draw.
    pub(crate) fn clock_now(&self) -> tokio::time::Instant {
        self.source.clock().now()
    }

    /// The retry's clock's sleep of `wait`: recorded, not slept, in a testing scope.
    pub(crate) fn clock_sleep(&self, wait: Duration) -> <R::Clock as Clock>::Sleep {
        self.sleep_for(wait)
    }

    /// The policy.
    pub(crate) fn policy(&self) -> &Policy {
        self.source.policy()
    }

    /// Whether the call's turn was cancelled; registers `cx` to be woken when it is.
    pub(crate) fn poll_turn_cancelled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.since {
            super::Since::InTurn(flight) => flight.poll_cancelled(cx).map(drop),
            _ => Poll::Pending,
        }
    }

    /// The call waits up to `wait` for `upstream`: told as a notice, `gated` or paused.
    pub(crate) fn upstream_hold(
        &self,
        why: &dyn fmt::Display,
        class: Class,
        upstream: &'static str,
        wait: Duration,
        gated: bool,
    ) {
        let action = Action::Hold {
            upstream,
            wait,
            gated,
        };
        self.notify(why, class, action, Reached::Nothing, None);
    }

    /// The call waits `wait` for `upstream`'s pacer, a slot of its key reserved: told as a
    /// notice.
    pub(crate) fn upstream_paced(
        &self,
        why: &dyn fmt::Display,
        upstream: &'static str,
        wait: Duration,
    ) {
        let class = Class::RateLimited {
            retry_after: Some(wait),
        };
        self.notify(
            why,
            class,
            Action::Paced { upstream, wait },
            Reached::Nothing,
            None,
        );
    }

    /// The wait for the upstream starts: counted as waiting in the call's turn.
    pub(crate) fn upstream_wait_started(&mut self, wait: Duration) {
        let now = self.source.clock().now();
        if let super::Since::InTurn(flight) = &mut self.since {
            flight.upstream_wait_started(now, wait);
        }
    }

    /// The call waited `lasted` for `upstream` (`gated`, or paused): in its turn's report and
    /// the metrics; `counted` of it against its allowance and budget (the wait's whole
    /// milliseconds not yet counted).
    pub(crate) fn upstream_waited(
        &mut self,
        upstream: &'static Upstream,
        kind: &'static str,
        lasted: Duration,
        counted: Duration,
    ) {
        if let super::Since::InTurn(flight) = &mut self.since {
            flight.upstream_wait_ended(lasted);
        }
        self.add_waited(counted);
        meter::upstream(upstream.name(), UpstreamSeries::Waited { kind, lasted });
    }

    /// The call moves from the upstream `from` to `to` after a `class` failure, at once, with
    /// no wait: within its allowance (its attempts and its budget), its quota and its turn,
    /// counted in its turn's report and the metrics, and told; or it gives up, with `error`.
    pub(crate) fn move_on<E: fmt::Display>(
        &mut self,
        error: E,
        class: Class,
        from: &'static str,
        to: &'static str,
    ) -> Result<(), GaveUp<E>> {
        self.attempt_failed(class);
        match self.may_move(class) {
            Ok(()) => {
                self.notify(
                    &error,
                    class,
                    Action::Move { from, to },
                    Reached::Nothing,
                    None,
                );
                if let Some(flight) = self.flight() {
                    flight.moved();
                }
                meter::moved(from, to);
                Ok(())
            }
            Err(reason) => Err(self.give_up(error, class, reason, Reached::Nothing)),
        }
    }

    /// Whether the call may make another attempt at once after a `class` failure: its turn
    /// not over, attempts and budget left, and the quota paying for it as for a retry.
    fn may_move(&mut self, class: Class) -> Result<(), StopReason> {
        // The ladder decides the move, as it decides a retry; the quota pays for it after.
        let (turn_over, remaining) = self.now_bounded();
        let failure = Failure::new(self.attempts(), class)
            .with_turn_over(turn_over)
            .with_remaining(remaining)
            .with_another_ready(true);
        if let Decided::Stop(decision) = ladder::decide(self.source.policy(), failure)
            && let Step::Stop(reason) = decision.step
        {
            return Err(reason);
        }
        if !self.paid.withdraw(self.source.quota(), class) {
            meter::count(self.source.op(), meter::Series::QuotaRefusal);
            // The quota's payment: its refusal is made where it is paid.
            return Err(StopReason::Quota);
        }
        // Paid, and made at once: no wait to refund.
        self.paid.wait_over();
        Ok(())
    }

    /// The call gives up before an attempt it could not make, for `reason`.
    pub(crate) fn upstream_gave_up<E: fmt::Display>(
        &mut self,
        error: E,
        class: Class,
        reason: StopReason,
    ) -> GaveUp<E> {
        self.give_up(error, class, reason, Reached::Nothing)
    }
}
