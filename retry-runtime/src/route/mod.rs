//! Where the next attempt goes, and whether it may go now: the placement a [`Retry`] carries
//! ([`Placement`]: no upstream, one [`Upstream`], or an ordered set of [`Upstreams`]), and the
//! steps every driver takes around an attempt on what its call keeps ([`Place`]): `ready` (the
//! fast path), `hold` (the slow path, a wait), `failed` (given the class: tells the upstream,
//! notes the round, says move or stay), `succeeded`, `waited`, and `gave_up`. The explicit
//! runs (`run.rs`: `run` and `run_fn` on [`Retry`] and [`TimedRetry`](crate::TimedRetry),
//! over every placement) take them in one loop, written once here (`placed_ladder!`, which
//! awaits one [`Pause`] a turn: the hold or the ladder's wait); the attribute's expansion takes
//! the same steps on its [`Call`]. The stream and the HTTP layers, driven by polls, each hold
//! one `Placing` (`placing.rs`) and take the same steps in the same order, polling the same
//! hold. The decisions stay the ladder's (a move's included); an upstream's state and a set's
//! route are what the steps read and tell.
//!
//! [`Retry`]: crate::Retry

mod place;
#[cfg(any(feature = "tower", feature = "reqwest-middleware", feature = "stream"))]
mod placing;
mod run;

pub use place::{HeldBack, Place};
#[cfg(any(feature = "tower", feature = "reqwest-middleware", feature = "stream"))]
pub(crate) use placing::Placing;

use crate::admission::Admitted;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::engine::{Call, Retry, Source, TimedRetry};
use crate::fallback::{Answered, Routed, Upstreams};
use crate::upstream::Upstream;

/// Where a retry's attempts go: [`NoUpstream`] (a [`Retry`](crate::Retry) as made),
/// [`OneUpstream`] ([`Retry::upstream`](crate::Retry::upstream)) or [`AcrossUpstreams`]
/// ([`Retry::across`](crate::Retry::across)). It decides what each attempt is given (its
/// number, or the upstream it goes to) and what a success gives back (the value, or the value
/// with the upstream that answered). Sealed: the three are all there is.
///
/// ```
/// use retry_runtime::{Placement, Policy, Retry, Upstream, Upstreams};
///
/// static CLAUDE: Upstream = Upstream::new("claude");
/// static GPT: Upstream = Upstream::new("gpt");
/// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
///
/// fn placement<C, P, N, Q, L: Placement>(_: &Retry<C, P, N, Q, L>) -> &'static str {
///     std::any::type_name::<L>().rsplit("::").next().unwrap()
/// }
/// let retry = Retry::new(&Policy::AVAILABILITY);
/// assert_eq!(placement(&retry), "NoUpstream");
/// assert_eq!(placement(&retry.upstream(&CLAUDE)), "OneUpstream");
/// assert_eq!(placement(&retry.across(&MODELS)), "AcrossUpstreams");
/// ```
pub trait Placement: Copy + sealed::SealedPlacement {
    /// What each attempt is given: its number (from 1), or the upstream it goes to.
    type Given: Copy;
    /// What a success gives back: the value, or an [`Answered`] naming the upstream.
    type Answer<T>;
    /// What a call keeps of its placement between its steps. Not public API.
    #[doc(hidden)]
    type Kept: Place;
    /// What a call keeps, before its first attempt. Not public API.
    #[doc(hidden)]
    fn kept(self) -> Self::Kept;
    /// What each attempt of the call costs of its key's tokens. Not public API.
    #[doc(hidden)]
    fn tokens(self) -> u32 {
        0
    }
    /// What the call's next attempt is given. Not public API.
    #[doc(hidden)]
    fn given<R: Source>(call: &Call<R, Self::Kept>) -> Self::Given;
    /// A success's value, as the call gives it back. Not public API.
    #[doc(hidden)]
    fn answer<R: Source, T>(call: &Call<R, Self::Kept>, value: T) -> Self::Answer<T>;
}

mod sealed {
    pub trait SealedPlacement {}
    impl SealedPlacement for super::NoUpstream {}
    impl SealedPlacement for super::OneUpstream {}
    impl SealedPlacement for super::AcrossUpstreams {}
}

pub use crate::engine::NoUpstream;

/// A retry's attempts go to one [`Upstream`], whose pause, outage gate and pacing every call
/// on it shares: what [`Retry::upstream`](crate::Retry::upstream) makes.
#[derive(Debug, Clone, Copy)]
pub struct OneUpstream {
    pub(crate) upstream: &'static Upstream,
    pub(crate) tokens: u32,
}

/// A retry's attempts go across an ordered set of [`Upstreams`]: what
/// [`Retry::across`](crate::Retry::across) makes.
#[derive(Debug, Clone, Copy)]
pub struct AcrossUpstreams {
    pub(crate) set: &'static Upstreams,
}

impl Placement for NoUpstream {
    type Given = u32;
    type Answer<T> = T;
    type Kept = ();

