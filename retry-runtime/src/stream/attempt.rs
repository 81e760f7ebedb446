//! One attempt's polls, for [`RetryStream`](super::RetryStream)'s states: open it (or reopen
//! it from its cursor), wait for its stream, hold its items to the commit point and release
//! them, pass them through after it, fail, and wait before the next. They are methods of the
//! stream's [`StreamParts`], which it keeps beside its state; each says what to do next
//! ([`Then`]); none does I/O of its own beyond polling what it is given.

use std::fmt;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::{TryFuture, TryStream};

use super::ended::EndedEarly;
use super::hold::Hold;
use super::open::OpenAttempt;
use super::resume::{Resume, ResumeFrom, Taken};
use super::rules::ItemRules;
use super::state::{
    Error, Flow, Inner, Item, Output, Settings, Sleep, StateOf, StreamCore, StreamState, Then,
    Yielded,
};
use super::timer::{Phase, Timeouts, Timer, bounds};
use crate::admission::Admitting;
use crate::class::Classify;
use crate::engine::{Clocked, Source, StreamFacts};
use crate::fallback::Next;
use crate::nesting;
use crate::notice::Reached;
use crate::timeout::TimedOut;
use crate::turn::flight::AfterWait;
use crate::wait::{Wait, Waited};

/// What a stream's polls say to do next.
pub(super) type Advance<R, O, Re> = Then<StateOf<R, O, Re>, Yielded<O>>;

/// A committed stream's poll: what to return at once (its item, or pending), or what to do.
pub(super) enum Passed<R, O, Re>
where
    R: Clocked,
    O: OpenAttempt<u32>,
    Inner<O>: TryStream,
    Re: OpenAttempt<ResumeFrom>,
{
    /// Return this: the hot path.
    Now(Poll<Option<Yielded<O>>>),
    /// Do this.
    Then(Advance<R, O, Re>),
}

/// What one attempt hands to the next: the items held before the commit point, and the
/// cursor. A fresh open starts both again; a resume keeps them.
pub(super) struct Carry<S, T, Re> {
    pub(super) hold: Hold<T>,
    pub(super) resume: Resume<S, Re>,
}

pin_project_lite::pin_project! {
    /// What a [`RetryStream`](super::RetryStream) keeps beside its state: the attempt's timer,
    /// the run and `open`, its settings and rules, and what one attempt carries to the next.
    /// Its projection's methods are the attempt's polls.
    #[project = AttemptParts]
    pub(super) struct StreamParts<R, O, Re, X>
    where
        R: Clocked,
        O: OpenAttempt<u32>,
        Inner<O>: TryStream,
    {
        #[pin]
        pub(super) timer: Timer,
        pub(super) core: StreamCore<R, O>,
        pub(super) settings: Settings<Item<O>, Error<O>>,
        pub(super) rules: X,
        pub(super) carry: Carry<Inner<O>, Item<O>, Re>,
    }
}

