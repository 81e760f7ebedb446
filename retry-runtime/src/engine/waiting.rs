//! A call's wait with the call it belongs to: [`Run::failed`] makes it, a [`Waiting`], what
//! [`Retry::run`](super::Retry::run)'s and `#[retry]`'s futures hold in place between two
//! attempts. It owns only the pairing: the wait (`wait.rs`) sleeps, the run (`run.rs`) decides,
//! listens for the turn's cancel and accounts for the wait once it is over.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::count::Count;
use super::run::Run;
use super::source::Source;
use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::verdict::GaveUp;
use crate::wait::Wait;

pin_project_lite::pin_project! {
    /// What follows a call's failed attempt, held in place in the caller's future: the wait
    /// before the next attempt, with the call, or the give-up, ready at once. Awaited, it
    /// resolves once the wait is over and accounted for: `Ok` to go on, or the give-up, with
    /// the failure (of a ladder that stopped, or of a call whose turn was cancelled during the
    /// wait). A retry allocates nothing. The call's reference is the one word it adds to the
    /// wait: through it the wait hears its turn's cancel, whose listener the call's flight
    /// keeps. Not public API.
    ///
    /// Like [`Run`], it has no bound of its own (the sleep is a parameter, not the clock's
    /// projection), so a future that holds it is `Send` whatever lifetimes the configuration
    /// borrows.
    #[doc(hidden)]
    #[must_use = "a wait does nothing unless it is awaited"]
    #[project = WaitingProj]
    pub enum Waiting<'a, R, S, E> {
        /// The wait before the next attempt.
        Wait {
            run: &'a mut Run<R>,
            #[pin]
            wait: Wait<S, E>,
        },
        /// The ladder stopped: the give-up (`None` once returned).
        GaveUp { gave_up: Option<GaveUp<E>> },
    }
}

impl<'a, R, S, E> Waiting<'a, R, S, E> {
    /// `run`'s `wait`.
    #[inline]
    pub(super) fn wait(run: &'a mut Run<R>, wait: Wait<S, E>) -> Self {
        Waiting::Wait { run, wait }
    }

    /// The give-up, ready at once.
    #[inline]
    pub(super) fn gave_up(gave_up: GaveUp<E>) -> Self {
        Waiting::GaveUp {
            gave_up: Some(gave_up),
        }
    }
}

impl<R: Source> Run<R> {
    /// Decide on a failure: the wait before the next attempt, with this call, or the failure
    /// given up on, unchanged, ready at once. Await it: `Ok` to go on. The wait is held in
    /// place in the caller's future, so a retry allocates nothing (inside a turn, the call's
    /// flight, made at its first attempt, keeps what listens for the turn's cancel).
    #[inline]
    pub fn failed<E>(&mut self, error: E) -> Waiting<'_, R, <R::Clock as Clock>::Sleep, E>
    where
        E: Classify + fmt::Display,
    {
        let class = error.classify();
        self.failed_as(error, class)
    }

    /// [`failed`](Self::failed), the error classified already (once, by the caller that told
    /// its upstream or its route): `class`.
    #[inline]
    pub fn failed_as<E>(
        &mut self,
        error: E,
        class: Class,
    ) -> Waiting<'_, R, <R::Clock as Clock>::Sleep, E>
    where
        E: Classify + fmt::Display,
    {
        // `failed_after`'s body, written out: the wait is then made in the `Waiting` itself,
        // which callgrind counts as about 19 instructions a retry fewer than moving it there.
        let reached = error.reached();
        match self.wait_after(&error, class, reached, None) {
            Ok(wait) => {
                let sleep = self.sleep_for(wait);
                Waiting::wait(self, Wait::new(error, sleep))
            }
            Err(reason) => Waiting::gave_up(self.give_up(error, class, reason, reached)),
        }
    }
}

impl<R: Source, A: Count> Run<R, A> {
    /// A failure, decided on the run's facts (and a stream's, for a stream's attempt): the
    /// wait before the next attempt, handed back for a future that owns the run to hold (a
    /// stream's, a layer's call), or the give-up. A stream's failure after its commit point
    /// ends the call (a retry would repeat what the caller has), unless the caller opted in
    /// to a restart or it resumes.
    #[cfg(any(feature = "stream", feature = "tower", feature = "reqwest-middleware"))]
    #[inline]
    pub(crate) fn failed_to_wait<E>(
        &mut self,
        error: E,
        class: Class,
        stream: Option<&super::run::facts::StreamFacts<'_>>,
    ) -> Result<Wait<<R::Clock as Clock>::Sleep, E>, GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        // How far the attempt got: the stream's own account, else the error's.
        let reached = match stream.map(|stream| stream.reached) {
            Some(reached) if reached != crate::notice::Reached::Nothing => reached,
            _ => error.reached(),
        };
        match self.wait_after(&error, class, reached, stream) {
            Ok(wait) => Ok(Wait::new(error, self.sleep_for(wait))),
            Err(reason) => Err(self.give_up(error, class, reason, reached)),
        }
    }
}

impl<R, S, E> Future for Waiting<'_, R, S, E>
where
    R: Source<Clock: Clock<Sleep = S>>,
    S: Future<Output = ()>,
    E: Classify + fmt::Display,
{
    type Output = Result<(), GaveUp<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            WaitingProj::Wait { run, wait } => {
                let waited = ready!(run.poll_wait(wait, cx));
                Poll::Ready(run.waited(waited))
            }
            WaitingProj::GaveUp { gave_up } => match gave_up.take() {
                Some(gave_up) => Poll::Ready(Err(gave_up)),
                None => panic!("a retry's give-up polled after it was returned"),
            },
        }
    }
}

impl<R, S, E> fmt::Debug for Waiting<'_, R, S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Waiting::Wait { .. } => "Wait",
            Waiting::GaveUp { .. } => "GaveUp",
        };
        f.debug_tuple("Waiting").field(&what).finish()
    }
}