    #[inline(always)]
    fn kept(self) {}
    #[inline(always)]
    fn given<R: Source>(call: &Call<R>) -> u32 {
        call.attempts() + 1
    }
    #[inline(always)]
    fn answer<R: Source, T>(_: &Call<R>, value: T) -> T {
        value
    }
}

impl Placement for OneUpstream {
    type Given = u32;
    type Answer<T> = T;
    type Kept = Admitted;

    #[inline(always)]
    fn kept(self) -> Admitted {
        Admitted::idle(self.upstream)
    }
    #[inline(always)]
    fn tokens(self) -> u32 {
        self.tokens
    }
    #[inline(always)]
    fn given<R: Source>(call: &Call<R, Admitted>) -> u32 {
        call.attempts() + 1
    }
    #[inline(always)]
    fn answer<R: Source, T>(_: &Call<R, Admitted>, value: T) -> T {
        value
    }
}

impl Placement for AcrossUpstreams {
    type Given = &'static Upstream;
    type Answer<T> = Answered<T>;
    type Kept = Routed<&'static Upstreams>;

    #[inline(always)]
    fn kept(self) -> Routed<&'static Upstreams> {
        Routed::reporting(self.set)
    }
    #[inline(always)]
    fn given<R: Source>(call: &Call<R, Self::Kept>) -> &'static Upstream {
        call.kept().upstream()
    }
    #[inline(always)]
    fn answer<R: Source, T>(call: &Call<R, Self::Kept>, value: T) -> Answered<T> {
        Answered::new(value, call.kept().upstream())
    }
}

/// The loop of every explicit run, written once: the call's placement admits the attempt (at
/// once, or after a hold), the attempt runs (`$operation`, given what its placement gives it,
/// polled on its upstream, started by the run's `$start`, its output taken by `$took`); a
/// success is told and returned; a failure, classified once, is told to the placement, which
/// moves the call to another upstream at once or leaves it to the ladder, whose wait (or
/// give-up) follows.
macro_rules! placed_ladder {
    ($source:expr, $place:expr, $L:ty, $operation:ident, $start:ident, $took:ident) => {{
        let (tokens, kept) = ($place.tokens(), $place.kept());
        let mut call = $crate::engine::Call::with($source, kept);
        async move {
            // The attempt was admitted by a hold: it goes without asking again.
            let mut admitted = false;
            loop {
                // One pause a turn of the loop, awaited in one place: the hold for the
                // placement (never made without an upstream), or the ladder's wait after a
                // failure. The attempt's own block keeps nothing of the admission, and
                // neither the error's second copy nor its class, across it.
                let pause = if admitted || $crate::route::Place::ready(&mut call) {
                    admitted = false;
                    let (error, class) = {
                        let given = <$L as $crate::route::Placement>::given(&call);
                        let polled = $crate::route::Place::polled(&call, $operation(given));
                        let attempted = call.$start(polled).await;
                        match $took(call.attempted(attempted)) {
                            Ok(value) => {
                                $crate::route::Place::succeeded(&mut call);
                                call.succeeded();
                                return Ok(<$L as $crate::route::Placement>::answer(&call, value));
                            }
                            Err(error) => {
                                // Classified once: the placement is told, the ladder decides.
                                let class = $crate::class::Classify::classify(&error);
                                match $crate::route::Place::failed(&mut call, error, class) {
                                    $crate::fallback::Next::Moved => continue,
                                    $crate::fallback::Next::Ladder(error, class) => (error, class),
                                    $crate::fallback::Next::GaveUp(gave_up) => {
                                        return Err($crate::route::Place::gave_up(
                                            &mut call, gave_up, true,
                                        ));
                                    }
                                }
                            }
                        }
                    };
                    $crate::route::Pause::Wait {
                        waiting: call.failed_as(error, class),
                    }
                } else {
                    let hold = $crate::route::HeldBack::held_back;
                    $crate::route::Pause::Hold {
                        holding: $crate::route::Place::hold(&mut call, hold, tokens),
                    }
                };
                match pause.await {
                    $crate::route::Paused::Held(Ok(())) => admitted = true,
                    // The hold's give-up carries its report already.
                    $crate::route::Paused::Held(Err(gave_up)) => return Err(gave_up),
                    $crate::route::Paused::Waited(Ok(())) => {
                        $crate::route::Place::waited(&mut call)
                    }
                    $crate::route::Paused::Waited(Err(gave_up)) => {
                        return Err($crate::route::Place::gave_up(&mut call, gave_up, true));
                    }
                }
            }
        }
    }};
}

pin_project_lite::pin_project! {
    /// A driver's one pause: the hold for its placement, or the ladder's wait. One place to
    /// await, so that a call with no upstream, which never holds, carries no state for it.
    #[project = PauseNow]
    pub(crate) enum Pause<H, W> {
        /// The hold before an attempt.
        Hold { #[pin] holding: H },
        /// The ladder's wait after a failure.
        Wait { #[pin] waiting: W },
    }
}

/// Which pause ended, and how.
pub(crate) enum Paused<T> {
    /// The hold: the attempt is admitted (`Ok`), or the call gives up.
    Held(T),
    /// The ladder's wait: the next attempt may go (`Ok`), or the call gives up.
    Waited(T),
}

impl<H: Future, W: Future<Output = H::Output>> Future for Pause<H, W> {
    type Output = Paused<H::Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            PauseNow::Hold { holding } => holding.poll(cx).map(Paused::Held),
            PauseNow::Wait { waiting } => waiting.poll(cx).map(Paused::Waited),
        }
    }
}