impl<R, O, Re, X> AttemptParts<'_, R, O, Re, X>
where
    R: Source,
    O: OpenAttempt<u32>,
    Inner<O>: TryStream<Error: Into<Error<O>>>,
    Error<O>: Classify + fmt::Display,
    Re: OpenAttempt<ResumeFrom, Future: TryFuture<Ok = Inner<O>, Error = Error<O>>>,
    X: ItemRules<Item<O>>,
{
    /// Start the next attempt: admitted by the stream's upstream first, if it has one with
    /// something to say; else opened (or, if it `resumes`, resumed).
    pub(super) fn start(&mut self, resumes: bool) -> Advance<R, O, Re> {
        // Once it has delivered, a stream stays on the upstream that delivered: resumed, or
        // restarted after its commit point.
        let stays = self.core.output != Output::None || self.core.delivered;
        match self.core.place.ready(&self.core.run, stays, || 0) {
            Some(admitting) => Then::Become(StreamState::Admitting { admitting, resumes }),
            None => Then::Become(self.open(resumes)),
        }
    }

    /// Wait for the stream's upstream to admit the next attempt: then open it; or the give-up
    /// where the upstream held it back past the call's end.
    pub(super) fn admitting(
        &mut self,
        admitting: Pin<&mut Admitting<Sleep<R>>>,
        resumes: bool,
        cx: &mut Context<'_>,
    ) -> Advance<R, O, Re> {
        let Some(to_error) = self.settings.paused else {
            panic!("a stream admitted by an upstream it cannot report a pause of");
        };
        let core = &mut *self.core;
        match core.place.poll_hold(admitting, &mut core.run, cx, to_error) {
            Poll::Pending => Then::Yield(Poll::Pending),
            Poll::Ready(Ok(())) => Then::Become(self.open(resumes)),
            Poll::Ready(Err(gave_up)) => Then::End(Some(Err(gave_up))),
        }
    }

    /// Open the next attempt, under its timer: the state that runs `open`'s future, or (if it
    /// `resumes`) the resume's.
    pub(super) fn open(&mut self, resumes: bool) -> StateOf<R, O, Re> {
        let core = &mut *self.core;
        let attempt = core.run.attempts().saturating_add(1);
        core.frame = nesting::Frame::default();
        let resume = &mut self.carry.resume;
        let from = resumes.then(|| resume.from(attempt));
        // On an upstream, the open is made for the one the attempt goes to.
        let to = core.place.upstream();
        let (future, resumed) = match (from, resume.reopen.as_mut()) {
            (Some(from), Some(reopen)) => {
                let open = || reopen.open_attempt(from);
                let future = nesting::enter(&mut core.frame, || on_route(to, open));
                (StreamState::Reopening { future }, true)
            }
            _ => {
                self.carry.hold.clear();
                let open = || core.open.open_attempt(attempt);
                let future = nesting::enter(&mut core.frame, || on_route(to, open));
                (StreamState::Opening { future }, false)
            }
        };
        self.carry.resume.begin(resumed);
        core.run.begin_attempt();
        let phase = Phase::Begins {
            resumed,
            was_committed: core.committed(),
        };
        self.rearm(phase);
        future
    }

    /// Arm the attempt's timer for `phase`, as [`bounds`] says.
    fn rearm(&mut self, phase: Phase) {
        let timeouts = Timeouts {
            timed: self.settings.timed_out.is_some(),
            commit: self.settings.commit_timeout,
            idle: self.settings.idle_timeout,
            silence: self.carry.resume.silence,
        };
        if let Some((fixed, idle)) = bounds(&self.core.run, timeouts, phase) {
            self.timer.as_mut().arm(fixed, idle);
        }
    }

    /// Whether `item` (`content` or not) is a replay to drop; a resume's first content hands
    /// the attempt's timer back to the stream's own bounds.
    fn is_replay(&mut self, stream: &Inner<O>, item: &Item<O>, content: bool) -> bool {
        let numbered = self.rules.number(item);
        match self.carry.resume.take(stream, numbered, content) {
            Taken::Replay => true,
            Taken::New { first_progress } => {
                if first_progress {
                    let phase = Phase::Progress {
                        was_committed: self.core.committed(),
                    };
                    self.rearm(phase);
                }
                false
            }
        }
    }

    /// Whether the attempt's timer fired: its error, if so. A resume silent until then brought
    /// nothing new.
    fn timed_out(&mut self, cx: &mut Context<'_>) -> Option<Error<O>> {
        let timed_out: TimedOut = self.timer.as_mut().expired(cx)?;
        if self.carry.resume.is_silent_resume() {
            return self
                .settings
                .ended_early
                .map(|to_error| to_error(EndedEarly::nothing_new()));
        }
        self.settings.timed_out.map(|to_error| to_error(timed_out))
    }

    /// A failure of the attempt: the wait before the next (a resume, where the cursor allows),
    /// or the give-up that ends the stream. The state it becomes drops the attempt; a fresh
    /// open drops what it held too.
    fn fail(&mut self, error: Error<O>, opened: bool) -> Advance<R, O, Re> {
        let core = &mut *self.core;
        core.run.note_frame(mem::take(&mut core.frame));
        // Classified once, here: the upstream, the route, the resume and the ladder read the
        // same class. Before it has delivered anything, a stream across upstreams moves as a
        // call does; after, it stays.
        let class = error.classify();
        let stays = core.output != Output::None || core.delivered;
        let (error, class) = match core.place.failed(&mut core.run, error, class, stays) {
            Next::Moved => {
                self.carry.hold.clear();
                return self.start(false);
            }
            Next::Ladder(error, class) => (error, class),
            Next::GaveUp(gave_up) => return Then::End(Some(Err(gave_up))),
        };
        let resume = &mut self.carry.resume;
        let resumes = resume.resumes(class, opened);
        if !resumes {
            // A fresh open follows, or the end: what the attempt held goes with it.
            self.carry.hold.clear();
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
        let decided = core.run.failed_to_wait(error, class, Some(&facts));
        // A stream resumed after its commit point has still delivered output: a give-up on its
        // reopen says so, and a drop in the wait before it finishes the call.
        core.output = match core.output {
            Output::Flowing | Output::Delivered if resumes => Output::Delivered,
            _ => Output::None,
        };
        match decided {
            Ok(wait) => Then::Become(StreamState::Waiting { wait, next }),
            Err(gave_up) => Then::End(Some(Err(core.place.gave_up(gave_up, true)))),
        }
    }

    /// The commit point: the call's output goes to the caller; a restart's hook runs first.
    /// After it, only the idle bound and the turn time the stream.
    fn commit(&mut self) {
        let core = &mut *self.core;
        core.run.note_frame(mem::take(&mut core.frame));
        core.output = Output::Flowing;
        // The commit point is the attempt's success, as its upstream counts it.
        core.place.succeeded();
        if core.delivered {
            // A restart's commit: the caller discards what it had.
            self.rules.restart();
        } else {
            core.delivered = true;
            core.run.delivered();
        }
        let phase = Phase::Commit {
            silent_resume: self.carry.resume.is_silent_resume(),
        };
        self.rearm(phase);
    }

    /// Poll `open`'s future, or the resume's: the attempt's stream, or its failure.
    pub(super) fn opening<F>(
        &mut self,
        future: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Advance<R, O, Re>
    where
        F: TryFuture<Ok = Inner<O>, Error = Error<O>>,
    {
        // Polled with its upstream as the current one, so that what the opening response says
        // of the key (`check_status` reads it) reaches the upstream's pacer.
        let upstream = self.core.place.upstream();
        let poll = || match upstream {
            Some(upstream) => crate::upstream::on(upstream, || future.try_poll(cx)),
            None => future.try_poll(cx),
        };
        let failure = match nesting::enter(&mut self.core.frame, poll) {
            Poll::Ready(Ok(stream)) => {
                // A resume of a stream that had delivered goes on delivering.
                let flow = if self.carry.resume.is_resumed() && self.core.committed() {
                    self.core.output = Output::Flowing;
                    Flow::Passing
                } else {
                    Flow::Holding
                };
                return Then::Become(StreamState::Open { stream, flow });
            }
            Poll::Ready(Err(error)) => error,
            Poll::Pending => match self.timed_out(cx) {
                Some(error) => error,
                None => return Then::Yield(Poll::Pending),
            },
        };
        self.fail(failure, false)
    }

    /// Poll an open stream before its commit point, or deliver what it held at it.
    pub(super) fn hold_or_release(
        &mut self,
        stream: Pin<&mut Inner<O>>,
        flow: &mut Flow<Item<O>>,
        cx: &mut Context<'_>,
    ) -> Advance<R, O, Re> {
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
                return match self.pass(stream, cx) {
                    Passed::Now(polled) => Then::Yield(polled),
                    Passed::Then(then) => then,
                };
            }
        }
        match self.holding(stream, cx) {
            HoldRead::Pending => Then::Yield(Poll::Pending),
            HoldRead::Failed(error) => self.fail(error, true),
            HoldRead::Passed(item) => {
                self.commit();
                *flow = Flow::Passing;
                Then::Yield(Poll::Ready(Some(Ok(item))))
            }
            HoldRead::Full => {
                *flow = Flow::Releasing(self.release());
                Then::Again
            }
            HoldRead::Ended => Then::Become(StreamState::Draining {
                held: self.release(),
            }),
        }
    }

    /// Commit what the hold kept: its items, to deliver in order.
    fn release(&mut self) -> std::collections::VecDeque<Item<O>> {
        let hold = Hold::new(self.settings.limits);
        let held = mem::replace(&mut self.carry.hold, hold).release();
        self.commit();
        held
    }

    /// Poll the stream before its commit point, holding its items, until it commits or fails.
    fn holding(
        &mut self,
        mut stream: Pin<&mut Inner<O>>,
        cx: &mut Context<'_>,
    ) -> HoldRead<Item<O>, Error<O>> {
        loop {
            let polled = nesting::enter(&mut self.core.frame, || stream.as_mut().try_poll_next(cx));
            let failure = match polled {
                Poll::Ready(Some(Ok(item))) => {
                    self.timer.as_mut().item();
                    let content = self.rules.is_content(&item);
                    if self.carry.resume.is_on() && self.is_replay(&stream, &item, content) {
                        continue;
                    }
                    if self.rules.is_complete(&item) {
                        self.carry.hold.keep(item);
                        return HoldRead::Ended;
                    }
                    let hold = &mut self.carry.hold;
                    if content && hold.is_empty() {
                        return HoldRead::Passed(item);
                    }
                    let commits = hold.count(content, (self.settings.weigh)(&item));
                    hold.keep(item);
                    if !commits {
                        continue;
                    }
                    return HoldRead::Full;
                }
                Poll::Ready(Some(Err(error))) => error.into(),
                Poll::Ready(None) => match self.ended(Some(self.carry.hold.counted())) {
                    Some(error) => error,
                    None => return HoldRead::Ended,
                },
                Poll::Pending => match self.timed_out(cx) {
                    Some(error) => error,
                    None => return HoldRead::Pending,
                },
            };
            self.carry.resume.note(&stream);
            return HoldRead::Failed(failure);
        }
    }

    /// A clean end: the failure it is, if any. A resume that brought nothing new has failed;
    /// a stream with a complete rule that ends before it was closed early; one with a commit
    /// rule that ends before its commit point (`held` items held; `None` past it) ended early.
    /// Otherwise it is the end.
    fn ended(&self, held: Option<usize>) -> Option<Error<O>> {
        let to_error = self.settings.ended_early?;
        let ended = if self.carry.resume.is_silent_resume() {
            EndedEarly::nothing_new()
        } else if self.rules.has_complete() {
            EndedEarly::incomplete(held.unwrap_or(0))
        } else if let (true, Some(held)) = (self.settings.before_content, held) {
            EndedEarly::new(held)
        } else {
            return None;
        };
        Some(to_error(ended))
    }

    /// Poll the stream after its commit point: the hot path, an item passed through. A stream
    /// with no idle timer, no resume and no complete rule has nothing to do per item, so its
    /// item is returned as it came, not through a [`Then`] (which holds a whole state: a copy
    /// of the item into it, and out again, for every event).
    #[inline]
    pub(super) fn pass(
        &mut self,
        mut stream: Pin<&mut Inner<O>>,
        cx: &mut Context<'_>,
    ) -> Passed<R, O, Re> {
        let plain =
            !self.timer.is_armed() && !self.carry.resume.is_on() && !self.rules.has_complete();
        let polled = match stream.as_mut().try_poll_next(cx) {
            Poll::Ready(Some(Ok(item))) if plain => {
                return Passed::Now(Poll::Ready(Some(Ok(item))));
            }
            Poll::Pending if !self.timer.is_armed() => return Passed::Now(Poll::Pending),
            polled => polled,
        };
        let failure = match polled {
            Poll::Ready(Some(Ok(item))) => {
                if self.timer.is_armed() {
                    self.timer.as_mut().item();
                }
                if self.carry.resume.is_on() {
                    let content = self.rules.is_content(&item);
                    if self.is_replay(&stream, &item, content) {
                        return Passed::Then(Then::Again);
                    }
                }
                if self.rules.is_complete(&item) {
                    return Passed::Then(Then::Last(Ok(item)));
                }
                return Passed::Now(Poll::Ready(Some(Ok(item))));
            }
            Poll::Ready(Some(Err(error))) => error.into(),
            Poll::Ready(None) => match self.ended(None) {
                Some(error) => error,
                None => {
                    self.finished();
                    return Passed::Then(Then::End(None));
                }
            },
            Poll::Pending => match self.timed_out(cx) {
                Some(error) => error,
                None => return Passed::Now(Poll::Pending),
            },
        };
        self.carry.resume.note(&stream);
        Passed::Then(self.fail(failure, true))
    }

    /// The stream has ended, its output all delivered.
    pub(super) fn finished(&mut self) {
        self.core.output = Output::None;
        self.core.run.ended(true);
    }

    /// Wait before the next attempt; a cancel of the turn ends the stream.
    pub(super) fn waiting(
        &mut self,
        wait: Pin<&mut Wait<Sleep<R>, Error<O>>>,
        next: AfterWait,
        cx: &mut Context<'_>,
    ) -> Advance<R, O, Re> {
        let waited: Waited<Error<O>> = match self.core.run.poll_wait(wait, cx) {
            Poll::Ready(waited) => waited,
            Poll::Pending => return Then::Yield(Poll::Pending),
        };
        match self.core.run.waited_for(waited, next) {
            Ok(()) => Then::Become(StreamState::Start {
                resumes: next == AfterWait::Resume,
            }),
            Err(gave_up) => Then::End(Some(Err(gave_up))),
        }
    }
}

/// What a poll before the commit point found.
enum HoldRead<T, E> {
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

/// `open`, made for `to`, the upstream the attempt goes to (one upstream's, or the one a
/// route chose), as the current one, if it has one.
fn on_route<T>(to: Option<&'static crate::upstream::Upstream>, open: impl FnOnce() -> T) -> T {
    match to {
        Some(to) => crate::upstream::on(to, open),
        None => open(),
    }
}
