//! The wait for an upstream before an attempt: through a provider's pause, or until an open
//! outage gate closes (or hands the call its probe), bounded as every wait of the call is
//! ([`ladder::hold`]); for a call across upstreams, until any upstream of its set not failed
//! in this round admits it. It counts what it waited, exactly, and decides nothing itself.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::time::Instant;

use super::Ticket;
use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::engine::{Count, Run, Source};
use crate::ladder;
use crate::pace::Ask;
use crate::upstream::{Admission, PausedBy, Upstream, UpstreamPaused};
use crate::verdict::{GaveUp, StopReason};

/// Wait until `upstream` admits the call's next attempt: through a pause (a provider's hint),
/// or until the outage gate closes or the call's turn takes the probe. Gives up, with the
/// caller's error made from an [`UpstreamPaused`], where the wait would outlast the call's
/// turn, budget or ladder ([`ladder::hold`]), or the turn is cancelled. The fast path, an
/// upstream with nothing to say, is one atomic read. `budgeted`: a call's own attempt on the
/// upstream, which a fleet's retry budget counts (a first try) or holds (a retry); a move
/// across upstreams is neither.
pub(crate) async fn admit<R, A, E>(
    run: &mut Run<R, A>,
    upstream: &'static Upstream,
    hold: fn(UpstreamPaused) -> E,
    budgeted: bool,
    tokens: u32,
) -> Result<Ticket, GaveUp<E>>
where
    R: Source,
    A: Count,
    E: Classify + fmt::Display,
{
    let quiet = match budgeted {
        true => Ticket::at_once_for(upstream, run.attempts() > 0),
        false => Ticket::at_once(upstream),
    };
    if let Some(ticket) = quiet.or_else(|| paced_at_once(upstream, run, budgeted, tokens)) {
        return Ok(ticket);
    }
    // Boxed while it waits, so that a call's future carries none of a wait's state (a
    // notification and a timer, about 200 bytes) through its first try on a quiet upstream:
    // every call moves its future, few ever wait for an upstream.
    let mut admitting = Box::pin(
        match budgeted {
            true => Admitting::new(upstream),
            false => Admitting::routed(upstream),
        }
        .costing(tokens),
    );
    std::future::poll_fn(|cx| admitting.as_mut().poll_admit(run, cx, hold)).await
}

/// A paced upstream with nothing else to say, whose key holds the attempt now: its ticket,
/// with no wait made (and nothing boxed).
fn paced_at_once<R: Source, A: Count>(
    upstream: &'static Upstream,
    run: &Run<R, A>,
    budgeted: bool,
    tokens: u32,
) -> Option<Ticket> {
    let seen = upstream.quiet_unpaced()?;
    if budgeted && seen.is_budgeted() {
        return None;
    }
    match upstream.admit_for(run.clock_now(), tokens, Ask::Try) {
        admission @ Admission::Send { .. } => Some(Ticket::new(upstream, admission)),
        _ => None,
    }
}

/// A slot of an upstream's key its pacer reserved for a waiting attempt: given back if the
/// wait ends any way but in that attempt (dropped, cancelled, another upstream taken).
struct Reserved {
    upstream: &'static Upstream,
    tokens: u32,
}

impl Reserved {
    /// The attempt asks for its slot: the pacer takes the reservation back itself.
    fn redeemed(self) -> u32 {
        let tokens = self.tokens;
        std::mem::forget(self);
        tokens
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.upstream.pace_release(self.tokens);
    }
}

pin_project_lite::pin_project! {
    /// A call's wait for its upstream before an attempt, held in place: a pause's sleep (on
    /// the retry's clock, recorded in a testing scope), or a gate's wait for the upstream to
    /// change, up to the next probe's time or the call's end (on tokio's clock, so that a
    /// testing scope waits for the probe's outcome). A cancel of the turn cuts either.
    #[project = AdmittingProj]
    pub(crate) struct Admitting<S> {
        upstream: &'static Upstream,
        // A call's own attempt, which a fleet's retry budget counts or holds (not a move).
        budgeted: bool,
        // What the attempt costs in the key's tokens, and the slot its pacer reserved.
        tokens: u32,
        reserved: Option<Reserved>,
        // A call across a set: the other upstreams it may go to, whose change ends the wait.
        across: Option<Box<SetWatched>>,
        // The wait so far, exactly, and what of it the call has counted against its
        // allowance (in whole milliseconds, rounded up once, not once per wake).
        lasted: Duration,
        counted: Duration,
        #[pin]
        changed: Option<Notified<'static>>,
        #[pin]
        held: Holding<S>,
    }
}

