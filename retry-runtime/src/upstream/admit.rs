//! Before each attempt of a call on an upstream: what the upstream says ([`admit`]), the wait
//! for its pause or gate, and the [`Ticket`] that tells the upstream how the attempt ended.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use super::paused::UpstreamPaused;
use super::{Admission, Upstream, UpstreamStore};
use crate::class::{Class, Classify};
use crate::engine::{Run, Source};
use crate::ladder;
use crate::verdict::{GaveUp, StopReason};

/// Wait until `upstream` admits the call's next attempt: through a pause (a provider's hint),
/// or until the outage gate opens or the call's turn takes the probe. Gives up, with the
/// caller's error made from an [`UpstreamPaused`], where the wait would outlast the call's turn
/// or budget (a pause), or its ladder's allowance (a gate), or the turn is cancelled. The fast
/// path, an upstream with nothing to say, is one atomic read.
pub(crate) async fn admit<R, E>(
    run: &mut Run<R>,
    upstream: &'static Upstream,
) -> Result<Ticket, GaveUp<E>>
where
    R: Source,
    E: From<UpstreamPaused> + Classify + fmt::Display,
{
    let now = run.clock_now();
    if let admission @ Admission::Send { .. } = upstream.admit(now) {
        return Ok(Ticket::new(upstream, admission));
    }
    loop {
        // Listening before the read: a change between them wakes this wait.
        let mut changed = pin!(upstream.changed());
        changed.as_mut().enable();
        let now = run.clock_now();
        // `ends`: the wait runs to the call's end, not to a probe's time.
        let (wait, class, gated, ends) = match upstream.admit(now) {
            admission @ Admission::Send { .. } => return Ok(Ticket::new(upstream, admission)),
            Admission::Paused { until, class } => {
                let wanted = ladder::hinted(until.saturating_duration_since(now), run.clock_draw());
                bounded(run, upstream, class, false, Some(wanted))?;
                (wanted, class, false, false)
            }
            Admission::Gated { next_probe } => {
                let class = Class::Unavailable { retry_after: None };
                let until_probe = next_probe.map(|at| at.saturating_duration_since(now));
                let bound = bounded(run, upstream, class, true, None)?;
                match (until_probe, bound) {
                    (Some(probe), Some(bound)) if bound < probe => (bound, class, true, true),
                    (Some(probe), _) => (probe, class, true, false),
                    (None, Some(bound)) => (bound, class, true, true),
                    // No probe scheduled and nothing bounds the call: until the gate changes.
                    (None, None) => (Duration::MAX, class, true, false),
                }
            }
        };
        let paused = UpstreamPaused::new(upstream.name(), class, gated);
        run.upstream_hold(&paused, class, upstream.name(), wait, gated);
        let started = run.clock_now();
        let ended = held(run, wait, gated, changed.as_mut()).await;
        let lasted = run.clock_now().saturating_duration_since(started);
        run.upstream_waited(if gated { lasted } else { wait });
        let reason = match ended {
            Held::Over | Held::Changed => continue,
            Held::Cancelled => StopReason::Cancelled,
            // The gate is still closed at the call's end: it gives up as its ladder would.
            Held::Bound if ends => StopReason::Exhausted {
                attempts: run.attempts(),
            },
            Held::Bound => continue,
        };
        return Err(run.upstream_gave_up(E::from(paused), class, reason));
    }
}

/// The call's bound for a wait on `upstream` of `wanted` (a pause) or of up to the bound (a
/// gate), or its give-up where the pause does not fit.
fn bounded<R, E>(
    run: &mut Run<R>,
    upstream: &'static Upstream,
    class: Class,
    gated: bool,
    wanted: Option<Duration>,
) -> Result<Option<Duration>, GaveUp<E>>
where
    R: Source,
    E: From<UpstreamPaused> + Classify + fmt::Display,
{
    let reason = match (run.upstream_bound(gated), wanted) {
        (Err(reason), _) => reason,
        (Ok(Some(remaining)), Some(wanted)) if remaining < wanted => {
            StopReason::Budget { wanted, remaining }
        }
        (Ok(Some(remaining)), None) if remaining.is_zero() => StopReason::Exhausted {
            attempts: run.attempts(),
        },
        (Ok(bound), _) => return Ok(bound),
    };
    let paused = UpstreamPaused::new(upstream.name(), class, gated);
    Err(run.upstream_gave_up(E::from(paused), class, reason))
}

