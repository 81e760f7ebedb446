//! [`RetryStream`]: a thin pinned adapter over the run (the decision and the accounting), the
//! [`Hold`] (what is kept back before the commit point) and the [`Timer`]. Its state enum
//! carries what each state needs: the open future, the stream and how far it has flowed, the
//! held items left to deliver, or the wait.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::{Stream, TryFuture, TryStream};

use super::attempt::{Carry, Passed, StreamParts};
use super::ended::HoldsEndedEarly;
use super::hold::{Hold, Limits};
use super::open::OpenAttempt;
use super::resume::{Resumable, Resume, ResumeFrom};
use super::rules::{ItemRules, StreamRules};
use super::state::{
    Error, Flow, Inner, Item, Output, Settings, StateOf, StateProj, StreamCore, StreamState, Then,
    Yielded,
};
use super::timer::Timer;
use crate::class::Classify;
use crate::engine::{Clocked, Run, Source};
use crate::nesting;
use crate::route::Placing;
use crate::timeout::{HoldsStreamTimeout, TimedOut};
use crate::upstream::UpstreamPaused;

pin_project_lite::pin_project! {
    /// The stream [`Retry::stream`](crate::Retry::stream) returns: retried until its commit
    /// point, then passed through. Configure it before its first poll.
    ///
    /// Its parameters are the retry (`R`), the `open` function (`O`), the
    /// [`resume`](RetryStream::resume) function (`Re`, unused unless set) and the rules given
    /// as functions (`X`, a [`StreamRules`]); every other type follows from these, through
    /// [`OpenAttempt`] and the retry's clock. `Re` and `X` have defaults, so a stream is named
    /// `RetryStream<Retry, Open>`, or `RetryStream<Retry, Open, Reopen>` once it resumes. The
    /// rules are `fn` pointers unless a closure is given, so that a rule can capture what its
    /// call knows. It has no bound of this crate's on them: it is `Send` when they and the
    /// stream are, whatever lifetimes the retry borrows, so a task that holds one can be
    /// spawned. It allocates nothing per attempt: the open future and the stream are pinned in
    /// place, and so is a wait, as in [`Retry::run`](crate::Retry::run).
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, RetryStream, testing};
    /// use std::future::Ready;
    ///
    /// type Items = testing::StreamOf<Result<u32, Class>>;
    /// type Open = fn(u32) -> Ready<Result<Items, Class>>;
    ///
    /// // A retried stream in a struct, as a field of a named type.
    /// struct Reader {
    ///     stream: RetryStream<Retry, Open>,
    /// }
    ///
    /// fn open(attempt: u32) -> Ready<Result<Items, Class>> {
    ///     std::future::ready(Ok(testing::stream_of(vec![Ok(attempt)])))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let reader = Reader { stream: Retry::new(&Policy::AVAILABILITY).stream(open as Open) };
    /// let spawned = tokio::spawn(testing::collect(reader.stream));
    /// let items: Vec<u32> = spawned.await.unwrap().into_iter().map(Result::unwrap).collect();
    /// assert_eq!(items, [1]);
    /// # }
    /// ```
    #[must_use = "a stream does nothing unless polled"]
    pub struct RetryStream<
        R,
        O,
        Re = fn(ResumeFrom) -> <O as OpenAttempt<u32>>::Future,
        X = StreamRules<
            fn(&Item<O>) -> bool,
            fn(&Item<O>) -> bool,
            fn(&Item<O>) -> Option<u64>,
            fn(),
        >,
    >
    where
        R: Clocked,
        O: OpenAttempt<u32>,
        Inner<O>: TryStream,
        Re: OpenAttempt<ResumeFrom>,
    {
        #[pin]
        state: StateOf<R, O, Re>,
        #[pin]
        parts: StreamParts<R, O, Re, X>,
    }
}

/// Every item commits: the default rule.
fn every_item<T>(_: &T) -> bool {
    true
}

/// No item is weighed: the default.
fn weightless<T>(_: &T) -> usize {
    0
}

/// No restart hook: the default.
fn no_restart() {}