/// The rest of a set a call across upstreams may go to while it waits for one of them.
struct SetWatched {
    /// The set's upstreams, in order of preference.
    set: &'static [&'static Upstream],
    /// Bit `i`: the set's `i`th upstream failed in this round, and is not waited for.
    tried: u32,
    /// A notification per upstream waited for, made before the reads that decided to wait.
    changed: Vec<Pin<Box<Notified<'static>>>>,
}

impl SetWatched {
    /// Listen to every upstream not failed in this round, before they are read.
    fn listen(&mut self) {
        self.changed.clear();
        for (at, upstream) in self.set.iter().enumerate() {
            if self.tried & (1 << at) == 0 {
                let mut changed = Box::pin(upstream.changed());
                changed.as_mut().enable();
                self.changed.push(changed);
            }
        }
    }

    /// Whether any upstream waited for changed.
    fn poll_changed(&mut self, cx: &mut Context<'_>) -> bool {
        let mut any = false;
        for changed in &mut self.changed {
            any |= changed.as_mut().poll(cx).is_ready();
        }
        any
    }

    /// The first upstream in order, not failed in this round, that admits an attempt now.
    fn pick(&self, now: Instant) -> Option<Ticket> {
        let upstreams = self.set.iter().enumerate();
        upstreams
            .filter(|(at, _)| self.tried & (1 << at) == 0)
            .find_map(|(_, upstream)| match upstream.admit(now) {
                admission @ Admission::Send { .. } => Some(Ticket::new(upstream, admission)),
                _ => None,
            })
    }
}

