//! [`Placing`]: what a call driven by polls (a stream, a layer's call) keeps of its placement,
//! in one field, with the steps of [`Place`](super::Place) in the same order: `ready`, else
//! the hold polled (`poll_hold`), then `succeeded` or `failed` (given the class), and
//! `gave_up`. The explicit runs and the attribute take them as futures on their `Call`; these
//! drivers cannot await, so they poll the same hold ([`Admitting`]) in a state of their own.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::admission::{Admitting, Ticket};
use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::engine::{Count, Run, Source};
use crate::fallback::{Next, Route, Upstreams};
use crate::upstream::{Upstream, UpstreamPaused};
use crate::verdict::GaveUp;

/// Where a call driven by polls sends its attempts, and the admission of the one in progress.
/// Not public API.
#[derive(Debug)]
pub(crate) struct Placing {
    /// The admission of the attempt in progress, once it has one.
    ticket: Option<Ticket>,
    to: PlacedOn,
}

/// The placement itself: nothing, one upstream, or an ordered set with the call's route.
#[derive(Debug)]
enum PlacedOn {
    Nowhere,
    One(&'static Upstream),
    Across(&'static Upstreams, Route),
}

impl Placing {
    /// No upstream: every step is nothing.
    pub(crate) const NOWHERE: Placing = Placing {
        ticket: None,
        to: PlacedOn::Nowhere,
    };

    /// Every attempt on `upstream`.
    pub(crate) const fn on(upstream: &'static Upstream) -> Placing {
        Placing {
            ticket: None,
            to: PlacedOn::One(upstream),
        }
    }

    /// Each attempt across `set`, on the call's route: one that `reports` notes how it left
    /// each upstream, for a give-up that carries it (a stream's); a layer's gives the caller
    /// its error alone, and notes nothing.
    pub(crate) const fn across(set: &'static Upstreams, reports: bool) -> Placing {
        let route = match reports {
            true => Route::new(),
            false => Route::silent(),
        };
        Placing {
            ticket: None,
            to: PlacedOn::Across(set, route),
        }
    }

    /// The fast path: `None` if the next attempt may go now (admitted at once, or nothing to
    /// admit it), else the hold to poll ([`poll_hold`](Self::poll_hold)). A call that `stays`
    /// (a stream once it has delivered) goes to the upstream of its last attempt, never moves;
    /// `tokens` is what the attempt costs of a paced key, asked only where it is held.
    pub(crate) fn ready<R, A, S>(
        &mut self,
        run: &Run<R, A>,
        stays: bool,
        tokens: impl FnOnce() -> u32,
    ) -> Option<Admitting<S>>
    where
        R: Source,
        A: Count,
        S: std::future::Future<Output = ()>,
    {
        if self.ticket.is_some() {
            return None;
        }
        let ticket = match &mut self.to {
            PlacedOn::Nowhere => return None,
            PlacedOn::One(upstream) => match Ticket::at_once_for(upstream, run.attempts() > 0) {
                Some(ticket) => ticket,
                None => return Some(Admitting::new(upstream).costing(tokens())),
            },
            PlacedOn::Across(set, route) if stays => match Ticket::at_once(route.upstream(set)) {
                Some(ticket) => ticket,
                None => return Some(Admitting::routed(route.upstream(set))),
            },
            PlacedOn::Across(set, route) => {
                let now = run.clock_now();
                match route.ready(set, now) {
                    Some(ticket) => ticket,
                    None => return Some(route.waiting(set, now)),
                }
            }
        };
        self.ticket = Some(ticket);
        None
    }

    /// Poll the hold [`ready`](Self::ready) gave: `Ok` once an upstream admits the attempt,
    /// or the give-up, the caller's error made by `held_back`, where the hold would outlast
    /// the call.
    pub(crate) fn poll_hold<R, A, S, E>(
        &mut self,
        admitting: Pin<&mut Admitting<S>>,
        run: &mut Run<R, A>,
        cx: &mut Context<'_>,
        held_back: impl FnOnce(UpstreamPaused) -> E,
    ) -> Poll<Result<(), GaveUp<E>>>
    where
        R: Source<Clock: Clock<Sleep = S>>,
        A: Count,
        S: std::future::Future<Output = ()>,
        E: Classify + fmt::Display,
    {
        match ready!(admitting.poll_admit(run, cx, held_back)) {
            Ok(ticket) => {
                if let PlacedOn::Across(set, route) = &mut self.to {
                    route.admitted(set, ticket.upstream());
                }
                self.ticket = Some(ticket);
                Poll::Ready(Ok(()))
            }
            Err(gave_up) => Poll::Ready(Err(self.gave_up(gave_up, false))),
        }
    }

    /// The upstream the next attempt goes to (or the one in progress), if any.
    pub(crate) fn upstream(&self) -> Option<&'static Upstream> {
        match &self.to {
            PlacedOn::Nowhere => None,
            PlacedOn::One(upstream) => Some(upstream),
            PlacedOn::Across(set, route) => Some(route.upstream(set)),
        }
    }

    /// The attempt succeeded (a stream's: it reached its commit point).
    pub(crate) fn succeeded(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            ticket.succeeded();
        }
    }

    /// The attempt failed with `error`, of `class`: the upstream is told; across a set, the
    /// call moves at once where the failure moves it (unless it `stays`), else the ladder's
    /// turn follows, in a new round. A give-up here carries the route's report.
    pub(crate) fn failed<R, A, E>(
        &mut self,
        run: &mut Run<R, A>,
        error: E,
        class: Class,
        stays: bool,
    ) -> Next<E>
    where
        R: Source,
        A: Count,
        E: Classify + fmt::Display,
    {
        let ticket = self.ticket.take();
        match (&mut self.to, ticket) {
            (PlacedOn::Across(set, route), Some(ticket)) if !stays => {
                match route.failed_as(set, ticket, run, error, class) {
                    Next::Moved => Next::Moved,
                    // The ladder's wait follows, and a new round after it.
                    Next::Ladder(error, class) => {
                        route.waited();
                        Next::Ladder(error, class)
                    }
                    Next::GaveUp(gave_up) => Next::GaveUp(route.gave_up(set, gave_up, true)),
                }
            }
            (to, ticket) => {
                if let Some(ticket) = ticket {
                    ticket.failed(class, run);
                }
                if let PlacedOn::Across(set, route) = to {
                    route.stayed(set, class, &error);
                }
                Next::Ladder(error, class)
            }
        }
    }

    /// The call gives up with `gave_up` (`failed`: on an attempt's failure): across a set, it
    /// carries how the call left each upstream.
    pub(crate) fn gave_up<E>(&mut self, gave_up: GaveUp<E>, failed: bool) -> GaveUp<E> {
        match &mut self.to {
            PlacedOn::Across(set, route) => route.gave_up(set, gave_up, failed),
            _ => gave_up,
        }
    }
}
