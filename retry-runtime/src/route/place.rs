//! [`Place`]: the steps a driver takes around each attempt on what its call keeps of its
//! placement: nothing, an upstream's admission, or a route across a set.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::admission::{AdmissionKept, Admitted, admit};
use crate::class::{Class, Classify};
use crate::engine::{Call, Held, Source};
use crate::fallback::{Next, Routed, UpstreamsKept};
use crate::upstream::{OnUpstream, UpstreamPaused};
use crate::verdict::GaveUp;

/// What a call keeps of its placement, and the steps every driver takes on it, in this order
/// around each attempt: [`ready`](Self::ready) (the fast path: admitted at once), else
/// [`hold`](Self::hold) (the wait for the upstream or the set); then [`succeeded`](Self::succeeded),
/// or [`failed`](Self::failed) with the failure's class (the upstream told, the round noted,
/// a move at once or the ladder's turn); after the ladder's wait, [`waited`](Self::waited); and
/// [`gave_up`](Self::gave_up) on the call's give-up. Not public API.
#[doc(hidden)]
pub trait Place: Held + Sized {
    /// What a hold that would outlast the call gives the caller to make its error from.
    type Paused;

    /// The attempt is admitted at once (`true`): nothing to say, one atomic read.
    fn ready<R: Source>(call: &mut Call<R, Self>) -> bool;

    /// The attempt is admitted after a wait, or the call gives up with the caller's error,
    /// made by `hold`.
    fn hold<R: Source, E: Classify + fmt::Display>(
        call: &mut Call<R, Self>,
        hold: fn(Self::Paused) -> E,
        tokens: u32,
    ) -> impl Future<Output = Result<(), GaveUp<E>>>;

    /// An attempt's future as the call polls it: on its upstream, as [`Upstream::current`],
    /// where it has one.
    type Polled<F: Future>: Future<Output = F::Output>;

    /// `attempt`, polled on the call's upstream.
    fn polled<R: Source, F: Future>(call: &Call<R, Self>, attempt: F) -> Self::Polled<F>;

    /// The attempt succeeded.
    fn succeeded<R: Source>(call: &mut Call<R, Self>);

    /// The attempt failed with `error`, of `class`: the upstream is told; the call moves at
    /// once, or leaves the failure to its ladder.
    fn failed<R: Source, E: Classify + fmt::Display>(
        call: &mut Call<R, Self>,
        error: E,
        class: Class,
    ) -> Next<E>;

    /// The ladder's wait is over.
    #[inline(always)]
    fn waited<R: Source>(call: &mut Call<R, Self>) {
        let _ = call;
    }

    /// The call gives up with `gave_up` (`failed`: on an attempt's failure): the report of the
    /// upstreams it left, where it has one, is made now, and only now.
    #[inline(always)]
    fn gave_up<R: Source, E>(
        call: &mut Call<R, Self>,
        gave_up: GaveUp<E>,
        failed: bool,
    ) -> GaveUp<E> {
        let _ = (call, failed);
        gave_up
    }
}

/// An error type a placement's hold can be given back as: every type, where there is no
/// upstream to hold it; one that holds an [`UpstreamPaused`] otherwise. Not public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a retry on an upstream needs an error type that can hold a `retry_runtime::UpstreamPaused`, and `{Self}` cannot",
    label = "`{Self}` does not implement `From<retry_runtime::UpstreamPaused>`",
    note = "add a variant for it to `{Self}` (with thiserror: `#[error(transparent)] Paused(#[from] retry_runtime::UpstreamPaused)`), or `impl From<retry_runtime::UpstreamPaused> for {Self}`: an attempt held back past the call's end by the upstream's pause or outage gate becomes one"
)]
pub trait HeldBack<P> {
    /// The error of an attempt held back.
    fn held_back(paused: P) -> Self;
}

impl<E> HeldBack<Infallible> for E {
    #[inline(always)]
    fn held_back(paused: Infallible) -> Self {
        match paused {}
    }
}

impl<E: From<UpstreamPaused>> HeldBack<UpstreamPaused> for E {
    #[inline]
    fn held_back(paused: UpstreamPaused) -> Self {
        E::from(paused)
    }
}

/// No upstream: every step is nothing, and compiles away.
impl Place for () {
    type Paused = Infallible;

    #[inline(always)]
    fn ready<R: Source>(_: &mut Call<R>) -> bool {
        true
    }