pin_project_lite::pin_project! {
    /// Where a wait for an upstream is.
    #[project = HoldingProj]
    enum Holding<S> {
        /// The upstream is to be read.
        Read,
        /// Paused (or `paced`, until the slot its pacer reserved): sleeping `wait` of
        /// `class`, since `started`.
        Pause { #[pin] sleep: S, wait: Duration, class: Class, started: Instant, paced: bool },
        /// Gated: waiting for a change, up to `timer` (a probe's time, or the call's end),
        /// since `started`; or (`spent`) a retry waiting for a token of the fleet's retry
        /// budget, up to the call's end.
        Gate {
            #[pin]
            timer: Option<tokio::time::Sleep>,
            spent: bool,
            started: Instant,
        },
    }
}

/// The class an open gate holds a call back with: the outage's.
const OUTAGE: Class = Class::Unavailable { retry_after: None };

impl<S: Future<Output = ()>> Admitting<S> {
    /// The wait of a call's own attempt on `upstream`: a fleet's retry budget counts its
    /// first try and holds its retries.
    pub(crate) fn new(upstream: &'static Upstream) -> Self {
        Admitting {
            upstream,
            budgeted: true,
            tokens: 0,
            reserved: None,
            across: None,
            lasted: Duration::ZERO,
            counted: Duration::ZERO,
            changed: None,
            held: Holding::Read,
        }
    }

    /// The wait of an attempt that costs `tokens` of the key.
    pub(crate) fn costing(self, tokens: u32) -> Self {
        Admitting { tokens, ..self }
    }

    /// The wait of an attempt routed across upstreams (a move, or a round's first): no
    /// budget counts or holds it, as on its fast path.
    pub(crate) fn routed(upstream: &'static Upstream) -> Self {
        Admitting {
            budgeted: false,
            ..Admitting::new(upstream)
        }
    }

    /// The wait of a call across `set` for `upstream`, the one that frees soonest: it ends
    /// as soon as any upstream of the set not `tried` in this round admits the attempt (a
    /// preferred one reopening first), the ticket naming which.
    pub(crate) fn across(
        set: &'static [&'static Upstream],
        tried: u32,
        upstream: &'static Upstream,
    ) -> Self {
        Admitting {
            across: Some(Box::new(SetWatched {
                set,
                tried,
                changed: Vec::new(),
            })),
            ..Admitting::routed(upstream)
        }
    }

    /// Poll the wait of `run`'s call: its ticket once the upstream admits it, or its give-up,
    /// the caller's error made by `to_error`.
    pub(crate) fn poll_admit<R, A, E>(
        self: Pin<&mut Self>,
        run: &mut Run<R, A>,
        cx: &mut Context<'_>,
        to_error: impl FnOnce(UpstreamPaused) -> E,
    ) -> Poll<Result<Ticket, GaveUp<E>>>
    where
        R: Source<Clock: Clock<Sleep = S>>,
        A: Count,
        E: Classify + fmt::Display,
    {
        let mut this = self.project();
        let upstream = *this.upstream;
        loop {
            let (class, by, reason) = match this.held.as_mut().project() {
                HoldingProj::Read => match read_now(&mut this, run) {
                    None => continue,
                    Some(Ok(ticket)) => return Poll::Ready(Ok(ticket)),
                    Some(Err(stop)) => stop,
                },
                HoldingProj::Pause {
                    sleep,
                    wait,
                    class,
                    started,
                    paced,
                } => {
                    let class = *class;
                    let (cancelled, elsewhere) = woken(run, this.across, cx);
                    let lasted = match (cancelled || elsewhere, sleep.poll(cx).is_ready()) {
                        // The wait chosen: a testing scope records it rather than sleep it.
                        (false, true) => *wait,
                        (true, _) => Instant::now().saturating_duration_since(*started),
                        (false, false) => return Poll::Pending,
                    };
                    let (kind, by) = match *paced {
                        true => ("pace", PausedBy::Paced),
                        false => ("pause", PausedBy::Pause),
                    };
                    count(this.lasted, this.counted, run, upstream, kind, lasted);
                    if cancelled {
                        // A slot the pacer reserved goes back.
                        drop(this.reserved.take());
                        (class, by, ladder::cut_by_cancel())
                    } else {
                        // Over, or another upstream of the set changed: read again.
                        this.held.set(Holding::Read);
                        continue;
                    }
                }
                HoldingProj::Gate {
                    timer,
                    spent,
                    started,
                } => {
                    let (cancelled, elsewhere) = woken(run, this.across, cx);
                    let changed = this
                        .changed
                        .as_mut()
                        .as_pin_mut()
                        .is_some_and(|changed| changed.poll(cx).is_ready());
                    let timed = timer
                        .as_pin_mut()
                        .is_some_and(|timer| timer.poll(cx).is_ready());
                    if !(cancelled || changed || elsewhere || timed) {
                        return Poll::Pending;
                    }
                    let gated = !*spent;
                    let lasted = Instant::now().saturating_duration_since(*started);
                    let kind = if gated { "gate" } else { "budget" };
                    count(this.lasted, this.counted, run, upstream, kind, lasted);
                    if cancelled {
                        let by = if gated {
                            PausedBy::Gate
                        } else {
                            PausedBy::BudgetSpent
                        };
                        (OUTAGE, by, ladder::cut_by_cancel())
                    } else {
                        // A change, a probe's time, or the call's end: the read decides.
                        this.held.set(Holding::Read);
                        continue;
                    }
                }
            };
            let paused = match reason {
                StopReason::Quota => UpstreamPaused::budget_spent(upstream.name()),
                _ => UpstreamPaused::by(upstream.name(), class, by),
            };
            return Poll::Ready(Err(run.upstream_gave_up(to_error(paused), class, reason)));
        }
    }
}

/// Read the upstream (and, across a set, the set) for the wait's next step: the ticket, the
/// give-up, or (`None`) the hold set.
fn read_now<R, A, S>(
    this: &mut AdmittingProj<'_, S>,
    run: &mut Run<R, A>,
) -> Option<Result<Ticket, (Class, PausedBy, StopReason)>>
where
    R: Source<Clock: Clock<Sleep = S>>,
    A: Count,
    S: Future<Output = ()>,
{
    let upstream = *this.upstream;
    // Listening before the reads: a change between them wakes this wait.
    this.changed.set(Some(upstream.changed()));
    if let Some(changed) = this.changed.as_mut().as_pin_mut() {
        changed.enable();
    }
    if let Some(across) = this.across.as_mut() {
        across.listen();
        if let Some(ticket) = across.pick(run.clock_now()) {
            // A slot reserved on the upstream waited for goes back.
            drop(this.reserved.take());
            return Some(Ok(ticket));
        }
    }
    let ask = match this.reserved.take() {
        Some(reserved) => (reserved.redeemed(), Ask::Redeem),
        None => (*this.tokens, Ask::Reserve),
    };
    match read(upstream, run, *this.budgeted, ask) {
        Read::Send(ticket) => Some(Ok(ticket)),
        Read::Hold(held) => {
            if let Holding::Pause { paced: true, .. } = held {
                // The pacer reserved the slot this wait ends on.
                let tokens = *this.tokens;
                *this.reserved = Some(Reserved { upstream, tokens });
            }
            this.held.set(held);
            None
        }
        Read::Stop(class, by, reason) => Some(Err((class, by, reason))),
    }
}

