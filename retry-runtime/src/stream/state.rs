//! The states of a [`RetryStream`](super::RetryStream), each with what it needs, and what the
//! states share: the run, `open`, the rules and the attempt's nesting frame. Data only: the
//! stream's builders and poll live in `retry_stream.rs`, an attempt's polls in `attempt.rs`,
//! the cursor in `resume.rs`.

use std::collections::VecDeque;
use std::task::Poll;
use std::time::Duration;

use futures_core::{TryFuture, TryStream};

use super::ended::EndedEarly;
use super::hold::Limits;
use super::open::OpenAttempt;
use super::resume::ResumeFrom;
use crate::admission::Admitting;
use crate::clock::Clock;
use crate::engine::{Clocked, Run};
use crate::nesting;
use crate::route::Placing;
use crate::timeout::TimedOut;
use crate::turn::flight::AfterWait;
use crate::upstream::UpstreamPaused;
use crate::verdict::GaveUp;
use crate::wait::Wait;

/// The future `open` (`O`) returns, its stream, the stream's item and the error; the
/// future `reopen` (`Re`) returns; the sleep of the retry's (`R`) clock. A stream's types all
/// follow from these three.
pub(super) type Fut<O> = <O as OpenAttempt<u32>>::Future;
pub(super) type Inner<O> = <Fut<O> as TryFuture>::Ok;
pub(super) type Item<O> = <Inner<O> as TryStream>::Ok;
pub(super) type Error<O> = <Fut<O> as TryFuture>::Error;
pub(super) type Refut<Re> = <Re as OpenAttempt<ResumeFrom>>::Future;
pub(super) type Sleep<R> = <<R as Clocked>::Clock as Clock>::Sleep;

/// What the stream yields.
pub(super) type Yielded<O> = Result<Item<O>, GaveUp<Error<O>>>;

/// The state of a stream opened by `O` and reopened by `Re`, under the retry `R`.
pub(super) type StateOf<R, O, Re> =
    StreamState<Fut<O>, Refut<Re>, Inner<O>, Item<O>, Sleep<R>, Error<O>>;

pin_project_lite::pin_project! {
    /// Where a [`RetryStream`] is, with what that place needs.
    #[project = StateProj]
    pub(super) enum StreamState<Fut, ReFut, S, T, W, E> {
        /// The next attempt is to be opened, or (`resumes`) resumed from the cursor.
        Start { resumes: bool },
        /// `open`'s future is running.
        Opening { #[pin] future: Fut },
        /// Waiting for the upstream to admit the next attempt, an open or (`resumes`) a
        /// resume.
        Admitting { #[pin] admitting: Admitting<W>, resumes: bool },
        /// The resume function's future is running.
        Reopening { #[pin] future: ReFut },
        /// The attempt's stream is open, and `flow` says how far it has got.
        Open { #[pin] stream: S, flow: Flow<T> },
        /// The stream ended at its commit point, or is complete: what it held, then the end.
        Draining { held: VecDeque<T> },
        /// Waiting before the next attempt, which is `next`: a retry, a restart or a resume.
        Waiting { #[pin] wait: Wait<W, E>, next: AfterWait },
        /// Over: it has returned its last item, or its give-up.
        Done,
    }
}

/// How far an open stream has got.
pub(super) enum Flow<T> {
    /// Before the commit point: its items are held (in the stream's hold, which a resume
    /// keeps).
    Holding,
    /// Committed: what was held is being delivered.
    Releasing(VecDeque<T>),
    /// Committed, and what was held delivered: items pass through.
    Passing,
}

/// What a stream is configured with, beyond its [`StreamRules`](super::StreamRules): how it
/// weighs and holds items, its timeouts, and how its error holds a timeout or an early end.
pub(super) struct Settings<T, E> {
    pub(super) weigh: fn(&T) -> usize,
    pub(super) limits: Limits,
    pub(super) commit_timeout: Option<Duration>,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) timed_out: Option<fn(TimedOut) -> E>,
    pub(super) ended_early: Option<fn(EndedEarly) -> E>,
    pub(super) before_content: bool,
    /// How the error holds an attempt the stream's upstream held back past its end.
    pub(super) paused: Option<fn(UpstreamPaused) -> E>,
}

pub(super) struct StreamCore<R, O> {
    pub(super) run: Run<R, u32>,
    /// What the run does when the stream is dropped ([`dropped`] for this `R`), kept as a
    /// pointer so that the stream itself needs no bound.
    pub(super) dropped: fn(&mut Run<R, u32>, Output),
    pub(super) open: O,
    pub(super) frame: nesting::Frame,
    /// How far the stream's output has gone: the one place the stream keeps its commit.
    pub(super) output: Output,
    /// The stream has reached its commit point once: a later commit is a restart's.
    pub(super) delivered: bool,
    /// The caller opted in to restarting the stream after its commit point.
    pub(super) restartable: bool,
    /// Where the stream's attempts go: the one field of its upstream or its set, and the
    /// admission of the attempt in progress.
    pub(super) place: Placing,
}

impl<R, O> StreamCore<R, O> {
    /// Whether the stream has delivered output: past its commit point, or waiting to resume
    /// (or resuming) a stream that was.
    pub(super) fn committed(&self) -> bool {
        self.output != Output::None
    }
}

/// How far a stream's output has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    /// None yet: before the commit point, or after a failure that opens the stream afresh.
    None,
    /// The current attempt is delivering: past its commit point, or a resume of a stream that
    /// was.
    Flowing,
    /// Output was delivered, and the attempt that delivered it failed: the stream waits to
    /// resume, or is resuming.
    Delivered,
}

impl<R, O> Drop for StreamCore<R, O> {
    /// Dropped unfinished, the call reports itself; after its commit point it has finished.
    fn drop(&mut self) {
        (self.dropped)(&mut self.run, self.output);
    }
}

/// A stream dropped: once it has delivered output it has finished (its output reached the
/// caller), its last attempt a success only if it was delivering; before, it is a call
/// dropped unfinished.
pub(super) fn dropped<R: crate::engine::Source>(run: &mut Run<R, u32>, output: Output) {
    match output {
        Output::Flowing => run.ended(true),
        // Between attempts: the one that delivered was counted when it failed.
        Output::Delivered => run.ended(false),
        Output::None => {}
    }
    run.dropped(|| ());
}

/// What a state's poll says to do next.
pub(super) enum Then<St, Y> {
    /// Return this.
    Yield(Poll<Option<Y>>),
    /// Go on in the state this became.
    Become(St),
    /// End the stream with this last item (or none): it is done.
    End(Option<Y>),
    /// Yield this item, the stream's complete one: the next poll ends it.
    Last(Y),
    /// Go on in the same state (it changed inside).
    Again,
}
