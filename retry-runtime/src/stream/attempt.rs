//! One attempt's polls, for [`RetryStream`](super::RetryStream)'s states: open it, wait for
//! its stream, hold its items to the commit point and release them, pass them through after
//! it, fail, and wait before the next. Each says what to do next ([`Then`]); none does I/O
//! of its own beyond polling what it is given.

use std::fmt;
use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::{TryFuture, TryStream};

use super::ended::EndedEarly;
use super::hold::Hold;
use super::state::{Core, Flow, Item, Rules, State, Then, Yielded};
use super::timer::Timer;
use crate::class::Classify;
use crate::clock::Clock;
use crate::engine::{Run, Source};
use crate::nesting;
use crate::timeout::TimeoutBound;
use crate::turn::scope as turn;
use crate::wait::{Wait, Waited};

/// The state type of a [`RetryStream`], and what its polls say to do next.
pub(super) type StateOf<Fut, W> =
    State<Fut, <Fut as TryFuture>::Ok, Item<Fut>, W, <Fut as TryFuture>::Error>;
pub(super) type Next<Fut, W> = Then<StateOf<Fut, W>, Yielded<Fut>>;

/// Open the next attempt, under its timer.
pub(super) fn open<R, O, Fut, H>(
    core: &mut Core<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H>,
    timer: Pin<&mut Timer>,
) -> Fut
where
    R: Source,
    O: FnMut(u32) -> Fut,
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
    let attempt = core.run.attempts().saturating_add(1);
    core.frame = nesting::Frame::default();
    let future = nesting::enter(&mut core.frame, || (core.open)(attempt));
    core.run.begin_attempt();
    let (fixed, idle) = match rules.timed_out {
        Some(_) => (
            attempt_bound(&core.run, rules.commit_timeout),
            rules.idle_timeout,
        ),
        None => (None, None),
    };
    timer.arm(fixed, idle);
    future
}

/// When an attempt must have committed: the sooner of the attempt timeout and
/// `commit_timeout`, bounded by the turn and a literal budget.
fn attempt_bound<R: Source>(
    run: &Run<R>,
    commit_timeout: Option<Duration>,
) -> Option<(tokio::time::Instant, TimeoutBound)> {
    let own = match (run.attempt_timeout(), commit_timeout) {
        (Some(attempt), Some(commit)) if commit <= attempt => (commit, TimeoutBound::Commit),
        (Some(attempt), _) => (attempt, TimeoutBound::Timeout),
        (None, Some(commit)) => (commit, TimeoutBound::Commit),
        (None, None) => return None,
    };
    match run.bound(Some(own), true) {
        (Some(at), bound) => Some((at, bound)),
        (None, _) => None,
    }
}

/// Whether the attempt's timer fired: its error, if so.
fn timed_out<T, E, H>(
    timer: Pin<&mut Timer>,
    rules: &Rules<T, E, H>,
    cx: &mut Context<'_>,
) -> Option<E> {
    let timed_out = timer.expired(cx)?;
    rules.timed_out.map(|to_error| to_error(timed_out))
}

/// A failure of the attempt: the wait before the next, or the give-up that ends the stream.
/// The state it becomes drops the attempt and all it held.
fn fail<R, O, Fut, W>(core: &mut Core<R, O>, error: Fut::Error, opened: bool) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
{
    core.run.note_frame(mem::take(&mut core.frame));
    match core.run.stream_failed(error, opened) {
        Ok(wait) => Then::Become(State::Waiting { wait }),
        Err(gave_up) => Then::End(Some(Err(gave_up))),
    }
}

/// The commit point: the call's output goes to the caller; a restart's hook runs first. After
/// it, only the idle bound and the turn time the stream.
fn commit<R, O, T, E, H: FnMut()>(
    core: &mut Core<R, O>,
    rules: &mut Rules<T, E, H>,
    timer: Pin<&mut Timer>,
) where
    R: Source,
{
    core.run.note_frame(mem::take(&mut core.frame));
    if core.run.commit() {
        (rules.restart)();
    }
    match (rules.timed_out, rules.idle_timeout) {
        (Some(_), Some(idle)) => {
            let turn = turn::expiry().map(|at| (at, TimeoutBound::Turn));
            timer.arm(turn, Some(idle));
        }
        _ => timer.arm(None, None),
    }
}