/// Whether the call's turn was cancelled, and whether another upstream of its set changed,
/// registering `cx` for both.
fn woken<R: Source, A: Count>(
    run: &mut Run<R, A>,
    across: &mut Option<Box<SetWatched>>,
    cx: &mut Context<'_>,
) -> (bool, bool) {
    let cancelled = run.poll_turn_cancelled(cx).is_ready();
    let elsewhere = across
        .as_mut()
        .is_some_and(|across| across.poll_changed(cx));
    (cancelled, elsewhere)
}

/// Count `this` hold's `lasted` against the call: the turn's report and the metrics get it
/// exactly; the call's allowance gets the whole wait so far in milliseconds, rounded up once,
/// so that a busy gate's many short wakes add no more than the time that passed.
fn count<R: Source, A: Count>(
    lasted: &mut Duration,
    counted: &mut Duration,
    run: &mut Run<R, A>,
    upstream: &'static Upstream,
    kind: &'static str,
    this: Duration,
) {
    let add = to_count(lasted, counted, this);
    run.upstream_waited(upstream, kind, this, add);
}

/// What of `this` hold to count against the call's allowance: the whole wait so far in
/// milliseconds, rounded up, less what was counted of it already.
fn to_count(lasted: &mut Duration, counted: &mut Duration, this: Duration) -> Duration {
    *lasted = lasted.saturating_add(this);
    let whole = Duration::from_millis(
        u64::try_from(lasted.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX),
    );
    let add = whole.saturating_sub(*counted);
    *counted = whole;
    add
}

/// What a read of the upstream says of the call's next attempt.
enum Read<S> {
    /// Send it.
    Send(Ticket),
    /// Wait, announced (a slot reserved for it, if paced).
    Hold(Holding<S>),
    /// Give up: with this class, held by this, for this reason.
    Stop(Class, PausedBy, StopReason),
}

/// Read `upstream` for `run`'s next attempt: send it, or the wait to hold (announced), or the
/// give-up where the wait does not fit the call.
fn read<R: Source, A: Count>(
    upstream: &'static Upstream,
    run: &mut Run<R, A>,
    budgeted: bool,
    (tokens, ask): (u32, Ask),
) -> Read<<R::Clock as Clock>::Sleep> {
    let now = run.clock_now();
    let retry = run.attempts() > 0;
    // A retry held by a fleet's budget takes its token before the upstream is read: a probe
    // taken and then dropped for want of one would wake this very wait, again and again.
    let took = budgeted && retry && upstream.status().is_budgeted();
    if took && !upstream.live().lease.admits(true) {
        if ask == Ask::Redeem {
            upstream.pace_release(tokens);
        }
        return spent(upstream, run);
    }
    let admission = upstream.admit_for(now, tokens, ask);
    if took && !matches!(admission, Admission::Send { .. }) {
        // Held back all the same: the token waits for the next retry, unannounced (a
        // notification would wake this wait at once).
        upstream.live().lease.refund();
    }
    match admission {
        admission @ Admission::Send { seen, .. } => {
            if budgeted && !retry && seen.is_budgeted() {
                upstream.live().lease.admits(false);
            }
            Read::Send(Ticket::new(upstream, admission))
        }
        Admission::Paused { until, class } => {
            let pause = until.saturating_duration_since(now);
            match run.upstream_held(Some(pause), false, false) {
                Err(reason) => Read::Stop(class, PausedBy::Pause, reason),
                Ok(wait) => {
                    let paused = UpstreamPaused::new(upstream.name(), class, false);
                    run.upstream_hold(&paused, class, upstream.name(), wait, false);
                    run.upstream_wait_started(wait);
                    Read::Hold(Holding::Pause {
                        sleep: run.clock_sleep(wait),
                        wait,
                        class,
                        started: Instant::now(),
                        paced: false,
                    })
                }
            }
        }
        Admission::Paced { until } => {
            paced(upstream, run, until.saturating_duration_since(now), tokens)
        }
        Admission::OverLimit => {
            Read::Stop(Class::Definitive, PausedBy::OverLimit, ladder::over_limit())
        }
        Admission::Gated { next_probe } => {
            let bound = match run.upstream_held(None, false, false) {
                Err(reason) => return Read::Stop(OUTAGE, PausedBy::Gate, reason),
                Ok(bound) => bound,
            };
            // Up to the next probe's time, if it comes before the call's end.
            let until_probe = next_probe.map(|at| at.saturating_duration_since(now));
            let wait = until_probe.map_or(bound, |probe| probe.min(bound));
            let paused = UpstreamPaused::new(upstream.name(), OUTAGE, true);
            run.upstream_hold(&paused, OUTAGE, upstream.name(), wait, true);
            run.upstream_wait_started(wait);
            Read::Hold(gate(wait, false))
        }
    }
}

