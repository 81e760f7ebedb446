//! One attempt's polls, for [`RetryStream`](super::RetryStream)'s states: open it (or reopen
//! it from its cursor), wait for its stream, hold its items to the commit point and release
//! them, pass them through after it, fail, and wait before the next. Each says what to do
//! next ([`Then`]); none does I/O of its own beyond polling what it is given.

use std::fmt;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::{TryFuture, TryStream};

use super::ended::EndedEarly;
use super::hold::Hold;
use super::resume::{Resume, ResumeFrom, Taken};
use super::state::{Flow, Item, Output, Rules, Shared, State, Then, Yielded};
use super::timer::{Phase, Timeouts, Timer, bounds};
use crate::class::Classify;
use crate::clock::Clock;
use crate::engine::{Run, Source, StreamFacts};
use crate::nesting;
use crate::notice::Reached;
use crate::timeout::TimedOut;
use crate::turn::flight::AfterWait;
use crate::wait::{Wait, Waited};

/// The state type of a [`RetryStream`], and what its polls say to do next.
pub(super) type StateOf<Fut, ReFut, W> =
    State<Fut, ReFut, <Fut as TryFuture>::Ok, Item<Fut>, W, <Fut as TryFuture>::Error>;
pub(super) type Advance<Fut, ReFut, W> = Then<StateOf<Fut, ReFut, W>, Yielded<Fut>>;

/// A committed stream's poll: what to return at once (its item, or pending), or what to do.
pub(super) enum Passed<Fut, ReFut, W>
where
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
    /// Return this: the hot path.
    Now(Poll<Option<Yielded<Fut>>>),
    /// Do this.
    Then(Advance<Fut, ReFut, W>),
}

/// What one attempt hands to the next: the items held before the commit point, and the
/// cursor. A fresh open starts both again; a resume keeps them.
pub(super) struct Carry<S, T, Re, Q> {
    pub(super) hold: Hold<T>,
    pub(super) resume: Resume<S, T, Re, Q>,
}

/// Open the next attempt, under its timer: the state that runs `open`'s future, or (if it
/// `resumes`) the resume's.
pub(super) fn open<R, O, Fut, H, W, Re, ReFut, C, K, Q>(
    core: &mut Shared<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H, C, K>,
    carry: &mut Carry<Fut::Ok, Item<Fut>, Re, Q>,
    timer: Pin<&mut Timer>,
    resumes: bool,
) -> StateOf<Fut, ReFut, W>
where
    R: Source,
    O: FnMut(u32) -> Fut,
    Re: FnMut(ResumeFrom) -> ReFut,
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
    let attempt = core.run.attempts().saturating_add(1);
    core.frame = nesting::Frame::default();
    let resume = &mut carry.resume;
    let from = resumes.then(|| resume.from(attempt));
    let (future, resumed) = match (from, resume.reopen.as_mut()) {
        (Some(from), Some(reopen)) => {
            let future = nesting::enter(&mut core.frame, || reopen(from));
            (State::Reopening { future }, true)
        }
        _ => {
            carry.hold.clear();
            let future = nesting::enter(&mut core.frame, || (core.open)(attempt));
            (State::Opening { future }, false)
        }
    };
    resume.begin(resumed);
    core.run.begin_attempt();
    let phase = Phase::Begins {
        resumed,
        was_committed: core.committed(),
    };
    rearm(&core.run, rules, resume, timer, phase);
    future
}

/// Arm the attempt's timer for `phase`, as [`bounds`] says.
fn rearm<R, T, E, H, S, Re, C, K, Q>(
    run: &Run<R, u32>,
    rules: &Rules<T, E, H, C, K>,
    resume: &Resume<S, T, Re, Q>,
    timer: Pin<&mut Timer>,
    phase: Phase,
) where
    R: Source,
{
    let timeouts = Timeouts {
        timed: rules.timed_out.is_some(),
        commit: rules.commit_timeout,
        idle: rules.idle_timeout,
        silence: resume.silence,
    };
    if let Some((fixed, idle)) = bounds(run, timeouts, phase) {
        timer.arm(fixed, idle);
    }
}

/// Whether `item` (`content` or not) is a replay to drop; a resume's first content hands the
/// attempt's timer back to the stream's own bounds.
fn is_replay<R, O, T, E, H, S, Re, C, K, Q>(
    core: &Shared<R, O>,
    rules: &Rules<T, E, H, C, K>,
    resume: &mut Resume<S, T, Re, Q>,
    timer: Pin<&mut Timer>,
    stream: &S,
    item: &T,
    content: bool,
) -> bool
where
    R: Source,
    Q: Fn(&T) -> Option<u64>,
{
    match resume.take(stream, item, content) {
        Taken::Replay => true,
        Taken::New { first_progress } => {
            if first_progress {
                let phase = Phase::Progress {
                    was_committed: core.committed(),
                };
                rearm(&core.run, rules, resume, timer, phase);
            }
            false
        }
    }
}