impl<R, O> RetryStream<R, O>
where
    R: Source,
    O: OpenAttempt<u32>,
    Inner<O>: TryStream,
{
    pub(super) fn new(source: R, open: O, timed_out: Option<fn(TimedOut) -> Error<O>>) -> Self {
        let settings = Settings {
            weigh: weightless,
            limits: Limits::DEFAULT,
            commit_timeout: None,
            idle_timeout: None,
            timed_out,
            ended_early: None,
            before_content: false,
            paused: None,
        };
        let rules = StreamRules {
            commit: every_item as fn(&Item<O>) -> bool,
            complete: None,
            cursor: None,
            restart: no_restart as fn(),
        };
        let core = StreamCore {
            run: Run::new(source),
            dropped: super::state::dropped::<R>,
            open,
            frame: nesting::Frame::default(),
            output: Output::None,
            delivered: false,
            restartable: false,
            place: Placing::NOWHERE,
        };
        let carry = Carry {
            hold: Hold::new(Limits::DEFAULT),
            resume: Resume::off(),
        };
        RetryStream {
            state: StreamState::Start { resumes: false },
            parts: StreamParts {
                timer: Timer::new(),
                core,
                settings,
                rules,
                carry,
            },
        }
    }

    /// This stream on an upstream or across a set (`place`): an attempt held back past the
    /// call's end is the error `paused` makes.
    pub(super) fn placed(mut self, place: Placing, paused: fn(UpstreamPaused) -> Error<O>) -> Self {
        self.parts.core.place = place;
        self.parts.settings.paused = Some(paused);
        self
    }
}