pub(crate) use placed_ladder;

/// A timed attempt's output: one that ran out is the caller's error, made from the
/// [`TimedOut`](crate::TimedOut).
#[inline(always)]
pub(crate) fn timed_out<T, E: From<crate::timeout::TimedOut>>(
    output: Result<Result<T, E>, crate::timeout::TimedOut>,
) -> Result<T, E> {
    output.unwrap_or_else(|timed_out| Err(E::from(timed_out)))
}

impl<C, P, N, Q> Retry<C, P, N, Q, NoUpstream> {
    /// Share what `upstream` says with every call on it: its pause, its outage gate and its
    /// pacing (see [`Upstream`]). Each attempt, the first included, is admitted by the
    /// upstream first, and tells it how it ended. The error type must hold an
    /// [`UpstreamPaused`](crate::UpstreamPaused), the error of an attempt held back past the
    /// call's end.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, Upstream, UpstreamPaused};
    ///
    /// static MODEL: Upstream = Upstream::new("model-doc");
    ///
    /// #[derive(Debug, thiserror::Error, retry_runtime::Classify)]
    /// enum Failed {
    ///     #[error("overloaded")]
    ///     #[classify(unavailable)]
    ///     Overloaded,
    ///     #[error(transparent)]
    ///     #[classify(from)]
    ///     Paused(#[from] UpstreamPaused),
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let answer = Retry::new(&Policy::AVAILABILITY)
    ///     .upstream(&MODEL)
    ///     .run(async |attempt| if attempt == 1 { Err(Failed::Overloaded) } else { Ok(attempt) })
    ///     .await
    ///     .unwrap();
    /// assert_eq!(answer, 2);
    /// # MODEL.reset();
    /// # }
    /// ```
    pub fn upstream(self, upstream: &'static Upstream) -> Retry<C, P, N, Q, OneUpstream> {
        self.placed(OneUpstream {
            upstream,
            tokens: 0,
        })
    }

    /// Send each attempt across `set`, an ordered set of upstreams: to the first neither
    /// paused nor gated, moving to the next at once on a failure another may not share (see
    /// [`Upstreams`]). Each attempt is given the upstream it goes to; a success comes back
    /// [`Answered`], naming the upstream that answered.
    pub fn across(self, set: &'static Upstreams) -> Retry<C, P, N, Q, AcrossUpstreams> {
        self.placed(AcrossUpstreams { set })
    }
}

impl<C, P, N, Q> TimedRetry<C, P, N, Q, NoUpstream> {
    /// Like [`Retry::upstream`], each attempt under its timeout.
    pub fn upstream(self, upstream: &'static Upstream) -> TimedRetry<C, P, N, Q, OneUpstream> {
        self.placed(OneUpstream {
            upstream,
            tokens: 0,
        })
    }

    /// Like [`Retry::across`], each attempt under its timeout.
    pub fn across(self, set: &'static Upstreams) -> TimedRetry<C, P, N, Q, AcrossUpstreams> {
        self.placed(AcrossUpstreams { set })
    }
}

impl<C, P, N, Q> Retry<C, P, N, Q, OneUpstream> {
    /// Each attempt costs `tokens` of the key's token limit (its prompt and its `max_tokens`,
    /// say), as well as one request: where the provider says what its key has left, an
    /// attempt waits until the key holds what it costs, and one that costs more than the
    /// whole limit fails at once, an answer.
    ///
    /// ```
    /// use retry_runtime::{Policy, Retry, Upstream};
    ///
    /// static MODEL: Upstream = Upstream::new("model");
    /// let retry = Retry::new(&Policy::AVAILABILITY).upstream(&MODEL).tokens(1_200);
    /// assert_eq!(retry.tokens_per_attempt(), 1_200);
    /// assert_eq!(retry.upstream_ref().name(), "model");
    /// ```
    pub const fn tokens(mut self, tokens: u32) -> Self {
        self.place.tokens = tokens;
        self
    }

    /// What each attempt costs of the key's tokens ([`tokens`](Self::tokens)).
    pub const fn tokens_per_attempt(&self) -> u32 {
        self.place.tokens
    }

    /// The upstream.
    pub const fn upstream_ref(&self) -> &'static Upstream {
        self.place.upstream
    }
}

impl<C, P, N, Q> TimedRetry<C, P, N, Q, OneUpstream> {
    /// Like [`Retry::tokens`].
    pub const fn tokens(mut self, tokens: u32) -> Self {
        self.retry.place.tokens = tokens;
        self
    }
}

impl<C, P, N, Q> Retry<C, P, N, Q, AcrossUpstreams> {
    /// The ordered set.
    pub const fn upstreams(&self) -> &'static Upstreams {
        self.place.set
    }
}