/// Whether the attempt's timer fired: its error, if so. A resume silent until then brought
/// nothing new.
fn timed_out<T, E, H, S, Re, C, K, Q>(
    timer: Pin<&mut Timer>,
    rules: &Rules<T, E, H, C, K>,
    resume: &Resume<S, T, Re, Q>,
    cx: &mut Context<'_>,
) -> Option<E> {
    let timed_out: TimedOut = timer.expired(cx)?;
    if resume.is_silent_resume() {
        return rules
            .ended_early
            .map(|to_error| to_error(EndedEarly::nothing_new()));
    }
    rules.timed_out.map(|to_error| to_error(timed_out))
}

/// A failure of the attempt: the wait before the next (a resume, where the cursor allows), or
/// the give-up that ends the stream. The state it becomes drops the attempt; a fresh open
/// drops what it held too.
fn fail<R, O, Fut, W, ReFut, Re, Q>(
    core: &mut Shared<R, O>,
    carry: &mut Carry<Fut::Ok, Item<Fut>, Re, Q>,
    error: Fut::Error,
    opened: bool,
) -> Advance<Fut, ReFut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
{
    core.run.note_frame(mem::take(&mut core.frame));
    let resume = &mut carry.resume;
    let resumes = resume.resumes(error.classify(), opened);
    if !resumes {
        // A fresh open follows, or the end: what the attempt held goes with it.
        carry.hold.clear();
    }
    // The cursor as the notice says it: only a resume announces it.
    let text = if resumes {
        resume.text()
    } else {
        String::new()
    };
    let mut facts = StreamFacts {
        reached: match (core.committed(), opened) {
            (true, _) => Reached::Output,
            (false, true) => Reached::Stream,
            (false, false) => Reached::Nothing,
        },
        committed: core.committed(),
        restartable: core.restartable,
        resuming: None,
    };
    // Resumed or not, a resumable stream's failure is decided on the ladder as its last
    // renewal left it.
    if resume.is_on() {
        let (attempts, waited) = (core.run.attempts(), core.run.total_waited());
        facts.resuming = Some(resume.resuming(attempts, waited, &text, (resumes, opened)));
    }
    let next = match resumes {
        true => AfterWait::Resume,
        false if facts.committed && facts.restartable => AfterWait::Restart,
        false => AfterWait::Retry,
    };
    let decided = core.run.stream_failed(error, &facts);
    // A stream resumed after its commit point has still delivered output: a give-up on its
    // reopen says so, and a drop in the wait before it finishes the call.
    core.output = match core.output {
        Output::Flowing | Output::Delivered if resumes => Output::Delivered,
        _ => Output::None,
    };
    match decided {
        Ok(wait) => Then::Become(State::Waiting { wait, next }),
        Err(gave_up) => Then::End(Some(Err(gave_up))),
    }
}

/// The commit point: the call's output goes to the caller; a restart's hook runs first. After
/// it, only the idle bound and the turn time the stream.
fn commit<R, O, T, E, H: FnMut(), S, Re, C, K, Q>(
    core: &mut Shared<R, O>,
    rules: &mut Rules<T, E, H, C, K>,
    resume: &mut Resume<S, T, Re, Q>,
    timer: Pin<&mut Timer>,
) where
    R: Source,
{
    core.run.note_frame(mem::take(&mut core.frame));
    core.output = Output::Flowing;
    if core.delivered {
        // A restart's commit: the caller discards what it had.
        (rules.restart)();
    } else {
        core.delivered = true;
        core.run.delivered();
    }
    let phase = Phase::Commit {
        silent_resume: resume.is_silent_resume(),
    };
    rearm(&core.run, rules, resume, timer, phase);
}