/// Poll `open`'s future: the attempt's stream, or its failure.
pub(super) fn opening<R, O, Fut, H, W>(
    future: Pin<&mut Fut>,
    timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
{
    let failure = match nesting::enter(&mut core.frame, || future.try_poll(cx)) {
        Poll::Ready(Ok(stream)) => {
            return Then::Become(State::Open {
                stream,
                flow: Flow::Holding(Hold::new(rules.limits)),
            });
        }
        Poll::Ready(Err(error)) => error,
        Poll::Pending => match timed_out(timer, rules, cx) {
            Some(error) => error,
            None => return Then::Yield(Poll::Pending),
        },
    };
    fail::<R, O, Fut, W>(core, failure, false)
}

/// Poll an open stream before its commit point, or deliver what it held at it.
pub(super) fn hold_or_release<R, O, Fut, H, W>(
    stream: Pin<&mut Fut::Ok>,
    flow: &mut Flow<Item<Fut>>,
    mut timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &mut Rules<Item<Fut>, Fut::Error, H>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
    H: FnMut(),
{
    let hold = match flow {
        Flow::Holding(hold) => hold,
        Flow::Releasing(held) => {
            return match held.pop_front() {
                Some(item) => Then::Yield(Poll::Ready(Some(Ok(item)))),
                None => {
                    *flow = Flow::Passing;
                    Then::Again
                }
            };
        }
        // The stream's poll sends a passing stream to `pass` first; this is the same step.
        Flow::Passing => return pass(stream, timer, core, rules, cx),
    };
    match holding(stream, hold, timer.as_mut(), core, rules, cx) {
        Held::Pending => Then::Yield(Poll::Pending),
        Held::Failed(error) => fail::<R, O, Fut, W>(core, error, true),
        Held::Passed(item) => {
            commit(core, rules, timer);
            *flow = Flow::Passing;
            Then::Yield(Poll::Ready(Some(Ok(item))))
        }
        Held::Full => {
            let held = mem::replace(hold, Hold::new(rules.limits)).release();
            commit(core, rules, timer);
            *flow = Flow::Releasing(held);
            Then::Again
        }
        Held::Ended => {
            let held = mem::replace(hold, Hold::new(rules.limits)).release();
            commit(core, rules, timer);
            Then::Become(State::Draining { held })
        }
    }
}

/// What a poll before the commit point found.
enum Held<T, E> {
    /// Nothing yet.
    Pending,
    /// A failure: the attempt is over.
    Failed(E),
    /// The first item is content: it commits without being held.
    Passed(T),
    /// Content after a preamble, or the hold is full: it commits.
    Full,
    /// The stream ended, and every item commits (no rule): it commits, and ends.
    Ended,
}

/// Poll the stream before its commit point, holding its items, until it commits or fails.
fn holding<R, O, S, E, H>(
    mut stream: Pin<&mut S>,
    hold: &mut Hold<S::Ok>,
    mut timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &Rules<S::Ok, E, H>,
    cx: &mut Context<'_>,
) -> Held<S::Ok, E>
where
    S: TryStream,
    S::Error: Into<E>,
{
    loop {
        let polled = nesting::enter(&mut core.frame, || stream.as_mut().try_poll_next(cx));
        return match polled {
            Poll::Ready(Some(Ok(item))) => {
                timer.as_mut().item();
                let content = (rules.commit)(&item);
                if content && hold.is_empty() {
                    return Held::Passed(item);
                }
                let commits = hold.count(content, (rules.weigh)(&item));
                hold.keep(item);
                if !commits {
                    continue;
                }
                Held::Full
            }
            Poll::Ready(Some(Err(error))) => Held::Failed(error.into()),
            Poll::Ready(None) => match rules.ended_early {
                Some(ended_early) => Held::Failed(ended_early(EndedEarly::new(hold.counted()))),
                None => Held::Ended,
            },
            Poll::Pending => match timed_out(timer, rules, cx) {
                Some(error) => Held::Failed(error),
                None => Held::Pending,
            },
        };
    }
}

/// Poll the stream after its commit point: the hot path, an item passed through.
#[inline]
pub(super) fn pass<R, O, Fut, H, W>(
    stream: Pin<&mut Fut::Ok>,
    timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
{
    let failure = match stream.try_poll_next(cx) {
        Poll::Ready(Some(Ok(item))) => {
            if timer.is_armed() {
                timer.item();
            }
            return Then::Yield(Poll::Ready(Some(Ok(item))));
        }
        Poll::Ready(Some(Err(error))) => error.into(),
        Poll::Ready(None) => {
            core.run.ended_after_commit();
            return Then::End(None);
        }
        Poll::Pending if !timer.is_armed() => return Then::Yield(Poll::Pending),
        Poll::Pending => match timed_out(timer, rules, cx) {
            Some(error) => error,
            None => return Then::Yield(Poll::Pending),
        },
    };
    fail::<R, O, Fut, W>(core, failure, true)
}

/// Wait before the next attempt; a cancel of the turn ends the stream.
pub(super) fn waiting<R, O, Fut, W>(
    wait: &mut Wait<W, Fut::Error>,
    core: &mut Core<R, O>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
    W: Future<Output = ()>,
{
    let waited: Waited<Fut::Error> = match Pin::new(wait).poll(cx) {
        Poll::Ready(waited) => waited,
        Poll::Pending => return Then::Yield(Poll::Pending),
    };
    match core.run.waited(waited) {
        Ok(()) => Then::Become(State::Start),
        Err(gave_up) => Then::End(Some(Err(gave_up))),
    }
}