/// The class a pacer holds a call back with: the key's limit, reached.
const PACED_CLASS: Class = Class::RateLimited { retry_after: None };

/// The pacer reserved a slot `wait` from now for `upstream`'s next attempt: the call waits for
/// it (announced), or, where that wait does not fit the call, gives the slot back and stops.
fn paced<R: Source, A: Count>(
    upstream: &'static Upstream,
    run: &mut Run<R, A>,
    wait: Duration,
    tokens: u32,
) -> Read<<R::Clock as Clock>::Sleep> {
    match run.upstream_held(Some(wait), false, true) {
        Err(reason) => {
            upstream.pace_release(tokens);
            let class = Class::RateLimited {
                retry_after: Some(wait),
            };
            Read::Stop(class, PausedBy::Paced, reason)
        }
        Ok(wait) => {
            let paused = UpstreamPaused::by(upstream.name(), PACED_CLASS, PausedBy::Paced);
            run.upstream_paced(&paused, upstream.name(), wait);
            run.upstream_wait_started(wait);
            Read::Hold(Holding::Pause {
                sleep: run.clock_sleep(wait),
                wait,
                class: PACED_CLASS,
                started: Instant::now(),
                paced: true,
            })
        }
    }
}

/// A gate's wait of up to `wait` from now, on tokio's clock.
fn gate<S>(wait: Duration, spent: bool) -> Holding<S> {
    let started = Instant::now();
    let timer = started.checked_add(wait).map(tokio::time::sleep_until);
    Holding::Gate {
        timer,
        spent,
        started,
    }
}

/// A retry on `upstream` found no token of the fleet's retry budget: it waits for the fleet
/// store to lease more, within its ladder's allowance and its budget (announced), or ends as a
/// call whose quota is spent ends.
#[cold]
fn spent<R: Source, A: Count>(
    upstream: &'static Upstream,
    run: &mut Run<R, A>,
) -> Read<<R::Clock as Clock>::Sleep> {
    let bound = match run.upstream_held(None, true, false) {
        Err(reason) => return Read::Stop(OUTAGE, PausedBy::BudgetSpent, reason),
        Ok(bound) => bound,
    };
    let paused = UpstreamPaused::budget_spent(upstream.name());
    run.upstream_hold(&paused, OUTAGE, upstream.name(), bound, false);
    run.upstream_wait_started(bound);
    Read::Hold(gate(bound, true))
}

impl<S> fmt::Debug for Admitting<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admitting")
            .field("upstream", &self.upstream.name())
            .field("lasted", &self.lasted)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A busy gate wakes its waiters often: 3,000 wakes of 0.3 ms each count 900 ms against
    /// the call, not 3 s (each rounded up to a millisecond).
    #[test]
    fn many_short_wakes_count_the_time_that_passed() {
        let (mut lasted, mut counted) = (Duration::ZERO, Duration::ZERO);
        let mut total = Duration::ZERO;
        for _ in 0..3_000 {
            total += to_count(&mut lasted, &mut counted, Duration::from_micros(300));
        }
        assert_eq!(total, Duration::from_millis(900));
        assert_eq!(lasted, Duration::from_millis(900));
    }
}