/// Poll `open`'s future, or the resume's: the attempt's stream, or its failure.
pub(super) fn opening<R, O, Fut, F, H, W, ReFut, Re, C, K, Q>(
    future: Pin<&mut F>,
    timer: Pin<&mut Timer>,
    core: &mut Shared<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H, C, K>,
    carry: &mut Carry<Fut::Ok, Item<Fut>, Re, Q>,
    cx: &mut Context<'_>,
) -> Advance<Fut, ReFut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
    F: TryFuture<Ok = Fut::Ok, Error = Fut::Error>,
{
    let failure = match nesting::enter(&mut core.frame, || future.try_poll(cx)) {
        Poll::Ready(Ok(stream)) => {
            // A resume of a stream that had delivered goes on delivering.
            let flow = if carry.resume.is_resumed() && core.committed() {
                core.output = Output::Flowing;
                Flow::Passing
            } else {
                Flow::Holding
            };
            return Then::Become(State::Open { stream, flow });
        }
        Poll::Ready(Err(error)) => error,
        Poll::Pending => match timed_out(timer, rules, &carry.resume, cx) {
            Some(error) => error,
            None => return Then::Yield(Poll::Pending),
        },
    };
    fail::<R, O, Fut, W, ReFut, Re, Q>(core, carry, failure, false)
}