    #[inline(always)]
    fn hold<R: Source, E: Classify + fmt::Display>(
        _: &mut Call<R>,
        _: fn(Infallible) -> E,
        _: u32,
    ) -> impl Future<Output = Result<(), GaveUp<E>>> {
        NoHold(PhantomData)
    }

    type Polled<F: Future> = F;

    #[inline(always)]
    fn polled<R: Source, F: Future>(_: &Call<R>, attempt: F) -> F {
        attempt
    }

    #[inline(always)]
    fn succeeded<R: Source>(_: &mut Call<R>) {}

    #[inline(always)]
    fn failed<R: Source, E: Classify + fmt::Display>(
        _: &mut Call<R>,
        error: E,
        class: Class,
    ) -> Next<E> {
        Next::Ladder(error, class)
    }
}

/// The hold of a call with no upstream, never made (its `ready` is always true): ready at
/// once, and holding nothing, so that the call's future gains no drop of its own for it.
struct NoHold<E>(PhantomData<fn() -> E>);

impl<E> Future for NoHold<E> {
    type Output = Result<(), GaveUp<E>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(()))
    }
}

/// One upstream: admitted by it first, and it told how the attempt ended; never a move.
impl<K: AdmissionKept> Place for K {
    type Paused = UpstreamPaused;

    #[inline(always)]
    fn ready<R: Source>(call: &mut Call<R, K>) -> bool {
        crate::admission::at_once(call)
    }

    async fn hold<R: Source, E: Classify + fmt::Display>(
        call: &mut Call<R, K>,
        hold: fn(UpstreamPaused) -> E,
        tokens: u32,
    ) -> Result<(), GaveUp<E>> {
        let (run, kept) = call.parts();
        let ticket = admit(run, kept.upstream(), hold, true, tokens).await?;
        let admitted = ticket.into_admitted();
        kept.step(|into| *into = admitted);
        Ok(())
    }

    type Polled<F: Future> = OnUpstream<F>;

    #[inline(always)]
    fn polled<R: Source, F: Future>(call: &Call<R, K>, attempt: F) -> OnUpstream<F> {
        OnUpstream::new(call.kept().upstream(), attempt)
    }

    #[inline(always)]
    fn succeeded<R: Source>(call: &mut Call<R, K>) {
        let kept = call.parts().1;
        if kept.word().to_tell() {
            kept.step(Admitted::succeeded);
        }
    }

    #[inline]
    fn failed<R: Source, E: Classify + fmt::Display>(
        call: &mut Call<R, K>,
        error: E,
        class: Class,
    ) -> Next<E> {
        let (run, kept) = call.parts();
        kept.step(|admitted| admitted.failed(class, run));
        Next::Ladder(error, class)
    }
}

/// An ordered set: routed to the first upstream that admits the attempt, moved at once on a
/// failure another may not share, a new round after each wait.
impl<S: UpstreamsKept> Place for Routed<S> {
    type Paused = UpstreamPaused;

    #[inline(always)]
    fn ready<R: Source>(call: &mut Call<R, Self>) -> bool {
        crate::fallback::at_once(call)
    }

    fn hold<R: Source, E: Classify + fmt::Display>(
        call: &mut Call<R, Self>,
        hold: fn(UpstreamPaused) -> E,
        _: u32,
    ) -> impl Future<Output = Result<(), GaveUp<E>>> {
        crate::fallback::admit_routed(call, hold)
    }

    type Polled<F: Future> = OnUpstream<F>;

    #[inline(always)]
    fn polled<R: Source, F: Future>(call: &Call<R, Self>, attempt: F) -> OnUpstream<F> {
        OnUpstream::new(call.kept().upstream(), attempt)
    }

    #[inline(always)]
    fn succeeded<R: Source>(call: &mut Call<R, Self>) {
        call.parts().1.succeeded();
    }

    #[inline]
    fn failed<R: Source, E: Classify + fmt::Display>(
        call: &mut Call<R, Self>,
        error: E,
        class: Class,
    ) -> Next<E> {
        crate::fallback::routed_failed(call, error, class)
    }

    #[inline(always)]
    fn waited<R: Source>(call: &mut Call<R, Self>) {
        call.parts().1.waited();
    }

    #[inline]
    fn gave_up<R: Source, E>(
        call: &mut Call<R, Self>,
        gave_up: GaveUp<E>,
        failed: bool,
    ) -> GaveUp<E> {
        call.parts().1.gave_up(gave_up, failed)
    }
}