impl<R, O, Re, C, K, Sq, H> RetryStream<R, O, Re, StreamRules<C, K, Sq, H>>
where
    R: Source,
    O: OpenAttempt<u32>,
    Inner<O>: TryStream,
    Re: OpenAttempt<ResumeFrom>,
{
    /// Commit at the first item for which `is_content` is true: the items before it are
    /// held, and a failure among them is retried. [`sse::is_content`](crate::sse::is_content)
    /// knows the model providers' preambles.
    ///
    /// A stream that ends before its commit point is then a failure too, so the error type
    /// must hold an [`EndedEarly`](crate::EndedEarly).
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Classify, EndedEarly, Policy, Retry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum Failed { Unavailable, Ended }
    /// impl From<EndedEarly> for Failed {
    ///     fn from(_: EndedEarly) -> Self { Failed::Ended }
    /// }
    /// impl Classify for Failed {
    ///     fn classify(&self) -> Class { Class::Unavailable { retry_after: None } }
    /// }
    /// impl std::fmt::Display for Failed {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // The first attempt sends a preamble, then fails: the caller never sees it.
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|attempt| async move {
    ///         Ok::<_, Failed>(testing::stream_of(match attempt {
    ///             1 => vec![Ok("start"), Err(Failed::Unavailable)],
    ///             _ => vec![Ok("start"), Ok("text")],
    ///         }))
    ///     })
    ///     .commit_when(|item: &&str| *item != "start");
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, ["start", "text"]);
    /// # }
    /// ```
    ///
    /// The rule may be a closure that captures: a tools/call stream commits at the first event
    /// that is not a priming one, and is complete at its own response, by its JSON-RPC id.
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Classify, EndedEarly, Policy, Retry};
    ///
    /// #[derive(Debug)]
    /// struct Ended;
    /// impl From<EndedEarly> for Ended {
    ///     fn from(_: EndedEarly) -> Self { Ended }
    /// }
    /// impl Classify for Ended {
    ///     fn classify(&self) -> Class { Class::Transport }
    /// }
    /// impl std::fmt::Display for Ended {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str("ended") }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (priming, id) = (0, 7);
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|_| async { Ok::<_, Ended>(testing::stream_of(vec![Ok::<_, Ended>(0), Ok(3), Ok(7), Ok(9)])) })
    ///     .commit_when(move |n: &u32| *n != priming)
    ///     .complete_when(move |n: &u32| *n == id);
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<u32> = items.into_iter().map(Result::unwrap).collect();
    /// assert_eq!(items, [0, 3, 7]);
    /// # }
    /// ```
    pub fn commit_when<C2>(self, is_content: C2) -> RetryStream<R, O, Re, StreamRules<C2, K, Sq, H>>
    where
        C2: Fn(&Item<O>) -> bool,
        Error<O>: HoldsEndedEarly,
    {
        self.with_rules(|rules, settings| {
            settings.ended_early = Some(<Error<O> as HoldsEndedEarly>::hold);
            settings.before_content = true;
            rules.with(|_, complete, cursor, restart| (is_content, complete, cursor, restart))
        })
    }

    /// Retry even after the commit point, under the same policy: `hook` runs once before the
    /// new attempt's first item is delivered, so the caller can discard its partial output.
    /// Restarts count against the policy's attempts; a turn's report counts them apart from
    /// retries ([`TurnReport::restarts`](crate::TurnReport::restarts)).
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Policy, Retry};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let discarded = AtomicU32::new(0);
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|attempt| async move {
    ///         Ok::<_, Class>(testing::stream_of(match attempt {
    ///             1 => vec![Ok("partial"), Err(Class::Transport)],
    ///             _ => vec![Ok("whole")],
    ///         }))
    ///     })
    ///     .restart_after_commit(|| { discarded.fetch_add(1, Ordering::SeqCst); });
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, ["partial", "whole"]);
    /// assert_eq!(discarded.load(Ordering::SeqCst), 1);
    /// # }
    /// ```
    pub fn restart_after_commit<G: FnMut()>(
        mut self,
        hook: G,
    ) -> RetryStream<R, O, Re, StreamRules<C, K, Sq, G>> {
        self.parts.core.restartable = true;
        self.with_rules(|rules, _| {
            rules.with(|commit, complete, cursor, _| (commit, complete, cursor, hook))
        })
    }

    /// This stream with other rules: `change` is given the rules and the settings.
    fn with_rules<X2>(
        self,
        change: impl FnOnce(StreamRules<C, K, Sq, H>, &mut Settings<Item<O>, Error<O>>) -> X2,
    ) -> RetryStream<R, O, Re, X2> {
        let RetryStream { state, parts } = self;
        let StreamParts {
            timer,
            core,
            mut settings,
            rules,
            carry,
        } = parts;
        let rules = change(rules, &mut settings);
        let parts = StreamParts {
            timer,
            core,
            settings,
            rules,
            carry,
        };
        RetryStream { state, parts }
    }

    /// Commit anyway once `items` are held (default [`DEFAULT_HOLD_ITEMS`](crate::DEFAULT_HOLD_ITEMS)):
    /// a preamble that never ends is not held without bound. At least one.
    pub fn hold_limit(mut self, items: usize) -> Self {
        let parts = &mut self.parts;
        parts.settings.limits.items = items.max(1);
        parts.carry.hold = Hold::new(parts.settings.limits);
        self
    }

    /// Commit anyway once the held items weigh `bytes` by `weigh` (default
    /// [`DEFAULT_HOLD_BYTES`](crate::DEFAULT_HOLD_BYTES), with nothing weighed); for events,
    /// [`sse::Event::size`](crate::sse::Event::size).
    pub fn hold_bytes(mut self, bytes: usize, weigh: fn(&Item<O>) -> usize) -> Self {
        let parts = &mut self.parts;
        parts.settings.limits.bytes = bytes;
        parts.settings.weigh = weigh;
        parts.carry.hold = Hold::new(parts.settings.limits);
        self
    }

    /// Bound the time from calling `open` to the commit point: an attempt that has not
    /// committed by then is dropped, and its error is `E::from(TimedOut)` with
    /// [`TimeoutBound::Commit`](crate::TimeoutBound::Commit). It classifies as `Timeout`, so the policy decides:
    /// `availability` does not retry a stall, `transient` does. Bounded by the turn and a
    /// literal budget, as an attempt timeout is.
    pub fn commit_timeout(self, timeout: Duration) -> Self
    where
        Error<O>: HoldsStreamTimeout,
    {
        self.timed(|settings| settings.commit_timeout = Some(timeout))
    }

    /// Bound the time between items, before the commit point and after it: a stream that
    /// stalls longer is dropped, and its error is `E::from(TimedOut)` with
    /// [`TimeoutBound::Idle`](crate::TimeoutBound::Idle). After the commit point, that ends the stream with
    /// [`StopReason::Committed`](crate::StopReason::Committed), as any error does.
    pub fn idle_timeout(self, timeout: Duration) -> Self
    where
        Error<O>: HoldsStreamTimeout,
    {
        self.timed(|settings| settings.idle_timeout = Some(timeout))
    }

    /// This stream with a bound `bound` sets, its error holding the timeout.
    fn timed(mut self, bound: impl FnOnce(&mut Settings<Item<O>, Error<O>>)) -> Self
    where
        Error<O>: HoldsStreamTimeout,
    {
        let settings = &mut self.parts.settings;
        bound(settings);
        settings.timed_out = Some(<Error<O> as HoldsStreamTimeout>::hold);
        self
    }

    /// Resume a cut stream from its cursor with `reopen`, instead of ending it or sending
    /// the request again. Once the stream has given a cursor (an event ID, or a sequence
    /// number by [`cursor`](Self::cursor)), every reconnection is a resume, before the commit
    /// point too: `reopen` gets a [`ResumeFrom`] and returns the same kind of stream, which
    /// continues where the last one was cut (MCP's GET with `Last-Event-ID`, the Responses
    /// API's `starting_after`).
    ///
    /// - **What resumes**: a cut or a stall (classes `Transport` and `Timeout`, as the policy
    ///   retries them), a clean end before the stream is
    ///   [complete](Self::complete_when) (a graceful close), and a failed reopen. A provider's
    ///   error event (any other class) is the generation failing: decided as without a
    ///   cursor, so `Committed` after the commit point.
    /// - **The wait** is the ladder's, with the server's latest `retry:` value as a floor, as
    ///   a `Retry-After` is: bounded by `max_retry_after`, the total allowance and the turn.
    /// - **Progress renews the ladder**: a resume that brings new content (an item the
    ///   commit rule calls content; a priming event or a keep-alive is not) starts it again
    ///   from its first rung. One that brings nothing new (it ends, or stays silent for the
    ///   [idle timeout](Self::idle_timeout), by default [`DEFAULT_RESUME_SILENCE`](crate::DEFAULT_RESUME_SILENCE))
    ///   is a failed attempt, [`EndedEarly`](crate::EndedEarly) with [`Ending::NothingNew`](crate::Ending::NothingNew):
    ///   a wedged server costs at most the policy's attempts.
    /// - **Never twice**: items held before the commit point stay held across a resume, and
    ///   what was delivered is not delivered again. An item replayed with the cursor's event
    ///   ID at the start of a resume is dropped, as is, with a sequence cursor, any item at or
    ///   below it.
    ///
    /// The error type holds an [`EndedEarly`](crate::EndedEarly); the stream says where it is through
    /// [`Resumable`] ([`sse::Events`](crate::sse::Events) and `http::ModelEvents` do).
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Classify, EndedEarly, Policy, Retry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum Failed { Cut, Ended }
    /// impl From<EndedEarly> for Failed {
    ///     fn from(_: EndedEarly) -> Self { Failed::Ended }
    /// }
    /// impl Classify for Failed {
    ///     fn classify(&self) -> Class { Class::Transport }
    /// }
    /// impl std::fmt::Display for Failed {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // Items carry their sequence number. The first stream is cut after 2; the resume,
    /// // asked to continue after 2, replays 2 (dropped), then sends 3, the last.
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|_| async { Ok::<_, Failed>(testing::stream_of(vec![Ok(1), Ok(2), Err(Failed::Cut)])) })
    ///     .cursor(|n: &u64| Some(*n))
    ///     .complete_when(|n: &u64| *n == 3)
    ///     .resume(|from| async move {
    ///         assert_eq!(from.sequence(), Some(2));
    ///         Ok(testing::stream_of(vec![Ok(2), Ok(3)]))
    ///     });
    /// let (items, recorded) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<u64> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, [1, 2, 3]);
    /// assert_eq!(recorded.waits().len(), 1);
    /// # }
    /// ```
    ///
    /// A resumable stream is named by its functions: here, with plain functions and a cursor,
    /// as a field of a struct that a spawned task owns.
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Classify, EndedEarly, Policy, ResumeFrom, Retry};
    /// use retry_runtime::{RetryStream, StreamRules};
    /// use std::future::Ready;
    ///
    /// #[derive(Debug)]
    /// enum Failed { Cut, Ended }
    /// impl From<EndedEarly> for Failed {
    ///     fn from(_: EndedEarly) -> Self { Failed::Ended }
    /// }
    /// impl Classify for Failed {
    ///     fn classify(&self) -> Class { Class::Transport }
    /// }
    /// impl std::fmt::Display for Failed {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
    /// }
    ///
    /// type Opened = Ready<Result<testing::StreamOf<Result<u64, Failed>>, Failed>>;
    /// type Open = fn(u32) -> Opened;
    /// type Reopen = fn(ResumeFrom) -> Opened;
    /// type Rules = StreamRules<fn(&u64) -> bool, fn(&u64) -> bool, fn(&u64) -> Option<u64>, fn()>;
    ///
    /// struct Reader {
    ///     stream: RetryStream<Retry, Open, Reopen, Rules>,
    /// }
    ///
    /// fn open(_: u32) -> Opened {
    ///     std::future::ready(Ok(testing::stream_of(vec![Ok(1), Ok(2), Err(Failed::Cut)])))
    /// }
    /// fn reopen(from: ResumeFrom) -> Opened {
    ///     let next = from.sequence().unwrap_or(0) + 1;
    ///     std::future::ready(Ok(testing::stream_of(vec![Ok(next)])))
    /// }
    /// fn sequence(n: &u64) -> Option<u64> { Some(*n) }
    /// fn last(n: &u64) -> bool { *n == 3 }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(open as Open)
    ///     .cursor(sequence as fn(&u64) -> Option<u64>)
    ///     .complete_when(last as fn(&u64) -> bool)
    ///     .resume(reopen as Reopen);
    /// let reader = Reader { stream };
    /// let items = tokio::spawn(testing::collect(reader.stream)).await.unwrap();
    /// let items: Vec<u64> = items.into_iter().map(Result::unwrap).collect();
    /// assert_eq!(items, [1, 2, 3]);
    /// # }
    /// ```
    pub fn resume<Re2, ReFut2>(
        self,
        reopen: Re2,
    ) -> RetryStream<R, O, Re2, StreamRules<C, K, Sq, H>>
    where
        Re2: FnMut(ResumeFrom) -> ReFut2,
        ReFut2: Future<Output = Result<Inner<O>, Error<O>>>,
        Inner<O>: Resumable,
        Error<O>: HoldsEndedEarly,
    {
        // Its state names the reopen's future: before the first poll, it starts again.
        let StreamParts {
            timer,
            core,
            mut settings,
            rules,
            carry,
        } = self.parts;
        settings.ended_early = Some(<Error<O> as HoldsEndedEarly>::hold);
        let resume = carry.resume.reopen_with(
            reopen,
            <Inner<O> as Resumable>::last_event_id,
            <Inner<O> as Resumable>::reconnection_time,
        );
        let carry = Carry {
            hold: carry.hold,
            resume,
        };
        let parts = StreamParts {
            timer,
            core,
            settings,
            rules,
            carry,
        };
        RetryStream {
            state: StreamState::Start { resumes: false },
            parts,
        }
    }

    /// Take the cursor from the items: `sequence` gives an item's sequence number (the
    /// Responses API's `sequence_number`), and a resume continues after the last one, which
    /// [`ResumeFrom::sequence`] gives. Items at or below it are dropped, so a server that
    /// replays never makes the caller see an item twice.
    ///
    /// `sequence`, like the commit and complete rules, is a function or a closure, which may
    /// capture what its call knows; the stream stays `Send` (and spawnable) when it is. A
    /// Responses API stream's cursor, as a function:
    ///
    /// ```
    /// # #[cfg(feature = "sse")] {
    /// fn sequence_number(event: &retry_runtime::sse::Event) -> Option<u64> {
    ///     let data: serde_json::Value = serde_json::from_str(event.data()).ok()?;
    ///     data["sequence_number"].as_u64()
    /// }
    /// let event = retry_runtime::sse::Event::new("response.output_text.delta", r#"{"sequence_number":7}"#);
    /// assert_eq!(sequence_number(&event), Some(7));
    /// # }
    /// ```
    pub fn cursor<Sq2>(self, sequence: Sq2) -> RetryStream<R, O, Re, StreamRules<C, K, Sq2, H>>
    where
        Sq2: Fn(&Item<O>) -> Option<u64>,
    {
        self.with_rules(|rules, _| {
            rules.with(|commit, complete, _, restart| (commit, complete, Some(sequence), restart))
        })
    }

    /// The stream is complete at the first item for which `is_complete` is true (MCP's
    /// JSON-RPC response, Anthropic's `message_stop`, the Responses API's
    /// `response.completed`): it ends after that item, even if the server keeps the connection
    /// open. A clean end before it is an [`EndedEarly`](crate::EndedEarly) with
    /// [`Ending::BeforeComplete`](crate::Ending::BeforeComplete): a graceful close, which a
    /// [resumable](Self::resume) stream resumes, and any other stream treats as a failure
    /// (retried before its commit point, `Committed` after it).
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Classify, EndedEarly, Policy, Retry};
    ///
    /// #[derive(Debug)]
    /// struct Ended;
    /// impl From<EndedEarly> for Ended {
    ///     fn from(_: EndedEarly) -> Self { Ended }
    /// }
    /// impl Classify for Ended {
    ///     fn classify(&self) -> Class { Class::Transport }
    /// }
    /// impl std::fmt::Display for Ended {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str("ended") }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|_| async { Ok::<_, Ended>(testing::stream_of(vec![Ok::<_, Ended>("a"), Ok("stop"), Ok("never")])) })
    ///     .complete_when(|item: &&str| *item == "stop");
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, ["a", "stop"]);
    /// # }
    /// ```
    pub fn complete_when<K2>(
        self,
        is_complete: K2,
    ) -> RetryStream<R, O, Re, StreamRules<C, K2, Sq, H>>
    where
        K2: Fn(&Item<O>) -> bool,
        Error<O>: HoldsEndedEarly,
    {
        self.with_rules(|rules, settings| {
            settings.ended_early = Some(<Error<O> as HoldsEndedEarly>::hold);
            rules.with(|commit, _, cursor, restart| (commit, Some(is_complete), cursor, restart))
        })
    }
}