/// Poll an open stream before its commit point, or deliver what it held at it.
pub(super) fn hold_or_release<R, O, Fut, H, W, ReFut, Re, C, K, Q>(
    stream: Pin<&mut Fut::Ok>,
    flow: &mut Flow<Item<Fut>>,
    mut timer: Pin<&mut Timer>,
    core: &mut Shared<R, O>,
    rules: &mut Rules<Item<Fut>, Fut::Error, H, C, K>,
    carry: &mut Carry<Fut::Ok, Item<Fut>, Re, Q>,
    cx: &mut Context<'_>,
) -> Advance<Fut, ReFut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
    H: FnMut(),
    C: Fn(&Item<Fut>) -> bool,
    K: Fn(&Item<Fut>) -> bool,
    Q: Fn(&Item<Fut>) -> Option<u64>,
{
    match flow {
        Flow::Holding => {}
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
        Flow::Passing => {
            return match pass(stream, timer, core, rules, carry, cx) {
                Passed::Now(polled) => Then::Yield(polled),
                Passed::Then(then) => then,
            };
        }
    }
    match holding(stream, timer.as_mut(), core, rules, carry, cx) {
        Held::Pending => Then::Yield(Poll::Pending),
        Held::Failed(error) => fail::<R, O, Fut, W, ReFut, Re, Q>(core, carry, error, true),
        Held::Passed(item) => {
            commit(core, rules, &mut carry.resume, timer);
            *flow = Flow::Passing;
            Then::Yield(Poll::Ready(Some(Ok(item))))
        }
        Held::Full => {
            let held = mem::replace(&mut carry.hold, Hold::new(rules.limits)).release();
            commit(core, rules, &mut carry.resume, timer);
            *flow = Flow::Releasing(held);
            Then::Again
        }
        Held::Ended => {
            let held = mem::replace(&mut carry.hold, Hold::new(rules.limits)).release();
            commit(core, rules, &mut carry.resume, timer);
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
    /// The stream ended, and every item commits (no rule), or it is complete: it commits,
    /// and ends.
    Ended,
}

/// Poll the stream before its commit point, holding its items, until it commits or fails.
fn holding<R, O, S, E, H, Re, C, K, Q>(
    mut stream: Pin<&mut S>,
    mut timer: Pin<&mut Timer>,
    core: &mut Shared<R, O>,
    rules: &Rules<S::Ok, E, H, C, K>,
    carry: &mut Carry<S, S::Ok, Re, Q>,
    cx: &mut Context<'_>,
) -> Held<S::Ok, E>
where
    R: Source,
    S: TryStream,
    S::Error: Into<E>,
    C: Fn(&S::Ok) -> bool,
    K: Fn(&S::Ok) -> bool,
    Q: Fn(&S::Ok) -> Option<u64>,
{
    loop {
        let polled = nesting::enter(&mut core.frame, || stream.as_mut().try_poll_next(cx));
        let failure = match polled {
            Poll::Ready(Some(Ok(item))) => {
                timer.as_mut().item();
                let content = (rules.commit)(&item);
                let resume = &mut carry.resume;
                if resume.is_on()
                    && is_replay(core, rules, resume, timer.as_mut(), &stream, &item, content)
                {
                    continue;
                }
                if rules
                    .complete
                    .as_ref()
                    .is_some_and(|complete| complete(&item))
                {
                    carry.hold.keep(item);
                    return Held::Ended;
                }
                let hold = &mut carry.hold;
                if content && hold.is_empty() {
                    return Held::Passed(item);
                }
                let commits = hold.count(content, (rules.weigh)(&item));
                hold.keep(item);
                if !commits {
                    continue;
                }
                return Held::Full;
            }
            Poll::Ready(Some(Err(error))) => error.into(),
            Poll::Ready(None) => match ended(rules, &carry.resume, Some(carry.hold.counted())) {
                Some(error) => error,
                None => return Held::Ended,
            },
            Poll::Pending => match timed_out(timer, rules, &carry.resume, cx) {
                Some(error) => error,
                None => return Held::Pending,
            },
        };
        carry.resume.note(&stream);
        return Held::Failed(failure);
    }
}

/// A clean end: the failure it is, if any. A resume that brought nothing new has failed; a
/// stream with a complete rule that ends before it was closed early; one with a commit rule
/// that ends before its commit point (`held` items held; `None` past it) ended early.
/// Otherwise it is the end.
fn ended<T, E, H, S, Re, C, K, Q>(
    rules: &Rules<T, E, H, C, K>,
    resume: &Resume<S, T, Re, Q>,
    held: Option<usize>,
) -> Option<E> {
    let to_error = rules.ended_early?;
    let ended = if resume.is_silent_resume() {
        EndedEarly::nothing_new()
    } else if rules.complete.is_some() {
        EndedEarly::incomplete(held.unwrap_or(0))
    } else if let (true, Some(held)) = (rules.before_content, held) {
        EndedEarly::new(held)
    } else {
        return None;
    };
    Some(to_error(ended))
}

/// Poll the stream after its commit point: the hot path, an item passed through. A stream
/// with no idle timer, no resume and no complete rule has nothing to do per item, so its item
/// is returned as it came, not through a [`Then`] (which holds a whole state: a copy of the
/// item into it, and out again, for every event).
#[inline]
pub(super) fn pass<R, O, Fut, H, W, ReFut, Re, C, K, Q>(
    stream: Pin<&mut Fut::Ok>,
    timer: Pin<&mut Timer>,
    core: &mut Shared<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H, C, K>,
    carry: &mut Carry<Fut::Ok, Item<Fut>, Re, Q>,
    cx: &mut Context<'_>,
) -> Passed<Fut, ReFut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
    C: Fn(&Item<Fut>) -> bool,
    K: Fn(&Item<Fut>) -> bool,
    Q: Fn(&Item<Fut>) -> Option<u64>,
{
    let (mut stream, mut timer) = (stream, timer);
    let plain = !timer.is_armed() && !carry.resume.is_on() && rules.complete.is_none();
    let polled = match stream.as_mut().try_poll_next(cx) {
        Poll::Ready(Some(Ok(item))) if plain => return Passed::Now(Poll::Ready(Some(Ok(item)))),
        Poll::Pending if !timer.is_armed() => return Passed::Now(Poll::Pending),
        polled => polled,
    };
    let failure = match polled {
        Poll::Ready(Some(Ok(item))) => {
            if timer.is_armed() {
                timer.as_mut().item();
            }
            let resume = &mut carry.resume;
            if resume.is_on() {
                let content = (rules.commit)(&item);
                if is_replay(core, rules, resume, timer.as_mut(), &stream, &item, content) {
                    return Passed::Then(Then::Again);
                }
            }
            if rules
                .complete
                .as_ref()
                .is_some_and(|complete| complete(&item))
            {
                return Passed::Then(Then::Last(Ok(item)));
            }
            return Passed::Now(Poll::Ready(Some(Ok(item))));
        }
        Poll::Ready(Some(Err(error))) => error.into(),
        Poll::Ready(None) => match ended(rules, &carry.resume, None) {
            Some(error) => error,
            None => {
                core.output = Output::None;
                core.run.ended(true);
                return Passed::Then(Then::End(None));
            }
        },
        Poll::Pending => match timed_out(timer, rules, &carry.resume, cx) {
            Some(error) => error,
            None => return Passed::Now(Poll::Pending),
        },
    };
    carry.resume.note(&stream);
    Passed::Then(fail::<R, O, Fut, W, ReFut, Re, Q>(
        core, carry, failure, true,
    ))
}

/// Wait before the next attempt; a cancel of the turn ends the stream.
pub(super) fn waiting<R, O, Fut, W, ReFut>(
    wait: Pin<&mut Wait<W, Fut::Error>>,
    next: AfterWait,
    core: &mut Shared<R, O>,
    cx: &mut Context<'_>,
) -> Advance<Fut, ReFut, W>
where
    R: Source,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
    R::Clock: Clock<Sleep = W>,
{
    let waited: Waited<Fut::Error> = match core.run.poll_wait(wait, cx) {
        Poll::Ready(waited) => waited,
        Poll::Pending => return Then::Yield(Poll::Pending),
    };
    match core.run.waited_for(waited, next) {
        Ok(()) => Then::Become(State::Start {
            resumes: next == AfterWait::Resume,
        }),
        Err(gave_up) => Then::End(Some(Err(gave_up))),
    }
}