/// How a wait for an upstream ended.
enum Held {
    /// A pause's wait ran its length.
    Over,
    /// A gate's wait: the upstream changed (the gate opened, or the probe was freed).
    Changed,
    /// A gate's wait ran to its bound: the next probe's time, or the call's end.
    Bound,
    /// The call's turn was cancelled.
    Cancelled,
}

/// Wait `wait` (a pause: on the retry's clock, recorded in a testing scope), or up to `wait`
/// for the upstream to change (a gate: on tokio's clock, so that a testing scope waits for the
/// probe's outcome), whichever a cancel of the turn does not cut first.
async fn held<R: Source>(
    run: &mut Run<R>,
    wait: Duration,
    gated: bool,
    mut changed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Held {
    if !gated {
        let mut sleep = pin!(run.clock_sleep(wait));
        return std::future::poll_fn(|cx| {
            if run.poll_turn_cancelled(cx).is_ready() {
                return Poll::Ready(Held::Cancelled);
            }
            sleep.as_mut().poll(cx).map(|()| Held::Over)
        })
        .await;
    }
    let deadline = tokio::time::Instant::now().checked_add(wait);
    let mut timer = pin!(deadline.map(tokio::time::sleep_until));
    std::future::poll_fn(|cx| {
        if run.poll_turn_cancelled(cx).is_ready() {
            return Poll::Ready(Held::Cancelled);
        }
        if changed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Held::Changed);
        }
        match timer.as_mut().as_pin_mut() {
            Some(timer) => timer.poll(cx).map(|()| Held::Bound),
            None => Poll::Pending,
        }
    })
    .await
}

/// An attempt the upstream admitted: it tells the upstream how the attempt ended, and frees a
/// probe that ends with no outcome (dropped, cancelled, panicked) when it is dropped. Used by
/// `#[retry(upstream = ..)]`'s expansion, not public API.
#[doc(hidden)]
#[derive(Debug)]
pub struct Ticket {
    upstream: &'static Upstream,
    admission: Option<Admission>,
}

impl Ticket {
    fn new(upstream: &'static Upstream, admission: Admission) -> Ticket {
        Ticket {
            upstream,
            admission: Some(admission),
        }
    }

    /// The attempt succeeded.
    #[inline]
    pub fn succeeded(mut self) {
        if let Some(admission) = self.admission.take() {
            self.upstream.succeeded(admission);
        }
    }

    /// The attempt failed with `class` at `now`, on `run`'s policy.
    pub(crate) fn failed<R: Source>(mut self, class: Class, run: &Run<R>) {
        if let Some(admission) = self.admission.take() {
            self.upstream
                .failed(admission, class, run.clock_now(), run.policy());
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            self.upstream.released(admission);
        }
    }
}

/// [`admit`] for `#[retry(upstream = ..)]`'s expansion: the ticket, or the caller's error of
/// the give-up. Not public API.
#[doc(hidden)]
pub async fn upstream_admit<R, E>(
    run: &mut Run<R>,
    upstream: &'static Upstream,
) -> Result<Ticket, E>
where
    R: Source,
    E: super::retry::HoldsUpstreamPaused + Classify + fmt::Display,
{
    admit(run, upstream)
        .await
        .map_err(|gave_up| gave_up.into_error())
}

/// The attempt `ticket` admitted failed with `class`: for the expansion. Not public API.
#[doc(hidden)]
pub fn upstream_failed<R: Source>(ticket: Ticket, class: Class, run: &Run<R>) {
    ticket.failed(class, run);
}