impl<R, O, Re, X> Stream for RetryStream<R, O, Re, X>
where
    R: Source,
    O: OpenAttempt<u32>,
    Inner<O>: TryStream<Error: Into<Error<O>>>,
    Error<O>: Classify + fmt::Display,
    Re: OpenAttempt<ResumeFrom, Future: TryFuture<Ok = Inner<O>, Error = Error<O>>>,
    X: ItemRules<Item<O>>,
{
    type Item = Yielded<O>;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        let mut parts = this.parts.project();
        loop {
            let then = match this.state.as_mut().project() {
                // The hot path first: committed, an item passed through.
                StateProj::Open {
                    stream,
                    flow: Flow::Passing,
                } => match parts.pass(stream, cx) {
                    Passed::Now(polled) => return polled,
                    Passed::Then(then) => then,
                },
                StateProj::Open { stream, flow } => parts.hold_or_release(stream, flow, cx),
                StateProj::Start { resumes } => parts.start(*resumes),
                StateProj::Admitting { admitting, resumes } => {
                    parts.admitting(admitting, *resumes, cx)
                }
                StateProj::Opening { future } => parts.opening(future, cx),
                StateProj::Reopening { future } => parts.opening(future, cx),
                StateProj::Draining { held } => match held.pop_front() {
                    Some(item) => Then::Yield(Poll::Ready(Some(Ok(item)))),
                    None => {
                        parts.finished();
                        Then::End(None)
                    }
                },
                StateProj::Waiting { wait, next } => parts.waiting(wait, *next, cx),
                StateProj::Done => return Poll::Ready(None),
            };
            match then {
                Then::Yield(polled) => return polled,
                Then::Become(state) => this.state.set(state),
                Then::End(last) => {
                    this.state.set(StreamState::Done);
                    return Poll::Ready(last);
                }
                Then::Last(item) => {
                    this.state.set(StreamState::Draining {
                        held: std::collections::VecDeque::new(),
                    });
                    return Poll::Ready(Some(item));
                }
                Then::Again => {}
            }
        }
    }
}

impl<R, O, Re, X> fmt::Debug for RetryStream<R, O, Re, X>
where
    R: Source,
    O: OpenAttempt<u32>,
    Inner<O>: TryStream,
    Re: OpenAttempt<ResumeFrom>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            StreamState::Start { .. } => "start",
            StreamState::Opening { .. } => "opening",
            StreamState::Admitting { .. } => "admitting",
            StreamState::Reopening { .. } => "resuming",
            StreamState::Open {
                flow: Flow::Holding,
                ..
            } => "holding",
            StreamState::Open {
                flow: Flow::Releasing(_),
                ..
            } => "releasing",
            StreamState::Open {
                flow: Flow::Passing,
                ..
            } => "passing",
            StreamState::Draining { .. } => "draining",
            StreamState::Waiting { .. } => "waiting",
            StreamState::Done => "done",
        };
        f.debug_struct("RetryStream")
            .field("run", &self.parts.core.run)
            .field("state", &state)
            .finish_non_exhaustive()
    }
}
